"""test_cuda_e2e.py — the cuda target on a host without a GPU: CUDA C, NVRTC, PTX, ptxas,
and the runtime's clean failure without a driver.

    /usr/bin/python3 tests/e2e/test_cuda_e2e.py BUILD_DIR

Checks (one line each, then `N passed, M failed`; exit 1 on a failure; 77, ctest's skip,
when this host has no NVRTC: no CUDA toolkit):
  - the CUDA C of a module with bf16, f16 and an index check (take): launch bounds
    from max_threads, __restrict__ views, the PTX cvt conversions, atomicCAS on the
    status record; NVRTC and ptxas accept it; llama_tiny's rows and tiles schedules
    use __shared__ arrays and __syncthreads, its row reductions warp shuffles
    (__shfl_down_sync, a shared array of max_threads / 32 partials), and at
    max_threads=16 (less than a warp) the shared-memory tree instead;
  - cuBLAS (cuda,cublas=1, the default): a matmul of symbolic rows and a batched one
    become cublas.matmul, a decode-sized one (M = 1) stays a generated kernel, and
    cuda,cublas=0 generates all; over the mock driver and tests/unit/runtime/mock_cublas.c
    ($RX_MOCK_CUBLAS, a column-major host GEMM) relax-run's outputs equal NumPy's; without
    cuBLAS the call fails with "cuBLAS is not available";
  - every module of the corpus (tests/modules/valid, tests/e2e/modules) and the Llama
    generator's modules (tests/models/llama_tiny.json, and one layer at Llama-2-7B
    shapes from gen_llama.py) builds for `cuda` at O2, or is refused for calling a CPU
    library function (as for opencl) or fails for cpu too; each artifact has a
    KERNELS_PTX section of PTX text (an `.entry` per launch record), a KERNELS_CUBIN
    section (an ELF for EM_CUDA), a LAUNCH section, and no KERNELS_CPU;
  - every PTX assembles with `ptxas -O0 -arch=sm_90` (-O0: the same checks in half the
    time), the Llama modules' with `ptxas -arch=sm_80` and `-arch=sm_90` (the
    JIT-forward case; the toolkit's
    assembler from /usr/local/cuda/bin, run from here without a shell; skipped with
    the reason printed when ptxas is missing); a module built for cuda,arch=sm_90
    assembles for sm_90;
  - a bad arch (cuda,arch=sm_10) is a clear error naming NVRTC's supported range;
  - without NVRTC (RX_NVRTC_LIB pointing nowhere) cuda builds are refused naming it,
    cpu builds still work;
  - CUDA Graphs: llama_tiny's decode for cuda has a GRAPH_BEGIN / GRAPH_END region keyed
    by b and c (lower_vm's listing), none with --disable-pass cuda_graph; over the mock
    driver (whose stream capture records launches as graph nodes) relax-run --bench
    reports 1 device launch per call (one graph replay) against one per launch record
    without the pass, with the same kernel count;
  - relax-run of a cuda artifact without a driver exits 1 with
    `no CUDA driver (libcuda.so.1 not found)`; with the toolkit's link stub as the
    driver (RX_CUDA_LIB) it exits 1 naming CUDA_ERROR_STUB_LIBRARY; never a crash;
  - over tests/unit/runtime/mock_cuda.c as the driver ($RX_MOCK_CUDA), relax-run --bench
    of the Llama decode loads every kernel of the PTX, allocates device storage, launches
    and names the device "CUDA: Mock GPU" (the mock runs no PTX: no numbers checked);
    --device-id 1 is refused naming the host's devices.
"""

import glob
import json
import os
import shutil
import struct
import sys
import tempfile

from e2e_check import Checks, run_status, tools
from test_bounds_e2e import call, module, tensor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CPU, PTX, LAUNCH, CUBIN = 6, 7, 10, 11  # section kinds (docs/artifact.md)
STUB = "/usr/local/cuda/lib64/stubs/libcuda.so"
GPU_REFUSED = "not available on a GPU target"


def sections(data):
    """{kind: bytes} of an artifact's sections."""
    n = struct.unpack_from("<I", data, 16)[0]
    out = {}
    for i in range(n):
        kind, _, off, size = struct.unpack_from("<IIQQ", data, 40 + 24 * i)
        out[kind] = data[off:off + size]
    return out


def find_ptxas():
    for p in (os.environ.get("RX_PTXAS"), "/usr/local/cuda/bin/ptxas", shutil.which("ptxas")):
        if p and os.access(p, os.X_OK):
            return p
    return None


def corpus(tmp):
    """The modules to build: the corpus and the Llama generator's."""
    mods = sorted(glob.glob(os.path.join(ROOT, "tests/modules/valid/*.json")))
    mods += sorted(glob.glob(os.path.join(ROOT, "tests/e2e/modules/*.json")))
    mods.append(os.path.join(ROOT, "tests/models/llama_tiny.json"))
    big = os.path.join(tmp, "llama7b_1layer.json")
    rc, _, err = run_status(["/usr/bin/python3", os.path.join(ROOT, "tests/models/gen_llama.py"),
                             "--preset", "llama32", "--layers", "1", "--name", "llama7b_1layer",
                             "--out", big])
    if rc != 0:
        raise RuntimeError("gen_llama.py failed: " + err)
    mods.append(big)
    return mods


def nvrtc_env(env=None):
    """env for a relaxc that runs NVRTC: LeakSanitizer's exit-time scan off. NVRTC leaves
    threads of its own, and LeakSanitizer's tracer crashes stopping them ("Tracer caught
    signal 11", every time for e2e_unary), which says nothing about our code; the same
    compiler code is leak-checked by every cpu, opencl and vulkan build. ASan's other
    checks stay on."""
    env = dict(env if env is not None else os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    return env


class Cuda:
    def __init__(self, build, tmp, checks):
        self.relaxc, self.relax_run = tools(build)
        self.tmp, self.c = tmp, checks
        self.ptxas = find_ptxas()
        self.n = 0

    def build(self, mod, target="cuda", env=None):
        """(exit status, stderr, artifact path)."""
        self.n += 1
        out = os.path.join(self.tmp, "m%d.rxa" % self.n)
        rc, _, err = run_status([self.relaxc, "build", mod, "--target", target, "--opt-level", "2",
                                 "-o", out], nvrtc_env(env) if target.startswith("cuda") else env)
        return rc, err, out

    def assemble(self, name, ptx, archs, quick=False):
        """ptxas accepts ptx for every arch of archs (quick: -O0, half the time, for
        the corpus; the same parsing and checks, no optimization)."""
        src = os.path.join(self.tmp, "k.ptx")
        with open(src, "wb") as f:
            f.write(ptx)
        for arch in archs:
            argv = [self.ptxas] + (["-O0"] if quick else []) + ["-arch=" + arch, src, "-o", os.devnull]
            rc, _, err = run_status(argv)
            self.c.check(rc == 0, "%s: ptxas%s -arch=%s accepts the PTX" % (name, " -O0" if quick else "", arch) +
                         ("" if rc == 0 else ": " + err[-1500:]))

    def module(self, mod):
        name = os.path.relpath(mod, ROOT) if mod.startswith(ROOT) else os.path.basename(mod)
        rc, err, rxa = self.build(mod)
        if rc != 0:
            if GPU_REFUSED in err:
                print("SKIP %s: calls a CPU library function (refused for GPU targets)" % name)
                return None
            crc, _, _ = self.build(mod, "cpu")
            self.c.check(crc != 0, "%s: cuda build fails only where the cpu build does: %s" %
                         (name, err.strip()[-300:]))
            return None
        secs = sections(open(rxa, "rb").read())
        ptx = secs.get(PTX, b"")
        entries = ptx.count(b".entry rxk_")
        nlaunch = self.launches(secs.get(LAUNCH, b"\0\0\0\0"))
        cubin = secs.get(CUBIN, b"")
        self.c.check(CPU not in secs and entries == nlaunch and
                     (nlaunch == 0 or (LAUNCH in secs and ptx.startswith(b"//") and b".version" in ptx
                                       and cubin[:4] == b"\x7fELF"
                                       and struct.unpack_from("<H", cubin, 18)[0] == 190)),
                     "%s: KERNELS_PTX with %d entries for %d launch records, a CUDA ELF cubin, LAUNCH, "
                     "no KERNELS_CPU"
                     % (name, entries, nlaunch))
        if self.ptxas and ptx:  # sm_90 too for the Llama modules (time: CI's budget)
            if "llama" in name:
                self.assemble(name, ptx, ["sm_80", "sm_90"])
            else:
                self.assemble(name, ptx, ["sm_90"], quick=True)
        return rxa

    @staticmethod
    def launches(data):
        """The number of kernel launch records of a LAUNCH section (docs/artifact.md): a
        host-loop record (schedule 3) launches nothing itself."""
        nk, pos, total = struct.unpack_from("<I", data, 0)[0], 4, 0
        for _ in range(nk):
            nl = struct.unpack_from("<I", data, pos)[0]
            pos += 4
            for _ in range(nl):
                ln = struct.unpack_from("<I", data, pos)[0]
                total += struct.unpack_from("<I", data, pos + 4 + ln)[0] != 3
                pos += 4 + ln + 16
                ntok = struct.unpack_from("<I", data, pos)[0]
                pos += 4
                for _ in range(ntok):
                    tok = struct.unpack_from("<I", data, pos)[0]
                    pos += 4 + (8 if tok == 0 else 4 if tok == 1 else 0)
        return total


def dialect(c, cu):
    """bf16 and f16 through their bit conversions, an index check (take) and the
    kernel declaration: CUDA C that NVRTC compiles and ptxas accepts."""
    m = module([tensor("x", ["n"], "bf16"), tensor("y", ["n"], "f16"), tensor("i", ["m"], "i64")],
               [call("a", "astype", ["x"], {"dtype": "f32"}),
                call("b", "astype", ["y"], {"dtype": "f32"}), call("c", "add", ["a", "b"]),
                call("t", "take", ["c", "i"], {"axis": 0}),
                call("d", "astype", ["t"], {"dtype": "bf16"})], "d")
    src = os.path.join(cu.tmp, "dtypes.json")
    with open(src, "w") as f:
        json.dump(m, f)
    rc, out, err = run_status([cu.relaxc, "print", src, "--target", "cuda,max_threads=128",
                               "--after", "codegen"], nvrtc_env())
    c.check(rc == 0 and 'extern "C" __global__ void __launch_bounds__(128) rxk_' in out and
            "*__restrict__ const" in out and "rx_bf2f(" in out and "rx_h2f(" in out and
            "cvt.rn.f16.f32" in out and "atomicCAS(&rx_st[0], 0, 1)" in out,
            "CUDA C: launch bounds, __restrict__ views, f16/bf16 conversions, index check" +
            ("" if rc == 0 else ": " + err))
    cu.module(src)
    llama = os.path.join(ROOT, "tests/models/llama_tiny.json")
    rc, out, err = run_status([cu.relaxc, "print", llama, "--target", "cuda", "--after", "codegen"],
                              nvrtc_env())
    c.check(rc == 0 and "__shared__ float rx_" in out and "__syncthreads();" in out and
            "INFINITY" in out,
            "CUDA C of llama_tiny: the rows and tiles schedules in shared memory with barriers" +
            ("" if rc == 0 else ": " + err[-500:]))
    c.check(rc == 0 and "const float rx_sh = __shfl_down_sync(0xffffffffu, rx_acc, rx_o);" in out
            and "__shared__ float rx_red[8];" in out and "rx_red[rx_t / 32] = rx_acc;" in out
            and "rx_red[rx_t + rx_s]" not in out,
            "CUDA C of llama_tiny: row reductions by warp shuffles, 256 / 32 shared partials")
    # the matvec's rows in registers: x read at a per-row offset plus k (its index, a
    # reshape of the attention output for the o-projection, computed once per pass), and
    # the weight's float4s as plain 16-byte loads when the first two are aligned
    c.check(rc == 0 and "[rx_xo[rx_q] + rx_k];" in out and "if (rx_wal) {" in out and
            "__ldg((const float4 *)(" in out and
            "l0_ctx_0[rx_xo[rx_q] + rx_k]" in out,
            "CUDA C of llama_tiny: matvec rows read x at offset + k (the o-projection's "
            "reshaped input too), aligned weights by plain float4 loads")
    rc, out, err = run_status([cu.relaxc, "print", llama, "--target", "cuda,max_threads=16",
                               "--after", "codegen"], nvrtc_env())
    c.check(rc == 0 and "__shfl_down_sync" not in out and "rx_red[rx_t + rx_s]" in out,
            "cuda,max_threads=16 (under a warp): the shared-memory tree, no shuffles" +
            ("" if rc == 0 else ": " + err[-500:]))


def cublas(c, cu):
    """Library lowering to cuBLAS and its run over the mock driver and mock cuBLAS."""
    m = module([tensor("x", ["n", 64]), tensor("w", [64, 32]), tensor("a", [2, "n", 16]),
                tensor("bb", [2, 16, 8]), tensor("v", [1, 64])],
               [call("y", "matmul", ["x", "w"]), call("z", "matmul", ["a", "bb"]),
                call("d", "matmul", ["v", "w"])], {"tuple": ["y", "z", "d"]})
    m["functions"]["main"]["body"]["blocks"][0]["dataflow"] = True  # library lowering's scope
    src = os.path.join(cu.tmp, "mm.json")
    with open(src, "w") as f:
        json.dump(m, f)
    libs = {}
    for tgt in ("cuda", "cuda,cublas=0"):
        rc, out, err = run_status([cu.relaxc, "print", src, "--target", tgt, "--after",
                                   "library_lower"], nvrtc_env())
        libs[tgt] = (rc, out.count('"cublas.matmul"'), err)
    c.check(libs["cuda"][:2] == (0, 2) and libs["cuda,cublas=0"][:2] == (0, 0),
            "cuda: two matmuls (symbolic rows, batched) to cublas.matmul, M = 1 generated; "
            "cuda,cublas=0: none (%s)" % str([v[:2] for v in libs.values()]) + libs["cuda"][2][-300:])
    rc, err, rxa = cu.build(src)
    c.check(rc == 0, "the matmul module builds for cuda" + ("" if rc == 0 else ": " + err))
    mock, mock_blas = os.environ.get("RX_MOCK_CUDA"), os.environ.get("RX_MOCK_CUBLAS")
    if rc or not (mock and mock_blas and os.path.exists(mock) and os.path.exists(mock_blas)):
        print("SKIP cuBLAS runs: $RX_MOCK_CUDA / $RX_MOCK_CUBLAS not set (ctest sets them)")
        return
    import numpy as np
    rng = np.random.default_rng(3)
    ins = {"x": rng.standard_normal((5, 64)), "w": rng.standard_normal((64, 32)),
           "a": rng.standard_normal((2, 5, 16)), "bb": rng.standard_normal((2, 16, 8)),
           "v": rng.standard_normal((1, 64))}
    argv = [cu.relax_run, rxa]
    for k, v in ins.items():
        ins[k] = v.astype(np.float32)
        np.save(os.path.join(cu.tmp, k + ".npy"), ins[k])
        argv += ["--in", "%s=%s" % (k, os.path.join(cu.tmp, k + ".npy"))]
    outdir = os.path.join(cu.tmp, "mm-out")
    os.makedirs(outdir, exist_ok=True)
    env = dict(os.environ, RX_CUDA_LIB=mock, RX_CUBLAS_LIB=mock_blas)
    rc, out, err = run_status(argv + ["--out-dir", outdir], env)
    ok = rc == 0
    if ok:
        got = [np.load(os.path.join(outdir, "out%d.npy" % i)) for i in range(3)]
        want = [ins["x"] @ ins["w"], ins["a"] @ ins["bb"]]
        ok = all(g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-4)
                 for g, w in zip(got[:2], want))
    c.check(ok, "relax-run over the mock driver and mock cuBLAS: (n, 64) @ (64, 32) and the "
            "batched (2, n, 16) @ (2, 16, 8) equal NumPy's" + ("" if rc == 0 else ": " + err.strip()))
    # the M = 1 product is a generated kernel: the mock runs no PTX, so only the two
    # cuBLAS results are compared
    env["RX_CUBLAS_LIB"] = os.path.join(cu.tmp, "no-libcublas.so")
    rc, out, err = run_status(argv, env)
    c.check(rc == 1 and "cuBLAS is not available: cannot load" in err and err.startswith("error: "),
            "without cuBLAS the call fails naming it: " + err.strip()[-300:])


def graphs(c, cu):
    """CUDA Graph regions: marked, lowered, captured and replayed over the mock driver."""
    llama = os.path.join(ROOT, "tests/models/llama_tiny.json")
    lst = {}
    for extra in ([], ["--disable-pass", "cuda_graph"]):
        rc, out, err = run_status([cu.relaxc, "print", llama, "--target", "cuda", "--after",
                                   "lower_vm"] + extra, nvrtc_env())
        dec = out[out.find("function decode"):]
        lst[bool(extra)] = (rc, dec[:dec.find("\nfunction ", 1)] if "\nfunction " in dec[1:] else dec)
    rc, dec = lst[False]
    c.check(rc == 0 and "GRAPH_BEGIN 0 [ h" in dec and dec.count("GRAPH_BEGIN") == dec.count("GRAPH_END") == 1
            and lst[True][0] == 0 and "GRAPH_BEGIN" not in lst[True][1],
            "decode: one CUDA Graph region in lower_vm's listing, none with --disable-pass cuda_graph")
    mock, blas = os.environ.get("RX_MOCK_CUDA"), os.environ.get("RX_MOCK_CUBLAS")
    if not (mock and blas and os.path.exists(mock)):
        print("SKIP CUDA Graph runs: $RX_MOCK_CUDA / $RX_MOCK_CUBLAS not set (ctest sets them)")
        return
    env = dict(os.environ, RX_CUDA_LIB=mock, RX_CUBLAS_LIB=blas)
    lines = {}
    for extra in ([], ["--disable-pass", "cuda_graph"]):
        rc, err, rxa = cu.build(llama, "cuda", None)
        if extra:
            rc, _, err = run_status([cu.relaxc, "build", llama, "--target", "cuda", "-o", rxa] + extra,
                                    nvrtc_env())
        rc, out, err = run_status([cu.relax_run, rxa, "--fn", "decode", "--shape", "b=2", "--shape",
                                   "c=5", "--random-missing", "--bench", "--repeat", "3",
                                   "--warmup", "2"], env)
        lines[bool(extra)] = json.loads(out) if rc == 0 else {"err": err}
    g, n = lines[False], lines[True]
    c.check(g.get("launches") == 1.0 and g.get("graph_launches") == 1.0 and
            n.get("graph_launches") == 0.0 and n.get("launches", 0) > 20 and
            g.get("kernels") == n.get("kernels"),
            "decode over the mock driver: %s launch(es) per call with CUDA Graphs (%s graph), %s "
            "without, %s kernels both" % (g.get("launches"), g.get("graph_launches"),
                                          n.get("launches"), n.get("kernels")) + str(g.get("err", "")))


def errors(c, cu, mods, rxa):
    llama = mods[-2]
    rc, err, out = cu.build(llama, "cuda,arch=sm_90")
    c.check(rc == 0, "llama_tiny builds for cuda,arch=sm_90" + ("" if rc == 0 else ": " + err))
    if rc == 0 and cu.ptxas:
        cu.assemble("llama_tiny (arch=sm_90)", sections(open(out, "rb").read())[PTX], ["sm_90"])
    rc, err, _ = cu.build(llama, "cuda,arch=sm_10")
    c.check(rc == 1 and "arch: sm_10 is not supported by NVRTC" in err and "supported: sm_" in err,
            "cuda,arch=sm_10 refused naming NVRTC's range: " + err.strip().splitlines()[-1])
    rc, err, _ = cu.build(llama, "cuda,arch=90")
    c.check(rc == 1 and "is not of the form sm_NN" in err, "cuda,arch=90 refused: " + err.strip())
    env = dict(os.environ, RX_NVRTC_LIB=os.path.join(cu.tmp, "no-libnvrtc.so"))
    rc, err, _ = cu.build(llama, "cuda", env)
    c.check(rc == 1 and "no NVRTC for cuda: cannot load" in err and "RX_NVRTC_LIB" in err,
            "without NVRTC cuda builds are refused: " + err.strip())
    rc, err, _ = cu.build(llama, "cpu", env)
    c.check(rc == 0, "without NVRTC cpu builds still work")
    if not rxa:
        c.check(False, "a cuda artifact to run")
        return
    env = dict(os.environ)
    env.pop("RX_CUDA_LIB", None)
    rc, out, err = run_status([cu.relax_run, rxa, "--shape", "s=3"], env)
    c.check(rc == 1 and err.strip().endswith("no CUDA driver (libcuda.so.1 not found)")
            and err.startswith("error: ") and len(err.strip().splitlines()) == 1,
            "relax-run without a driver: exit %d, %s" % (rc, err.strip()))
    if os.path.exists(STUB):
        env["RX_CUDA_LIB"] = STUB
        rc, out, err = run_status([cu.relax_run, rxa, "--shape", "s=3"], env)
        c.check(rc == 1 and "no CUDA driver: cuInit failed (CUDA_ERROR_STUB_LIBRARY" in err,
                "relax-run with the link stub as driver: exit %d, %s" % (rc, err.strip()))
    mock = os.environ.get("RX_MOCK_CUDA")
    if mock and os.path.exists(mock):  # the whole GPU path of the VM over a stand-in driver
        env["RX_CUDA_LIB"] = mock
        rc, out, err = run_status([cu.relax_run, rxa, "--fn", "decode", "--shape", "b=2", "--shape",
                                   "c=5", "--random-missing", "--bench", "--repeat", "2"], env)
        line = json.loads(out) if rc == 0 else {}
        c.check(rc == 0 and line.get("device") == "CUDA: Mock GPU" and line.get("kernels", 0) > 10
                and line.get("peak_bytes", 0) > 0,
                "relax-run --bench over the mock driver: loads the PTX's kernels, allocates, "
                "launches, names the device (exit %d) %s" % (rc, (out + err).strip()[-300:]))
        rc, out, err = run_status([cu.relax_run, rxa, "--fn", "decode", "--device-id", "1",
                                   "--random-missing"], env)
        c.check(rc == 1 and "no CUDA device 1 (this host has 1: 0..0)" in err,
                "--device-id 1 over the mock driver: %s" % err.strip())
    else:
        print("SKIP mock driver runs: $RX_MOCK_CUDA not set (ctest sets it)")
    env["RX_CUDA_LIB"] = os.path.join(cu.tmp, "libcuda-missing.so.1")
    rc, out, err = run_status([cu.relax_run, rxa, "--bench", "--device-id", "1"], env)
    c.check(rc == 1 and "no CUDA driver (cannot load" in err,
            "relax-run --bench --device-id 1 with RX_CUDA_LIB missing: exit %d, %s" % (rc, err.strip()))


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    checks = Checks()
    tmp = tempfile.mkdtemp(prefix="rx-cuda-")
    cu = Cuda(argv[1], tmp, checks)
    rc, err, _ = cu.build(os.path.join(ROOT, "tests/modules/valid/fig03_symbolic_shape.json"))
    if rc != 0 and "no NVRTC for cuda" in err:  # a host without the CUDA toolkit
        print("skipped: %s" % err.strip())
        return 77
    if not cu.ptxas:
        print("SKIP ptxas checks: no ptxas (neither $RX_PTXAS, /usr/local/cuda/bin/ptxas nor PATH)")
    mods = corpus(tmp)
    built = {}
    for mod in mods:
        built[mod] = cu.module(mod)
    checks.check(sum(1 for v in built.values() if v) >= len(mods) * 3 // 4,
                 "%d of %d modules built for cuda" % (sum(1 for v in built.values() if v), len(mods)))
    dialect(checks, cu)
    cublas(checks, cu)
    graphs(checks, cu)
    errors(checks, cu, mods, built.get(mods[-2]))
    shutil.rmtree(tmp, ignore_errors=True)
    return checks.done()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
