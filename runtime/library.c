/*
 * library.c — the library registry (name -> destination-passing function) and the
 * built-in BLAS entries.
 *
 * The registry is a small array per context searched linearly; names are resolved
 * once per module at load time (CALL_LIB carries a string index), so lookup cost does
 * not matter. The built-ins reach OpenBLAS through dlopen at their first call so that
 * rxrt links and loads on devices without it; a missing library is a clean call-time
 * error. Which OpenBLAS: $RX_BLAS_LIB when set (a path or soname; only that one), else
 * the OpenMP build of OpenBLAS where Debian installs it (RX_OPENBLAS_OPENMP, from the
 * build's multiarch directory), else whatever libopenblas.so.0 resolves to (Debian's
 * default is the pthreads build). The OpenMP build comes first because the generated
 * kernels run on libgomp's threads: with the pthreads build two pools of busy-waiting
 * threads take turns on the same cores between a kernel and a BLAS call (measured on a
 * decoder block's prefill: 10-15% of its time in sched_yield and spinning).
 * rx_rt_blas_library() names the one that was loaded. The library ABI (int32_t
 * fn(DLTensor *const *, int32_t)) has no context argument, so the built-ins keep the
 * opened handle (and its name, copied) in one process-wide slot initialised under
 * pthread_once — the only global state of the runtime (the handle is never closed; the
 * library stays loaded for the process's life).
 *
 * blas.sgemm / blas.matmul: args A, B, C (C is the destination), f32, dense:
 *   A (m, k), B (k, n), C (m, n);  or batched A (b, m, k), B (b, k, n) or (k, n),
 *   C (b, m, n).
 * The fused matmul entries (what compiler/pass/library_lower.c emits) apply their
 * epilogue in the runtime's own sgemm's write-back (to each tile in L1 after its last
 * block, rx_rt_gemm_act: no pass of their own, on all the product's threads); after a
 * BLAS sgemm, in one pass over C's rows while they are warm:
 *   blas.matmul_bias           (A, B, bias, C)  C = A @ B + bias   (bias (n,), over the
 *                                                last axis)
 *   blas.matmul_bias_ACT       (A, B, bias, C)  C = act(A @ B + bias)
 *   blas.matmul_ACT            (A, B, C)        C = act(A @ B)
 * with ACT one of relu (max(x, 0)), gelu (0.5 x (1 + erf(x / sqrt 2))), silu
 * (x / (1 + exp(-x))), all by rx_rt_epilogue_rows (library_act.c: vectorized, within a few
 * 1e-7 of libm). Cost: the epilogue is O(b m n), against the O(b m n k) of the product.
 * blas.matmul_view (XA, XB, desc, [bias,] C): C = act(alpha * L_A @ L_B [+ bias]) where
 * each operand L is a strided view of its base X (dense row-major, any rank): L =
 * permute(repeat(reshape(X, S), R), P) (compiler/pass/library_view.c has the model).
 * desc is an int64 1-D tensor: the version, alpha (f64 bits), with version 2 the
 * epilogue's act (RX_RT_ACT_*: 0 none, 1 relu, 2 gelu, 3 silu, 4 gelu_tanh) and a bias
 * flag (1: the f32 (n,) tensor bias comes after desc, added over C's last axis before
 * act; version 1 has neither), then per operand r (2..8), S (r extents: > 0 a
 * literal, -(1 + i) X's dim i, 0 the one inferred from X's element count), R (r factors
 * >= 1: L's index i on that axis reads i / R) and P (a permutation). C (b.., m, n) is
 * dense; each operand's axes but the last two are right-aligned with C's batch axes
 * (extent 1 broadcasts). A weight B (no batch axes) with A's items one after another is
 * one product of batch x m rows (view_merge_batch); with few-row items at a uniform
 * stride (nn.MultiheadAttention's (s, b, d) transpose) it is m products of batch rows
 * (view_swap_rows). Each batch item's matrix must have one unit stride (the base's
 * innermost axis as L's last axis: no transpose, or as its second last: transposed) and
 * no repeat; the other stride is lda / ldb. Everything is checked against the actual
 * shapes (code 4 on a mismatch, never an out-of-bounds read). One sgemm per batch item,
 * the items split over one libgomp region (rx_rt_parallel, threads.c) when the BLAS is
 * OpenBLAS's OpenMP or sequential build (its sgemm then runs one thread inside a
 * region); else one after another, each on the BLAS's own threads. The epilogue is the
 * fused entries': in the own sgemm's write-back, else a pass over each item's rows right
 * after its sgemm (rx_rt_epilogue_rows).
 * blas.conv2d (convolutions on the same sgemm, with their epilogues) is library_conv.c's.
 * "sgemm" above is, per call, the runtime's own (library_gemm.c) or the BLAS's, as
 * rx_rt_gemm_pick says ($RX_GEMM); the own one always runs inside a region.
 * The runtime-native "rt.*" functions live in library_rt.c; the table of every
 * built-in name (RX_RT_BUILTIN_LIBS below) is the one list both the registration and
 * rx_rt_builtin_library_names read, so the compiler's check and the loader agree.
 */
#include "rt_int.h"

#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { BLAS_OK = 0, BLAS_NOLIB = 1, BLAS_ARGS = 2, BLAS_DTYPE = 3, BLAS_SHAPE = 4 };

/* cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) */
typedef rx_rt_sgemm_fn sgemm_fn;

static pthread_once_t blas_once = PTHREAD_ONCE_INIT; /* guards blas_sgemm, blas_name */
static sgemm_fn blas_sgemm;                           /* process-wide, see the essay */
static char blas_name[512];                           /* the library blas_sgemm is from */
static void *blas_handle;                             /* its dlopen handle (threads.c) */

/* cblas_sgemm from the library `name`, or false. */
static bool blas_try(const char *name)
{
    if (strlen(name) >= sizeof blas_name) return false; /* no such library name */
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) return false;
    void *sym = dlsym(h, "cblas_sgemm");
    if (!sym) {
        dlclose(h);
        return false;
    }
    memcpy(&blas_sgemm, &sym, sizeof blas_sgemm);
    memcpy(blas_name, name, strlen(name) + 1);
    blas_handle = h;
    return true;
}

static void blas_open(void)
{
    const char *env = getenv("RX_BLAS_LIB");
    if (env && *env) {
        blas_try(env);
        return;
    }
#ifdef RX_OPENBLAS_OPENMP
    if (blas_try(RX_OPENBLAS_OPENMP)) return;
#endif
    blas_try("libopenblas.so.0");
}

rx_rt_sgemm_fn rx_rt_sgemm(void)
{
    pthread_once(&blas_once, blas_open);
    return blas_sgemm;
}

const char *rx_rt_blas_library(void)
{
    pthread_once(&blas_once, blas_open);
    return blas_sgemm ? blas_name : NULL;
}

void *rx_rt_blas_handle(void)
{
    pthread_once(&blas_once, blas_open);
    return blas_handle;
}

static const char *blas_strerr(int32_t code)
{
    switch (code) {
    case BLAS_NOLIB: {
        const char *env = getenv("RX_BLAS_LIB");
        return env && *env ? "OpenBLAS is not available (dlopen of $RX_BLAS_LIB failed)"
                           : "OpenBLAS is not available (dlopen libopenblas.so.0 failed)";
    }
    case BLAS_ARGS: return "expects 3 tensors (A, B, C)";
    case BLAS_DTYPE: return "expects float32 tensors";
    case BLAS_SHAPE: return "shape mismatch (A (b?, m, k) @ B (b?, k, n) -> C (b?, m, n))";
    default: return NULL;
    }
}

/* The fused entries' messages: blas_strerr's, with the bias. */
static const char *blas_fused_strerr(int32_t code)
{
    switch (code) {
    case BLAS_ARGS: return "expects 3 tensors (A, B, C), or 4 (A, B, bias, C) with a bias";
    case BLAS_SHAPE:
        return "shape mismatch (A (b?, m, k) @ B (b?, k, n) [+ bias (n,)] -> C (b?, m, n))";
    default: return blas_strerr(code);
    }
}

static bool is_f32(const DLTensor *t)
{
    return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

static const float *fdata(const DLTensor *t)
{
    return (const float *)(const void *)((const char *)t->data + t->byte_offset);
}

/* One batched product: item i of C = A @ B (blas_gemm's loop body). */
typedef struct gemm_items {
    sgemm_fn gemm;
    const float *a, *b, *bias;
    float *c;
    int64_t m, n, k, bstride, batch;
    int act;
    bool epi;
} gemm_items;

static void gemm_item(const gemm_items *g, int64_t i)
{
    int64_t m = g->m, n = g->n, k = g->k;
    if (g->epi) { /* k 0 included: C = epilogue(0) */
        rx_rt_gemm_act(false, false, m, n, k, 1.0f, g->a + i * m * k, k, g->b + i * g->bstride, n,
                       0.0f, g->c + i * m * n, n, true, g->bias, g->act);
    } else if (k == 0) {
        memset(g->c + i * m * n, 0, sizeof(float) * (size_t)(m * n));
    } else { /* CblasRowMajor = 101, CblasNoTrans = 111 */
        g->gemm(101, 111, 111, (int)m, (int)n, (int)k, 1.0f, g->a + i * m * k, (int)k,
                g->b + i * g->bstride, (int)n, 0.0f, g->c + i * m * n, (int)n);
    }
}

static void gemm_items_worker(void *ud, int t, int nt)
{
    const gemm_items *g = ud;
    for (int64_t i = g->batch * t / nt; i < g->batch * (t + 1) / nt; i++) gemm_item(g, i);
}

/* C = A @ B for the shapes of the essay: the whole of blas.matmul, and the first step
 * of the fused entries. *rows and *cols get C's row count (b * m) and n. With epi, the
 * own sgemm applies bias (may be NULL) and relu in its write-back (rx_rt_gemm_epi) and
 * *epi_done says so; the BLAS's leaves them to the caller. */
static int32_t blas_gemm(const DLTensor *A, const DLTensor *B, DLTensor *C, int64_t *rows,
                         int64_t *cols, bool epi, const float *bias, int act, bool *epi_done)
{
    *epi_done = false;
    if (!is_f32(A) || !is_f32(B) || !is_f32(C)) return BLAS_DTYPE;
    int64_t batch = 1, m, k, n;
    if (A->ndim == 2 && B->ndim == 2 && C->ndim == 2) {
        m = A->shape[0], k = A->shape[1], n = B->shape[1];
        if (B->shape[0] != k || C->shape[0] != m || C->shape[1] != n) return BLAS_SHAPE;
    } else if (A->ndim == 3 && C->ndim == 3 && (B->ndim == 3 || B->ndim == 2)) {
        batch = A->shape[0], m = A->shape[1], k = A->shape[2];
        n = B->shape[B->ndim - 1];
        if (B->shape[B->ndim - 2] != k || C->shape[0] != batch || C->shape[1] != m ||
            C->shape[2] != n || (B->ndim == 3 && B->shape[0] != batch))
            return BLAS_SHAPE;
    } else {
        return BLAS_SHAPE;
    }
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) return BLAS_SHAPE;
    pthread_once(&blas_once, blas_open);
    const float *a = fdata(A), *b = fdata(B);
    float *c = (float *)(uintptr_t)fdata(C);
    int64_t bstride = B->ndim == 3 ? k * n : 0;
    if (B->ndim == 2 && batch > 1 && batch <= INT32_MAX / (m ? m : 1)) {
        m *= batch; /* one shared B: the batch is more rows of one product */
        batch = 1;
    }
    sgemm_fn gemm = rx_rt_gemm_pick(blas_sgemm, m, n, k);
    if (!gemm) return BLAS_NOLIB;
    *epi_done = epi && gemm == rx_rt_gemm;
    gemm_items g = {gemm, a, b, bias, c, m, n, k, bstride, batch, act, *epi_done};
    /* Items too small to split themselves (our own sgemm threads a product from 2^19
     * multiply-adds) but many: the items over the threads, each on one (inside the
     * region our sgemm does not split). DCN v2's 2048 items of (109 x 4) @ (4 x 1) ran on
     * one thread, a call each. The BLAS's items stay in the loop (its own threads). */
    int id, nt;
    rx_rt_parallel_id(&id, &nt);
    int64_t work = m * n * (k ? k : 1);
    if (m > 0 && n > 0 && batch > 1 && nt == 1 && (gemm == rx_rt_gemm || gemm == rx_rt_gemm_col1) &&
        work < (1 << 19) && batch * work >= (1 << 19)) {
        rx_rt_parallel_for(gemm_items_worker, &g);
    } else {
        for (int64_t i = 0; i < batch && m > 0 && n > 0; i++) gemm_item(&g, i);
    }
    *rows = batch * m;
    *cols = n;
    return BLAS_OK;
}

static int32_t blas_sgemm_entry(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 3) return BLAS_ARGS;
    int64_t rows, cols;
    bool epi_done;
    return blas_gemm(args[0], args[1], args[2], &rows, &cols, false, NULL, RX_RT_ACT_NONE,
                     &epi_done);
}

/* ---- blas.matmul_view ---- */

/* The descriptor: version, alpha[, act, bias flag] (VIEW_HDR words, VIEW_HDR_EPI for
 * version 2), then the operands. */
enum { VIEW_MAXR = 8, VIEW_HDR = 2, VIEW_HDR_EPI = 4 };

/* One operand of blas.matmul_view as the logical tensor L it reads (the essay): its
 * rank, extents, element strides into the base and repeat divisors, per L axis. */
typedef struct view_operand {
    int r;
    int64_t size[VIEW_MAXR], stride[VIEW_MAXR], div[VIEW_MAXR];
} view_operand;

/* Decodes the operand that starts at d[*at] (of nd words) over base X into *o and
 * advances *at; BLAS_SHAPE for a malformed descriptor or one X does not fit. */
static int32_t view_decode(const int64_t *d, int64_t nd, int64_t *at, const DLTensor *X,
                           view_operand *o)
{
    if (*at >= nd) return BLAS_SHAPE;
    int64_t r = d[*at];
    if (r < 2 || r > VIEW_MAXR || *at + 1 + 3 * r > nd) return BLAS_SHAPE;
    const int64_t *S = d + *at + 1, *R = S + r, *P = R + r;
    *at += 1 + 3 * r;
    int64_t sv[VIEW_MAXR], known = 1, numel = 1;
    int inferred = -1;
    for (int32_t i = 0; i < X->ndim; i++)
        if (__builtin_mul_overflow(numel, X->shape[i], &numel)) return BLAS_SHAPE;
    for (int i = 0; i < r; i++) {
        if (S[i] > 0) sv[i] = S[i];
        else if (S[i] < 0 && -S[i] - 1 < X->ndim) sv[i] = X->shape[-S[i] - 1];
        else if (S[i] == 0 && inferred < 0) {
            inferred = i;
            continue;
        } else return BLAS_SHAPE;
        if (R[i] < 1 || __builtin_mul_overflow(known, sv[i], &known)) return BLAS_SHAPE;
    }
    if (inferred >= 0) {
        if (R[inferred] < 1 || known == 0 || numel % known) return BLAS_SHAPE;
        sv[inferred] = numel / known;
    } else if (known != numel) {
        return BLAS_SHAPE;
    }
    int64_t vstride[VIEW_MAXR], st = 1;
    for (int i = (int)r - 1; i >= 0; i--) vstride[i] = st, st *= sv[i];
    bool seen[VIEW_MAXR] = {false};
    o->r = (int)r;
    for (int j = 0; j < r; j++) {
        if (P[j] < 0 || P[j] >= r || seen[P[j]]) return BLAS_SHAPE;
        seen[P[j]] = true;
        if (__builtin_mul_overflow(sv[P[j]], R[P[j]], &o->size[j])) return BLAS_SHAPE;
        o->stride[j] = vstride[P[j]];
        o->div[j] = R[P[j]];
    }
    return BLAS_OK;
}

/* The transpose flag and leading dimension of L's matrix (axes r-2, r-1: rows x cols):
 * one of the two has unit stride (the base's innermost axis). BLAS_SHAPE when neither
 * has or a matrix axis is repeated. */
static int32_t view_matrix(const view_operand *o, int *trans, int64_t *ld)
{
    int64_t rows = o->size[o->r - 2], cols = o->size[o->r - 1];
    if (o->div[o->r - 2] != 1 || o->div[o->r - 1] != 1) return BLAS_SHAPE;
    if (o->stride[o->r - 1] == 1 || cols <= 1) {
        *trans = 111; /* CblasNoTrans */
        *ld = rows <= 1 || o->stride[o->r - 2] < cols ? (cols > 1 ? cols : 1) : o->stride[o->r - 2];
        return rows <= 1 || o->stride[o->r - 2] >= cols ? BLAS_OK : BLAS_SHAPE;
    }
    if (o->stride[o->r - 2] == 1 || rows <= 1) {
        *trans = 112; /* CblasTrans */
        *ld = cols <= 1 ? (rows > 1 ? rows : 1) : o->stride[o->r - 1];
        return cols <= 1 || o->stride[o->r - 1] >= rows ? BLAS_OK : BLAS_SHAPE;
    }
    return BLAS_SHAPE;
}

/* The element offset of batch item c_idx (C's batch indices, nb of them) in operand o,
 * its batch axes right-aligned with C's, extent-1 axes broadcast. */
static int64_t view_offset(const view_operand *o, const int64_t *c_idx, int nb)
{
    int64_t off = 0;
    int ob = o->r - 2;
    for (int j = 0; j < ob; j++) {
        int64_t i = o->size[j] == 1 ? 0 : c_idx[nb - ob + j];
        off += i / o->div[j] * o->stride[j];
    }
    return off;
}

/* One blas.matmul_view call: batch items [lo, hi) run by view_items. */
typedef struct view_job {
    const view_operand *a, *b;
    const float *pa, *pb;
    float *c;
    const int64_t *cshape;
    int nb;
    int64_t batch, m, n, k, lda, ldb;
    int ta, tb;
    float alpha;
    sgemm_fn gemm;     /* rx_rt_gemm or the BLAS's (rx_rt_gemm_pick) */
    const float *bias; /* the epilogue: C[.., j] += bias[j] (NULL: none), then act */
    int act;           /* RX_RT_ACT_* (library_act.c) */
} view_job;

static void view_items(const view_job *j, int64_t lo, int64_t hi)
{
    int64_t idx[VIEW_MAXR] = {0}, rest = lo;
    for (int d = j->nb - 1; d >= 0; d--) idx[d] = rest % j->cshape[d], rest /= j->cshape[d];
    for (int64_t t = lo; t < hi && j->m && j->n; t++) {
        float *ct = j->c + t * j->m * j->n;
        const float *at = j->pa + view_offset(j->a, idx, j->nb);
        const float *bt = j->pb + view_offset(j->b, idx, j->nb);
        if (j->gemm == rx_rt_gemm) { /* the epilogue in the write-back; k 0 included */
            rx_rt_gemm_act(j->ta == 112, j->tb == 112, j->m, j->n, j->k, j->alpha, at, j->lda, bt,
                           j->ldb, 0.0f, ct, j->n, true, j->bias, j->act);
        } else {
            if (j->k == 0) memset(ct, 0, sizeof(float) * (size_t)(j->m * j->n));
            else /* CblasRowMajor = 101 */
                j->gemm(101, j->ta, j->tb, (int)j->m, (int)j->n, (int)j->k, j->alpha, at,
                        (int)j->lda, bt, (int)j->ldb, 0.0f, ct, (int)j->n);
            rx_rt_epilogue_rows(ct, j->m, j->n, j->n, j->bias, j->act); /* while warm */
        }
        for (int d = j->nb - 1; d >= 0 && ++idx[d] == j->cshape[d]; d--) idx[d] = 0;
    }
}

/* Folds the batch into the rows when that is one product: B without batch axes (a
 * weight), A's rows not transposed and its batch items one after another at m rows
 * each (a reshape of a contiguous tensor: nn.MultiheadAttention's in-projection of a
 * (s, 1, d) view at batch 1), C contiguous as always. One sgemm of batch * m rows then
 * replaces batch thin ones. */
static void view_merge_batch(view_job *j)
{
    const view_operand *a = j->a;
    if (j->b->r != 2 || j->ta != 111 || a->r - 2 != j->nb || j->batch < 2 ||
        j->m > INT32_MAX / j->batch)
        return;
    int64_t want = j->m * j->lda;
    for (int d = j->nb - 1; d >= 0; d--) {
        if (a->div[d] != 1 || a->size[d] != j->cshape[d] ||
            (a->size[d] > 1 && a->stride[d] != want))
            return;
        want *= a->size[d];
    }
    j->m *= j->batch;
    j->batch = 1;
}

/* Runs the call as m products of `batch` rows when that is bigger: B without batch axes
 * (a weight) and few rows per item, one batch axis whose items are rows of A at a uniform
 * stride (PyTorch's nn.MultiheadAttention with batch_first=True computes its projections
 * on a (s, b, d) transpose of a contiguous (b, s, d) input: s items of b rows each, rows
 * s * d apart, items d apart). Row r of every item, C[t, r, :] = A_t[r, :] @ B, is then
 * one product of `batch` rows over t: A from a + r * lda at stride A's batch stride, C from
 * c + r * n at stride m * n (C is dense). False (nothing done) when the view is not such. */
static bool view_swap_rows(const view_job *j)
{
    const view_operand *a = j->a;
    if (j->b->r != 2 || j->nb != 1 || a->r != 3 || j->ta != 111 || j->batch < 2 ||
        j->m >= j->batch || j->m == 0 || j->n == 0 || j->k == 0 || a->div[0] != 1 ||
        a->size[0] != j->cshape[0] || a->stride[0] < j->k || a->stride[0] > INT32_MAX ||
        j->m * j->n > INT32_MAX || j->batch > INT32_MAX)
        return false;
    sgemm_fn gemm = rx_rt_gemm_pick(blas_sgemm, j->batch, j->n, j->k);
    if (!gemm) return false;
    for (int64_t r = 0; r < j->m; r++) { /* CblasRowMajor = 101 */
        float *cr = j->c + r * j->n;
        if (gemm == rx_rt_gemm) {
            rx_rt_gemm_act(false, j->tb == 112, j->batch, j->n, j->k, j->alpha, j->pa + r * j->lda,
                           a->stride[0], j->pb, j->ldb, 0.0f, cr, j->m * j->n, true, j->bias,
                           j->act);
            continue;
        }
        gemm(101, j->ta, j->tb, (int)j->batch, (int)j->n, (int)j->k, j->alpha,
             j->pa + r * j->lda, (int)a->stride[0], j->pb, (int)j->ldb, 0.0f, cr,
             (int)(j->m * j->n));
        rx_rt_epilogue_rows(cr, j->batch, j->n, j->m * j->n, j->bias, j->act);
    }
    return true;
}

/* A thread of the parallel region: its contiguous share of the batch items. */
static void view_worker(void *p)
{
    const view_job *j = p;
    int id, n;
    rx_rt_parallel_id(&id, &n);
    int64_t per = j->batch / n, extra = j->batch % n;
    int64_t lo = id * per + (id < extra ? id : extra), hi = lo + per + (id < extra);
    view_items(j, lo, hi);
}

/* Whether sgemm may be called from inside a parallel region: OpenBLAS's OpenMP build
 * runs one thread there (its own count is used outside), a sequential build too; the
 * pthreads build (openblas_get_parallel() 1) or a BLAS that does not say would start
 * its own threads under each of ours. */
static bool blas_in_region_ok(void)
{
    void *g = dlsym(blas_handle, "openblas_get_parallel");
    if (!g) return false;
    int (*f)(void);
    memcpy(&f, &g, sizeof f);
    int kind = f();
    return kind == 0 || kind == 2;
}

/* blas.matmul_view (XA, XB, desc, [bias,] C): C = act(alpha * L_A @ L_B [+ bias]), the
 * operands views of the bases XA and XB described by desc (the essay). */
static int32_t blas_matmul_view(DLTensor *const *args, int32_t nargs)
{
    if (nargs < 3) return BLAS_ARGS;
    const DLTensor *XA = args[0], *XB = args[1], *D = args[2];
    if (D->dtype.code != kDLInt || D->dtype.bits != 64 || D->dtype.lanes != 1 || D->ndim != 1)
        return BLAS_DTYPE;
    const int64_t *d = (const int64_t *)(const void *)((const char *)D->data + D->byte_offset);
    int64_t nd = D->shape[0], at = d[0] == 2 ? VIEW_HDR_EPI : VIEW_HDR;
    if (nd < at || (d[0] != 1 && d[0] != 2)) return BLAS_SHAPE;
    int act = d[0] == 2 ? (int)d[2] : RX_RT_ACT_NONE;
    bool has_bias = d[0] == 2 && d[3];
    if (act < RX_RT_ACT_NONE || act > RX_RT_ACT_GELU_TANH || (d[0] == 2 && (d[3] & ~1)))
        return BLAS_SHAPE;
    if (nargs != 4 + has_bias) return BLAS_ARGS;
    DLTensor *C = args[nargs - 1];
    const DLTensor *bt = has_bias ? args[3] : NULL;
    if (!is_f32(XA) || !is_f32(XB) || !is_f32(C) || (bt && !is_f32(bt))) return BLAS_DTYPE;
    double alpha;
    memcpy(&alpha, &d[1], sizeof alpha);
    view_operand a, b;
    int32_t rc;
    if ((rc = view_decode(d, nd, &at, XA, &a)) || (rc = view_decode(d, nd, &at, XB, &b)))
        return rc;
    if (at != nd || C->ndim < 2 || C->ndim > VIEW_MAXR || a.r > C->ndim || b.r > C->ndim)
        return BLAS_SHAPE;
    int nb = C->ndim - 2;
    int64_t m = C->shape[nb], n = C->shape[nb + 1], k = a.size[a.r - 1], batch = 1;
    if (a.size[a.r - 2] != m || b.size[b.r - 2] != k || b.size[b.r - 1] != n ||
        (bt && (bt->ndim != 1 || bt->shape[0] != n)))
        return BLAS_SHAPE;
    for (int j = 0; j < nb; j++) {
        for (int w = 0; w < 2; w++) {
            const view_operand *o = w ? &b : &a;
            int oj = j - (nb - (o->r - 2));
            if (oj >= 0 && o->size[oj] != 1 && o->size[oj] != C->shape[j]) return BLAS_SHAPE;
        }
        batch *= C->shape[j];
    }
    int ta, tb;
    int64_t lda, ldb;
    if ((rc = view_matrix(&a, &ta, &lda)) || (rc = view_matrix(&b, &tb, &ldb))) return rc;
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX)
        return BLAS_SHAPE;
    pthread_once(&blas_once, blas_open);
    view_job j = {&a, &b, fdata(XA), fdata(XB), (float *)(uintptr_t)fdata(C), C->shape, nb,
                  batch, m, n, k, lda, ldb, ta, tb, (float)alpha, NULL, bt ? fdata(bt) : NULL,
                  act};
    view_merge_batch(&j);
    if (!(j.gemm = rx_rt_gemm_pick_items(blas_sgemm, b.r == 2 ? 1 : j.batch, j.m, n, k)))
        return BLAS_NOLIB;
    if (view_swap_rows(&j)) return BLAS_OK;
    if (j.batch < 2 || !m || !n ||
        (j.gemm != rx_rt_gemm && j.gemm != rx_rt_matvec && !blas_in_region_ok()) ||
        rx_rt_parallel(view_worker, &j) == 0)
        view_items(&j, 0, j.batch);
    return BLAS_OK;
}

static const char *blas_view_strerr(int32_t code)
{
    switch (code) {
    case BLAS_ARGS:
        return "expects 4 tensors (A base, B base, view descriptor, C), 5 with the "
               "descriptor's bias (A base, B base, descriptor, bias, C)";
    case BLAS_DTYPE: return "expects float32 bases, bias and C and an int64 1-D descriptor";
    case BLAS_SHAPE:
        return "the view descriptor does not fit the bases and C (see library.c's essay)";
    default: return blas_strerr(code);
    }
}

/* C = act(A @ B [+ bias]): the fused entries. With a bias, args are (A, B, bias, C). */
static int32_t blas_fused(DLTensor *const *args, int32_t nargs, bool bias, int act)
{
    if (nargs != (bias ? 4 : 3)) return BLAS_ARGS;
    DLTensor *C = args[nargs - 1];
    const DLTensor *bt = bias ? args[2] : NULL;
    if (bt && !is_f32(bt)) return BLAS_DTYPE;
    int64_t rows, cols;
    if (bt && (bt->ndim != 1 || C->ndim < 1 || bt->shape[0] != C->shape[C->ndim - 1]))
        return is_f32(C) ? BLAS_SHAPE : BLAS_DTYPE;
    const float *b = bt ? fdata(bt) : NULL;
    bool epi_done; /* bias and activation in the own sgemm's write-back */
    int32_t rc = blas_gemm(args[0], args[1], C, &rows, &cols, true, b, act, &epi_done);
    if (rc != BLAS_OK || epi_done) return rc;
    rx_rt_epilogue_rows((float *)(uintptr_t)fdata(C), rows, cols, cols, b, act);
    return BLAS_OK;
}

#define BLAS_FUSED(fname, bias, act)                                   \
    static int32_t fname(DLTensor *const *args, int32_t nargs)         \
    {                                                                  \
        return blas_fused(args, nargs, bias, act);                     \
    }
BLAS_FUSED(blas_matmul_bias, true, RX_RT_ACT_NONE)
BLAS_FUSED(blas_matmul_bias_relu, true, RX_RT_ACT_RELU)
BLAS_FUSED(blas_matmul_bias_gelu, true, RX_RT_ACT_GELU)
BLAS_FUSED(blas_matmul_bias_silu, true, RX_RT_ACT_SILU)
BLAS_FUSED(blas_matmul_relu, false, RX_RT_ACT_RELU)
BLAS_FUSED(blas_matmul_gelu, false, RX_RT_ACT_GELU)
BLAS_FUSED(blas_matmul_silu, false, RX_RT_ACT_SILU)
#undef BLAS_FUSED

int rx_rt_register_library(rx_rt_ctx *ctx, const char *name, rx_rt_libfn fn,
                           const char *(*strerr)(int32_t code))
{
    int rc = 0;
    pthread_mutex_lock(&ctx->lib_mu);
    for (size_t i = 0; i < ctx->nlibs; i++)
        if (!strcmp(ctx->libs[i].name, name)) {
            ctx->libs[i].fn = fn;
            ctx->libs[i].strerr = strerr;
            goto out;
        }
    if (ctx->nlibs == ctx->clibs) {
        size_t cap = ctx->clibs ? ctx->clibs * 2 : 8;
        rx_rt_libentry *nl = realloc(ctx->libs, sizeof *nl * cap);
        if (!nl) {
            rc = -1;
            goto out;
        }
        ctx->libs = nl;
        ctx->clibs = cap;
    }
    char *copy = strdup(name);
    if (!copy) {
        rc = -1;
        goto out;
    }
    ctx->libs[ctx->nlibs++] = (rx_rt_libentry){copy, fn, strerr};
out:
    pthread_mutex_unlock(&ctx->lib_mu);
    return rc;
}

int rx_rt_lib_find(rx_rt_ctx *ctx, const char *name, rx_rt_libentry *out)
{
    int rc = -1;
    pthread_mutex_lock(&ctx->lib_mu);
    for (size_t i = 0; i < ctx->nlibs; i++)
        if (!strcmp(ctx->libs[i].name, name)) {
            *out = ctx->libs[i];
            rc = 0;
        }
    pthread_mutex_unlock(&ctx->lib_mu);
    return rc;
}

/* clblast.matmul on CPU tensors: it runs on OpenCL device tensors only, where the VM
 * calls CLBlast instead (vm_device.c); an artifact for cpu never names it (vmgen). */
static int32_t clblast_on_host(DLTensor *const *args, int32_t nargs)
{
    (void)args, (void)nargs;
    return 1;
}

static const char *clblast_on_host_strerr(int32_t code)
{
    (void)code;
    return "runs on OpenCL device tensors only (artifacts built for opencl,clblast=1)";
}

/* cublas.matmul on CPU tensors: it runs on CUDA device tensors only (vm_device.c). */
static const char *cublas_on_host_strerr(int32_t code)
{
    (void)code;
    return "runs on CUDA device tensors only (artifacts built for cuda, cublas=1)";
}

/* The built-in library functions, sorted by name: what every context registers and
 * what rx_rt_builtin_library_names lists. */
#define RX_RT_BUILTIN_LIBS(X)                                               \
    X("blas.conv2d", rx_rt_conv2d, rx_rt_conv2d_strerr)                     \
    X("blas.matmul", blas_sgemm_entry, blas_strerr)                         \
    X("blas.matmul_bias", blas_matmul_bias, blas_fused_strerr)              \
    X("blas.matmul_bias_gelu", blas_matmul_bias_gelu, blas_fused_strerr)    \
    X("blas.matmul_bias_relu", blas_matmul_bias_relu, blas_fused_strerr)    \
    X("blas.matmul_bias_silu", blas_matmul_bias_silu, blas_fused_strerr)    \
    X("blas.matmul_gelu", blas_matmul_gelu, blas_fused_strerr)              \
    X("blas.matmul_relu", blas_matmul_relu, blas_fused_strerr)              \
    X("blas.matmul_silu", blas_matmul_silu, blas_fused_strerr)              \
    X("blas.matmul_view", blas_matmul_view, blas_view_strerr)               \
    X("blas.sgemm", blas_sgemm_entry, blas_strerr)                          \
    X("clblast.matmul", clblast_on_host, clblast_on_host_strerr)            \
    X("cublas.matmul", clblast_on_host, cublas_on_host_strerr)              \
    X("rt.concat", rx_rt_concat, rx_rt_concat_strerr)                       \
    X("rt.cumsum", rx_rt_cumsum, rx_rt_cumsum_strerr)                       \
    X("rt.group_norm", rx_rt_group_norm, rx_rt_group_norm_strerr)           \
    X("rt.matmul", rx_rt_matmul, rx_rt_matmul_strerr)                       \
    X("rt.pool2d", rx_rt_pool2d, rx_rt_pool2d_strerr)                       \
    X("rt.qconv2d", rx_rt_qconv2d, rx_rt_qconv2d_strerr)                   \
    X("rt.qmatmul", rx_rt_qmatmul, rx_rt_qmatmul_strerr)                   \
    X("rt.resize2d", rx_rt_resize2d, rx_rt_resize2d_strerr)                 \
    X("rt.rms_norm", rx_rt_rms_norm, rx_rt_rms_norm_strerr)                 \
    X("rt.rnn", rx_rt_rnn, rx_rt_rnn_strerr)                                \
    X("rt.scatter", rx_rt_scatter, rx_rt_scatter_strerr)                    \
    X("rt.topk", rx_rt_topk, rx_rt_topk_strerr)

const char *const *rx_rt_builtin_library_names(void)
{
#define RX_RT_X_NAME(name, fn, strerr) name,
    static const char *const names[] = {RX_RT_BUILTIN_LIBS(RX_RT_X_NAME) NULL};
#undef RX_RT_X_NAME
    return names;
}

int rx_rt_lib_builtins(rx_rt_ctx *ctx)
{
#define RX_RT_X_REG(name, fn, strerr) \
    if (rx_rt_register_library(ctx, name, fn, strerr)) return -1;
    RX_RT_BUILTIN_LIBS(RX_RT_X_REG)
#undef RX_RT_X_REG
    return 0;
}

void rx_rt_lib_close(rx_rt_ctx *ctx)
{
    (void)ctx; /* the OpenBLAS handle is process-wide (see the essay) */
}
