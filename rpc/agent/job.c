/*
 * job.c — one benchmark job: the JOBSPEC parsed, then run in a forked child.
 *
 * Why a child: a benchmark runs code the compiler generated, on inputs someone sent. A
 * kernel that crashes, loops or exhausts memory must cost one job, not the agent; and
 * each run starts from a fresh runtime (no pool or cache state left by the previous
 * job), so its numbers do not depend on what ran before. The parent never loads the
 * artifact; it forks, then waits.
 *
 * The child, step by step: Step 1 a CPU context, the agent's --device-id (the device a
 * GPU artifact opens: its kernels' API, that id) and rx_rt_load_bytes (failure:
 * "load_error"; load_ms timed), then the job's `threads` for the kernels and the BLAS
 * library (rx_rt_set_threads; absent: the agent's environment decides); Step 2 rx_bench_args_build with the job's shapes and
 * inputs and seed 0 — the code relax-run uses, so a missing input gets the same random
 * data `relax-run --seed 0` would give it ("shape_error" / "input_error" by the error's
 * class); Step 3 when expected outputs came with the job, one call and the comparison
 * (check.c), whose verdict is kept for the end; Step 4 rx_rt_bench with the job's warmup,
 * repeat and number, formatted by rx_bench_format (relax-run --bench's line) and parsed
 * back, so the report's statistics are byte for byte what relax-run prints; Step 5 the
 * report (JSON text) on the pipe, then _exit (no atexit handlers, no stdio flush of the
 * parent's buffers). A call that fails with a MATCH message (", got ") is a
 * "shape_error", any other failure a "run_error". A failed check is status "failed",
 * code "check_failed", with the statistics and the errors still in "result".
 *
 * The parent reads the pipe until EOF with poll(2), also watching the stop pipe and
 * asking abort_fn every 50 ms (a cancel heard by the heartbeat thread, a lost
 * registration). Past the job's timeout_ms the child is SIGKILLed: "timeout". After
 * EOF it reaps the child: killed by a signal is "crashed" (naming the signal); an exit
 * without a report is "crashed" too — unless the agent is stopping, whose signal may
 * have reached the child first. On Linux the child also dies with the agent
 * (PR_SET_PDEATHSIG), so a SIGKILLed agent leaves no benchmark running; it runs in a
 * process group of its own, so a terminal's Ctrl-C goes to the agent alone.
 */
#include "agent.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define REPORT_CAP ((size_t)1 << 20) /* largest report a child may write */

/* ---- the spec ---- */

static int bad(char *code, const char *c, char *err, size_t errlen, const char *msg,
               const char *field)
{
    snprintf(code, 32, "%s", c);
    snprintf(err, errlen, "%s: %s", field, msg);
    return -1;
}

/* An integer field in [lo, hi], default def when absent. */
static int int_field(const json_t *spec, const char *key, int64_t lo, int64_t hi, int64_t def,
                     int64_t *out, char *code, char *err, size_t errlen)
{
    const json_t *v = json_object_get(spec, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(code, 32, "bad_job");
        snprintf(err, errlen, "%s: expected an integer in %lld..%lld", key, (long long)lo,
                 (long long)hi);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static int tolerance(const json_t *spec, rxag_job *job, char *code, char *err, size_t errlen)
{
    const json_t *t = json_object_get(spec, "tolerance");
    job->rtol = 1e-5;
    job->atol = 1e-6;
    if (!t || json_is_null(t)) return 0;
    if (!json_is_object(t))
        return bad(code, "bad_job", err, errlen, "expected an object", "tolerance");
    const char *keys[2] = {"rtol", "atol"};
    double *dst[2] = {&job->rtol, &job->atol};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(t, keys[i]);
        if (!v) continue;
        if (!json_is_number(v) || !(json_number_value(v) >= 0)) {
            snprintf(code, 32, "bad_job");
            snprintf(err, errlen, "tolerance.%s: expected a number >= 0", keys[i]);
            return -1;
        }
        *dst[i] = json_number_value(v);
    }
    return 0;
}

/* "shapes": {"n": 128, ...} into owned name/value strings. */
static int shapes(const json_t *spec, rxag_job *job, char *code, char *err, size_t errlen)
{
    const json_t *s = json_object_get(spec, "shapes");
    if (!s || json_is_null(s)) return 0;
    if (!json_is_object(s))
        return bad(code, "bad_job", err, errlen, "expected an object", "shapes");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        if (job->nshapes == RXAG_MAX_LIST)
            return bad(code, "bad_job", err, errlen, "too many symbolic variables", "shapes");
        if (!json_is_integer(v)) {
            snprintf(code, 32, "shape_error");
            snprintf(err, errlen, "shapes.%.100s: expected an integer", k);
            return -1;
        }
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        char *name = strdup(k), *val = strdup(num);
        job->shapes[job->nshapes].name = name;
        job->shapes[job->nshapes].value = val;
        job->nshapes++;
        if (!name || !val) return bad(code, "run_error", err, errlen, "out of memory", "shapes");
    }
    return 0;
}

/* "inputs": {"x": "<base64 .npy>"} and "expected": ["<base64 .npy>", ...]. */
static int arrays(const json_t *spec, rxag_job *job, char *code, char *err, size_t errlen)
{
    const json_t *in = json_object_get(spec, "inputs");
    if (in && !json_is_null(in)) {
        if (!json_is_object(in))
            return bad(code, "bad_job", err, errlen, "expected an object", "inputs");
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)in, k, v) {
            if (job->ninputs == RXAG_MAX_LIST)
                return bad(code, "input_error", err, errlen, "too many inputs", "inputs");
            rx_bench_input *bi = &job->inputs[job->ninputs];
            uint8_t *bytes = NULL;
            size_t n = 0;
            char label[160];
            snprintf(label, sizeof label, "inputs.%.100s", k);
            if (!json_is_string(v) ||
                !rx_base64_decode_unpadded(json_string_value(v), json_string_length(v), &bytes, &n)) {
                snprintf(code, 32, "input_error");
                snprintf(err, errlen, "%s: expected a base64 string (an .npy file)", label);
                return -1;
            }
            bi->name = strdup(k);
            bi->label = strdup(label);
            bi->bytes = bytes;
            bi->nbytes = n;
            job->ninputs++;
            if (!bi->name || !bi->label)
                return bad(code, "run_error", err, errlen, "out of memory", "inputs");
        }
    }
    const json_t *ex = json_object_get(spec, "expected");
    if (ex && !json_is_null(ex)) {
        if (!json_is_array(ex))
            return bad(code, "bad_job", err, errlen, "expected an array", "expected");
        if (json_array_size(ex) > RXAG_MAX_LIST)
            return bad(code, "input_error", err, errlen, "too many arrays", "expected");
        for (size_t i = 0; i < json_array_size(ex); i++) {
            const json_t *v = json_array_get(ex, i);
            if (!json_is_string(v) || !rx_base64_decode_unpadded(json_string_value(v), json_string_length(v),
                                                                &job->expected[i], &job->expected_len[i])) {
                snprintf(code, 32, "input_error");
                snprintf(err, errlen, "expected[%zu]: expected a base64 string (an .npy file)", i);
                return -1;
            }
            job->nexpected++;
        }
    }
    return 0;
}

int rxag_job_parse(const json_t *spec, rxag_job *job, char *code, char *err, size_t errlen)
{
    memset(job, 0, sizeof *job);
    code[0] = 0;
    if (!json_is_object(spec))
        return bad(code, "bad_job", err, errlen, "expected an object", "job");
    const char *id = json_string_value(json_object_get(spec, "id"));
    const char *art = json_string_value(json_object_get(spec, "artifact"));
    const char *fn = json_string_value(json_object_get(spec, "function"));
    if (!id || !*id || strlen(id) >= sizeof job->id)
        return bad(code, "bad_job", err, errlen, "expected a job id", "id");
    snprintf(job->id, sizeof job->id, "%s", id);
    if (!art || !rxag_valid_artifact_id(art))
        return bad(code, "bad_job", err, errlen, "expected 64 lowercase hex digits", "artifact");
    snprintf(job->artifact, sizeof job->artifact, "%s", art);
    if (fn && strlen(fn) >= sizeof job->function)
        return bad(code, "bad_job", err, errlen, "too long", "function");
    snprintf(job->function, sizeof job->function, "%s", fn && *fn ? fn : "main");
    int64_t repeat, number, warmup, timeout, threads;
    if (int_field(spec, "repeat", 1, 1000000, 10, &repeat, code, err, errlen) ||
        int_field(spec, "threads", 1, RX_RT_MAX_THREADS, 0, &threads, code, err, errlen) ||
        int_field(spec, "number", 1, 1000000, 1, &number, code, err, errlen) ||
        int_field(spec, "warmup", 0, 1000000, 1, &warmup, code, err, errlen) ||
        int_field(spec, "timeout_ms", 1, (int64_t)86400 * 1000 * 7, 60000, &timeout, code, err,
                  errlen))
        return -1;
    job->repeat = (int)repeat;
    job->number = (int)number;
    job->warmup = (int)warmup;
    job->threads = (int)threads;
    job->timeout_ms = timeout;
    if (shapes(spec, job, code, err, errlen) || arrays(spec, job, code, err, errlen) ||
        tolerance(spec, job, code, err, errlen))
        return -1;
    return 0;
}

void rxag_job_free(rxag_job *job)
{
    for (int i = 0; i < job->nshapes; i++) {
        free((char *)job->shapes[i].name);
        free((char *)job->shapes[i].value);
    }
    for (int i = 0; i < job->ninputs; i++) {
        free((char *)job->inputs[i].name);
        free((char *)job->inputs[i].label);
        free((uint8_t *)job->inputs[i].bytes);
    }
    for (int i = 0; i < job->nexpected; i++) free(job->expected[i]);
    memset(job, 0, sizeof *job);
}

json_t *rxag_failure(const char *code, const char *message)
{
    return json_pack("{s:s, s:{s:s, s:s}}", "status", "failed", "error", "code", code, "message",
                     message);
}

/* ---- the child ---- */

/* A call failure: the VM's MATCH messages end in ", got ...". */
static const char *call_code(const char *msg)
{
    return strstr(msg, ", got ") ? "shape_error" : "run_error";
}

static json_t *child_run(const rxag_job *job, const uint8_t *bytes, size_t n)
{
    static const char *const ekind_code[] = {"", "input_error", "shape_error", "input_error",
                                             "run_error"};
    char what[80], msg[1024];
    rx_rt_err err = {""};
    snprintf(what, sizeof what, "artifact %.12s", job->artifact);
    /* Step 1: load. */
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    if (!ctx) return rxag_failure("run_error", "out of memory creating the runtime context");
    rx_rt_set_device_id(ctx, job->device_id); /* a GPU artifact's device (--device-id) */
    double t0 = rx_now_s();
    rx_rt_module *m = rx_rt_load_bytes(ctx, bytes, n, what, &err);
    double load_ms = (rx_now_s() - t0) * 1e3;
    if (!m) {
        rx_rt_ctx_free(ctx);
        return rxag_failure("load_error", err.msg);
    }
    /* The job's thread count, for the kernels and the BLAS library alike (threads.c). */
    if (job->threads && rx_rt_set_threads(job->threads, &err)) {
        rx_rt_module_free(m);
        rx_rt_ctx_free(ctx);
        return rxag_failure("run_error", err.msg);
    }
    json_t *report = NULL, *check = NULL;
    /* Step 2: arguments. */
    rx_bench_args a;
    rx_bench_ekind k = rx_bench_args_build(m, what, job->function, job->shapes, job->nshapes,
                                           job->inputs, job->ninputs, 0, &a, msg, sizeof msg);
    if (k) {
        report = rxag_failure(ekind_code[k], msg);
        goto out;
    }
    /* Step 3: the check. */
    if (job->nexpected) {
        rx_rt_outputs *outs;
        rxag_check c;
        if (rx_rt_call(m, a.fn, a.args, (int)a.nargs, &outs, NULL, &err)) {
            report = rxag_failure(call_code(err.msg), err.msg);
            goto out;
        }
        int rc = rxag_check_outputs(outs, job->expected, job->expected_len, job->nexpected,
                                    job->rtol, job->atol, &c, msg, sizeof msg);
        rx_rt_outputs_free(outs);
        if (rc) {
            report = rxag_failure("input_error", msg);
            goto out;
        }
        check = json_pack("{s:f, s:f, s:s}", "max_abs_error", c.max_abs_error, "max_rel_error",
                          c.max_rel_error, "check", c.passed ? "passed" : "failed");
        if (!c.passed) json_object_set_new(check, "message", json_string(c.message));
    }
    /* Step 4: the benchmark, reported as relax-run --bench prints it. */
    rx_rt_bench_opts bo = {job->warmup, job->repeat, job->number, 0, 0};
    rx_rt_bench_result r;
    if (rx_rt_bench(m, a.fn, a.args, (int)a.nargs, &bo, &r, &err)) {
        report = rxag_failure(call_code(err.msg), err.msg);
        goto out;
    }
    rx_bench_format(&r, msg, sizeof msg);
    json_t *result = json_loads(msg, 0, NULL);
    if (!result) {
        report = rxag_failure("run_error", "cannot format the benchmark result");
        goto out;
    }
    json_object_set_new(result, "load_ms", json_real(load_ms));
    if (check) {
        const char *verdict = json_string_value(json_object_get(check, "check"));
        json_t *cm = json_incref(json_object_get(check, "message"));
        json_object_del(check, "message");
        json_object_update(result, check);
        if (!strcmp(verdict, "passed")) {
            report = json_pack("{s:s, s:o}", "status", "done", "result", result);
            json_decref(cm);
        } else {
            report = json_pack("{s:s, s:{s:s, s:o}, s:o}", "status", "failed", "error", "code",
                               "check_failed", "message", cm, "result", result);
        }
    } else {
        report = json_pack("{s:s, s:o}", "status", "done", "result", result);
    }
out:
    json_decref(check);
    rx_bench_args_free(&a);
    rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
    return report;
}

/* The child's whole life: never returns. */
static void child_main(const rxag_job *job, const uint8_t *bytes, size_t n, int fd)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    setpgid(0, 0); /* a terminal's Ctrl-C reaches the agent, which then stops the child */
    /* Default dispositions: a fault in a kernel kills the child with its signal (also
     * under a sanitizer, whose own handler would turn it into an exit status). */
    static const int sigs[] = {SIGTERM, SIGINT, SIGPIPE, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    json_t *report = child_run(job, bytes, n);
    char *text = report ? json_dumps(report, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
    if (text) rxag_write_all(fd, text, strlen(text));
    _exit(text ? 0 : 3);
}

/* ---- the parent ---- */

/* Reaps pid; *sig the killing signal (0 none), *status its exit status. */
static void reap(pid_t pid, int *sig, int *status)
{
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    *sig = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
    *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

int rxag_job_run(const rxag_job *job, const uint8_t *bytes, size_t n, int wake_fd,
                 rxag_abort_fn abort_fn, void *ud, json_t **report)
{
    char msg[RXAG_ERR], why[256];
    int fd;
    *report = NULL;
    pid_t pid = rxag_fork_pipe(&fd, why, sizeof why);
    if (pid < 0) {
        snprintf(msg, sizeof msg, "the benchmark process: %s", why);
        *report = rxag_failure("run_error", msg);
        return RXAG_RUN_DONE;
    }
    if (pid == 0) child_main(job, bytes, n, fd);
    char *buf = malloc(REPORT_CAP + 1);
    size_t len = 0;
    int64_t deadline = rx_now_ms_int() + job->timeout_ms;
    int timed_out = 0, aborted = 0, too_large = 0;
    for (;;) {
        int64_t left = deadline - rx_now_ms_int();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd fds[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
        int r = poll(fds, wake_fd >= 0 ? 2 : 1, (int)(left < 50 ? left : 50));
        if (r < 0 && errno != EINTR) break;
        if ((wake_fd >= 0 && (fds[1].revents & POLLIN)) || (abort_fn && abort_fn(ud))) {
            aborted = 1;
            break;
        }
        if (r <= 0 || !(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char tmp[65536];
        ssize_t got = read(fd, tmp, sizeof tmp);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; /* EOF: the child is done */
        if (!buf || len + (size_t)got > REPORT_CAP) {
            too_large = 1;
            break;
        }
        memcpy(buf + len, tmp, (size_t)got);
        len += (size_t)got;
    }
    close(fd);
    if (timed_out || aborted || too_large) kill(pid, SIGKILL);
    int sig, status;
    reap(pid, &sig, &status);
    if (sig && !timed_out && wake_fd >= 0) {
        /* killed while the agent is being stopped (a signal sent to the whole group):
         * that is the stop, not a crash */
        struct pollfd w = {.fd = wake_fd, .events = POLLIN};
        if (poll(&w, 1, 0) > 0 && (w.revents & POLLIN)) aborted = 1;
    }
    if (aborted) {
        free(buf);
        return RXAG_RUN_ABORTED;
    }
    if (timed_out) {
        snprintf(msg, sizeof msg, "the run exceeded the job's timeout of %lld ms and was killed",
                 (long long)job->timeout_ms);
        *report = rxag_failure("timeout", msg);
    } else if (too_large) {
        snprintf(msg, sizeof msg, "the benchmark process wrote a report larger than %zu bytes",
                 REPORT_CAP);
        *report = rxag_failure("crashed", msg);
    } else if (sig) {
        snprintf(msg, sizeof msg, "the benchmark process was killed by signal %d (%s)", sig,
                 strsignal(sig));
        *report = rxag_failure("crashed", msg);
    } else {
        json_t *j = buf && len ? json_loadb(buf, len, 0, NULL) : NULL;
        if (status == 0 && json_is_object(j)) {
            *report = j;
        } else {
            json_decref(j);
            snprintf(msg, sizeof msg,
                     "the benchmark process exited with status %d without a report", status);
            *report = rxag_failure("crashed", msg);
        }
    }
    free(buf);
    return RXAG_RUN_DONE;
}
