"""relax_numpy_ops.py — the oracle's graph-level operators and library functions.

OPS maps each docs/ops.md operator name (without "relax.") to f(ctx, *args): ctx is an
OpCtx (attributes, read with symbolic expressions evaluated in the caller's env), args
are numpy arrays, tuples or Shapes. Each op is written from the docs with NumPy, float
math in float64 rounded once to the result dtype (the correctly rounded reference);
where the docs could be read two ways the choice follows TVM and is noted at the op.
LIBRARIES maps call_dps_library names to plain functions of the inputs.

Costs: vectorized NumPy; conv2d and pooling loop over the kernel window (kh x kw
vectorized steps), adaptive pooling over the output positions.
"""

import math

import numpy as np

from relax_numpy_core import OracleError, Shape, eval_sym, is_float, is_int, np_dtype


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


def op_conv2d_transpose(c, x, w):
    """The scatter form: every input element adds x * w[ic, :, kh, kw] at its strided
    position, then the padding is cropped (an independent formulation from the
    compiler's gather)."""
    if c.raw("data_layout", "NCHW") != "NCHW" or c.raw("kernel_layout", "IOHW") != "IOHW":
        raise OracleError("%s: only NCHW / IOHW" % c.name)
    sh, sw = _pair(c, "strides", [1, 1])
    dh, dw = _pair(c, "dilation", [1, 1])
    oph, opw = _pair(c, "output_padding", [0, 0])
    pt, pl, pb, pr = _pads(c, "padding", [0, 0])
    g = c.int("groups", 1)
    out_dtype = c.dtype("out_dtype") or x.dtype
    n, ci, h, wd = x.shape
    _, og, kh, kw = w.shape
    fh, fw = (h - 1) * sh + dh * (kh - 1) + 1 + oph, (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    full = np.zeros((n, og * g, fh, fw))
    xf, wf = _f64(x), _f64(w)
    for ic in range(ci):
        gi = ic // (ci // g)
        for i in range(kh):
            for j in range(kw):
                full[:, gi * og:(gi + 1) * og, i * dh: i * dh + (h - 1) * sh + 1: sh,
                     j * dw: j * dw + (wd - 1) * sw + 1: sw] += np.einsum("nhw,o->nohw", xf[:, ic], wf[ic, :, i, j])
    return full[:, :, pt: fh - pb, pl: fw - pr].astype(out_dtype)


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


def _spatial(c, key, default, nsp):
    v = c.ints(key, default)
    return v * nsp if len(v) == 1 else v


def _pads_nd(c, nsp):
    p = c.ints("padding", [0])
    if len(p) == 1:
        p = p * (2 * nsp)
    elif len(p) == nsp:
        p = p * 2
    elif len(p) != 2 * nsp:
        raise OracleError("%s: padding needs 1, %d or %d values" % (c.name, nsp, 2 * nsp))
    return p[:nsp], p[nsp:]  # (before per dim, after per dim)


def _taps(shape):
    return np.ndindex(*shape)


def op_conv3d(c, x, w):
    """NCDHW / OIDHW, written per kernel tap over the zero-padded input (N-d form of
    op_conv2d)."""
    if c.raw("data_layout", "NCDHW") != "NCDHW" or c.raw("kernel_layout", "OIDHW") != "OIDHW":
        raise OracleError("%s: only NCDHW / OIDHW" % c.name)
    st, dl = _spatial(c, "strides", [1], 3), _spatial(c, "dilation", [1], 3)
    pb, pa = _pads_nd(c, 3)
    g = c.int("groups", 1)
    out_dtype = c.dtype("out_dtype") or x.dtype
    n, ci = x.shape[:2]
    co, cig = w.shape[:2]
    k = w.shape[2:]
    if ci != cig * g or co % g:
        raise OracleError("%s: channels %d/%d do not fit groups %d" % (c.name, ci, co, g))
    o = [(x.shape[2 + d] + pb[d] + pa[d] - dl[d] * (k[d] - 1) - 1) // st[d] + 1 for d in range(3)]
    xp = np.pad(_f64(x), [(0, 0), (0, 0)] + [(pb[d], pa[d]) for d in range(3)])
    xg = xp.reshape((n, g, cig) + xp.shape[2:])
    wg = _f64(w).reshape((g, co // g, cig) + tuple(k))
    out = np.zeros((n, g, co // g) + tuple(o))
    for t in _taps(k):
        sl = tuple(slice(t[d] * dl[d], t[d] * dl[d] + st[d] * (o[d] - 1) + 1, st[d]) for d in range(3))
        out += np.einsum("ngcdhw,goc->ngodhw", xg[(slice(None),) * 3 + sl], wg[(slice(None),) * 3 + t])
    return out.reshape((n, co) + tuple(o)).astype(out_dtype)


def op_conv3d_transpose(c, x, w):
    """The scatter form (N-d op_conv2d_transpose): every input element adds
    x * w[ic, :, k...] at its strided position, then the padding is cropped."""
    if c.raw("data_layout", "NCDHW") != "NCDHW" or c.raw("kernel_layout", "IODHW") != "IODHW":
        raise OracleError("%s: only NCDHW / IODHW" % c.name)
    st, dl = _spatial(c, "strides", [1], 3), _spatial(c, "dilation", [1], 3)
    op = _spatial(c, "output_padding", [0], 3)
    pb, pa = _pads_nd(c, 3)
    g = c.int("groups", 1)
    out_dtype = c.dtype("out_dtype") or x.dtype
    n, ci = x.shape[:2]
    og, k, sp = w.shape[1], w.shape[2:], x.shape[2:]
    full_sp = [(sp[d] - 1) * st[d] + dl[d] * (k[d] - 1) + 1 + op[d] for d in range(3)]
    full = np.zeros([n, og * g] + full_sp)
    xf, wf = _f64(x), _f64(w)
    for ic in range(ci):
        gi = ic // (ci // g)
        for t in _taps(k):
            sl = tuple(slice(t[d] * dl[d], t[d] * dl[d] + (sp[d] - 1) * st[d] + 1, st[d]) for d in range(3))
            full[(slice(None), slice(gi * og, (gi + 1) * og)) + sl] += \
                np.einsum("ndhw,o->nodhw", xf[:, ic], wf[(ic, slice(None)) + t])
    crop = tuple(slice(pb[d], full_sp[d] - pa[d]) for d in range(3))
    return full[(slice(None), slice(None)) + crop].astype(out_dtype)


def _pool3d(c, x, kind):
    """N-d form of _pool: the padded input (ceil mode adds stride - 1 at the end),
    max or sum over the window taps, avg divided by the counted taps."""
    if c.raw("layout", "NCDHW") != "NCDHW":
        raise OracleError("%s: only NCDHW" % c.name)
    k = _spatial(c, "pool_size", None, 3)
    st, dl = _spatial(c, "strides", [1], 3), _spatial(c, "dilation", [1], 3)
    pb, pa = _pads_nd(c, 3)
    ceil = c.bool("ceil_mode", False)
    include = c.bool("count_include_pad", False)
    sp = x.shape[2:]
    ex = [st[d] - 1 if ceil else 0 for d in range(3)]
    o = [(sp[d] + pb[d] + pa[d] + ex[d] - dl[d] * (k[d] - 1) - 1) // st[d] + 1 for d in range(3)]
    padw = [(0, 0), (0, 0)] + [(pb[d], pa[d] + ex[d]) for d in range(3)]
    lo = -np.inf if is_float(x.dtype) else np.iinfo(x.dtype).min
    xp = np.pad(_f64(x), padw, constant_values=lo if kind == "max" else 0)
    mask = np.zeros(xp.shape[2:])
    if include:
        mask[tuple(slice(0, pb[d] + sp[d] + pa[d]) for d in range(3))] = 1
    else:
        mask[tuple(slice(pb[d], pb[d] + sp[d]) for d in range(3))] = 1
    acc = np.full(x.shape[:2] + tuple(o), -np.inf if kind == "max" else 0.0)
    cnt = np.zeros(o)
    for t in _taps(k):
        sl = tuple(slice(t[d] * dl[d], t[d] * dl[d] + st[d] * (o[d] - 1) + 1, st[d]) for d in range(3))
        v = xp[(slice(None), slice(None)) + sl]
        acc = np.maximum(acc, v) if kind == "max" else acc + v
        cnt += mask[sl]
    if kind == "avg":
        with np.errstate(all="ignore"):
            acc = acc / cnt
    return acc.astype(x.dtype)


def op_max_pool3d(c, x):
    return _pool3d(c, x, "max")


def op_avg_pool3d(c, x):
    return _pool3d(c, x, "avg")


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


def op_gather_elements(c, x, idx):
    if not is_int(idx.dtype):
        raise OracleError("gather_elements: indices must be integers")
    ax = _axis(c.int("axis", 0), x.ndim, c)
    if np.any(idx < -x.shape[ax]) or np.any(idx >= x.shape[ax]):
        raise OracleError("gather_elements: index out of range")
    return np.take_along_axis(x, np.where(idx < 0, idx + x.shape[ax], idx).astype(np.int64), ax)


def op_gather_nd(c, x, idx):
    b, m = c.int("batch_dims", 0), idx.shape[-1]
    out = np.zeros(idx.shape[:-1] + x.shape[b + m:], dtype=x.dtype)
    for p in np.ndindex(*idx.shape[:-1]):
        out[p] = x[tuple(p[:b]) + tuple(int(v) for v in idx[p])]
    return out


_SCATTER = {"update": lambda a, b: b, "add": lambda a, b: a + b, "mul": lambda a, b: a * b,
            "max": np.maximum, "min": np.minimum}


def op_scatter_elements(c, x, idx, upd):
    """Updates applied one by one in row-major order (so the last of duplicates wins)."""
    ax, f = _axis(c.int("axis", 0), x.ndim, c), _SCATTER[c.raw("reduction", "update")]
    out = x.copy()
    for p in np.ndindex(*idx.shape):
        q = list(p)
        q[ax] = int(idx[p]) % x.shape[ax]
        out[tuple(q)] = f(out[tuple(q)], upd[p])
    return out


def op_scatter_nd(c, x, idx, upd):
    f = _SCATTER[c.raw("reduction", "update")]
    out = x.copy()
    for p in np.ndindex(*idx.shape[:-1]):
        q = tuple(int(v) % x.shape[t] for t, v in enumerate(idx[p]))
        out[q] = f(out[q], upd[p])
    return out


def op_pad(c, x):
    pw = c.ints("pad_width")
    mode = {"constant": "constant", "edge": "edge", "reflect": "reflect"}[c.raw("pad_mode", "constant")]
    pairs = [(pw[2 * i], pw[2 * i + 1]) for i in range(x.ndim)]
    crop = tuple(slice(-min(b, 0), x.shape[i] - (-min(a, 0))) for i, (b, a) in enumerate(pairs))
    grow = [(max(b, 0), max(a, 0)) for b, a in pairs]
    y = x[crop]
    if mode == "constant":
        return np.pad(y, grow, mode="constant", constant_values=c.float("pad_value", 0.0)).astype(x.dtype)
    return np.pad(y, grow, mode=mode)


def op_cumsum(c, x):
    ax = c.int("axis")
    dt = c.dtype("dtype") or x.dtype
    v = x.reshape(-1) if ax is None else x
    a = 0 if ax is None else _axis(ax, x.ndim, c)
    rev = c.bool("reverse", False)
    if rev:
        v = np.flip(v, a)
    r = np.cumsum(v.astype(np.float64 if is_float(dt) else dt), axis=a)
    if c.bool("exclusive", False):
        r = r - v.astype(r.dtype)
    if rev:
        r = np.flip(r, a)
    return r.astype(dt)


def op_group_norm(c, x, gamma, beta):
    g = c.int("num_groups")
    v = _f64(x).reshape(x.shape[0], g, -1)
    y = ((v - v.mean(-1, keepdims=True)) / np.sqrt(v.var(-1, keepdims=True) + c.float("epsilon", 1e-5)))
    y = y.reshape(x.shape)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if c.bool("scale", True):
        y = y * _f64(gamma).reshape(shape)
    if c.bool("center", True):
        y = y + _f64(beta).reshape(shape)
    return y.astype(x.dtype)


def _order(x, ax, descending):
    """Indices that order x along ax: a total order with NaN after every number and
    -0.0 equal to +0.0 (descending: NaN first), equal elements lower index first."""
    xm = np.moveaxis(x, ax, -1)
    if is_float(x.dtype):
        k = np.where(np.isnan(xm), np.inf, _f64(xm) + 0.0)  # NaN ranks with +inf ...
        nan = np.isnan(xm).astype(np.int8)                     # ... then after it
        k, nan = (-k, -nan) if descending else (k, nan)
        order = np.lexsort((np.broadcast_to(np.arange(xm.shape[-1]), xm.shape), k, nan), axis=-1)
    else:
        k = -xm.astype(object) if descending else xm
        order = np.argsort(k, axis=-1, kind="stable")
    return order


def op_topk(c, x):
    ax = _axis(c.int("axis", -1), x.ndim, c)
    k = c.int("k", 1)
    order = _order(x, ax, c.bool("largest", True))[..., :k]
    vals = np.moveaxis(np.take_along_axis(np.moveaxis(x, ax, -1), order, axis=-1), -1, ax)
    inds = np.moveaxis(order, -1, ax).astype(c.dtype("dtype", "i32"))
    rt = c.raw("ret_type", "both")
    return (vals, inds) if rt == "both" else vals if rt == "values" else inds


def op_sort(c, x):
    ax = _axis(c.int("axis", -1), x.ndim, c)
    order = _order(x, ax, c.bool("descending", False))
    return np.moveaxis(np.take_along_axis(np.moveaxis(x, ax, -1), order, axis=-1), -1, ax)


def op_argsort(c, x):
    ax = _axis(c.int("axis", -1), x.ndim, c)
    order = _order(x, ax, c.bool("descending", False))
    return np.moveaxis(order, -1, ax).astype(c.dtype("dtype", "i32"))


def _shift(left):
    def op(c, a, b):
        bits = a.dtype.itemsize * 8
        a, b = np.broadcast_arrays(a, b)
        ok = (b >= 0) & (b < bits)
        bs = np.where(ok, b, 0).astype(a.dtype)
        r = np.left_shift(a, bs) if left else np.right_shift(a, bs)
        fill = np.where(a < 0, -1, 0).astype(a.dtype) if not left else np.zeros_like(a)
        return np.where(ok, r, fill).astype(a.dtype)
    return op


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
    "shape_of": op_shape_of, "gather_elements": op_gather_elements,
    "nn.conv2d_transpose": op_conv2d_transpose, "gather_nd": op_gather_nd,
    "nn.conv3d": op_conv3d, "nn.conv3d_transpose": op_conv3d_transpose,
    "nn.max_pool3d": op_max_pool3d, "nn.avg_pool3d": op_avg_pool3d,
    "scatter_elements": op_scatter_elements, "scatter_nd": op_scatter_nd, "nn.pad": op_pad, "cumsum": op_cumsum,
    "topk": op_topk, "sort": op_sort, "argsort": op_argsort, "nn.group_norm": op_group_norm,
    "left_shift": _shift(True), "right_shift": _shift(False),
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
    "rt.rms_norm": _lib_rms_norm,  # the runtime-native CPU function (library_rt.c)
}
