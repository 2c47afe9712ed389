/*
 * safetensors.h — reading .safetensors weight files for relax-run --weights (no JSON
 * library: the runtime does not depend on jansson).
 *
 * The format (Hugging Face): an 8-byte little-endian header length N (at most
 * RX_ST_MAX_HEADER), N bytes of JSON
 *     {"NAME": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...,
 *      "__metadata__": {"k": "v"}}
 * then the tensors' raw little-endian bytes; offsets are relative to the end of the
 * header. Supported dtypes: F16 BF16 F32 F64 I8 I16 I32 I64 U8 U16 U32 U64 BOOL.
 *
 * Hostile input: the header is parsed by a small bounded reader (nesting <= 4, names
 * without escapes, at most RX_ST_MAX_TENSORS tensors); every tensor's byte range must lie
 * inside the file and match dtype x shape (overflow-checked). Errors are one line.
 * Each tensor is handed out as an in-memory .npy image (npy.h) so relax-run binds it
 * like a --in file, by parameter name.
 */
#ifndef RX_SAFETENSORS_H
#define RX_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define RX_ST_MAX_HEADER ((size_t)100 << 20)
#define RX_ST_MAX_TENSORS 65536

typedef struct rx_st_tensor {
    char *name;     /* heap */
    uint8_t *npy;   /* .npy image of the tensor (heap) */
    size_t npy_n;   /* its size */
} rx_st_tensor;

typedef struct rx_st_file {
    rx_st_tensor *t; /* tensors in header order */
    int n;
} rx_st_file;

/* Reads path. Returns 0 and fills out (rx_st_free), or -1 with a one-line err. */
int rx_st_read(const char *path, rx_st_file *out, char *err, size_t errlen);
void rx_st_free(rx_st_file *f);

#endif
