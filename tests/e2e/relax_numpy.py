"""relax_numpy.py — a reference interpreter of relax-json modules in NumPy (the e2e oracle).

What it is: an independent, deliberately simple implementation of the semantics in
docs/relax-json.md and docs/ops.md, used by run_e2e.py to check what `relaxc build` +
`relax-run` compute. It shares no code with the compiler; where the two could read the
docs differently the choice made here follows TVM (noted at the op).

Files, by concern (this one is the entry point and re-exports the others' public names):
  relax_numpy.py       the graph-level evaluator (Module), seeded inputs (gen_value,
                       gen_inputs) and TIR_BUDGET
  relax_numpy_core.py  errors, dtypes, value classes, the scalar-expression parser and
                       symbolic evaluation, annotation matching
  relax_numpy_ops.py   graph-level operators (OPS, OpCtx) and library functions
  relax_numpy_tir.py   loop-level functions translated to Python (TirFunc)

Graph level (kind "relax"): a tree-walking evaluator over the JSON. Values are
  numpy.ndarray (tensors, 0-d for scalars) · tuple (tuples) · Shape (a tuple subclass,
  shape values) · Prim (a scalar with a dtype) · FuncRef (a global function).
Every binding kind is handled: op calls, call_tir, call_dps_library, call (graph
functions and callable values), tuple, get_item, shape, const (module, scalar, list and
inline base64), prim, if, match_cast. Annotations are *checked* as they are met
(parameters, written binding types, match_cast, `ret`), binding symbolic variables on
their first whole-dimension occurrence like the VM's MATCH instructions do, so a wrong
oracle or a wrong module fails loudly instead of producing a plausible number.

Costs: graph ops are vectorized NumPy; loop-level code runs ~1 µs per scalar operation
(see relax_numpy_tir.py), bounded per call by TIR_BUDGET when it is set.

Usage as a library:  m = Module.load(path); outs = m.run("main", [arrays...])
returns the flattened list of outputs (tuples flattened depth-first, like relax-run).
"""

import base64
import json

import numpy as np

from relax_numpy_core import (
    ALIASES, DTYPES, FuncRef, OracleError, Prim, Shape, TooLarge, alloc_from_sinfo, dtype_name,
    eval_sym, expr_vars, flatten, is_float, is_int, lone_var, match_dims, match_params,
    match_sinfo, np_dtype, parse_expr, short_name)
from relax_numpy_ops import LIBRARIES, OPS, OpCtx
from relax_numpy_tir import TirFunc, estimate_work

__all__ = [
    "ALIASES", "DTYPES", "FuncRef", "OracleError", "Prim", "Shape", "TooLarge",
    "alloc_from_sinfo", "dtype_name", "eval_sym", "expr_vars", "flatten", "is_float", "is_int",
    "lone_var", "match_dims", "match_params", "match_sinfo", "np_dtype", "parse_expr",
    "short_name", "LIBRARIES", "OPS", "OpCtx", "TirFunc", "estimate_work", "TIR_BUDGET",
    "Frame", "Module", "gen_value", "gen_inputs", "random_array",
]

# Upper bound on the estimated stores of one call_tir (None = unlimited). The loop-level
# interpreter runs about a million stores a second.
TIR_BUDGET = None


# ---------------------------------------------------------------- graph level

def _const_from_json(c):
    """A module or inline constant {"dtype", "shape", "data": base64} as an array."""
    dt = np_dtype(c["dtype"])
    raw = base64.b64decode(c["data"], validate=True)
    shape = [int(d) for d in c["shape"]]
    n = int(np.prod(shape)) if shape else 1
    if len(raw) != n * dt.itemsize:
        raise OracleError("constant data is %d bytes, expected %d" % (len(raw), n * dt.itemsize))
    a = np.frombuffer(raw, dtype=dt.newbyteorder("<")).astype(dt).reshape(shape)
    return a.copy()


class Frame:
    """One activation of a graph function: local values and symbolic variables."""

    def __init__(self, fname, vars_=None, sym=None):
        self.fname = fname
        self.vars = dict(vars_ or {})
        self.sym = dict(sym or {})

    def child(self):
        return Frame(self.fname, self.vars, self.sym)


class Module:
    """A relax-json module ready to evaluate."""

    MAX_DEPTH = 200

    def __init__(self, doc):
        if doc.get("format") != "relax-json" or doc.get("version") != 1:
            raise OracleError("not a relax-json v1 module")
        self.doc = doc
        self.funcs = doc["functions"]
        self.consts = {k: _const_from_json(v) for k, v in (doc.get("constants") or {}).items()}
        self.tir = {}
        self.depth = 0

    @staticmethod
    def load(path):
        with open(path) as f:
            return Module(json.load(f))

    # -- entry points --

    def run(self, fname, args):
        """Calls graph function fname with a list of values; returns its flattened outputs."""
        return flatten(self.call(fname, list(args)))

    def call(self, fname, args):
        fn = self.funcs.get(fname)
        if fn is None:
            raise OracleError("no function %s" % fname)
        if fn["kind"] != "relax":
            raise OracleError("%s is a loop-level function: use call_tir" % fname)
        params = fn["params"]
        if len(args) != len(params):
            raise OracleError("%s takes %d arguments, got %d" % (fname, len(params), len(args)))
        self.depth += 1
        if self.depth > self.MAX_DEPTH:
            raise OracleError("call depth over %d" % self.MAX_DEPTH)
        try:
            fr = Frame(fname)
            match_params(args, [p.get("type") for p in params], fr.sym,
                         ["%s: %s" % (fname, p["name"]) for p in params])
            for p, a in zip(params, args):
                fr.vars[p["name"]] = a
            out = self.body(fn["body"], fr)
            if fn.get("ret") is not None:
                self._check_written(out, fn["ret"], fr, "%s: result" % fname)
            return out
        finally:
            self.depth -= 1

    def tir_func(self, name):
        if name not in self.tir:
            fn = self.funcs.get(name)
            if fn is None or fn["kind"] != "tir":
                raise OracleError("no loop-level function %s" % name)
            self.tir[name] = TirFunc(name, fn)
        return self.tir[name]

    # -- bodies and bindings --

    def body(self, b, fr):
        for blk in b.get("blocks", []):
            for bind in blk.get("bindings", []):
                self.binding(bind, fr)
        return self.expr(b["result"], fr)

    def binding(self, bind, fr):
        var = bind["var"]
        where = "%s: %s" % (fr.fname, var)
        if "match_cast" in bind:
            v = self.expr(bind["match_cast"], fr)
            match_params([v], [bind["type"]], fr.sym, where + " (match_cast)")
        else:
            v = self.expr(bind["value"], fr)
            if bind.get("type") is not None:
                self._check_written(v, bind["type"], fr, where)
        fr.vars[var] = v

    def _check_written(self, v, si, fr, where):
        """A written annotation never defines variables: check with a scratch env."""
        env = dict(fr.sym)
        match_sinfo(v, si, env, where)

    # -- expressions --

    def expr(self, e, fr):
        if isinstance(e, str):
            if e.startswith("@"):
                if e[1:] not in self.funcs:
                    raise OracleError("unknown function %s" % e)
                return FuncRef(e[1:])
            if e not in fr.vars:
                raise OracleError("%s: unknown variable %s" % (fr.fname, e))
            return fr.vars[e]
        if not isinstance(e, dict):
            raise OracleError("bad expression %r" % (e,))
        if "op" in e:
            return self.op(e, fr)
        if "call_tir" in e:
            return self.call_tir(e, fr)
        if "call_dps_library" in e:
            return self.call_lib(e, fr)
        if "call" in e:
            callee = e["call"]
            args = [self.expr(a, fr) for a in e.get("args", [])]
            if isinstance(callee, str) and not callee.startswith("@"):
                f = fr.vars.get(callee)
                if not isinstance(f, FuncRef):
                    raise OracleError("%s: %s is not a function value" % (fr.fname, callee))
                return self.call(f.name, args)
            return self.call(callee.lstrip("@"), args)
        if "tuple" in e:
            return tuple(self.expr(x, fr) for x in e["tuple"])
        if "get_item" in e:
            t = self.expr(e["get_item"], fr)
            if not isinstance(t, tuple) or isinstance(t, Shape):
                raise OracleError("%s: get_item of a non-tuple" % fr.fname)
            return t[e["index"]]
        if "shape" in e:
            return Shape(int(eval_sym(d, fr.sym)) for d in e["shape"])
        if "const" in e:
            return self.const(e, fr)
        if "prim" in e:
            p = e["prim"]
            dt = e.get("dtype")
            if isinstance(p, bool):
                return Prim(p, dt or "bool")
            if isinstance(p, (int, str)):
                v = eval_sym(p, fr.sym)
                dt = dt or "i64"
                return Prim(bool(v) if dt == "bool" else (float(v) if dt.startswith("f") else int(v)), dt)
            return Prim(float(p), dt or "f32")
        if "if" in e:
            c = self.expr(e["if"], fr)
            if isinstance(c, Prim):
                cond = bool(c.value)
            elif isinstance(c, np.ndarray) and c.size == 1:
                cond = bool(c.reshape(-1)[0])
            else:
                raise OracleError("%s: if condition is not a boolean scalar" % fr.fname)
            return self.body(e["then"] if cond else e["else"], fr.child())
        raise OracleError("%s: unknown expression %r" % (fr.fname, sorted(e)))

    def const(self, e, fr):
        c = e["const"]
        if isinstance(c, str):
            if c not in self.consts:
                raise OracleError("unknown constant %s" % c)
            return self.consts[c]
        if isinstance(c, dict):
            return _const_from_json(c)
        dt = np_dtype(e.get("dtype") or ("bool" if isinstance(c, bool) else
                                         "i64" if isinstance(c, int) else "f32"))
        return np.array(c, dtype=dt)

    def op(self, e, fr):
        name = e["op"]
        if name.startswith("relax."):
            name = name[len("relax."):]
        f = OPS.get(name)
        if f is None:
            raise OracleError("op %s has no oracle implementation" % name)
        args = [self.expr(a, fr) for a in e.get("args", [])]
        for i, a in enumerate(args):
            if isinstance(a, Prim):  # a prim value where a scalar tensor is meant
                args[i] = np.array(a.value, dtype=np_dtype(a.dtype))
        try:
            return f(OpCtx(name, e.get("attrs"), fr.sym), *args)
        except TypeError as ex:
            raise OracleError("%s: %s" % (name, ex))

    def _outputs(self, e, fr, what):
        outs = alloc_from_sinfo(e["out"], fr.sym, what)
        return outs, (list(outs) if isinstance(outs, tuple) else [outs])

    def call_tir(self, e, fr):
        f = self.tir_func(e["call_tir"].lstrip("@"))
        args = [self.expr(a, fr) for a in e.get("args", [])]
        for a in args:
            if not isinstance(a, np.ndarray):
                raise OracleError("call_tir %s: argument %r is not a tensor" % (f.name, a))
        out, outs = self._outputs(e, fr, "call_tir %s" % f.name)
        scal = [eval_sym(v, fr.sym) for v in e.get("tir_vars") or []]
        f([np.ascontiguousarray(a) for a in args] + outs, scal, budget=TIR_BUDGET)
        return out

    def call_lib(self, e, fr):
        name = e["call_dps_library"]
        lib = LIBRARIES.get(name)
        if lib is None:
            raise OracleError("library function %s is not known to the oracle" % name)
        args = [self.expr(a, fr) for a in e.get("args", [])]
        out, outs = self._outputs(e, fr, "call_dps_library %s" % name)
        res = lib(*args)
        res = list(res) if isinstance(res, tuple) else [res]
        if len(res) != len(outs):
            raise OracleError("%s: %d outputs, annotation has %d" % (name, len(res), len(outs)))
        for o, r in zip(outs, res):
            if o.shape != r.shape:
                raise OracleError("%s: output shape %s, annotation %s" % (name, r.shape, o.shape))
            o[...] = r
        return out


# ---------------------------------------------------------------- inputs

def _find_match_cast(body, var):
    """The annotation of the first match_cast of `var` in a body (for Object params)."""
    for blk in body.get("blocks", []):
        for b in blk.get("bindings", []):
            if b.get("match_cast") == var:
                return b["type"]
    return None


def gen_value(si, env, rng, what, int_range=(0, 3), body=None, name=None):
    """A random value for annotation si with symbolic variables from env (extended with
    random small values for unbound ones, recorded in env)."""
    if si is None or "object" in si:
        cast = _find_match_cast(body, name) if body is not None else None
        if cast is None:
            raise OracleError("%s: cannot generate a value for an Object" % what)
        return gen_value(cast, env, rng, what, int_range)
    if "tensor" in si:
        t = si["tensor"]
        if t.get("shape") is not None:
            shape = [_dim(d, env, what) if d is not None else 1 for d in t["shape"]]
        else:  # Tensor(ndim=k) or unknown rank: all dims 1 (broadcasts with anything)
            nd = t.get("ndim")
            nd = 2 if nd is None or nd < 0 else nd
            shape = [1] * nd
        return random_array(shape, np_dtype(t.get("dtype") or "f32"), rng, int_range)
    if "shape" in si:
        s = si["shape"]
        if s.get("values") is not None:
            return Shape(_dim(d, env, what) for d in s["values"])
        nd = s.get("ndim")
        if nd is None or nd < 0:
            raise OracleError("%s: shape of unknown ndim" % what)
        return Shape(int(x) for x in rng.integers(1, 5, size=nd))
    if "prim" in si:
        p = si["prim"]
        dt = p.get("dtype") or "i64"
        if p.get("value") is not None:
            v = _dim(p["value"], env, what)
        elif dt == "bool":
            v = bool(rng.integers(0, 2))
        elif dt.startswith("f"):
            v = float(rng.uniform(-1, 1))
        else:
            v = int(rng.integers(1, 5))
        return Prim(v, dt)
    if "tuple" in si:
        return tuple(gen_value(s, env, rng, "%s[%d]" % (what, i), int_range)
                     for i, s in enumerate(si["tuple"]))
    raise OracleError("%s: cannot generate a value for %r" % (what, si))


def _dim(d, env, what):
    if isinstance(d, int):
        return d
    e = parse_expr(d)
    if e[0] == "var" and e[1] not in env:
        raise OracleError("%s: symbolic variable %s has no value" % (what, e[1]))
    return int(eval_sym(e, env))


def random_array(shape, dt, rng, int_range=(0, 3)):
    """Seeded data: floats uniform in [-1, 1), ints in int_range (inclusive), bools fair."""
    dt = np.dtype(dt)
    if dt.kind == "f":
        return rng.uniform(-1.0, 1.0, size=shape).astype(dt)
    if dt.kind in "iu":
        return rng.integers(int_range[0], int_range[1] + 1, size=shape).astype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    raise OracleError("cannot generate dtype %s" % dt)


def gen_inputs(module, fname, env, seed=0, int_range=(0, 3), overrides=None):
    """Random arguments for graph function fname; env holds symbolic variable values.
    overrides maps a parameter name to {"low", "high"} (ints) or {"values": [...]}."""
    fn = module.funcs[fname]
    rng = np.random.default_rng(seed)
    out = []
    for p in fn["params"]:
        ov = (overrides or {}).get(p["name"], {})
        rng_p = (ov.get("low", int_range[0]), ov.get("high", int_range[1]))
        if "values" in ov:
            si = p["type"]
            out.append(np.array(ov["values"], dtype=np_dtype(si["tensor"]["dtype"])))
            continue
        out.append(gen_value(p.get("type"), env, rng, "%s: %s" % (fname, p["name"]), rng_p,
                             body=fn["body"], name=p["name"]))
    return out
