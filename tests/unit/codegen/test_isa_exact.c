/*
 * test_isa_exact.c — exact ISA versions (rx_codegen_opts.exact_isa_versions, the
 * driver's opt level 2): which kernels get them, and that every version writes the
 * baseline's bits.
 *
 * The module: `sm`, a softmax in four top-level nests (row max, exp of the shifted
 * row in a vectorized loop, row sum, a vectorized divide); `sg`, sigmoid in one
 * vectorized nest; `exa`, a global scratch buffer then exp in a vectorized loop;
 * `add`, a vectorized add; `exs`, exp in a serial loop; `mv`, a matrix-vector tile
 * (multiply-adds into a local accumulator in a vectorized loop of literal extent);
 * `rs`, the same accumulator summing without products. The rule (c_isa.c, and "ISA
 * versions" in c_kernel.c): only statements computing exp in f32, in a vectorized
 * loop or not (exs: the explicit fmaf of rx_expf is a libm call in the baseline), or
 * holding such a multiply-add tile (mv), are versioned, as parts of their
 * kernel when the kernel has colder top-level statements too (sm: its exp nest is
 * sm_p1, the rest is not versioned); a kernel that is one
 * hot part (sg, exs) or has a top-level ALLOC (exa, mv) is versioned whole; add and
 * rs never. With full versions, exs is versioned too (no vectorized loop in it).
 *
 * Bits: the module built without versions (what opt levels 0 and 1 build), and with
 * exact versions, loaded once under RX_KERNEL_ISA=base and once with the best ISA of
 * this CPU, all run on the same inputs (row lengths that leave vector remainders,
 * arguments over exp's whole range with infinities and NaN): every output float
 * bit-equal (NaNs only as NaN: their sign and payload are the C compiler's choice),
 * and exp and sigmoid equal to relax/codegen_math.h's rx_expf_ref, the function the
 * constant-folding interpreter calls. A control shows the comparison has teeth: on a
 * CPU with FMA, the full versions (opt level 3, fp-contract=fast) do differ from the
 * baseline in some exp results.
 */
#include <math.h>

#include "cg_test.h"
#include "relax/codegen_math.h"
#include "../rx_check.h"

#define BUF(n, shape) "{'name':'" n "','buffer':{'shape':" shape ",'dtype':'f32'}}"

static const char MOD[] =
    "{'format':'relax-json','version':1,'functions':{"
    "'sm':{'kind':'tir','params':[" BUF("A", "['r','c']") "," BUF("M", "['r']") ","
    BUF("E", "['r','c']") "," BUF("S", "['r']") "," BUF("B", "['r','c']") "],"
    "'body':["
    " {'for':'i','extent':'r','kind':'parallel','body':["
    "  {'store':'M[i]','value':'A[i, 0]'},"
    "  {'for':'j','min':1,'extent':'c - 1','body':[{'store':'M[i]','value':'max(M[i], A[i, j])'}]}]},"
    " {'for':'i','extent':'r','kind':'parallel','body':["
    "  {'for':'j','extent':'c','kind':'vectorized','body':["
    "   {'store':'E[i, j]','value':'exp(A[i, j] - M[i])'}]}]},"
    " {'for':'i','extent':'r','body':["
    "  {'store':'S[i]','value':'0.0'},"
    "  {'for':'j','extent':'c','body':[{'store':'S[i]','value':'S[i] + E[i, j]'}]}]},"
    " {'for':'i','extent':'r','body':["
    "  {'for':'j','extent':'c','kind':'vectorized','body':["
    "   {'store':'B[i, j]','value':'E[i, j] / S[i]'}]}]}]},"
    "'sg':{'kind':'tir','params':[" BUF("A", "['r','c']") "," BUF("B", "['r','c']") "],"
    "'body':[{'for':'i','extent':'r','kind':'parallel','body':["
    " {'for':'j','extent':'c','kind':'vectorized','body':["
    "  {'store':'B[i, j]','value':'sigmoid(A[i, j]) * A[i, j] + 0.5'}]}]}]},"
    "'exa':{'kind':'tir','params':[" BUF("A", "['n']") "," BUF("B", "['n']") "],"
    "'body':["
    " {'alloc':'T','shape':['n'],'dtype':'f32','scope':'global'},"
    " {'for':'i','extent':'n','body':[{'store':'T[i]','value':'A[i] * 0.5'}]},"
    " {'for':'i','extent':'n','kind':'vectorized','body':[{'store':'B[i]','value':'exp(T[i])'}]}]},"
    "'add':{'kind':'tir','params':[" BUF("A", "['n']") "," BUF("B", "['n']") "],"
    "'body':[{'for':'i','extent':'n','kind':'vectorized','body':[{'store':'B[i]','value':'A[i] + 1.0'}]}]},"
    "'exs':{'kind':'tir','params':[" BUF("A", "['n']") "," BUF("B", "['n']") "],"
    "'body':[{'for':'i','extent':'n','body':[{'store':'B[i]','value':'exp(A[i])'}]}]},"
    "'mv':{'kind':'tir','params':[" BUF("A", "['r','c']") "," BUF("X", "['r']") "," BUF("Y", "[16]") "],"
    "'body':[{'alloc':'acc','shape':[16],'dtype':'f32','scope':'local'},"
    " {'for':'j','extent':16,'kind':'vectorized','body':[{'store':'acc[j]','value':'0.0'}]},"
    " {'for':'k','extent':'r','body':[{'for':'j','extent':16,'kind':'vectorized','body':["
    "  {'store':'acc[j]','value':'acc[j] + A[k, j] * X[k]'}]}]},"
    " {'for':'j','extent':16,'kind':'vectorized','body':[{'store':'Y[j]','value':'acc[j]'}]}]},"
    "'rs':{'kind':'tir','params':[" BUF("A", "['r','c']") "," BUF("Y", "[16]") "],"
    "'body':[{'alloc':'acc','shape':[16],'dtype':'f32','scope':'local'},"
    " {'for':'k','extent':'r','body':[{'for':'j','extent':16,'kind':'vectorized','body':["
    "  {'store':'acc[j]','value':'acc[j] + A[k, j]'}]}]},"
    " {'for':'j','extent':16,'kind':'vectorized','body':[{'store':'Y[j]','value':'acc[j]'}]}]}}}";

enum { R = 37, C = 1037, N = R * C };

/* One run's inputs and outputs. */
typedef struct run {
    float a[N], m[R], e[N], s[R], b[N]; /* sm */
    float g[N];                        /* sg */
    float ex[N];                       /* exa */
    float mv[16];                      /* mv */
} run;

static const char *const EXTRA[] = {"-fopenmp", NULL};

/* Deterministic arguments over exp's range, with specials. */
static void fill(run *r)
{
    uint32_t st = 12345u;
    for (int i = 0; i < N; i++) {
        st = st * 1664525u + 1013904223u;
        r->a[i] = ((float)(st >> 8) / 16777216.0f - 0.5f) * 240.0f; /* [-120, 120) */
    }
    static const float edge[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 88.7228f, -103.98f,
                                 1e-30f, 89.0f, -104.5f};
    for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++) r->a[C + 3 * (int)k] = edge[k];
}

/* Loads the module built with co (NULL: no versions) under RX_KERNEL_ISA=isa (NULL:
 * unset) and runs sm, sg and exa on r's inputs. */
static void run_all(const rx_module *m, const rx_codegen_opts *co, const char *isa, run *r)
{
    if (isa)
        setenv("RX_KERNEL_ISA", isa, 1);
    else
        unsetenv("RX_KERNEL_ISA");
    cg_lib lib = cg_build_opts(m, co, EXTRA); /* the ISA level is read when it loads */
    unsetenv("RX_KERNEL_ISA");
    int64_t rc[2] = {R, C}, n[1] = {N};
    void *d_sm[] = {r->a, r->m, r->e, r->s, r->b}, *d_sg[] = {r->a, r->g}, *d_ex[] = {r->a, r->ex};
    ck_assert_int_eq(cg_get(lib, "sm")(d_sm, rc), 0);
    ck_assert_int_eq(cg_get(lib, "sg")(d_sg, rc), 0);
    ck_assert_int_eq(cg_get(lib, "exa")(d_ex, n), 0);
    /* mv over rows 2 .. R - 2 of a (no infinities there), x from row 0 */
    int64_t rc_mv[2] = {R - 3, C};
    void *d_mv[] = {r->a + 2 * C, r->a + 5, r->mv};
    ck_assert_int_eq(cg_get(lib, "mv")(d_mv, rc_mv), 0);
    cg_close(lib);
}

/* Index of the first float of two runs that differs in its bits (two NaNs count as
 * equal: C leaves a NaN result's sign and payload open, and x86 takes them from an
 * operand whose order the compiler may swap), or -1. */
static long first_diff(const run *p, const run *q)
{
    const float *a = (const float *)p, *b = (const float *)q;
    for (size_t i = 0; i < sizeof *p / sizeof(float); i++)
        if (memcmp(&a[i], &b[i], 4) != 0 && !(isnan(a[i]) && isnan(b[i]))) return (long)i;
    return -1;
}

START_TEST(which_kernels)
{
    rx_module *m = cg_read(MOD);
    rx_diags d;
    rx_diags_init(&d);
    rx_sb c = {0}, full = {0};
    rx_codegen_opts exact = {.exact_isa_versions = true}, both = {.isa_versions = true,
                                                                 .exact_isa_versions = true};
    ck_assert(rx_codegen_c_with(m, &exact, &c, &d));
    const char *t = rx_sb_str(&c);
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V4_EXACT int32_t rxk_sm_p1_v4("));
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V3_EXACT int32_t rxk_sm_p1_v3("));
    ck_assert_ptr_nonnull(strstr(t, "static int32_t rxk_sm_p0(")); /* row max, once */
    ck_assert_ptr_nonnull(strstr(t, "static int32_t rxk_sm_p2(")); /* sum + divide, once */
    ck_assert_ptr_null(strstr(t, "rxk_sm_p0_v"));
    ck_assert_ptr_null(strstr(t, "rxk_sm_p2_v"));
    ck_assert_ptr_null(strstr(t, "rxk_sm_p3"));
    ck_assert_ptr_nonnull(strstr(t, "    rc = rxk_sm_p1(data, ivars);\n    if (rc) return rc;\n"));
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V4_EXACT int32_t rxk_sg_v4("));
    ck_assert_ptr_null(strstr(t, "rxk_sg_p0"));
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V3_EXACT int32_t rxk_exa_v3("));
    ck_assert_ptr_null(strstr(t, "rxk_exa_p0"));
    ck_assert_ptr_null(strstr(t, "rxk_add_v"));
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V3_EXACT int32_t rxk_exs_v3("));
    /* a matrix-vector tile's multiply-adds: versioned whole (a top-level ALLOC); a
       column sum into the same kind of accumulator multiplies nothing: not versioned */
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V4_EXACT int32_t rxk_mv_v4("));
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V3_EXACT int32_t rxk_mv_v3("));
    ck_assert_ptr_null(strstr(t, "rxk_rs_v"));
    ck_assert_ptr_null(strstr(t, "static RX_TARGET_V4 ")); /* no contracting version */
    ck_assert_ptr_null(strstr(t, "static RX_TARGET_V3 "));
    /* full versions win over exact ones: whole kernels, every vectorized one */
    ck_assert(rx_codegen_c_with(m, &both, &full, &d));
    t = rx_sb_str(&full);
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V4 int32_t rxk_sm_v4("));
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V4 int32_t rxk_add_v4("));
    ck_assert_ptr_nonnull(strstr(t, "static RX_TARGET_V4 int32_t rxk_exs_v4("));
    ck_assert_ptr_null(strstr(t, "_EXACT int32_t"));
    ck_assert_ptr_null(strstr(t, "rxk_sm_p"));
    rx_sb_free(&c);
    rx_sb_free(&full);
    rx_diags_free(&d);
    rx_module_free(m);
}
END_TEST

START_TEST(same_bits)
{
    rx_module *m = cg_read(MOD);
    run *plain = calloc(1, sizeof(run)), *base = calloc(1, sizeof(run));
    run *best = calloc(1, sizeof(run)), *fast = calloc(1, sizeof(run));
    fill(plain);
    *base = *best = *fast = *plain;
    rx_codegen_opts exact = {.exact_isa_versions = true}, full = {.isa_versions = true};
    run_all(m, NULL, NULL, plain);
    run_all(m, &exact, "base", base);
    run_all(m, &exact, NULL, best);
    ck_assert_msg(first_diff(plain, base) < 0, "base version differs at float %ld",
                  first_diff(plain, base));
    ck_assert_msg(first_diff(plain, best) < 0, "best version differs at float %ld",
                  first_diff(plain, best));
    /* what the constant-folding interpreter computes */
    for (int i = 0; i < N; i++) {
        float e = rx_expf_ref(plain->a[i] - plain->m[i / C]);
        ck_assert_msg(memcmp(&e, &plain->e[i], 4) == 0 || (isnan(e) && isnan(plain->e[i])),
                      "exp[%d]: %a vs %a", i,
                      (double)plain->e[i], (double)e);
        float sg = 1.0f / (1.0f + rx_expf_ref(-plain->a[i]));
        sg = sg * plain->a[i];
        sg = sg + 0.5f;
        ck_assert_msg(memcmp(&sg, &plain->g[i], 4) == 0 || (isnan(sg) && isnan(plain->g[i])),
                      "sigmoid[%d]", i);
        float ex = rx_expf_ref(plain->a[i] * 0.5f);
        ck_assert_msg(memcmp(&ex, &plain->ex[i], 4) == 0 || (isnan(ex) && isnan(plain->ex[i])),
                      "exa[%d]", i);
    }
    /* control: contracting versions, where they run, round some exp differently */
    if (__builtin_cpu_supports("fma")) {
        run_all(m, &full, NULL, fast);
        ck_assert_msg(first_diff(plain, fast) >= 0, "fp-contract=fast changed nothing");
    }
    free(plain);
    free(base);
    free(best);
    free(fast);
    rx_module_free(m);
}
END_TEST

static Suite *isa_exact_suite(void)
{
    Suite *s = suite_create("isa_exact");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, which_kernels);
    tcase_add_test(tc, same_bits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(isa_exact_suite()); }
