"""test_vulkan_e2e.py — Vulkan artifacts end to end: SPIR-V, the device, its limits, bad input.

    /usr/bin/python3 tests/e2e/test_vulkan_e2e.py BUILD_DIR

Modules are built with `relaxc build --target vulkan` (GLSL 4.50 compute shaders compiled
to SPIR-V in the compiler) and run by relax-run on this host's Vulkan (Mesa's lavapipe,
deploy/packages.sh test; docs/gpu.md). Every failure must be a clear error (exit status
1, one `error:` line naming what failed), never a crash:
  - the artifact: a KERNELS_SPIRV section (a SPIR-V bundle, "RXSB", one module per
    kernel) and a LAUNCH section, no OpenCL or CPU kernels; every module of the bundle
    passes `spirv-val --target-env vulkan1.2`;
  - one artifact, several n: exp of a gather equals NumPy at n = 1, 5, 300;
  - an index read from a tensor out of range names the kernel, index, axis and
    extent, and the next call starts clean;
  - a missing loader (RX_VULKAN_LIB pointing nowhere) and a device id the host lacks;
  - --bench names the device ("device": "Vulkan: ...");
  - the rows schedule (test_opencl_e2e's checks for vulkan): softmax and max over rows
    of 1 to 4099 elements equal NumPy; a kernel needing more shared memory than the
    device has (a launch record patched to 512 MiB) is refused at load naming the
    limit, more than max_local_bytes at compile time naming the option;
  - the tiles and matvec schedules (test_opencl_e2e's checks for vulkan): a batched
    matmul through a fused permute equals NumPy on and off the tile, tile 16 and 8, m
    of 1 to 8 (matvec; odd k) and above (tiles), its launch records say tiles and
    matvec and its modules pass spirv-val; (1, k) @ (k, n) gets matvec alone; over
    max_local_bytes at compile time;
  - push constants (4-byte element offsets): a kernel of 17 buffers (68 bytes) runs; one
    of 33 buffers (132 bytes) is refused at compile time naming max_push_bytes=128;
    built with max_push_bytes=256 it is refused at load by a device with 32 storage-buffer
    bindings (lavapipe); an add chain of 33 inputs of a symbolic n
    (one group: 144 bytes) is split by FuseOps and equals NumPy;
  - the loop function of the push-constant case on cpu equals NumPy too;
  - f64: exp, log, tanh, sigmoid, power, sin, cos and erf of doubles equal NumPy (math.erf)
    at rtol 1e-9 (edges included);
  - a kernel named with 127 characters runs (the bundle keeps whole names).
  - a tensor larger than the device's largest buffer (a 200000 x 200000 f32 output,
    above lavapipe's 128 MiB) is a run-time error naming both sizes; n = 3 runs.
  - a host loop (test_opencl_e2e's host_loop_checks for vulkan).
Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

from e2e_check import Checks, run_status
from test_bounds_e2e import call, module, tensor
from test_opencl_e2e import (LAUNCH, Env, host_loop_checks, rows_checks, sections, take_checks,
                             tiles_checks)

SPIRV = 9  # section kind (docs/artifact.md)


def write(e, mod):
    """The path of mod written as JSON in e's directory."""
    e.n += 1
    path = os.path.join(e.tmp, "w%d.json" % e.n)
    with open(path, "w") as f:
        json.dump(mod, f)
    return path


def bundle_modules(data):
    """[(name, module bytes)] of a SPIR-V bundle (runtime/include/relax/device.h)."""
    magic, version, n = struct.unpack_from("<III", data, 0)
    if magic != 0x42535852 or version != 1:
        return None
    pos, out = 12, []
    for _ in range(n):
        nn = struct.unpack_from("<I", data, pos)[0]
        name = data[pos + 4:pos + 4 + 4 * nn].split(b"\0")[0].decode()
        pos += 4 + 4 * nn
        nw = struct.unpack_from("<I", data, pos)[0]
        out.append((name, data[pos + 4:pos + 4 + 4 * nw]))
        pos += 4 + 4 * nw
    return out


def artifact_checks(e, rxa):
    data = open(rxa, "rb").read()
    secs = sections(data)
    c = e.checks
    c.check(SPIRV in secs and LAUNCH in secs and 6 not in secs and 8 not in secs,
            "artifact has KERNELS_SPIRV and LAUNCH, no KERNELS_CPU or KERNELS_OPENCL (%s)" % sorted(secs))
    if SPIRV not in secs:
        return
    off, size = secs[SPIRV]
    mods = bundle_modules(data[off:off + size])
    c.check(bool(mods) and all(n.startswith("rxk_") for n, _ in mods),
            "KERNELS_SPIRV is a bundle of %s" % ([n for n, _ in mods] if mods else "nothing"))
    for name, words in mods or []:
        path = os.path.join(e.tmp, name + ".spv")
        open(path, "wb").write(words)
        p = subprocess.run(["spirv-val", "--target-env", "vulkan1.2", path], capture_output=True, text=True)
        c.check(p.returncode == 0, "spirv-val %s%s" % (name, "" if p.returncode == 0 else ": " + p.stderr[:200]))


def tir_sum(nin):
    """A loop function O[i] = X0[i] + ... + X{nin-1}[i] over 4 elements, called by main."""
    names = ["x%d" % i for i in range(nin)]
    f = {"kind": "tir",
         "params": [{"name": nm.upper(), "buffer": {"shape": [4], "dtype": "f32"}} for nm in names] +
                   [{"name": "O", "buffer": {"shape": [4], "dtype": "f32"}}],
         "body": [{"grid": ["i"], "extents": [4], "body": [
             {"block": "s", "body": [{"store": "O[i]",
                                      "value": " + ".join("%s[i]" % nm.upper() for nm in names)}]}]}]}
    mod = module([tensor(nm, [4]) for nm in names],
                 [{"var": "y", "value": {"call_tir": "@f", "args": names,
                                         "out": {"tensor": {"shape": [4], "dtype": "f32"}}}}],
                 "y", {"f": f})
    return mod, {nm: np.full(4, i, dtype=np.float32) for i, nm in enumerate(names)}


def push_checks(e):
    """Element offsets are 4-byte push constants (docs/gpu.md "Vulkan launch ABI"):
    17 buffers (68 bytes) run; 33 (132 bytes) are refused at compile time, and at load
    when built with max_push_bytes=256 (lavapipe binds 32 storage buffers); FuseOps keeps
    an add chain of 33 inputs of a symbolic n within 128 bytes (fuse_args.c)."""
    mod, xs = tir_sum(16)
    rxa = e.build(mod, "vulkan")
    if rxa:
        e.equals(rxa, "17 buffers (68 bytes of push constants) on vulkan", np.full(4, 120, dtype=np.float32),
                 inputs=xs)
    mod, xs = tir_sum(32)
    rc, _, err = run_status([e.relaxc, "build", write(e, mod), "--target", "vulkan", "-o",
                             os.path.join(e.tmp, "push.rxa")])
    e.checks.check(rc == 1 and "132 bytes of push constants, more than max_push_bytes=128" in err,
                   "too many scalar arguments at compile time: %s" % err.strip()[-200:])
    rxa = e.build(mod, "vulkan,max_push_bytes=256")
    if rxa:
        e.fails(rxa, "33 buffers on lavapipe",
                ["binds 34 storage buffers, more than the device's limit of 32 "
                 "(maxPerStageDescriptorStorageBuffers)"], inputs=xs)
        e.equals(e.build(mod, "cpu"), "the same loop function on cpu", np.full(4, 496, dtype=np.float32),
                 inputs=xs)
    # 33 inputs of shape (n,) added in a chain: one group would be 34 buffers and n, 144
    # bytes; FuseOps stops merging at 128 (one offset misplaced would change the sum)
    names = ["x%d" % i for i in range(33)]
    binds = [call("s1", "add", ["x0", "x1"])] + [call("s%d" % i, "add", ["s%d" % (i - 1), "x%d" % i])
                                                 for i in range(2, 33)]
    chain = module([tensor(nm, ["n"]) for nm in names], binds, "s32")
    chain["functions"]["main"]["body"]["blocks"][0]["dataflow"] = True
    rxa = e.build(chain, "vulkan")
    if rxa:
        xs = {nm: np.arange(5, dtype=np.float32) * (i + 1) for i, nm in enumerate(names)}
        e.equals(rxa, "an add chain of 33 inputs (n = 5) on vulkan", np.arange(5, dtype=np.float32) * 561,
                 inputs=xs)
        p = subprocess.run([e.relaxc, "print", write(e, chain), "--target", "vulkan", "--after", "fuse_ops"],
                           capture_output=True, text=True)
        nfused = p.stdout.count("def fused_")
        e.checks.check(p.returncode == 0 and nfused >= 2,
                       "the chain is split into %d fused functions under 128 bytes" % nfused)


def long_name_checks(e):
    """A loop function named with 120 characters: its kernel (rxk_NAME_s0) is found in
    the bundle by its whole name (the device kept 63 bytes of it once)."""
    name = "f" + "_long" * 20 + "x" * 19
    f = {"kind": "tir",
         "params": [{"name": "X", "buffer": {"shape": [4], "dtype": "f32"}},
                    {"name": "O", "buffer": {"shape": [4], "dtype": "f32"}}],
         "body": [{"grid": ["i"], "extents": [4], "body": [
             {"block": "s", "body": [{"store": "O[i]", "value": "X[i] * 2.0"}]}]}]}
    mod = module([tensor("x", [4])],
                 [{"var": "y", "value": {"call_tir": "@" + name, "args": ["x"],
                                         "out": {"tensor": {"shape": [4], "dtype": "f32"}}}}],
                 "y", {name: f})
    rxa = e.build(mod, "vulkan")
    if rxa:
        x = np.arange(4, dtype=np.float32)
        e.equals(rxa, "a kernel named with %d characters" % (len(name) + 7), 2 * x, inputs={"x": x})


def f64_checks(e):
    """f64 on Vulkan (lavapipe has shaderFloat64): exp, log, tanh, sigmoid and power of
    doubles, which GLSL lacks (gpu_dialect.c's GLSL_F64), equal NumPy within f64's
    tolerance over a wide range and at the edges (0, -0, +-inf, NaN, overflow, subnormal
    results), and sin, cos (to |x| = 1.5e6) and erf likewise."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-30, 30, 200), rng.uniform(-1e-6, 1e-6, 10),
                        [0.0, -0.0, 1.0, -1.0, 700.0, -740.0, 709.0, 1e-300, 1e300,
                         np.inf, -np.inf, np.nan, 2.5, -2.0, 3.0]])
    z = np.concatenate([rng.uniform(-4, 4, 210), [2, 3, -1, 0.5, 0, 1, 3, 2, -3, 0.5, 2, 3, 1, -2, 3]])
    with np.errstate(all="ignore"):
        cases = [("exp", np.exp(x)), ("log", np.log(x)), ("tanh", np.tanh(x)),
                 ("sigmoid", 1 / (1 + np.exp(-x))), ("power", np.power(x, z))]
    for op, want in cases:
        params = [tensor("x", ["n"], "f64")] + ([tensor("z", ["n"], "f64")] if op == "power" else [])
        rxa = e.build(module(params, [call("y", op, [p["name"] for p in params])], "y"), "vulkan")
        if not rxa:
            continue
        rc, err, out = e.run(rxa, {"x": x, "z": z} if op == "power" else {"x": x})
        ok = rc == 0 and out is not None and out.dtype == np.float64 and \
            np.allclose(out, want, rtol=1e-9, atol=1e-12, equal_nan=True)
        e.checks.check(ok, "f64 %s on vulkan equals NumPy (rtol 1e-9)" % op + ("" if rc == 0 else ": " + err.strip()[:160]))
    # sin / cos (pi/2 reduction in three parts: full accuracy to |x| ~ 1.6e6) and erf
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -5e-324, np.pi / 4, np.pi / 2, np.pi,
             -3 * np.pi / 4, 1e5 * np.pi, 1.5e6]
    t = np.concatenate([rng.uniform(-10, 10, 120), rng.uniform(-1e5, 1e5, 80), edges])
    u = np.concatenate([rng.uniform(-7, 7, 200), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300,
                                                  5.9, 6.0, -6.5, 0.5, 1e-8, 3.0, -2.2]])
    with np.errstate(all="ignore"):
        trig = [("sin", t, np.sin(t)), ("cos", t, np.cos(t)),
                ("erf", u, np.array([math.erf(v) if not np.isnan(v) else np.nan for v in u]))]
    for op, xin, want in trig:
        rxa = e.build(module([tensor("x", ["n"], "f64")], [call("y", op, ["x"])], "y"), "vulkan")
        if not rxa:
            continue
        rc, err, out = e.run(rxa, {"x": xin})
        ok = rc == 0 and out is not None and out.dtype == np.float64 and \
            np.allclose(out, want, rtol=1e-9, atol=1e-15, equal_nan=True)
        fin = np.isfinite(want)
        worst = float(np.abs(out[fin] - want[fin]).max()) if out is not None and out.shape == want.shape else -1
        e.checks.check(ok, "f64 %s on vulkan equals NumPy (rtol 1e-9; worst %.3g)" % (op, worst) +
                       ("" if rc == 0 else ": " + err.strip()[:160]))


def buffer_limit_checks(e):
    """A tensor larger than the device's largest buffer (lavapipe: 128 MiB,
    maxStorageBufferRange) is a clear run-time error naming both sizes; the same
    artifact at a small n runs."""
    big = module([tensor("x", ["n"])], [call("y", "broadcast_to", ["x", {"shape": ["n", "n"]}])], "y")
    rxa = e.build(big, "vulkan")
    if rxa:
        e.fails(rxa, "a 200000 x 200000 f32 output on vulkan", ["cannot allocate 160000000000 bytes",
                                                             "the device's largest buffer is"],
                inputs={"x": np.ones(200000, dtype=np.float32)})
        e.equals(rxa, "the same module at n = 3 on vulkan", np.ones((3, 3), dtype=np.float32),
                 inputs={"x": np.ones(3, dtype=np.float32)})


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    checks = Checks()
    tmp = tempfile.mkdtemp(prefix="rx-vulkan-")
    e = Env(argv[1], tmp, checks)
    take_checks(e, "vulkan", "Vulkan", "RX_VULKAN_LIB", artifact_checks)
    rows_checks(e, "vulkan", ("vulkan,max_threads=1024,max_local_bytes=2048", 4096))
    tiles_checks(e, "vulkan", artifact_checks)
    f64_checks(e)
    push_checks(e)
    long_name_checks(e)
    buffer_limit_checks(e)
    host_loop_checks(e, "vulkan")
    return checks.done()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
