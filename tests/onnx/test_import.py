#!/usr/bin/python3
"""The ONNX importer through relaxc (docs/onnx.md): cache keys, located errors, hostile
models, external data, weights as parameters.

Each check builds a small model with onnx.helper and asserts on relaxc's exit status and
messages (or on numbers against NumPy). A crash (a signal, a sanitizer report) fails.
Usage: test_import.py BIN_DIR
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BIN = sys.argv[1]
RELAXC = os.path.join(BIN, "relaxc")
RUN = os.path.join(BIN, "relax-run")
failures = 0


def check(cond, what, detail=""):
    global failures
    print("%s %s%s" % ("PASS" if cond else "FAIL", what, "" if cond else "\n  " + detail[:800]))
    failures += 0 if cond else 1


def relaxc(*args):
    return subprocess.run([RELAXC] + list(args), capture_output=True, text=True)


def small_model(opset=13, w=None, op="Relu"):
    W = numpy_helper.from_array(
        w if w is not None else (np.arange(12, dtype=np.float32).reshape(4, 3) / 10), "W")
    b = numpy_helper.from_array(np.array([1, -2, 3], dtype=np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "b"], ["a"], name="bias"),
             helper.make_node(op, ["a"], ["y"], name="act")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])], [W, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def b64(a):
    import base64
    return base64.b64encode(a.tobytes()).decode()


def hand_json():
    """The small model written by hand: other variable names, same graph."""
    W = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    b = np.array([1, -2, 3], dtype=np.float32)
    return {"format": "relax-json", "version": 1, "functions": {"main": {
        "kind": "relax",
        "params": [{"name": "inp", "type": {"tensor": {"shape": ["batch", 4], "dtype": "f32"}}}],
        "body": {"blocks": [{"dataflow": True, "bindings": [
            {"var": "t0", "value": {"op": "matmul", "args": ["inp", {"const": {
                "dtype": "f32", "shape": [4, 3], "data": b64(W)}}]}},
            {"var": "t1", "value": {"op": "add", "args": ["t0", {"const": {
                "dtype": "f32", "shape": [3], "data": b64(b)}}]}},
            {"var": "out", "value": {"op": "nn.relu", "args": ["t1"]}}]}],
            "result": "out"}}}}


def main():
    with tempfile.TemporaryDirectory(prefix="onnx-import-") as tmp:
        def save(m, name):
            p = os.path.join(tmp, name)
            onnx.save(m, p)
            return p

        # 1. the same graph as ONNX and as hand-written relax-json: one cache key
        onnx_path = save(small_model(), "small.onnx")
        js = os.path.join(tmp, "hand.json")
        with open(js, "w") as f:
            json.dump(hand_json(), f)
        ka, kb = relaxc("hash", onnx_path), relaxc("hash", js)
        check(ka.returncode == 0 and ka.stdout == kb.stdout and len(ka.stdout.strip()) == 64,
              "ONNX and hand-written relax-json share the cache key", ka.stderr + kb.stderr)
        other = save(small_model(op="Sigmoid"), "other.onnx")
        check(relaxc("hash", other).stdout != ka.stdout, "a different graph has another key")

        # 2. it runs and equals NumPy, the input bound positionally
        rxa = os.path.join(tmp, "small.rxa")
        r = relaxc("build", onnx_path, "-o", rxa)
        x = np.random.RandomState(0).randn(5, 4).astype(np.float32)
        np.save(os.path.join(tmp, "x.npy"), x)
        p = subprocess.run([RUN, rxa, "--in", os.path.join(tmp, "x.npy"), "--out-dir",
                            os.path.join(tmp, "o")], capture_output=True, text=True)
        want = np.maximum(x @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10) +
                          np.array([1, -2, 3], np.float32), 0)
        got = np.load(os.path.join(tmp, "o", "out0.npy")) if p.returncode == 0 else None
        check(r.returncode == 0 and got is not None and np.allclose(got, want, 1e-5, 1e-5),
              "small model equals NumPy", r.stderr + p.stderr)

        # 2b. relaxc build MODEL.onnx compiles the importer's module as it is, without the
        # relax-json round trip of `relaxc import` (base64 weights): the artifact carries
        # the same cache key as relaxc hash and as the imported relax-json's build, and
        # its outputs equal that build's bit for bit
        rng = np.random.RandomState(1)
        cw = numpy_helper.from_array(rng.randn(4, 2, 3, 3).astype(np.float32), "cw")
        fw = numpy_helper.from_array(rng.randn(4 * 6 * 6, 5).astype(np.float32), "fw")
        shp = numpy_helper.from_array(np.array([0, -1], np.int64), "shp")
        g = helper.make_graph(
            [helper.make_node("Conv", ["x", "cw"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "shp"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "fw"], ["l"], name="fc"),
             helper.make_node("Softmax", ["l"], ["y"], name="sm", axis=1)], "g2",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, 8, 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 5])], [cw, fw, shp])
        conv_path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "conv.onnx")
        conv_js = os.path.join(tmp, "conv.json")
        ra, rb = os.path.join(tmp, "direct.rxa"), os.path.join(tmp, "viajson.rxa")
        steps = [relaxc("build", conv_path, "-o", ra), relaxc("import", conv_path, "-o", conv_js),
                 relaxc("build", conv_js, "-o", rb), relaxc("hash", conv_path)]
        key = steps[3].stdout.strip()
        outs = []
        np.save(os.path.join(tmp, "xc.npy"), rng.randn(3, 2, 8, 8).astype(np.float32))
        for i, a in enumerate((ra, rb)):
            p = subprocess.run([RUN, a, "--in", os.path.join(tmp, "xc.npy"), "--out-dir",
                                os.path.join(tmp, "oc%d" % i)], capture_output=True, text=True)
            outs.append(np.load(os.path.join(tmp, "oc%d" % i, "out0.npy")) if p.returncode == 0 else None)
        ok = all(st.returncode == 0 for st in steps) and len(key) == 64
        keys = [ok and key.encode() in open(a, "rb").read() for a in (ra, rb)]
        check(ok and all(keys), "relaxc build MODEL.onnx: the artifact's key is relaxc hash's and "
              "the relax-json build's", "".join(st.stderr for st in steps) + str(keys))
        check(outs[0] is not None and outs[1] is not None and outs[0].tobytes() == outs[1].tobytes()
              and np.allclose(outs[0].sum(axis=1), 1, 1e-5), "relaxc build MODEL.onnx equals the "
              "relax-json build bit for bit", str(outs))

        # 3. located errors: unsupported op and attribute name the node, op_type and opset
        bad = small_model(op="Bernoulli")
        r = relaxc("build", save(bad, "bad_op.onnx"), "-o", rxa)
        check(r.returncode == 1 and "graph.node[2]: Bernoulli 'act' (opset 13): operator is not "
              "supported" in r.stderr, "unsupported op is a located error", r.stderr)
        r = relaxc("build", save(small_model(op="Det"), "bad_det.onnx"), "-o", rxa)
        check(r.returncode == 1 and "graph.node[2]: Det 'act' (opset 13): needs square matrices "
              "of a literal size" in r.stderr, "unsupported Det shape is a located error", r.stderr)
        m = small_model()
        m.graph.node[2].attribute.append(helper.make_attribute("bogus", 3))
        r = relaxc("check", save(m, "bad_attr.onnx"))
        check(r.returncode == 1 and "graph.node[2]: Relu 'act' (opset 13): attribute 'bogus' is "
              "not supported" in r.stderr, "unsupported attribute is a located error", r.stderr)
        r = relaxc("check", save(small_model(opset=19), "opset19.onnx"))
        check(r.returncode == 1 and "opset 19 is not supported" in r.stderr, "opset out of range",
              r.stderr)

        # 4. hostile models: clear errors, never a crash
        data = open(onnx_path, "rb").read()
        hostile = {"truncated": data[:len(data) // 2], "garbage": bytes(range(256)) * 4,
                   "empty": b""}
        m = small_model()
        m.graph.node[0].input[0] = "nowhere"
        hostile["dangling"] = m.SerializeToString()
        m = small_model()
        m.graph.node[0].input[0] = "y"  # consumes the last node's output: a cycle
        hostile["cycle"] = m.SerializeToString()
        m = small_model()
        m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 1 << 50
        m.graph.input[0].type.tensor_type.shape.dim[1].ClearField("dim_param")
        hostile["absurd_dim"] = m.SerializeToString()
        m = small_model()
        huge = TensorProto(name="big", data_type=TensorProto.FLOAT, dims=[1 << 22, 1 << 22])
        m.graph.node.insert(0, helper.make_node("Constant", [], ["k"], value=huge))
        hostile["huge_attr_tensor"] = m.SerializeToString()
        m = small_model()
        m.graph.initializer[0].dims[0] = 400  # payload does not match the dims
        hostile["short_payload"] = m.SerializeToString()
        def one_node(node, ins, out, opset=17, inits=(), domains=()):
            g = helper.make_graph([node], "g", ins, [out], list(inits))
            ops = [helper.make_opsetid(d, v) for d, v in domains] or [helper.make_opsetid("", opset)]
            return helper.make_model(g, opset_imports=ops).SerializeToString()
        f32 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
        hostile["dft_absurd_length"] = one_node(
            helper.make_node("DFT", ["x", "L"], ["y"], name="dft"), [f32("x", [1, 8, 1])],
            f32("y", None), inits=[numpy_helper.from_array(np.array(1 << 40, np.int64), "L")])
        mel = [numpy_helper.from_array(np.array(v, t), n) for n, v, t in
               [("nm", 8, np.int32), ("dl", 16, np.int32), ("sr", 8192, np.int32),
                ("lo", 0, np.float32), ("hi", 1e9, np.float32)]]
        hostile["mel_edges_out_of_range"] = one_node(
            helper.make_node("MelWeightMatrix", ["nm", "dl", "sr", "lo", "hi"], ["y"]), [],
            f32("y", None), inits=mel)
        hostile["training_op_bad_arity"] = one_node(
            helper.make_node("Adam", ["R", "T", "X"], ["Y"], domain="ai.onnx.preview.training"),
            [f32("R", []), helper.make_tensor_value_info("T", TensorProto.INT64, []),
             f32("X", [2])], f32("Y", [2]), domains=[("ai.onnx.preview.training", 1)])
        b1 = helper.make_tensor_value_info("b", TensorProto.BOOL, [])
        i64 = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
        body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                                  helper.make_node("Identity", ["v_in"], ["v_out"])], "body",
                                 [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                  helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                                  f32("v_in", [2])], [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), f32("v_out", [2])])
        loop = lambda m, body: helper.make_node("Loop", [m, "", "x"], ["y"], body=body, name="lp")
        hostile["loop_huge_trip_count"] = one_node(loop("M", body), [f32("x", [2])], f32("y", [2]),
                                                   inits=[i64("M", 1 << 40)])
        outer = helper.make_graph([helper.make_node("Constant", [], ["c_out"], value=numpy_helper.from_array(np.array(True))),
                                   loop("M", body)], "outer",
                                  [helper.make_tensor_value_info("j", TensorProto.INT64, []),
                                   helper.make_tensor_value_info("c2", TensorProto.BOOL, []), f32("v2", [2])],
                                  [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), f32("y", [2])])
        hostile["nested_loops_blowup"] = one_node(loop("M", outer), [f32("x", [2])], f32("y", [2]),
                                                  inits=[i64("M", 4000)])
        leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "leaf", [], [f32("y", [2])])
        g = leaf
        for _ in range(20):  # If inside If, 20 deep (the else branches are leaves)
            g = helper.make_graph([helper.make_node("If", ["k"], ["y"], then_branch=g, else_branch=leaf)],
                                  "lvl", [], [f32("y", [2])])
        hostile["deeply_nested_if"] = one_node(g.node[0], [f32("x", [2])], f32("y", [2]),
                                               inits=[numpy_helper.from_array(np.array(True), "k")])
        wide = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], axis=0)], "wide", [],
                                 [f32("y", [4])])
        hostile["if_runtime_condition_shapes_differ"] = one_node(
            helper.make_node("If", ["b"], ["y"], then_branch=leaf, else_branch=wide, name="iff"),
            [b1, f32("x", [2])], f32("y", None))
        hostile["lstm_runtime_lens_y_c"] = one_node(
            helper.make_node("LSTM", ["x", "W", "R", "", "lens"], ["y", "y_h", "y_c"], hidden_size=2,
                             name="lstm"),
            [f32("x", [3, 2, 2]), helper.make_tensor_value_info("lens", TensorProto.INT32, [2])],
            f32("y_c", None), inits=[numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "W"),
                                     numpy_helper.from_array(np.ones((1, 8, 2), np.float32), "R")])
        hostile["expand_extent_mismatch"] = one_node(
            helper.make_node("Expand", ["x", "sh"], ["y"], name="ex"), [f32("x", [2])], f32("y", None),
            inits=[numpy_helper.from_array(np.array([3], np.int64), "sh")])
        hostile["sequence_index_out_of_range"] = helper.make_model(helper.make_graph(
            [helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
             helper.make_node("SequenceAt", ["s", "p"], ["y"], name="at")], "g", [f32("x", [2])],
            [f32("y", [2])], [i64("p", 5)]), opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
        hostile["sequence_as_tensor"] = helper.make_model(helper.make_graph(
            [helper.make_node("SequenceConstruct", ["x"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"], name="r")], "g", [f32("x", [2])],
            [f32("y", [2])]), opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
        def deep_if_bytes(levels):
            """If inside If `levels` deep, written as raw protobuf (the python protobuf
            refuses such depth): each level is a header followed by its child."""
            def varint(n):
                out = bytearray()
                while True:
                    out.append((n & 0x7f) | (0x80 if n >> 7 else 0))
                    n >>= 7
                    if not n:
                        return bytes(out)
            key = lambda f, wt: varint((f << 3) | wt)
            core = key(4, 2) + varint(8) + b"Identity"
            size, heads = len(core), []
            attr = key(1, 2) + varint(11) + b"then_branch" + key(20, 0) + varint(5)
            for _ in range(levels):  # graph{node: child}, attribute{g: graph}, node{If, attr}
                g = key(1, 2) + varint(size)
                a = attr + key(6, 2) + varint(size + len(g))
                n = key(4, 2) + varint(2) + b"If" + key(5, 2) + varint(size + len(g) + len(a))
                size += len(g) + len(a) + len(n)
                heads.append(n + a + g)
            body = b"".join(reversed(heads)) + core
            graph = key(1, 2) + varint(len(body)) + body
            return (key(1, 0) + varint(8) + key(7, 2) + varint(len(graph)) + graph +
                    key(8, 2) + varint(2) + key(2, 0) + varint(13))
        hostile["protobuf_nesting_100000"] = deep_if_bytes(100000)
        expect = {"protobuf_nesting_100000": "nests subgraphs or types deeper than 100",
                  "sequence_index_out_of_range":
                  "SequenceAt 'at' (opset 17): position 5 is out of range for a sequence of 2",
                  "sequence_as_tensor": "value 's' is a sequence, used as a tensor",
                  "loop_huge_trip_count": "Loop 'lp' (opset 17): more than 4096 iterations",
                  "nested_loops_blowup": "unrolling control flow exceeds 262144 nodes",
                  "deeply_nested_if": "subgraphs are nested deeper than 16",
                  "expand_extent_mismatch": "Expand 'ex' (opset 17): cannot expand extent 2 to 3",
                  "lstm_runtime_lens_y_c": "value 'y_c' is not available: Y_c under sequence_lens",
                  "if_runtime_condition_shapes_differ":
                  "If 'iff' (opset 17): output 0: the branches differ in dtype or shape",
                  "dft_absurd_length": "dft_length 1099511627776 is out of range",
                  "mel_edges_out_of_range": "outside 0..8",
                  "training_op_bad_arity": "Adam '' (opset 0): expects R, T, then 4 groups",
                  "truncated": "does not decode", "garbage": "does not decode",
                  "empty": "no graph", "dangling": "'nowhere' is not produced",
                  "cycle": "'y' is not produced", "absurd_dim": "dim 1 is 1125899906842624",
                  "huge_attr_tensor": "more than 2^40 elements",
                  "short_payload": "payload has 48 bytes"}
        for name, blob in hostile.items():
            p = os.path.join(tmp, name + ".onnx")
            with open(p, "wb") as f:
                f.write(blob)
            r = relaxc("check", p)
            check(r.returncode == 1 and expect[name] in r.stderr, "hostile %s: clear error" % name,
                  "rc %d: %s" % (r.returncode, r.stderr))

        # 4b. sequence ops the node suite does not cover, against NumPy: SplitToSequence
        # (sizes; keepdims 0), SequenceLength, SequenceErase, ConcatFromSequence (new_axis
        # or not), and a sequence graph output returned as its tensors in place
        X = np.arange(24, dtype=np.float32).reshape(6, 4) / 7
        nodes = [helper.make_node("SplitToSequence", ["X", "sz"], ["S"], axis=0),
                 helper.make_node("SplitToSequence", ["X"], ["S2"], axis=1, keepdims=0),
                 helper.make_node("SequenceLength", ["S2"], ["L"]),
                 helper.make_node("SequenceErase", ["S2"], ["E"]),
                 helper.make_node("ConcatFromSequence", ["E"], ["C"], axis=1, new_axis=1),
                 helper.make_node("ConcatFromSequence", ["S"], ["C2"], axis=0)]
        seq_t = helper.make_tensor_sequence_value_info("S", TensorProto.FLOAT, None)
        g = helper.make_graph(nodes, "g", [f32("X", [6, 4])],
                              [helper.make_tensor_value_info("L", TensorProto.INT64, []),
                               f32("C", None), f32("C2", None), seq_t],
                              [i64("sz", [2, 4])])
        p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "seq.onnx")
        np.save(os.path.join(tmp, "X.npy"), X)
        r = relaxc("build", p, "-o", rxa)
        q = subprocess.run([RUN, rxa, "--in", os.path.join(tmp, "X.npy"), "--out-dir",
                            os.path.join(tmp, "oseq")], capture_output=True, text=True)
        outs = [np.load(os.path.join(tmp, "oseq", "out%d.npy" % i)) if q.returncode == 0 and
                os.path.exists(os.path.join(tmp, "oseq", "out%d.npy" % i)) else None for i in range(6)]
        want = [np.array(4), X[:, :3], X, X[:2], X[2:], None]
        check(r.returncode == 0 and all((w is None and o is None) or (o is not None and w is not None
              and o.shape == w.shape and np.allclose(o, w)) for o, w in zip(outs, want)),
              "sequence ops equal NumPy; a sequence output is its tensors", r.stderr + q.stderr)

        # 4b-1. If on a condition computed at run time (TorchScript's `if bool(x.sum() > 0)`):
        # both branches run and where(cond, then, else) picks; each condition against NumPy
        then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                                   [f32("t", [2, 3])])
        else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                                   [f32("e", [2, 3])])
        g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["s"], keepdims=1),  # (1, 1)
                               helper.make_node("Greater", ["s", "zero"], ["c"]),
                               helper.make_node("If", ["c"], ["y"], then_branch=then_g,
                                                else_branch=else_g)], "g",
                              [f32("x", [2, 3])], [f32("y", [2, 3])],
                              [numpy_helper.from_array(np.array(0, np.float32), "zero")])
        p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "ifrt.onnx")
        r = relaxc("build", p, "-o", rxa)
        for sign in (1, -1):
            X = (np.arange(6, dtype=np.float32).reshape(2, 3) + 1) * sign
            np.save(os.path.join(tmp, "X.npy"), X)
            od = os.path.join(tmp, "oif%d" % sign)
            q = subprocess.run([RUN, rxa, "--in", os.path.join(tmp, "X.npy"), "--out-dir", od],
                               capture_output=True, text=True)
            got = np.load(os.path.join(od, "out0.npy")) if q.returncode == 0 else None
            check(r.returncode == 0 and got is not None and
                  np.array_equal(got, X * X if sign > 0 else -X),
                  "If on a run-time condition (%s branch) equals NumPy" % ("then" if sign > 0 else "else"),
                  r.stderr + q.stderr)

        # 4b-2. Expand of a literal extent 2 to a symbolic one b (a traced batch baked into a
        # constant): the copy is 2 wide and b == 2 is asserted at run time (it read past the
        # constant's end at b = 3 before)
        g = helper.make_graph([helper.make_node("Shape", ["x"], ["sh"]),
                               helper.make_node("Expand", ["k", "sh"], ["e"]),
                               helper.make_node("Add", ["x", "e"], ["y"])], "g",
                              [f32("x", [2, "b", 3])], [f32("y", None)],
                              [numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(2, 2, 3), "k")])
        p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "expand_lit.onnx")
        r = relaxc("build", p, "-o", rxa)
        res = []
        for b in (2, 3):
            X = np.ones((2, b, 3), np.float32)
            np.save(os.path.join(tmp, "X.npy"), X)
            od = os.path.join(tmp, "oexp%d" % b)
            q = subprocess.run([RUN, rxa, "--in", os.path.join(tmp, "X.npy"), "--out-dir", od],
                               capture_output=True, text=True)
            res.append((q, np.load(os.path.join(od, "out0.npy")) if q.returncode == 0 else None))
        check(r.returncode == 0 and res[0][1] is not None and
              np.array_equal(res[0][1], 1 + np.arange(12, dtype=np.float32).reshape(2, 2, 3)) and
              res[1][0].returncode != 0 and "expected (2, b, 3), got (2, 2, 3)" in res[1][0].stderr,
              "Expand of extent 2 to a symbolic b: b = 2 runs, b = 3 is a match_cast error",
              r.stderr + res[0][0].stderr + res[1][0].stderr)

        # 4b-3. ReduceProd of a Shape (x.numel(); pack_padded_sequence's Range bound) is a
        # known size, so Range(0, numel) builds with a symbolic extent
        g = helper.make_graph([helper.make_node("Shape", ["x"], ["sh"]),
                               helper.make_node("ReduceProd", ["sh"], ["n"], keepdims=0),
                               helper.make_node("Range", ["zero", "n", "one"], ["y"])], "g",
                              [f32("x", ["a", 3])], [helper.make_tensor_value_info("y", TensorProto.INT64, None)],
                              [i64("zero", 0), i64("one", 1)])
        p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), "numel.onnx")
        r = relaxc("build", p, "-o", rxa)
        np.save(os.path.join(tmp, "X.npy"), np.zeros((5, 3), np.float32))
        q = subprocess.run([RUN, rxa, "--in", os.path.join(tmp, "X.npy"), "--out-dir", os.path.join(tmp, "onumel")],
                           capture_output=True, text=True)
        check(r.returncode == 0 and q.returncode == 0 and
              np.array_equal(np.load(os.path.join(tmp, "onumel", "out0.npy")), np.arange(15)),
              "Range(0, ReduceProd(Shape(x))) builds and equals arange(numel)", r.stderr + q.stderr)

        # 4c. Einsum: two operands whose labels fit a batched matmul import as one
        # (attention's and linear layers' equations), the rest as broadcast products; all
        # against numpy.einsum
        rs = np.random.RandomState(3)
        eqs = [("bihd,bjhd->bhij", [(2, 5, 3, 4), (2, 6, 3, 4)], True),
               ("bhij,bjhd->bihd", [(2, 3, 5, 6), (2, 6, 3, 4)], True),
               ("bsd,df->bsf", [(2, 5, 4), (4, 7)], True),
               ("ij,kj->ik", [(3, 4), (5, 4)], True),
               ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)], True),
               ("abcd,cdf->abf", [(2, 3, 4, 5), (4, 5, 6)], True),
               ("bnd,md->bnm", [(2, 3, 4), (5, 4)], True),
               ("i,i->", [(6,), (6,)], True),
               ("bi,bi->b", [(3, 6), (3, 6)], True),
               ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)], True),
               ("ij,jk->", [(3, 4), (4, 5)], False),
               ("i,j->ij", [(3,), (4,)], False),
               ("ii->i", [(4, 4)], False),
               ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 2)], False)]
        for k, (eq, shapes, mm) in enumerate(eqs):
            names = ["e%d" % i for i in range(len(shapes))]
            xs = [rs.randn(*sh).astype(np.float32) for sh in shapes]
            want = np.einsum(eq, *xs)
            g = helper.make_graph([helper.make_node("Einsum", names, ["y"], equation=eq)], "g",
                                  [f32(n, list(sh)) for n, sh in zip(names, shapes)],
                                  [f32("y", None)])
            p = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
                     "ein%d.onnx" % k)
            parsed = relaxc("print", p, "--after", "parse").stdout
            r = relaxc("build", p, "-o", rxa)
            argv = [RUN, rxa, "--out-dir", os.path.join(tmp, "oein%d" % k)]
            for n, a in zip(names, xs):
                np.save(os.path.join(tmp, n + ".npy"), a)
                argv += ["--in", "%s=%s" % (n, os.path.join(tmp, n + ".npy"))]
            q = subprocess.run(argv, capture_output=True, text=True)
            f = os.path.join(tmp, "oein%d" % k, "out0.npy")
            got = np.load(f) if q.returncode == 0 and os.path.exists(f) else None
            check(r.returncode == 0 and got is not None and got.shape == want.shape and
                  np.allclose(got, want, 1e-4, 1e-4), "einsum %s equals numpy.einsum" % eq,
                  r.stderr + q.stderr)
            check(("R.matmul(" in parsed) == mm and (mm == ("R.sum(" not in parsed) or not mm),
                  "einsum %s imports as %s" % (eq, "a matmul" if mm else "a broadcast product"),
                  parsed[-600:])

        # 5. external data next to the model is read; a path escaping the directory is not
        ext = os.path.join(tmp, "ext")
        os.makedirs(ext)
        big = np.random.RandomState(1).randn(4, 3).astype(np.float32)
        m = small_model(w=big)
        onnx.save_model(m, os.path.join(ext, "m.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="m.data", size_threshold=0)
        r = relaxc("build", os.path.join(ext, "m.onnx"), "-o", rxa)
        p = subprocess.run([RUN, rxa, "--in", os.path.join(tmp, "x.npy"), "--out-dir",
                            os.path.join(tmp, "o2")], capture_output=True, text=True)
        want = np.maximum(x @ big + np.array([1, -2, 3], np.float32), 0)
        got = np.load(os.path.join(tmp, "o2", "out0.npy")) if p.returncode == 0 else None
        check(r.returncode == 0 and got is not None and np.allclose(got, want, 1e-5, 1e-5),
              "external data is read", r.stderr + p.stderr)
        out = os.path.join(ext, "mp.json")  # weights as params: copied from m.data
        r = relaxc("import", os.path.join(ext, "m.onnx"), "-o", out, "--weights", "params")
        raw = open(os.path.join(ext, "mp.safetensors"), "rb").read() if r.returncode == 0 else b""
        ok = False
        if raw:
            n = struct.unpack("<Q", raw[:8])[0]
            hdr = json.loads(raw[8:8 + n])
            lo, hi = hdr["W"]["data_offsets"]
            ok = np.array_equal(np.frombuffer(raw[8 + n + lo:8 + n + hi], np.float32).reshape(4, 3), big)
        check(ok, "external weights stream into the safetensors file", r.stderr)
        m = onnx.load(os.path.join(ext, "m.onnx"), load_external_data=False)
        for e in m.graph.initializer[0].external_data:
            if e.key == "location":
                e.value = "../../etc/passwd"
        r = relaxc("check", save(m, "ext/escape.onnx"))
        check(r.returncode == 1 and "must be a relative path below" in r.stderr,
              "external data outside the model's directory is refused", r.stderr)

        # 6. --weights params: the initializers become parameters and a .safetensors file
        out = os.path.join(tmp, "p.json")
        r = relaxc("import", onnx_path, "-o", out, "--weights", "params")
        st = os.path.join(tmp, "p.safetensors")
        ok = r.returncode == 0 and os.path.exists(st)
        if ok:
            mod = json.load(open(out))
            names = [p["name"] for p in mod["functions"]["main"]["params"]]
            raw = open(st, "rb").read()
            n = struct.unpack("<Q", raw[:8])[0]
            hdr = json.loads(raw[8:8 + n])
            w = np.frombuffer(raw[8 + n + hdr["W"]["data_offsets"][0]:8 + n + hdr["W"]["data_offsets"][1]],
                              np.float32).reshape(hdr["W"]["shape"])
            ok = (names == ["x", "W", "b"] and hdr["W"]["dtype"] == "F32" and
                  np.array_equal(w, np.arange(12, dtype=np.float32).reshape(4, 3) / 10))
        check(ok, "--weights params writes parameters and safetensors", r.stderr)
        rxa2 = os.path.join(tmp, "p.rxa")
        r = relaxc("build", out, "-o", rxa2)
        p = subprocess.run([RUN, rxa2, "--weights", st, "--in", os.path.join(tmp, "x.npy"),
                            "--out-dir", os.path.join(tmp, "o3")], capture_output=True, text=True)
        got = np.load(os.path.join(tmp, "o3", "out0.npy")) if p.returncode == 0 else None
        want = np.maximum(x @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10) +
                          np.array([1, -2, 3], np.float32), 0)
        check(got is not None and np.allclose(got, want, 1e-5, 1e-5),
              "relax-run --weights binds parameters by name", r.stderr + p.stderr)
        with open(os.path.join(tmp, "bad.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", 38) + b'{"W": {"dtype": "F32", "shape": [4, 3]')
        p = subprocess.run([RUN, rxa2, "--weights", os.path.join(tmp, "bad.safetensors")],
                           capture_output=True, text=True)
        check(p.returncode == 1 and "bad.safetensors: header: expected" in p.stderr,
              "a truncated safetensors file is a clear error", p.stderr)
    print("%d failure(s)" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
