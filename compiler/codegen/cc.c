/*
 * cc.c — building generated C into a shared object with the system C compiler.
 *
 * The compiler is a subprocess run the way docs/design.md asks: an argv array through
 * posix_spawnp (never a shell, so nothing in a module can inject a command), in a
 * private directory made by mkdtemp (mode 0700) under $TMPDIR or /tmp, with a
 * wall-clock limit. The child runs in its own process group so that a timeout kills
 * the driver and everything it started (cc1, as, ld) with one signal; the parent
 * polls waitpid(WNOHANG) and always reaps, so no zombie survives a call. The child's
 * stdout and stderr go to a file in the directory; on failure the first lines that
 * mention an error become the diagnostic. Every descriptor the parent opens is
 * O_CLOEXEC, so concurrent builds on other threads never inherit one another's
 * files. The directory and every file in it are removed before returning.
 *
 * Reproducible objects: the compiler runs inside the private directory on the fixed
 * names k.c and k.so (posix_spawn's chdir action), so no temporary path reaches its
 * command line, and the default flags add -ffile-prefix-map=DIR=. (for any path a
 * debug flag would record) and a content-hashed build id (-Wl,--build-id=sha1). With
 * generated source that never reads __DATE__ or __TIME__, one source, compiler and flag
 * set give the same bytes whatever the directory, host or time (artifact.md).
 *
 * Loops start on 64-byte boundaries (-falign-loops=64): a kernel's speed then does not
 * depend on what code precedes it in the unit. Without it, the same avg_pool3d loop
 * nest (byte-identical C) ran 62 us in an O2 unit and 77 us in an O3 unit whose other
 * kernels differed (tests/e2e's nn3d case, 1 thread): O3 versus O2 comparisons
 * measured code placement.
 *
 * Kernels compile with -fno-math-errno: a sqrtf that may set errno (a negative
 * argument) is a libm call behind a test, which keeps gcc from vectorizing the loop
 * around it; without errno it is vsqrtps. Nothing reads errno after a kernel, and the
 * values are the same (sqrt is correctly rounded either way). Measured: a small UNet's
 * GroupNorm kernel over (1, 32, 64, 64) ((x - mean) / sqrt(var + eps), SiLU) was
 * scalar (vdivss, vsqrtss, a sqrtf call): 1.68 -> 0.28 ms with the flat reads of
 * schedule_rows.c, 2 threads (docs/passes.md).
 *
 * Kernels are built with -fopenmp by default, so the parallel loops of the generated
 * code run on OpenMP threads (the object then links libgomp); rx_cc_opts.no_openmp or
 * the environment variable RX_NO_OPENMP=1 builds them serially.
 *
 * The wall-clock limit is rx_cc_opts.timeout_s (relaxd's compile_timeout); when that is
 * 0, the environment variable RX_CC_TIMEOUT_S (1..86400), else 120 s: a loaded machine
 * compiling an O3 unit (three ISA versions of every kernel) may need more, and
 * benchmarks say so instead of losing the build.
 *
 * Cost: one process tree per build; the poll sleeps 5 ms between checks.
 */
#define _GNU_SOURCE 1 /* posix_spawn_file_actions_addchdir_np (glibc 2.29) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "relax/codegen.h"

extern char **environ;

enum { DEFAULT_TIMEOUT_S = 120, MAX_ERR_LINES = 6, MAX_LINE = 240 };

static const char *const DEFAULT_FLAGS[] = {"-std=c11", "-O2", "-falign-loops=64",
                                            "-fno-math-errno", "-fPIC", "-shared", "-fopenmp",
                                            NULL};
static const char *const SERIAL_FLAGS[] = {"-std=c11", "-O2", "-falign-loops=64",
                                           "-fno-math-errno", "-fPIC", "-shared", NULL};
/* Added after the default flags (not after a caller's own): reproducible objects. */
static const char *const REPRO_FLAGS[] = {"-Wl,--build-id=sha1", NULL};

/* True when kernels are built without OpenMP: o->no_openmp, or RX_NO_OPENMP set to
 * anything but "" or "0" in the environment. */
static bool no_openmp(const rx_cc_opts *o)
{
    const char *e = getenv("RX_NO_OPENMP");
    return o->no_openmp || (e && *e && strcmp(e, "0") != 0);
}

/* RX_CC_TIMEOUT_S when it is an integer in 1..86400, else DEFAULT_TIMEOUT_S. */
static int env_timeout_s(void)
{
    const char *e = getenv("RX_CC_TIMEOUT_S");
    if (!e || !*e) return DEFAULT_TIMEOUT_S;
    char *end;
    long v = strtol(e, &end, 10);
    return *end == '\0' && v >= 1 && v <= 86400 ? (int)v : DEFAULT_TIMEOUT_S;
}

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads the whole file (heap, NUL-terminated); NULL on error. */
static uint8_t *read_file(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    rx_sb sb = {0};
    char buf[65536];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            close(fd);
            rx_sb_free(&sb);
            return NULL;
        }
        if (r == 0) break;
        rx_sb_putn(&sb, buf, (size_t)r);
    }
    close(fd);
    *n = sb.n;
    if (!sb.p) return (uint8_t *)rx_xcalloc(1, 1);
    return (uint8_t *)rx_sb_take(&sb);
}

/* Removes every entry of dir, then dir itself. */
static void remove_dir(const char *dir)
{
    DIR *dp = opendir(dir);
    if (dp) {
        struct dirent *de;
        rx_sb p = {0};
        while ((de = readdir(dp)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            rx_sb_reset(&p);
            rx_sb_printf(&p, "%s/%s", dir, de->d_name);
            unlink(rx_sb_str(&p));
        }
        rx_sb_free(&p);
        closedir(dp);
    }
    rmdir(dir);
}

/* Appends to msg the compiler's first lines mentioning "error" (or its first lines
 * when none does), joined by " | ". */
static void first_errors(const char *log, rx_sb *msg)
{
    for (int pass = 0; pass < 2; pass++) {
        int taken = 0;
        for (const char *p = log; *p && taken < MAX_ERR_LINES;) {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            bool has = false;
            for (size_t i = 0; i + 5 <= len && !has; i++) has = !strncmp(p + i, "error", 5);
            if (len && (has || pass == 1)) {
                rx_sb_puts(msg, taken++ ? " | " : ": ");
                for (size_t i = 0; i < len && i < MAX_LINE; i++)
                    rx_sb_putc(msg, (unsigned char)p[i] < 0x20 ? ' ' : p[i]);
                if (len > MAX_LINE) rx_sb_puts(msg, "...");
            }
            p = e ? e + 1 : p + len;
        }
        if (taken) return;
    }
}

/* Waits for pid under the limit; kills its process group at the deadline. Returns
 * the wait status, -1 on timeout (the group is killed and reaped), or -2 when pid
 * cannot be waited for (SIGCHLD ignored by the embedding program: errno says why). */
static int wait_limited(pid_t pid, int timeout_s)
{
    double deadline = rx_now_s() + timeout_s;
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return st;
        if (r < 0 && errno != EINTR) return -2;
        if (rx_now_s() >= deadline) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
            return -1;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

bool rx_cc_build(const char *csrc, size_t n, const rx_cc_opts *o, uint8_t **so, size_t *so_n,
                 rx_diags *d)
{
    *so = NULL;
    *so_n = 0;
    rx_cc_opts opts = o ? *o : (rx_cc_opts){0};
    const char *cc = opts.cc ? opts.cc : "cc";
    int timeout = opts.timeout_s > 0 ? opts.timeout_s : env_timeout_s();
    const char *parent = opts.tmpdir ? opts.tmpdir : getenv("TMPDIR");
    if (!parent || !*parent) parent = "/tmp";

    /* Step 1: the private directory and the source. */
    rx_sb dir = {0};
    rx_sb_printf(&dir, "%s/rxcc.XXXXXX", parent);
    if (!mkdtemp(dir.p)) {
        rx_diag_add(d, "", "cannot create a temporary directory under %s: %s", parent,
                    strerror(errno));
        rx_sb_free(&dir);
        return false;
    }
    if (dir.p[0] != '/') {
        /* The child changes into dir before its file actions open cc.log: a relative
         * parent (relaxd --data ./var) must be made absolute first. */
        char *abs = realpath(dir.p, NULL);
        if (!abs) {
            rx_diag_add(d, "", "cannot resolve the temporary directory %s: %s", dir.p,
                        strerror(errno));
            rmdir(dir.p);
            rx_sb_free(&dir);
            return false;
        }
        rx_sb_reset(&dir);
        rx_sb_puts(&dir, abs);
        free(abs);
    }
    rx_sb src = {0}, obj = {0}, log = {0}, prefix_map = {0}, cc_abs = {0};
    rx_sb_printf(&src, "%s/k.c", dir.p);
    rx_sb_printf(&obj, "%s/k.so", dir.p);
    rx_sb_printf(&log, "%s/cc.log", dir.p);
    rx_sb_printf(&prefix_map, "-ffile-prefix-map=%s=.", dir.p);
    bool ok = false;
    RX_VEC(const char *) argv = {0};
    int fd = open(src.p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || !write_all(fd, csrc, n)) {
        rx_diag_add(d, "", "cannot write %s: %s", src.p, strerror(errno));
        if (fd >= 0) close(fd);
        goto out;
    }
    close(fd);

    /* Step 2: argv (fixed relative names: the child runs in dir) and the child's
     * environment of directory, descriptors and signals. A relative compiler path with a
     * slash is made absolute first, since the child resolves it in dir. */
    if (strchr(cc, '/') && cc[0] != '/') {
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd)) {
            rx_diag_add(d, "", "cannot run the C compiler \"%s\": %s", cc, strerror(errno));
            goto out;
        }
        rx_sb_printf(&cc_abs, "%s/%s", cwd, cc);
        cc = cc_abs.p;
    }
    RX_VEC_PUSH(argv, cc);
    const char *const *flags = opts.flags ? opts.flags
                                          : no_openmp(&opts) ? SERIAL_FLAGS : DEFAULT_FLAGS;
    for (const char *const *f = flags; *f; f++) RX_VEC_PUSH(argv, *f);
    if (!opts.flags) {
        for (const char *const *f = REPRO_FLAGS; *f; f++) RX_VEC_PUSH(argv, *f);
        RX_VEC_PUSH(argv, prefix_map.p);
    }
    for (const char *const *f = opts.extra; f && *f; f++) RX_VEC_PUSH(argv, *f);
    RX_VEC_PUSH(argv, "-o");
    RX_VEC_PUSH(argv, "k.so");
    RX_VEC_PUSH(argv, "k.c");
    RX_VEC_PUSH(argv, "-lm");
    RX_VEC_PUSH(argv, NULL);

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addchdir_np(&fa, dir.p);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log.p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    sigset_t none, defs;
    sigemptyset(&none);
    sigemptyset(&defs);
    sigaddset(&defs, SIGPIPE);
    sigaddset(&defs, SIGINT);
    sigaddset(&defs, SIGTERM);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &defs);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);

    /* Step 3: run it under the limit. */
    pid_t pid;
    int rc = posix_spawnp(&pid, cc, &fa, &at, (char *const *)argv.items, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        rx_diag_add(d, "", "cannot run the C compiler \"%s\": %s", cc, strerror(rc));
        goto out;
    }
    int st = wait_limited(pid, timeout);
    if (st == -1) {
        rx_diag_add(d, "", "C compiler timed out after %d s", timeout);
        goto out;
    }
    if (st == -2) {
        rx_diag_add(d, "", "cannot wait for the C compiler: %s", strerror(errno));
        goto out;
    }

    /* Step 4: the result, or the compiler's first errors. */
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        *so = read_file(obj.p, so_n);
        if (*so) ok = true;
        else rx_diag_add(d, "", "the C compiler succeeded but %s cannot be read: %s", obj.p,
                         strerror(errno));
        goto out;
    }
    size_t ln = 0;
    char *text = (char *)read_file(log.p, &ln);
    rx_sb msg = {0};
    if (WIFSIGNALED(st))
        rx_sb_printf(&msg, "C compiler \"%s\" killed by signal %d", cc, WTERMSIG(st));
    else
        rx_sb_printf(&msg, "C compiler \"%s\" failed (exit status %d)", cc, WEXITSTATUS(st));
    if (text) first_errors(text, &msg);
    rx_diag_add(d, "", "%s", rx_sb_str(&msg));
    rx_sb_free(&msg);
    free(text);
out:
    RX_VEC_FREE(argv);
    remove_dir(dir.p);
    rx_sb_free(&dir);
    rx_sb_free(&src);
    rx_sb_free(&obj);
    rx_sb_free(&log);
    rx_sb_free(&prefix_map);
    rx_sb_free(&cc_abs);
    return ok;
}
