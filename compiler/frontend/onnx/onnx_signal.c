/*
 * onnx_signal.c — the signal ops of opset 17: DFT, STFT and MelWeightMatrix, for sizes
 * known at import time.
 *
 * A DFT of length L over N input samples (real: c = 1 value per sample, complex: c = 2)
 * is a matrix product: with the transformed axis moved next to the trailing re/im axis
 * and the two flattened, [..., N*c] @ W = [..., K*2] where
 *   W[n*c + j, k*2 + o] = the contribution of sample n's part j to bin k's part o:
 *   (xr + i*xi) * (cos t - i*s*sin t),  t = 2*pi*k*n / L,  s = +1 forward, -1 inverse,
 *   re: xr*cos t + xi*s*sin t;  im: xi*cos t - xr*s*sin t;  scaled by 1/L when inverse.
 * Rows n >= L are zero (dft_length truncates); fewer samples than L is zero padding,
 * which the rows that do not exist already are. K = L, or L/2 + 1 when onesided. The
 * reshape to [..., K, 2] and the inverse permutation give ONNX's layout. W is built in
 * f64 and the product runs in f64 (the input cast up, the result cast back): f32
 * constants would leave ~1e-5 residues on bins that are exactly zero, beyond atol 1e-5.
 *
 * STFT frames the signal with `take` of a constant [frames, L] index matrix
 * (f*frame_step + n), multiplies by the window (a run-time value, when given), and
 * applies the same W per frame (onesided by default). MelWeightMatrix depends on its
 * inputs only: a constant built as ONNX's reference builds it (triangular filters
 * between mel-spaced bin edges, edges floored to integer bins).
 *
 * Every size must be an import-time constant (frame_step, frame_length, dft_length,
 * the DFT axis' extent and the signal length); bounded by OX_SIG_MAX elements for W.
 * Costs: one matmul of N*c x K*2 per transformed row (O(N*K), not O(N log N)).
 */
#include <math.h>
#include <string.h>

#include "onnx_int.h"

#define OX_SIG_MAX ((int64_t)1 << 24) /* elements of a DFT matrix or a mel matrix */
#define OX_PI 3.14159265358979323846

/* A constant size operand (scalar), or dflt when absent; false after an error. */
static bool size_in(ox_ctx *c, int i, const char *what, int64_t dflt, int64_t *out)
{
    ox_val *v = ox_in(c, i);
    *out = dflt;
    if (!v) return true;
    rx_const *k = ox_const(c, v);
    if (!k || ox_numel(k) != 1) {
        ox_err(c, "%s must be a constant scalar (known at import)", what);
        return false;
    }
    *out = rx_dtype_is_float(k->dtype) ? (int64_t)ox_cf(k, 0) : ox_ci(k, 0);
    if (*out < 1 || *out > OX_SIG_MAX) {
        ox_err(c, "%s %lld is out of range (1..%lld)", what, (long long)*out,
               (long long)OX_SIG_MAX);
        return false;
    }
    return true;
}

/* The f64 DFT matrix W [n*cin, kout*2] described above. */
static rx_node *dft_matrix(ox_ctx *c, int64_t n, int cin, int64_t len, int64_t kout, bool inverse)
{
    if (n * cin * kout * 2 > OX_SIG_MAX) {
        ox_err(c, "the DFT matrix (%lld x %lld) is too large", (long long)(n * cin),
               (long long)(kout * 2));
        return NULL;
    }
    int64_t shape[2] = {n * cin, kout * 2};
    rx_const *w = ox_new_const(c, RX_DT_F64, 2, shape);
    double *p = (double *)w->data, s = inverse ? -1 : 1, scale = inverse ? 1.0 / (double)len : 1;
    for (int64_t i = 0; i < n && i < len; i++)
        for (int64_t k = 0; k < kout; k++) {
            double t = 2 * OX_PI * (double)((i * k) % len) / (double)len;
            double co = cos(t) * scale, si = sin(t) * scale;
            double *row = p + (i * cin) * kout * 2 + k * 2;
            row[0] = co;
            row[1] = -s * si;
            if (cin == 2) {
                row[kout * 2] = s * si;
                row[kout * 2 + 1] = co;
            }
        }
    return ox_const_node(c, w);
}

/* x [..., n, cin] (f64) @ W -> [..., kout, 2]; lead = the leading dims. */
static rx_node *apply_dft(ox_ctx *c, rx_node *x, rx_expr **lead, int nlead, int64_t n, int cin,
                          int64_t len, int64_t kout, bool inverse)
{
    rx_expr **d = RX_NEWN(c->a, rx_expr *, nlead + 2);
    for (int i = 0; i < nlead; i++) d[i] = lead[i];
    d[nlead] = ox_lit(c, n * cin);
    rx_node *y = ox_call2(c, "matmul", ox_reshape(c, x, d, nlead + 1),
                          dft_matrix(c, n, cin, len, kout, inverse));
    d[nlead] = ox_lit(c, kout);
    d[nlead + 1] = ox_lit(c, 2);
    return ox_reshape(c, y, d, nlead + 2);
}

/* The static extent of dim i of x, or -1 (and an error). */
static int64_t static_dim(ox_ctx *c, const rx_node *x, int i, const char *what)
{
    int64_t v;
    if (!rx_expr_is_const(ox_simp(c, x->sinfo->dims[i]), &v)) {
        ox_err(c, "the %s must have a static extent", what);
        return -1;
    }
    return v;
}

static rx_node *permute(ox_ctx *c, rx_node *x, const int64_t *perm, int nd)
{
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axes", ox_aints(c, perm, nd));
    return ox_call1(c, "permute_dims", x, m);
}

bool ox_c_dft(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x || !ox_need_dims(c, x)) return false;
    int r = x->sinfo->ndim;
    rx_dtype dt = ox_dtype_of(x);
    int64_t a = ox_attr_i(c, "axis", 1);
    if (a < 0) a += r;
    if (r < 2 || a < 0 || a > r - 2 || !rx_dtype_is_float(dt)) {
        ox_err(c, "expects a float input of rank >= 2 and an axis before the last (axis %lld, "
               "rank %d)", (long long)ox_attr_i(c, "axis", 1), r);
        return false;
    }
    int64_t cin = static_dim(c, x, r - 1, "last axis (re/im)"), n = static_dim(c, x, (int)a, "axis");
    if (cin < 0 || n < 0) return false;
    if (cin != 1 && cin != 2) {
        ox_err(c, "the last axis has %lld values per sample (1 real or 2 complex)", (long long)cin);
        return false;
    }
    int64_t len;
    if (!size_in(c, 1, "dft_length", n, &len)) return false;
    bool inverse = ox_attr_i(c, "inverse", 0) != 0, onesided = ox_attr_i(c, "onesided", 0) != 0;
    if (inverse && onesided) {
        ox_err(c, "onesided with inverse is not supported");
        return false;
    }
    int64_t kout = onesided ? len / 2 + 1 : len;
    /* move the axis next to the re/im axis */
    int64_t *perm = RX_NEWN(c->a, int64_t, r), *inv = RX_NEWN(c->a, int64_t, r);
    rx_expr **lead = RX_NEWN(c->a, rx_expr *, r);
    int j = 0;
    for (int i = 0; i < r - 1; i++)
        if (i != a) lead[j] = x->sinfo->dims[i], perm[j++] = i;
    perm[r - 2] = a;
    perm[r - 1] = r - 1;
    for (int i = 0; i < r; i++) inv[perm[i]] = i;
    rx_node *xd = ox_astype(c, x, RX_DT_F64);
    if (a != r - 2) xd = permute(c, xd, perm, r);
    rx_node *y = apply_dft(c, xd, lead, r - 2, n, (int)cin, len, kout, inverse);
    if (a != r - 2) y = permute(c, y, inv, r);
    return ox_out_node(c, 0, ox_astype(c, y, dt));
}

bool ox_c_stft(ox_ctx *c)
{
    rx_node *x = ox_in_node(c, 0);
    if (!x || !ox_need_dims(c, x)) return false;
    rx_dtype dt = ox_dtype_of(x);
    if (x->sinfo->ndim != 3 || !rx_dtype_is_float(dt)) {
        ox_err(c, "the signal must be a float tensor [batch, length, 1 or 2]");
        return false;
    }
    int64_t cin = static_dim(c, x, 2, "signal's last axis"), slen = static_dim(c, x, 1, "signal");
    int64_t step, flen;
    if (cin < 0 || slen < 0 || !size_in(c, 1, "frame_step", 1, &step) ||
        !size_in(c, 3, "frame_length", 0, &flen))
        return false;
    if (cin != 1 && cin != 2) {
        ox_err(c, "the signal's last axis has %lld values (1 real or 2 complex)", (long long)cin);
        return false;
    }
    rx_node *win = ox_in(c, 2) ? ox_in_node(c, 2) : NULL;
    if (ox_in(c, 2)) {
        if (!win || ox_ndim(win) != 1) {
            if (win) ox_err(c, "the window must be 1-d");
            return false;
        }
        int64_t wl = static_dim(c, win, 0, "window");
        if (wl < 0) return false;
        if (flen && flen != wl) {
            ox_err(c, "frame_length %lld differs from the window's %lld", (long long)flen,
                   (long long)wl);
            return false;
        }
        flen = wl;
    }
    if (!flen || flen > slen) {
        ox_err(c, flen ? "frame_length %lld exceeds the signal's %lld samples"
                       : "needs a window or a frame_length", (long long)flen, (long long)slen);
        return false;
    }
    int64_t frames = (slen - flen) / step + 1;
    if (frames * flen > OX_SIG_MAX) {
        ox_err(c, "%lld frames of %lld samples are too many", (long long)frames, (long long)flen);
        return false;
    }
    int64_t ishape[2] = {frames, flen};
    rx_const *idx = ox_new_const(c, RX_DT_I64, 2, ishape);
    for (int64_t f = 0; f < frames; f++)
        for (int64_t i = 0; i < flen; i++) {
            int64_t v = f * step + i;
            memcpy(idx->data + 8 * (f * flen + i), &v, 8);
        }
    rx_attr *m = ox_amap(c);
    ox_aset(c, m, "axis", ox_aint(c, 1));
    rx_node *args[2] = {ox_astype(c, x, RX_DT_F64), ox_const_node(c, idx)};
    rx_node *fr = ox_call(c, "take", args, 2, m); /* [batch, frames, flen, cin] */
    if (win) {
        rx_expr *wd[2] = {ox_lit(c, flen), ox_lit(c, 1)};
        fr = ox_call2(c, "multiply", fr, ox_reshape(c, ox_astype(c, win, RX_DT_F64), wd, 2));
    }
    bool onesided = ox_attr_i(c, "onesided", 1) != 0;
    rx_expr *lead[2] = {x->sinfo->dims[0], ox_lit(c, frames)};
    rx_node *y = apply_dft(c, fr, lead, 2, flen, (int)cin, flen, onesided ? flen / 2 + 1 : flen,
                           false);
    return ox_out_node(c, 0, ox_astype(c, y, dt));
}

bool ox_c_mel_weight_matrix(ox_ctx *c)
{
    int64_t nmel, dftlen, rate;
    if (!size_in(c, 0, "num_mel_bins", 0, &nmel) || !size_in(c, 1, "dft_length", 0, &dftlen) ||
        !size_in(c, 2, "sample_rate", 0, &rate))
        return false;
    rx_const *lo = ox_const(c, ox_in(c, 3)), *hi = ox_const(c, ox_in(c, 4));
    if (!lo || !hi || ox_numel(lo) != 1 || ox_numel(hi) != 1) {
        ox_err(c, "lower_edge_hertz and upper_edge_hertz must be constant scalars");
        return false;
    }
    rx_dtype dt = ox_dtype((int32_t)ox_attr_i(c, "output_datatype", 1));
    int64_t nbins = dftlen / 2 + 1;
    if (dt == RX_DT_UNKNOWN || nbins * nmel > OX_SIG_MAX) {
        ox_err(c, dt == RX_DT_UNKNOWN ? "unsupported output_datatype"
                                      : "the matrix is too large");
        return false;
    }
    double flo = ox_cf(lo, 0), fhi = ox_cf(hi, 0);
    double mlo = 2595 * log10(1 + flo / 700), mhi = 2595 * log10(1 + fhi / 700);
    double mstep = (mhi - mlo) / (double)(nmel + 2);
    int64_t *edge = RX_NEWN(c->a, int64_t, nmel + 2);
    for (int64_t i = 0; i < nmel + 2; i++) {
        double hz = 700 * (pow(10, ((double)i * mstep + mlo) / 2595) - 1);
        double b = floor((double)(dftlen + 1) * hz / (double)rate);
        if (!(b >= 0 && b < (double)nbins)) { /* NaN too */
            ox_err(c, "mel edge %lld falls on bin %g, outside 0..%lld (check the edges and "
                   "the sample rate)", (long long)i, b, (long long)nbins - 1);
            return false;
        }
        edge[i] = (int64_t)b;
    }
    int64_t shape[2] = {nbins, nmel};
    rx_const *k = ox_new_const(c, RX_DT_F64, 2, shape);
    double *w = (double *)k->data;
    for (int64_t i = 0; i < nmel; i++) {
        int64_t l = edge[i], ce = edge[i + 1], h = edge[i + 2];
        if (ce == l) w[ce * nmel + i] = 1;
        else
            for (int64_t j = l; j <= ce; j++) w[j * nmel + i] = (double)(j - l) / (double)(ce - l);
        if (h > ce)
            for (int64_t j = ce; j < h; j++) w[j * nmel + i] = (double)(h - j) / (double)(h - ce);
    }
    return ox_out_node(c, 0, ox_astype(c, ox_const_node(c, k), dt));
}
