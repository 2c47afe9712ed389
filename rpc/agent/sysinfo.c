/*
 * sysinfo.c — the machine facts relax-agent registers with: the CPU model (the first
 * "model name" line of /proc/cpuinfo, or "Hardware"/"Processor" on some ARM kernels,
 * else uname's machine), online cores and physical memory (sysconf), the machine name
 * (uname -m), and the SIMD features worth scheduling on (avx2, avx512f, neon/asimd, from
 * the "flags"/"Features" line). The SIMD names become automatic labels, so a job with
 * labels ["avx512f"] only goes to agents that have it.
 */
#include "agent.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Copies the value after ':' of a cpuinfo line, trimmed. */
static void value_of(const char *line, char *out, size_t n)
{
    const char *p = strchr(line, ':');
    if (!p) return;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    size_t len = strcspn(p, "\n");
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
    if (len >= n) len = n - 1;
    memcpy(out, p, len);
    out[len] = 0;
}

/* True when the space-separated list has word w. */
static int has_word(const char *list, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = list; (p = strstr(p, w)); p += n)
        if ((p == list || p[-1] == ' ' || p[-1] == ':' || p[-1] == '\t') &&
            (p[n] == ' ' || p[n] == '\n' || p[n] == 0))
            return 1;
    return 0;
}

void rxag_sysinfo_get(rxag_sysinfo *info)
{
    memset(info, 0, sizeof *info);
    struct utsname u;
    if (uname(&u) == 0) snprintf(info->machine, sizeof info->machine, "%s", u.machine);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    info->cores = cores > 0 ? (int)cores : 1;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    info->memory_bytes = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    int flags_seen = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!info->cpu[0] && (!strncmp(line, "model name", 10) || !strncmp(line, "Hardware", 8) ||
                              !strncmp(line, "Processor", 9)))
            value_of(line, info->cpu, sizeof info->cpu);
        if (!flags_seen && (!strncmp(line, "flags", 5) || !strncmp(line, "Features", 8))) {
            static const char *const simd[][2] = {
                {"avx2", "avx2"}, {"avx512f", "avx512f"}, {"asimd", "neon"}, {"neon", "neon"}};
            flags_seen = 1;
            for (size_t i = 0; i < sizeof simd / sizeof simd[0] && info->nsimd < 4; i++) {
                int dup = 0;
                for (int k = 0; k < info->nsimd; k++) dup |= !strcmp(info->simd[k], simd[i][1]);
                if (!dup && has_word(line, simd[i][0]))
                    snprintf(info->simd[info->nsimd++], sizeof info->simd[0], "%s", simd[i][1]);
            }
        }
    }
    if (f) fclose(f);
    if (!info->cpu[0])
        snprintf(info->cpu, sizeof info->cpu, "%s", info->machine[0] ? info->machine : "unknown");
}
