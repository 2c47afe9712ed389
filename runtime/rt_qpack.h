/*
 * rt_qpack.h — the packed layout of rt.qmatmul's 8-bit B (runtime/library_qgemm.c): one
 * source for the runtime, which packs a B given at run time per call, and compiler/
 * legalize/legalize_lib.c, which packs a constant B once at compile time (the call then
 * reads the packed constant: no packing per call, and a one-row product reads only the
 * weight's bytes). Header-only (static inline, C11, no ISA): it includes only <stdint.h>
 * <stdbool.h> and <string.h>.
 *
 * B (k, n), row-major bytes, is read as B' = B ^ bx (bx = 0x80 for a u8 B: B - 128 as
 * s8; 0 for an i8 B) and cut into blocks of RX_QP_NR = 64 columns; a block is 4 panels of
 * RX_QP_PW = 16 columns, a panel kp / 4 groups of 64 bytes: the 4 reduction indices 4g..
 * 4g+3 of each of its 16 columns together (kp = k rounded up to 4; zeros past k and past
 * n). The whole packed B is the blocks one after another, then per block 64 i32 column
 * sums of B' (little-endian; 0 past n): rx_qpack_bytes(k, n) bytes. rx_qpack_correct is
 * the correction of a raw tile that both kernels (rt.qmatmul, rt.qconv2d) apply.
 */
#ifndef RX_RT_QPACK_H
#define RX_RT_QPACK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { RX_QP_NR = 64, RX_QP_PW = 16 };

static inline int64_t rx_qpack_kp(int64_t k) { return (k + 3) / 4 * 4; }

static inline int64_t rx_qpack_blocks(int64_t n) { return (n + RX_QP_NR - 1) / RX_QP_NR; }

/* Bytes of one packed block, and of the whole packed B with its column sums. */
static inline int64_t rx_qpack_block_bytes(int64_t k) { return rx_qpack_kp(k) * RX_QP_NR; }

static inline int64_t rx_qpack_bytes(int64_t k, int64_t n)
{
    return rx_qpack_blocks(n) * (rx_qpack_block_bytes(k) + RX_QP_NR * 4);
}

/* Block blk of B (k x n bytes) read as B ^ bx into dst (rx_qpack_block_bytes(k) bytes);
 * colsum[0..64) receives the sums of B' per column (0 past n). */
static inline void rx_qpack_block(const uint8_t *b, int64_t k, int64_t n, uint8_t bx, int64_t blk,
                                  int8_t *dst, uint32_t *colsum)
{
    int64_t j0 = blk * RX_QP_NR, nc = n - j0 < RX_QP_NR ? n - j0 : RX_QP_NR;
    int64_t kp = rx_qpack_kp(k), ps = kp * RX_QP_PW;
    static const uint8_t zero[RX_QP_NR];
    for (int j = 0; j < RX_QP_NR; j++) colsum[j] = 0;
    for (int64_t g = 0; g < kp / 4; g++) { /* 4 rows at a time: each panel's 64 bytes in order */
        const uint8_t *row[4];
        uint8_t x[4];
        for (int t = 0; t < 4; t++) {
            bool in = 4 * g + t < k;
            row[t] = in ? b + (4 * g + t) * n + j0 : zero;
            x[t] = in ? bx : 0;
        }
        for (int p = 0; p < RX_QP_NR / RX_QP_PW; p++) {
            int8_t *d = dst + p * ps + g * 64;
            for (int jj = 0; jj < RX_QP_PW; jj++) {
                int j = p * RX_QP_PW + jj;
                for (int t = 0; t < 4; t++) {
                    int8_t v = j < nc ? (int8_t)(row[t][j] ^ x[t]) : 0;
                    d[jj * 4 + t] = v;
                    colsum[j] += (uint32_t)(int32_t)v;
                }
            }
        }
    }
}

/* Tile c (rows x nc i32, rows ldc apart) of the raw A'B' corrected to A B (A' = A ^ 0x80
 * for an i8 A: oa = 128; B' = B ^ 0x80 for a u8 B: ob = 128): A B = A'B' + ob rowsum(A')
 * - oa colsum(B') - k oa ob, in u32 (wrapping as the i32 product); rowsum (of A', per
 * row) is read only when ob. Nothing to do when oa and ob are 0. */
static inline void rx_qpack_correct(int32_t *c, int64_t ldc, int64_t rows, int nc,
                                    const uint32_t *rowsum, const uint32_t *colsum, uint32_t oa,
                                    uint32_t ob, uint32_t k)
{
    if (!oa && !ob) return;
    for (int64_t i = 0; i < rows; i++) {
        uint32_t add = (ob ? ob * rowsum[i] : 0u) - k * oa * ob;
        uint32_t *ci = (uint32_t *)(void *)(c + i * ldc);
        for (int j = 0; j < nc; j++) ci[j] += add - oa * colsum[j];
    }
}

/* The whole packed B (rx_qpack_bytes(k, n) bytes at dst). */
static inline void rx_qpack(const uint8_t *b, int64_t k, int64_t n, uint8_t bx, uint8_t *dst)
{
    int64_t nb = rx_qpack_blocks(n), bb = rx_qpack_block_bytes(k);
    for (int64_t blk = 0; blk < nb; blk++) {
        uint32_t cs[RX_QP_NR];
        rx_qpack_block(b, k, n, bx, blk, (int8_t *)(dst + blk * bb), cs);
        for (int j = 0; j < RX_QP_NR; j++) /* little-endian i32 */
            for (int t = 0; t < 4; t++)
                dst[nb * bb + (blk * RX_QP_NR + j) * 4 + t] = (uint8_t)(cs[j] >> (8 * t));
    }
}

#endif
