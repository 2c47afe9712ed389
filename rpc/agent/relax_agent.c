/*
 * relax-agent — the device agent: hosts the C runtime and runs benchmark jobs that a
 * relaxd hands out (docs/agent.md; protocol docs/rpc.md; operators'
 * guide docs/agent.md).
 *
 *   relax-agent --server URL [--token T] [--name N] [--target T]... [--label L]...
 *               [--device-id N] [--threads N] [--no-devices] [--cache-dir D]
 *               [--cache-max-bytes B]
 *               [--once] [--verbose]
 *
 * The driver: Step 1 parse the command line (bad usage exits 2), install the signal
 * handlers and the stop pipe, gather the machine facts (sysinfo.c) and the GPU devices
 * (devices.c), settle the targets offered, open the artifact cache (cache.c) and start
 * the heartbeat thread; Steps 2-3 register, then long-poll,
 * run and report jobs until stopped (session.c); Step 4 join the heartbeat thread and
 * release everything.
 *
 * Stopping. SIGTERM/SIGINT set a flag and write one byte to a pipe that every wait
 * watches (HTTP waits in http.c, the child wait in job.c, backoff naps in session.c),
 * so the agent reacts within a millisecond even in the middle of a 20-second poll. A
 * running child is killed and its job reported failed with code "agent_shutdown" (the
 * server re-queues it for another agent), the heartbeat thread is joined, exit 0.
 *
 * Threads: the main loop and the heartbeat thread, each with its own HTTP connection;
 * what they share lives in rxag_agent under one mutex. The only globals are the two the
 * signal handler needs.
 *
 * Targets. `cpu` always runs; a GPU kind (opencl, vulkan, cuda) runs when the device
 * probe found device --device-id (default 0) of it. Without --target the agent offers
 * cpu and every GPU kind it found; a --target naming a kind it cannot run is refused at
 * start (exit 1, naming the probe's reason) rather than registered and failed later.
 * The registration carries each offered GPU kind's device (name and limits).
 *
 * Exit status: 0 after SIGTERM/SIGINT or --once; 1 when the server refuses the agent
 * for good (an unknown or wrong-role token: 401/403; a registration the server rejects
 * as malformed: 400), a --target it cannot run, or the cache directory is unusable — one "error:" line on stderr;
 * 2 bad usage.
 */
#include "agent.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop; /* set by the signal handler */
static int g_wake_wr = -1;           /* write end of the stop pipe, for the handler */

/* ---- command line ---- */

static void usage(FILE *f)
{
    fputs("usage: relax-agent --server URL [options]\n"
          "\n"
          "Registers with relaxd and runs the benchmark jobs it hands out with the C runtime.\n"
          "\n"
          "options:\n"
          "  --server URL          relaxd's address (env RELAX_SERVER)\n"
          "  --token T             agent token (env RELAX_AGENT_TOKEN; prefer the variable:\n"
          "                        arguments are visible to other users in ps)\n"
          "  --name N              agent name, stable across restarts (default: host name)\n"
          "  --target T            a target to offer (repeatable): cpu, or opencl, vulkan,\n"
          "                        cuda when such a device was found (default: cpu and\n"
          "                        every GPU kind found)\n"
          "  --device-id N         the device of each GPU kind that jobs run on (default 0)\n"
          "  --threads N           threads for jobs that name none (default: the environment,\n"
          "                        OMP_NUM_THREADS)\n"
          "  --no-devices          do not probe GPU devices (offer cpu only)\n"
          "  --label L             a label jobs may ask for (repeatable)\n"
          "  --no-auto-labels      do not add the machine (x86_64) and SIMD (avx2, avx512f,\n"
          "                        neon) labels\n"
          "  --cache-dir D         artifact cache (default $XDG_CACHE_HOME/relax-agent or\n"
          "                        ~/.cache/relax-agent)\n"
          "  --cache-max-bytes B   trim the cache to B bytes, least recently used first\n"
          "                        (K/M/G suffixes; default 1G; 0: no cap)\n"
          "  --once                exit after the first job\n"
          "  --verbose             log polls and heartbeats too\n"
          "  --help, --version\n"
          "\n"
          "exit status: 0 stopped (SIGTERM/SIGINT) or --once done, 1 refused by the server or\n"
          "unusable cache (error: ... on stderr), 2 bad usage\n",
          f);
}

#define bad_usage(fmt, arg) rx_usage_error("relax-agent", fmt, arg)

/* A label or target: 1..64 characters of [A-Za-z0-9._-]. */
static int valid_word(const char *s)
{
    return rx_is_word(s, 64);
}

/* A decimal integer lo..hi into *out; false when s is not one. */
static int int_in(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

static void default_cache_dir(rxag_opts *o)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(o->cache_dir, sizeof o->cache_dir, "%s/relax-agent", xdg);
    else if (home && *home)
        snprintf(o->cache_dir, sizeof o->cache_dir, "%s/.cache/relax-agent", home);
    else
        snprintf(o->cache_dir, sizeof o->cache_dir, "/var/cache/relax-agent");
}

/* Returns 0 to go on, 2 on bad usage, -1 after --help/--version. */
static int parse_args(int argc, char **argv, rxag_opts *o)
{
    o->auto_labels = 1;
    o->probe_devices = 1;
    o->cache_max_bytes = (int64_t)1 << 30;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--version")) {
            printf("relax-agent %s (protocol %d, rxa v%u, libcurl %s)\n", RX_VERSION, RXAG_PROTOCOL,
                   RX_RXA_VERSION, curl_version_info(CURLVERSION_NOW)->version);
            return -1;
        }
        if (!strcmp(a, "--once") || !strcmp(a, "--verbose") || !strcmp(a, "--no-auto-labels") ||
            !strcmp(a, "--no-devices")) {
            if (a[2] == 'o')
                o->once = 1;
            else if (a[2] == 'v')
                o->verbose = 1;
            else if (a[5] == 'a')
                o->auto_labels = 0;
            else
                o->probe_devices = 0;
            continue;
        }
        char name[32];
        const char *eq = strchr(a, '='), *val;
        size_t n = eq && a[0] == '-' ? (size_t)(eq - a) : strlen(a);
        if (a[0] != '-' || n >= sizeof name) return bad_usage("unexpected argument '%s'", a);
        memcpy(name, a, n);
        name[n] = 0;
        static const char *const valued[] = {"--server",          "--token",   "--name",
                                             "--target",          "--label",   "--cache-dir",
                                             "--cache-max-bytes", "--device-id", "--threads"};
        int known = 0;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
            known |= !strcmp(name, valued[k]);
        if (!known) return bad_usage("unknown option '%s'", a);
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc) return bad_usage("%s needs a value", name);
            val = argv[++i];
        }
        if (!strcmp(name, "--server")) {
            o->server = val;
        } else if (!strcmp(name, "--token")) {
            o->token = val;
        } else if (!strcmp(name, "--name")) {
            if (!valid_word(val))
                return bad_usage("--name wants 1..64 characters of [A-Za-z0-9._-], got '%s'", val);
            snprintf(o->name, sizeof o->name, "%s", val);
        } else if (!strcmp(name, "--target") || !strcmp(name, "--label")) {
            int is_t = name[2] == 't';
            if (!valid_word(val))
                return bad_usage(
                    "labels and targets are 1..64 characters of [A-Za-z0-9._-], got '%s'", val);
            if ((is_t ? o->ntargets : o->nlabels) >= RXAG_MAX_LABELS / 2)
                return bad_usage("too many %s options", name);
            if (is_t)
                o->targets[o->ntargets++] = val;
            else
                o->labels[o->nlabels++] = val;
        } else if (!strcmp(name, "--threads")) {
            if (!int_in(val, 1, RX_RT_MAX_THREADS, &o->threads))
                return bad_usage("--threads wants an integer 1..1024, got '%s'", val);
        } else if (!strcmp(name, "--device-id")) {
            if (!int_in(val, 0, RXAG_MAX_DEVICES - 1, &o->device_id))
                return bad_usage("--device-id wants an integer 0..15, got '%s'", val);
        } else if (!strcmp(name, "--cache-dir")) {
            if (!*val || strlen(val) >= sizeof o->cache_dir - 200)
                return bad_usage("bad --cache-dir '%s'", val);
            snprintf(o->cache_dir, sizeof o->cache_dir, "%s", val);
        } else {
            if (!rx_parse_size(val, &o->cache_max_bytes))
                return bad_usage("--cache-max-bytes wants a size (bytes, or K/M/G), got '%s'", val);
        }
    }
    if (!o->server) o->server = getenv("RELAX_SERVER");
    if (!o->server || !*o->server) return bad_usage("%s", "--server URL is required");
    if (!o->token) o->token = getenv("RELAX_AGENT_TOKEN");
    if (!o->name[0]) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        for (char *p = host; *p; p++)
            if (!valid_word((char[]){*p, 0})) *p = '-';
        snprintf(o->name, sizeof o->name, "%.64s", host[0] ? host : "relax-agent");
    }
    if (!o->cache_dir[0]) default_cache_dir(o);
    return 0;
}

/* ---- signals ---- */

static void on_signal(int sig)
{
    int saved = errno;
    g_stop = 1;
    if (g_wake_wr >= 0) {
        ssize_t w = write(g_wake_wr, "x", 1);
        (void)w;
    }
    errno = saved;
}

/* ---- targets ---- */

/* Probes the devices (unless --no-devices), logs what was found and why a kind is
 * missing, and settles ag->o.targets and ag->devices (the header essay's rule).
 * Returns 0, or 1 after printing why a --target cannot be offered. */
static int settle_targets(rxag_agent *ag)
{
    rxag_opts *o = &ag->o;
    json_t *found = o->probe_devices ? rxag_devices_detect(ag->wake_rd, 30000)
                                     : json_pack("{s:[], s:{}}", "devices", "absent");
    if (o->probe_devices)
        rxag_log(RXAG_INFO, "devices",
                 json_pack("{s:O, s:O, s:i}", "devices", json_object_get(found, "devices"),
                           "absent", json_object_get(found, "absent"), "device_id",
                           o->device_id));
    int rc = 0;
    for (int i = 0; i < o->ntargets && !rc; i++) {
        const char *t = o->targets[i], *why;
        int known = !strcmp(t, "cpu");
        for (size_t k = 0; rxag_devices_target_kind(k); k++)
            known |= !strcmp(t, rxag_devices_target_kind(k));
        if (!known) {
            fprintf(stderr, "error: unknown target %s (this relax-agent runs: cpu, opencl, vulkan, "
                            "cuda)\n", t);
            rc = 1;
        } else if (strcmp(t, "cpu") && !rxag_devices_has(found, t, o->device_id)) {
            why = json_string_value(json_object_get(json_object_get(found, "absent"), t));
            if (!o->probe_devices) why = "--no-devices was given";
            if (why)
                fprintf(stderr, "error: this relax-agent cannot run target %s: %s\n", t, why);
            else
                fprintf(stderr, "error: this relax-agent cannot run target %s: it has no %s device "
                                "%d (--device-id)\n", t, t, o->device_id);
            rc = 1;
        }
    }
    if (!o->ntargets) { /* default: cpu and every kind found */
        o->targets[o->ntargets++] = "cpu";
        for (size_t k = 0; rxag_devices_target_kind(k); k++)
            if (rxag_devices_has(found, rxag_devices_target_kind(k), o->device_id))
                o->targets[o->ntargets++] = rxag_devices_target_kind(k);
    }
    ag->devices = json_array(); /* the devices of the offered GPU kinds, at --device-id */
    const json_t *v;
    size_t i;
    json_array_foreach(json_object_get(found, "devices"), i, v) {
        const char *t = json_string_value(json_object_get(v, "target"));
        if (json_integer_value(json_object_get(v, "id")) != o->device_id) continue;
        for (int k = 0; k < o->ntargets; k++)
            if (!strcmp(o->targets[k], t)) json_array_append(ag->devices, (json_t *)v);
    }
    json_decref(found);
    return rc;
}

/* ---- main ---- */

static int setup(rxag_agent *ag, int *wake)
{
    char err[RXAG_ERR];
    if (pipe(wake)) {
        fprintf(stderr, "error: cannot create a pipe: %s\n", strerror(errno));
        return 1;
    }
    fcntl(wake[0], F_SETFD, FD_CLOEXEC);
    fcntl(wake[1], F_SETFD, FD_CLOEXEC);
    fcntl(wake[1], F_SETFL, O_NONBLOCK);
    ag->wake_rd = wake[0];
    g_wake_wr = wake[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fputs("error: cannot initialize libcurl\n", stderr);
        return 1;
    }
    if (rxag_conn_init(&ag->conn, ag->o.server, ag->o.token, ag->wake_rd, err, sizeof err) ||
        rxag_conn_init(&ag->hb, ag->o.server, ag->o.token, ag->wake_rd, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    if (rxag_cache_open(&ag->cache, ag->o.cache_dir, ag->o.cache_max_bytes, err, sizeof err)) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    rxag_sysinfo_get(&ag->sys);
    if (settle_targets(ag)) return 1;
    if (ag->o.auto_labels) {
        if (ag->sys.machine[0] && valid_word(ag->sys.machine) && ag->o.nlabels < RXAG_MAX_LABELS)
            ag->o.labels[ag->o.nlabels++] = ag->sys.machine;
        for (int i = 0; i < ag->sys.nsimd && ag->o.nlabels < RXAG_MAX_LABELS; i++)
            ag->o.labels[ag->o.nlabels++] = ag->sys.simd[i];
    }
    return 0;
}

int main(int argc, char **argv)
{
    static rxag_agent ag; /* large (paths); one per process */
    int rc = parse_args(argc, argv, &ag.o);
    if (rc) return rc < 0 ? 0 : rc;
    rxag_log_level(ag.o.verbose ? RXAG_DEBUG : RXAG_INFO);
    ag.stop = &g_stop;
    pthread_mutex_init(&ag.mu, NULL);
    pthread_cond_init(&ag.cv, NULL);
    int wake[2] = {-1, -1};
    rc = setup(&ag, wake);
    if (!rc) {
        json_t *labels = json_array(), *targets = json_array();
        for (int i = 0; i < ag.o.nlabels; i++)
            json_array_append_new(labels, json_string(ag.o.labels[i]));
        for (int i = 0; i < ag.o.ntargets; i++)
            json_array_append_new(targets, json_string(ag.o.targets[i]));
        rxag_log(RXAG_INFO, "starting",
                 json_pack("{s:s, s:s, s:s, s:o, s:o, s:s, s:i, s:I, s:s}", "version", RX_VERSION,
                           "server", ag.conn.base, "name", ag.o.name, "targets", targets,
                           "labels", labels, "cpu",
                           ag.sys.cpu, "cores", ag.sys.cores, "memory_bytes",
                           (json_int_t)ag.sys.memory_bytes, "cache_dir", ag.cache.dir));
        if (pthread_create(&ag.hb_thread, NULL, rxag_heartbeat_main, &ag) == 0) ag.hb_started = 1;
        /* Steps 2-3 (session.c) */
        rxag_session_loop(&ag);
        pthread_mutex_lock(&ag.mu);
        ag.stopping = 1;
        pthread_cond_broadcast(&ag.cv);
        pthread_mutex_unlock(&ag.mu);
        if (ag.hb_started) pthread_join(ag.hb_thread, NULL);
        if (ag.fatal) {
            fprintf(stderr, "error: %s\n", ag.fatal_msg);
            rc = 1;
        } else {
            rxag_log(RXAG_INFO, "stopped",
                     json_pack("{s:s}", "message",
                               g_stop ? "stopped by signal" : "--once: one job done"));
        }
    }
    rxag_conn_fini(&ag.conn);
    rxag_conn_fini(&ag.hb);
    curl_global_cleanup();
    g_wake_wr = -1;
    if (wake[0] >= 0) close(wake[0]);
    if (wake[1] >= 0) close(wake[1]);
    pthread_cond_destroy(&ag.cv);
    pthread_mutex_destroy(&ag.mu);
    json_decref(ag.devices);
    return rc;
}
