"""test_opencl_e2e.py — OpenCL artifacts end to end: the device, its limits, bad input.

    /usr/bin/python3 tests/e2e/test_opencl_e2e.py BUILD_DIR

Modules are built with `relaxc build --target opencl` and run by relax-run on this
host's OpenCL (PoCL, deploy/packages.sh test; docs/gpu.md). Every failure must be a
clear error (exit status 1, one `error:` line naming what failed), never a crash:
  - the artifact: a KERNELS_OPENCL section (OpenCL C source with one kernel per loop
    nest) and a LAUNCH section; a damaged LAUNCH section (a wrong count, a record cut
    short; the CRC fixed up) is a located load error;
  - one artifact, several n: exp of a gather equals NumPy at n = 1, 5, 300;
  - an index read from a tensor out of range (take; a gather loop function) names
    the kernel, index, axis and extent; in range equals np.take;
  - a tensor larger than the device's largest buffer (an output of 200000 x 200000 f32,
    160 GB, above the largest buffer PoCL reports; it sizes that from free memory) is refused naming both sizes;
  - a device allowing fewer work-items per group than the target's max_threads
    (POCL_MAX_WORK_GROUP_SIZE=64 against the default 256) is refused at load naming the
    limit, and the same module built with opencl,max_threads=64 runs there;
  - a missing driver (RX_OPENCL_LIB pointing nowhere) and a device id the host lacks;
  - --bench names the device ("device": "OpenCL: ...") and reports the peak bytes;
    a cpu artifact says "cpu";
  - the rows schedule: softmax and max over rows of 1 to 4099 elements equal NumPy;
    a kernel needing more local memory than the device has (a launch record patched to
    512 MiB) is refused at load naming the limit, and more than max_local_bytes at
    compile time naming the option;
  - the tiles and matvec schedules: a batched matmul read through a fused permute
    equals NumPy at sizes on and off the tile (tile 16 and 8) and with m of 1 to 8 (the
    matvec launch, odd k included), the launch records say tiles and matvec; (1, k) @
    (k, n) gets the matvec launch alone and equals NumPy; more local memory than
    max_local_bytes is a compile-time error;
  - a host loop (gpu_host_loop.json, a scan over rows; host_loop_checks, shared with
    vulkan_e2e): its launch records (a host-loop record before its body's two grid
    records), NumPy-equal, and the reader's errors for a loop record claiming more
    records than follow and for a host loop inside a host loop;
  - library calls are refused for GPU targets at compile time.
Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import json
import os
import shutil
import struct
import sys
import tempfile
import zlib

import numpy as np

from e2e_check import Checks, run_status, tools
from test_bounds_e2e import Run, call, module, tensor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MICRO = 4  # the tiles schedule's register micro-tile edge (gpu_matmul.c), when local memory allows
LAUNCH, OPENCL = 10, 8  # section kinds (docs/artifact.md)


def sections(data):
    """{kind: (offset, size)} of an artifact's section table."""
    n = struct.unpack_from("<I", data, 16)[0]
    out = {}
    for i in range(n):
        kind, _, off, size = struct.unpack_from("<IIQQ", data, 40 + 24 * i)
        out[kind] = (off, size)
    return out


class Env(Run):
    """test_bounds_e2e's runner, building for a given target."""

    def build(self, mod, target="opencl", level=2):
        self.n += 1
        src = os.path.join(self.tmp, "m%d.json" % self.n)
        rxa = os.path.join(self.tmp, "m%d.rxa" % self.n)
        with open(src, "w") as f:
            json.dump(mod, f)
        rc, _, err = run_status([self.relaxc, "build", src, "--target", target,
                                 "--opt-level", str(level), "-o", rxa])
        self.checks.check(rc == 0, "build m%d for %s" % (self.n, target) + ("" if rc == 0 else ": " + err))
        return rxa if rc == 0 else None


def launch_records(data, off):
    """[(offset of the record's local_bytes field, schedule)] of a LAUNCH section."""
    pos, out = off + 4, []
    for _ in range(struct.unpack_from("<I", data, off)[0]):
        n = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        for _ in range(n):
            ln = struct.unpack_from("<I", data, pos)[0]
            pos += 4 + ln
            out.append((pos + 8, struct.unpack_from("<I", data, pos)[0]))
            pos += 16
            for _ in range(struct.unpack_from("<I", data, pos)[0]):
                op = struct.unpack_from("<I", data, pos + 4)[0]
                pos += 4 + (8 if op == 0 else 4 if op == 1 else 0)
            pos += 4
    return out


def patched(e, data, name, edits):
    """data with (offset, u32 value) edits and its CRC fixed, written to tmp/name."""
    bad = bytearray(data)
    for at, v in edits:
        struct.pack_into("<I", bad, at, v)
    struct.pack_into("<I", bad, 32, zlib.crc32(bytes(bad[40:])) & 0xffffffff)
    path = os.path.join(e.tmp, name)
    open(path, "wb").write(bytes(bad))
    return path


def rows_checks(e, target="opencl", too_big=("opencl,max_threads=4096,max_local_bytes=8192", 16384)):
    """The rows schedule (a work-group per row, a tree in local memory): softmax and max
    over long symbolic rows equal NumPy; its local memory is checked at compile time
    against max_local_bytes (too_big: a target whose tree needs more, and its bytes) and
    at load against the device's."""
    mod = module([tensor("x", ["r", "n"])],
                 [call("s", "nn.softmax", ["x"]), call("m", "max", ["x"], {"axis": [1]}),
                  call("t", "sum", ["s"], {"axis": [1]})], "m")
    sm = module([tensor("x", ["r", "n"])], [call("s", "nn.softmax", ["x"])], "s")
    rxa, srxa = e.build(mod, target), e.build(sm, target)
    rng = np.random.default_rng(3)
    for r, n in ((3, 1), (2, 255), (5, 1000), (1, 4099)):
        x = (rng.standard_normal((r, n)) * 4).astype(np.float32)
        if rxa:
            e.equals(rxa, "max over rows of %d, r = %d" % (n, r), x.max(1), inputs={"x": x})
        if srxa:
            z = np.exp(x - x.max(1, keepdims=True))
            e.equals(srxa, "softmax over rows of %d, r = %d" % (n, r), z / z.sum(1, keepdims=True),
                     inputs={"x": x})
    if srxa:
        data = open(srxa, "rb").read()
        recs = launch_records(data, sections(data)[LAUNCH][0])
        rows = [at for at, sched in recs if sched == 2]
        e.checks.check(len(rows) >= 2, "softmax: %d of %d kernels get the rows schedule" % (len(rows), len(recs)))
        if rows:
            big = patched(e, data, "big_local.rxa", [(rows[0], 1 << 29)])
            e.fails(big, "a kernel needing 512 MiB of local memory",
                    ["needs 536870912 bytes of local memory, more than device"],
                    inputs={"x": np.ones((2, 3), dtype=np.float32)})
    src = os.path.join(e.tmp, "sm.json")
    with open(src, "w") as f:
        json.dump(sm, f)
    rc, _, err = run_status([e.relaxc, "build", src, "--target", too_big[0], "-o",
                             os.path.join(e.tmp, "sm_big.rxa")])
    limit = too_big[0].split("max_local_bytes=")[1]
    e.checks.check(rc == 1 and "needs %d bytes of local memory" % too_big[1] in err and
                   "max_local_bytes=" + limit in err, "max_local_bytes at compile time: %s" % err.strip()[-160:])


def host_loop_checks(e, kind="opencl"):
    """A host loop (docs/gpu.md "Host loops"): tests/e2e/modules/gpu_host_loop.json's scan
    over rows gets a host-loop record (schedule 3) before its body's two grid records and
    equals NumPy at n = 6, m = 5 (a body extent of the loop variable); a loop record
    claiming more body records than follow, and a host loop inside a host loop, are the
    reader's errors."""
    src = os.path.join(ROOT, "tests", "e2e", "modules", "gpu_host_loop.json")
    rxa = e.build(json.load(open(src)), kind)
    if not rxa:
        return
    data = open(rxa, "rb").read()
    recs = launch_records(data, sections(data)[LAUNCH][0])
    e.checks.check([r[1] for r in recs] == [1, 3, 1, 1],
                   "%s: a grid, then a host loop of two grid records: %s" % (kind, recs))
    x = np.random.default_rng(3).standard_normal((6, 5)).astype(np.float32)
    y = x.astype(np.float64).copy()
    for i in range(1, 6):
        y[i] = y[i - 1] + x[i]
        y[i, :min(i, 5)] *= 0.5
    e.equals(rxa, "%s: the scan over rows by a host loop equals NumPy" % kind,
             y.astype(np.float32), inputs={"x": x})
    if len(recs) == 4:
        loop = recs[1][0]
        path = patched(e, data, "hl_count.rxa", [(loop - 4, 99)])
        e.fails(path, "a host loop of more records than follow", ["a host loop of 99 records, 2 follow"],
                inputs={"x": x})
        path = patched(e, data, "hl_nested.rxa", [(recs[2][0] - 8, 3)])
        e.fails(path, "a host loop inside a host loop", ["a host loop inside a host loop"],
                inputs={"x": x})


def tiles_checks(e, kind="opencl", artifact_check=None):
    """The tiles schedule: a batched matmul whose second operand is read through a fused
    permute equals NumPy at sizes that are and are not multiples of the tile, for tile
    16 and 8 (m <= 8 runs the matvec launch, the others the tiles; odd k and n not a
    multiple of the matvec's 32 columns included); its local memory is checked against
    max_local_bytes at compile time. The launch records say tiles (a work-group of
    tile^2 with 2 tile^2 floats of local memory) and matvec (a work-group of 256 with
    256 floats); for a kind other than opencl artifact_check(e, rxa) checks the kernels.
    A literal m = 1 gets the matvec launch alone."""
    mod = module([tensor("x", ["b", "m", "k"]), tensor("w", ["b", "n", "k"])],
                 [call("wt", "permute_dims", ["w"], {"axes": [0, 2, 1]}),
                  call("y", "matmul", ["x", "wt"])], "y")
    mod["functions"]["main"]["body"]["blocks"][0]["dataflow"] = True  # FuseOps fuses dataflow
    rng = np.random.default_rng(5)
    base = kind + ",clblast=0" if kind == "opencl" else kind  # the generated matmul, not CLBlast
    for target in (base, base + ",tile=8"):
        rxa = e.build(mod, target)
        if not rxa:
            continue
        data = open(rxa, "rb").read()
        tile = 8 if "tile=8" in target else 16
        if kind == "opencl":
            off, size = sections(data)[OPENCL]
            src = data[off:off + size].decode()
            e.checks.check("__local float rx_As[%d]" % (tile * tile * MICRO) in src and
                           src.count("__kernel void") == 2 and "fused_permute_dims_matmul_s0v(" in src
                           and "__local float rx_mv[256]" in src,
                           "%s: the permute fused, the matmul in %dx%d tiles and a matvec kernel for "
                           "few rows" % (target, tile, tile))
            # the register micro-tile: MICRO^2 accumulators per work-item, fed from the tiles
            acc = ["rx_c%d_%d += rx_a%d * rx_b%d;" % (a, b, a, b) for a in range(MICRO) for b in range(MICRO)]
            e.checks.check(all(x in src for x in acc) and "rx_c%d_0" % MICRO not in src,
                           "%s: each work-item accumulates a %dx%d micro-tile in registers"
                           % (target, MICRO, MICRO))
            # the permuted weight's columns are K apart: the matvec must not load four at once
            e.checks.check("vload4" not in src and "rx_a0 += " in src,
                           "%s: a weight read through a permute gets scalar matvec loads" % target)
        recs = launch_records(data, sections(data)[LAUNCH][0])
        got = [(sched, struct.unpack_from("<II", data, at - 4)) for at, sched in recs]
        e.checks.check(got == [(2, (tile * tile, 2 * tile * tile * MICRO * 4)), (2, (256, 256 * 4))],
                       "%s: the matmul in %dx%d tiles of %dx%d micro-tiles and a matvec launch for few "
                       "rows (launch records %s)" % (target, tile, tile, MICRO, MICRO, got))
        if artifact_check:
            artifact_check(e, rxa)
        for b, m, n, k in ((1, 1, 1, 1), (2, 16, 16, 16), (3, 17, 33, 65), (1, 40, 7, 300),
                           (1, 1, 70, 1023), (2, 3, 33, 7), (1, 8, 64, 129), (2, 5, 100, 258),
                           (1, 130, 70, 33), (2, 65, 129, 17)):
            x = rng.standard_normal((b, m, k)).astype(np.float32)
            w = rng.standard_normal((b, n, k)).astype(np.float32)
            rc, err, out = e.run(rxa, {"x": x, "w": w})
            want = x @ w.transpose(0, 2, 1)
            ok = rc == 0 and out is not None and out.shape == want.shape and \
                np.allclose(out, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))
            e.checks.check(ok, "%s: (%d, %d, %d) @ (%d, %d, %d)^T equals NumPy" % (target, b, m, k, b, n, k)
                           + ("" if rc == 0 else ": " + err.strip()[:160]))
    matvec_literal_checks(e, kind, rng, artifact_check)
    src = os.path.join(e.tmp, "mm.json")
    with open(src, "w") as f:
        json.dump(mod, f)
    rc, _, err = run_status([e.relaxc, "build", src, "--target", kind + ",max_local_bytes=1024",
                             "-o", os.path.join(e.tmp, "mm_small.rxa")])
    e.checks.check(rc == 1 and "the tiles schedule of this matmul needs 2048 bytes of local memory" in err
                   and "max_local_bytes=1024" in err, "tiles vs max_local_bytes: %s" % err.strip()[-200:])


def matvec_literal_checks(e, kind, rng, artifact_check=None):
    """A decode matmul with one literal row, (1, k) @ (k, n) with k and n symbolic: one
    launch, the matvec schedule with vector loads of four columns, NumPy-equal for n and
    k around its 128 columns, 4-column vectors and 8 slices (odd k and n included: rows
    of the weight not 16-byte aligned, columns past the last whole vector)."""
    mod = module([tensor("x", [1, "k"]), tensor("w", ["k", "n"])], [call("y", "matmul", ["x", "w"])], "y")
    mod["functions"]["main"]["body"]["blocks"][0]["dataflow"] = True
    rxa = e.build(mod, kind)
    if not rxa:
        return
    data = open(rxa, "rb").read()
    recs = launch_records(data, sections(data)[LAUNCH][0])
    got = [(sched, struct.unpack_from("<II", data, at - 4)) for at, sched in recs]
    e.checks.check(got == [(2, (256, 256 * 4 * 4))], "%s: (1, k) @ (k, n) gets the matvec launch alone, "
                   "four partial sums per work-item (launch records %s)" % (kind, got))
    # four adjacent columns of the (k, n) weight are four adjacent floats: one vector load
    # (OpenCL vload4; GLSL a vec4 view of the binding when the index is a multiple of 4)
    src = os.path.join(e.tmp, "mv.json")
    with open(src, "w") as f:
        json.dump(mod, f)
    _, text, _ = run_status([e.relaxc, "print", src, "--target", kind, "--after", "codegen"])
    load = "const float4 rx_w = vload4(0, " if kind == "opencl" else "const vec4 rx_w = (rx_w_p & 3l) == 0l ?"
    e.checks.check(load in text and "rx_a3 += rx_x * rx_w.w;" in text and "rx_tj = (rx_e1 + 127) / 128" in text
                   and (kind == "opencl" or "_B4 { vec4 " in text),
                   "%s: the matvec reads four columns of the weight with one vector load" % kind)
    if artifact_check:
        artifact_check(e, rxa)
    for n, k in ((1, 1), (31, 9), (32, 1024), (97, 1023), (1024, 3), (4, 5), (130, 257), (260, 64)):
        x = rng.standard_normal((1, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        rc, err, out = e.run(rxa, {"x": x, "w": w})
        want = x @ w
        ok = rc == 0 and out is not None and out.shape == want.shape and \
            np.allclose(out, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))
        e.checks.check(ok, "%s: (1, %d) @ (%d, %d) equals NumPy" % (kind, k, k, n)
                       + ("" if rc == 0 else ": " + err.strip()[:160]))


def artifact_checks(e, rxa):
    data = open(rxa, "rb").read()
    secs = sections(data)
    c = e.checks
    c.check(OPENCL in secs and LAUNCH in secs and 6 not in secs,
            "artifact has KERNELS_OPENCL and LAUNCH, no KERNELS_CPU (%s)" % sorted(secs))
    off, size = secs[OPENCL]
    src = data[off:off + size].decode()
    c.check("__kernel void rxk_" in src and "get_global_id(0)" in src,
            "KERNELS_OPENCL is OpenCL C with grid kernels")
    # a LAUNCH section claiming one kernel more than the table has: a located error
    off, size = secs[LAUNCH]
    nk = struct.unpack_from("<I", data, off)[0]
    path = patched(e, data, "bad_launch.rxa", [(off, nk + 1)])
    e.fails(path, "LAUNCH with %d entries for %d kernels" % (nk + 1, nk),
            ["LAUNCH: %d entries for %d kernels" % (nk + 1, nk)], shapes={"n": 3})
    # truncated: the first launch record's name runs past the section's end
    if size < 12 + 255:
        path = patched(e, data, "trunc_launch.rxa", [(off + 8, 255)])
        e.fails(path, "LAUNCH record cut short", ["LAUNCH: truncated at byte 12 of the section"],
                shapes={"n": 3})


TAKE = module([tensor("x", [5, 3]), tensor("i", ["n"], "i64")],
              [call("t", "take", ["x", "i"], {"axis": 0}), call("y", "exp", ["t"])], "y")


def take_checks(e, target, api, lib_var, artifact_checks):
    """take along axis 0 then exp, indices checked on the device, built for target (its
    runtime device named api, its driver library by $lib_var): the artifact, NumPy at
    several n, an index error and a clean call after it, a missing driver, a device id
    the host lacks, --bench's device. The artifact, or None when it did not build."""
    x = (np.arange(15, dtype=np.float32).reshape(5, 3) - 7) / 4
    good = np.array([0, 4, -1, -5], dtype=np.int64)
    past = np.array([0, 7, 1, 2], dtype=np.int64)
    rxa = e.build(TAKE, target)
    if not rxa:
        return None
    artifact_checks(e, rxa)
    for n in (1, 5, 300):
        idx = np.resize(good, n)
        e.equals(rxa, "take + exp, n = %d, equals NumPy" % n, np.exp(np.take(x, idx, 0)),
                 inputs={"x": x, "i": idx})
    e.fails(rxa, "take index 7 of 5", ["kernel rxk_", "index 7 out of range for axis 0 (extent 5)"],
            inputs={"x": x, "i": past})
    # the next call of the same module starts clean: the status was reset
    e.equals(rxa, "a good call after a failed one", np.exp(np.take(x, good, 0)),
             inputs={"x": x, "i": good})
    e.fails(rxa, "missing driver", ["no %s device: cannot load" % api],
            inputs={"x": x, "i": good}, env={lib_var: "/nonexistent/lib.so.1"})
    e.fails(rxa, "device id 7", ["no %s device 7" % api], inputs={"x": x, "i": good},
            extra=["--device-id", "7"])
    rc, err, _ = e.run(rxa, {"x": x, "i": good}, extra=["--bench", "--repeat", "2", "--number", "1"])
    r = json.loads(e.stdout.strip().splitlines()[-1]) if rc == 0 and e.stdout.strip() else {}
    e.checks.check(r.get("device", "").startswith(api + ": ") and r.get("peak_bytes", 0) > 0 and
                   r.get("kernels", 0) >= 1,
                   "--bench names the device: %s" % {k: r.get(k) for k in ("device", "peak_bytes", "kernels")}
                   + ("" if rc == 0 else err[:160]))
    return rxa


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    checks = Checks()
    tmp = tempfile.mkdtemp(prefix="rx-opencl-")
    e = Env(argv[1], tmp, checks)
    x = (np.arange(15, dtype=np.float32).reshape(5, 3) - 7) / 4
    good = np.array([0, 4, -1, -5], dtype=np.int64)
    past = np.array([0, 7, 1, 2], dtype=np.int64)

    rxa = take_checks(e, "opencl", "OpenCL", "RX_OPENCL_LIB", artifact_checks)
    take = TAKE
    if rxa:
        e.fails(rxa, "a device with 64 work-items per group",
                ["needs 256 work-items per group", "max_threads=N"],
                inputs={"x": x, "i": good}, env={"POCL_MAX_WORK_GROUP_SIZE": "64"})
    cpu = e.build(take, "cpu")
    if cpu:
        rc, err, _ = e.run(cpu, {"x": x, "i": good}, extra=["--bench", "--repeat", "1"])
        r = json.loads(e.stdout.strip().splitlines()[-1]) if rc == 0 and e.stdout.strip() else {}
        checks.check(r.get("device") == "cpu", "--bench of a cpu artifact: device %s" % r.get("device"))
    small = e.build(take, "opencl,max_threads=64")
    if small:
        e.equals(small, "opencl,max_threads=64 on that device", np.exp(np.take(x, good, 0)),
                 inputs={"x": x, "i": good}, env={"POCL_MAX_WORK_GROUP_SIZE": "64"})

    # a gather loop function X[I[i], j]
    gather = {"kind": "tir",
              "params": [{"name": "X", "buffer": {"shape": [5, 3], "dtype": "f32"}},
                         {"name": "I", "buffer": {"shape": [4], "dtype": "i64"}},
                         {"name": "O", "buffer": {"shape": [4, 3], "dtype": "f32"}}],
              "body": [{"grid": ["i", "j"], "extents": [4, 3], "body": [
                  {"block": "g", "body": [{"store": "O[i, j]", "value": "X[I[i], j]"}]}]}]}
    gm = module([tensor("x", [5, 3]), tensor("i", [4], "i64")],
                [{"var": "y", "value": {"call_tir": "@f", "args": ["x", "i"],
                                        "out": {"tensor": {"shape": [4, 3], "dtype": "f32"}}}}],
                "y", {"f": gather})
    rxa = e.build(gm)
    if rxa:
        pos = np.array([0, 4, 1, 3], dtype=np.int64)  # raw loop functions do not wrap negatives
        e.equals(rxa, "gather loop function equals NumPy", x[pos], inputs={"x": x, "i": pos})
        e.fails(rxa, "gather index 7 of 5", ["kernel rxk_f", "index 7 out of range for axis 0 (extent 5)"],
                inputs={"x": x, "i": past})

    # a tensor larger than the device's largest buffer
    big = module([tensor("x", ["n"])],
                 [call("y", "broadcast_to", ["x", {"shape": ["n", "n"]}])], "y")
    rxa = e.build(big)
    if rxa:
        e.fails(rxa, "a 200000 x 200000 f32 output", ["cannot allocate 160000000000 bytes",
                                                   "the device's largest buffer is"],
                inputs={"x": np.ones(200000, dtype=np.float32)})
        e.equals(rxa, "the same module at n = 3", np.ones((3, 3), dtype=np.float32),
                 inputs={"x": np.ones(3, dtype=np.float32)})

    rows_checks(e)
    tiles_checks(e)
    host_loop_checks(e)

    # library calls are CPU functions: refused for GPU targets when compiling
    lib = os.path.join(ROOT, "tests", "e2e", "modules", "e2e_mlp_small.json")
    rc, _, err = run_status([e.relaxc, "build", lib, "--target", "opencl", "-o",
                             os.path.join(tmp, "lib.rxa")])
    checks.check(rc == 1 and "is not available on a GPU target" in err,
                 "library call refused for opencl: exit %d, %s" % (rc, err.strip()[-160:]))
    shutil.rmtree(tmp, ignore_errors=True)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
