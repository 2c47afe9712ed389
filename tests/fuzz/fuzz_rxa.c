/*
 * fuzz_rxa.c — libFuzzer target for the `.rxa` parser and the bytecode verifier: what
 * relaxd's PUT /v1/artifacts, relax-run and the agents apply to bytes from outside.
 *
 * Non-kernel sections only: the header, the section table, METADATA, STRINGS, FUNCS
 * (functions, signatures, dim expressions, kernel entries), CODE and CONSTS. Kernel
 * objects are never loaded (that is dlopen's business, after these checks).
 *
 * The header's CRC covers everything after it, so almost every mutation would stop at
 * the CRC check. The target therefore rewrites total_size to the input's length and
 * the CRC to the one of the mutated bytes before parsing (the CRC check itself is a
 * few lines; what it guards is the rest). An input the parser accepts must then pass
 * or fail verification with a message, and everything the parsed form points to must
 * lie in the buffer or in the parser's arena: each function's signature, each constant,
 * each string and, for verified code, the disassembly of every function are walked.
 */
#include "relax/rxa.h"
#include "relax/base.h"
#include "relax/vm.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static size_t walk_type(const rx_rxa_type *t, int depth)
{
    RX_ASSERT(depth <= 64);
    size_t s = t->kind + (t->name ? strlen(t->name) : 0);
    if (t->kind == RX_RXA_T_TENSOR || t->kind == RX_RXA_T_SHAPE)
        for (int32_t i = 0; i < t->ndim; i++) s += t->dims[i].ntok;
    for (uint32_t i = 0; t->kind == RX_RXA_T_TUPLE && i < t->nfields; i++)
        s += walk_type(&t->fields[i], depth + 1);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (n > (1 << 20)) return 0;
    uint8_t *b = malloc(n ? n : 1);
    RX_ASSERT(b);
    memcpy(b, data, n);
    if (n >= 40) {
        for (int i = 0; i < 8; i++) b[24 + i] = (uint8_t)((uint64_t)n >> (8 * i));
        put_u32(b + 32, rx_rxa_crc32(0, b + 40, n - 40));
    }
    rx_rxa *a = NULL;
    char err[256] = "";
    if (rx_rxa_parse(b, n, "fuzz.rxa", &a, err, sizeof err)) {
        RX_ASSERT(!a && err[0]); /* a rejection always says why */
        free(b);
        return 0;
    }
    volatile size_t sink = 0;
    for (uint32_t i = 0; i < a->nstrings; i++) sink += strlen(a->strings[i]) == a->string_lens[i];
    for (uint32_t i = 0; i < a->nfuncs; i++) {
        const rx_rxa_func *f = &a->funcs[i];
        RX_ASSERT(rx_rxa_find_func(a, f->name));
        for (uint32_t k = 0; k < f->nparams; k++) sink += walk_type(&f->params[k], 0);
        sink += walk_type(&f->result, 0);
    }
    for (uint32_t i = 0; i < a->nconsts; i++) {
        const rx_rxa_const *c = &a->consts[i];
        RX_ASSERT(c->nbytes == 0 || ((const uint8_t *)c->data >= b &&
                                     (const uint8_t *)c->data + c->nbytes <= b + n));
    }
    const rx_rxa_section *meta = rx_rxa_section_get(a, RX_RXA_METADATA);
    if (meta) RX_ASSERT(meta->data >= b && meta->data + meta->size <= b + n);
    if (rx_vm_verify(a, err, sizeof err) == 0) {
        for (uint32_t i = 0; i < a->nfuncs; i++) free(rx_vm_disasm(a, i));
    } else {
        RX_ASSERT(err[0]);
    }
    (void)sink;
    rx_rxa_free(a);
    free(b);
    return 0;
}
