/*
 * agent.h — the internals of relax-agent, the device side of remote benchmarking
 * (docs/agent.md for operators, docs/rpc.md for the protocol). Library rxagent: libcurl,
 * jansson, libcrypto and the runtime (rxrt + rxtools); nothing from the compiler.
 *
 *   log.c       rxag_log: one JSON object per line on stderr, written whole
 *   cache.c     rxag_cache_get: the content-addressed artifact cache — file name = id =
 *               SHA-256 of the bytes, written through a temp file and a rename, verified
 *               (digest and rx_rxa_parse) on every use, trimmed to a byte cap
 *   job.c       rxag_job_parse: a JOBSPEC into a C struct (base64 inputs decoded);
 *               rxag_job_run: one job in a forked child with a time limit
 *   check.c     rxag_check_*: outputs against expected arrays (max errors, allclose)
 *   sysinfo.c   rxag_sysinfo: CPU model, cores, memory, automatic labels
 *   devices.c   rxag_devices_detect: the OpenCL, Vulkan and CUDA devices (the runtime's
 *               device code, in a child process), offered as targets
 *   http.c      rxag_request: one HTTP exchange with relaxd, in the agent's terms, on
 *               the project's one client (rxhttp, relax/http.h)
 *   util.c      base64, SHA-256 hex, clocks, jittered backoff
 *   session.c   rxag_session_loop: register, long-poll, run, report, reconnect; the
 *               heartbeat thread
 *   relax_agent.c  main: command line, signals, setup
 *
 * Error convention: functions returning int give 0 on success and -1 with a one-line
 * message in the caller's buffer; job failures carry a protocol error code
 * ("download_error", "corrupt_artifact", ...) besides the message.
 */
#ifndef RELAX_AGENT_H
#define RELAX_AGENT_H

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench.h"
#include "relax/base.h"
#include "relax/http.h"

#define RXAG_PROTOCOL 1                      /* agent protocol version spoken */
#define RXAG_JSON_CAP ((size_t)64 << 20)     /* largest JSON body accepted (job specs) */
#define RXAG_ARTIFACT_CAP ((int64_t)1 << 31) /* largest artifact downloaded: 2 GiB */
#define RXAG_MAX_LIST 64                     /* shapes, inputs, expected outputs per job */
#define RXAG_ERR 512                         /* size of message buffers */
#define RXAG_MAX_LABELS 32 /* targets + labels offered */
#define RXAG_MAX_DEVICES 16 /* device ids probed per kind */

/* ---- log.c ---- */

enum { RXAG_DEBUG, RXAG_INFO, RXAG_WARN, RXAG_ERROR };

/* Sets the lowest level written (RXAG_INFO by default; --verbose: RXAG_DEBUG). */
void rxag_log_level(int level);

/* Writes {"ts", "level", "event", ...fields} as one line; fields (may be NULL) is a
 * JSON object whose reference is taken. Thread-safe. */
void rxag_log(int level, const char *event, json_t *fields);

/* ---- util.c ---- */

/* True when s is 64 lowercase hex digits (an artifact id). */
int rxag_valid_artifact_id(const char *s);

/* The k-th retry delay in seconds: min(cap, base * 2^k) scaled by a random factor in
 * [0.75, 1.25) (jitter keeps a fleet of agents from reconnecting in lockstep). */
double rxag_backoff(int k, double base, double cap);

/* pipe(2) then fork(2) (stdio flushed first): returns the child's pid in the parent,
 * with *fd the pipe's read end, and 0 in the child, with *fd its write end (the other
 * end closed on each side); -1 with err ("cannot fork: ..."). */
pid_t rxag_fork_pipe(int *fd, char *err, size_t errlen);

/* Writes n bytes to fd, retrying on EINTR; stops quietly at an error. */
void rxag_write_all(int fd, const char *p, size_t n);

/* ---- http.c: on the project's one client (base/include/relax/http.h) ---- */

/* One server, one libcurl handle, one thread at a time; readable wake_fd ends an
 * interruptible request at once (the agent's stop pipe). */
typedef rx_http rxag_conn;
typedef rx_http_resp rxag_resp;
/* Receives a 2xx body's bytes (downloads). Returns 0 to go on, -1 to abort. */
typedef rx_http_sink rxag_sink;

enum {
    RXAG_HTTP_OK = RX_HTTP_OK,          /* a response arrived (any status) */
    RXAG_HTTP_FAILED = RX_HTTP_FAILED,  /* no response: cannot connect, timeout, too large */
    RXAG_HTTP_STOPPED = RX_HTTP_STOPPED /* interrupted: wake_fd became readable */
};

/* Sets up c for server (http:// or https://, trailing '/' dropped) and token (may be
 * NULL). Returns 0, or -1 with err. */
int rxag_conn_init(rxag_conn *c, const char *server, const char *token, int wake_fd, char *err,
                   size_t errlen);
#define rxag_conn_fini rx_http_fini
#define rxag_resp_free rx_http_resp_free

/* METHOD base+path with an optional JSON body, waiting at most timeout_ms. A 2xx body
 * goes to sink when given (at most sink_cap bytes), else into r->body (RXAG_JSON_CAP).
 * interruptible: give up (RXAG_HTTP_STOPPED) as soon as wake_fd is readable. Returns
 * RXAG_HTTP_OK with r filled, or FAILED/STOPPED with a one-line reason in err. */
int rxag_request(rxag_conn *c, const char *method, const char *path, const char *json_body,
                 long timeout_ms, int interruptible, rxag_sink sink, void *ud, int64_t sink_cap,
                 rxag_resp *r, char *err, size_t errlen);

/* r's error object as "message (HTTP 404 code)" into buf; code into code[32] ("" when
 * none). Returns buf. */
const char *rxag_resp_error(const rxag_resp *r, char *code, char *buf, size_t n);

/* ---- cache.c ---- */

/* Writes the artifact's bytes to fd (the cache's temp file). Returns 0, or -1 with a
 * one-line reason in err. */
typedef int (*rxag_fetch_fn)(void *ud, int fd, char *err, size_t errlen);

typedef struct rxag_cache {
    char dir[4096];    /* the cache directory (created) */
    int64_t max_bytes; /* trimmed to this after a store (0: no cap) */
} rxag_cache;

/* A verified artifact held in memory. */
typedef struct rxag_blob {
    uint8_t *bytes; /* 64-byte aligned, owned (free()) */
    size_t n;       /* size */
    int hit;        /* 1 when it came from the cache, 0 when fetched now */
} rxag_blob;

/* Creates the directory (and parents) when missing and removes stale temp files.
 * Returns 0, or -1 with err. */
int rxag_cache_open(rxag_cache *c, const char *dir, int64_t max_bytes, char *err, size_t errlen);

/* The artifact `id`: the cached file when it verifies (SHA-256 == id and rx_rxa_parse
 * accepts it); otherwise (missing, or damaged: then removed and logged) fetched into a
 * temp file, verified, fsync'ed and renamed into place. A fetch that does not verify is
 * tried once more. On failure returns -1 with code "download_error" (the fetch failed)
 * or "corrupt_artifact" (the bytes did not verify) in code[32] and a message in err. */
int rxag_cache_get(rxag_cache *c, const char *id, rxag_fetch_fn fetch, void *ud, rxag_blob *out,
                   char *code, char *err, size_t errlen);

/* Sum of the sizes of the cached artifacts (-1 when the directory cannot be read). */
int64_t rxag_cache_bytes(const rxag_cache *c);

/* ---- job.c ---- */

/* A JOBSPEC, parsed. Strings are owned. */
typedef struct rxag_job {
    char id[129];                         /* job id */
    char artifact[65];                    /* artifact id (hex SHA-256) */
    char function[256];                   /* function name */
    int nshapes;                          /* symbolic variables given */
    rx_bench_kv shapes[RXAG_MAX_LIST];    /* name/value strings (owned) */
    int repeat, number, warmup;           /* timing loop */
    int threads;                          /* kernels' and BLAS threads; 0: the agent's */
    int device_id;                        /* the device a GPU artifact runs on (the
                                             agent's --device-id; not from the spec) */
    int64_t timeout_ms;                   /* the run's time limit */
    int ninputs;                          /* given inputs */
    rx_bench_input inputs[RXAG_MAX_LIST]; /* decoded .npy images (owned) */
    int nexpected;                        /* expected outputs (0: no check) */
    uint8_t *expected[RXAG_MAX_LIST];     /* decoded .npy images (owned) */
    size_t expected_len[RXAG_MAX_LIST];   /* their sizes */
    double rtol, atol;                    /* tolerance of the check */
} rxag_job;

/* Parses spec into job (zeroed first; free with rxag_job_free even on failure). On a
 * bad spec returns -1 with code ("input_error" for undecodable inputs, "bad_job" for a
 * malformed spec) and a message naming the field. */
int rxag_job_parse(const json_t *spec, rxag_job *job, char *code, char *err, size_t errlen);
void rxag_job_free(rxag_job *job);

/* Why a run was abandoned. */
enum { RXAG_RUN_DONE = 0, RXAG_RUN_ABORTED = 1 };

/* Asked every few ms while the child runs: nonzero abandons the run (the child is
 * killed and rxag_job_run returns RXAG_RUN_ABORTED). */
typedef int (*rxag_abort_fn)(void *ud);

/* Runs job on artifact bytes[0..n) in a forked child (the parent never loads the
 * artifact): load, bind arguments, the check when expected outputs are given, then
 * rx_rt_bench. The child writes its report on a pipe and exits; the parent waits with
 * the job's timeout (then SIGKILL: code "timeout"), watching wake_fd and abort_fn.
 * A child killed by a signal is "crashed". On RXAG_RUN_DONE *report is the result body
 * for the server ({"status": "done", "result"} or {"status": "failed", "error",
 * "result"?}, new reference). */
int rxag_job_run(const rxag_job *job, const uint8_t *bytes, size_t n, int wake_fd,
                 rxag_abort_fn abort_fn, void *ud, json_t **report);

/* A failure report {"status": "failed", "error": {"code", "message"}} (new reference). */
json_t *rxag_failure(const char *code, const char *message);

/* ---- check.c ---- */

/* The comparison of one call's outputs with the expected arrays. */
typedef struct rxag_check {
    double max_abs_error;   /* max |out - expected| over all elements */
    double max_rel_error;   /* max |out - expected| / |expected| over nonzero expected */
    int passed;             /* every element within atol + rtol * |expected| */
    char message[RXAG_ERR]; /* the first violation or mismatch, "" when passed */
} rxag_check;

/* Compares the flattened outputs of one call with nexp expected .npy images. A count,
 * shape or kind mismatch fails with a message; values are compared as doubles, NaN
 * equal to NaN (numpy.allclose with equal_nan=True). Returns 0, or -1 when an expected
 * image cannot be read (message in err). */
int rxag_check_outputs(rx_rt_outputs *out, uint8_t *const *exp, const size_t *exp_len, int nexp,
                       double rtol, double atol, rxag_check *res, char *err, size_t errlen);

/* ---- sysinfo.c ---- */

typedef struct rxag_sysinfo {
    char cpu[256];        /* "AMD EPYC 9R14 96-Core Processor" or the machine name */
    int cores;            /* online processors */
    int64_t memory_bytes; /* physical memory */
    char machine[72];     /* uname -m: "x86_64", "aarch64" */
    char simd[4][16];     /* SIMD labels found in /proc/cpuinfo: avx2, avx512f, neon */
    int nsimd;
} rxag_sysinfo;

/* Fills info from /proc/cpuinfo, sysconf and uname (missing facts stay empty/0). */
void rxag_sysinfo_get(rxag_sysinfo *info);

/* ---- devices.c ---- */

/* Probes the OpenCL, Vulkan and CUDA devices with rx_dev_open in a forked child (the
 * agent never loads a driver itself), killed after timeout_ms or when wake_fd becomes
 * readable. Returns {"devices": [{"target", "id", "api", "name", "platform",
 * "max_threads", "max_local_bytes", "max_alloc_bytes", "global_bytes", "align_bytes",
 * "max_push_bytes"}...], "absent": {KIND: reason}} (new reference; never NULL: a failed
 * probe is every kind absent with the reason). */
json_t *rxag_devices_detect(int wake_fd, int64_t timeout_ms);

/* True when found (rxag_devices_detect's) has device id of target kind. */
int rxag_devices_has(const json_t *found, const char *target, int32_t id);

/* The GPU target kinds probed, k = 0, 1, ...; NULL past the last. */
const char *rxag_devices_target_kind(size_t k);

/* ---- session.c ---- */

/* The command line (relax_agent.c fills it). */
typedef struct rxag_opts {
    const char *server;                   /* --server */
    const char *token;                    /* --token or RELAX_AGENT_TOKEN */
    char name[128];                       /* --name, default the host name */
    const char *targets[RXAG_MAX_LABELS]; /* --target (default cpu) */
    int ntargets;
    const char *labels[RXAG_MAX_LABELS]; /* --label, plus automatic ones */
    int nlabels;
    int auto_labels;         /* add machine and SIMD labels (--no-auto-labels) */
    int probe_devices;       /* detect GPU devices (--no-devices: 0) */
    int device_id;           /* --device-id: the device of each GPU kind jobs run on */
    int threads;             /* --threads: for jobs that name none (0: the environment) */
    char cache_dir[4096];    /* --cache-dir */
    int64_t cache_max_bytes; /* --cache-max-bytes */
    int once;                /* --once: exit after one job */
    int verbose;             /* --verbose */
} rxag_opts;

/* One agent process: what the main loop and the heartbeat thread share. */
typedef struct rxag_agent {
    rxag_opts o;                             /* the command line */
    volatile sig_atomic_t *stop;             /* set by SIGTERM/SIGINT (the handler's flag) */
    rxag_sysinfo sys;                        /* machine facts */
    json_t *devices;                         /* registered: the devices jobs run on (array) */
    rxag_cache cache;                        /* artifacts */
    rxag_conn conn;                          /* the main loop's connection */
    rxag_conn hb;                            /* the heartbeat thread's connection */
    int wake_rd;                             /* read end of the stop pipe */
    pthread_t hb_thread;                     /* the heartbeat thread */
    int hb_started;                          /* it was started */
    pthread_mutex_t mu;                      /* guards everything below */
    pthread_cond_t cv;                       /* heartbeat timing, stop */
    char id[72];                             /* agent id from registration; "" none */
    int need_register;                       /* heard unknown_agent: register again */
    char job[129];                           /* the job being run; "" none */
    int cancel;                              /* the server no longer assigns job to us */
    int lost;                                /* our registration vanished during the job */
    int fatal;                               /* the server refused us for good (exit 1) */
    char fatal_msg[2048];                    /* its message */
    int stopping;                            /* the heartbeat thread should end */
    int64_t heartbeat_ms, lease_ms, poll_ms; /* the server's periods */
} rxag_agent;

/* Steps 2-3 of relax-agent: registers (retrying while the server is away), then polls,
 * runs and reports jobs until *ag->stop, --once after one job, or a refusal for good
 * (ag->fatal set). ag must be set up (connections, cache, wake pipe, mutex, cv). */
void rxag_session_loop(rxag_agent *ag);

/* The heartbeat thread's body (arg: the rxag_agent): every heartbeat_ms while a job
 * runs, renews the lease and listens for cancel=true / unknown_agent. Ends when
 * ag->stopping is set and ag->cv signalled. */
void *rxag_heartbeat_main(void *arg);

#endif
