/*
 * devices.c — the GPU devices relax-agent offers: its OpenCL devices, Vulkan physical
 * devices and CUDA devices, found with the runtime's own device code (rx_dev_open,
 * runtime/device_*.c: each API's library loaded with dlopen), so the agent runs jobs on
 * exactly the devices it found and a host without a driver simply has none of that
 * kind.
 *
 * How. For each kind (opencl, vulkan, cuda) device ids 0, 1, ... are opened with
 * rx_dev_open until one fails (ids count as the runtime counts them: OpenCL over all
 * platforms in order, Vulkan in the loader's order, CUDA in the driver's); each open
 * device's rx_dev_info — name, platform, limits — is recorded, then it is closed. The
 * failure at id 0 is the reason the kind has no device ("no Vulkan device: cannot load
 * libvulkan.so.1 (...)"), logged at start so an operator sees why a kind is missing.
 *
 * In a child process. The probing runs in a forked child that writes its findings as
 * one JSON object on a pipe and _exits; the agent itself never loads a GPU driver.
 * Drivers start threads (PoCL's pthread device, lavapipe's rasterizer threads) and keep
 * process-wide state that a fork does not copy soundly, and every job runs in a forked
 * child that must open its device afresh (job.c). A child that hangs in a broken driver
 * is killed after a deadline and the agent offers no GPU devices, saying so.
 *
 * What it gives: {"devices": [{"target", "id", "api", "name", "platform", "max_threads",
 * "max_local_bytes", "max_alloc_bytes", "global_bytes", "align_bytes",
 * "max_push_bytes"[, "compute_capability" (CUDA: "9.0")]}...], "absent": {"kind":
 * "reason", ...}} — the "devices" array goes
 * into the registration as it is (docs/rpc.md); the targets a device kind adds are
 * rxag_devices_targets'.
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

#include "relax/device.h"

#define PROBE_CAP (256 * 1024) /* largest report the child may write */

static const struct {
    const char *target; /* the target kind it serves */
    int32_t dl_type;    /* DLPack device type */
} KINDS[] = {{"opencl", kDLOpenCL}, {"vulkan", kDLVulkan}, {"cuda", kDLCUDA}};

/* The child's findings (see the essay). */
static json_t *probe_all(void)
{
    json_t *devs = json_array(), *absent = json_object();
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++) {
        for (int32_t id = 0; id < RXAG_MAX_DEVICES; id++) {
            rx_rt_err err = {""};
            rx_dev *d = rx_dev_open(KINDS[k].dl_type, id, &err);
            if (!d) {
                if (id == 0) json_object_set_new(absent, KINDS[k].target, json_string(err.msg));
                break;
            }
            const rx_dev_info *i = &d->info;
            json_array_append_new(
                devs,
                json_pack("{s:s, s:i, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "target",
                          KINDS[k].target, "id", (int)id, "api", rx_dev_type_name(KINDS[k].dl_type),
                          "name", i->name, "platform", i->platform, "max_threads",
                          (json_int_t)i->max_threads, "max_local_bytes",
                          (json_int_t)i->max_local_bytes, "max_alloc_bytes",
                          (json_int_t)i->max_alloc_bytes, "global_bytes",
                          (json_int_t)i->global_bytes, "align_bytes", (json_int_t)i->align_bytes,
                          "max_push_bytes", (json_int_t)i->max_push_bytes));
            if (i->compute[0]) /* CUDA: the compute capability ("9.0") */
                json_object_set_new(json_array_get(devs, json_array_size(devs) - 1),
                                    "compute_capability", json_string(i->compute));
            rx_dev_close(d);
        }
    }
    return json_pack("{s:o, s:o}", "devices", devs, "absent", absent);
}

/* A report saying every kind is absent for one reason. */
static json_t *none_because(const char *why)
{
    json_t *absent = json_object();
    for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
        json_object_set_new(absent, KINDS[k].target, json_string(why));
    return json_pack("{s:[], s:o}", "devices", "absent", absent);
}

/* True when the child's report has the expected shape (it is our own child, but a
 * driver that scribbles on stdout must not make the agent register garbage). */
static int report_ok(const json_t *r)
{
    const json_t *devs = json_object_get(r, "devices"), *v;
    size_t i;
    if (!json_is_array(devs) || !json_is_object(json_object_get(r, "absent"))) return 0;
    json_array_foreach(devs, i, v)
    {
        if (!json_is_string(json_object_get(v, "target")) ||
            !json_is_integer(json_object_get(v, "id")) ||
            !json_is_string(json_object_get(v, "name")))
            return 0;
    }
    return 1;
}

json_t *rxag_devices_detect(int wake_fd, int64_t timeout_ms)
{
    char msg[RXAG_ERR], err[256];
    int fd;
    pid_t pid = rxag_fork_pipe(&fd, err, sizeof err);
    if (pid < 0) {
        snprintf(msg, sizeof msg, "the device probe: %s", err);
        return none_because(msg);
    }
    if (pid == 0) {
        json_t *r = probe_all();
        char *text = json_dumps(r, JSON_COMPACT);
        if (text) rxag_write_all(fd, text, strlen(text));
        _exit(text ? 0 : 3); /* no atexit handlers: the drivers' state is not ours */
    }
    char *buf = malloc(PROBE_CAP + 1);
    size_t len = 0;
    int64_t deadline = rx_now_ms_int() + timeout_ms;
    const char *why = NULL;
    for (;;) {
        int64_t left = deadline - rx_now_ms_int();
        if (left <= 0) {
            why = "timed out";
            break;
        }
        struct pollfd fds[2] = {{.fd = fd, .events = POLLIN}, {.fd = wake_fd, .events = POLLIN}};
        int r = poll(fds, wake_fd >= 0 ? 2 : 1, (int)(left < 100 ? left : 100));
        if (r < 0 && errno != EINTR) {
            why = "failed";
            break;
        }
        if (wake_fd >= 0 && (fds[1].revents & POLLIN)) {
            why = "was stopped";
            break;
        }
        if (r <= 0 || !(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (!buf || len == PROBE_CAP) {
            why = "wrote too much";
            break;
        }
        ssize_t got = read(fd, buf + len, PROBE_CAP - len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break; /* EOF */
        len += (size_t)got;
    }
    close(fd);
    if (why) kill(pid, SIGKILL);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
    json_t *r = NULL;
    if (!why && !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)) why = "died";
    if (!why) {
        r = json_loadb(buf, len, 0, NULL);
        if (!report_ok(r)) {
            json_decref(r);
            r = NULL;
            why = "gave no readable report";
        }
    }
    free(buf);
    if (r) return r;
    snprintf(msg, sizeof msg, "the device probe %s (after at most %lld ms); no GPU device offered",
             why, (long long)timeout_ms);
    return none_because(msg);
}

int rxag_devices_has(const json_t *found, const char *target, int32_t id)
{
    const json_t *v;
    size_t i;
    json_array_foreach(json_object_get(found, "devices"), i, v)
    {
        if (!strcmp(json_string_value(json_object_get(v, "target")), target) &&
            json_integer_value(json_object_get(v, "id")) == id)
            return 1;
    }
    return 0;
}

const char *rxag_devices_target_kind(size_t k)
{
    return k < sizeof KINDS / sizeof KINDS[0] ? KINDS[k].target : NULL;
}
