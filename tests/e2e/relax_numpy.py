"""relax_numpy.py — a reference interpreter of relax-json modules in NumPy (the e2e oracle).

What it is: an independent, deliberately simple implementation of the semantics in
docs/relax-json.md and docs/ops.md, used by run_e2e.py to check what `relaxc build` +
`relax-run` compute. It shares no code with the compiler; where the two could read the
docs differently the choice made here follows TVM (noted at the op).

Graph level (kind "relax"): a tree-walking evaluator over the JSON. Values are
  numpy.ndarray (tensors, 0-d for scalars) · tuple (tuples) · Shape (a tuple subclass,
  shape values) · Prim (a scalar with a dtype) · FuncRef (a global function).
Every binding kind is handled: op calls, call_tir, call_dps_library, call (graph
functions and callable values), tuple, get_item, shape, const (module, scalar, list and
inline base64), prim, if, match_cast. Annotations are *checked* as they are met
(parameters, written binding types, match_cast, `ret`), binding symbolic variables on
their first whole-dimension occurrence like the VM's MATCH instructions do, so a wrong
oracle or a wrong module fails loudly instead of producing a plausible number.

Loop level (kind "tir"): each function is translated once into Python source (loops,
blocks with `init` at the first iteration of the reduction iterators, stores, loads,
allocs, let, if, select, casts, math calls) and exec'ed. Buffers become flat Python
`array`s (f32 'f', i32 'i', ...) so a store rounds or range-checks like the C code; f16,
bf16 and bool use lists with explicit rounding. Integer `//` and `%` are floor division
and modulo, integer `/` truncates (C), float `/` is true division.

Scalar expressions (symbolic dims and TIR) share one tokenizer and precedence-climbing
parser (`parse_expr`), with C-like precedence:
  || < && < | < ^ < & < == != < < <= > >= < << >> < + - < * / // % < unary - ! ~.

Costs: graph ops are vectorized NumPy; TIR runs ~1 µs per scalar operation, fine for
the small shapes tests use (a 64³ matmul takes about a second).

Usage as a library:  m = Module.load(path); outs = m.run("main", [arrays...])
returns the flattened list of outputs (tuples flattened depth-first, like relax-run).
"""

import base64
import json
import math
import re
import struct
from array import array

import numpy as np


class OracleError(Exception):
    """An error in the module or its inputs, as the oracle sees it."""


class TooLarge(OracleError):
    """A loop-level call would exceed TIR_BUDGET scalar stores (see estimate_work)."""


# Upper bound on the estimated stores of one call_tir (None = unlimited). The loop-level
# interpreter runs about a million stores a second.
TIR_BUDGET = None


# ---------------------------------------------------------------- dtypes

DTYPES = {
    "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}
ALIASES = {
    "float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32",
    "uint64": "u64", "bfloat16": "bf16", "boolean": "bool", "uint1": "bool",
}


def dtype_name(d):
    """Canonical short dtype name ('f32') of a relax-json spelling; None stays None."""
    if d is None:
        return None
    d = ALIASES.get(d, d)
    if d == "bf16":
        raise OracleError("bf16 is not supported by the NumPy oracle")
    if d not in DTYPES:
        raise OracleError("unknown dtype %r" % d)
    return d


def np_dtype(d):
    return np.dtype(DTYPES[dtype_name(d)])


def short_name(npd):
    """Short name of a NumPy dtype."""
    npd = np.dtype(npd)
    for k, v in DTYPES.items():
        if np.dtype(v) == npd:
            return k
    raise OracleError("dtype %s has no relax name" % npd)


def is_float(d):
    return np.dtype(d).kind == "f"


def is_int(d):
    return np.dtype(d).kind in "iu"


# ---------------------------------------------------------------- values

class Shape(tuple):
    """A first-class shape value."""

    def __repr__(self):
        return "Shape(%s)" % list(self)


class Prim:
    """A scalar value with a dtype (R.prim_value)."""

    def __init__(self, value, dtype):
        self.value = value
        self.dtype = dtype

    def __repr__(self):
        return "Prim(%r, %s)" % (self.value, self.dtype)


class FuncRef:
    """A global function used as a value."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "@" + self.name


def flatten(v):
    """Flattens a result depth-first, like rx_rt_outputs."""
    if isinstance(v, tuple) and not isinstance(v, Shape):
        out = []
        for x in v:
            out.extend(flatten(x))
        return out
    return [v]


# ---------------------------------------------------------------- scalar expressions

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    | (?P<id>[A-Za-z_][A-Za-z0-9_.]*)
    | (?P<op>//|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()<>,\[\]!~&|^])
    )""", re.X)

_BINPREC = [
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
    ("<<", ">>"), ("+", "-"), ("*", "/", "//", "%"),
]
_PREC = {op: i for i, ops in enumerate(_BINPREC) for op in ops}

_expr_cache = {}


def tokenize(s):
    toks, pos = [], 0
    s = s.rstrip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if not m or m.end() == pos:
            raise OracleError("bad expression %r at %d" % (s, pos))
        pos = m.end()
        if m.group("num") is not None:
            t = m.group("num")
            toks.append(("float", float(t)) if any(c in t for c in ".eE") else ("int", int(t)))
        elif m.group("id") is not None:
            toks.append(("id", m.group("id")))
        else:
            toks.append(("op", m.group("op")))
    return toks


def parse_expr(s):
    """Parses a scalar expression string (or an int/float) into a tuple AST:
    ('int', v) ('float', v) ('bool', v) ('var', name) ('bin', op, a, b) ('un', op, a)
    ('call', name, [args]) ('load', buffer, [indices])."""
    if isinstance(s, bool):
        return ("bool", s)
    if isinstance(s, int):
        return ("int", s)
    if isinstance(s, float):
        return ("float", s)
    if not isinstance(s, str):
        raise OracleError("bad expression %r" % (s,))
    if s in _expr_cache:
        return _expr_cache[s]
    toks = tokenize(s)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else (None, None)

    def take():
        t = peek()
        pos[0] += 1
        return t

    def expect(op):
        t = take()
        if t != ("op", op):
            raise OracleError("expected %r in %r" % (op, s))

    def args_until(close):
        out = []
        if peek() == ("op", close):
            take()
            return out
        while True:
            out.append(binary(0))
            t = take()
            if t == ("op", close):
                return out
            if t != ("op", ","):
                raise OracleError("expected ',' or %r in %r" % (close, s))

    def primary():
        kind, v = take()
        if kind in ("int", "float"):
            return (kind, v)
        if kind == "id":
            if v in ("True", "true"):
                return ("bool", True)
            if v in ("False", "false"):
                return ("bool", False)
            if peek() == ("op", "("):
                take()
                return ("call", v, args_until(")"))
            if peek() == ("op", "["):
                take()
                return ("load", v, args_until("]"))
            return ("var", v)
        if (kind, v) == ("op", "("):
            e = binary(0)
            expect(")")
            return e
        if kind == "op" and v in ("-", "!", "~", "+"):
            a = unary_operand()
            if v == "+":
                return a
            if v == "-" and a[0] in ("int", "float"):
                return (a[0], -a[1])
            return ("un", v, a)
        raise OracleError("unexpected %r in %r" % (v, s))

    def unary_operand():
        return primary()

    def binary(minprec):
        lhs = primary()
        while True:
            kind, v = peek()
            if kind != "op" or v not in _PREC or _PREC[v] < minprec:
                return lhs
            take()
            rhs = binary(_PREC[v] + 1)
            lhs = ("bin", v, lhs, rhs)

    e = binary(0)
    if pos[0] != len(toks):
        raise OracleError("trailing tokens in %r" % s)
    _expr_cache[s] = e
    return e


def expr_vars(e, out=None):
    """The variable names an AST uses."""
    out = set() if out is None else out
    if e[0] == "var":
        out.add(e[1])
    elif e[0] == "bin":
        expr_vars(e[2], out)
        expr_vars(e[3], out)
    elif e[0] == "un":
        expr_vars(e[2], out)
    elif e[0] in ("call", "load"):
        for a in e[2]:
            expr_vars(a, out)
    return out


def floordiv(a, b):
    if b == 0:
        raise OracleError("division by zero in a symbolic expression")
    return a // b


_SYM_BIN = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "&&": lambda a, b: bool(a) and bool(b), "||": lambda a, b: bool(a) or bool(b),
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
}


def eval_sym(e, env):
    """Evaluates a symbolic integer expression (string, int or AST) in env."""
    if not isinstance(e, tuple):
        e = parse_expr(e)
    k = e[0]
    if k in ("int", "float", "bool"):
        return e[1]
    if k == "var":
        if e[1] not in env:
            raise OracleError("symbolic variable %s has no value" % e[1])
        return env[e[1]]
    if k == "un":
        a = eval_sym(e[2], env)
        return {"-": lambda: -a, "!": lambda: not a, "~": lambda: ~a}[e[1]]()
    if k == "bin":
        a, b, op = eval_sym(e[2], env), eval_sym(e[3], env), e[1]
        if op == "//":
            return floordiv(a, b)
        if op == "%":
            if b == 0:
                raise OracleError("modulo by zero in a symbolic expression")
            return a % b
        if op == "/":
            return a / b if isinstance(a, float) or isinstance(b, float) else int(a / b)
        return _SYM_BIN[op](a, b)
    if k == "call":
        args = [eval_sym(a, env) for a in e[2]]
        if e[1] == "min":
            return min(args)
        if e[1] == "max":
            return max(args)
        if e[1] in ("i64", "int64", "i32", "int32"):
            return int(args[0])
        raise OracleError("unknown function %s in a symbolic expression" % e[1])
    raise OracleError("a buffer load in a symbolic expression")


def lone_var(d):
    """The variable name when dim d is a lone variable, else None."""
    if isinstance(d, str):
        e = parse_expr(d)
        if e[0] == "var":
            return e[1]
    return None


# ---------------------------------------------------------------- annotations

def match_dims(actual, dims, env, what):
    """Matches actual ints against annotated dims (two passes: define, then check)."""
    if len(actual) != len(dims):
        raise OracleError("%s: expected %d dims, got %s" % (what, len(dims), tuple(actual)))
    for a, d in zip(actual, dims):
        v = lone_var(d)
        if v is not None and v not in env:
            env[v] = int(a)
    for a, d in zip(actual, dims):
        if d is None:
            continue
        e = parse_expr(d)
        if not expr_vars(e) <= set(env):
            continue  # uses a variable defined later (checked there)
        want = eval_sym(e, env)
        if int(a) != want:
            raise OracleError("%s: expected %s, got %s (dim %s = %d)" % (
                what, list(dims), tuple(int(x) for x in actual), d, want))


def match_sinfo(v, si, env, what):
    """Checks value v against annotation si, binding new symbolic variables in env."""
    if si is None or "object" in si:
        return
    if "tensor" in si:
        t = si["tensor"]
        if not isinstance(v, np.ndarray):
            raise OracleError("%s: expected a tensor, got %r" % (what, type(v).__name__))
        if t.get("dtype") is not None and np_dtype(t["dtype"]) != v.dtype:
            raise OracleError("%s: expected dtype %s, got %s" % (what, t["dtype"], v.dtype))
        if "shape" in t and t["shape"] is not None:
            match_dims(v.shape, t["shape"], env, what)
        elif t.get("ndim") is not None and t["ndim"] != -1 and v.ndim != t["ndim"]:
            raise OracleError("%s: expected ndim %d, got %d" % (what, t["ndim"], v.ndim))
        return
    if "shape" in si:
        s = si["shape"]
        if not isinstance(v, Shape):
            raise OracleError("%s: expected a shape, got %r" % (what, v))
        if s.get("values") is not None:
            match_dims(v, s["values"], env, what)
        elif s.get("ndim") is not None and s["ndim"] != -1 and len(v) != s["ndim"]:
            raise OracleError("%s: expected a shape of ndim %d, got %r" % (what, s["ndim"], v))
        return
    if "tuple" in si:
        if not isinstance(v, tuple) or isinstance(v, Shape) or len(v) != len(si["tuple"]):
            raise OracleError("%s: expected a tuple of %d, got %r" % (what, len(si["tuple"]), v))
        # define across all fields first (a later field may define a variable)
        pending = []
        for i, (x, s) in enumerate(zip(v, si["tuple"])):
            pending.append((x, s, "%s[%d]" % (what, i)))
        for x, s, w in pending:
            match_sinfo(x, s, env, w)
        return
    if "callable" in si:
        if not isinstance(v, FuncRef):
            raise OracleError("%s: expected a function, got %r" % (what, v))
        return
    if "prim" in si:
        p = si["prim"]
        if isinstance(v, np.ndarray) and v.ndim == 0:
            v = Prim(v.item(), short_name(v.dtype))
        if not isinstance(v, Prim):
            raise OracleError("%s: expected a prim value, got %r" % (what, v))
        if p.get("value") is not None:
            match_dims([v.value], [p["value"]], env, what)
        return
    raise OracleError("%s: unknown annotation %r" % (what, si))


def match_params(vals, sinfos, env, what):
    """Matches a list of values against a list of annotations (one signature)."""
    # pass 1: define lone variables anywhere in the signature
    def define(v, si):
        if si is None:
            return
        if "tensor" in si and isinstance(v, np.ndarray) and si["tensor"].get("shape") is not None:
            for a, d in zip(v.shape, si["tensor"]["shape"]):
                n = lone_var(d)
                if n is not None and n not in env:
                    env[n] = int(a)
        elif "shape" in si and isinstance(v, Shape) and si["shape"].get("values") is not None:
            for a, d in zip(v, si["shape"]["values"]):
                n = lone_var(d)
                if n is not None and n not in env:
                    env[n] = int(a)
        elif "prim" in si and isinstance(v, Prim) and si["prim"].get("value") is not None:
            n = lone_var(si["prim"]["value"])
            if n is not None and n not in env:
                env[n] = int(v.value)
        elif "tuple" in si and isinstance(v, tuple):
            for x, s in zip(v, si["tuple"]):
                define(x, s)

    for v, si in zip(vals, sinfos):
        define(v, si)
    for i, (v, si) in enumerate(zip(vals, sinfos)):
        match_sinfo(v, si, env, what[i] if isinstance(what, list) else what)


def alloc_from_sinfo(si, env, what):
    """A zero tensor (or tuple of them) for a call_tir / library output annotation."""
    if "tuple" in si:
        return tuple(alloc_from_sinfo(s, env, what) for s in si["tuple"])
    if "tensor" not in si or si["tensor"].get("shape") is None or si["tensor"].get("dtype") is None:
        raise OracleError("%s: output annotation needs a shape and a dtype" % what)
    shape = [eval_sym(d, env) for d in si["tensor"]["shape"]]
    return np.zeros(shape, dtype=np_dtype(si["tensor"]["dtype"]))


# ---------------------------------------------------------------- loop level (TIR)

_ARRAY_CODE = {"f32": "f", "f64": "d", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
               "u8": "B", "u16": "H", "u32": "I", "u64": "Q"}
_INT_BITS = {"i8": (8, True), "i16": (16, True), "i32": (32, True), "i64": (64, True),
             "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False)}
_CAST_NAMES = {**{k: k for k in DTYPES}, **{k: v for k, v in ALIASES.items() if v != "bf16"}}


def _wrap(v, bits, signed):
    v = int(v)
    m = 1 << bits
    v &= m - 1
    if signed and v >= m >> 1:
        v -= m
    return v


def _to_f16(v):
    try:
        return struct.unpack("<e", struct.pack("<e", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _to_f32(v):
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def _cast(dt, v):
    """C-like conversion of a Python scalar to dtype dt (a Python scalar again)."""
    if dt == "bool":
        return bool(v)
    if dt in _INT_BITS:
        if isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                raise OracleError("cast of %r to %s" % (v, dt))
            v = int(v)  # truncation toward zero, like C
        return _wrap(v, *_INT_BITS[dt])
    v = float(v)
    if dt == "f16":
        return _to_f16(v)
    if dt == "f32":
        return _to_f32(v)
    return v


def _ieee(f):
    def g(*a):
        try:
            return f(*a)
        except (OverflowError, ValueError, ZeroDivisionError):
            with np.errstate(all="ignore"):
                return float(_NP_EQUIV[f.__name__](*[np.float64(x) for x in a]))
    g.__name__ = f.__name__
    return g


def _exp(x): return math.exp(x)
def _log(x): return math.log(x)
def _sqrt(x): return math.sqrt(x)
def _rsqrt(x): return 1.0 / math.sqrt(x)
def _pow(x, y): return math.pow(x, y)
def _log2(x): return math.log2(x)
def _log10(x): return math.log10(x)
def _exp2(x): return math.pow(2.0, x)


_NP_EQUIV = {"_exp": np.exp, "_log": np.log, "_sqrt": np.sqrt, "_rsqrt": lambda x: 1 / np.sqrt(x),
             "_pow": np.power, "_log2": np.log2, "_log10": np.log10, "_exp2": np.exp2}


def _sigmoid(x):
    x = float(x)
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _floor(x): return float(math.floor(x)) if isinstance(x, float) and math.isfinite(x) else x
def _ceil(x): return float(math.ceil(x)) if isinstance(x, float) and math.isfinite(x) else x
def _round(x): return float(round(x)) if isinstance(x, float) and math.isfinite(x) else x


def _isint(a):
    return isinstance(a, int)


def _div(a, b):
    if _isint(a) and _isint(b):
        if b == 0:
            raise OracleError("integer division by zero in a loop-level function")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if b == 0:
        with np.errstate(all="ignore"):
            return float(np.float64(a) / np.float64(b))
    return a / b


def _fdiv(a, b):
    if _isint(a) and _isint(b):
        if b == 0:
            raise OracleError("integer division by zero in a loop-level function")
        return a // b
    return _floor(_div(float(a), float(b)))


def _fmod(a, b):
    if _isint(a) and _isint(b):
        if b == 0:
            raise OracleError("integer modulo by zero in a loop-level function")
        return a % b
    return a - _fdiv(a, b) * b


def _tmod(a, b):
    return a - _div(a, b) * b


_TIR_FUNCS = {
    "exp": "_exp", "log": "_log", "sqrt": "_sqrt", "rsqrt": "_rsqrt", "pow": "_pow",
    "power": "_pow", "log2": "_log2", "log10": "_log10", "exp2": "_exp2",
    "tanh": "math.tanh", "sin": "math.sin", "cos": "math.cos", "erf": "math.erf",
    "sigmoid": "_sigmoid", "abs": "abs", "fabs": "abs", "floor": "_floor", "ceil": "_ceil",
    "round": "_round", "nearbyint": "_round", "min": "min", "max": "max",
    "truncdiv": "_div", "truncmod": "_tmod", "floordiv": "_fdiv", "floormod": "_fmod",
}

_TIR_ENV = {
    "math": math, "_exp": _ieee(_exp), "_log": _ieee(_log), "_sqrt": _ieee(_sqrt),
    "_rsqrt": _ieee(_rsqrt), "_pow": _ieee(_pow), "_log2": _ieee(_log2), "_log10": _ieee(_log10),
    "_exp2": _ieee(_exp2), "_sigmoid": _sigmoid, "_floor": _floor, "_ceil": _ceil,
    "_round": _round, "_div": _div, "_fdiv": _fdiv, "_fmod": _fmod, "_tmod": _tmod,
    "_cast": _cast, "_wrap": _wrap, "_to_f16": _to_f16, "OracleError": OracleError,
}


def _stmts(x):
    if x is None:
        return []
    return x if isinstance(x, list) else [x]


class TirFunc:
    """One loop-level function translated to Python (see the file essay)."""

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn
        self.bufs = [p for p in fn["params"] if "buffer" in p]
        self.scalars = [p for p in fn["params"] if "buffer" not in p]
        self.buf_dtype = {p["name"]: dtype_name(p["buffer"]["dtype"]) for p in self.bufs}
        self.lines = []
        self.tmp = 0
        self._gen()

    # -- expressions --

    def _x(self, e):
        k = e[0]
        if k == "int":
            return repr(e[1])
        if k == "float":
            return repr(e[1])
        if k == "bool":
            return repr(e[1])
        if k == "var":
            if e[1] in self.buf_dtype:
                raise OracleError("%s: buffer %s used as a scalar" % (self.name, e[1]))
            return "v_" + e[1]
        if k == "un":
            a = self._x(e[2])
            return {"-": "(-%s)", "!": "(not %s)", "~": "(~%s)"}[e[1]] % a
        if k == "bin":
            a, b, op = self._x(e[2]), self._x(e[3]), e[1]
            if op == "/":
                return "_div(%s, %s)" % (a, b)
            if op == "//":
                return "_fdiv(%s, %s)" % (a, b)
            if op == "%":
                return "_fmod(%s, %s)" % (a, b)
            if op == "&&":
                return "(bool(%s) and bool(%s))" % (a, b)
            if op == "||":
                return "(bool(%s) or bool(%s))" % (a, b)
            return "(%s %s %s)" % (a, op, b)
        if k == "call":
            f, args = e[1], [self._x(a) for a in e[2]]
            if f == "select":
                if len(args) != 3:
                    raise OracleError("%s: select takes 3 arguments" % self.name)
                return "(%s if %s else %s)" % (args[1], args[0], args[2])
            if f in _CAST_NAMES:
                return "_cast(%r, %s)" % (_CAST_NAMES[f], args[0])
            if f in ("bf16", "bfloat16"):
                raise OracleError("bf16 is not supported by the NumPy oracle")
            if f not in _TIR_FUNCS:
                raise OracleError("%s: unknown function %s" % (self.name, f))
            return "%s(%s)" % (_TIR_FUNCS[f], ", ".join(args))
        if k == "load":
            return "b_%s[%s]" % (e[1], self._index(e[1], e[2]))
        raise OracleError("bad expression node %r" % (e,))

    def _index(self, buf, idx):
        if buf not in self.buf_dtype:
            raise OracleError("%s: unknown buffer %s" % (self.name, buf))
        parts = []
        for i, ix in enumerate(idx):
            parts.append("(%s) * st_%s[%d]" % (self._x(ix), buf, i))
        return "_ck_%s(%s)" % (buf, " + ".join(parts) if parts else "0")

    def _e(self, s):
        return self._x(parse_expr(s))

    # -- statements --

    def emit(self, depth, line):
        self.lines.append("    " * depth + line)

    def _store_conv(self, buf, val):
        dt = self.buf_dtype[buf]
        if dt in _INT_BITS:
            return "_cast(%r, %s)" % (dt, val)
        if dt == "bool":
            return "bool(%s)" % val
        if dt == "f16":
            return "_to_f16(float(%s))" % val
        return val

    def _written(self, stmts, allocs, out):
        """Indices (ASTs) of stores in stmts to buffers not allocated inside."""
        for s in _stmts(stmts):
            if "store" in s:
                t = parse_expr(s["store"])
                if t[1] not in allocs:
                    out.extend(t[2])
            elif "alloc" in s:
                allocs = allocs | {s["alloc"]}
            for key in ("body", "then", "else", "init"):
                if key in s and isinstance(s[key], (list, dict)):
                    self._written(s[key], allocs, out)

    def _stmt(self, s, depth, loops):
        if not isinstance(s, dict):
            raise OracleError("%s: bad statement %r" % (self.name, s))
        if "for" in s:
            v = s["for"]
            lo = self._e(s.get("min", 0))
            ext = self._e(s["extent"])
            self.emit(depth, "for v_%s in range(%s, (%s) + (%s)):" % (v, lo, lo, ext))
            self._block(s.get("body"), depth + 1, loops + [(v, lo)])
        elif "grid" in s:
            names, exts = s["grid"], s["extents"]
            if len(names) != len(exts):
                raise OracleError("%s: grid and extents differ in length" % self.name)
            d = depth
            for v, ext in zip(names, exts):
                self.emit(d, "for v_%s in range(%s):" % (v, self._e(ext)))
                d += 1
            self._block(s.get("body"), d, loops + [(v, "0") for v in names])
        elif "block" in s:
            reduce_conds = []
            if s.get("iters") is not None:
                for it in s["iters"]:
                    self.emit(depth, "v_%s = %s" % (it["var"], self._e(it["bind"])))
                    if it.get("kind", "spatial") == "reduce":
                        reduce_conds.append("v_%s == 0" % it["var"])
            else:
                written = []
                self._written(s.get("body"), frozenset(), written)
                used = set()
                for ix in written:
                    expr_vars(ix, used)
                for v, lo in loops:
                    if v not in used:
                        reduce_conds.append("v_%s == %s" % (v, lo))
            if s.get("init"):
                if reduce_conds:
                    self.emit(depth, "if %s:" % " and ".join(reduce_conds))
                    self._block(s["init"], depth + 1, loops)
                else:
                    self._block(s["init"], depth, loops)
            self._block(s.get("body"), depth, loops)
        elif "store" in s:
            t = parse_expr(s["store"])
            if t[0] != "load":
                raise OracleError("%s: bad store target %r" % (self.name, s["store"]))
            val = self._store_conv(t[1], self._e(s["value"]))
            self.emit(depth, "b_%s[%s] = %s" % (t[1], self._index(t[1], t[2]), val))
        elif "alloc" in s:
            name, dt = s["alloc"], dtype_name(s["dtype"])
            self.buf_dtype[name] = dt
            dims = [self._e(d) for d in s["shape"]]
            self.emit(depth, "st_%s = _strides([%s])" % (name, ", ".join(dims)))
            self.emit(depth, "_n_%s = _prod([%s])" % (name, ", ".join(dims)))
            self.emit(depth, "b_%s = _new_buf(%r, _n_%s)" % (name, dt, name))
            self.emit(depth, "_ck_%s = _checker(%r, _n_%s)" % (name, name, name))
        elif "if" in s:
            self.emit(depth, "if %s:" % self._e(s["if"]))
            self._block(s.get("then"), depth + 1, loops)
            if s.get("else"):
                self.emit(depth, "else:")
                self._block(s["else"], depth + 1, loops)
        elif "let" in s:
            self.emit(depth, "v_%s = %s" % (s["let"], self._e(s["value"])))
            self._block(s.get("body"), depth, loops)
        else:
            raise OracleError("%s: unknown statement %r" % (self.name, sorted(s)))

    def _block(self, stmts, depth, loops):
        stmts = _stmts(stmts)
        if not stmts:
            self.emit(depth, "pass")
        for s in stmts:
            self._stmt(s, depth, loops)

    def _gen(self):
        self.emit(0, "def _tir(_bufs, _env, _shapes):")
        names = set()
        for p in self.bufs:
            for d in p["buffer"]["shape"]:
                names |= expr_vars(parse_expr(d))
        names |= {p["name"] for p in self.scalars}
        for n in sorted(names):
            self.emit(1, "v_%s = _env[%r]" % (n, n))
        for p in self.bufs:
            n = p["name"]
            self.emit(1, "b_%s = _bufs[%r]" % (n, n))
            self.emit(1, "st_%s = _strides(_shapes[%r])" % (n, n))
            self.emit(1, "_ck_%s = _checker(%r, len(b_%s))" % (n, n, n))
        self._block(self.fn.get("body"), 1, [])
        self.src = "\n".join(self.lines) + "\n"
        env = dict(_TIR_ENV)
        env.update(_strides=_strides, _prod=_prod, _new_buf=_new_buf, _checker=_checker)
        try:
            exec(compile(self.src, "<tir %s>" % self.name, "exec"), env)
        except SyntaxError as e:
            raise OracleError("%s: internal translation error: %s\n%s" % (self.name, e, self.src))
        self.pyfn = env["_tir"]

    def __call__(self, arrays, scalars):
        """Runs on numpy arrays (inputs then outputs, in buffer order; outputs are
        written in place) with scalar parameter values; returns nothing."""
        if len(arrays) != len(self.bufs):
            raise OracleError("%s takes %d buffers, got %d" % (self.name, len(self.bufs), len(arrays)))
        if len(scalars) != len(self.scalars):
            raise OracleError("%s takes %d scalar parameters (tir_vars), got %d" % (
                self.name, len(self.scalars), len(scalars)))
        env = {}
        for p, a in zip(self.bufs, arrays):
            if a.dtype != np_dtype(p["buffer"]["dtype"]):
                raise OracleError("%s: buffer %s: expected %s, got %s" % (
                    self.name, p["name"], p["buffer"]["dtype"], a.dtype))
        match_params(arrays, [{"tensor": {"shape": p["buffer"]["shape"]}} for p in self.bufs], env,
                     ["%s: buffer %s" % (self.name, p["name"]) for p in self.bufs])
        for p, v in zip(self.scalars, scalars):
            env[p["name"]] = int(v)
        if TIR_BUDGET is not None:
            work = estimate_work(self.fn.get("body"), env)
            if work > TIR_BUDGET:
                raise TooLarge("%s: about %.3g scalar stores, over the budget of %.3g" % (
                    self.name, work, TIR_BUDGET))
        flat = {p["name"]: _to_flat(a) for p, a in zip(self.bufs, arrays)}
        shapes = {p["name"]: list(a.shape) for p, a in zip(self.bufs, arrays)}
        self.pyfn(flat, env, shapes)
        for p, a in zip(self.bufs, arrays):
            a[...] = _from_flat(flat[p["name"]], a.dtype, a.shape)


def estimate_work(stmts, env):
    """Stores a statement list executes, with loop extents evaluated in env (an extent
    that needs a loop or let variable counts as 1)."""
    def ext(e):
        try:
            return max(int(eval_sym(e, env)), 0)
        except (OracleError, TypeError):
            return 1

    total = 0
    for s in _stmts(stmts):
        if not isinstance(s, dict):
            continue
        if "for" in s:
            total += ext(s["extent"]) * estimate_work(s.get("body"), env)
        elif "grid" in s:
            n = 1
            for e in s["extents"]:
                n *= ext(e)
            total += n * estimate_work(s.get("body"), env)
        elif "store" in s:
            total += 1
        else:
            for key in ("body", "then", "else", "init"):
                if key in s and isinstance(s[key], (list, dict)):
                    total += estimate_work(s[key], env)
    return total


def _strides(shape):
    st, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        st[i] = acc
        acc *= int(shape[i])
    return st


def _prod(xs):
    p = 1
    for x in xs:
        p *= int(x)
    return p


def _new_buf(dt, n):
    if dt in _ARRAY_CODE:
        return array(_ARRAY_CODE[dt], bytes(np.dtype(DTYPES[dt]).itemsize * n))
    return [False if dt == "bool" else 0.0] * n


def _checker(name, n):
    def ck(i):
        if not 0 <= i < n:
            raise OracleError("buffer %s: index %d out of bounds (%d elements)" % (name, i, n))
        return i
    return ck


def _to_flat(a):
    dt = short_name(a.dtype)
    if dt in _ARRAY_CODE:
        out = array(_ARRAY_CODE[dt])
        out.frombytes(np.ascontiguousarray(a).tobytes())
        return out
    if dt == "bool":
        return [bool(x) for x in a.ravel().tolist()]
    return [float(x) for x in a.astype(np.float64).ravel().tolist()]


def _from_flat(flat, dtype, shape):
    if isinstance(flat, array):
        return np.frombuffer(flat.tobytes(), dtype=dtype).reshape(shape)
    return np.array(flat, dtype=np.float64 if dtype != np.bool_ else np.bool_).astype(dtype).reshape(shape)


# ---------------------------------------------------------------- graph-level operators

class OpCtx:
    """What an operator implementation sees: its attributes and the symbolic env."""

    def __init__(self, name, attrs, env):
        self.name = name
        self.attrs = attrs or {}
        self.env = env

    def raw(self, key, default=None):
        v = self.attrs.get(key, default)
        return default if v is None else v

    def int(self, key, default=None):
        v = self.raw(key, default)
        if v is None:
            return None
        return int(eval_sym(v, self.env)) if isinstance(v, str) else int(v)

    def ints(self, key, default=None):
        """A list of (possibly symbolic) ints; a lone int becomes a one-element list."""
        v = self.raw(key, default)
        if v is None:
            return None
        if not isinstance(v, list):
            v = [v]
        return [int(eval_sym(x, self.env)) if isinstance(x, str) else int(x) for x in v]

    def bool(self, key, default):
        return bool(self.raw(key, default))

    def float(self, key, default):
        return float(self.raw(key, default))

    def dtype(self, key, default=None):
        v = self.raw(key, default)
        return None if v is None else np_dtype(v)


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def _unary_float(f):
    """Computes in float64 and rounds to x's dtype (the correctly rounded reference)."""
    def op(c, x):
        with np.errstate(all="ignore"):
            return np.asarray(f(_f64(x))).astype(x.dtype)
    return op


_erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x):
    return _erf_vec(x) if x.size else np.zeros(x.shape)


def _sigmoid_np(x):
    return np.where(x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x))))


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _keep_int(f):
    """Integer inputs stay exact: the op applies to the ints directly."""
    def op(c, x):
        if is_int(x.dtype) or x.dtype == np.bool_:
            return np.asarray(f(x)).astype(x.dtype)
        return _unary_float(f)(c, x)
    return op


def _round_np(x):
    return np.round(x)  # half to even, like TVM's nearbyint lowering


UNARY = {
    "abs": _keep_int(np.abs), "negative": _keep_int(np.negative), "exp": _unary_float(np.exp),
    "log": _unary_float(np.log), "sqrt": _unary_float(np.sqrt),
    "rsqrt": _unary_float(lambda x: 1.0 / np.sqrt(x)), "sigmoid": _unary_float(_sigmoid_np),
    "tanh": _unary_float(np.tanh), "sin": _unary_float(np.sin), "cos": _unary_float(np.cos),
    "erf": _unary_float(_erf), "floor": _keep_int(np.floor), "ceil": _keep_int(np.ceil),
    "round": _keep_int(_round_np), "sign": _keep_int(np.sign), "square": _keep_int(np.square),
    "nn.relu": _keep_int(lambda x: np.maximum(x, 0)), "nn.gelu": _unary_float(_gelu),
    "nn.gelu_tanh": _unary_float(_gelu_tanh), "nn.silu": _unary_float(lambda x: x * _sigmoid_np(x)),
}


def op_logical_not(c, x):
    return np.logical_not(x)


def _same_dtype(c, a, b):
    if a.dtype != b.dtype:
        raise OracleError("%s: dtypes differ (%s, %s)" % (c.name, a.dtype, b.dtype))
    return a.dtype


def _binary(f, int_f=None):
    def op(c, a, b):
        dt = _same_dtype(c, a, b)
        with np.errstate(all="ignore"):
            if (is_int(dt) or dt == np.bool_) and int_f is not None:
                return np.asarray(int_f(a, b)).astype(dt)
            return np.asarray(f(a, b)).astype(dt)
    return op


def _int_trunc_div(a, b):
    if np.any(b == 0):
        raise OracleError("integer division by zero")
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    q = np.abs(a64) // np.abs(b64)
    return np.where((a64 >= 0) == (b64 >= 0), q, -q)


def _int_floor_div(a, b):
    if np.any(b == 0):
        raise OracleError("integer division by zero")
    return np.floor_divide(a, b)


def _float_power(a, b):
    return np.power(_f64(a), _f64(b))


BINARY = {
    "add": _binary(np.add), "subtract": _binary(np.subtract), "multiply": _binary(np.multiply),
    "divide": _binary(np.divide, _int_trunc_div),
    "floor_divide": _binary(lambda a, b: np.floor(np.divide(a, b)), _int_floor_div),
    "power": _binary(_float_power, lambda a, b: np.power(a.astype(np.int64), b.astype(np.int64))),
    "maximum": _binary(np.maximum), "minimum": _binary(np.minimum),
}
COMPARE = {
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or,
}


def op_clip(c, x):
    lo, hi = c.raw("min"), c.raw("max")
    return np.clip(x, lo, hi).astype(x.dtype)


def op_where(c, cond, a, b):
    dt = _same_dtype(c, a, b)
    return np.where(cond.astype(bool), a, b).astype(dt)


def op_matmul(c, a, b):
    out = c.dtype("out_dtype") or a.dtype
    if is_float(a.dtype) or is_float(b.dtype):
        r = np.matmul(_f64(a), _f64(b))
    else:
        r = np.matmul(a.astype(np.int64), b.astype(np.int64))
    return np.asarray(r).astype(out)


def _axis(ax, ndim, c):
    if not -ndim <= ax < max(ndim, 1):
        raise OracleError("%s: axis %d out of range for ndim %d" % (c.name, ax, ndim))
    return ax % ndim if ndim else 0


def op_softmax(c, x):
    ax = c.int("axis", -1)
    z = _f64(x)
    z = z - np.max(z, axis=ax, keepdims=True)
    e = np.exp(z)
    return (e / np.sum(e, axis=ax, keepdims=True)).astype(x.dtype)


def op_log_softmax(c, x):
    ax = c.int("axis", -1)
    z = _f64(x)
    z = z - np.max(z, axis=ax, keepdims=True)
    return (z - np.log(np.sum(np.exp(z), axis=ax, keepdims=True))).astype(x.dtype)


def _norm_axes(c, key, ndim, default=None):
    axes = c.ints(key, default)
    return sorted(_axis(a, ndim, c) for a in axes)


def _param_shape(x, axes):
    return [x.shape[i] if i in axes else 1 for i in range(x.ndim)]


def op_layer_norm(c, x, gamma, beta):
    axes = _norm_axes(c, "axes", x.ndim)
    eps = c.float("epsilon", 1e-5)
    z = _f64(x)
    with np.errstate(all="ignore"):
        mean = z.mean(axis=tuple(axes), keepdims=True)
        var = ((z - mean) ** 2).mean(axis=tuple(axes), keepdims=True)
        y = (z - mean) / np.sqrt(var + eps)
    ps = _param_shape(x, axes)
    if c.bool("scale", True):
        y = y * _f64(gamma).reshape(ps)
    if c.bool("center", True):
        y = y + _f64(beta).reshape(ps)
    return y.astype(x.dtype)


def op_rms_norm(c, x, weight):
    axes = _norm_axes(c, "axes", x.ndim, -1)
    eps = c.float("epsilon", 1e-5)
    z = _f64(x)
    ms = (z * z).mean(axis=tuple(axes), keepdims=True)
    return (z / np.sqrt(ms + eps) * _f64(weight).reshape(_param_shape(x, axes))).astype(x.dtype)


def op_batch_norm(c, x, gamma, beta, mean, var):
    ax = _axis(c.int("axis", 1), x.ndim, c)
    eps = c.float("epsilon", 1e-5)
    ps = _param_shape(x, [ax])
    with np.errstate(all="ignore"):
        y = (_f64(x) - _f64(mean).reshape(ps)) / np.sqrt(_f64(var).reshape(ps) + eps)
    if c.bool("scale", True):
        y = y * _f64(gamma).reshape(ps)
    if c.bool("center", True):
        y = y + _f64(beta).reshape(ps)
    return (y.astype(x.dtype), mean, var)


def _pads(c, key, default):
    p = c.ints(key, default)
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return [p[0], p[1], p[0], p[1]]  # (top, left, bottom, right)
    if len(p) == 4:
        return p
    raise OracleError("%s: padding needs 1, 2 or 4 values" % c.name)


def _pair(c, key, default):
    v = c.ints(key, default)
    return v * 2 if len(v) == 1 else v


def _to_nchw(x, layout, c):
    if layout == "NCHW":
        return x
    if layout == "NHWC":
        return x.transpose(0, 3, 1, 2)
    raise OracleError("%s: layout %s is not supported by the oracle" % (c.name, layout))


def _from_nchw(x, layout):
    return x if layout == "NCHW" else x.transpose(0, 2, 3, 1)


def op_conv2d(c, x, w):
    layout, klayout = c.raw("data_layout", "NCHW"), c.raw("kernel_layout", "OIHW")
    x = _to_nchw(x, layout, c)
    if klayout == "HWIO":
        w = w.transpose(3, 2, 0, 1)
    elif klayout != "OIHW":
        raise OracleError("%s: kernel layout %s is not supported by the oracle" % (c.name, klayout))
    sh, sw = _pair(c, "strides", [1, 1])
    dh, dw = _pair(c, "dilation", [1, 1])
    pt, pl, pb, pr = _pads(c, "padding", [0, 0])
    g = c.int("groups", 1)
    out_dtype = c.dtype("out_dtype") or x.dtype
    n, ci, h, wd = x.shape
    co, cig, kh, kw = w.shape
    if ci != cig * g or co % g:
        raise OracleError("%s: channels %d/%d do not fit groups %d" % (c.name, ci, co, g))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(_f64(x), ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    xg = xp.reshape(n, g, cig, xp.shape[2], xp.shape[3])
    wg = _f64(w).reshape(g, co // g, cig, kh, kw)
    out = np.zeros((n, g, co // g, max(oh, 0), max(ow, 0)))
    for i in range(kh):
        for j in range(kw):
            sl = xg[:, :, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            out += np.einsum("ngchw,goc->ngohw", sl, wg[:, :, :, i, j])
    return _from_nchw(out.reshape(n, co, oh, ow).astype(out_dtype), layout)


def _pool(c, x, kind):
    layout = c.raw("layout", "NCHW")
    x = _to_nchw(x, layout, c)
    kh, kw = _pair(c, "pool_size", None)
    sh, sw = _pair(c, "strides", [1, 1])
    dh, dw = _pair(c, "dilation", [1, 1])
    pt, pl, pb, pr = _pads(c, "padding", [0, 0])
    ceil = c.bool("ceil_mode", False)
    include = c.bool("count_include_pad", False)
    n, ch, h, w = x.shape
    # TVM: ceil mode adds stride-1 of extra tail padding, then floors.
    eb, er = (sh - 1, sw - 1) if ceil else (0, 0)
    oh = (h + pt + pb + eb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr + er - dw * (kw - 1) - 1) // sw + 1
    if kind == "max":
        lo = -np.inf if is_float(x.dtype) else np.iinfo(x.dtype).min
        xp = np.pad(_f64(x), ((0, 0), (0, 0), (pt, pb + eb), (pl, pr + er)), constant_values=lo)
        acc = np.full((n, ch, oh, ow), -np.inf)
    else:
        xp = np.pad(_f64(x), ((0, 0), (0, 0), (pt, pb + eb), (pl, pr + er)))
        acc = np.zeros((n, ch, oh, ow))
        # counted taps: the input (exclude) or the input plus its written padding (include)
        mask = np.zeros((xp.shape[2], xp.shape[3]))
        if include:
            mask[: pt + h + pb, : pl + w + pr] = 1
        else:
            mask[pt: pt + h, pl: pl + w] = 1
        cnt = np.zeros((oh, ow))
    for i in range(kh):
        for j in range(kw):
            rs = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
            cs = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
            if kind == "max":
                acc = np.maximum(acc, xp[:, :, rs, cs])
            else:
                acc += xp[:, :, rs, cs]
                cnt += mask[rs, cs]
    if kind == "avg":
        with np.errstate(all="ignore"):
            acc = acc / cnt
    return _from_nchw(acc.astype(x.dtype), layout)


def op_max_pool2d(c, x):
    return _pool(c, x, "max")


def op_avg_pool2d(c, x):
    return _pool(c, x, "avg")


def op_adaptive_avg_pool2d(c, x):
    layout = c.raw("layout", "NCHW")
    x = _to_nchw(x, layout, c)
    n, ch, h, w = x.shape
    os_ = c.raw("output_size")
    if os_ is None:
        oh, ow = h, w
    else:
        os_ = os_ if isinstance(os_, list) else [os_]
        os_ = os_ * 2 if len(os_) == 1 else os_
        oh = h if os_[0] is None else int(eval_sym(os_[0], c.env)) if isinstance(os_[0], str) else os_[0]
        ow = w if os_[1] is None else int(eval_sym(os_[1], c.env)) if isinstance(os_[1], str) else os_[1]
    z = _f64(x)
    out = np.zeros((n, ch, oh, ow))
    for i in range(oh):
        h0, h1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            out[:, :, i, j] = z[:, :, h0:h1, w0:w1].mean(axis=(2, 3))
    return _from_nchw(out.astype(x.dtype), layout)


def op_reshape(c, x, shape):
    shape = list(shape)
    if shape.count(-1) > 1:
        raise OracleError("reshape: more than one -1")
    return np.reshape(x, shape)


def op_permute_dims(c, x):
    axes = c.ints("axes")
    return np.transpose(x, None if axes is None else [_axis(a, x.ndim, c) for a in axes]).copy()


def op_flatten(c, x):
    return x.reshape(-1)


def op_squeeze(c, x):
    axes = c.ints("axis")
    if axes is None:
        return np.squeeze(x)
    axes = tuple(_axis(a, x.ndim, c) for a in axes)
    for a in axes:
        if x.shape[a] != 1:
            raise OracleError("squeeze: axis %d has size %d" % (a, x.shape[a]))
    return np.squeeze(x, axis=axes)


def op_expand_dims(c, x):
    axes = c.ints("axis")
    out_nd = x.ndim + len(axes)
    return np.expand_dims(x, tuple(_axis(a, out_nd, c) for a in axes))


def op_concat(c, t):
    ts = list(t)
    if not ts:
        raise OracleError("concat of an empty tuple")
    return np.concatenate(ts, axis=c.int("axis", 0))


def op_split(c, x):
    ax = _axis(c.int("axis", 0), x.ndim, c)
    ios = c.raw("indices_or_sections")
    d = x.shape[ax]
    if isinstance(ios, list):
        idx = [int(eval_sym(i, c.env)) if isinstance(i, str) else int(i) for i in ios]
        return tuple(np.split(x, idx, axis=ax))
    k = int(eval_sym(ios, c.env)) if isinstance(ios, str) else int(ios)
    if k <= 0 or d % k:
        raise OracleError("split: axis of size %d does not divide into %d sections" % (d, k))
    return tuple(np.split(x, k, axis=ax))


def op_strided_slice(c, x):
    axes = c.ints("axes")
    begin, end = c.ints("begin"), c.ints("end")
    strides = c.ints("strides") or [1] * len(axes)
    if strides and len(strides) == 1 and len(axes) > 1:
        strides = strides * len(axes)
    sl = [slice(None)] * x.ndim
    for a, b, e, s in zip(axes, begin, end, strides):
        if s == 0:
            raise OracleError("strided_slice: stride 0")
        sl[_axis(a, x.ndim, c)] = slice(b, e, s)
    return x[tuple(sl)].copy()


def op_take(c, x, idx):
    ax = c.int("axis")
    if not is_int(idx.dtype):
        raise OracleError("take: indices must be integers")
    n = x.size if ax is None else x.shape[_axis(ax, x.ndim, c)]
    if np.any(idx < 0) or np.any(idx >= n):
        raise OracleError("take: index out of range [0, %d)" % n)
    return np.take(x, idx, axis=None if ax is None else _axis(ax, x.ndim, c))


def op_broadcast_to(c, x, shape):
    return np.broadcast_to(x, tuple(shape)).copy()


def op_repeat(c, x):
    ax = c.int("axis")
    return np.repeat(x, c.int("repeats"), axis=None if ax is None else _axis(ax, x.ndim, c))


def op_tile(c, x):
    return np.tile(x, c.ints("repeats"))


def op_astype(c, x):
    dt = c.dtype("dtype")
    if is_float(x.dtype) and is_int(dt):
        if not np.all(np.isfinite(x)):
            raise OracleError("astype: non-finite value to an integer type")
        return np.trunc(x).astype(np.int64).astype(dt)
    return x.astype(dt)


def _red_axes(c, x):
    axes = c.ints("axis")
    return None if axes is None else tuple(sorted(_axis(a, x.ndim, c) for a in axes))


def _reduce(kind):
    def op(c, x):
        ax, kd = _red_axes(c, x), c.bool("keepdims", False)
        if kind == "sum":
            r = np.sum(x, axis=ax, keepdims=kd, dtype=np.float64 if is_float(x.dtype) else None)
        elif kind == "prod":
            r = np.prod(x, axis=ax, keepdims=kd, dtype=np.float64 if is_float(x.dtype) else None)
        elif kind == "mean":
            with np.errstate(all="ignore"):
                r = np.mean(_f64(x), axis=ax, keepdims=kd)
        elif kind == "variance":
            with np.errstate(all="ignore"):
                r = np.var(_f64(x), axis=ax, keepdims=kd)  # biased, like TVM
        else:
            f = np.max if kind == "max" else np.min
            if is_float(x.dtype):
                init = -np.inf if kind == "max" else np.inf
            elif x.dtype == np.bool_:
                init = kind != "max"
            else:
                init = np.iinfo(x.dtype).min if kind == "max" else np.iinfo(x.dtype).max
            r = f(x, axis=ax, keepdims=kd, initial=init)
        return np.asarray(r).astype(x.dtype)
    return op


def _arg(f):
    def op(c, x):
        ax = c.int("axis")
        if x.size == 0:
            raise OracleError("%s of an empty tensor" % c.name)
        r = f(x, axis=None if ax is None else _axis(ax, x.ndim, c), keepdims=c.bool("keepdims", False))
        return np.asarray(r).astype(np.int64)
    return op


def _fill_dtype(c, default):
    return c.dtype("dtype") or default


def op_zeros(c, shape):
    return np.zeros(tuple(shape), dtype=c.dtype("dtype"))


def op_ones(c, shape):
    return np.ones(tuple(shape), dtype=c.dtype("dtype"))


def op_full(c, shape, fill):
    fill = np.asarray(fill)
    return np.full(tuple(shape), fill.item(), dtype=_fill_dtype(c, fill.dtype))


def op_zeros_like(c, x):
    return np.zeros(x.shape, dtype=_fill_dtype(c, x.dtype))


def op_ones_like(c, x):
    return np.ones(x.shape, dtype=_fill_dtype(c, x.dtype))


def op_full_like(c, x, fill):
    return np.full(x.shape, np.asarray(fill).item(), dtype=_fill_dtype(c, x.dtype))


def op_arange(c):
    def num(key, default):
        v = c.raw(key, default)
        return eval_sym(v, c.env) if isinstance(v, str) else v
    start, end, step = num("start", 0), num("end", None), num("step", 1)
    if end is None:
        raise OracleError("arange needs end")
    dt = c.dtype("dtype", "i64")
    n = max(0, math.ceil((end - start) / step))
    return (start + step * np.arange(n, dtype=np.float64 if is_float(dt) else np.int64)).astype(dt)


def op_tril(c, x):
    return np.tril(x, c.int("k", 0))


def op_triu(c, x):
    return np.triu(x, c.int("k", 0))


def op_unique(c, x):
    if c.raw("axis") is not None:
        raise OracleError("unique with axis is not supported by the oracle")
    flat = x.reshape(-1)
    u, idx, inv, cnt = np.unique(flat, return_index=True, return_inverse=True, return_counts=True)
    if not c.bool("sorted", True):
        order = np.argsort(idx, kind="stable")  # first-occurrence order
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        u, idx, cnt, inv = u[order], idx[order], cnt[order], rank[inv]
    extra = []
    if c.bool("return_index", False):
        extra.append(idx.astype(np.int64))
    if c.bool("return_inverse", False):
        extra.append(inv.astype(np.int64).reshape(-1))
    if c.bool("return_counts", False):
        extra.append(cnt.astype(np.int64))
    return tuple([u] + extra) if extra else u


def op_nonzero(c, x):
    if x.ndim == 0:
        raise OracleError("nonzero of a 0-d tensor is not supported by the oracle")
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


def op_shape_of(c, x):
    return Shape(int(d) for d in x.shape)


OPS = {
    "clip": op_clip, "where": op_where, "matmul": op_matmul, "logical_not": op_logical_not,
    "nn.softmax": op_softmax, "nn.log_softmax": op_log_softmax, "nn.layer_norm": op_layer_norm,
    "nn.rms_norm": op_rms_norm, "nn.batch_norm": op_batch_norm, "nn.conv2d": op_conv2d,
    "nn.max_pool2d": op_max_pool2d, "nn.avg_pool2d": op_avg_pool2d,
    "nn.adaptive_avg_pool2d": op_adaptive_avg_pool2d, "reshape": op_reshape,
    "permute_dims": op_permute_dims, "flatten": op_flatten, "squeeze": op_squeeze,
    "expand_dims": op_expand_dims, "concat": op_concat, "split": op_split,
    "strided_slice": op_strided_slice, "take": op_take, "broadcast_to": op_broadcast_to,
    "repeat": op_repeat, "tile": op_tile, "astype": op_astype,
    "sum": _reduce("sum"), "mean": _reduce("mean"), "max": _reduce("max"), "min": _reduce("min"),
    "prod": _reduce("prod"), "variance": _reduce("variance"),
    "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "zeros": op_zeros, "ones": op_ones, "full": op_full, "zeros_like": op_zeros_like,
    "ones_like": op_ones_like, "full_like": op_full_like, "arange": op_arange,
    "tril": op_tril, "triu": op_triu, "unique": op_unique, "nonzero": op_nonzero,
    "shape_of": op_shape_of,
}
for _k, _f in UNARY.items():
    OPS[_k] = _f
for _k, _f in BINARY.items():
    OPS[_k] = _f
for _k, _f in COMPARE.items():
    OPS[_k] = (lambda f: lambda c, a, b: np.asarray(f(a, b)).astype(np.bool_))(_f)


def _lib_matmul(a, b):
    return np.matmul(_f64(a), _f64(b)).astype(np.float32)


def _lib_rms_norm(x):
    z = _f64(x)
    return (z / np.sqrt((z * z).mean(axis=-1, keepdims=True) + 1e-5)).astype(x.dtype)


# call_dps_library functions: name -> f(*inputs) returning the output (or a tuple).
LIBRARIES = {
    "blas.sgemm": _lib_matmul,
    "blas.matmul": _lib_matmul,
    "cutlass.rms_norm": _lib_rms_norm,  # the paper's Figure 2 example (no weight, eps 1e-5)
}


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
            raise OracleError("op %s is not implemented by the oracle" % name)
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
        f([np.ascontiguousarray(a) for a in args] + outs, scal)
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
