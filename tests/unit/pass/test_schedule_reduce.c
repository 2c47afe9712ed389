/*
 * test_schedule_reduce.c — reductions reshaped for the CPU schedule
 * (compiler/pass/schedule_reduce.c): trailing reduce loops merged into one, so global
 * poolings as people write them take the row schedule's lanes (schedule_rows.c) instead
 * of one serial chain per plane; reductions of few literal steps unrolled into
 * elementwise nests.
 *
 * Formulations (each built with rx_build_module up to lift_workspace at opt level 2, no
 * library): over x (b, 5, h, w), gmean x.mean((2, 3), keepdim=True); gmax amax over
 * (2, 3); gsum3 a sum over (1, 2, 3) (three loops merged); bnmean a mean over (0, 2, 3)
 * (BatchNorm's statistics: h and w merged, b not: x[b, c, h, w] has c between them);
 * sum12 a sum over (1, 2), whose reduce loops are not x's trailing axes (not merged);
 * c5 a sum over the 5 channels (more steps than are unrolled: left as it is). Unrolled:
 * radix, ResNeSt's and SKNet's sum over the 2 branches of (b, 2, 5, h, w), and amax4, a
 * max over the 4 channels of (b, 4, h, w).
 * Structure: how many nests change, the reduce iterators left (one where merged, two for
 * bnmean, none where unrolled), and that schedule_rows then gives gmean, gmax and gsum3
 * lanes (none without the merge).
 * Numerics: merged or unrolled alone is bit-identical to the unscheduled kernel (the same
 * order); after the whole CPU schedule (merge, unroll, lanes, tiles) so are gmax (max is
 * exact in any order), radix, amax4 and c5 (the tile schedule keeps the order); every
 * sum and mean over (b, 5, h, w), like the unscheduled kernel's, is within the
 * first-order bound of a float sum in any order of a float64 sum computed here, at planes
 * with and without a lane tail.
 */
#include <math.h>

#include "kernel_run.h"
#include "module_text.h"
#include "../rx_check.h"

#include "../../../compiler/pass/schedule_int.h"

#define X4 P("x", TS("'b',5,'h','w'"))
#define RED(name, op, axes, keep) \
    FN(name, X4, B("r", "{'op':'" op "','args':['x'],'attrs':{'axis':[" axes "],'keepdims':" keep "}}"), "r")

static const char MODULE[] =
    "{'format':'relax-json','version':1,'functions':{"
    RED("gmean", "mean", "2,3", "true") ","
    RED("gmax", "max", "2,3", "false") ","
    RED("gsum3", "sum", "1,2,3", "false") ","
    RED("bnmean", "mean", "0,2,3", "false") ","
    RED("sum12", "sum", "1,2", "false") ","
    FN("radix", P("x", TS("'b',2,5,'h','w'")),
       B("r", "{'op':'sum','args':['x'],'attrs':{'axis':[1]}}"), "r") ","
    FN("amax4", P("x", TS("'b',4,'h','w'")),
       B("r", "{'op':'max','args':['x'],'attrs':{'axis':[1]}}"), "r") ","
    RED("c5", "sum", "1", "false")
    "}}";

static const char *const FNS[] = {"gmean", "gmax", "gsum3", "bnmean", "sum12", "radix", "amax4", "c5"};
enum { NFNS = 8, NGLOBAL = 5 /* FNS[0 .. 5): over x (b, 5, h, w), checked against float64 */ };

static rx_module *fused(void)
{
    return fused_module(MODULE);
}

/* The most reduce iterators of one block in ss. */
static int max_reduce_iters(const rx_stmts *ss)
{
    int best = 0;
    for (int i = 0; i < ss->n; i++) {
        const rx_stmt *s = ss->items[i];
        int r = 0;
        switch ((rx_skind)s->kind) {
        case RX_S_FOR: r = max_reduce_iters(&s->u.for_.body); break;
        case RX_S_BLOCK:
            for (int k = 0; k < s->u.block.niters; k++) r += s->u.block.iters[k].kind == RX_ITER_REDUCE;
            if (max_reduce_iters(&s->u.block.body) > r) r = max_reduce_iters(&s->u.block.body);
            break;
        case RX_S_LET: r = max_reduce_iters(&s->u.let.body); break;
        case RX_S_IF:
            r = max_reduce_iters(&s->u.if_.then_s);
            if (max_reduce_iters(&s->u.if_.else_s) > r) r = max_reduce_iters(&s->u.if_.else_s);
            break;
        default: break;
        }
        if (r > best) best = r;
    }
    return best;
}

/* Each formulation is one kernel (its sum and a mean's division fused). */
static int reduce_iters_of(const rx_module *m, const char *g)
{
    return max_reduce_iters(&kr_product(m, g)->tbody);
}

START_TEST(merges_trailing_axes)
{
    rx_module *m = fused();
    static const int before[] = {2, 2, 3, 3, 2, 1, 1, 1}, after[] = {1, 1, 1, 2, 2, 0, 0, 1};
    for (int i = 0; i < NFNS; i++)
        ck_assert_msg(reduce_iters_of(m, FNS[i]) == before[i], "%s: %d reduce iterators before",
                      FNS[i], reduce_iters_of(m, FNS[i]));
    int n = -1;
    ck_assert(rx_schedule_reduce(m, &n));
    ck_assert_int_eq(n, 6); /* merged: 4 (not sum12); unrolled: radix and amax4 (not c5) */
    for (int i = 0; i < NFNS; i++)
        ck_assert_msg(reduce_iters_of(m, FNS[i]) == after[i], "%s: %d reduce iterators after",
                      FNS[i], reduce_iters_of(m, FNS[i]));
    /* the merged global reductions are row reductions now: lanes for gmean, gmax, gsum3 */
    int runs = -1, lanes = -1;
    ck_assert(rx_schedule_rows(m, &runs, &lanes));
    ck_assert_int_eq(lanes, 3);
    rx_module_free(m);

    /* without the merge the row schedule takes none of them */
    m = fused();
    ck_assert(rx_schedule_rows(m, &runs, &lanes));
    ck_assert_int_eq(lanes, 0);
    rx_module_free(m);
}
END_TEST

/* Run r of function g (FNS[g], not gmax) against float64 sums of its x: each output
 * within the first-order bound of a float sum in any order, (K - 1) * 2^-24 * sum |x|
 * (divided by K for a mean), plus two ulps of the result. */
static void check_sums(const kr_run *r, int g, int xi, int ri, const int64_t *sh, const char *what)
{
    const float *x = (const float *)r->buf[xi], *y = (const float *)r->buf[ri];
    int64_t b = sh[0], h = sh[1], w = sh[2], hw = h * w, nout = 0;
    for (int64_t o = 0;; o++) {
        double s = 0, a = 0;
        int64_t K = 0;
        for (int64_t i = 0; i < b * 5 * hw; i++) {
            int64_t bi = i / (5 * hw), c = i / hw % 5, wi = i % w, want;
            switch (g) {
            case 0: want = bi * 5 + c; break;   /* gmean: planes */
            case 2: want = bi; break;           /* gsum3: batches */
            case 3: want = c; break;            /* bnmean: channels */
            default: want = bi * w + wi; break; /* sum12: (b, w) */
            }
            if (want != o) continue;
            s += x[i], a += fabs(x[i]), K++;
        }
        if (!K) break;
        bool mean = g == 0 || g == 3;
        double want = mean ? s / (double)K : s, tol = (double)(K - 1) * 0x1p-24 * a;
        tol = (mean ? tol / (double)K : tol) + 2 * 0x1p-24 * fabs(want);
        ck_assert_msg(fabs(y[o] - want) <= tol, "%s output %lld: %.9g vs %.9g (tol %.3g)", what,
                      (long long)o, (double)y[o], want, tol);
        nout++;
    }
    ck_assert((size_t)nout * 4 == r->bytes[ri]);
}

START_TEST(numerics)
{
    rx_module *mu = fused(), *mr = fused(), *ms = fused();
    ck_assert(rx_schedule_reduce(mr, NULL));
    ck_assert(rx_pass_schedule_cpu(ms, NULL));
    void *hu = kr_load(mu, NULL), *hr = kr_load(mr, NULL), *hs = kr_load(ms, NULL);
    const char *const names[] = {"b", "h", "w"};
    static const int64_t shapes[][3] = {{1, 1, 1}, {2, 7, 9}, {1, 16, 16}, {3, 13, 21}};
    for (int g = 0; g < NFNS; g++)
        for (size_t v = 0; v < sizeof shapes / sizeof shapes[0]; v++) {
            rx_func *ku = kr_product(mu, FNS[g]), *kr = kr_product(mr, FNS[g]),
                    *ks = kr_product(ms, FNS[g]);
            char what[96];
            snprintf(what, sizeof what, "%s/%s b=%lld h=%lld w=%lld", FNS[g], ku->name,
                     (long long)shapes[v][0], (long long)shapes[v][1], (long long)shapes[v][2]);
            kr_run ru, rr, rs;
            kr_exec(hu, ku, names, shapes[v], 3, 7 + v, &ru);
            kr_exec(hr, kr, names, shapes[v], 3, 7 + v, &rr);
            kr_exec(hs, ks, names, shapes[v], 3, 7 + v, &rs);
            kr_same(&ru, &rr, what); /* merged or unrolled: the same order */
            if (g == 1 || g >= NGLOBAL) /* max: exact in any order; unrolled: the order */
                kr_same(&ru, &rs, what);
            else { /* buffers: x, the result (then a mean's sum) */
                check_sums(&ru, g, 0, 1, shapes[v], what); /* the serial order */
                check_sums(&rs, g, 0, 1, shapes[v], what);
            }
            kr_free(&ru);
            kr_free(&rr);
            kr_free(&rs);
        }
    dlclose(hr);
    rx_module_free(mr);
    kr_unload_pair(hu, hs, mu, ms);
}
END_TEST

static Suite *reduce_suite(void)
{
    Suite *s = suite_create("schedule_reduce");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, merges_trailing_axes);
    tcase_add_test(tc, numerics);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return rx_check_run(reduce_suite()); }
