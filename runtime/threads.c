/*
 * threads.c — one thread count for the generated kernels and the BLAS library.
 *
 * The kernels' parallel loops are OpenMP regions without a num_threads clause, so they
 * start as many threads as libgomp's nthreads ICV of the thread that calls them; the
 * blas.* built-ins call OpenBLAS, whose OpenMP build (the one library.c prefers) runs
 * its own regions on the same libgomp pool with its own count (blas_cpu_number, which
 * it re-reads from omp_get_max_threads() of the calling thread on each call). Setting
 * both to the same N is what `relax-run --threads N` and an agent job's `threads` do,
 * so a kernel and a BLAS call never use different pool sizes, and neither depends on
 * OMP_NUM_THREADS / OPENBLAS_NUM_THREADS being set before the process started.
 *
 * rxrt does not link libgomp (it runs on devices without it; docs/design.md): the OpenMP
 * entry points are found with dlopen("libgomp.so.1") — the same library the kernel
 * objects link, so the ICV set here is the one their regions read. It is opened with
 * RTLD_NODELETE (as the kernel objects pin it, c_expr.c): unloading libgomp under its
 * idle pool would crash. OpenBLAS's setters are looked up in the library the built-ins
 * opened (rx_rt_blas_handle); a BLAS without openblas_set_num_threads is left alone.
 *
 * Scope: the OpenMP ICV belongs to the calling thread (calls made from other threads
 * keep their own), OpenBLAS's count is process-wide. rx_rt_get_threads reads both back:
 * the test (tests/unit/runtime/test_threads.c) and --bench's "threads" and
 * "blas_threads" keys report what is in effect, not what was asked for.
 */
#include "rt_int.h"

#include <dlfcn.h>
#include <string.h>

typedef void (*set_fn)(int);
typedef int (*get_fn)(void);

/* A function from a library handle, NULL when the handle or the symbol is missing. */
static void *sym(void *h, const char *name)
{
    return h ? dlsym(h, name) : NULL;
}

/* libgomp, loaded (and pinned) when load, else only when something already loaded it. */
static void *gomp(int load)
{
    int flags = RTLD_NOW | RTLD_NODELETE | (load ? RTLD_GLOBAL : RTLD_NOLOAD);
    return dlopen("libgomp.so.1", flags);
}

int rx_rt_apply_threads(int n)
{
    void *set = sym(gomp(1), "omp_set_num_threads");
    if (!set) return -1;
    set_fn f;
    memcpy(&f, &set, sizeof f);
    f(n);
    void *bset = sym(rx_rt_blas_handle(), "openblas_set_num_threads");
    if (bset) {
        memcpy(&f, &bset, sizeof f);
        f(n);
    }
    return 0;
}

int rx_rt_set_threads(int n, rx_rt_err *err)
{
    if (n < 1 || n > RX_RT_MAX_THREADS)
        return rx_rt_fail(err, "threads: expected 1..%d, got %d", RX_RT_MAX_THREADS, n);
    if (rx_rt_apply_threads(n))
        return rx_rt_fail(err, "threads: cannot set the kernels' thread count (%s)",
                          gomp(1) ? "libgomp.so.1 has no omp_set_num_threads" : dlerror());
    rx_rt_gov_request(n); /* the count the governor keeps or goes back to (threads_gov.c) */
    return 0;
}

void rx_rt_get_threads(int *kernels, int *blas)
{
    get_fn f;
    void *get = sym(gomp(0), "omp_get_max_threads");
    *kernels = 0;
    if (get) {
        memcpy(&f, &get, sizeof f);
        *kernels = f();
    }
    void *bget = sym(rx_rt_blas_handle(), "openblas_get_num_threads");
    *blas = 0;
    if (bget) {
        memcpy(&f, &bget, sizeof f);
        *blas = f();
    }
}

/* ---- one parallel region for the library functions (library.c's blas.matmul_view) ----
 * GOMP_parallel and the thread-number queries of libgomp, resolved once (process-wide,
 * like the OpenBLAS handle: libgomp stays loaded). */
typedef void (*gomp_parallel_fn)(void (*)(void *), void *, unsigned, unsigned);

static pthread_once_t omp_once = PTHREAD_ONCE_INIT;
static gomp_parallel_fn omp_parallel;
static get_fn omp_thread_num, omp_num_threads, omp_max_threads;
static void (*omp_barrier)(void); /* GOMP_barrier: rx_rt_barrier */

static void omp_open(void)
{
    void *g = gomp(1), *p = sym(g, "GOMP_parallel"), *t = sym(g, "omp_get_thread_num"),
         *n = sym(g, "omp_get_num_threads"), *m = sym(g, "omp_get_max_threads");
    void *b = sym(g, "GOMP_barrier");
    if (!p || !t || !n || !m || !b) return;
    memcpy(&omp_barrier, &b, sizeof b);
    memcpy(&omp_thread_num, &t, sizeof t);
    memcpy(&omp_num_threads, &n, sizeof n);
    memcpy(&omp_max_threads, &m, sizeof m);
    memcpy(&omp_parallel, &p, sizeof p);
}

int rx_rt_parallel(void (*fn)(void *data), void *data)
{
    pthread_once(&omp_once, omp_open);
    if (!omp_parallel) return 0;
    int n = omp_max_threads();
    if (n <= 1) return 0;
    omp_parallel(fn, data, 0, 0);
    return n;
}

void rx_rt_parallel_id(int *id, int *n)
{
    *id = omp_thread_num ? omp_thread_num() : 0;
    *n = omp_num_threads ? omp_num_threads() : 1;
}

void rx_rt_barrier(void)
{
    if (omp_barrier) omp_barrier();
}

/* ---- rx_rt_parallel_for: the same region, the thread number passed ---- */

typedef struct par_job {
    void (*fn)(void *ud, int t, int n);
    void *ud;
} par_job;

static void par_tramp(void *p)
{
    par_job *j = p;
    int t, n;
    rx_rt_parallel_id(&t, &n);
    j->fn(j->ud, t, n);
}

void rx_rt_parallel_for(void (*fn)(void *ud, int t, int n), void *ud)
{
    par_job j = {fn, ud};
    if (!rx_rt_parallel(par_tramp, &j)) fn(ud, 0, 1);
}

int rx_rt_max_threads(void)
{
    pthread_once(&omp_once, omp_open);
    int n = omp_parallel ? omp_max_threads() : 1;
    return n < 1 ? 1 : n;
}

void rx_rt_parallel_for_n(void (*fn)(void *ud, int t, int n), void *ud, int n)
{
    int most = rx_rt_max_threads();
    if (n > most) n = most;
    if (n <= 1) {
        fn(ud, 0, 1);
        return;
    }
    par_job j = {fn, ud};
    omp_parallel(par_tramp, &j, (unsigned)n, 0);
}
