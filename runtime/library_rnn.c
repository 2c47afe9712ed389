/*
 * library_rnn.c — rt.rnn: the sequential recurrences of ONNX's LSTM, GRU and RNN (the
 * op nn.rnn, docs/ops.md) for any sequence length known only at run time.
 *
 *   rt.rnn (x, w, r, b, h0, c0, p, params, y)   all f32 but params (i64 (3,)):
 *     x  (T, B, I)        the sequence, time major
 *     w  (D, G*H, I)      input weights, gates stacked as ONNX stacks them
 *                         (LSTM i o f c, GRU z r h, RNN one gate; G = 4, 3, 1)
 *     r  (D, G*H, H)      recurrent weights
 *     b  (D, 2*G*H)       Wb then Rb
 *     h0, c0 (D, B, H)    initial hidden and cell states (c0 read by LSTM only)
 *     p  (D, 3*H)         LSTM peepholes i o f (zeros for none; read by LSTM only)
 *     params              mode (0 LSTM, 1 GRU, 2 RNN tanh, 3 RNN relu), direction
 *                         (0 forward, 1 reverse, 2 bidirectional: D = 2), GRU's
 *                         linear_before_reset (0 or 1)
 *     y  (T+2, D, B, H)   rows 0..T-1: the hidden state after each step (ONNX Y; a
 *                         reverse direction's row t is the state after reading x[t]);
 *                         row T: the last hidden state (Y_h); row T+1: the last cell
 *                         state (Y_c) for LSTM, a copy of row T otherwise.
 *   The cell equations are ONNX's with the default activations (sigmoid, tanh, tanh;
 *   relu for mode 3). Codes: 2 arguments, 3 dtype, 4 shape, 5 params, 6 out of memory.
 *
 * How it runs: every direction's job is set up first, then one parallel region (or
 * the calling thread alone) runs them all (rnn_threads below decides how many threads):
 * thread t runs direction t % D, and the threads of one direction each own a range of
 * its hidden units (whole blocks of NR = 16). A bidirectional layer on two threads is
 * one direction per thread and no barrier; a small layer (a step of a few microseconds)
 * runs on one thread with no region. Each thread, for its direction and units,
 *   Step 1: packs its units' rows of W and of R (every gate) into 16-unit panels (8 x 8
 *           register transposes on the AVX2 path), and
 *           computes its columns of the input's share of every gate for all T steps,
 *           XG = x (T*B, I) @ W^T + Wb (+ Rb, folded for every gate but GRU's h gate
 *           with linear_before_reset), into a (T, B, G*H) workspace of the direction. A
 *           thread reads back only the columns it wrote, so no barrier follows.
 *   Step 2: for each step, multiplies the previous hidden state's B rows with its R
 *           panels in MR x NR register tiles (MR = 8 rows: one 16-lane register a row
 *           with AVX-512 F + DQ, two 4-row halves of two 8-lane registers with AVX2 +
 *           FMA, portable C otherwise; chosen by cpuid, capped by $RX_RNN_KERNEL =
 *           avx2 | portable, which the tests use to check the lower paths; with one or
 *           two state rows the AVX-512 tile takes four gates' panels at once instead, so
 *           its 8 FMA chains are gates x rows, not copies of row 0; every vector tile
 *           sums each lane in k order, so they all give the same bits), applies the
 *           gate nonlinearities (16 or 8 units at a time, rt_rnn_lanes.h: an exp-based
 *           sigmoid and tanh within a few ulp of libm, the same bits at both widths,
 *           a block's last units when H is not a multiple of the width through lane
 *           masks; libm on the portable path) and writes its units of the new state
 *           straight into y's row t, which is the next step's previous state. When
 *           several threads share a direction a barrier ends each step (GRU without
 *           linear_before_reset has a second one: (r * H) must be complete before its
 *           product with Rh; the barrier is the region's, so every thread, whatever
 *           its direction, takes the same barriers: the directions have the same T).
 *           No thread is started per step. The cell state lives in y's row T+1 (each
 *           unit's owner alone reads and writes it). When the initial state is all
 *           zeros (PyTorch's default), the first step's products with R are taken as
 *           zero and skipped.
 * Cost: O(T B G H (I + H)) flops; the workspace is, per direction, T*B*G*H floats plus
 * the packed panels (G*(I + H)*H, rounded up to whole blocks), kept by the calling thread for its
 * next call when it is at most 16 MiB (no fresh pages to fault in each call). Each step
 * reads R's panels once from cache (G*H*H floats split over the threads); at B = 4 a
 * step runs near the FMA peak (measured: a (4, 32, 256) -> 512 LSTM's steps at ~31
 * GFLOP/s per Zen1 core). A dot-product form that reads R as stored (no panels) was
 * tried and is 1.4x slower: its 4 + 2 vector loads per 8 FMAs saturate Zen1's loads.
 */
#include "rt_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define RNN_X86 1
#endif

enum { RNN_OK = 0, RNN_ARGS = 2, RNN_DTYPE = 3, RNN_SHAPE = 4, RNN_PARAMS = 5, RNN_OOM = 6 };
enum { M_LSTM, M_GRU, M_TANH, M_RELU };

const char *rx_rt_rnn_strerr(int32_t code)
{
    switch (code) {
    case RNN_ARGS: return "expects 9 tensors (x, w, r, b, h0, c0, p, params, y)";
    case RNN_DTYPE: return "expects float32 tensors and int64 params";
    case RNN_SHAPE:
        return "shapes must be x (T, B, I), w (D, G*H, I), r (D, G*H, H), b (D, 2*G*H), "
               "h0 and c0 (D, B, H), p (D, 3*H), y (T+2, D, B, H)";
    case RNN_PARAMS: return "params must be (mode 0-3, direction 0-2, linear_before_reset 0-1)";
    case RNN_OOM: return "out of memory for the gate workspace";
    default: return NULL;
    }
}

/* ---- the recurrent product on packed panels ----
 * R's rows are packed once per direction into panels of NR = 16 hidden units: block q
 * (units 16q .. 16q+15, zeros past H), gate g, column k holds R[g*H + 16q + l][k] for
 * l < 16, so a block's product with a state row streams one contiguous panel. A tile is
 * up to MR = 8 state rows times NR units of one gate, accumulated in registers (rows
 * past nb repeat row 0: computed, never stored). */

enum { NR = 16, MR = 8 };

/* out[i][l] = sum_k h_i[k] * P[k*NR + l], i < nb (rows h[i] of length K). */
static void tile_c(const float *P, const float *const h[MR], int nb, int64_t K,
                   float out[MR][NR])
{
    memset(out, 0, sizeof(float) * MR * NR);
    for (int64_t k = 0; k < K; k++)
        for (int i = 0; i < nb; i++) {
            float v = h[i][k];
            for (int l = 0; l < NR; l++) out[i][l] += v * P[k * NR + l];
        }
}

static inline float sigm(float v) { return 1.0f / (1.0f + expf(-v)); }

/* The gates of one tile, portable: units l < nl of state rows i < nb. */
typedef struct gate_args {
    int mode;
    bool lbr;
    const float *xg[MR];   /* the step's XG row of each state row, at unit u0 */
    int64_t H;             /* gate stride in XG */
    float (*acc)[MR][NR];  /* [gate][row][unit] */
    const float *p;        /* peepholes at u0: i, o, f at 0, H, 2H */
    const float *rbh;      /* GRU lbr: Rb of the h gate at u0 */
    const float *hp[MR];   /* previous state rows at u0 */
    float *hn[MR];         /* new state rows at u0 */
    float *c[MR];          /* LSTM cell rows at u0 */
    float *z[MR], *rh[MR]; /* GRU without lbr: phase 1 writes z and r * H */
    int phase;             /* GRU without lbr: 1 (z, r) or 2 (h~, H) */
} gate_args;

static void gates_c(const gate_args *a, int nb, int nl)
{
    int64_t H = a->H;
    for (int i = 0; i < nb; i++)
        for (int l = 0; l < nl; l++) {
            const float *x = a->xg[i] + l;
            float hprev = a->hp[i][l];
            switch (a->mode) {
            case M_LSTM: {
                float c = a->c[i][l];
                float gi = sigm(x[0] + a->acc[0][i][l] + a->p[l] * c);
                float gf = sigm(x[2 * H] + a->acc[2][i][l] + a->p[2 * H + l] * c);
                float gc = tanhf(x[3 * H] + a->acc[3][i][l]);
                c = gf * c + gi * gc;
                float go = sigm(x[H] + a->acc[1][i][l] + a->p[H + l] * c);
                a->c[i][l] = c;
                a->hn[i][l] = go * tanhf(c);
                break;
            }
            case M_GRU:
                if (a->phase == 1) {
                    float z = sigm(x[0] + a->acc[0][i][l]), r = sigm(x[H] + a->acc[1][i][l]);
                    if (!a->lbr) {
                        a->z[i][l] = z;
                        a->rh[i][l] = r * hprev;
                        break;
                    }
                    float ht = tanhf(x[2 * H] + r * (a->acc[2][i][l] + a->rbh[l]));
                    a->hn[i][l] = (1.0f - z) * ht + z * hprev;
                } else {
                    float ht = tanhf(x[2 * H] + a->acc[2][i][l]), z = a->z[i][l];
                    a->hn[i][l] = (1.0f - z) * ht + z * hprev;
                }
                break;
            case M_TANH: a->hn[i][l] = tanhf(x[0] + a->acc[0][i][l]); break;
            default: {
                float v = x[0] + a->acc[0][i][l];
                a->hn[i][l] = v > 0 ? v : 0;
            }
            }
        }
}

/* Columns [k0, K) of one panel: P[k * NR + l] = m[l * K + k] for the nl rows at m,
 * zeros for l >= nl. */
static void pack_cols(const float *m, int64_t K, int64_t k0, int nl, float *P)
{
    for (int64_t k = k0; k < K; k++)
        for (int l = 0; l < NR; l++) P[k * NR + l] = l < nl ? m[l * K + k] : 0.0f;
}

static void pack_c(const float *m, int64_t K, int nl, float *P) { pack_cols(m, K, 0, nl, P); }

#ifdef RNN_X86
/* pack_c for whole blocks in 8 x 8 register transposes (a block's 16 rows in two halves
 * of 8); k % 8 and partial blocks by pack_c. */
__attribute__((target("avx2,fma"))) static void pack_avx2(const float *m, int64_t K, int nl,
                                                          float *P)
{
    if (nl < NR) {
        pack_c(m, K, nl, P);
        return;
    }
    int64_t K8 = K & ~(int64_t)7;
    for (int64_t k = 0; k < K8; k += 8)
        for (int half = 0; half < 2; half++) {
            const float *s = m + half * 8 * K + k;
            __m256 r[8], t[8], u[8];
            for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(s + i * K);
            for (int i = 0; i < 8; i += 2) {
                t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
                t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
            }
            for (int i = 0; i < 8; i += 4) {
                u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
                u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
                u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
                u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
            }
            float *d = P + k * NR + half * 8;
            for (int i = 0; i < 4; i++) {
                _mm256_storeu_ps(d + i * NR, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
                _mm256_storeu_ps(d + (i + 4) * NR, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
            }
        }
    pack_cols(m, K, K8, NR, P);
}

/* Four rows of tile_c with AVX2 + FMA: 4 x NR accumulators in 8 registers. */
__attribute__((target("avx2,fma"))) static inline void tile4_avx2(const float *P,
                                                                  const float *const h[4],
                                                                  int64_t K, float out[][NR])
{
    __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00,
           a30 = a00, a31 = a00;
    const float *h0 = h[0], *h1 = h[1], *h2 = h[2], *h3 = h[3];
    for (int64_t k = 0; k < K; k++) {
        __m256 r0 = _mm256_loadu_ps(P + k * NR), r1 = _mm256_loadu_ps(P + k * NR + 8);
        __m256 v = _mm256_broadcast_ss(h0 + k);
        a00 = _mm256_fmadd_ps(v, r0, a00), a01 = _mm256_fmadd_ps(v, r1, a01);
        v = _mm256_broadcast_ss(h1 + k);
        a10 = _mm256_fmadd_ps(v, r0, a10), a11 = _mm256_fmadd_ps(v, r1, a11);
        v = _mm256_broadcast_ss(h2 + k);
        a20 = _mm256_fmadd_ps(v, r0, a20), a21 = _mm256_fmadd_ps(v, r1, a21);
        v = _mm256_broadcast_ss(h3 + k);
        a30 = _mm256_fmadd_ps(v, r0, a30), a31 = _mm256_fmadd_ps(v, r1, a31);
    }
    _mm256_storeu_ps(out[0], a00), _mm256_storeu_ps(out[0] + 8, a01);
    _mm256_storeu_ps(out[1], a10), _mm256_storeu_ps(out[1] + 8, a11);
    _mm256_storeu_ps(out[2], a20), _mm256_storeu_ps(out[2] + 8, a21);
    _mm256_storeu_ps(out[3], a30), _mm256_storeu_ps(out[3] + 8, a31);
}

/* tile_c with AVX2 + FMA: rows 0-3, and rows 4-7 when nb > 4. */
__attribute__((target("avx2,fma"))) static void tile_avx2(const float *P, const float *const h[MR],
                                                          int nb, int64_t K, float out[MR][NR])
{
    tile4_avx2(P, h, K, out);
    if (nb > 4) tile4_avx2(P, h + 4, K, out + 4);
}

/* tile_c with AVX-512: one 16-unit register per row, MR = 8 independent FMA chains
 * (two FMAs a cycle at four cycles' latency), every lane summed in k order as the AVX2
 * tile sums it (the same bits). */
__attribute__((target("avx512f"))) static void tile_512(const float *P, const float *const h[MR],
                                                        int nb, int64_t K, float out[MR][NR])
{
    (void)nb;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
           a7 = a0;
    const float *h0 = h[0], *h1 = h[1], *h2 = h[2], *h3 = h[3], *h4 = h[4], *h5 = h[5],
                *h6 = h[6], *h7 = h[7];
    for (int64_t k = 0; k < K; k++) {
        __m512 r = _mm512_loadu_ps(P + k * NR);
        a0 = _mm512_fmadd_ps(_mm512_set1_ps(h0[k]), r, a0);
        a1 = _mm512_fmadd_ps(_mm512_set1_ps(h1[k]), r, a1);
        a2 = _mm512_fmadd_ps(_mm512_set1_ps(h2[k]), r, a2);
        a3 = _mm512_fmadd_ps(_mm512_set1_ps(h3[k]), r, a3);
        a4 = _mm512_fmadd_ps(_mm512_set1_ps(h4[k]), r, a4);
        a5 = _mm512_fmadd_ps(_mm512_set1_ps(h5[k]), r, a5);
        a6 = _mm512_fmadd_ps(_mm512_set1_ps(h6[k]), r, a6);
        a7 = _mm512_fmadd_ps(_mm512_set1_ps(h7[k]), r, a7);
    }
    _mm512_storeu_ps(out[0], a0), _mm512_storeu_ps(out[1], a1);
    _mm512_storeu_ps(out[2], a2), _mm512_storeu_ps(out[3], a3);
    _mm512_storeu_ps(out[4], a4), _mm512_storeu_ps(out[5], a5);
    _mm512_storeu_ps(out[6], a6), _mm512_storeu_ps(out[7], a7);
}

/* tile_512 for few state rows (nb <= 2: a stream of one or two sequences): the panels
 * of ng <= 4 gates at once, 4 x 2 FMA chains (gates x rows) where tile_512 would run
 * one gate's 8 chains with 6 or 7 of them repeating row 0; every lane summed in k order
 * as tile_512 sums it (the same bits). out[g] for g < ng; P[g] for g >= ng is read (give
 * P[0]), never stored. */
__attribute__((target("avx512f"))) static void tile_gates_512(const float *const P[4], int ng,
                                                              const float *const h[MR], int64_t K,
                                                              float (*out)[MR][NR])
{
    __m512 a00 = _mm512_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00,
           a30 = a00, a31 = a00;
    const float *p0 = P[0], *p1 = P[1], *p2 = P[2], *p3 = P[3], *h0 = h[0], *h1 = h[1];
    for (int64_t k = 0; k < K; k++) {
        __m512 v0 = _mm512_set1_ps(h0[k]), v1 = _mm512_set1_ps(h1[k]);
        __m512 r = _mm512_loadu_ps(p0 + k * NR);
        a00 = _mm512_fmadd_ps(v0, r, a00), a01 = _mm512_fmadd_ps(v1, r, a01);
        r = _mm512_loadu_ps(p1 + k * NR);
        a10 = _mm512_fmadd_ps(v0, r, a10), a11 = _mm512_fmadd_ps(v1, r, a11);
        r = _mm512_loadu_ps(p2 + k * NR);
        a20 = _mm512_fmadd_ps(v0, r, a20), a21 = _mm512_fmadd_ps(v1, r, a21);
        r = _mm512_loadu_ps(p3 + k * NR);
        a30 = _mm512_fmadd_ps(v0, r, a30), a31 = _mm512_fmadd_ps(v1, r, a31);
    }
    __m512 a[4][2] = {{a00, a01}, {a10, a11}, {a20, a21}, {a30, a31}};
    for (int g = 0; g < ng; g++)
        _mm512_storeu_ps(out[g][0], a[g][0]), _mm512_storeu_ps(out[g][1], a[g][1]);
}

#define RNN_VL 8
#define RNN_VL_FN __attribute__((target("avx2,fma")))
#include "rt_rnn_lanes.h" /* gates8 */
#undef RNN_VL
#undef RNN_VL_FN
#define RNN_VL 16
#define RNN_VL_FN __attribute__((target("avx512f,avx512dq")))
#include "rt_rnn_lanes.h" /* gates16 */
#undef RNN_VL
#undef RNN_VL_FN
#endif

typedef void (*tile_fn)(const float *P, const float *const h[MR], int nb, int64_t K,
                        float out[MR][NR]);
typedef void (*tile_gates_fn)(const float *const P[4], int ng, const float *const h[MR],
                              int64_t K, float (*out)[MR][NR]);
typedef void (*gates_fn)(const gate_args *a, int nb, int nl);
typedef void (*pack_fn)(const float *m, int64_t K, int nl, float *P);

/* ---- one direction's recurrence ---- */

typedef struct rnn_job {
    int mode, g;   /* M_*, gates */
    bool lbr, rev; /* GRU linear_before_reset, reverse direction */
    int64_t T, B, H;
    float *xg;          /* (T, B, G*H): x W^T + biases (step 1) */
    const float *r;     /* (G*H, H) */
    float *panel;       /* ceil(H / NR) blocks of G panels (H, NR) of R */
    const float *x, *w; /* (T*B, I), (G*H, I): the input and its weights */
    int64_t I;
    float *wpanel;     /* ceil(H / NR) blocks of G panels (I, NR) of W */
    const float *bias; /* (G*H): folded into XG */
    const float *rbh;  /* GRU with lbr: Rb's h gate (H), else NULL */
    const float *p;    /* LSTM peepholes (3H) */
    const float *h0;   /* (B, H) */
    bool h0_zero;      /* every element of h0 is +-0: the first step skips its product */
    float *y;          /* y's row 0 of this direction; row t at y + t * ys */
    int64_t ys;        /* D * B * H */
    float *c;          /* LSTM cell state (B, H): y's row T+1 */
    float *z, *rh;     /* GRU without lbr: z and r * H (B, H) */
    tile_fn tile;
    tile_gates_fn tile_gates; /* nb <= 2 rows, several gates at once; NULL: tile alone */
    gates_fn gates;
    pack_fn pack;
} rnn_job;

/* Packs blocks [q0, q1) of the panels of m ((G*H, K) row major) into P (each thread its
 * own blocks: first touch). */
static void pack(const rnn_job *j, const float *m, int64_t K, float *panel, int64_t q0, int64_t q1)
{
    for (int64_t q = q0; q < q1; q++)
        for (int gi = 0; gi < j->g; gi++) {
            int64_t u0 = q * NR;
            int nl = (int)(j->H - u0 < NR ? j->H - u0 : NR);
            j->pack(m + (gi * j->H + u0) * K, K, nl, panel + (q * j->g + gi) * K * NR);
        }
}

/* Step 1 for blocks [q0, q1): XG[m, g*H + u] = x[m] . W[g*H + u] + bias, all T*B rows,
 * in MR x NR tiles of the same kernel. */
static void input_blocks(const rnn_job *j, int64_t q0, int64_t q1)
{
    int64_t H = j->H, GH = j->g * H, TB = j->T * j->B;
    float acc[MR][NR];
    for (int64_t q = q0; q < q1; q++) {
        int64_t u0 = q * NR;
        int nl = (int)(H - u0 < NR ? H - u0 : NR);
        for (int g = 0; g < j->g; g++) {
            const float *P = j->wpanel + (q * j->g + g) * j->I * NR, *bias = j->bias + g * H + u0;
            for (int64_t m0 = 0; m0 < TB; m0 += MR) {
                int nb = (int)(TB - m0 < MR ? TB - m0 : MR);
                const float *rows[MR];
                for (int i = 0; i < MR; i++) rows[i] = j->x + (m0 + (i < nb ? i : 0)) * j->I;
                j->tile(P, rows, nb, j->I, acc);
                for (int i = 0; i < nb; i++) {
                    float *o = j->xg + (m0 + i) * GH + g * H + u0;
                    for (int l = 0; l < nl; l++) o[l] = acc[i][l] + bias[l];
                }
            }
        }
    }
}

/* Blocks [q0, q1) of one step (GRU without lbr: of one phase; gates g0 .. g1-1). */
static void step_blocks(const rnn_job *j, const float *hp, float *hn, const float *xt, int64_t q0,
                        int64_t q1, int phase, bool skip)
{
    int64_t H = j->H, GH = j->g * H;
    int g0 = phase == 2 ? 2 : 0, g1 = j->mode == M_GRU && !j->lbr && phase == 1 ? 2 : j->g;
    const float *src = phase == 2 ? j->rh : hp; /* the rows multiplied by R */
    float acc[4][MR][NR];
    for (int64_t q = q0; q < q1; q++) {
        int64_t u0 = q * NR;
        int nl = (int)(H - u0 < NR ? H - u0 : NR);
        for (int64_t b0 = 0; b0 < j->B; b0 += MR) {
            int nb = (int)(j->B - b0 < MR ? j->B - b0 : MR);
            const float *rows[MR];
            gate_args a = {j->mode, j->lbr, {0}, H,   acc, j->p + u0, j->rbh ? j->rbh + u0 : NULL,
                           {0},     {0},    {0}, {0}, {0}, phase};
            for (int i = 0; i < MR; i++) {
                int64_t b = b0 + (i < nb ? i : 0), at = b * H + u0;
                rows[i] = src + b * H;
                a.xg[i] = xt + b * GH + u0;
                a.hp[i] = hp + at, a.hn[i] = hn + at;
                a.c[i] = j->c + at, a.z[i] = j->z + at, a.rh[i] = j->rh + at;
            }
            const float *P[4];
            for (int g = 0; g < 4; g++) /* gates g0 .. g1-1, then g0 again (read, not stored) */
                P[g] = j->panel + (q * j->g + (g0 + g < g1 ? g0 + g : g0)) * H * NR;
            if (skip)
                memset(acc[g0], 0, sizeof acc[0] * (size_t)(g1 - g0));
            else if (j->tile_gates && nb <= 2 && g1 - g0 >= 2)
                j->tile_gates(P, g1 - g0, rows, H, acc + g0);
            else
                for (int g = g0; g < g1; g++) j->tile(P[g - g0], rows, nb, H, acc[g]);
            j->gates(&a, nb, nl);
        }
    }
}

/* Blocks [q0, q1) of one direction, every step; sync: the region's other threads share
 * the direction's blocks (or run another direction's in step) and a barrier ends each
 * step (two for GRU without lbr). */
static void run_dir(const rnn_job *j, int64_t q0, int64_t q1, bool sync)
{
    pack(j, j->w, j->I, j->wpanel, q0, q1);
    input_blocks(j, q0, q1); /* the thread's own XG columns: no barrier before the steps */
    pack(j, j->r, j->H, j->panel, q0, q1);
    for (int64_t s = 0; s < j->T; s++) {
        int64_t ti = j->rev ? j->T - 1 - s : s, tp = j->rev ? ti + 1 : ti - 1;
        const float *hp = s == 0 ? j->h0 : j->y + tp * j->ys;
        float *hn = j->y + ti * j->ys;
        const float *xt = j->xg + ti * j->B * j->g * j->H;
        bool skip = s == 0 && j->h0_zero;
        step_blocks(j, hp, hn, xt, q0, q1, 1, skip);
        if (j->mode == M_GRU && !j->lbr) {
            if (sync) rx_rt_barrier();
            step_blocks(j, hp, hn, xt, q0, q1, 2, skip);
        }
        if (sync) rx_rt_barrier();
    }
}

/* The region's plan: D directions (one job each), n threads, thread t runs direction
 * t % D on its share of the blocks (the threads of a direction split its nq blocks). */
typedef struct rnn_plan {
    const rnn_job *jobs;
    int64_t D;
} rnn_plan;

static void run_threads(void *ud, int t, int n)
{
    const rnn_plan *pl = ud;
    if (n < pl->D) { /* one thread (a region could not start): the directions in turn */
        for (int64_t d = 0; d < pl->D; d++) {
            const rnn_job *j = &pl->jobs[d];
            run_dir(j, 0, (j->H + NR - 1) / NR, false);
        }
        return;
    }
    int64_t d = t % pl->D, r = t / pl->D, m = (n - d + pl->D - 1) / pl->D; /* rank, team */
    const rnn_job *j = &pl->jobs[d];
    int64_t nq = (j->H + NR - 1) / NR;
    run_dir(j, nq * r / m, nq * (r + 1) / m, n > pl->D);
}

/* ---- entry ---- */

/* The workspace, kept by the calling thread between calls while it is at most KEEP
 * floats (16 MiB): a fresh malloc this large is a fresh mmap whose pages fault in on
 * first touch, which cost a tenth of a (4, 32, 256) -> 512 LSTM. Larger ones are
 * malloc'ed and freed per call. rt.rnn never runs inside itself, so one buffer per
 * thread suffices; a thread-specific key's destructor frees it when the thread exits
 * (a server's worker threads come and go). */
enum { KEEP = 1 << 22 };
static _Thread_local float *ws_kept;
static _Thread_local size_t ws_cap;
static pthread_key_t ws_key;
static pthread_once_t ws_once = PTHREAD_ONCE_INIT;
static bool ws_key_ok;

static void ws_key_make(void) { ws_key_ok = pthread_key_create(&ws_key, free) == 0; }

static float *workspace(size_t n)
{
    if (n > KEEP) return malloc(n * sizeof(float));
    pthread_once(&ws_once, ws_key_make);
    if (!ws_key_ok) return malloc(n * sizeof(float) + sizeof(float)); /* freed per call */
    if (n > ws_cap || !ws_kept) {
        size_t cap = n < KEEP / 2 ? 2 * n + 1 : KEEP; /* room to grow without a realloc each call */
        free(ws_kept);
        ws_kept = malloc(cap * sizeof(float));
        ws_cap = ws_kept ? cap : 0;
        pthread_setspecific(ws_key, ws_kept);
    }
    return ws_kept;
}

static void workspace_done(float *ws)
{
    if (ws != ws_kept) free(ws);
}

static bool is_f32(const DLTensor *t, int ndim)
{
    return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1 &&
           t->ndim == ndim;
}

static const float *fdata(const DLTensor *t)
{
    return (const float *)(const void *)((const char *)t->data + t->byte_offset);
}

static bool dims_are(const DLTensor *t, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    int64_t want[4] = {d0, d1, d2, d3};
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] != want[i]) return false;
    return true;
}

static bool all_zero(const float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (v[i] != 0.0f) return false;
    return true;
}

/* The threads a call runs on. A direction's blocks are split among threads only when a
 * step's product (2 B G H flops a unit, over the padded blocks) gives each thread at
 * least SPLIT_MIN flops (a few microseconds): a barrier ends every step, and below that
 * the barrier and the imbalance of whole 16-unit blocks cost more than the split saves
 * on a busy machine, where the partner of a barrier may not be running (measured in
 * docs/runtime.md). The directions of a bidirectional layer run on two threads when
 * there are two: they are independent, so there is no barrier at all. One thread
 * starts no region. $RX_RNN_SPLIT_MIN (flops per thread, 0 = split whenever there are
 * blocks enough) overrides the bound (the tests force the barrier path with it). */
enum { SPLIT_MIN = 1 << 18 };

static int rnn_threads(int64_t B, int g, int64_t H, int64_t D)
{
    int n = rx_rt_max_threads();
    int64_t nq = (H + NR - 1) / NR, flops = 2 * B * g * nq * NR * H, min = SPLIT_MIN;
    const char *env = getenv("RX_RNN_SPLIT_MIN");
    if (env && *env) min = strtoll(env, NULL, 10);
    int64_t split = n / D < 1 ? 1 : n / D; /* threads per direction */
    while (split > 1 && flops < min * split) split--;
    if (split > nq) split = nq;
    int64_t nt = D * split;
    if (nt > n) nt = n;
    return nt < D ? 1 : (int)nt;
}

int32_t rx_rt_rnn(DLTensor *const *args, int32_t nargs)
{
    if (nargs != 9) return RNN_ARGS;
    const DLTensor *x = args[0], *w = args[1], *r = args[2], *b = args[3], *h0 = args[4],
                   *c0 = args[5], *p = args[6], *pr = args[7];
    DLTensor *y = args[8];
    if (!is_f32(x, 3) || !is_f32(w, 3) || !is_f32(r, 3) || !is_f32(b, 2) || !is_f32(h0, 3) ||
        !is_f32(c0, 3) || !is_f32(p, 2) || !is_f32(y, 4) || pr->dtype.code != kDLInt ||
        pr->dtype.bits != 64 || pr->dtype.lanes != 1 || pr->ndim != 1)
        return RNN_DTYPE;
    if (pr->shape[0] != 3) return RNN_PARAMS;
    const int64_t *pv = (const int64_t *)(const void *)((const char *)pr->data + pr->byte_offset);
    int mode = (int)pv[0], dir = (int)pv[1];
    bool lbr = pv[2] != 0;
    if (pv[0] < 0 || pv[0] > 3 || pv[1] < 0 || pv[1] > 2 || pv[2] < 0 || pv[2] > 1)
        return RNN_PARAMS;
    int g = mode == M_LSTM ? 4 : mode == M_GRU ? 3 : 1;
    int64_t T = x->shape[0], B = x->shape[1], I = x->shape[2], D = dir == 2 ? 2 : 1;
    int64_t H = r->shape[2], GH = g * H;
    if (T < 0 || B < 0 || I < 0 || H < 0 || !dims_are(w, D, GH, I, 0) ||
        !dims_are(r, D, GH, H, 0) || !dims_are(b, D, 2 * GH, 0, 0) || !dims_are(h0, D, B, H, 0) ||
        !dims_are(c0, D, B, H, 0) || !dims_are(p, D, 3 * H, 0, 0) || !dims_are(y, T + 2, D, B, H))
        return RNN_SHAPE;
    /* the workspace, per direction: XG, GRU's z and r * H, the panels, the folded bias */
    size_t nxg = (size_t)(T * B * GH), nz = mode == M_GRU && !lbr ? (size_t)(2 * B * H) : 0;
    int64_t nq = (H + NR - 1) / NR;
    size_t npanel = (size_t)(nq * g * H * NR), nwp = (size_t)(nq * g * I * NR);
    size_t per = nxg + nz + npanel + nwp + (size_t)GH;
    float *ws = workspace((size_t)D * per);
    if (!ws) return RNN_OOM;
    float *yd = (float *)(void *)((char *)y->data + y->byte_offset);
    int64_t BH = B * H, ys = D * BH;
    tile_fn tile = tile_c;
    tile_gates_fn tile_gates = NULL;
    gates_fn gates = gates_c;
    pack_fn packf = pack_c;
#ifdef RNN_X86
    const char *cap = getenv("RX_RNN_KERNEL");
    bool portable = cap && strcmp(cap, "portable") == 0, avx2 = cap && strcmp(cap, "avx2") == 0;
    if (!portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        tile = tile_avx2, gates = gates8, packf = pack_avx2;
        if (!avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))
            tile = tile_512, tile_gates = tile_gates_512, gates = gates16;
    }
#endif
    rnn_job jobs[2];
    for (int64_t d = 0; d < D; d++) {
        const float *bd = fdata(b) + d * 2 * GH;
        float *wd = ws + (size_t)d * per, *bias = wd + nxg + nz + npanel + nwp;
        bool fold_h = !(mode == M_GRU && lbr); /* Rb of the h gate added inside r * (...) */
        for (int64_t k = 0; k < GH; k++)
            bias[k] = bd[k] + (k < 2 * H || fold_h ? bd[GH + k] : 0.0f);
        rnn_job j = {mode,
                     g,
                     lbr,
                     dir == 1 || d == 1,
                     T,
                     B,
                     H,
                     wd,
                     fdata(r) + d * GH * H,
                     wd + nxg + nz,
                     fdata(x),
                     fdata(w) + d * GH * I,
                     I,
                     wd + nxg + nz + npanel,
                     bias,
                     bd + GH + 2 * H,
                     fdata(p) + d * 3 * H,
                     fdata(h0) + d * BH,
                     all_zero(fdata(h0) + d * BH, BH),
                     yd + d * BH,
                     ys,
                     yd + (T + 1) * ys + d * BH,
                     wd + nxg,
                     wd + nxg + BH,
                     tile,
                     tile_gates,
                     gates,
                     packf};
        if (mode == M_LSTM) memmove(j.c, fdata(c0) + d * BH, (size_t)BH * sizeof(float));
        jobs[d] = j;
    }
    if (T > 0 && BH > 0) {
        rnn_plan plan = {jobs, D};
        rx_rt_parallel_for_n(run_threads, &plan, rnn_threads(B, g, H, D));
    }
    for (int64_t d = 0; d < D; d++) {
        /* Y_h: the state after the direction's last step (h0 when T is 0) */
        const rnn_job *j = &jobs[d];
        const float *last = T == 0 ? j->h0 : yd + (j->rev ? 0 : T - 1) * ys + d * BH;
        memmove(yd + T * ys + d * BH, last, (size_t)BH * sizeof(float));
        if (mode != M_LSTM) memmove(j->c, last, (size_t)BH * sizeof(float));
    }
    workspace_done(ws);
    return RNN_OK;
}
