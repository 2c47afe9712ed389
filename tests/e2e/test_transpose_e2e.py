"""test_transpose_e2e.py — transposes, innermost-axis permutes and full-line row copies
against NumPy, end to end.

    /usr/bin/python3 tests/e2e/test_transpose_e2e.py BUILD_DIR

One module, one function per case; each permute_dims moves the innermost axis, so the
copy schedule tiles it (compiler/pass/schedule_copy.c) and the C generator emits the
tiles of 32-bit elements as in-register 8 x 8 AVX2 transposes (compiler/codegen/
c_transpose.c; 16-bit ones as SSE2 transposes), falling back to the scalar loops for
tiles whose extents are not multiples of 8, for other dtypes and on CPUs without AVX2:
  tr_odd      f32 (70, 100) -> (100, 70): edge tiles of 6 and 4 (scalar), interior 16 x 16
  tr_eight    f32 (72, 104): edge tiles of 8 (the helper's 8-row remainder)
  tr_sym      f32 (n, m) at n = 67, m = 90: symbolic extents, the tile test at run time
  tr_i32      i32 (72, 88): a 4-byte integer through the float lanes, bits unchanged
  tr_nt       f32 (1032, 1030): a 4.25 MB destination with 32-byte aligned rows, so
              the interior tiles use streaming stores (RX_TR_NT_MIN is 4 MiB)
  p0132       f32 (2, 3, 24, 40) -> (2, 3, 40, 24): the two inner axes swapped
  p0312       f32 (2, 17, 24, 48) -> (2, 48, 17, 24): an odd axis between the tiled ones
  p201        f32 (40, 8, 33) -> (33, 40, 8): tiles 8 wide along the middle axis
  tr_f16      f16 (100, 70): a 2-byte type, 32 x 32 tiles, edge tiles of 4 and 6
  p0132_f16   f16 (2, 3, 40, 72): edge tiles of 8
  tr_nt_f16   f16 (1448, 1456): a 4.2 MB destination, 16-byte aligned rows: streaming
and copies that keep the innermost axis into destinations of at least 4 MiB, whose rows
the C generator copies with 64-byte stores (compiler/codegen/c_rowcopy.c, rx_row_copy):
  row_nt      f32 (2, 1024, 8, 260) -> (2, 8, 1024, 260): 1040-byte rows, so their
              starts move through every 16-byte offset of a line (the memcpy'd head and
              tail around the 64-byte lines)
  row_nt_f16  f16 (2, 2048, 8, 264) -> (2, 8, 2048, 264): a 2-byte type
  row_sym     f32 (b, 64, 16, 64) at b = 80 -> (b, 16, 64, 64): a symbolic size, the
              threshold tested at run time (21 MB)
  cat_nt      f32 concat((x, x), axis 1) of (4, 1030, 520): the KV-cache append's form
  row_small   f32 (4, 64, 16, 64) permuted as row_sym: 1 MiB, under the threshold, so
              no row copy is emitted
Checks: the generated C at O2 (library concat off) calls rx_tr32 in every 4-byte
transposing case and rx_tr16 in every 2-byte one, and rx_row_copy in every row case but
row_small (so the fast paths are what the numbers test; cat_nt's builds at O2 and O3 run
rt.concat instead, its fields being parameters), inside parallel loops that end with the streaming stores'
fence; at O0, O1, O2 and O3, relax-run's output
equals NumPy's transpose bit for bit, with the AVX2 path (the default on this CPU) and
with RX_KERNEL_ISA=base (the scalar tiles and plain row loops). Prints one line per check and
`N passed, M failed`; exit 1 on a failure.
"""

import json
import os
import re
import sys
import tempfile

import numpy as np

from e2e_check import run, run_status, start

# name: (dtype, input shape (str: symbolic), axes, sizes of the symbolic variables)
CASES = {
    "tr_odd": ("f32", [70, 100], [1, 0]),
    "tr_eight": ("f32", [72, 104], [1, 0]),
    "tr_sym": ("f32", ["n", "m"], [1, 0]),
    "tr_i32": ("i32", [72, 88], [1, 0]),
    "tr_nt": ("f32", [1032, 1030], [1, 0]),
    "p0132": ("f32", [2, 3, 24, 40], [0, 1, 3, 2]),
    "p0312": ("f32", [2, 17, 24, 48], [0, 3, 1, 2]),
    "p201": ("f32", [40, 8, 33], [2, 0, 1]),
    "tr_f16": ("f16", [100, 70], [1, 0]),
    "p0132_f16": ("f16", [2, 3, 40, 72], [0, 1, 3, 2]),
    "tr_nt_f16": ("f16", [1448, 1456], [1, 0]),
    "row_nt": ("f32", [2, 1024, 8, 260], [0, 2, 1, 3]),
    "row_nt_f16": ("f16", [2, 2048, 8, 264], [0, 2, 1, 3]),
    "row_sym": ("f32", ["b", 64, 16, 64], [0, 2, 1, 3]),
    "cat_nt": ("f32", [4, 1030, 520], "concat"),
    "row_small": ("f32", [4, 64, 16, 64], [0, 2, 1, 3]),
}
ROWS = ("row_nt", "row_nt_f16", "row_sym", "cat_nt")  # rx_row_copy, not a transposing tile
SIZES = {"n": 67, "m": 90, "b": 80}
NP = {"f32": np.float32, "i32": np.int32, "f16": np.float16}


def function(dtype, shape, axes):
    """r = permute_dims(x, axes), or concat((x, x), axis=1) when axes is "concat"."""
    value = {"op": "permute_dims", "args": ["x"], "attrs": {"axes": axes}}
    if axes == "concat":
        value = {"op": "concat", "args": [{"tuple": ["x", "x"]}], "attrs": {"axis": 1}}
    return {"kind": "relax",
            "params": [{"name": "x", "type": {"tensor": {"shape": shape, "dtype": dtype}}}],
            "body": {"blocks": [{"dataflow": True, "bindings": [
                {"var": "r", "value": value}]}],
                     "result": "r"}}


def kernel_texts(c_text):
    """{kernel symbol: its C text} of a codegen print (the exported definitions)."""
    parts = re.split(r"\n(?=int32_t rxk_\w+\(void \*const \*data, const int64_t \*ivars\)\n)",
                     c_text)
    out = {}
    for p in parts[1:]:
        out[re.match(r"int32_t (rxk_\w+)", p).group(1)] = p
    return out


def cases(relaxc, relax_run, checks):
    """Runs every check (module docstring); the exit status."""
    check = checks.check
    mod = {"format": "relax-json", "version": 1,
           "functions": {n: function(*c) for n, c in CASES.items()}}
    rng = np.random.default_rng(19)
    with tempfile.TemporaryDirectory(prefix="rx_transpose.") as tmp:
        src = os.path.join(tmp, "m.json")
        with open(src, "w") as f:
            json.dump(mod, f)
        # The fast path is emitted for the 4-byte cases only: one kernel per function,
        # and every transposing kernel of a 4-byte type calls rx_tr32.
        # --lib-disable concat: cat_nt's fields are parameters, which library lowering
        # gives to rt.concat at O2 (its bytes are checked below with the rest); the
        # generated concat's row copy is what this part inspects
        text = run([relaxc, "print", src, "--after", "codegen", "--lib-disable", "concat"])
        kernels = kernel_texts(text)
        calls = []
        for helper, dts in (("rx_tr32(", ("f32", "i32")), ("rx_tr16(", ("f16",))):
            some = [k for k, body in kernels.items() if helper in body]
            want = sum(1 for n, c in CASES.items() if c[0] in dts and n.startswith(("tr", "p")))
            check(len(some) == want, "codegen: %d kernels call %s) (got %d: %s)"
                  % (want, helper, len(some), ", ".join(sorted(some))))
            calls += some
        # every such tile is inside a parallel loop, whose iterations end with the fence
        check(all("rx_tr_fence();" in kernels[k] and ", 0);" in kernels[k] for k in calls),
              "codegen: the parallel loops around the tiles end with rx_tr_fence")
        check("_mm256_stream_ps" in text and "RX_TR8X8" not in text,
              "codegen: the helper has streaming stores and the expanded shuffle sequence")
        rows = sorted(k for k, body in kernels.items() if "rx_row_copy(&" in body)
        check(len(rows) == len(ROWS), "codegen: %d kernels copy rows with rx_row_copy (got %s)"
              % (len(ROWS), ", ".join(rows)))
        check("_mm512_storeu_si512" in text, "codegen: rx_row_copy stores 64-byte lines")
        inputs = {}
        for name, (dt, shape, axes) in CASES.items():
            shp = [SIZES.get(d, d) for d in shape]
            if dt == "i32":
                a = rng.integers(-2**31, 2**31 - 1, size=shp, dtype=np.int64).astype(np.int32)
            else:
                a = rng.standard_normal(shp).astype(NP[dt])
            path = os.path.join(tmp, name + ".npy")
            np.save(path, a)
            inputs[name] = (a, path)
        for opt in (0, 1, 2, 3):
            rxa = os.path.join(tmp, "m.O%d.rxa" % opt)
            rc, _, err = run_status([relaxc, "build", src, "-o", rxa, "--opt-level", str(opt)])
            check(rc == 0, "relaxc build O%d" % opt + ("" if rc == 0 else ": " + err[-2000:]))
            if rc != 0:
                continue
            for isa in ("default", "base"):
                env = dict(os.environ)
                if isa == "base":
                    env["RX_KERNEL_ISA"] = "base"
                for name, (dt, shape, axes) in CASES.items():
                    a, path = inputs[name]
                    out = os.path.join(tmp, "out_%s_%d_%s" % (name, opt, isa))
                    try:
                        run([relax_run, rxa, "--fn", name, "--in", "x=" + path,
                             "--out-dir", out], env)
                        got = np.load(os.path.join(out, "out0.npy"))
                        ref = np.concatenate([a, a], axis=1) if axes == "concat" else \
                            np.ascontiguousarray(a.transpose(axes))
                        ok = got.shape == ref.shape and got.dtype == ref.dtype and \
                            got.tobytes() == ref.tobytes()
                        check(ok, "%s O%d isa=%s: equals NumPy bit for bit %s"
                              % (name, opt, isa, list(ref.shape)))
                    except RuntimeError as e:
                        check(False, "%s O%d isa=%s runs: %s" % (name, opt, isa, e))
    return checks.done()


if __name__ == "__main__":
    TOOLS = start(sys.argv, __doc__)
    sys.exit(2 if TOOLS is None else cases(*TOOLS))
