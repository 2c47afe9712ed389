/*
 * test_codegen_c.c — loop functions compiled to C and run through the kernel ABI.
 *
 * Each test reads a small relax-json module, generates C, builds it with
 * -Wall -Wextra -Werror, dlopens it, calls the kernel with test data and compares with
 * values the test computes itself: integer floor division from its definition, f16
 * and bf16 rounding with bit-level reference conversions written here (independent
 * of the generated helpers), float intrinsics against libm within a tolerance.
 */
#include <math.h>

#include "cg_test.h"

#define MOD(body) "{'format': 'relax-json', 'version': 1, 'functions': {" body "}}"

/* ivars for f: the value of each svar looked up by name in names/vals. */
static void ivars_for(const rx_func *f, const char *const *names, const int64_t *vals, int n,
                      int64_t *out)
{
    for (int j = 0; j < f->nsvars; j++) {
        int k = 0;
        while (k < n && strcmp(names[k], f->svars[j]->name)) k++;
        ck_assert_msg(k < n, "no value for svar %s", f->svars[j]->name);
        out[j] = vals[k];
    }
}

static int64_t dbits(double v)
{
    int64_t b;
    memcpy(&b, &v, 8);
    return b;
}

/* ---------------------------------------------------------------- f16 / bf16 refs */

/* float -> binary16 bits, round to nearest even (the classic bit-level algorithm). */
static uint16_t ref_f2h(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: inf */
    if (ax < 0x38800000u) {                                    /* below 2^-14: subnormal */
        if (ax < 0x33000000u) return (uint16_t)sign;           /* < 2^-25 */
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* units of 2^-24 */
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((ax >> 13) - (112u << 10)), rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static float ref_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, x;
    if (e == 0) {
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    if (e == 31) x = sign | 0x7f800000u | (m << 13);
    else x = sign | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static float ref_h(float f) { return ref_h2f(ref_f2h(f)); }

/* bf16 by rounding the value to 8 significant bits with frexp/rint. */
static float ref_bf(double x)
{
    if (x == 0 || isnan(x) || isinf(x)) return (float)x;
    int e;
    double m = frexp(x, &e); /* x = m * 2^e, 0.5 <= |m| < 1 */
    if (e - 1 < -126) e = -125;
    double r = ldexp(rint(ldexp(x, 8 - e)), e - 8);
    if (fabs(r) > 0x1.fep127) return x < 0 ? -INFINITY : INFINITY;
    (void)m;
    return (float)r;
}

static uint16_t ref_f2bf(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t)(x >> 16); /* f is already bf16-exact */
}

static float ref_bf2f(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* ---------------------------------------------------------------- tests */

START_TEST(add_symbolic)
{
    rx_module *m = cg_read(MOD(
        "'add.one': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': ['n'], 'dtype': 'f32'}},"
        " {'name': 'B', 'buffer': {'shape': ['n'], 'dtype': 'f32'}},"
        " {'name': 'C', 'buffer': {'shape': ['n'], 'dtype': 'f32'}}],"
        " 'body': [{'for': 'i', 'extent': 'n', 'body': [{'store': 'C[i]', 'value': 'A[i] + B[i]'}]}]}"));
    cg_lib lib = cg_build(m);
    cg_kernel k = cg_get(lib, "add.one");
    float a[7], b[7], c[8];
    for (int i = 0; i < 7; i++) a[i] = (float)i * 1.5f, b[i] = 10.0f - (float)i;
    c[7] = 42.0f;
    void *data[] = {a, b, c};
    int64_t iv[] = {7};
    ck_assert_int_eq(k(data, iv), 0);
    for (int i = 0; i < 7; i++) ck_assert_float_eq(c[i], a[i] + b[i]);
    ck_assert_float_eq(c[7], 42.0f); /* nothing written past n */
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

START_TEST(matmul_init_reduce)
{
    rx_module *m = cg_read(MOD(
        "'mm': {'kind': 'tir', 'params': ["
        " {'name': 'X', 'buffer': {'shape': ['n', 5], 'dtype': 'f32'}},"
        " {'name': 'W', 'buffer': {'shape': [5, 3], 'dtype': 'f32'}},"
        " {'name': 'Y', 'buffer': {'shape': ['n', 3], 'dtype': 'f32'}}],"
        " 'body': [{'grid': ['i', 'j', 'k'], 'extents': ['n', 3, 5], 'body': ["
        "   {'block': 'mm', 'init': [{'store': 'Y[i, j]', 'value': '0'}],"
        "    'body': [{'store': 'Y[i, j]', 'value': 'Y[i, j] + X[i, k] * W[k, j]'}]}]}]}"));
    cg_lib lib = cg_build(m);
    cg_kernel k = cg_get(lib, "mm");
    enum { N = 4 };
    float x[N * 5], w[15], y[N * 3];
    for (int i = 0; i < N * 5; i++) x[i] = (float)(i % 7) - 2.5f;
    for (int i = 0; i < 15; i++) w[i] = (float)(i % 4) * 0.25f + 1.0f;
    for (int i = 0; i < N * 3; i++) y[i] = 1e9f; /* init must overwrite */
    void *data[] = {x, w, y};
    int64_t iv[] = {N};
    ck_assert_int_eq(k(data, iv), 0);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < 3; j++) {
            float s = 0;
            for (int kk = 0; kk < 5; kk++) s += x[i * 5 + kk] * w[kk * 3 + j];
            ck_assert_float_eq_tol(y[i * 3 + j], s, 1e-5f);
        }
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

/* Explicit iterators with binds offset from loops that start at nonzero minima. */
START_TEST(reduction_explicit_iters)
{
    rx_module *m = cg_read(MOD(
        "'rsum': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': ['m', 4], 'dtype': 'f64'}},"
        " {'name': 'R', 'buffer': {'shape': ['m'], 'dtype': 'f64'}}],"
        " 'body': [{'for': 'io', 'min': 10, 'extent': 'm', 'body': ["
        "  {'for': 'ko', 'min': 3, 'extent': 4, 'body': ["
        "   {'block': 'red', 'iters': ["
        "     {'var': 'vi', 'kind': 'spatial', 'dom': 'm', 'bind': 'io - 10'},"
        "     {'var': 'vk', 'kind': 'reduce', 'dom': 4, 'bind': 'ko - 3'}],"
        "    'init': [{'store': 'R[vi]', 'value': '100.0'}],"
        "    'body': [{'store': 'R[vi]', 'value': 'R[vi] + A[vi, vk] * 2.0'}]}]}]}]}"));
    cg_lib lib = cg_build(m);
    cg_kernel k = cg_get(lib, "rsum");
    double a[3 * 4], r[3] = {-1, -1, -1};
    for (int i = 0; i < 12; i++) a[i] = i * 0.5;
    void *data[] = {a, r};
    int64_t iv[] = {3};
    ck_assert_int_eq(k(data, iv), 0);
    for (int i = 0; i < 3; i++) {
        double s = 100.0;
        for (int kk = 0; kk < 4; kk++) s += a[i * 4 + kk] * 2.0;
        ck_assert_double_eq(r[i], s);
    }
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

static int64_t ref_floordiv(int64_t a, int64_t b)
{
    if (b == 0) return 0;
    return (int64_t)floor((double)a / (double)b);
}

START_TEST(int_floor_wrap_shift)
{
    rx_module *m = cg_read(MOD(
        "'ints': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': [9], 'dtype': 'i32'}},"
        " {'name': 'B', 'buffer': {'shape': [9], 'dtype': 'i32'}},"
        " {'name': 'Q', 'buffer': {'shape': [9], 'dtype': 'i32'}},"
        " {'name': 'R', 'buffer': {'shape': [9], 'dtype': 'i32'}},"
        " {'name': 'S', 'buffer': {'shape': [9], 'dtype': 'i32'}},"
        " {'name': 'P', 'buffer': {'shape': [9], 'dtype': 'i8'}},"
        " {'name': 'U', 'buffer': {'shape': [9], 'dtype': 'u16'}},"
        " {'name': 'L', 'buffer': {'shape': [9], 'dtype': 'i64'}},"
        " {'name': 'M', 'buffer': {'shape': [9], 'dtype': 'i32'}},"
        " {'name': 'N', 'buffer': {'shape': [9], 'dtype': 'i64'}}],"
        " 'body': [{'for': 'i', 'extent': 9, 'body': ["
        "  {'store': 'Q[i]', 'value': 'A[i] // B[i]'},"
        "  {'store': 'R[i]', 'value': 'A[i] % B[i]'},"
        "  {'store': 'S[i]', 'value': '(A[i] >> 1) ^ (i32(i) << 2) | (~A[i] & 3)'},"
        "  {'store': 'P[i]', 'value': 'i8(A[i]) * 3 + i8(min(B[i], 5))'},"
        "  {'store': 'U[i]', 'value': 'u16(A[i]) * u16(B[i]) - u16(max(A[i], B[i]))'},"
        "  {'store': 'L[i]', 'value': '(i - 4) // 3 * 100 + (i - 4) % 3 + i64(abs(B[i]))'},"
        "  {'store': 'M[i]', 'value': 'A[i] // 4 + A[i] % 8'},"
        "  {'store': 'N[i]', 'value': 'i64(A[i]) // 16 * 100 + i64(A[i]) % 16'}]}]}"));
    cg_lib lib = cg_build(m);
    cg_kernel k = cg_get(lib, "ints");
    int32_t a[9] = {7, -7, 7, -7, 0, 5, -6, INT32_MIN, 100000};
    int32_t b[9] = {2, 2, -2, -2, 3, 0, 3, -1, 70000};
    int32_t q[9], r[9], s[9];
    int8_t p[9];
    uint16_t u[9];
    int64_t l[9], n[9];
    int32_t mm[9];
    void *data[] = {a, b, q, r, s, p, u, l, mm, n};
    ck_assert_int_eq(k(data, NULL), 0);
    for (int i = 0; i < 9; i++) {
        int64_t eq = ref_floordiv(a[i], b[i]);
        int64_t er = b[i] == 0 ? 0 : (int64_t)a[i] - (int64_t)b[i] * eq;
        ck_assert_int_eq(q[i], (int32_t)(uint32_t)(uint64_t)eq);
        ck_assert_int_eq(r[i], (int32_t)er);
        int32_t es = (int32_t)(((uint32_t)(a[i] >> 1) ^ ((uint32_t)i << 2)) | (uint32_t)(~a[i] & 3));
        ck_assert_int_eq(s[i], es);
        int a8 = (int8_t)(uint8_t)(uint32_t)a[i], b8 = (int8_t)(uint8_t)(uint32_t)(b[i] < 5 ? b[i] : 5);
        ck_assert_int_eq(p[i], (int8_t)(uint8_t)(unsigned)(a8 * 3 + b8));
        uint16_t ua = (uint16_t)(uint32_t)a[i], ub = (uint16_t)(uint32_t)b[i];
        uint16_t um = (uint16_t)(uint32_t)(a[i] > b[i] ? a[i] : b[i]);
        ck_assert_uint_eq(u[i], (uint16_t)((uint32_t)ua * ub - um));
        int64_t e_abs = b[i] < 0 ? -(int64_t)b[i] : b[i];
        int64_t el = ref_floordiv(i - 4, 3) * 100 + ((i - 4) - 3 * ref_floordiv(i - 4, 3)) + e_abs;
        ck_assert_int_eq(l[i], el);
        /* by powers of two (a shift and a mask in C): floor semantics for negatives too */
        int64_t d4 = ref_floordiv(a[i], 4), d8 = ref_floordiv(a[i], 8), d16 = ref_floordiv(a[i], 16);
        ck_assert_int_eq(mm[i], (int32_t)(d4 + (a[i] - 8 * d8)));
        ck_assert_int_eq(n[i], d16 * 100 + (a[i] - 16 * d16));
    }
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

static const char *const F16_MOD = MOD(
    "'h': {'kind': 'tir', 'params': ["
    " {'name': 'A', 'buffer': {'shape': ['n'], 'dtype': 'f16'}},"
    " {'name': 'B', 'buffer': {'shape': ['n'], 'dtype': 'f16'}},"
    " {'name': 'C', 'buffer': {'shape': ['n'], 'dtype': 'f16'}},"
    " {'name': 'E', 'buffer': {'shape': ['n'], 'dtype': 'f16'}},"
    " {'name': 'F', 'buffer': {'shape': ['n'], 'dtype': 'f32'}},"
    " {'name': 'G', 'buffer': {'shape': ['n'], 'dtype': 'f16'}}],"
    " 'body': [{'for': 'i', 'extent': 'n', 'body': ["
    "  {'store': 'C[i]', 'value': 'A[i] * B[i] + A[i]'},"
    "  {'store': 'E[i]', 'value': 'exp(A[i]) - 0.1'},"
    "  {'store': 'F[i]', 'value': 'f32(A[i] / B[i])'},"
    "  {'store': 'G[i]', 'value': 'f16(F[i] * 3.0)'}]}]}");

static void check_f16(const char *const *extra)
{
    rx_module *m = cg_read(F16_MOD);
    cg_lib lib = cg_build_with(m, extra);
    cg_kernel k = cg_get(lib, "h");
    enum { N = 8 };
    float av[N] = {1.0009765625f, 3.3f, -2.7f, 300.0f, 6.1e-5f, -0.0f, 1e-7f, 11.0f};
    float bv[N] = {1.0009765625f, 0.7f, 1.9f, 300.0f, 0.5f, 2.0f, 3.0f, -0.1f};
    uint16_t a[N], b[N], c[N], e[N], g[N];
    float f[N];
    for (int i = 0; i < N; i++) a[i] = ref_f2h(av[i]), b[i] = ref_f2h(bv[i]);
    void *data[] = {a, b, c, e, f, g};
    int64_t iv[] = {N};
    ck_assert_int_eq(k(data, iv), 0);
    float tenth = ref_h(0.1f);
    for (int i = 0; i < N; i++) {
        float x = ref_h2f(a[i]), y = ref_h2f(b[i]);
        ck_assert_uint_eq(c[i], ref_f2h(ref_h(x * y) + x));
        ck_assert_uint_eq(e[i], ref_f2h(ref_h(expf(x)) - tenth));
        float q = ref_h(x / y);
        ck_assert_float_eq(f[i], q);
        ck_assert_uint_eq(g[i], ref_f2h(q * 3.0f));
    }
    cg_close(lib);
    rx_module_free(m);
}

START_TEST(f16_native) { check_f16(NULL); }
END_TEST

START_TEST(f16_software)
{
    static const char *const soft[] = {"-DRX_NO_FLOAT16", NULL};
    check_f16(soft);
}
END_TEST

START_TEST(bf16_arith)
{
    rx_module *m = cg_read(MOD(
        "'bf': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': [6], 'dtype': 'bf16'}},"
        " {'name': 'B', 'buffer': {'shape': [6], 'dtype': 'bf16'}},"
        " {'name': 'C', 'buffer': {'shape': [6], 'dtype': 'bf16'}},"
        " {'name': 'D', 'buffer': {'shape': [6], 'dtype': 'f64'}},"
        " {'name': 'E', 'buffer': {'shape': [6], 'dtype': 'bf16'}}],"
        " 'body': [{'for': 'i', 'extent': 6, 'body': ["
        "  {'store': 'C[i]', 'value': 'A[i] * B[i] + A[i]'},"
        "  {'store': 'D[i]', 'value': 'f64(sqrt(A[i] * A[i]))'},"
        "  {'store': 'E[i]', 'value': 'bf16(D[i] * 1.00390625)'}]}]}"));
    cg_lib lib = cg_build(m);
    cg_kernel k = cg_get(lib, "bf");
    float av[6] = {1.5f, -3.14159f, 1e30f, 7.0f, 1e-39f, 255.5f};
    float bv[6] = {2.71828f, 0.333f, 1e10f, -0.0078125f, 2.0f, 1.00390625f};
    uint16_t a[6], b[6], c[6], e[6];
    double dd[6];
    for (int i = 0; i < 6; i++) a[i] = ref_f2bf(ref_bf(av[i])), b[i] = ref_f2bf(ref_bf(bv[i]));
    void *data[] = {a, b, c, dd, e};
    ck_assert_int_eq(k(data, NULL), 0);
    for (int i = 0; i < 6; i++) {
        float x = ref_bf2f(a[i]), y = ref_bf2f(b[i]);
        ck_assert_uint_eq(c[i], ref_f2bf(ref_bf((double)ref_bf((double)x * y) + x)));
        float sq = ref_bf(sqrtf(ref_bf((double)x * x)));
        ck_assert_double_eq(dd[i], (double)sq);
        ck_assert_uint_eq(e[i], ref_f2bf(ref_bf((double)sq * 1.00390625)));
    }
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

START_TEST(intrinsics_select_casts)
{
    rx_module *m = cg_read(MOD(
        "'mathf': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': ['n'], 'dtype': 'f32'}},"
        " {'name': 'D', 'buffer': {'shape': ['n'], 'dtype': 'f64'}},"
        " {'name': 'Y', 'buffer': {'shape': ['n', 15], 'dtype': 'f32'}},"
        " {'name': 'Z', 'buffer': {'shape': ['n', 15], 'dtype': 'f64'}},"
        " {'name': 'I', 'buffer': {'shape': ['n', 4], 'dtype': 'i32'}},"
        " {'name': 'M', 'buffer': {'shape': ['n'], 'dtype': 'bool'}}],"
        " 'body': [{'for': 'i', 'extent': 'n', 'body': ["
        "  {'let': 'v', 'value': 'abs(A[i]) + 0.5', 'body': ["
        "   {'store': 'Y[i, 0]', 'value': 'exp(v)'}, {'store': 'Y[i, 1]', 'value': 'log(v)'},"
        "   {'store': 'Y[i, 2]', 'value': 'sqrt(v)'}, {'store': 'Y[i, 3]', 'value': 'rsqrt(v)'},"
        "   {'store': 'Y[i, 4]', 'value': 'tanh(A[i])'}, {'store': 'Y[i, 5]', 'value': 'sigmoid(A[i])'},"
        "   {'store': 'Y[i, 6]', 'value': 'erf(A[i])'}, {'store': 'Y[i, 7]', 'value': 'pow(v, 1.5)'},"
        "   {'store': 'Y[i, 8]', 'value': 'abs(A[i])'}, {'store': 'Y[i, 9]', 'value': 'floor(A[i])'},"
        "   {'store': 'Y[i, 10]', 'value': 'ceil(A[i])'}, {'store': 'Y[i, 11]', 'value': 'round(A[i])'},"
        "   {'store': 'Y[i, 12]', 'value': 'sin(A[i])'}, {'store': 'Y[i, 13]', 'value': 'cos(A[i])'},"
        "   {'store': 'Y[i, 14]', 'value': 'select(A[i] > 0.0, A[i], 0.5 * A[i])'}]},"
        "  {'let': 'w', 'value': 'abs(D[i]) + 0.5', 'body': ["
        "   {'store': 'Z[i, 0]', 'value': 'exp(w)'}, {'store': 'Z[i, 1]', 'value': 'log(w)'},"
        "   {'store': 'Z[i, 2]', 'value': 'sqrt(w)'}, {'store': 'Z[i, 3]', 'value': 'rsqrt(w)'},"
        "   {'store': 'Z[i, 4]', 'value': 'tanh(D[i])'}, {'store': 'Z[i, 5]', 'value': 'sigmoid(D[i])'},"
        "   {'store': 'Z[i, 6]', 'value': 'erf(D[i])'}, {'store': 'Z[i, 7]', 'value': 'pow(w, 1.5)'},"
        "   {'store': 'Z[i, 8]', 'value': 'abs(D[i])'}, {'store': 'Z[i, 9]', 'value': 'floor(D[i])'},"
        "   {'store': 'Z[i, 10]', 'value': 'ceil(D[i])'}, {'store': 'Z[i, 11]', 'value': 'round(D[i])'},"
        "   {'store': 'Z[i, 12]', 'value': 'sin(D[i])'}, {'store': 'Z[i, 13]', 'value': 'cos(D[i])'},"
        "   {'store': 'Z[i, 14]', 'value': 'f64(A[i]) / D[i]'}]},"
        "  {'store': 'I[i, 0]', 'value': 'i32(A[i])'},"
        "  {'store': 'I[i, 1]', 'value': 'i32(u8(i32(D[i] * 100.0)))'},"
        "  {'store': 'I[i, 2]', 'value': 'i32(bool(A[i]))+ i32(A[i] != A[i])'},"
        "  {'store': 'I[i, 3]', 'value': 'select(i % 2 == 0 && !(A[i] < 0.0), 1, -1)'},"
        "  {'store': 'M[i]', 'value': 'A[i] >= 0.0 || D[i] > 1.0'}]}]}"));
    cg_lib lib = cg_build(m);
    cg_kernel k = cg_get(lib, "mathf");
    enum { N = 8 };
    float a[N] = {2.5f, -0.5f, 3.5f, -2.5f, 0.3f, -1.7f, 0.0f, 10.25f};
    double dv[N] = {2.5, -0.5, 3.5, -2.5, 0.3, -1.7, 1.0e-3, 7.125};
    float y[N * 15];
    double z[N * 15];
    int32_t in[N * 4];
    uint8_t mk[N];
    void *data[] = {a, dv, y, z, in, mk};
    int64_t iv[] = {N};
    ck_assert_int_eq(k(data, iv), 0);
    for (int i = 0; i < N; i++) {
        float x = a[i], v = fabsf(x) + 0.5f;
        float ey[15] = {expf(v), logf(v), sqrtf(v), 1.0f / sqrtf(v), tanhf(x),
                        1.0f / (1.0f + expf(-x)), erff(x), powf(v, 1.5f), fabsf(x), floorf(x),
                        ceilf(x), rintf(x), sinf(x), cosf(x), x > 0 ? x : 0.5f * x};
        for (int j = 0; j < 15; j++)
            ck_assert_msg(fabsf(y[i * 15 + j] - ey[j]) <= 1e-6f * (1 + fabsf(ey[j])),
                          "f32 [%d,%d]: %g vs %g", i, j, y[i * 15 + j], ey[j]);
        double d = dv[i], w = fabs(d) + 0.5;
        double ez[15] = {exp(w), log(w), sqrt(w), 1.0 / sqrt(w), tanh(d), 1.0 / (1.0 + exp(-d)),
                         erf(d), pow(w, 1.5), fabs(d), floor(d), ceil(d), rint(d), sin(d), cos(d),
                         (double)x / d};
        for (int j = 0; j < 15; j++)
            ck_assert_msg(fabs(z[i * 15 + j] - ez[j]) <= 1e-14 * (1 + fabs(ez[j])),
                          "f64 [%d,%d]: %g vs %g", i, j, z[i * 15 + j], ez[j]);
        ck_assert_int_eq(in[i * 4 + 0], (int32_t)x);
        ck_assert_int_eq(in[i * 4 + 1], (int32_t)(uint8_t)(uint32_t)(int32_t)(d * 100.0));
        ck_assert_int_eq(in[i * 4 + 2], x != 0.0f);
        ck_assert_int_eq(in[i * 4 + 3], (i % 2 == 0 && !(x < 0)) ? 1 : -1);
        ck_assert_uint_eq(mk[i], x >= 0 || d > 1.0);
    }
    /* round is nearest-even, as NumPy's */
    ck_assert_float_eq(y[0 * 15 + 11], 2.0f);
    ck_assert_float_eq(y[2 * 15 + 11], 4.0f);
    ck_assert_float_eq(y[3 * 15 + 11], -2.0f);
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

/* alloc (global and local), let, if/else, nonzero loop minimum, scalar parameters. */
START_TEST(alloc_let_if_params)
{
    rx_module *m = cg_read(MOD(
        "'mix': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': ['n'], 'dtype': 'f32'}},"
        " {'name': 'alpha', 'dtype': 'f32'},"
        " {'name': 'B', 'buffer': {'shape': ['n'], 'dtype': 'f32'}},"
        " {'name': 'off', 'dtype': 'i64'},"
        " {'name': 'C', 'buffer': {'shape': ['n', 2], 'dtype': 'i64'}}],"
        " 'body': ["
        "  {'alloc': 'T', 'shape': ['n'], 'dtype': 'f32', 'scope': 'global'},"
        "  {'for': 'i', 'extent': 'n', 'body': [{'store': 'T[i]', 'value': 'A[i] * alpha'}]},"
        "  {'for': 'i', 'extent': 'n', 'body': ["
        "   {'alloc': 'acc', 'shape': [2], 'dtype': 'f32', 'scope': 'local'},"
        "   {'store': 'acc[0]', 'value': 'T[i] + T[n - 1 - i]'},"
        "   {'store': 'acc[1]', 'value': 'acc[0] * 2.0'},"
        "   {'let': 'h', 'value': 'acc[1] + f32(off)', 'body': ["
        "    {'if': 'i < n // 2', 'then': [{'store': 'B[i]', 'value': 'h'}],"
        "     'else': [{'store': 'B[i]', 'value': '-h'}]}]}]},"
        "  {'for': 'j', 'min': 2, 'extent': 'n - 2', 'kind': 'unrolled', 'body': ["
        "   {'for': 't', 'min': -1, 'extent': 2, 'kind': 'vectorized', 'body': ["
        "    {'store': 'C[j, t + 1]', 'value': 'j * 10 + t + off'}]}]},"
        "  {'for': 'p', 'extent': 2, 'kind': 'parallel', 'body': ["
        "   {'alloc': 'big', 'shape': ['n', 4096], 'dtype': 'f64', 'scope': 'local'},"
        "   {'store': 'big[n - 1, 4095]', 'value': 'f64(p)'},"
        "   {'store': 'C[p, p]', 'value': 'i64(big[n - 1, 4095]) - 7'}]}]}"));
    cg_lib lib = cg_build(m);
    cg_kernel k = cg_get(lib, "mix");
    enum { N = 5 };
    float a[N] = {1, 2, 3, 4, 5}, b[N];
    int64_t c[N * 2];
    for (int i = 0; i < N * 2; i++) c[i] = -99;
    void *data[] = {a, b, c};
    const char *names[] = {"n", "alpha", "off"};
    int64_t vals[] = {N, dbits(0.5), 3}, iv[3];
    ivars_for(m->funcs[0], names, vals, 3, iv);
    ck_assert_int_eq(k(data, iv), 0);
    for (int i = 0; i < N; i++) {
        float h = (a[i] * 0.5f + a[N - 1 - i] * 0.5f) * 2.0f + 3.0f;
        ck_assert_float_eq(b[i], i < N / 2 ? h : -h);
    }
    for (int j = 2; j < N; j++)
        for (int t = -1; t < 1; t++) ck_assert_int_eq(c[j * 2 + t + 1], j * 10 + t + 3);
    ck_assert_int_eq(c[0], -7);
    ck_assert_int_eq(c[3], -6);
    ck_assert_int_eq(c[1], -99);
    ck_assert_int_eq(c[2], -99);
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

/* A heap allocation that cannot succeed makes the kernel return RX_KERNEL_ENOMEM,
 * freeing what it already allocated (ASan in the test process would not see the .so's
 * leak, so the freeing is checked by reading the text). */
START_TEST(alloc_failure_returns_code)
{
    rx_module *m = cg_read(MOD(
        "'oom': {'kind': 'tir', 'params': ["
        " {'name': 'A', 'buffer': {'shape': [1], 'dtype': 'f32'}}, {'name': 'n', 'dtype': 'i64'}],"
        " 'body': [{'alloc': 'T', 'shape': [4], 'dtype': 'f32'},"
        "  {'alloc': 'U', 'shape': ['n'], 'dtype': 'f32'},"
        "  {'store': 'U[0]', 'value': '1.0'}, {'store': 'T[0]', 'value': 'U[0]'},"
        "  {'store': 'A[0]', 'value': 'T[0]'}]}"));
    cg_lib lib = cg_build(m);
    cg_kernel k = cg_get(lib, "oom");
    float a[1] = {0};
    void *data[] = {a};
    int64_t huge[] = {INT64_MAX}, neg[] = {-1}, one[] = {1};
    ck_assert_int_eq(k(data, huge), RX_KERNEL_ENOMEM);
    ck_assert_int_eq(k(data, neg), RX_KERNEL_ENOMEM);
    ck_assert_float_eq(a[0], 0.0f);
    ck_assert_int_eq(k(data, one), 0);
    ck_assert_float_eq(a[0], 1.0f);
    rx_sb c = {0};
    rx_diags d;
    rx_diags_init(&d);
    ck_assert(rx_codegen_c(m, &c, &d));
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&c), "if (!U_"));
    ck_assert_ptr_nonnull(strstr(rx_sb_str(&c), "free(T_"));
    rx_sb_free(&c);
    rx_diags_free(&d);
    cg_close(lib);
    rx_module_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("codegen_c");
    TCase *tc = tcase_create("run");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, add_symbolic);
    tcase_add_test(tc, matmul_init_reduce);
    tcase_add_test(tc, reduction_explicit_iters);
    tcase_add_test(tc, int_floor_wrap_shift);
    tcase_add_test(tc, f16_native);
    tcase_add_test(tc, f16_software);
    tcase_add_test(tc, bf16_arith);
    tcase_add_test(tc, intrinsics_select_casts);
    tcase_add_test(tc, alloc_let_if_params);
    tcase_add_test(tc, alloc_failure_returns_code);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
