/*
 * rt_qepi.h — rt.qconv2d's epilogue program (runtime/library_qepi.c has the instruction
 * set and how it runs; compiler/pass/library_qconv_lower.c writes it). The op codes and
 * operand kinds are the artifact's ABI: header-only constants the compiler includes too.
 */
#ifndef RX_RT_QEPI_H
#define RX_RT_QEPI_H

#include <stdbool.h>
#include <stdint.h>

enum {
    RX_QE_IADD, RX_QE_TOF32, RX_QE_ADD, RX_QE_SUB, RX_QE_MUL, RX_QE_DIV, RX_QE_MAX, RX_QE_MIN,
    RX_QE_RELU, RX_QE_ROUND, RX_QE_TRUNC8, RX_QE_LOAD
};
enum { RX_QE_DST_T = 1 << 8, RX_QE_REV = 1 << 9 };        /* bits of an instruction's code */
enum { RX_QE_CONST, RX_QE_CHAN, RX_QE_TEMP };             /* operand kinds */
enum { RX_QE_F32, RX_QE_U8, RX_QE_I8, RX_QE_I32 };        /* tensor dtypes (E, Y) */
enum { RX_QE_MAXEXT = 4, RX_QE_TILE = 48, RX_QE_MAXINSTR = 64, RX_QE_NR = 64 };

#ifdef RX_RT_INT_H
typedef struct rx_qe_ext {
    const void *data; /* at the tensor's first element */
    int kind;         /* RX_QE_F32 .. RX_QE_I32 */
} rx_qe_ext;

typedef struct rx_qepi {
    const int64_t *prog; /* n instructions of 4 words */
    uint32_t *itab;      /* per-channel operand rows, ldt apart (zeros past co): owned */
    const float *ftab;   /* the same rows read as f32 */
    int64_t ldt;
    rx_qe_ext ext[RX_QE_MAXEXT];
    void *y;             /* Y's first element */
    int64_t co, p;       /* Y's channels, pixels per channel */
    int n, ykind;        /* instructions; Y's dtype */
    bool f32, uses_t;    /* converts to f32; uses the temporary */
} rx_qepi;

/* Runs e on the pixel-major tile acc (rows pixels from p0 of image img, RX_QE_NR
 * channels from j0 a row, nc of them real; acc is overwritten), v and t f32 scratch of
 * the same size: the result in v (f32 Y), acc (i32 Y) or u8 (8-bit Y: rows of RX_QE_NR
 * bytes), for the caller to store channel-first. */
typedef void (*rx_qepi_fn)(const rx_qepi *e, int32_t *acc, float *v, float *t, uint8_t *u8,
                           int64_t img, int64_t j0, int nc, int64_t p0, int rows);
/* The variant for this CPU (with rt.qmatmul's tile kernel: $RX_QGEMM_KERNEL). */
rx_qepi_fn rx_qepi_choose(void);
/* e from the call's prog, tab, next extra tensors and Y; false when they do not form a
 * valid program (an operand out of range, an op before its operand exists, E's shape or
 * a dtype not Y's). */
bool rx_qepi_parse(rx_qepi *e, const DLTensor *prog, const DLTensor *tab, DLTensor *const *ext,
                   int next, const DLTensor *y);
/* Frees what a successful rx_qepi_parse allocated. */
void rx_qepi_free(rx_qepi *e);
#endif

#endif
