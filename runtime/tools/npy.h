/*
 * npy.h — reading and writing NumPy .npy files for relax-run and relax-agent (no NumPy
 * needed).
 *
 * The format (numpy/lib/format.py): the magic "\x93NUMPY", a major and minor version
 * byte, a little-endian header length (u16 for version 1.0, u32 for 2.0 and 3.0), then
 * the header — a Python dict literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and ended by '\n' so the data starts on a 64-byte boundary — then
 * the raw elements in C (row-major) order.
 *
 * Supported: dtypes '<f2 <f4 <f8 <i1..<i8 <u1..<u8 |b1' ('|' and '=' byte orders where
 * they mean little-endian or do not matter), C order only. bfloat16 has no NumPy dtype:
 * the caller reinterprets '<u2' data when a parameter wants bf16 (rx_npy_read_file does
 * not know the parameter), and bf16 outputs are written as '<u2'.
 *
 * Hostile input: the header is bounded (RX_NPY_MAX_HEADER bytes) and parsed with a
 * small recursive-descent reader that never reads past it; every dim is checked, the
 * element count and byte size are computed with overflow checks, and a file shorter
 * than its header promises is "truncated". Errors are one line, without the file name
 * (the caller prefixes it).
 */
#ifndef RX_NPY_H
#define RX_NPY_H

#include <stddef.h>
#include <stdint.h>

#define RX_NPY_MAX_HEADER (1u << 20) /* bytes of the dict literal we accept */
#define RX_NPY_MAX_NDIM 32           /* = RX_RXA_MAX_NDIM */

typedef struct rx_npy {
    uint32_t dtype;                 /* packed dtype (rxa.h); bf16 never appears here */
    int32_t ndim;                   /* 0..RX_NPY_MAX_NDIM */
    int64_t shape[RX_NPY_MAX_NDIM]; /* dims, each >= 0 */
    int64_t count;                  /* product of the dims */
    size_t nbytes;                  /* count * element size */
    void *data;                     /* 64-byte aligned, owned (free()); NULL when nbytes 0 */
} rx_npy;

/* Parses the preamble and header of an .npy image held in buf[0..n). On success returns
 * 0, fills out (data stays NULL) and *data_off with the offset of the first element;
 * checks that n holds all the data. Returns -1 with err on any problem. */
int rx_npy_parse(const uint8_t *buf, size_t n, rx_npy *out, size_t *data_off, char *err,
                 size_t errlen);

/* Reads an .npy image held in buf[0..n) into out (out->data owned by the caller, free();
 * buf is not kept). Returns 0, or -1 with err, like rx_npy_read_file. */
int rx_npy_read_mem(const uint8_t *buf, size_t n, rx_npy *out, char *err, size_t errlen);

/* Reads the .npy file at path into out (out->data owned by the caller, free()).
 * Returns 0, or -1 with err ("truncated: header promises 48 data bytes, file has 20"). */
int rx_npy_read_file(const char *path, rx_npy *out, char *err, size_t errlen);

/* Writes a version 1.0 .npy file (the header of at most 32 dims always fits) with the
 * given packed dtype (bf16 is written as '<u2'), shape and data[0..nbytes). Returns 0, or -1
 * with err (unsupported dtype, I/O error). */
int rx_npy_write_file(const char *path, uint32_t dtype, int32_t ndim, const int64_t *shape,
                      const void *data, size_t nbytes, char *err, size_t errlen);

/* The NumPy descr of a packed dtype ("<f4", "|b1"; bf16 → "<u2"), or NULL. */
const char *rx_npy_descr(uint32_t dtype);

#endif
