"""relax_numpy_core.py — what every part of the NumPy oracle shares (see relax_numpy.py).

Errors (OracleError, TooLarge) · dtype names and their NumPy types · the value classes
of the graph level (Shape, Prim, FuncRef) and `flatten` · scalar expressions: one
tokenizer and precedence-climbing parser (`parse_expr`, an AST of tuples) for symbolic
dims and loop-level code alike, with C-like precedence
  || < && < | < ^ < & < == != < < <= > >= < << >> < + - < * / // % < unary - ! ~,
and `eval_sym` for symbolic integers · annotation matching (`match_params`,
`match_sinfo`), which binds a symbolic variable at its first whole-dimension occurrence
like the VM's MATCH instructions and checks every other dim · `alloc_from_sinfo` for
call_tir and library outputs.

Costs: parsed expressions are cached by their text; matching is linear in the
annotation.
"""

import re

import numpy as np


class OracleError(Exception):
    """An error in the module or its inputs, as the oracle sees it."""


class TooLarge(OracleError):
    """A loop-level call would exceed TIR_BUDGET scalar stores (see estimate_work)."""



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
