/*
 * kernels.c — loading the KERNELS_CPU shared object of an artifact from memory.
 *
 * dlopen needs a path, so the object's bytes go into an anonymous memfd
 * (memfd_create, sealed against writes) which is opened as /proc/self/fd/N. The fd
 * stays open until the module is unloaded: glibc recognises already-loaded objects by
 * path string, so a reused fd number must never name a different object while an older
 * one is still loaded. When memfd or /proc is unavailable the bytes go to a private
 * file created with O_EXCL (mode 0700) in $TMPDIR (or /tmp), which is unlinked right
 * after dlopen. Kernels are resolved by name with dlsym once, at load.
 */
#define _GNU_SOURCE 1
#include "rt_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static void *open_memfd(const rx_rxa_section *s, int *fd_out, char *why, size_t whylen)
{
    int fd = memfd_create("relax-kernels", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        snprintf(why, whylen, "memfd_create: %s", strerror(errno));
        return NULL;
    }
    if (write_all(fd, s->data, (size_t)s->size) != 0) {
        snprintf(why, whylen, "memfd write: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, whylen, "dlopen: %s", e ? e : "failed");
        close(fd);
        return NULL;
    }
    *fd_out = fd;
    return h;
}

static void *open_tmpfile(const rx_rxa_section *s, char *why, size_t whylen)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    if (!dir || !*dir) dir = "/tmp";
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned long r = (unsigned long)getpid() * 2654435761u + (unsigned long)attempt * 40503u +
                          (unsigned long)(uintptr_t)s->data;
        snprintf(path, sizeof path, "%s/relax-kernels-%lx.so", dir, r);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) break;
        int bad = write_all(fd, s->data, (size_t)s->size);
        close(fd);
        void *h = bad ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL);
        const char *e = h ? NULL : dlerror();
        unlink(path);
        if (!h) snprintf(why, whylen, "dlopen: %s", e ? e : "write failed");
        return h;
    }
    snprintf(why, whylen, "cannot create a temporary file in %s: %s", dir, strerror(errno));
    return NULL;
}

int rx_rt_kernels_load(rx_rt_module *m, rx_rt_err *err)
{
    const rx_rxa *a = m->a;
    m->kernel_fd = -1;
    if (a->nkernels == 0) return 0;
    if (rx_rxa_section_get(a, RX_RXA_KERNELS_OPENCL) || rx_rxa_section_get(a, RX_RXA_KERNELS_PTX) ||
        rx_rxa_section_get(a, RX_RXA_KERNELS_SPIRV))
        return 0; /* GPU kernels: vm_device.c */
    m->kernel_fn = calloc(a->nkernels, sizeof *m->kernel_fn);
    if (!m->kernel_fn) return rx_rt_fail(err, "out of memory");
    const rx_rxa_section *s = rx_rxa_section_get(a, RX_RXA_KERNELS_CPU);
    for (uint32_t i = 0; i < a->nkernels; i++)
        if (a->kernels[i].section != RX_RXA_KERNELS_CPU)
            return rx_rt_fail(err, "kernel %s is for %s, this runtime runs CPU kernels only",
                              a->kernels[i].name, rx_rxa_kind_name(a->kernels[i].section));
    if (!s) return rx_rt_fail(err, "no KERNELS_CPU section");
    char why1[256] = "", why2[256] = "";
    void *h = open_memfd(s, &m->kernel_fd, why1, sizeof why1);
    if (!h) h = open_tmpfile(s, why2, sizeof why2);
    if (!h) return rx_rt_fail(err, "cannot load the CPU kernel object: %s; %s", why1, why2);
    m->kernel_so = h;
    for (uint32_t i = 0; i < a->nkernels; i++) {
        dlerror();
        void *sym = dlsym(h, a->kernels[i].name);
        if (!sym) return rx_rt_fail(err, "kernel %s not found in the CPU kernel object", a->kernels[i].name);
        m->kernel_fn[i] = sym;
    }
    return 0;
}

void rx_rt_kernels_unload(rx_rt_module *m)
{
    if (m->kernel_so) dlclose(m->kernel_so);
    if (m->kernel_fd >= 0) close(m->kernel_fd);
    free(m->kernel_fn);
    m->kernel_so = NULL;
    m->kernel_fd = -1;
    m->kernel_fn = NULL;
}
