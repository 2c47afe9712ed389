/*
 * test_rxa.c — the .rxa format: builder/reader round trip, dim expressions, CRC, and
 * the hostile-input guarantees (every truncation, every single-bit flip, wrong magic,
 * wrong version, writer bugs behind a valid CRC) ending in one clean message.
 */
#include "rt_test.h"

#include <inttypes.h>

/* Mutated artifacts may ask for absurd allocations: let malloc fail instead of ASan
 * aborting, as it would in a release build. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

/* A small artifact: metadata, a function main(x: (n, 4) f32, k: int) with a 2n+1 result
 * dim, a constant, code that returns x. */
static uint8_t *small_artifact(size_t *n)
{
    static const rx_rxa_tok n_tok[] = {{RX_RXA_TOK_VAR, 0}};
    static const rx_rxa_tok four_tok[] = {{RX_RXA_TOK_CONST, 4}};
    static const rx_rxa_tok expr_tok[] = {
        {RX_RXA_TOK_VAR, 0}, {RX_RXA_TOK_CONST, 2}, {RX_RXA_TOK_MUL, 0},
        {RX_RXA_TOK_CONST, 1}, {RX_RXA_TOK_ADD, 0}};
    static const rx_rxa_dim xdims[] = {{1, n_tok}, {1, four_tok}};
    static const rx_rxa_dim rdims[] = {{5, expr_tok}, {0, NULL}};
    static const char *const syms[] = {"n"};
    rx_rxa_type params[2] = {rt_tensor("x", RX_RXA_F32, 2, xdims), rt_int("k")};
    rx_rxa_type fields[2] = {rt_tensor(NULL, RX_RXA_F32, 2, rdims), rt_any(NULL)};
    rx_rxa_func f = rt_func("main", 2, params, 3, 1);
    f.nsym = 1;
    f.syms = syms;
    f.result.kind = RX_RXA_T_TUPLE;
    f.result.nfields = 2;
    f.result.fields = fields;

    rx_rxa_builder *b = rx_rxa_builder_new();
    rx_rxa_set_metadata(b, "{\"target\":\"cpu\"}", 16);
    uint32_t msg = rx_rxa_add_string(b, "main: x: expected (n, 4)");
    int64_t code[] = {RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 2, msg, 2, RX_M_STORE, 0, RX_M_IMM, 4,
                      RX_OP_RET, 0};
    rx_rxa_add_function(b, &f, code, sizeof code / sizeof *code);
    float cdata[6] = {1, 2, 3, 4, 5, 6};
    int64_t cshape[2] = {2, 3};
    ck_assert_uint_eq(rx_rxa_add_const(b, RX_RXA_F32, 2, cshape, cdata, sizeof cdata), 0);
    ck_assert_uint_eq(rx_rxa_add_const(b, RX_RXA_F32, 2, cshape, cdata, 5), RX_RXA_NONE);
    uint8_t *bytes;
    ck_assert_int_eq(rx_rxa_serialize(b, &bytes, n), 0);
    rx_rxa_builder_free(b);
    return bytes;
}

static void fix_crc(uint8_t *p, size_t n)
{
    uint32_t crc = rx_rxa_crc32(0, p + RX_RXA_HEADER_SIZE, n - RX_RXA_HEADER_SIZE);
    for (int i = 0; i < 4; i++) p[32 + i] = (uint8_t)(crc >> (8 * i));
}

START_TEST(crc32_matches_zlib)
{
    ck_assert_uint_eq(rx_rxa_crc32(0, "123456789", 9), 0xcbf43926u);
    ck_assert_uint_eq(rx_rxa_crc32(rx_rxa_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
}
END_TEST

START_TEST(round_trip)
{
    size_t n;
    uint8_t *bytes = small_artifact(&n);
    rx_rxa *a;
    char err[256];
    ck_assert_uint_eq(n % 1, 0);
    ck_assert_int_eq(rx_rxa_parse(bytes, n, "t.rxa", &a, err, sizeof err), 0);
    ck_assert_uint_eq(a->version, RX_RXA_VERSION);
    const rx_rxa_section *md = rx_rxa_section_get(a, RX_RXA_METADATA);
    ck_assert_ptr_nonnull(md);
    ck_assert_uint_eq(md->size, 16);
    ck_assert(!memcmp(md->data, "{\"target\":\"cpu\"}", 16));
    for (uint32_t i = 0; i < a->nsections; i++) ck_assert_uint_eq(a->sections[i].offset % 64, 0);

    ck_assert_uint_eq(a->nfuncs, 1);
    const rx_rxa_func *f = rx_rxa_find_func(a, "main");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_null(rx_rxa_find_func(a, "nope"));
    ck_assert_uint_eq(f->nsym, 1);
    ck_assert_str_eq(f->syms[0], "n");
    ck_assert_uint_eq(f->nparams, 2);
    ck_assert_str_eq(f->params[0].name, "x");
    ck_assert_uint_eq(f->params[0].kind, RX_RXA_T_TENSOR);
    ck_assert_uint_eq(f->params[0].dtype, RX_RXA_F32);
    ck_assert_int_eq(f->params[0].ndim, 2);
    ck_assert_str_eq(f->params[1].name, "k");
    ck_assert_uint_eq(f->params[1].kind, RX_RXA_T_INT);
    ck_assert_uint_eq(f->result.kind, RX_RXA_T_TUPLE);
    ck_assert_uint_eq(f->result.nfields, 2);
    ck_assert_ptr_null(f->result.fields[0].name);
    ck_assert_uint_eq(f->nregs, 3);
    ck_assert_uint_eq(f->heap_size, 1);
    ck_assert_uint_eq(f->code_words, 12);
    ck_assert_int_eq(a->code[f->code_offset], RX_OP_MATCH_TENSOR);

    /* dims: n -> 5, 4, 2n+1 -> 11, unknown */
    int64_t v, sym = 5;
    uint8_t known0 = 0;
    ck_assert_int_eq(rx_rxa_dim_eval(&f->params[0].dims[0], &sym, NULL, 1, &v, err, sizeof err), 0);
    ck_assert_int_eq(v, 5);
    ck_assert_int_eq(rx_rxa_dim_eval(&f->params[0].dims[1], &sym, NULL, 1, &v, err, sizeof err), 0);
    ck_assert_int_eq(v, 4);
    const rx_rxa_type *r0 = &f->result.fields[0];
    ck_assert_int_eq(rx_rxa_dim_eval(&r0->dims[0], &sym, NULL, 1, &v, err, sizeof err), 0);
    ck_assert_int_eq(v, 11);
    ck_assert_int_eq(rx_rxa_dim_eval(&r0->dims[1], &sym, NULL, 1, &v, err, sizeof err), -1);
    ck_assert_str_eq(err, "unknown dim");
    ck_assert_int_eq(rx_rxa_dim_eval(&r0->dims[0], &sym, &known0, 1, &v, err, sizeof err), -1);
    ck_assert_str_eq(err, "symbol 0 has no value");

    ck_assert_uint_eq(a->nconsts, 1);
    ck_assert_int_eq(a->consts[0].ndim, 2);
    ck_assert_int_eq(a->consts[0].shape[1], 3);
    ck_assert_uint_eq(a->consts[0].nbytes, 24);
    ck_assert_uint_eq((uintptr_t)((const uint8_t *)a->consts[0].data - bytes) % 64, 0);
    ck_assert_float_eq(((const float *)a->consts[0].data)[5], 6.0f);
    char name[16];
    ck_assert_str_eq(rx_rxa_dtype_name(RX_RXA_F32, name, sizeof name), "f32");
    ck_assert_str_eq(rx_rxa_dtype_name(RX_RXA_BOOL, name, sizeof name), "bool");
    ck_assert_uint_eq(rx_rxa_dtype_bytes(RX_RXA_BOOL), 1);
    rx_rxa_free(a);
    free(bytes);
}
END_TEST

START_TEST(dim_expr_floor_semantics)
{
    char err[64];
    int64_t v;
    struct { int64_t a, b; uint32_t op; int64_t want; } cases[] = {
        {-7, 2, RX_RXA_TOK_FLOORDIV, -4}, {-7, 2, RX_RXA_TOK_FLOORMOD, 1},
        {7, -2, RX_RXA_TOK_FLOORDIV, -4}, {7, -2, RX_RXA_TOK_FLOORMOD, -1},
        {7, 2, RX_RXA_TOK_FLOORDIV, 3},   {-8, 2, RX_RXA_TOK_FLOORMOD, 0},
        {3, 9, RX_RXA_TOK_MIN, 3},        {3, 9, RX_RXA_TOK_MAX, 9},
        {3, 9, RX_RXA_TOK_SUB, -6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rx_rxa_tok t[3] = {{RX_RXA_TOK_CONST, cases[i].a}, {RX_RXA_TOK_CONST, cases[i].b},
                           {cases[i].op, 0}};
        rx_rxa_dim d = {3, t};
        ck_assert_int_eq(rx_rxa_dim_eval(&d, NULL, NULL, 0, &v, err, sizeof err), 0);
        ck_assert_int_eq(v, cases[i].want);
    }
    rx_rxa_tok z[3] = {{RX_RXA_TOK_CONST, 1}, {RX_RXA_TOK_CONST, 0}, {RX_RXA_TOK_FLOORDIV, 0}};
    rx_rxa_dim dz = {3, z};
    ck_assert_int_eq(rx_rxa_dim_eval(&dz, NULL, NULL, 0, &v, err, sizeof err), -1);
    ck_assert_str_eq(err, "division by zero");
    rx_rxa_tok o[3] = {{RX_RXA_TOK_CONST, INT64_MAX}, {RX_RXA_TOK_CONST, 2}, {RX_RXA_TOK_MUL, 0}};
    rx_rxa_dim dov = {3, o};
    ck_assert_int_eq(rx_rxa_dim_eval(&dov, NULL, NULL, 0, &v, err, sizeof err), -1);
    ck_assert_str_eq(err, "overflow");
}
END_TEST

START_TEST(every_truncation_fails_cleanly)
{
    size_t n;
    uint8_t *bytes = small_artifact(&n);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    for (size_t k = 0; k < n; k++) {
        rx_rt_err err = {""};
        uint8_t *copy = malloc(k ? k : 1); /* exact size: ASan sees any overread */
        memcpy(copy, bytes, k);
        rx_rt_module *m = rx_rt_load_bytes(ctx, copy, k, "test.rxa", &err);
        ck_assert_ptr_null(m);
        ck_assert_msg(strstr(err.msg, "test.rxa: truncated: ") == err.msg, "at %zu: %s", k, err.msg);
        rx_rxa *a;
        char e2[256];
        ck_assert_int_eq(rx_rxa_parse(copy, k, "x", &a, e2, sizeof e2), -1);
        ck_assert_ptr_null(a);
        free(copy);
    }
    rx_rt_module *m = rx_rt_load_bytes(ctx, bytes, n, "test.rxa", NULL);
    ck_assert_ptr_nonnull(m);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
    free(bytes);
}
END_TEST

START_TEST(truncated_section_message)
{
    size_t n;
    uint8_t *bytes = small_artifact(&n);
    rx_rxa *a;
    ck_assert_int_eq(rx_rxa_parse(bytes, n, "x", &a, NULL, 0), 0);
    const rx_rxa_section *code = rx_rxa_section_get(a, RX_RXA_CODE);
    size_t cut = (size_t)code->offset + 8, end = (size_t)(code->offset + code->size);
    rx_rxa_free(a);
    char err[256], want[256];
    ck_assert_int_eq(rx_rxa_parse(bytes, cut, "artifact.rxa", &a, err, sizeof err), -1);
    snprintf(want, sizeof want, "artifact.rxa: truncated: section CODE ends at byte %zu of %zu",
             end, cut);
    ck_assert_str_eq(err, want);
    free(bytes);
}
END_TEST

START_TEST(every_bit_flip_fails_cleanly)
{
    size_t n;
    uint8_t *bytes = small_artifact(&n);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    int crc = 0, other = 0;
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++) {
            rx_rt_err err = {""};
            bytes[i] ^= (uint8_t)(1u << bit);
            rx_rt_module *m = rx_rt_load_bytes(ctx, bytes, n, "test.rxa", &err);
            bytes[i] ^= (uint8_t)(1u << bit);
            ck_assert_msg(m == NULL, "flip at byte %zu bit %d loaded", i, bit);
            ck_assert_msg(strncmp(err.msg, "test.rxa: ", 10) == 0 && strlen(err.msg) > 12,
                          "flip %zu/%d: %s", i, bit, err.msg);
            if (strstr(err.msg, "CRC-32 mismatch")) crc++;
            else other++;
        }
    ck_assert_int_gt(crc, (int)(n * 8) * 3 / 4); /* almost all are caught by the CRC */
    ck_assert_int_gt(other, 0);                   /* header flips get their own message */
    rx_rt_ctx_free(ctx);
    free(bytes);
}
END_TEST

START_TEST(wrong_magic_and_version)
{
    size_t n;
    uint8_t *bytes = small_artifact(&n);
    char err[256];
    rx_rxa *a;
    bytes[8] = 2;
    ck_assert_int_eq(rx_rxa_parse(bytes, n, "m.rxa", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "m.rxa: unsupported format version 2 (this runtime reads version 1)");
    bytes[8] = 1;
    bytes[1] = 'X';
    ck_assert_int_eq(rx_rxa_parse(bytes, n, "m.rxa", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "m.rxa: not a relax artifact (bad magic)");
    ck_assert_int_eq(rx_rxa_parse((const uint8_t *)"{\"json\": 1}", 11, "m.rxa", &a, err, sizeof err), -1);
    ck_assert_str_eq(err, "m.rxa: not a relax artifact (bad magic)");
    bytes[1] = 'R';
    bytes[n - 1] ^= 1;
    ck_assert_int_eq(rx_rxa_parse(bytes, n, "m.rxa", &a, err, sizeof err), -1);
    ck_assert(strstr(err, "m.rxa: corrupted: CRC-32 mismatch (header 0x") == err);
    free(bytes);
}
END_TEST

START_TEST(writer_bugs_behind_valid_crc)
{
    size_t n;
    uint8_t *bytes = small_artifact(&n);
    rx_rxa *a;
    char err[256];
    ck_assert_int_eq(rx_rxa_parse(bytes, n, "x", &a, NULL, 0), 0);
    size_t funcs = (size_t)rx_rxa_section_get(a, RX_RXA_FUNCS)->offset;
    size_t code = (size_t)rx_rxa_section_get(a, RX_RXA_CODE)->offset;
    uint32_t nstrings = a->nstrings;
    rx_rxa_free(a);

    /* function name -> string 999 */
    uint8_t *p = malloc(n);
    memcpy(p, bytes, n);
    p[funcs + 4] = 0xe7, p[funcs + 5] = 0x03;
    fix_crc(p, n);
    ck_assert_int_eq(rx_rxa_parse(p, n, "w.rxa", &a, err, sizeof err), -1);
    char want[256];
    snprintf(want, sizeof want,
             "w.rxa: FUNCS: string index 999 out of range (%" PRIu32 " strings) (at byte 8 of the section)",
             nstrings);
    ck_assert_str_eq(err, want);

    /* function count huge */
    memcpy(p, bytes, n);
    p[funcs + 3] = 0x7f;
    fix_crc(p, n);
    ck_assert_int_eq(rx_rxa_parse(p, n, "w.rxa", &a, err, sizeof err), -1);
    ck_assert(strstr(err, "w.rxa: FUNCS: function count 2130706433 exceeds the section"));

    /* a bytecode register out of range is caught by the verifier at load */
    memcpy(p, bytes, n);
    p[code + 8] = 9; /* MATCH_TENSOR r9 */
    fix_crc(p, n);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_err e;
    ck_assert_ptr_null(rx_rt_load_bytes(ctx, p, n, "w.rxa", &e));
    ck_assert_str_eq(e.msg, "w.rxa: bad bytecode: main: pc 0: register 9 out of range (3)");

    /* bad opcode */
    memcpy(p, bytes, n);
    p[code] = 200;
    fix_crc(p, n);
    ck_assert_ptr_null(rx_rt_load_bytes(ctx, p, n, "w.rxa", &e));
    ck_assert_str_eq(e.msg, "w.rxa: bad bytecode: main: pc 0: bad opcode 200");
    rx_rt_ctx_free(ctx);
    free(p);
    free(bytes);
}
END_TEST

START_TEST(load_file_errors)
{
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_err e;
    ck_assert_ptr_null(rx_rt_load_file(ctx, "/nonexistent/a.rxa", &e));
    ck_assert_str_eq(e.msg, "/nonexistent/a.rxa: No such file or directory");
    size_t n;
    uint8_t *bytes = small_artifact(&n);
    char path[] = "/tmp/rxrt-test-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, bytes, n / 2), (ssize_t)(n / 2));
    close(fd);
    ck_assert_ptr_null(rx_rt_load_file(ctx, path, &e));
    ck_assert(strstr(e.msg, ": truncated: "));
    ck_assert(strncmp(e.msg, "rxrt-test-", 10) == 0); /* the base name */
    FILE *f = fopen(path, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
    rx_rt_module *m = rx_rt_load_file(ctx, path, &e);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(rx_rt_find_function(m, "main"), 0);
    ck_assert_int_eq(rx_rt_find_function(m, "x"), -1);
    ck_assert_uint_eq(rx_rt_module_artifact(m)->nfuncs, 1);
    rx_rt_module_free(m);
    unlink(path);
    rx_rt_ctx_free(ctx);
    free(bytes);
}
END_TEST

/* A function using most instruction kinds: match, arithmetic, alloc, tuple, branch,
 * call, constant. */
static uint8_t *rich_artifact(size_t *n)
{
    static const rx_rxa_tok n_tok[] = {{RX_RXA_TOK_VAR, 0}}, four[] = {{RX_RXA_TOK_CONST, 4}};
    static const rx_rxa_dim dims[] = {{1, n_tok}, {1, four}};
    static const char *const syms[] = {"n"};
    rx_rxa_type params[2] = {rt_tensor("x", RX_RXA_F32, 2, dims), rt_int("k")};
    rx_rxa_func f = rt_func("main", 2, params, 8, 4);
    f.nsym = 1;
    f.syms = syms;
    rx_rxa_func g = rt_func("id", 1, params, 1, 0);
    g.nsym = 1;
    g.syms = syms;
    rx_rxa_builder *b = rx_rxa_builder_new();
    float cd[4] = {1, 2, 3, 4};
    int64_t cs[1] = {4};
    uint32_t k = rx_rxa_add_const(b, RX_RXA_F32, 1, cs, cd, sizeof cd);
    uint32_t msg = rx_rxa_add_string(b, "main: x: expected (n, 4)");
    rx_rxa_code c = {0};
    RX_EMIT(&c, RX_OP_MATCH_TENSOR, 0, RX_RXA_F32, 2, msg, 2, RX_M_STORE, 0, RX_M_IMM, 4);
    RX_EMIT(&c, RX_OP_MATCH_INT, 1, msg, RX_M_STORE, 1);
    RX_EMIT(&c, RX_OP_FLOORDIV, 2, RX_D_SLOT, 1, RX_D_IMM, 2);
    RX_EMIT(&c, RX_OP_MUL, 3, RX_D_SLOT, 0, RX_D_IMM, 16);
    RX_EMIT(&c, RX_OP_ALLOC_STORAGE, 2, RX_D_SLOT, 3, RX_DEV_CPU);
    RX_EMIT(&c, RX_OP_ALLOC_TENSOR, 3, 2, RX_D_IMM, 0, RX_RXA_F32, 2, RX_D_SLOT, 0, RX_D_IMM, 4);
    RX_EMIT(&c, RX_OP_LOADK, 4, k);
    RX_EMIT(&c, RX_OP_MKSHAPE, 5, 2, RX_D_SLOT, 2, RX_D_IMM, 7);
    size_t j = RX_EMIT(&c, RX_OP_JMPIFNOT, 1, -1);
    RX_EMIT(&c, RX_OP_CALL, 6, 1, 1, 3);
    c.w[j + 2] = (int64_t)c.n;
    RX_EMIT(&c, RX_OP_TUPLE, 7, 4, 3, 4, 5, 6);
    RX_EMIT(&c, RX_OP_GETITEM, 6, 7, 2);
    RX_EMIT(&c, RX_OP_RET, 7);
    rx_rxa_add_function(b, &f, c.w, c.n);
    rx_rxa_code_free(&c);
    RX_EMIT(&c, RX_OP_RET, 0);
    rx_rxa_add_function(b, &g, c.w, c.n);
    rx_rxa_code_free(&c);
    uint8_t *bytes;
    ck_assert_int_eq(rx_rxa_serialize(b, &bytes, n), 0);
    rx_rxa_builder_free(b);
    return bytes;
}

START_TEST(mutations_behind_valid_crc)
{
    size_t n;
    uint8_t *bytes = rich_artifact(&n);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_set_memory_limit(ctx, 1 << 20);
    float x[8] = {0};
    int64_t shape[2] = {2, 4};
    DLTensor in = rt_dl(x, RX_RXA_F32, 2, shape);
    rx_rt_arg args[2] = {rt_targ(&in), rt_iarg(3)};
    int loaded = 0, ran = 0;
    rx_rt_err e0;
    rx_rt_module *m0 = rx_rt_load_bytes(ctx, bytes, n, "m.rxa", &e0);
    ck_assert_msg(m0 != NULL, "%s", e0.msg);
    rx_rt_module_free(m0);
    uint8_t *p = malloc(n);
    for (size_t i = RX_RXA_HEADER_SIZE; i < n; i++) {
        static const uint8_t vals[] = {0x00, 0x01, 0x02, 0x20, 0x7f, 0x80, 0xff};
        for (size_t v = 0; v <= sizeof vals; v++) {
            memcpy(p, bytes, n);
            p[i] = v < sizeof vals ? vals[v] : (uint8_t)(bytes[i] + 1);
            if (p[i] == bytes[i]) continue;
            fix_crc(p, n);
            rx_rt_err err = {""};
            rx_rt_module *m = rx_rt_load_bytes(ctx, p, n, "m.rxa", &err);
            if (!m) {
                ck_assert_msg(strncmp(err.msg, "m.rxa: ", 7) == 0, "%zu: %s", i, err.msg);
                continue;
            }
            loaded++;
            for (int f = 0; f < (int)rx_rt_module_artifact(m)->nfuncs; f++) {
                rx_rt_outputs *out = NULL;
                int nparams = (int)rx_rt_module_artifact(m)->funcs[f].nparams;
                if (nparams > 2) continue;
                if (rx_rt_call(m, f, args, nparams, &out, NULL, &err) == 0) ran++;
                else ck_assert(err.msg[0] != 0);
                rx_rt_outputs_free(out);
            }
            rx_rt_module_free(m);
        }
    }
    ck_assert_int_gt(loaded, 0);
    ck_assert_int_gt(ran, 0);
    rx_rt_stats s;
    rx_rt_get_stats(ctx, &s);
    ck_assert_int_eq(s.live_bytes, 0);
    free(p);
    rx_rt_ctx_free(ctx);
    free(bytes);
}
END_TEST

static Suite *rxa_suite(void)
{
    Suite *s = suite_create("rxa");
    TCase *tc = tcase_create("format");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, crc32_matches_zlib);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, dim_expr_floor_semantics);
    tcase_add_test(tc, every_truncation_fails_cleanly);
    tcase_add_test(tc, truncated_section_message);
    tcase_add_test(tc, every_bit_flip_fails_cleanly);
    tcase_add_test(tc, wrong_magic_and_version);
    tcase_add_test(tc, writer_bugs_behind_valid_crc);
    tcase_add_test(tc, load_file_errors);
    tcase_add_test(tc, mutations_behind_valid_crc);
    suite_add_tcase(s, tc);
    return s;
}

RT_RUN_SUITE(rxa_suite)
