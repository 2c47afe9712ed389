"""relax_numpy_tir.py — the oracle's loop level: a relax-json "tir" function run in Python.

Each function is translated once into Python source (loops, blocks, stores, loads,
allocs, let, if, select, casts, math calls) and exec'ed. Buffers become flat Python
`array`s (f32 'f', i32 'i', ...) so a store rounds or range-checks like the C code;
f16 and bool use lists, f16 with explicit rounding. Integer `//` and `%` are floor
division and modulo, integer `/` truncates (C), float `/` is true division.

Types follow docs/relax-json.md: loads have their buffer's dtype, loop variables,
iterators and symbolic variables are i64, a let variable has its value's type, a
literal takes the type of the other operand. f16 arithmetic is f16 arithmetic: the
result of every + - * / // % and math call on f16 operands is rounded to f16, and so
is an f16 literal, as in the C kernels (whose f16 values are floats rounded after each
operation). Python computes in double first; for + - * / that double rounding is
exact (53 >= 2 * 11 + 2 bits), for math calls it can differ from C's float-then-f16 in
rare ties.

Blocks: implicit iterators are the loops enclosing the block inside the nearest
enclosing block (a reduction when absent from the stored indices); `init` runs when
every reduce iterator is at its start (its loop's min for an implicit one, 0 for an
explicit one), and, for a block ending a chain of loops bound to exactly its reduce
iterators (the form docs/relax-json.md describes), once before the outermost of
those loops, so that an empty reduction still initializes.

Costs: ~1 µs per scalar operation, fine for the small shapes tests use (a 64³ matmul
takes about a second). `estimate_work` bounds a call before it runs.
"""

import math
import struct
from array import array

import numpy as np

from relax_numpy_core import (ALIASES, DTYPES, OracleError, TooLarge, dtype_name, eval_sym,
                              expr_vars, match_params, np_dtype, parse_expr, short_name)


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


_LOGICAL = ("==", "!=", "<", "<=", ">", ">=", "&&", "||")
_ARITH = ("+", "-", "*", "/", "//", "%")  # rounded to f16 when their operands are f16


def _stmts(x):
    if x is None:
        return []
    return x if isinstance(x, list) else [x]


def _stmt_vars(stmts, out=None):
    """Every variable name the expressions of a statement list use (loop bounds, store
    indices and values, conditions, let values, allocated shapes, iterator binds)."""
    out = set() if out is None else out
    for s in _stmts(stmts):
        if not isinstance(s, dict):
            continue
        exprs = [s[k] for k in ("min", "extent", "store", "value", "if") if k in s]
        exprs += list(s.get("extents") or []) + list(s.get("shape") or [])
        for it in s.get("iters") or []:
            exprs += [it[k] for k in ("bind", "dom") if k in it]
        for x in exprs:
            expr_vars(parse_expr(x), out)
        for key in ("body", "then", "else", "init"):
            if isinstance(s.get(key), (list, dict)):
                _stmt_vars(s[key], out)
    return out


class TirFunc:
    """One loop-level function translated to Python (see the file essay)."""

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn
        self.bufs = [p for p in fn["params"] if "buffer" in p]
        self.scalars = [p for p in fn["params"] if "buffer" not in p]
        self.buf_dtype = {p["name"]: dtype_name(p["buffer"]["dtype"]) for p in self.bufs}
        self.var_dtype = {p["name"]: dtype_name(p.get("dtype") or "i64") for p in self.scalars}
        self.hoisted = set()  # id() of blocks whose init runs before their reduce loops
        self.lines = []
        self.tmp = 0
        self._gen()

    # -- expressions --

    def _ty(self, e):
        """The dtype name of AST e; None for a literal (typed by its context)."""
        k = e[0]
        if k == "bool":
            return "bool"
        if k == "var":
            return self.var_dtype.get(e[1], "i64")
        if k == "load":
            return self.buf_dtype.get(e[1])
        if k == "un":
            return "bool" if e[1] == "!" else self._ty(e[2])
        if k == "bin":
            if e[1] in _LOGICAL:
                return "bool"
            a = self._ty(e[2])
            return a if a is not None or e[1] in ("<<", ">>") else self._ty(e[3])
        if k == "call":
            if e[1] in _CAST_NAMES:
                return _CAST_NAMES[e[1]]
            for a in (e[2][1:] if e[1] == "select" else e[2]):
                t = self._ty(a)
                if t is not None:
                    return t
        return None

    def _xt(self, e, t):
        """AST e as Python in a context of dtype t: a literal there is an f16 one."""
        if t == "f16" and e[0] in ("int", "float"):
            return repr(_to_f16(float(e[1])))
        return self._x(e)

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
            a = self._xt(e[2], self._ty(e[2]))
            return {"-": "(-%s)", "!": "(not %s)", "~": "(~%s)"}[e[1]] % a
        if k == "bin":
            op = e[1]
            ctx = self._ty(e[2])
            if ctx is None:
                ctx = self._ty(e[3])
            a = self._xt(e[2], ctx)
            b = self._xt(e[3], self._ty(e[3]) if op in ("<<", ">>") else ctx)
            if op == "/":
                r = "_div(%s, %s)" % (a, b)
            elif op == "//":
                r = "_fdiv(%s, %s)" % (a, b)
            elif op == "%":
                r = "_fmod(%s, %s)" % (a, b)
            elif op == "&&":
                return "(bool(%s) and bool(%s))" % (a, b)
            elif op == "||":
                return "(bool(%s) or bool(%s))" % (a, b)
            else:
                r = "(%s %s %s)" % (a, op, b)
            return "_to_f16(%s)" % r if op in _ARITH and ctx == "f16" else r
        if k == "call":
            f, t = e[1], self._ty(e)
            if f == "select":
                if len(e[2]) != 3:
                    raise OracleError("%s: select takes 3 arguments" % self.name)
                c, a, b = self._x(e[2][0]), self._xt(e[2][1], t), self._xt(e[2][2], t)
                return "(%s if %s else %s)" % (a, c, b)
            if f in _CAST_NAMES:
                return "_cast(%r, %s)" % (_CAST_NAMES[f], self._x(e[2][0]))
            if f in ("bf16", "bfloat16"):
                raise OracleError("bf16 is not supported by the NumPy oracle")
            if f not in _TIR_FUNCS:
                raise OracleError("%s: unknown function %s" % (self.name, f))
            r = "%s(%s)" % (_TIR_FUNCS[f], ", ".join(self._xt(a, t) for a in e[2]))
            return "_to_f16(%s)" % r if t == "f16" else r
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

    def _used_by_stores(self, block):
        """Variable names in the indices of the stores of a block's body."""
        written, used = [], set()
        self._written(block.get("body"), frozenset(), written)
        for ix in written:
            expr_vars(ix, used)
        return used

    def _hoist(self, s, outer):
        """The block whose init runs before loop statement s, or None: s starts a chain
        of loops, each the only statement of the one before, ending in a block with init
        whose reduce iterators are bound to exactly the chain's loop variables (explicit
        ones only to loops from 0), with no spatial iterator, no loop start and no init
        depending on a chain variable. outer: the loops around s inside the nearest
        block, as (name, start code)."""
        chain, cur = [], s
        while isinstance(cur, dict) and ("for" in cur or "grid" in cur):
            if "for" in cur:
                chain.append((cur["for"], parse_expr(cur.get("min", 0))))
            else:
                chain.extend((v, ("int", 0)) for v in cur["grid"])
            body = _stmts(cur.get("body"))
            if len(body) != 1:
                return None
            cur = body[0]
        if not isinstance(cur, dict) or "block" not in cur or not cur.get("init"):
            return None
        names, starts = {v for v, _ in chain}, dict(chain)
        init_vars = _stmt_vars(cur["init"])
        if init_vars & names or any(expr_vars(mn) & names for mn in starts.values()):
            return None
        if cur.get("iters") is None:  # implicit: the chain must be the reduce loops
            used = self._used_by_stores(cur)
            if used & names or any(v not in used for v, _ in outer):
                return None
            return cur
        bound = set()
        for it in cur["iters"]:
            be = parse_expr(it["bind"])
            if it.get("kind", "spatial") != "reduce":
                if expr_vars(be) & names:
                    return None
                continue
            if be[0] != "var" or be[1] not in names or starts[be[1]] != ("int", 0):
                return None
            if it["var"] in init_vars:
                return None
            bound.add(be[1])
        return cur if bound == names else None

    def _hoisted_init(self, b, depth):
        """The init of block b (see _hoist) with its spatial iterators bound."""
        for it in b.get("iters") or []:
            if it.get("kind", "spatial") != "reduce":
                self.emit(depth, "v_%s = %s" % (it["var"], self._e(it["bind"])))
        self._block(b["init"], depth, [])

    def _stmt(self, s, depth, loops):
        if not isinstance(s, dict):
            raise OracleError("%s: bad statement %r" % (self.name, s))
        if "for" in s:
            b = self._hoist(s, loops)
            if b is not None:
                self._hoisted_init(b, depth)
                self.hoisted.add(id(b))
        if "for" in s:
            v = s["for"]
            lo = self._e(s.get("min", 0))
            ext = self._e(s["extent"])
            self.emit(depth, "for v_%s in range(%s, (%s) + (%s)):" % (v, lo, lo, ext))
            self._block(s.get("body"), depth + 1, loops + [(v, lo)])
        elif "grid" in s:  # nested loops from 0, like the reader's desugaring
            names, exts = s["grid"], s["extents"]
            if len(names) != len(exts):
                raise OracleError("%s: grid and extents differ in length" % self.name)
            nest = s.get("body")
            for v, ext in reversed(list(zip(names, exts))):
                nest = {"for": v, "extent": ext, "body": nest}
            self._stmt(nest, depth, loops)
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
            if s.get("init") and id(s) not in self.hoisted:
                if reduce_conds:
                    self.emit(depth, "if %s:" % " and ".join(reduce_conds))
                    self._block(s["init"], depth + 1, [])
                else:
                    self._block(s["init"], depth, [])
            self._block(s.get("body"), depth, [])
        elif "store" in s:
            t = parse_expr(s["store"])
            if t[0] != "load":
                raise OracleError("%s: bad store target %r" % (self.name, s["store"]))
            val = self._store_conv(t[1], self._xt(parse_expr(s["value"]), self.buf_dtype.get(t[1])))
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
            ve = parse_expr(s["value"])
            t = self._ty(ve)
            self.var_dtype[s["let"]] = t if t is not None else "f32" if ve[0] == "float" else "i64"
            self.emit(depth, "v_%s = %s" % (s["let"], self._x(ve)))
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

    def __call__(self, arrays, scalars, budget=None):
        """Runs on numpy arrays (inputs then outputs, in buffer order; outputs are
        written in place) with scalar parameter values; raises TooLarge when the
        estimated stores exceed budget (None: no limit). Returns nothing."""
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
        if budget is not None:
            work = estimate_work(self.fn.get("body"), env)
            if work > budget:
                raise TooLarge("%s: about %.3g scalar stores, over the budget of %.3g" % (
                    self.name, work, budget))
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
