/*
 * size.c — byte counts as users write them: "4096", "64MiB", "2G" (relaxc's and
 * relaxd's size options share this one syntax).
 */
#include "relax/base.h"

#include <stdio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void rx_format_bytes(double v, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

bool rx_parse_size(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (end == v || errno || n < 0) return false;
    int64_t mul = 1;
    if (!strcmp(end, "") || !strcmp(end, "B")) mul = 1;
    else if (!strcmp(end, "K") || !strcmp(end, "k") || !strcmp(end, "KiB")) mul = INT64_C(1) << 10;
    else if (!strcmp(end, "M") || !strcmp(end, "MiB")) mul = INT64_C(1) << 20;
    else if (!strcmp(end, "G") || !strcmp(end, "GiB")) mul = INT64_C(1) << 30;
    else return false;
    if (n > INT64_MAX / mul) return false;
    *out = (int64_t)n * mul;
    return true;
}
