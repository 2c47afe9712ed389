#!/usr/bin/python3
"""Checks docs/relax-json.schema.json against the module corpus.

    /usr/bin/python3 tests/schema/check_schema.py [REPO_ROOT]

1. The schema itself is a valid JSON Schema (draft 2020-12 meta-schema).
2. Every tests/modules/valid/*.json validates (zero modules is a failure).
3. Embedded valid modules (the examples of docs/relax-json.md and one module that uses
   every construct) validate: they guard against a schema that is too strict.
4. Embedded invalid modules must NOT validate. Each is one mutation of the embedded
   "every construct" module, which validates, so the failure is due to the mutation.

Prints one line per case and a final line `N passed, M failed`; exits 1 on failure.
Needs Debian's python3-jsonschema (>= 4.0 for draft 2020-12).
"""
import copy
import glob
import json
import os
import sys

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError as e:  # pragma: no cover
    print(f"FAIL import jsonschema: {e} (install python3-jsonschema)")
    print("0 passed, 1 failed")
    sys.exit(1)

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCHEMA_PATH = os.path.join(ROOT, "docs", "relax-json.schema.json")
VALID_DIR = os.path.join(ROOT, "tests", "modules", "valid")

passed = 0
failed = 0


def report(ok, name, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {name}")
    else:
        failed += 1
        print(f"FAIL {name}" + (f": {detail}" if detail else ""))


def no_duplicates(pairs):
    """object_pairs_hook: duplicate keys are errors in relax-json (docs/relax-json.md)."""
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def first_error(validator, doc):
    """A one-line description of the most relevant error, or None when doc is valid."""
    err = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if err is None:
        return None
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
    msg = err.message if len(err.message) < 160 else err.message[:157] + "..."
    return f"{path or '<root>'}: {msg}"


# ------------------------------------------------------------------ embedded modules

# The two functions of docs/relax-json.md, as one module.
DOC_EXAMPLE = {
    "format": "relax-json", "version": 1,
    "attrs": {"name": "doc"},
    "functions": {
        "main": {
            "kind": "relax",
            "params": [{"name": "x", "type": {"tensor": {"shape": ["n", 4], "dtype": "f32"}}}],
            "ret": {"tensor": {"shape": ["n * 2"], "dtype": "f32"}},
            "attrs": {"upper_bounds": {"n": 4096}},
            "body": {
                "blocks": [
                    {"dataflow": True, "bindings": [
                        {"var": "lv0", "value": {"call_tir": "@exp", "args": ["x"],
                                                 "out": {"tensor": {"shape": ["n", 4], "dtype": "f32"}}}},
                        {"var": "lv1", "type": {"tensor": {"shape": ["n * 4"], "dtype": "f32"}},
                         "value": {"op": "flatten", "args": ["lv0"]}}
                    ]},
                    {"bindings": [
                        {"var": "lv2", "value": {"op": "unique", "args": ["lv1"]}},
                        {"var": "lv3", "match_cast": "lv2",
                         "type": {"tensor": {"shape": ["m"], "dtype": "f32"}}}
                    ]}
                ],
                "result": "lv3"
            }
        },
        "mm": {
            "kind": "tir",
            "params": [
                {"name": "X", "buffer": {"shape": ["n", 128], "dtype": "f32"}},
                {"name": "W", "buffer": {"shape": [128, 256], "dtype": "f32"}},
                {"name": "Y", "buffer": {"shape": ["n", 256], "dtype": "f32"}}
            ],
            "attrs": {"compute_pattern": "OutputEwiseFusible"},
            "body": [
                {"grid": ["i", "j", "k"], "extents": ["n", 256, 128], "body": [
                    {"block": "mm",
                     "init": [{"store": "Y[i, j]", "value": "0"}],
                     "body": [{"store": "Y[i, j]", "value": "Y[i, j] + X[i, k] * W[k, j]"}]}
                ]}
            ]
        }
    },
    "constants": {"w0": {"dtype": "f32", "shape": [2], "data": "AACAPwAAAEA="}}
}

T = lambda shape, dt="f32": {"tensor": {"shape": shape, "dtype": dt}}  # noqa: E731

# One module that uses every construct of the format at least once.
EVERYTHING = {
    "format": "relax-json", "version": 1,
    "attrs": {"name": "everything", "anything": {"goes": ["here", 1]}},
    "functions": {
        "main": {
            "kind": "relax",
            "params": [
                {"name": "x", "type": T(["n", 4])},
                {"name": "flag", "type": {"prim": {"dtype": "bool"}}}
            ],
            "attrs": {"upper_bounds": {"n": 1024}, "free_form": "ok"},
            "body": {
                "blocks": [
                    {"dataflow": True, "bindings": [
                        {"var": "lv0", "value": {"call_tir": "@exp", "args": ["x"], "out": T(["n", 4]),
                                                 "tir_vars": ["n", "n * 4", 2]}},
                        {"var": "lv1", "type": T(["n * 4"], "float32"),
                         "value": {"op": "flatten", "args": ["lv0"]}},
                        {"var": "lv2", "value": {"op": "relax.unique", "args": ["lv1"],
                                                 "attrs": {"sorted": True, "axis": None}}},
                        {"var": "lv4", "value": {"call_dps_library": "blas.sgemm", "args": ["x", "x"],
                                                 "out": {"tuple": [T(["n", 4]), T([4], "i64")]}}},
                        {"var": "lv6", "value": {"tuple": ["lv0", "lv1", "@sub"]}},
                        {"var": "lv7", "value": {"get_item": "lv6", "index": 0}},
                        {"var": "lv8", "value": {"shape": ["n", 4, -1, "(n + 1) // 2", "min(n, 128)"]}},
                        {"var": "lv9", "value": {"const": "w0"}},
                        {"var": "lv10", "value": {"const": 1.5, "dtype": "f32"}},
                        {"var": "lv10b", "value": {"const": True, "dtype": "bool"}},
                        {"var": "lv10c", "value": {"const": 3}},
                        {"var": "lv11", "value": {"const": {"dtype": "i32", "shape": [1], "data": "AQAAAA=="}}},
                        {"var": "lv12", "value": {"prim": "n + 1", "dtype": "i64"}},
                        {"var": "lv12b", "value": {"prim": 4}},
                        {"var": "lv14", "value": {"op": "arange", "attrs": {"end": "n", "dtype": "i64"}}},
                        {"var": "lv15", "value": {"op": "nn.softmax", "args": [{"op": "exp", "args": ["x"]}],
                                                  "attrs": {"axis": -1}}}
                    ]},
                    {"bindings": [
                        {"var": "lv3", "match_cast": "lv2", "type": T(["m"])},
                        {"var": "lv5", "value": {"call": "@sub", "args": ["lv3"]}},
                        {"var": "f0", "value": "@sub"},
                        {"var": "lv5b", "value": {"call": "f0", "args": ["lv3"]}},
                        {"var": "lv13", "value": {
                            "if": "flag",
                            "then": {"blocks": [{"bindings": [
                                {"var": "t0", "value": {"op": "add", "args": ["lv3", "lv3"]}}]}],
                                "result": "t0"},
                            "else": {"blocks": [], "result": "lv3"}}}
                    ]}
                ],
                "result": {"tuple": ["lv13", "lv5"]}
            }
        },
        "sub": {
            "kind": "relax",
            "params": [{"name": "y", "type": T(["m"])}],
            "ret": T(["m"]),
            "body": {"blocks": [], "result": "y"}
        },
        "annotations": {
            "kind": "relax",
            "params": [
                {"name": "a", "type": {"object": {}}},
                {"name": "b", "type": {"shape": {"values": ["n", 4]}}},
                {"name": "c", "type": {"shape": {"ndim": 2}}},
                {"name": "d", "type": {"shape": {}}},
                {"name": "e", "type": {"tensor": {"ndim": 2, "dtype": "bf16"}}},
                {"name": "f", "type": {"tensor": {"dtype": "uint8"}}},
                {"name": "g", "type": {"tensor": {}}},
                {"name": "h", "type": {"tuple": [T(["n"]), {"tuple": []}]}},
                {"name": "i", "type": {"callable": {"params": [T(["k"])], "ret": T(["k"])}}},
                {"name": "j", "type": {"prim": {"dtype": "i64", "value": "n + 1"}}},
                {"name": "k", "type": {"prim": {"dtype": "int64", "value": 3}}},
                {"name": "l", "type": T([])}
            ],
            "body": {"blocks": [], "result": "a"}
        },
        "exp": {
            "kind": "tir",
            "params": [
                {"name": "A", "buffer": {"shape": ["n", 4], "dtype": "f32"}},
                {"name": "B", "buffer": {"shape": ["n", 4], "dtype": "f32"}},
                {"name": "n4", "dtype": "i64"}
            ],
            "attrs": {"compute_pattern": "ElementWise"},
            "body": {"for": "i", "extent": "n", "kind": "parallel", "body":
                     {"for": "j", "min": 0, "extent": 4, "body":
                      {"block": "e", "body": {"store": "B[i, j]", "value": "exp(A[i, j])"}}}}
        },
        "stmts": {
            "kind": "tir",
            "params": [
                {"name": "X", "buffer": {"shape": ["n", 128], "dtype": "f16"}},
                {"name": "Y", "buffer": {"shape": ["n"], "dtype": "f32"}}
            ],
            "body": [
                {"alloc": "S", "shape": [128], "dtype": "f32", "scope": "shared"},
                {"alloc": "G", "shape": ["n"], "dtype": "float32"},
                {"for": "bx", "extent": "n", "thread": "blockIdx.x", "body": [
                    {"for": "tx", "min": 0, "extent": 128, "kind": "unrolled", "thread": "threadIdx.x",
                     "body": {"let": "v", "value": "f32(X[bx, tx]) * 2.0", "body": [
                         {"if": "v > 0.0", "then": {"store": "S[tx]", "value": "v"},
                          "else": [{"store": "S[tx]", "value": 0}]},
                         {"if": "tx == 0", "then": []}
                     ]}},
                    {"for": "k", "extent": 128, "kind": "vectorized", "body": [
                        {"block": "red",
                         "iters": [{"var": "vi", "kind": "spatial", "dom": "n", "bind": "bx"},
                                   {"var": "vk", "kind": "reduce", "dom": 128, "bind": "k"}],
                         "init": {"store": "Y[vi]", "value": 0.0},
                         "body": [{"store": "Y[vi]", "value": "Y[vi] + S[vk]"}]}
                    ]},
                    {"for": "s", "extent": 1, "kind": "serial", "body": []}
                ]}
            ]
        }
    },
    "constants": {
        "w0": {"dtype": "f32", "shape": [2], "data": "AACAPwAAAEA="},
        "empty": {"dtype": "int8", "shape": [0], "data": ""},
        "scalar": {"dtype": "u16", "shape": [], "data": "AQA="}
    }
}

MINIMAL = {"format": "relax-json", "version": 1, "functions": {}}

VALID_EMBEDDED = [
    ("doc example", DOC_EXAMPLE),
    ("every construct", EVERYTHING),
    ("minimal module (no attrs, no constants)", MINIMAL),
]


# ------------------------------------------------------------------ mutations

def main_fn(d):
    return d["functions"]["main"]


def binding(d, var):
    for blk in main_fn(d)["body"]["blocks"]:
        for b in blk["bindings"]:
            if b["var"] == var:
                return b
    raise KeyError(var)


def stmts_fn(d):
    return d["functions"]["stmts"]


def red_block(d):
    return stmts_fn(d)["body"][2]["body"][1]["body"][0]


def m_set(getter, key, value):
    def f(d):
        getter(d)[key] = value
    return f


def m_del(getter, key):
    def f(d):
        del getter(d)[key]
    return f


def m_call(fn):
    def f(d):
        fn(d)
    return f


ROOT_ = lambda d: d  # noqa: E731

INVALID = [
    # top level
    ("unknown top-level key", m_set(ROOT_, "fuctions", {})),
    ("wrong version (2)", m_set(ROOT_, "version", 2)),
    ("version as a string", m_set(ROOT_, "version", "1")),
    ("wrong format", m_set(ROOT_, "format", "relax")),
    ("missing format", m_del(ROOT_, "format")),
    ("missing functions", m_del(ROOT_, "functions")),
    ("functions is an array", m_set(ROOT_, "functions", [])),
    ("module attrs not an object", m_set(ROOT_, "attrs", "mlp")),
    ("function name not an identifier", m_call(lambda d: d["functions"].__setitem__("bad-name",
                                                                                 d["functions"].pop("sub")))),
    # functions
    ("unknown function kind", m_set(lambda d: d["functions"]["sub"], "kind", "python")),
    ("function without kind", m_del(lambda d: d["functions"]["sub"], "kind")),
    ("graph function with unknown key", m_set(main_fn, "returns", {"object": {}})),
    ("graph function without body", m_del(lambda d: d["functions"]["sub"], "body")),
    ("graph function without params", m_del(lambda d: d["functions"]["sub"], "params")),
    ("param without type", m_del(lambda d: main_fn(d)["params"][0], "type")),
    ("param with unknown key", m_set(lambda d: main_fn(d)["params"][0], "annot", {"object": {}})),
    ("param name not an identifier", m_set(lambda d: main_fn(d)["params"][0], "name", "1x")),
    ("upper bound zero", m_set(lambda d: main_fn(d)["attrs"]["upper_bounds"], "n", 0)),
    ("upper bound a string", m_set(lambda d: main_fn(d)["attrs"]["upper_bounds"], "n", "4096")),
    ("upper bound of a non-identifier", m_set(lambda d: main_fn(d)["attrs"]["upper_bounds"], "n+1", 8)),
    ("unknown compute_pattern", m_set(lambda d: d["functions"]["exp"]["attrs"], "compute_pattern", "Fusible")),
    # bodies, blocks, bindings
    ("body without result", m_del(lambda d: main_fn(d)["body"], "result")),
    ("body with unknown key", m_set(lambda d: main_fn(d)["body"], "results", "lv0")),
    ("block with unknown key", m_set(lambda d: main_fn(d)["body"]["blocks"][0], "dataflw", True)),
    ("dataflow not a boolean", m_set(lambda d: main_fn(d)["body"]["blocks"][0], "dataflow", "yes")),
    ("block without bindings", m_del(lambda d: main_fn(d)["body"]["blocks"][1], "bindings")),
    ("binding without var", m_del(lambda d: binding(d, "lv1"), "var")),
    ("binding without value or match_cast", m_del(lambda d: binding(d, "lv1"), "value")),
    ("binding with value and match_cast", m_set(lambda d: binding(d, "lv3"), "value", "lv2")),
    ("match_cast without type", m_del(lambda d: binding(d, "lv3"), "type")),
    ("binding with unknown key", m_set(lambda d: binding(d, "lv1"), "typ", {"object": {}})),
    ("binding var not an identifier", m_set(lambda d: binding(d, "lv1"), "var", "lv 1")),
    # expressions
    ("unknown expression kind", m_set(lambda d: binding(d, "lv1"), "value", {"opp": "flatten", "args": ["lv0"]})),
    ("expression with two kind keys", m_set(lambda d: binding(d, "lv1")["value"], "tuple", ["lv0"])),
    ("expression is a number", m_set(lambda d: binding(d, "lv1"), "value", 3)),
    ("expression is an array", m_set(lambda d: binding(d, "lv1"), "value", ["lv0"])),
    ("variable reference not a name", m_set(lambda d: binding(d, "lv1")["value"], "args", ["lv0 + 1"])),
    ("unknown op", m_set(lambda d: binding(d, "lv1")["value"], "op", "flaten")),
    ("op with wrong prefix", m_set(lambda d: binding(d, "lv1")["value"], "op", "tvm.flatten")),
    ("op with unknown key", m_call(lambda d: binding(d, "lv1")["value"].__setitem__(
        "arg", binding(d, "lv1")["value"].pop("args")))),
    ("op attrs not an object", m_set(lambda d: binding(d, "lv2")["value"], "attrs", [True])),
    ("op args not an array", m_set(lambda d: binding(d, "lv1")["value"], "args", "lv0")),
    ("call_tir to a non-global", m_set(lambda d: binding(d, "lv0")["value"], "call_tir", "exp")),
    ("call_tir without out", m_del(lambda d: binding(d, "lv0")["value"], "out")),
    ("call_tir out is not a tensor", m_set(lambda d: binding(d, "lv0")["value"], "out", {"shape": {"ndim": 1}})),
    ("call_tir with unknown key", m_set(lambda d: binding(d, "lv0")["value"], "tir_var", ["n"])),
    ("call_dps_library with tir_vars", m_set(lambda d: binding(d, "lv4")["value"], "tir_vars", ["n"])),
    ("call without args", m_del(lambda d: binding(d, "lv5")["value"], "args")),
    ("tuple not an array", m_set(lambda d: binding(d, "lv6"), "value", {"tuple": "lv0"})),
    ("get_item without index", m_del(lambda d: binding(d, "lv7")["value"], "index")),
    ("get_item negative index", m_set(lambda d: binding(d, "lv7")["value"], "index", -1)),
    ("shape value with a float dim", m_set(lambda d: binding(d, "lv8"), "value", {"shape": [2.5]})),
    ("named const with dtype", m_set(lambda d: binding(d, "lv9")["value"], "dtype", "f32")),
    ("scalar const with bad dtype", m_set(lambda d: binding(d, "lv10")["value"], "dtype", "float")),
    ("inline const without data", m_del(lambda d: binding(d, "lv11")["value"]["const"], "data")),
    ("const is null", m_set(lambda d: binding(d, "lv10"), "value", {"const": None})),
    ("prim with unknown key", m_set(lambda d: binding(d, "lv12")["value"], "value", 1)),
    ("if without else", m_del(lambda d: binding(d, "lv13")["value"], "else")),
    ("if branch is a block list", m_set(lambda d: binding(d, "lv13")["value"], "then", [])),
    # annotations
    ("bad dtype in tensor annotation", m_set(lambda d: main_fn(d)["params"][0]["type"]["tensor"], "dtype", "float")),
    ("annotation with two kinds", m_set(lambda d: main_fn(d)["params"][0]["type"], "object", {})),
    ("unknown annotation kind", m_set(lambda d: main_fn(d)["params"][0], "type", {"tensr": {"dtype": "f32"}})),
    ("empty annotation", m_set(lambda d: main_fn(d)["params"][0], "type", {})),
    ("tensor with shape and ndim", m_set(lambda d: main_fn(d)["params"][0]["type"]["tensor"], "ndim", 2)),
    ("tensor with unknown key", m_set(lambda d: main_fn(d)["params"][0]["type"]["tensor"], "dims", [1])),
    ("negative dim in annotation", m_set(lambda d: main_fn(d)["params"][0]["type"]["tensor"], "shape", [-1, 4])),
    ("float dim in annotation", m_set(lambda d: main_fn(d)["params"][0]["type"]["tensor"], "shape", [2.0 + 0.5])),
    ("symbolic dim with stray characters", m_set(lambda d: main_fn(d)["params"][0]["type"]["tensor"],
                                                 "shape", ["n; drop", 4])),
    ("empty symbolic dim", m_set(lambda d: main_fn(d)["params"][0]["type"]["tensor"], "shape", ["", 4])),
    ("object annotation with fields", m_set(lambda d: d["functions"]["annotations"]["params"][0],
                                            "type", {"object": {"x": 1}})),
    ("shape annotation with values and ndim",
     m_set(lambda d: d["functions"]["annotations"]["params"][1]["type"]["shape"], "ndim", 2)),
    ("callable without ret", m_del(lambda d: d["functions"]["annotations"]["params"][8]["type"]["callable"], "ret")),
    ("tuple annotation not an array", m_set(lambda d: d["functions"]["annotations"]["params"][7],
                                            "type", {"tuple": T([1])})),
    ("prim annotation with bad dtype", m_set(lambda d: d["functions"]["annotations"]["params"][9]["type"]["prim"],
                                             "dtype", "i128")),
    # loop level
    ("tir param with neither buffer nor dtype", m_set(lambda d: d["functions"]["exp"]["params"], 2, {"name": "n4"})),
    ("tir buffer without dtype", m_del(lambda d: d["functions"]["exp"]["params"][0]["buffer"], "dtype")),
    ("tir buffer with unknown key", m_set(lambda d: d["functions"]["exp"]["params"][0]["buffer"], "scope", "global")),
    ("tir function with ret", m_set(lambda d: d["functions"]["exp"], "ret", T([1]))),
    ("statement with unknown key", m_set(lambda d: red_block(d)["body"][0], "extra", 1)),
    ("unknown statement kind", m_set(lambda d: stmts_fn(d)["body"], 0, {"while": "1", "body": []})),
    ("statement is a string", m_set(lambda d: stmts_fn(d)["body"], 0, "Y[0] = 1")),
    ("statement with two kind keys", m_set(lambda d: stmts_fn(d)["body"][0], "store", "S[0]")),
    ("for with unknown loop kind", m_set(lambda d: stmts_fn(d)["body"][2], "kind", "gpu")),
    ("for without extent", m_del(lambda d: stmts_fn(d)["body"][2], "extent")),
    ("for with bad thread axis", m_set(lambda d: stmts_fn(d)["body"][2], "thread", "blockIdx.w")),
    ("for variable not an identifier", m_set(lambda d: stmts_fn(d)["body"][2], "for", "b x")),
    ("block iter with unknown kind", m_set(lambda d: red_block(d)["iters"][0], "kind", "spatia")),
    ("block iter without dom", m_del(lambda d: red_block(d)["iters"][1], "dom")),
    ("block without body", m_del(red_block, "body")),
    ("store without value", m_del(lambda d: red_block(d)["body"][0], "value")),
    ("store value is an object", m_set(lambda d: red_block(d)["body"][0], "value", {"op": "add"})),
    ("alloc with unknown scope", m_set(lambda d: stmts_fn(d)["body"][0], "scope", "texture")),
    ("alloc without dtype", m_del(lambda d: stmts_fn(d)["body"][0], "dtype")),
    ("alloc with bad dtype", m_set(lambda d: stmts_fn(d)["body"][0], "dtype", "f8")),
    ("if statement without then",
     m_del(lambda d: stmts_fn(d)["body"][2]["body"][0]["body"]["body"][0], "then")),
    ("let without body", m_del(lambda d: stmts_fn(d)["body"][2]["body"][0]["body"], "body")),
    # constants
    ("constant with bad dtype", m_set(lambda d: d["constants"]["w0"], "dtype", "f8")),
    ("constant data not base64", m_set(lambda d: d["constants"]["w0"], "data", "AACAPwAAAEA!")),
    ("constant data unpadded", m_set(lambda d: d["constants"]["w0"], "data", "AACAPwAAAEA")),
    ("constant without shape", m_del(lambda d: d["constants"]["w0"], "shape")),
    ("constant with symbolic shape", m_set(lambda d: d["constants"]["w0"], "shape", ["n"])),
    ("constant with unknown key", m_set(lambda d: d["constants"]["w0"], "name", "w0")),
]

# Mutations of the doc example (it has the grid statement).
INVALID_DOC = [
    ("grid without extents", m_del(lambda d: d["functions"]["mm"]["body"][0], "extents")),
    ("grid variables not an array", m_set(lambda d: d["functions"]["mm"]["body"][0], "grid", "i")),
    ("block init with unknown statement", m_set(lambda d: d["functions"]["mm"]["body"][0]["body"][0],
                                                "init", [{"stor": "Y[i, j]", "value": "0"}])),
]


def main():
    try:
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            schema = json.load(f, object_pairs_hook=no_duplicates)
    except (OSError, ValueError) as e:
        report(False, "schema: load", str(e))
        print(f"{passed} passed, {failed} failed")
        return 1

    try:
        Draft202012Validator.check_schema(schema)
        report(True, "schema: valid draft 2020-12 schema")
    except jsonschema.exceptions.SchemaError as e:
        report(False, "schema: valid draft 2020-12 schema", e.message)
        print(f"{passed} passed, {failed} failed")
        return 1
    validator = Draft202012Validator(schema)

    files = sorted(glob.glob(os.path.join(VALID_DIR, "*.json")))
    if not files:
        report(False, "corpus: tests/modules/valid has modules", f"no *.json in {VALID_DIR}")
    for path in files:
        name = "valid: " + os.path.relpath(path, ROOT)
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f, object_pairs_hook=no_duplicates)
        except (OSError, ValueError) as e:
            report(False, name, f"not loadable JSON: {e}")
            continue
        err = first_error(validator, doc)
        report(err is None, name, err or "")

    for name, doc in VALID_EMBEDDED:
        err = first_error(validator, doc)
        report(err is None, "valid (embedded): " + name, err or "")

    for base_name, base, cases in (("every construct", EVERYTHING, INVALID),
                                   ("doc example", DOC_EXAMPLE, INVALID_DOC)):
        for name, mutate in cases:
            doc = copy.deepcopy(base)
            try:
                mutate(doc)
            except (KeyError, IndexError, TypeError) as e:
                report(False, "invalid: " + name, f"mutation of '{base_name}' failed: {e!r}")
                continue
            if doc == base:
                report(False, "invalid: " + name, "mutation changed nothing")
                continue
            err = first_error(validator, doc)
            report(err is not None, "invalid: " + name + (f" (rejected at {err})" if err else ""),
                   "validated but must not")

    # Not an object at all.
    for name, doc in (("document is an array", [EVERYTHING]), ("document is a string", "relax-json")):
        err = first_error(validator, doc)
        report(err is not None, "invalid: " + name, "validated but must not" if err is None else "")

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
