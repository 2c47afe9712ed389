"""gen_modules.py — writes the e2e op modules (tests/e2e/modules/e2e_*.json).

Each module is one graph function `main` exercising one group of docs/ops.md with
symbolic shapes wherever the op allows, so that one artifact is run at several sizes
(cases.json: size 1, odd sizes, and zero-size dims where the group allows them), plus
edge cases: broadcasting in both directions, negative axes, keepdims, size-1 dims.
The result is a tuple of every intermediate, so every op is compared.

The JSON is generated (not hand-written) to keep the ~90 bindings readable here; the
files are checked in, and regenerating must leave them unchanged:
    /usr/bin/python3 tests/e2e/modules/gen_modules.py
Every module must pass `relaxc check` (run_e2e.py --check-modules does it).
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def T(shape, dtype="f32"):
    return {"tensor": {"shape": shape, "dtype": dtype}}


def const(v, dtype):
    return {"const": v, "dtype": dtype}


def op(name, *args, **attrs):
    e = {"op": name, "args": list(args)}
    if attrs:
        e["attrs"] = attrs
    return e


def module(name, params, bindings, extra_funcs=None):
    """params: [(name, annotation)]; bindings: [(var, expr)]; result: all vars."""
    fn = {
        "kind": "relax",
        "params": [{"name": n, "type": t} for n, t in params],
        "body": {
            "blocks": [{"dataflow": True,
                        "bindings": [{"var": v, "value": e} for v, e in bindings]}],
            "result": {"tuple": [v for v, _ in bindings]},
        },
    }
    funcs = {"main": fn}
    funcs.update(extra_funcs or {})
    return {"format": "relax-json", "version": 1, "attrs": {"name": name}, "functions": funcs}


def unary():
    x = T(["n", "m"])
    b = [("e", op("exp", "x"))]
    for o in ["abs", "negative", "sigmoid", "tanh", "sin", "cos", "erf", "floor", "ceil",
              "round", "sign", "square", "nn.relu", "nn.gelu", "nn.gelu_tanh", "nn.silu"]:
        b.append((o.replace("nn.", "") + "0", op(o, "x")))
    for o in ["log", "sqrt", "rsqrt"]:  # on exp(x) > 0
        b.append((o + "0", op(o, "e")))
    b.append(("clip0", op("clip", "x", min=-0.5, max=0.25)))
    b.append(("lnot", op("logical_not", "c")))
    b.append(("iabs", op("abs", "i")))
    b.append(("ineg", op("negative", "i")))
    b.append(("iclip", op("clip", "i", min=-2, max=3)))
    b.append(("h0", op("exp", "h")))
    b.append(("h1", op("nn.relu", "h")))
    return module("e2e_unary", [("x", x), ("c", T(["n", "m"], "bool")), ("i", T(["n"], "i32")),
                                ("h", T(["m"], "f16"))], b)


def binary():
    b = []
    for o in ["add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "floor_divide"]:
        b.append((o + "_bc", op(o, "a", "v")))      # (n, 1, m) with (m,): both directions
    b.append(("add_rev", op("add", "v", "a")))
    b.append(("add_col", op("add", "a", "col")))   # (n, 1, m) with (k, 1)
    b.append(("mul_scalar", op("multiply", "a", const(2.5, "f32"))))
    b.append(("pow_pos", op("power", op("exp", "v"), "v")))
    for o in ["add", "subtract", "multiply", "divide", "floor_divide", "maximum", "minimum"]:
        b.append(("i_" + o, op(o, "ia", "ib")))
    for o in ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]:
        b.append((o + "0", op(o, "a", "v")))
        b.append(("i" + o, op(o, "ia", "ib")))
    b.append(("land", op("logical_and", "p", "q")))
    b.append(("lor", op("logical_or", "p", "q")))
    b.append(("where0", op("where", "p", "ia", "ib")))
    b.append(("where_bc", op("where", op("less", "a", "v"), "a", const(0.0, "f32"))))
    return module("e2e_binary", [
        ("a", T(["n", 1, "m"])), ("v", T(["m"])), ("col", T(["k", 1])),
        ("ia", T(["n", "m"], "i32")), ("ib", T(["n", "m"], "i32")),
        ("p", T(["n", "m"], "bool")), ("q", T(["m"], "bool"))], b)


def matmul():
    b = [("mm", op("matmul", "a", "b")),
         ("bmm", op("matmul", "c", "b")),             # (2, n, k) @ (k, m)
         ("bb", op("matmul", "c", "d")),              # (2, n, k) @ (2, k, m)
         ("vm", op("matmul", "v", "b")),              # (k,) @ (k, m)
         ("mv", op("matmul", "a", "v")),              # (n, k) @ (k,)
         ("i64", op("matmul", "ia", "ib")),
         ("od", op("matmul", "a", "b", out_dtype="f32"))]
    return module("e2e_matmul", [
        ("a", T(["n", "k"])), ("b", T(["k", "m"])), ("c", T([2, "n", "k"])),
        ("d", T([2, "k", "m"])), ("v", T(["k"])),
        ("ia", T(["n", 3], "i64")), ("ib", T([3, "m"], "i64"))], b)


def nn():
    b = [("sm", op("nn.softmax", "x")),
         ("sm0", op("nn.softmax", "x", axis=0)),
         ("lsm", op("nn.log_softmax", "x", axis=-2)),
         ("ln", op("nn.layer_norm", "x", "g", "bt", axes=[-1])),
         ("ln2", op("nn.layer_norm", "x", "g", "bt", axes=[1], epsilon=1e-3, center=False)),
         ("rms", op("nn.rms_norm", "x", "g")),
         ("bn", op("nn.batch_norm", "img", "gc", "bc", "mc", "vc", axis=1)),
         ("cv", op("nn.conv2d", "img", "k3", padding=[1, 1])),
         ("cv_s2", op("nn.conv2d", "img", "k3", strides=[2, 2], padding=[1, 0, 0, 1])),
         ("cv_dil", op("nn.conv2d", "img", "k3", padding=[2, 2], dilation=[2, 2])),
         ("cv_grp", op("nn.conv2d", "img", "kg", groups=2)),
         ("mp", op("nn.max_pool2d", "img", pool_size=[2, 2], strides=[2, 2])),
         ("mp_ceil", op("nn.max_pool2d", "img", pool_size=[3, 3], strides=[2, 2], ceil_mode=True)),
         ("mp_pad", op("nn.max_pool2d", "img", pool_size=[3, 3], padding=[1, 1], dilation=[1, 1])),
         ("ap", op("nn.avg_pool2d", "img", pool_size=[3, 3], padding=[1, 1])),
         ("ap_inc", op("nn.avg_pool2d", "img", pool_size=[3, 3], padding=[1, 1], count_include_pad=True)),
         ("ap_ceil", op("nn.avg_pool2d", "img", pool_size=[2, 2], strides=[2, 2], ceil_mode=True)),
         ("aap", op("nn.adaptive_avg_pool2d", "img", output_size=[1, 1])),
         ("aap3", op("nn.adaptive_avg_pool2d", "img", output_size=[3, 2])),
         ("aap_id", op("nn.adaptive_avg_pool2d", "img"))]
    return module("e2e_nn", [
        ("x", T(["n", 6])), ("g", T([6])), ("bt", T([6])),
        ("img", T([2, 4, "h", "w"])), ("gc", T([4])), ("bc", T([4])), ("mc", T([4])),
        ("vc", T([4])), ("k3", T([5, 4, 3, 3])), ("kg", T([6, 2, 1, 2]))], b)


def nn3d():
    """The 3-d window ops (nn.conv3d, nn.conv3d_transpose, nn.max_pool3d,
    nn.avg_pool3d) on a volume with symbolic H and W: strides, asymmetric padding,
    groups, dilation, output_padding, ceil_mode, count_include_pad."""
    b = [("cv_s2", op("nn.conv3d", "vol", "k3", strides=[1, 2, 2], padding=[0, 1, 0, 1, 0, 1])),
         ("cv_grp", op("nn.conv3d", "vol", "kg", groups=2, dilation=[1, 2, 1])),
         ("ct_grp", op("nn.conv3d_transpose", "vol", "ktg", groups=2, strides=[2, 1, 2],
                       padding=[0, 1, 1], output_padding=[1, 0, 0], dilation=[1, 2, 1])),
         ("mp_ceil", op("nn.max_pool3d", "vol", pool_size=[2, 3, 3], strides=[2, 2, 2], ceil_mode=True)),
         ("ap_inc", op("nn.avg_pool3d", "vol", pool_size=[3, 3, 3], padding=[1, 1, 1],
                       count_include_pad=True))]
    return module("e2e_nn3d", [
        ("vol", T([2, 4, 3, "h", "w"])), ("k3", T([5, 4, 2, 3, 3])), ("kg", T([6, 2, 1, 1, 2])),
        ("ktg", T([4, 2, 1, 2, 2]))], b)


def manip():
    b = [("rs", op("reshape", "x", {"shape": ["n * 3", 4]})),
         ("rs1", op("reshape", "x", {"shape": ["n", 2, 6]})),
         ("pd", op("permute_dims", "x")),
         ("pd1", op("permute_dims", "x", axes=[1, -1, 0])),
         ("fl", op("flatten", "x")),
         # squeeze without axis has an unknown rank over a symbolic dim (n may be 1):
         # not compilable (docs/ops.md), so the size-1 axes are named
         ("sq", op("squeeze", "o", axis=[0, 2])),
         ("sq1", op("squeeze", "o", axis=[-1])),
         ("ed", op("expand_dims", "x", axis=[0, -1])),
         ("cc", op("concat", {"tuple": ["x", "x"]}, axis=-1)),
         ("cc0", op("concat", {"tuple": ["x", "y"]}, axis=0)),
         ("sp", op("split", "x", indices_or_sections=2, axis=-1)),
         ("sp1", op("split", "x", indices_or_sections=[1, 3], axis=2)),
         ("ss", op("strided_slice", "x", axes=[2], begin=[1], end=[4])),
         ("ss1", op("strided_slice", "x", axes=[-1, 1], begin=[-1, 0], end=[-5, 3], strides=[-2, 2])),
         ("ss2", op("strided_slice", "x", axes=[0], begin=[0], end=["n - 1"])),
         ("tk", op("take", "x", "idx", axis=1)),
         ("tk1", op("take", "x", "idx")),
         ("tk2", op("take", "x", "idx", axis=-1)),
         ("bc", op("broadcast_to", "v", {"shape": ["n", 3, 4]})),
         ("rp", op("repeat", "x", repeats=2, axis=-2)),
         ("rp1", op("repeat", "x", repeats=2)),
         ("tl", op("tile", "x", repeats=[2, 1])),
         ("tl1", op("tile", "v", repeats=[2, 1, 2])),
         ("as0", op("astype", "x", dtype="f16")),
         ("as1", op("astype", "x", dtype="i32")),
         ("as2", op("astype", "idx", dtype="f32")),
         ("as3", op("astype", "x", dtype="bool")),
         ("tri", op("tril", "m")),
         ("tru", op("triu", "m", k=1)),
         ("trl", op("tril", "m", k=-1))]
    return module("e2e_manip", [
        ("x", T(["n", 3, 4])), ("y", T([2, 3, 4])), ("o", T([1, "n", 1])),
        ("idx", T(["k"], "i64")), ("v", T([4])), ("m", T(["n", 5]))], b)


def reduce_():
    b = []
    for o in ["sum", "mean", "max", "min", "prod", "variance"]:
        b.append((o + "_all", op(o, "x")))
        b.append((o + "_ax", op(o, "x", axis=[-1])))
        b.append((o + "_kd", op(o, "x", axis=[0, 2], keepdims=True)))
    b.append(("isum", op("sum", "i", axis=[1])))
    b.append(("imax", op("max", "i", axis=[0])))
    for o in ["argmax", "argmin"]:
        b.append((o + "_all", op(o, "x")))
        b.append((o + "_ax", op(o, "x", axis=1)))
        b.append((o + "_kd", op(o, "x", axis=-1, keepdims=True)))
    return module("e2e_reduce", [("x", T([2, "n", 3])), ("i", T([3, "n"], "i32"))], b)


def create():
    b = [("z", op("zeros", {"shape": ["n", 3]}, dtype="f32")),
         ("o", op("ones", {"shape": ["n"]}, dtype="i32")),
         ("f", op("full", {"shape": [2, "n"]}, const(1.5, "f32"))),
         ("f16", op("full", {"shape": ["n"]}, const(2.0, "f32"), dtype="f16")),
         ("zl", op("zeros_like", "x")),
         ("ol", op("ones_like", "x", dtype="i64")),
         ("fl", op("full_like", "x", const(-3.0, "f32"))),
         ("ar", op("arange", end="n")),
         ("ar1", op("arange", start=1, end="n + 4", step=3)),
         ("ar2", op("arange", start=2, end=20, step=3, dtype="f32")),
         ("sh", op("shape_of", "x"))]
    return module("e2e_create", [("x", T(["n", 3]))], b)


def data_dependent():
    """unique and nonzero have data-dependent result shapes (the VM's builtins)."""
    b = [("u", op("unique", "x")),
         ("u1", op("unique", "x", sorted=False)),
         ("ui", op("unique", "i")),
         ("nz", op("nonzero", "i")),
         ("nzb", op("nonzero", "c"))]
    return module("e2e_data_dependent", [("x", T(["n"])), ("i", T(["n", 3], "i32")),
                                         ("c", T([2, "n"], "bool"))], b)


def mlp_small():
    """Figure 4's graph_mlp structure (call_tir matmuls, silu, add, a library call) at
    sizes a loop-level interpreter can check: 4096 -> 64, 11008 -> 96, f32, blas.sgemm
    in place of the paper's cutlass.rms_norm."""
    def mm(k, m):
        return {"kind": "tir",
                "params": [{"name": "A", "buffer": {"shape": ["n", k], "dtype": "f32"}},
                           {"name": "B", "buffer": {"shape": [k, m], "dtype": "f32"}},
                           {"name": "out", "buffer": {"shape": ["n", m], "dtype": "f32"}},
                           {"name": "n", "dtype": "i64"}],
                "body": [{"grid": ["i", "j", "k"], "extents": ["n", m, k], "body": [
                    {"block": "matmul", "init": [{"store": "out[i, j]", "value": "0"}],
                     "body": [{"store": "out[i, j]", "value": "out[i, j] + A[i, k] * B[k, j]"}]}]}]}
    fn = {"kind": "relax",
          "params": [{"name": "x", "type": T(["n", 64])}, {"name": "w1", "type": T([64, 96])},
                     {"name": "w2", "type": T([96, 64])}, {"name": "w3", "type": T([64, 32])}],
          "ret": T(["n", 32]),
          "body": {"blocks": [{"dataflow": True, "bindings": [
              {"var": "lv0", "value": {"call_tir": "@matmul0", "args": ["x", "w1"],
                                       "out": T(["n", 96]), "tir_vars": ["n"]}},
              {"var": "lv1", "value": op("nn.silu", "lv0")},
              {"var": "lv2", "value": op("add", "lv0", "lv1")},
              {"var": "lv3", "value": {"call_tir": "@matmul1", "args": ["lv2", "w2"],
                                       "out": T(["n", 64]), "tir_vars": ["n"]}},
              {"var": "lv4", "value": {"call_dps_library": "blas.sgemm", "args": ["lv3", "w3"],
                                       "out": T(["n", 32])}}]}],
              "result": "lv4"}}
    return {"format": "relax-json", "version": 1, "attrs": {"name": "e2e_mlp_small"},
            "functions": {"main": fn, "matmul0": mm(64, 96), "matmul1": mm(96, 64)}}


MODULES = {
    "e2e_unary": unary, "e2e_binary": binary, "e2e_matmul": matmul, "e2e_nn": nn, "e2e_nn3d": nn3d,
    "e2e_manip": manip, "e2e_reduce": reduce_, "e2e_create": create,
    "e2e_data_dependent": data_dependent, "e2e_mlp_small": mlp_small,
}


def main():
    for name, f in MODULES.items():
        with open(os.path.join(HERE, name + ".json"), "w") as out:
            json.dump(f(), out, indent=1)
            out.write("\n")


if __name__ == "__main__":
    main()
