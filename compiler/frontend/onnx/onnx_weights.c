/*
 * onnx_weights.c — writing imported weights as a .safetensors file (the Hugging Face
 * format): an 8-byte little-endian header length N, N bytes of JSON
 *   {"NAME": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]}, ...}
 * (offsets relative to the end of the header), then the raw little-endian tensors in
 * the order of the parameters. The header is padded with spaces to a multiple of 8 so
 * the tensors are aligned. relax-run --weights reads it back (runtime/tools).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "onnx_int.h"

static const char *st_dtype(rx_dtype t)
{
    switch (t) {
    case RX_DT_F32: return "F32";
    case RX_DT_F64: return "F64";
    case RX_DT_F16: return "F16";
    case RX_DT_BF16: return "BF16";
    case RX_DT_I8: return "I8";
    case RX_DT_I16: return "I16";
    case RX_DT_I32: return "I32";
    case RX_DT_I64: return "I64";
    case RX_DT_U8: return "U8";
    case RX_DT_U16: return "U16";
    case RX_DT_U32: return "U32";
    case RX_DT_U64: return "U64";
    case RX_DT_BOOL: return "BOOL";
    default: return NULL;
    }
}

/* Appends nbytes at off of the file at path to out, 1 MiB at a time. */
static bool copy_range(FILE *out, const char *path, int64_t off, size_t nbytes, rx_diags *d)
{
    FILE *in = path ? fopen(path, "rb") : NULL;
    bool ok = in && fseeko(in, (off_t)off, SEEK_SET) == 0;
    static const size_t chunk = (size_t)1 << 20;
    uint8_t *buf = ok ? rx_xmalloc(chunk) : NULL;
    for (size_t done = 0; ok && done < nbytes;) {
        size_t n = nbytes - done < chunk ? nbytes - done : chunk;
        ok = fread(buf, 1, n, in) == n && fwrite(buf, 1, n, out) == n;
        done += n;
    }
    if (!ok) rx_diag_add(d, "", "cannot copy %zu bytes at offset %lld of %s", nbytes,
                         (long long)off, path ? path : "?");
    free(buf);
    if (in) fclose(in);
    return ok;
}

bool rx_safetensors_write(const char *path, const rx_onnx_weightset *ws, rx_diags *d)
{
    rx_sb h = {0};
    rx_sb_putc(&h, '{');
    size_t off = 0;
    for (int i = 0; i < ws->n; i++) {
        const rx_const *k = ws->w[i];
        const char *dt = st_dtype(k->dtype);
        if (!dt) {
            rx_diag_add(d, "", "weight '%s': dtype %s has no safetensors name", k->name,
                        rx_dtype_name(k->dtype));
            rx_sb_free(&h);
            return false;
        }
        rx_sb_printf(&h, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", k->name, dt);
        for (int j = 0; j < k->ndim; j++) rx_sb_printf(&h, "%s%lld", j ? "," : "", (long long)k->shape[j]);
        rx_sb_printf(&h, "],\"data_offsets\":[%zu,%zu]}", off, off + k->nbytes);
        off += k->nbytes;
    }
    rx_sb_putc(&h, '}');
    while (h.n % 8) rx_sb_putc(&h, ' ');
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL;
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)h.n >> (8 * i));
    ok = ok && fwrite(len, 1, 8, f) == 8 && fwrite(h.p, 1, h.n, f) == h.n;
    for (int i = 0; ok && i < ws->n; i++) {
        const rx_const *k = ws->w[i];
        if (k->data) ok = k->nbytes == 0 || fwrite(k->data, 1, k->nbytes, f) == k->nbytes;
        else ok = copy_range(f, ws->ext_path[i], ws->ext_off[i], k->nbytes, d);
    }
    if (f && fclose(f)) ok = false;
    if (!ok) rx_diag_add(d, "", "cannot write %s: %s", path, strerror(errno));
    rx_sb_free(&h);
    return ok;
}
