/*
 * mock_cublas.c — a stand-in for libcublas on hosts without a GPU, loaded by
 * runtime/cublas.c through $RX_CUBLAS_LIB in tests (test_cublas.c, cuda_e2e), next to
 * mock_cuda.c as the driver (whose device pointers are host pointers).
 *
 * It implements the five entry points the runtime resolves with cuBLAS's column-major
 * semantics, computed on the host in double precision:
 *
 *   C[i + j*ldc] = alpha * sum_l opA(A)[i, l] * opB(B)[l, j] + beta * C[i + j*ldc]
 *
 * with op N reading X[r + c*ld] and op T reading X[c + r*ld]; the strided batch adds
 * the strides per matrix. So a wrong mapping of the runtime's row-major operands onto
 * cuBLAS's convention gives wrong numbers, not only wrong recorded arguments. The last
 * call is recorded (mock_cublas_last) and the handle must be bound to a stream before a
 * GEMM (CUBLAS_STATUS_NOT_INITIALIZED otherwise, as a check of the runtime's order).
 * Invalid sizes answer CUBLAS_STATUS_INVALID_VALUE (7) as cuBLAS does. Not thread-safe.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7 };

typedef struct mock_handle {
    void *stream;
    int bound;
} mock_handle;

/* The last GEMM's arguments as cuBLAS got them (dlsym "mock_cublas_last"). */
typedef struct mock_cublas_call {
    int ta, tb, m, n, k, lda, ldb, ldc, batch;
    long long sa, sb, sc;
    int calls, handles;
} mock_cublas_call;

mock_cublas_call mock_cublas_last;

int cublasCreate_v2(mock_handle **h);
int cublasDestroy_v2(mock_handle *h);
int cublasSetStream_v2(mock_handle *h, void *stream);
int cublasSgemm_v2(mock_handle *h, int ta, int tb, int m, int n, int k, const float *alpha,
                   const float *a, int lda, const float *b, int ldb, const float *beta, float *c,
                   int ldc);
int cublasSgemmStridedBatched(mock_handle *h, int ta, int tb, int m, int n, int k,
                              const float *alpha, const float *a, int lda, long long sa,
                              const float *b, int ldb, long long sb, const float *beta, float *c,
                              int ldc, long long sc, int batch);

int cublasCreate_v2(mock_handle **h)
{
    *h = calloc(1, sizeof **h);
    mock_cublas_last.handles++;
    return *h ? OK : 3;
}

int cublasDestroy_v2(mock_handle *h)
{
    free(h);
    mock_cublas_last.handles--;
    return OK;
}

int cublasSetStream_v2(mock_handle *h, void *stream)
{
    h->stream = stream;
    h->bound = 1;
    return OK;
}

static double at(const float *x, int op, int r, int c, int ld)
{
    return op ? x[c + (size_t)r * ld] : x[r + (size_t)c * ld];
}

int cublasSgemmStridedBatched(mock_handle *h, int ta, int tb, int m, int n, int k,
                              const float *alpha, const float *a, int lda, long long sa,
                              const float *b, int ldb, long long sb, const float *beta, float *c,
                              int ldc, long long sc, int batch)
{
    mock_cublas_last = (mock_cublas_call){ta, tb, m, n, k, lda, ldb, ldc, batch, sa, sb, sc,
                                          mock_cublas_last.calls + 1, mock_cublas_last.handles};
    if (!h || !h->bound) return NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || (ta != 0 && ta != 1) || (tb != 0 && tb != 1) ||
        lda < (ta ? k : m) || ldb < (tb ? n : k) || ldc < m || lda < 1 || ldb < 1 || ldc < 1)
        return INVALID_VALUE;
    for (int p = 0; p < batch; p++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double s = 0;
                for (int l = 0; l < k; l++)
                    s += at(a + p * sa, ta, i, l, lda) * at(b + p * sb, tb, l, j, ldb);
                float *o = c + p * sc + i + (size_t)j * ldc;
                *o = (float)(*alpha * s + (*beta != 0 ? *beta * *o : 0));
            }
    return OK;
}

int cublasSgemm_v2(mock_handle *h, int ta, int tb, int m, int n, int k, const float *alpha,
                   const float *a, int lda, const float *b, int ldb, const float *beta, float *c,
                   int ldc)
{
    int calls = mock_cublas_last.calls;
    int s = cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c,
                                      ldc, 0, 1);
    mock_cublas_last.batch = 0; /* 0: the non-batched entry point was called */
    mock_cublas_last.calls = calls + 1;
    return s;
}
