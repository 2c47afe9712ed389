"""test_concat_inplace.py — concat fields written in place by their producers (the
memory plan's Step 0, compiler/vmgen/plan.c; runtime/library_concat.c skips a field
already where it belongs), against NumPy, end to end.

    /usr/bin/python3 tests/e2e/test_concat_inplace.py BUILD_DIR

One module, each function a concat along the channels of convolutions' outputs
(blas.conv2d: library calls, so the concat is rt.concat) and of a parameter (copied),
the concat read by a 1x1 convolution:
  - "skip": y = concat(a, x, b) with a = conv1x1(x), b = conv3x3(x); a is read again
    after the concat (conv(a)), so it must stay intact inside y's storage;
  - "epi": concat(a, b) -> per-channel scale, shift and relu (rt.concat's epilogue,
    flags 7), both fields dead after it: the call rewrites them in place;
  - "epi_read": the same with a read after the concat: a stays out of y (the epilogue
    would change what the later reader sees);
  - "static": "skip" with batch 1 in the signature: the fields get constant offsets in
    the static arena;
  - "far": a skip connection s = conv(x) made long before the rest of its concat, with
    wider maps live in between (t1, t2), u = conv(t2), concat(s, u): placing s would
    hold the concat's bytes over that span and raise the peak (the plan's probe rule),
    so only u is placed.
Checked:
  - the lowered VM code (relaxc print --after lower_vm) of "skip" makes a field's tensor
    at a computed offset (a heap slot) of the storage the concat's output takes, and of
    "static" at a nonzero constant offset of the arena;
  - relax-run at batch 1 (fields in place: rt.concat copies only the parameter) and 2
    (the fields after the output in its storage, copied), threads 1 and 2, O2 and O0
    (no planning): every output within 1e-4 of a float64 NumPy reference.
Prints one line per check and `N passed, M failed`; exit 1 on a failure.
"""

import base64
import json
import os
import re
import sys
import tempfile

import numpy as np

from e2e_check import run, run_fn, run_status, start

C, H, W = 3, 20, 22
A, B = 4, 6  # channels of the two convolutions
SCALE = np.linspace(0.5, 1.5, A + B).astype(np.float32)
SHIFT = np.linspace(-0.3, 0.2, A + B).astype(np.float32)


def tensor(shape):
    return {"tensor": {"shape": shape, "dtype": "f32"}}


def const(v, shape):
    return {"dtype": "f32", "shape": shape, "data": base64.b64encode(v.tobytes()).decode()}


def fn(name, batch):
    n = batch
    params = [{"name": "x", "type": tensor([n, C, H, W])},
              {"name": "w1", "type": tensor([A, C, 1, 1])},
              {"name": "w2", "type": tensor([B, C, 3, 3])}]
    conv = lambda v, x, w, pad: {"var": v, "value": {"op": "nn.conv2d", "args": [x, w],  # noqa: E731
                                                       "attrs": {"padding": pad}}}
    binds = [conv("a", "x", "w1", [0, 0]), conv("b", "x", "w2", [1, 1])]
    if name == "far":
        params += [{"name": "v1", "type": tensor([16, A, 3, 3])},
                   {"name": "v2", "type": tensor([16, 16, 3, 3])},
                   {"name": "v3", "type": tensor([5, 16, 1, 1])},
                   {"name": "w3", "type": tensor([2, A + 5, 1, 1])}]
        binds = [conv("s", "x", "w1", [0, 0]), conv("t1", "s", "v1", [1, 1]),
                 conv("t2", "t1", "v2", [1, 1]), conv("u", "t2", "v3", [0, 0]),
                 {"var": "y", "value": {"op": "concat", "args": [{"tuple": ["s", "u"]}],
                                        "attrs": {"axis": 1}}},
                 conv("o1", "y", "w3", [0, 0])]
        return {"kind": "relax", "params": params,
                "body": {"blocks": [{"dataflow": True, "bindings": binds}], "result": "o1"}}
    if name in ("skip", "static"):
        params.append({"name": "w3", "type": tensor([2, A + C + B, 1, 1])})
        params.append({"name": "w4", "type": tensor([2, A, 1, 1])})
        binds += [{"var": "y", "value": {"op": "concat", "args": [{"tuple": ["a", "x", "b"]}],
                                         "attrs": {"axis": 1}}},
                  conv("o1", "y", "w3", [0, 0]), conv("o2", "a", "w4", [0, 0])]
        result = {"tuple": ["o1", "o2"]}
    else:
        params.append({"name": "w3", "type": tensor([2, A + B, 1, 1])})
        binds += [{"var": "y", "value": {"op": "concat", "args": [{"tuple": ["a", "b"]}],
                                         "attrs": {"axis": 1}}},
                  {"var": "s", "value": {"op": "multiply", "args": ["y", {"const": "scale"}]}},
                  {"var": "t", "value": {"op": "add", "args": ["s", {"const": "shift"}]}},
                  {"var": "r", "value": {"op": "nn.relu", "args": ["t"]}},
                  conv("o1", "r", "w3", [0, 0])]
        result = "o1"
        if name == "epi_read":
            params.append({"name": "w4", "type": tensor([2, A, 1, 1])})
            binds.append(conv("o2", "a", "w4", [0, 0]))
            result = {"tuple": ["o1", "o2"]}
    return {"kind": "relax", "params": params,
            "body": {"blocks": [{"dataflow": True, "bindings": binds}], "result": result}}


FNS = {"skip": "n", "epi": "n", "epi_read": "n", "static": 1, "far": "n"}


def conv_ref(x, w, pad):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    N, _, Hp, Wp = x.shape
    O, _, KH, KW = w.shape
    OH, OW = Hp - KH + 1, Wp - KW + 1
    y = np.zeros((N, O, OH, OW))
    for kh in range(KH):
        for kw in range(KW):
            y += np.einsum("ncij,oc->noij", x[:, :, kh:kh + OH, kw:kw + OW], w[:, :, kh, kw].astype(np.float64))
    return y


def reference(name, ins):
    if name == "far":
        s = conv_ref(ins["x"], ins["w1"], 0)
        u = conv_ref(conv_ref(conv_ref(s, ins["v1"], 1), ins["v2"], 1), ins["v3"], 0)
        return [conv_ref(np.concatenate([s, u], 1), ins["w3"], 0)]
    x, w1, w2 = ins["x"], ins["w1"], ins["w2"]
    a, b = conv_ref(x, w1, 0), conv_ref(x, w2, 1)
    if name in ("skip", "static"):
        y = np.concatenate([a, x.astype(np.float64), b], 1)
        return [conv_ref(y, ins["w3"], 0), conv_ref(a, ins["w4"], 0)]
    y = np.concatenate([a, b], 1)
    r = np.maximum(y * SCALE.reshape(1, -1, 1, 1) + SHIFT.reshape(1, -1, 1, 1), 0)
    out = [conv_ref(r, ins["w3"], 0)]
    if name == "epi_read":
        out.append(conv_ref(a, ins["w4"], 0))
    return out


def lowered(text, name):
    """The VM code of function name in a lower_vm print."""
    at = re.search(r"(?im)^function %s \(" % name, text).start()
    end = re.compile(r"(?im)^(function|kernel) ").search(text, at + 1)
    return text[at:end.start() if end else len(text)]


def main(relaxc, relax_run, checks):
    check = checks.check
    rng = np.random.default_rng(11)
    mod = {"format": "relax-json", "version": 1,
           "functions": {nm: fn(nm, b) for nm, b in FNS.items()},
           "constants": {"scale": const(SCALE, [A + B, 1, 1]), "shift": const(SHIFT, [A + B, 1, 1])}}
    with tempfile.TemporaryDirectory(prefix="rx_concat_inplace.") as tmp:
        src = os.path.join(tmp, "m.json")
        with open(src, "w") as f:
            json.dump(mod, f)
        vm = run([relaxc, "print", src, "--after", "lower_vm"])
        skip = lowered(vm, "skip")
        check(re.search(r"ALLOC_TENSOR r\d+ r\d+ h\d+ f32 \[ h\d+ #%d " % A, skip) is not None or
              re.search(r"ALLOC_TENSOR r\d+ r\d+ h\d+ f32 \[ h\d+ #%d " % B, skip) is not None,
              "skip: a convolution's output is made at a computed offset of the concat's storage")
        static = lowered(vm, "static")
        check(re.search(r"ALLOC_TENSOR r\d+ r\d+ #[1-9]\d* f32 \[ #1 #%d " % B, static) is not None,
              "static: the second convolution's output at a nonzero constant offset")
        far = lowered(vm, "far")
        check(re.search(r"ALLOC_TENSOR r\d+ r\d+ #0 f32 \[ h\d+ #%d " % A, far) is not None and
              re.search(r"ALLOC_TENSOR r\d+ r\d+ h\d+ f32 \[ h\d+ #5 ", far) is not None,
              "far: the skip connection keeps its own storage, u is placed in the concat's")
        builds = {}
        for tag, extra in (("O2", []), ("O0", ["--opt-level", "0"])):
            rxa = os.path.join(tmp, "m.%s.rxa" % tag)
            rc, _, err = run_status([relaxc, "build", src, "-o", rxa] + extra)
            check(rc == 0, "build %s%s" % (tag, "" if rc == 0 else ": " + err[-800:]))
            builds[tag] = rxa
        for name, sig in FNS.items():
            for batch in ((1, 2) if sig == "n" else (1,)):
                ins = {"x": rng.standard_normal([batch, C, H, W]).astype(np.float32),
                       "w1": rng.standard_normal([A, C, 1, 1]).astype(np.float32)}
                if name == "far":
                    for k, shp in (("v1", [16, A, 3, 3]), ("v2", [16, 16, 3, 3]), ("v3", [5, 16, 1, 1]),
                                   ("w3", [2, A + 5, 1, 1])):
                        ins[k] = (rng.standard_normal(shp) / 4).astype(np.float32)
                else:
                    ins["w2"] = rng.standard_normal([B, C, 3, 3]).astype(np.float32)
                    cin = A + C + B if name in ("skip", "static") else A + B
                    ins["w3"] = rng.standard_normal([2, cin, 1, 1]).astype(np.float32)
                if name in ("skip", "static", "epi_read"):
                    ins["w4"] = rng.standard_normal([2, A, 1, 1]).astype(np.float32)
                args = []
                for k, v in ins.items():
                    p = os.path.join(tmp, "%s_%s_%d.npy" % (name, k, batch))
                    np.save(p, v)
                    args += ["--in", "%s=%s" % (k, p)]
                want = reference(name, ins)
                for tag, rxa in builds.items():
                    for threads in (1, 2):
                        od = os.path.join(tmp, "o_%s_%s_%d_%d" % (name, tag, batch, threads))
                        what = "%s %s batch %d threads %d" % (name, tag, batch, threads)
                        if not run_fn(relax_run, rxa, name, threads, od, args, checks, what):
                            continue
                        got = [np.load(os.path.join(od, "out%d.npy" % k)) for k in range(len(want))]
                        check(all(g.shape == w.shape and np.allclose(g, w, rtol=1e-4, atol=1e-4)
                                  for g, w in zip(got, want)),
                              what + ": the float64 reference within 1e-4")
    return checks.done()


if __name__ == "__main__":
    TOOLS = start(sys.argv, __doc__)
    sys.exit(2 if TOOLS is None else main(*TOOLS))
