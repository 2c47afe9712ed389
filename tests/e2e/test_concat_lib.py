"""test_concat_lib.py — concats through rt.concat (runtime/library_concat.c, library
lowering's concat rule) and pre-activation batch norms over them (simplify's affine
form), against NumPy, end to end.

    /usr/bin/python3 tests/e2e/test_concat_lib.py BUILD_DIR

One module, symbolic batch n, one function per case: concats of parameters along
the channels (three fields of unequal sizes, large enough that the copy is split over
threads, ranges ending inside a field and inside a row), the batch axis, the last
axis, in f32 and f64, with a field read twice; a field of symbolic extent m (0 at run
time: an empty field); DenseNet's layer over the concat of earlier maps,
relu(batch_norm(concat(x, y, z))) with constant statistics, whose concat is
rt.concat with the norm and relu on the way; a concat followed by a per-channel
scale and a relu, and one followed by a per-channel shift alone. Checked:
  - `relaxc build` (O2) calls rt.concat in every case (the count in the lowered module),
    the epilogues joined (its flags 7, 5, 2), and no nn.batch_norm is left;
  - relax-run at batch 1 and 2 of the same artifact, --threads 1, 2 and 3: the copies
    equal NumPy's concatenate exactly, the DenseNet layer a float64 NumPy reference
    within rtol 1e-5 (the affine form rounds differently from the definition), the
    epilogues NumPy's f32 within 1e-5;
  - the module built at O0 and with --lib-disable concat (the generated concat) gives
    the same copies bit for bit.
Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import base64
import json
import os
import sys
import tempfile

import numpy as np

from e2e_check import run, run_fn, run_status, start

NP = {"f32": np.float32, "f64": np.float64}
# name: dtype, axis, field shapes ("n": the batch, "m": a symbolic extent, 0 at run time)
CASES = {
    "chan3": ("f32", 1, [["n", 24, 40, 40], ["n", 40, 40, 40], ["n", 3, 40, 40]]),
    "batch": ("f32", 0, [["n", 8, 16, 16], ["n", 8, 16, 16]]),
    "last_f64": ("f64", 3, [["n", 4, 33, 17], ["n", 4, 33, 50], ["n", 4, 33, 1]]),
    "twice": ("f32", 2, [["n", 6, 30, 32], ["n", 6, 5, 32], ["n", 6, 30, 32]]),
    "empty": ("f32", 1, [["n", 16, 24, 24], ["n", "m", 24, 24], ["n", 8, 24, 24]]),
}
DENSE = [8, 16, 12]  # the DenseNet case's field channels, (n, c, 20, 20) each


def tensor(shape, dt="f32"):
    return {"tensor": {"shape": shape, "dtype": dt}}


def concat_fn(dt, axis, shapes):
    names = ["x%d" % i for i in range(len(shapes))]
    fields = [names[0], names[1], names[0]] if len(shapes) == 3 and shapes[0] == shapes[2] \
        else names  # "twice": the first parameter read twice
    params = [{"name": nm, "type": tensor(s, dt)} for nm, s in zip(names, shapes)]
    return {"kind": "relax", "params": params,
            "body": {"blocks": [{"dataflow": True, "bindings": [
                {"var": "r", "value": {"op": "concat", "args": [{"tuple": fields}],
                                       "attrs": {"axis": axis}}}]}],
                     "result": "r"}}, fields


def dense_fn(consts):
    params = [{"name": "x%d" % i, "type": tensor(["n", c, 20, 20])} for i, c in enumerate(DENSE)]
    bn = {"op": "nn.batch_norm", "args": ["c"] + [{"const": k} for k in ("g", "b", "mu", "var")],
          "attrs": {"axis": 1, "epsilon": 1e-5}}
    return {"kind": "relax", "params": params,
            "body": {"blocks": [{"dataflow": True, "bindings": [
                {"var": "c", "value": {"op": "concat",
                                       "args": [{"tuple": ["x%d" % i for i in range(len(DENSE))]}],
                                       "attrs": {"axis": 1}}},
                {"var": "t", "value": bn},
                {"var": "y", "value": {"get_item": "t", "index": 0}},
                {"var": "r", "value": {"op": "nn.relu", "args": ["y"]}}]}],
                     "result": "r"}}


def epi_fn(ops):
    """concat of the DENSE fields, then the ops of ops ("mul", "add", "relu") with the
    per-channel constants g (scale) and b (shift), as (C, 1, 1) constants."""
    params = [{"name": "x%d" % i, "type": tensor(["n", c, 20, 20])} for i, c in enumerate(DENSE)]
    binds = [{"var": "v0", "value": {"op": "concat",
                                     "args": [{"tuple": ["x%d" % i for i in range(len(DENSE))]}],
                                     "attrs": {"axis": 1}}}]
    for i, o in enumerate(ops):
        prev, args = "v%d" % i, None
        args = {"mul": [prev, {"const": "g3"}], "add": [{"const": "b3"}, prev],
                "relu": [prev]}[o]
        binds.append({"var": "v%d" % (i + 1),
                      "value": {"op": "nn.relu" if o == "relu" else
                                ("multiply" if o == "mul" else "add"), "args": args}})
    return {"kind": "relax", "params": params,
            "body": {"blocks": [{"dataflow": True, "bindings": binds}], "result": "v%d" % len(ops)}}


EPI = {"epi_mul_relu": ["mul", "relu"], "epi_add": ["add"]}


def cases(relaxc, relax_run, checks):
    check = checks.check
    rng = np.random.default_rng(5)
    C = sum(DENSE)
    st = {"g": rng.standard_normal(C), "b": rng.standard_normal(C), "mu": rng.standard_normal(C),
          "var": rng.random(C) + 0.25}
    consts = {k: {"dtype": "f32", "shape": [C],
                  "data": base64.b64encode(v.astype(np.float32).tobytes()).decode()}
              for k, v in st.items()}
    for k, src in (("g3", "g"), ("b3", "b")):  # the same values as (C, 1, 1)
        consts[k] = dict(consts[src], shape=[C, 1, 1])
    funcs, fields = {}, {}
    for n, (dt, axis, shapes) in CASES.items():
        funcs[n], fields[n] = concat_fn(dt, axis, shapes)
    funcs["dense"] = dense_fn(consts)
    for n, ops in EPI.items():
        funcs[n] = epi_fn(ops)
    mod = {"format": "relax-json", "version": 1, "functions": funcs, "constants": consts}
    with tempfile.TemporaryDirectory(prefix="rx_concat.") as tmp:
        src = os.path.join(tmp, "m.json")
        with open(src, "w") as f:
            json.dump(mod, f)
        text = run([relaxc, "print", src, "--after", "library_lower"])
        calls = text.count('"rt.concat"')
        check(calls == len(CASES) + 1 + len(EPI),
              "library_lower: every concat is rt.concat (%d calls)" % calls)
        flags = [text.count('R.const([1, %d], "i64")' % f) for f in (7, 5, 2)]
        check(flags == [1, 1, 1], "the DenseNet norm + relu, a scale + relu and a shift join "
              "their rt.concat (flags 7, 5, 2: %s)" % flags)
        check("nn.batch_norm" not in run([relaxc, "print", src, "--after", "dce"]),
              "simplify + dce: the DenseNet norm is an affine, no nn.batch_norm left")
        builds = {}
        for tag, extra in (("O2", []), ("O0", ["--opt-level", "0"]),
                           ("nolib", ["--lib-disable", "concat"])):
            rxa = os.path.join(tmp, "m.%s.rxa" % tag)
            rc, _, err = run_status([relaxc, "build", src, "-o", rxa] + extra)
            check(rc == 0, "build %s%s" % (tag, "" if rc == 0 else ": " + err[-800:]))
            builds[tag] = rxa
        for batch in (1, 2):
            data = {}
            for n, (dt, axis, shapes) in CASES.items():
                data[n] = [rng.standard_normal([batch if d == "n" else 0 if d == "m" else d
                                                for d in s]).astype(NP[dt]) for s in shapes]
            for n in ["dense"] + list(EPI):
                data[n] = [rng.standard_normal([batch, c, 20, 20]).astype(np.float32)
                           for c in DENSE]
            for n in list(CASES) + ["dense"] + list(EPI):
                args = []
                for i, a in enumerate(data[n]):
                    p = os.path.join(tmp, "%s_%d_b%d.npy" % (n, i, batch))
                    np.save(p, a)
                    args += ["--in", "x%d=%s" % (i, p)]
                if n == "dense":
                    c = np.concatenate(data[n], 1).astype(np.float64)
                    sh = lambda v: v.reshape(1, -1, 1, 1)  # noqa: E731
                    want = np.maximum((c - sh(st["mu"].astype(np.float32))) /
                                      np.sqrt(sh(st["var"].astype(np.float32)) + 1e-5) *
                                      sh(st["g"].astype(np.float32)) + sh(st["b"].astype(np.float32)), 0)
                elif n in EPI:
                    want = np.concatenate(data[n], 1)
                    for o in EPI[n]:
                        want = (want * st["g"].astype(np.float32).reshape(1, -1, 1, 1) if o == "mul"
                                else want + st["b"].astype(np.float32).reshape(1, -1, 1, 1)
                                if o == "add" else np.maximum(want, 0))
                else:
                    byname = {"x%d" % i: a for i, a in enumerate(data[n])}
                    want = np.concatenate([byname[f] for f in fields[n]], CASES[n][1])
                for tag, rxa in builds.items():
                    for threads in ((1, 2, 3) if tag == "O2" else (2,)):
                        od = os.path.join(tmp, "o_%s_%s_%d_%d" % (n, tag, batch, threads))
                        what = "%s %s batch %d threads %d" % (n, tag, batch, threads)
                        if not run_fn(relax_run, rxa, n, threads, od, args, checks, what):
                            continue
                        got = np.load(os.path.join(od, "out0.npy"))
                        if n == "dense" or n in EPI:
                            check(got.shape == want.shape and
                                  np.allclose(got, want, rtol=1e-5, atol=1e-5),
                                  what + ": the float64 reference within 1e-5")
                        else:
                            check(got.dtype == want.dtype and got.shape == want.shape and
                                  np.array_equal(got, want), what + ": equals np.concatenate")
    return checks.done()


if __name__ == "__main__":
    TOOLS = start(sys.argv, __doc__)
    sys.exit(2 if TOOLS is None else cases(*TOOLS))
