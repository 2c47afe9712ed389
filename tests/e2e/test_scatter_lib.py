"""test_scatter_lib.py — scatter_elements and scatter_nd through rt.scatter (runtime/
library_scatter.c: the CPU library call legalize makes) against NumPy, end to end.

    /usr/bin/python3 tests/e2e/test_scatter_lib.py BUILD_DIR

One module, one function per case: every reduction (update, add, mul, max, min) of
scatter_elements along the first, a middle and the last axis with indices narrower than
the data, repeated and negative indices (so "update" keeps the last in flat order and
add / mul accumulate), and scatter_nd with whole slices and single elements, in f32,
f64, i32 (wrapping add) and i64, i32 and i64 indices; "update" of bool and u8 data. Checks: the legalized module calls
rt.scatter in every function (the fast path is what the numbers test); at O0 and O2 the
output equals a serial loop over the updates in flat order exactly (ONNX's reference);
the same module for OpenCL (the loops of legalize_axis.c, PoCL) agrees with the CPU
(exactly, but float add / mul within rtol 1e-5: the loops sum the landing updates
before adding x); an index out of range is a clear run-time error.
Prints `N passed, M failed`; exit 1 on a failure.
"""

import json
import os
import sys
import tempfile

import numpy as np

from e2e_check import run, run_status, start

NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "bool": np.bool_,
      "u8": np.uint8}
# name: (form, dtype, data shape, indices shape (elements) or (lead..., m), axis, reduction, idx dtype)
CASES = {
    "el_upd_ax0": ("el", "f32", [6, 5], [9, 4], 0, "update", "i64"),
    "el_add_ax1": ("el", "f32", [4, 7, 3], [3, 11, 2], 1, "add", "i64"),
    "el_mul_last": ("el", "f64", [3, 8], [3, 12], 1, "mul", "i32"),
    "el_max_i32": ("el", "i32", [5, 6], [7, 6], 0, "max", "i64"),
    "el_min_i64": ("el", "i64", [5, 6], [5, 9], 1, "min", "i32"),
    "el_add_i32_wrap": ("el", "i32", [4, 4], [6, 4], 0, "add", "i64"),
    "nd_upd_slices": ("nd", "f32", [6, 3, 4], [5, 1], None, "update", "i64"),
    "nd_add_elems": ("nd", "f64", [5, 4], [7, 3, 2], None, "add", "i64"),
    "nd_max_rows": ("nd", "f32", [4, 5, 2], [6, 2], None, "max", "i32"),
    # bool and u8 with "update" (Hugging Face's top-p mask scattered back: the loops were
    # O(outputs x updates), 17 s at 16 x 32000)
    "el_upd_bool": ("el", "bool", [5, 9], [5, 9], 1, "update", "i64"),
    "nd_upd_u8": ("nd", "u8", [6, 4], [3, 1], None, "update", "i32"),
}


def function(form, dt, shape, ishape, axis, red, idt):
    if form == "el":
        ushape = ishape
        attrs = {"axis": axis, "reduction": red}
        op = "scatter_elements"
    else:
        m = ishape[-1]
        ushape = ishape[:-1] + shape[m:]
        attrs = {"reduction": red}
        op = "scatter_nd"
    params = [{"name": "x", "type": {"tensor": {"shape": shape, "dtype": dt}}},
              {"name": "i", "type": {"tensor": {"shape": ishape, "dtype": idt}}},
              {"name": "u", "type": {"tensor": {"shape": ushape, "dtype": dt}}}]
    return {"kind": "relax", "params": params,
            "body": {"blocks": [{"dataflow": True, "bindings": [
                {"var": "r", "value": {"op": op, "args": ["x", "i", "u"], "attrs": attrs}}]}],
                     "result": "r"}}, ushape


def combine(red, a, b):
    if red == "update":
        return b
    if red == "add":
        return a + b
    if red == "mul":
        return a * b
    return np.maximum(a, b) if red == "max" else np.minimum(a, b)


def reference(form, x, ind, upd, axis, red):
    """A serial loop in flat order over the updates (wrapping for integers)."""
    out = x.copy()
    with np.errstate(over="ignore"):
        if form == "el":
            for pos in np.ndindex(*ind.shape):
                t = list(pos)
                v = int(ind[pos])
                t[axis] = v + x.shape[axis] if v < 0 else v
                out[tuple(t)] = combine(red, out[tuple(t)], upd[pos])
        else:
            m = ind.shape[-1]
            for lead in np.ndindex(*ind.shape[:-1]):
                t = tuple(int(v) + x.shape[q] if v < 0 else int(v) for q, v in enumerate(ind[lead]))
                assert len(t) == m
                out[t] = combine(red, out[t], upd[lead])
    return out


def inputs(rng, form, dt, shape, ishape, ushape, axis, idt):
    if dt in ("f32", "f64"):
        x = rng.standard_normal(shape).astype(NP[dt])
        u = rng.standard_normal(ushape).astype(NP[dt])
    elif dt in ("bool", "u8"):
        x = rng.integers(0, 2 if dt == "bool" else 256, shape).astype(NP[dt])
        u = rng.integers(0, 2 if dt == "bool" else 256, ushape).astype(NP[dt])
    else:
        big = 2**31 - 10 if dt == "i32" else 1000
        x = rng.integers(-big, big, shape).astype(NP[dt])
        u = rng.integers(-big, big, ushape).astype(NP[dt])
    if form == "el":
        d = shape[axis]
        i = rng.integers(-d, d, ishape)  # negatives and repeats
    else:
        m = ishape[-1]
        i = np.stack([rng.integers(-shape[q], shape[q], ishape[:-1]) for q in range(m)], -1)
    return x, i.astype(NP[idt]), u


def cases(relaxc, relax_run, checks):
    check = checks.check
    rng = np.random.default_rng(23)
    funcs, ushapes = {}, {}
    for n, (form, dt, shape, ishape, axis, red, idt) in CASES.items():
        funcs[n], ushapes[n] = function(form, dt, shape, ishape, axis, red, idt)
    mod = {"format": "relax-json", "version": 1, "functions": funcs}
    with tempfile.TemporaryDirectory(prefix="rx_scatter.") as tmp:
        src = os.path.join(tmp, "m.json")
        with open(src, "w") as f:
            json.dump(mod, f)
        text = run([relaxc, "print", src, "--after", "legalize"])
        calls = text.count('"rt.scatter"') + text.count("rt.scatter(")
        check(calls >= len(CASES), "legalize: every function calls rt.scatter (%d calls)" % calls)
        data = {}
        for n, (form, dt, shape, ishape, axis, red, idt) in CASES.items():
            data[n] = inputs(rng, form, dt, shape, ishape, ushapes[n], axis, idt)
        outs = {}
        for target, levels in (("cpu", (0, 2)), ("opencl", (2,))):
            for opt in levels:
                rxa = os.path.join(tmp, "m.%s.O%d.rxa" % (target, opt))
                rc, _, err = run_status([relaxc, "build", src, "-o", rxa, "--opt-level", str(opt),
                                         "--target", target])
                check(rc == 0, "build %s O%d%s" % (target, opt, "" if rc == 0 else ": " + err[-800:]))
                if rc != 0:
                    continue
                for n, (form, dt, shape, ishape, axis, red, idt) in CASES.items():
                    x, i, u = data[n]
                    args = [relax_run, rxa, "--fn", n]
                    for name, a in (("x", x), ("i", i), ("u", u)):
                        p = os.path.join(tmp, "%s_%s.npy" % (n, name))
                        np.save(p, a)
                        args += ["--in", "%s=%s" % (name, p)]
                    od = os.path.join(tmp, "o_%s_%s_%d" % (n, target, opt))
                    rc, _, err = run_status(args + ["--out-dir", od])
                    if rc != 0:
                        check(False, "%s %s O%d runs: %s" % (n, target, opt, err[-600:]))
                        continue
                    got = np.load(os.path.join(od, "out0.npy"))
                    if target == "cpu":
                        want = reference(form, x, i, u, axis, red)
                        outs[n] = got
                        check(got.dtype == want.dtype and np.array_equal(got, want),
                              "%s cpu O%d: equals the serial reference" % (n, opt))
                    else:  # the loops sum the landing updates, then add x: float sums round apart
                        tol = red in ("add", "mul") and dt in ("f32", "f64")
                        same = n in outs and (np.allclose(got, outs[n], rtol=1e-5, atol=1e-6)
                                              if tol else np.array_equal(got, outs[n]))
                        check(same, "%s opencl (loops) equals cpu (rt.scatter)%s"
                              % (n, " within rtol 1e-5" if tol else ""))
        # an index out of range fails the call with the library's message
        rxa = os.path.join(tmp, "m.cpu.O2.rxa")
        x, i, u = data["el_upd_ax0"]
        bad = i.copy()
        bad[2, 1] = 6
        p = os.path.join(tmp, "bad.npy")
        np.save(p, bad)
        rc, _, err = run_status([relax_run, rxa, "--fn", "el_upd_ax0",
                                 "--in", "x=" + os.path.join(tmp, "el_upd_ax0_x.npy"),
                                 "--in", "i=" + p, "--in", "u=" + os.path.join(tmp, "el_upd_ax0_u.npy")])
        check(rc == 1 and "out of range" in err, "index 6 of 6: a clear error (%s)" % err.strip()[-200:])
    return checks.done()


if __name__ == "__main__":
    TOOLS = start(sys.argv, __doc__)
    sys.exit(2 if TOOLS is None else cases(*TOOLS))
