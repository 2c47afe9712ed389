/*
 * library_qepi.c — the epilogue program of rt.qconv2d (library_qconv.c): what a
 * quantized model computes on each output of an 8-bit convolution (the zero-point
 * correction and bias in i32, the conversion to f32, the scales, a bias, a ReLU or clip,
 * the requantization's divide, round, zero point and clamp, a residual add of another
 * tensor and its dequantization) run on each output tile while it is in L1, the result
 * written once in its own dtype (1 byte per output for a requantized u8 / i8), instead of
 * the i32 map written and read back by a generated elementwise kernel.
 * compiler/pass/library_qconv_lower.c writes the program from the op chain it replaces,
 * op by op in the chain's order, so the f32 results are the generated kernel's bit for
 * bit (same operations, same order, no contraction: a separate loop per instruction).
 *
 *   prog  i64 (4 n,): n instructions {code, kind, index, bits}; code = op | dst << 8 |
 *         rev << 9 (dst 1: the temporary t, else the value v; rev: operand op v)
 *   tab   i32 (rows * Co,): per-output-channel operands, row r at r * Co (f32 bits, or
 *         i32 for IADD)
 *   E     up to RX_QE_MAXEXT tensors of Y's shape (f32, u8, i8 or i32): LOAD's operands
 *
 *   op          meaning (per output element; o = the operand: kind 0 the f32 (or, for
 *               IADD, i32) constant `bits`, 1 tab row `index` at the output's channel,
 *               2 the temporary t)
 *   IADD   0    acc += o (i32, wrapping); before TOF32
 *   TOF32  1    v = (float)acc (round to nearest, as C's conversion)
 *   ADD..MIN 2-7  d = d op o (rev: o op d): + - * / and maximum / minimum as the
 *               generated code's (a > b ? a : b, NaN in a propagates)
 *   RELU   8    d = maximum(d, 0)
 *   ROUND  9    d = nearbyintf(d) (half to even)
 *   TRUNC8 10   d = (float)(u8 or i8)(int32)d (bits 0: u8, 1: i8): a cast to 8 bits and
 *               back to f32, as quantize-then-dequantize writes it
 *   LOAD   11   d = (float)E[index] at the output's element
 * The program ends with v (or acc, without TOF32) converted to Y's dtype: i32, f32, or
 * u8 / i8 as C converts an f32 in range (truncation; the chain clamps before).
 *
 * Execution: per tile of up to 48 pixels x 64 channels, pixel-major as the tile kernel
 * leaves it (a row of 64 channels per pixel; the table padded to whole 64-column blocks),
 * each instruction one loop over the tile with a fixed inner trip count of 64 (no tails:
 * the columns past Co compute on padding, never stored), compiled three times (AVX-512,
 * AVX2, the baseline), chosen with rt.qmatmul's tile kernel (RX_QGEMM_KERNEL=avx2 /
 * sse2 / portable forces the lower ones); library_qconv.c moves the result channel-first.
 * A channel-first tile (48 values per channel) measured 1.7x the time of the pixel-major
 * one: its 3-vector rows paid a loop's setup per instruction and channel.
 * Cost: per output, one pass per instruction over L1-resident values; Y written once.
 */
#include "rt_int.h"
#include "rt_qepi.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { NR = RX_QE_NR };

static inline float fmax_g(float a, float b)
{
    float r = a > b ? a : b;
    return a != a ? a : r;
}

static inline float fmin_g(float a, float b)
{
    float r = a < b ? a : b;
    return a != a ? a : r;
}

/* For each of the tile's rows (pixels) r and its NR columns (channels) j, a fixed trip
 * count the compiler vectorizes without tails (columns past the block's are computed
 * on padding and never stored). */
#define QE_TILE(BODY)                                                                      \
    for (int r = 0; r < rows; r++)                                                         \
        for (int j = 0; j < NR; j++) {                                                     \
            int at = r * NR + j;                                                           \
            BODY;                                                                          \
        }

/* A binary op of d with o: t's element (kind 2), the channel's tab entry (1) or the
 * constant (0); a the left operand, b the right. */
#define QE_BIN(EXPR)                                                                       \
    if (kind == 2 && rev) QE_TILE(float a = t[at]; float b = d[at]; d[at] = EXPR)          \
    else if (kind == 2) QE_TILE(float a = d[at]; float b = t[at]; d[at] = EXPR)            \
    else if (kind == 1 && rev) QE_TILE(float a = row[j]; float b = d[at]; d[at] = EXPR)    \
    else if (kind == 1) QE_TILE(float a = d[at]; float b = row[j]; d[at] = EXPR)           \
    else if (rev) QE_TILE(float a = sc; float b = d[at]; d[at] = EXPR)                     \
    else QE_TILE(float a = d[at]; float b = sc; d[at] = EXPR)

static inline __attribute__((always_inline)) void
qe_body(const rx_qepi *e, int32_t *restrict acc, float *restrict v, float *restrict t,
        uint8_t *restrict u8, int64_t img, int64_t j0, int nc, int64_t p0, int rows)
{
    const int64_t p = e->p, base = (img * e->co + j0) * p + p0;
    for (int i = 0; i < e->n; i++) {
        const int64_t *in = e->prog + 4 * i;
        int op = (int)(in[0] & 0xff), kind = (int)in[1];
        bool rev = (in[0] >> 9) & 1;
        float *restrict d = (in[0] >> 8) & 1 ? t : v, sc;
        const float *restrict row = e->ftab + in[2] * e->ldt + j0;
        uint32_t bits = (uint32_t)in[3];
        memcpy(&sc, &bits, sizeof sc);
        switch (op) {
        case RX_QE_IADD: {
            const uint32_t *restrict irow = e->itab + in[2] * e->ldt + j0;
            uint32_t *restrict a = (uint32_t *)(void *)acc;
            if (kind == 1) QE_TILE(a[at] += irow[j])
            else QE_TILE(a[at] += bits)
            break;
        }
        case RX_QE_TOF32: QE_TILE(v[at] = (float)acc[at]) break;
        case RX_QE_ADD: QE_BIN(a + b) break;
        case RX_QE_SUB: QE_BIN(a - b) break;
        case RX_QE_MUL: QE_BIN(a * b) break;
        case RX_QE_DIV: QE_BIN(a / b) break;
        case RX_QE_MAX: QE_BIN(fmax_g(a, b)) break;
        case RX_QE_MIN: QE_BIN(fmin_g(a, b)) break;
        case RX_QE_RELU: QE_TILE(d[at] = fmax_g(d[at], 0.0f)) break;
        case RX_QE_ROUND: QE_TILE(d[at] = nearbyintf(d[at])) break;
        case RX_QE_TRUNC8:
            if (bits) QE_TILE(d[at] = (float)(int8_t)(uint8_t)(int32_t)d[at])
            else QE_TILE(d[at] = (float)(uint8_t)(int32_t)d[at])
            break;
        default: { /* RX_QE_LOAD: E's channel-first rows into the pixel-major tile */
            const rx_qe_ext *x = &e->ext[in[2]];
            for (int j = 0; j < nc; j++) {
                int64_t at = base + j * p;
                switch (x->kind) {
                case RX_QE_F32:
                    for (int r = 0; r < rows; r++) d[r * NR + j] = ((const float *)x->data)[at + r];
                    break;
                case RX_QE_U8:
                    for (int r = 0; r < rows; r++) d[r * NR + j] = (float)((const uint8_t *)x->data)[at + r];
                    break;
                case RX_QE_I8:
                    for (int r = 0; r < rows; r++) d[r * NR + j] = (float)((const int8_t *)x->data)[at + r];
                    break;
                default:
                    for (int r = 0; r < rows; r++) d[r * NR + j] = (float)((const int32_t *)x->data)[at + r];
                }
            }
        }
        }
    }
    if (e->ykind == RX_QE_U8) QE_TILE(u8[at] = (uint8_t)(int32_t)v[at])
    else if (e->ykind == RX_QE_I8) QE_TILE(u8[at] = (uint8_t)(int8_t)(int32_t)v[at])
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"))) static void
qe_avx512(const rx_qepi *e, int32_t *acc, float *v, float *t, uint8_t *u8, int64_t img, int64_t j0,
          int nc, int64_t p0, int rows)
{
    qe_body(e, acc, v, t, u8, img, j0, nc, p0, rows);
}

__attribute__((target("avx2"))) static void qe_avx2(const rx_qepi *e, int32_t *acc, float *v,
                                                    float *t, uint8_t *u8, int64_t img,
                                                    int64_t j0, int nc, int64_t p0, int rows)
{
    qe_body(e, acc, v, t, u8, img, j0, nc, p0, rows);
}
#endif

static void qe_base(const rx_qepi *e, int32_t *acc, float *v, float *t, uint8_t *u8, int64_t img,
                    int64_t j0, int nc, int64_t p0, int rows)
{
    qe_body(e, acc, v, t, u8, img, j0, nc, p0, rows);
}

rx_qepi_fn rx_qepi_choose(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    const char *k = rx_rt_qgemm_kernel();
    if (!strcmp(k, "avx512-vnni")) return qe_avx512;
    if (!strcmp(k, "avx2")) return qe_avx2;
#endif
    return qe_base;
}

static int ext_kind(DLDataType d)
{
    if (d.lanes != 1) return -1;
    if (d.code == kDLFloat && d.bits == 32) return RX_QE_F32;
    if (d.code == kDLUInt && d.bits == 8) return RX_QE_U8;
    if (d.code == kDLInt && d.bits == 8) return RX_QE_I8;
    if (d.code == kDLInt && d.bits == 32) return RX_QE_I32;
    return -1;
}

bool rx_qepi_parse(rx_qepi *e, const DLTensor *prog, const DLTensor *tab, DLTensor *const *ext,
                   int next, const DLTensor *y)
{
    memset(e, 0, sizeof *e);
    e->ykind = ext_kind(y->dtype);
    if (e->ykind < 0 || next > RX_QE_MAXEXT || prog->ndim != 1 || prog->dtype.code != kDLInt ||
        prog->dtype.bits != 64 || prog->shape[0] % 4 || prog->shape[0] > 4 * RX_QE_MAXINSTR ||
        tab->ndim != 1 || tab->dtype.code != kDLInt || tab->dtype.bits != 32 || y->ndim != 4)
        return false;
    e->co = y->shape[1];
    e->p = y->shape[2] * y->shape[3];
    e->n = (int)(prog->shape[0] / 4);
    e->prog = (const int64_t *)(const void *)((const char *)prog->data + prog->byte_offset);
    e->y = (char *)y->data + y->byte_offset;
    int64_t rows = e->co ? tab->shape[0] / e->co : 0;
    if (rows * e->co != tab->shape[0]) return false;
    for (int i = 0; i < next; i++) {
        e->ext[i].kind = ext_kind(ext[i]->dtype);
        if (e->ext[i].kind < 0 || ext[i]->ndim != 4) return false;
        for (int d = 0; d < 4; d++)
            if (ext[i]->shape[d] != y->shape[d]) return false;
        e->ext[i].data = (const char *)ext[i]->data + ext[i]->byte_offset;
    }
    bool f = false, ok = true;
    for (int i = 0; i < e->n && ok; i++) {
        const int64_t *in = e->prog + 4 * i;
        int op = (int)(in[0] & 0xff);
        bool dst_t = (in[0] >> 8) & 1, binary = op >= RX_QE_ADD && op <= RX_QE_MIN;
        e->uses_t |= dst_t || (binary && in[1] == 2);
        ok = op <= RX_QE_LOAD && (in[0] >> 10) == 0 && in[1] >= 0 && in[1] <= 2 &&
             (in[1] != 1 || (in[2] >= 0 && in[2] < rows)) &&
             (op != RX_QE_LOAD || (in[2] >= 0 && in[2] < next && dst_t)) &&
             (op == RX_QE_IADD ? !f && !dst_t && in[1] != 2 : op == RX_QE_TOF32 ? !f && !dst_t : f || dst_t);
        f |= op == RX_QE_TOF32;
    }
    /* an f32 or 8-bit Y is stored from v (after TOF32), an i32 one from acc */
    if (!ok || (e->ykind == RX_QE_I32) != !f) return false;
    e->f32 = f;
    /* the tab padded to whole column blocks: the tile loops read NR entries from each
       block's first; past Co 1.0f for f32 rows, 0 for IADD's (the lanes computed and
       never stored stay finite: no x / 0 converted to an integer) */
    const int32_t *tv = (const int32_t *)(const void *)((const char *)tab->data + tab->byte_offset);
    e->ldt = (e->co + NR - 1) / NR * NR;
    e->itab = malloc((size_t)(rows * e->ldt + 1) * sizeof *e->itab);
    if (!e->itab) return false;
    const float one = 1.0f;
    uint32_t one_bits;
    memcpy(&one_bits, &one, sizeof one_bits);
    for (int64_t r = 0; r < rows; r++) {
        bool iadd = false;
        for (int i = 0; i < e->n; i++)
            iadd |= (e->prog[4 * i] & 0xff) == RX_QE_IADD && e->prog[4 * i + 1] == RX_QE_CHAN &&
                    e->prog[4 * i + 2] == r;
        for (int64_t j = e->co; j < e->ldt; j++) e->itab[r * e->ldt + j] = iadd ? 0u : one_bits;
        memcpy(e->itab + r * e->ldt, tv + r * e->co, 4 * (size_t)e->co);
    }
    e->ftab = (const float *)(const void *)e->itab;
    return true;
}

void rx_qepi_free(rx_qepi *e)
{
    free(e->itab);
    e->itab = NULL;
}
