/*
 * c_prelude.c — the prelude of a generated C file: the includes, the macros every kernel
 * uses (RX_PARALLEL, RX_SIMD, RX_HELPER, the ISA versions' targets), and, on demand, the
 * helpers the kernels used (cg.need, filled by c_expr.c and c_kernel.c): f16/bf16
 * conversions, floor division and modulo with division by zero giving 0, NaN-propagating
 * float min/max like NumPy's, the index check, overflow-checked size arithmetic, and the
 * math functions of relax/codegen_math.h pasted as text (exp, erf, tanh, log, sin, cos:
 * one source for the kernels and the compiler's evaluator of loop functions).
 *
 * f16 uses the compiler's _Float16 when it has one (gcc 12 on x86-64) and exact software
 * conversions otherwise (clang 14); defining RX_NO_FLOAT16 when building forces the
 * software path.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cgen_int.h"
#include "relax/codegen_math.h"

static const char PRELUDE_HEAD[] =
    "#include <math.h>\n"
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "\n"
    "/* Expressions come from user modules: tautologies, constant shifts and overflow in\n"
    "   them are the module's business, not warnings about this file. */\n"
    "#if defined(__clang__)\n"
    "#pragma clang diagnostic ignored \"-Wtautological-compare\"\n"
    "#pragma clang diagnostic ignored \"-Wshift-count-overflow\"\n"
    "#pragma clang diagnostic ignored \"-Wshift-count-negative\"\n"
    "#pragma clang diagnostic ignored \"-Wshift-negative-value\"\n"
    "#pragma clang diagnostic ignored \"-Winteger-overflow\"\n"
    "#pragma clang diagnostic ignored \"-Wconstant-conversion\"\n"
    "#pragma clang diagnostic ignored \"-Wpass-failed\" /* an omp simd loop left scalar */\n"
    "#elif defined(__GNUC__)\n"
    "#pragma GCC diagnostic ignored \"-Wtype-limits\"\n"
    "#pragma GCC diagnostic ignored \"-Wtautological-compare\"\n"
    "#pragma GCC diagnostic ignored \"-Wshift-count-overflow\"\n"
    "#pragma GCC diagnostic ignored \"-Wshift-count-negative\"\n"
    "#pragma GCC diagnostic ignored \"-Wshift-negative-value\"\n"
    "#pragma GCC diagnostic ignored \"-Woverflow\"\n"
    "#endif\n"
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "#define RX_IVDEP _Pragma(\"GCC ivdep\")\n"
    "#else\n"
    "#define RX_IVDEP\n"
    "#endif\n"
    "/* Built with OpenMP (-fopenmp), parallel loops share their iterations among threads\n"
    "   and vectorized ones are OpenMP simd loops; without it both run serially. */\n"
    "#if defined(_OPENMP)\n"
    "#define RX_PARALLEL _Pragma(\"omp parallel for schedule(static)\")\n"
    "#define RX_PRAGMA(x) _Pragma(#x)\n"
    "#define RX_PARALLEL_IF(c) RX_PRAGMA(omp parallel for schedule(static) if(c))\n"
    "#define RX_SIMD _Pragma(\"omp simd\")\n"
    "#else\n"
    "#define RX_PARALLEL\n"
    "#define RX_PARALLEL_IF(c)\n"
    "#define RX_SIMD RX_IVDEP\n"
    "#endif\n"
    "#if defined(__GNUC__)\n"
    "#define RX_UNROLL _Pragma(\"GCC unroll 8\")\n"
    "#define RX_HELPER static inline __attribute__((unused))\n"
    "/* the math functions: inlined into simd loops whatever their size, or the loop\n"
    "   stays scalar around a call (gcc's early inliner declines erf's body) */\n"
    "#define RX_MATH_HELPER static inline __attribute__((unused, always_inline))\n"
    "#else\n"
    "#define RX_UNROLL\n"
    "#define RX_HELPER static inline\n"
    "#define RX_MATH_HELPER static inline\n"
    "#endif\n"
    "\n";

static const char PRELUDE_ROUND[] =
    "/* x rounded to nearest even with p significant bits, exponent >= emin (subnormals\n"
    "   below), overflowing to infinity past maxv. */\n"
    "RX_HELPER double rx_roundp(double x, int p, int emin, double maxv)\n"
    "{\n"
    "    if (x != x || x == 0.0 || isinf(x)) return x;\n"
    "    int e = ilogb(x);\n"
    "    if (e < emin) e = emin;\n"
    "    double s = ldexp(1.0, p - 1 - e);\n"
    "    double r = nearbyint(x * s) / s;\n"
    "    return fabs(r) > maxv ? copysign((double)INFINITY, x) : r;\n"
    "}\n";

static const char PRELUDE_F16[] =
    "#if defined(__FLT16_MAX__) && !defined(RX_NO_FLOAT16)\n"
    "RX_HELPER float rx_f16r(double x) { return (float)(_Float16)x; }\n"
    "RX_HELPER float rx_h2f(uint16_t h) { _Float16 v; memcpy(&v, &h, 2); return (float)v; }\n"
    "RX_HELPER uint16_t rx_f2h(float f)\n"
    "{\n"
    "    _Float16 v = (_Float16)f;\n"
    "    uint16_t h;\n"
    "    memcpy(&h, &v, 2);\n"
    "    return h;\n"
    "}\n"
    "#else\n"
    "RX_HELPER float rx_f16r(double x) { return (float)rx_roundp(x, 11, -14, 65504.0); }\n"
    "RX_HELPER float rx_h2f(uint16_t h)\n"
    "{\n"
    "    int e = (h >> 10) & 0x1f, m = h & 0x3ff;\n"
    "    float v = e == 0 ? ldexpf((float)m, -24)\n"
    "            : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);\n"
    "    return (h & 0x8000) ? -v : v;\n"
    "}\n"
    "RX_HELPER uint16_t rx_f2h(float f)\n"
    "{\n"
    "    double x = rx_roundp(f, 11, -14, 65504.0), a = fabs(x);\n"
    "    uint16_t s = signbit(x) ? 0x8000 : 0;\n"
    "    if (a != a) return (uint16_t)(s | 0x7e00);\n"
    "    if (isinf(a)) return (uint16_t)(s | 0x7c00);\n"
    "    if (a < 0x1p-14) return (uint16_t)(s | (uint16_t)(a * 0x1p24));\n"
    "    int e = ilogb(a);\n"
    "    return (uint16_t)(s | ((e + 15) << 10) | (int)(a * ldexp(1.0, 10 - e) - 1024.0));\n"
    "}\n"
    "#endif\n";

static const char PRELUDE_BF16[] =
    "RX_HELPER float rx_bf2f(uint16_t h)\n"
    "{\n"
    "    uint32_t u = (uint32_t)h << 16;\n"
    "    float f;\n"
    "    memcpy(&f, &u, 4);\n"
    "    return f;\n"
    "}\n"
    "RX_HELPER uint16_t rx_f2bf(float f)\n"
    "{\n"
    "    uint32_t u;\n"
    "    memcpy(&u, &f, 4);\n"
    "    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);\n"
    "    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "}\n"
    "RX_HELPER float rx_bf16r_f(float f) { return rx_bf2f(rx_f2bf(f)); }\n"
    "RX_HELPER float rx_bf16r(double x) { return (float)rx_roundp(x, 8, -126, 0x1.fep127); }\n";

static const char PRELUDE_BITS[] =
    "RX_HELPER double rx_bits2d(int64_t v) { double d; memcpy(&d, &v, 8); return d; }\n";

static const char PRELUDE_ALLOC[] =
    "RX_HELPER void *rx_alloc(int64_t n, size_t esz)\n"
    "{\n"
    "    if (n < 0 || (uint64_t)n > (SIZE_MAX - 1) / esz) return NULL;\n"
    "    return malloc(n ? (size_t)n * esz : 1);\n"
    "}\n";

/* The index check (c_expr.c index_at; the record is vm.h's rx_vm_kernel_err): the
 * first index outside [0, extent) wins the record, the access reads 0 instead, and
 * the kernel returns RX_KERNEL_EINDEX at its end with the record copied to
 * data[nbufs] when the caller passed one there. */
static const char PRELUDE_CHECK[] =
    "typedef struct rx_kerr { int32_t state, axis; int64_t index, extent; const char *buf; } rx_kerr;\n"
    "RX_HELPER int64_t rx_chk(int64_t v, int64_t d, rx_kerr *e, const char *buf, int32_t axis)\n"
    "{\n"
    "    if (__builtin_expect((uint64_t)v < (uint64_t)d, 1)) return v;\n"
    "    int32_t z = 0;\n"
    "    if (__atomic_compare_exchange_n(&e->state, &z, 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {\n"
    "        e->axis = axis;\n"
    "        e->index = v;\n"
    "        e->extent = d;\n"
    "        e->buf = buf;\n"
    "    }\n"
    "    return 0;\n"
    "}\n"
    "RX_HELPER int32_t rx_kfail(void *const *data, int nbufs, const rx_kerr *e)\n"
    "{\n"
    "    rx_kerr *out = (rx_kerr *)data[nbufs];\n"
    "    if (out) *out = *e;\n"
    "    return 2; /* RX_KERNEL_EINDEX */\n"
    "}\n";

/* Overflow-checked size arithmetic (c_check.c): sets *o and gives 0 on overflow. */
static const char PRELUDE_CKARITH[] =
    "RX_HELPER int64_t rx_ckadd(int64_t a, int64_t b, int32_t *o)\n"
    "{ int64_t r; if (__builtin_add_overflow(a, b, &r)) { *o = 1; return 0; } return r; }\n"
    "RX_HELPER int64_t rx_cksub(int64_t a, int64_t b, int32_t *o)\n"
    "{ int64_t r; if (__builtin_sub_overflow(a, b, &r)) { *o = 1; return 0; } return r; }\n"
    "RX_HELPER int64_t rx_ckmul(int64_t a, int64_t b, int32_t *o)\n"
    "{ int64_t r; if (__builtin_mul_overflow(a, b, &r)) { *o = 1; return 0; } return r; }\n";

/* The same in GLSL, whose % of negative operands is undefined: the remainder is
 * a - q * b (q truncated, as / is); - wraps. */
static const char PRELUDE_FLOOR_I64_GLSL[] =
    "RX_HELPER int64_t rx_floordiv_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0l) return 0l;\n"
    "    if (b == -1l) return -a;\n"
    "    int64_t q = a / b;\n"
    "    return (a - q * b != 0l && ((a < 0l) != (b < 0l))) ? q - 1l : q;\n"
    "}\n"
    "RX_HELPER int64_t rx_floormod_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0l || b == -1l) return 0l;\n"
    "    return a - rx_floordiv_i64(a, b) * b;\n"
    "}\n";

static const char PRELUDE_FLOOR_I64[] =
    "RX_HELPER int64_t rx_floordiv_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0) return 0;\n"
    "    if (b == -1) return (int64_t)(0u - (uint64_t)a);\n"
    "    int64_t q = a / b;\n"
    "    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
    "}\n"
    "RX_HELPER int64_t rx_floormod_i64(int64_t a, int64_t b)\n"
    "{\n"
    "    if (b == 0 || b == -1) return 0;\n"
    "    int64_t r = a % b;\n"
    "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
    "}\n";

/* The kernel object links libgomp, which the runtime dlopens with it. Unloading
   libgomp under its idle thread pool (the last dlclose of a kernel object) would
   strand those threads in unmapped code, so the first kernel object pins it. */
static const char PRELUDE_OMP[] =
    "#if defined(_OPENMP) && defined(__linux__) && !defined(__clang__)\n"
    "#include <dlfcn.h>\n"
    "#if defined(RTLD_NODELETE) && defined(RTLD_NOLOAD)\n"
    "__attribute__((constructor)) static void rx_pin_openmp(void)\n"
    "{\n"
    "    (void)dlopen(\"libgomp.so.1\", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);\n"
    "}\n"
    "#endif\n"
    "#endif\n";

/* ISA versions of kernels (c_kernel.c): gcc 12 or later on x86-64 compiles them for
   x86-64-v4 (AVX-512) and x86-64-v3 (AVX2, FMA) besides the baseline, and the kernel
   calls the best one this CPU runs. The versions of full mode (O3: RX_TARGET_V4/V3)
   may contract a * b + c into one fused multiply-add (fp-contract=fast: one rounding
   instead of two, so never less accurate, and half the instructions of a tile's
   update); those of exact mode (O2: RX_TARGET_V4_EXACT/V3_EXACT) do not
   (fp-contract=off, spelled out so that a build without -std=c11 keeps it), so they
   only run the same operations in wider registers and write the baseline's bits. The
   baseline, like every other kernel, keeps gcc's ISO C default of no contraction. No
   reassociation anywhere (no -ffast-math): integer and f16/bf16 results (rounded
   after every operation, which leaves nothing to fuse) are the same bits in every
   version. */
static const char PRELUDE_ISA[] =
    "#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && defined(__x86_64__) && \\\n"
    "    !defined(RX_NO_ISA_VERSIONS)\n"
    "#define RX_ISA_VERSIONS 1\n"
    "#define RX_TARGET_V4 __attribute__((target(\"arch=x86-64-v4\"), optimize(\"fp-contract=fast\")))\n"
    "#define RX_TARGET_V3 __attribute__((target(\"arch=x86-64-v3\"), optimize(\"fp-contract=fast\")))\n"
    "#define RX_TARGET_V4_EXACT __attribute__((target(\"arch=x86-64-v4\"), optimize(\"fp-contract=off\")))\n"
    "#define RX_TARGET_V3_EXACT __attribute__((target(\"arch=x86-64-v3\"), optimize(\"fp-contract=off\")))\n"
    "/* The best ISA level of this CPU (4, 3, else 1), set once when the object is loaded;\n"
    "   RX_KERNEL_ISA=base or v3 in the environment caps it. */\n"
    "static int rx_isa = 1;\n"
    "__attribute__((constructor)) static void rx_isa_init(void)\n"
    "{\n"
    "    __builtin_cpu_init();\n"
    "    int level = __builtin_cpu_supports(\"x86-64-v4\") ? 4 : __builtin_cpu_supports(\"x86-64-v3\") ? 3 : 1;\n"
    "    const char *cap = getenv(\"RX_KERNEL_ISA\");\n"
    "    if (cap && !strcmp(cap, \"base\")) level = 1;\n"
    "    else if (cap && !strcmp(cap, \"v3\") && level > 3) level = 3;\n"
    "    rx_isa = level;\n"
    "}\n"
    "#else\n"
    "#define RX_ISA_VERSIONS 0\n"
    "#endif\n";

/* exp in float: relax/codegen_math.h's rx_expf_ref as text (one source for the kernels
   and the compiler's loop-function evaluator; the header says how and how accurate). */
static const char PRELUDE_EXPF[] = RX_MATH_STR(RX_EXPF_SOURCE(RX_MATH_HELPER, rx_expf)) "\n";
static const char PRELUDE_ERFF[] = RX_MATH_STR(RX_ERFF_SOURCE(RX_MATH_HELPER, rx_erff)) "\n";
static const char PRELUDE_TANHF[] = RX_MATH_STR(RX_TANHF_SOURCE(RX_MATH_HELPER, rx_tanhf)) "\n";
static const char PRELUDE_LOGF[] = RX_MATH_STR(RX_LOGF_SOURCE(RX_MATH_HELPER, rx_logf)) "\n";
static const char PRELUDE_SINF[] = RX_MATH_STR(RX_SINCOSF_SOURCE(RX_MATH_HELPER, rx_sinf, 0)) "\n";
static const char PRELUDE_COSF[] = RX_MATH_STR(RX_SINCOSF_SOURCE(RX_MATH_HELPER, rx_cosf, 1)) "\n";

static bool needs(const cg *g, cg_helper h, rx_dtype t)
{
    return (g->need[h] >> (unsigned)t) & 1u;
}

void rxi_cg_prelude(const cg *g, rx_sb *out)
{
    rx_sb_puts(out, PRELUDE_HEAD);
    bool f16 = g->need[H_F16] != 0, bf16 = g->need[H_BF16] != 0;
    if (f16 || bf16) rx_sb_puts(out, PRELUDE_ROUND);
    if (f16) rx_sb_puts(out, PRELUDE_F16);
    if (bf16) rx_sb_puts(out, PRELUDE_BF16);
    static const struct {
        cg_helper h;
        const char *text;
    } once[] = {{H_BITS, PRELUDE_BITS},   {H_ALLOC, PRELUDE_ALLOC}, {H_OMP, PRELUDE_OMP},
                {H_ISA, PRELUDE_ISA},     {H_EXPF, PRELUDE_EXPF},   {H_ERFF, PRELUDE_ERFF},
                {H_TANHF, PRELUDE_TANHF}, {H_LOGF, PRELUDE_LOGF},   {H_SINF, PRELUDE_SINF},
                {H_COSF, PRELUDE_COSF},   {H_CHECK, PRELUDE_CHECK}, {H_CKARITH, PRELUDE_CKARITH}};
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) /* in this order */
        if (g->need[once[i].h]) rx_sb_puts(out, once[i].text);
    rxi_cg_prelude_ops(g, out);
}

void rxi_cg_prelude_ops(const cg *g, rx_sb *out)
{
    bool signed_floor = false;
    for (int t = RX_DT_I8; t <= RX_DT_I64; t++)
        if (needs(g, H_FLOORDIV, (rx_dtype)t) || needs(g, H_FLOORMOD, (rx_dtype)t))
            signed_floor = true;
    if (signed_floor) rx_sb_puts(out, g->glsl ? PRELUDE_FLOOR_I64_GLSL : PRELUDE_FLOOR_I64);
    for (int ti = 1; ti < RX_DT_COUNT; ti++) {
        rx_dtype t = (rx_dtype)ti;
        const char *ct = rxi_cg_ctype(t), *sf = rxi_cg_hsuffix(t);
        for (int h = H_FLOORDIV; h <= H_FLOORMOD; h++) {
            if (!needs(g, (cg_helper)h, t)) continue;
            const char *nm = h == H_FLOORDIV ? "floordiv" : "floormod";
            if (rx_dtype_is_uint(t) && g->glsl)
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { return b != %s(0) ? a %c b : %s(0); }\n",
                             ct, nm, sf, ct, ct, ct, h == H_FLOORDIV ? '/' : '%', ct);
            else if (rx_dtype_is_uint(t))
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { return (%s)(b ? a %c b : 0); }\n",
                             ct, nm, sf, ct, ct, ct, h == H_FLOORDIV ? '/' : '%');
            else if (t != RX_DT_I64 && g->glsl) /* in 32 bits (lavapipe's 64-bit path
                                                    from int32 gave truncated quotients) */
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b)\n{\n"
                             "    int x = int(a), y = int(b);\n"
                             "    if (y == 0 || y == -1) return %s(y == 0 ? 0 : %s);\n"
                             "    int q = x / y, r = x - q * y;\n"
                             "    bool fix = r != 0 && ((x < 0) != (y < 0));\n"
                             "    return %s(%s);\n}\n",
                             ct, nm, sf, ct, ct, ct, h == H_FLOORDIV ? "-x" : "0", ct,
                             h == H_FLOORDIV ? "fix ? q - 1 : q" : "fix ? r + y : r");
            else if (t != RX_DT_I64)
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { return (%s)rx_%s_i64(a, b); }\n",
                             ct, nm, sf, ct, ct, ct, nm);
        }
        for (int h = H_MIN; h <= H_MAX; h++) {
            if (!needs(g, (cg_helper)h, t)) continue;
            const char *nm = h == H_MIN ? "min" : "max", *op = h == H_MIN ? "<" : ">";
            if (rx_dtype_is_float(t)) /* NaN propagates, as in NumPy's minimum/maximum; two
                                         selects, not `a < b || a != a` (a branch gcc kept:
                                         a clip of ReLU output, zeros every other element,
                                         mispredicted: 4.7x slower, scalar loop) */
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { %s r = a %s b ? a : b; return a != a ? a : r; }\n",
                             ct, nm, sf, ct, ct, ct, op);
            else
                rx_sb_printf(out, "RX_HELPER %s rx_%s_%s(%s a, %s b) { return a %s b ? a : b; }\n",
                             ct, nm, sf, ct, ct, op);
        }
        if (needs(g, H_SEL, t)) { /* eager_arms: on the bits, no branch to if-convert */
            const char *ut = t == RX_DT_F32 ? "uint32_t" : "uint64_t";
            int nb = t == RX_DT_F32 ? 4 : 8;
            rx_sb_printf(out, "RX_HELPER %s rx_sel_%s(int c, %s a, %s b) { %s x, y, m = (%s)0 - (%s)(c != 0); "
                         "memcpy(&x, &a, %d); memcpy(&y, &b, %d); x = (x & m) | (y & ~m); memcpy(&a, &x, %d); "
                         "return a; }\n",
                         ct, sf, ct, ct, ut, ut, ut, nb, nb, nb);
        }
        if (needs(g, H_ABS, t) && g->glsl) /* - wraps in GLSL */
            rx_sb_printf(out, "RX_HELPER %s rx_abs_%s(%s a) { return a < %s(0) ? -a : a; }\n",
                         ct, sf, ct, ct);
        else if (needs(g, H_ABS, t))
            rx_sb_printf(out, "RX_HELPER %s rx_abs_%s(%s a) { return a < 0 ? (%s)(0u - (uint64_t)a) : a; }\n",
                         ct, sf, ct, ct);
    }
    rx_sb_putc(out, '\n');
}
