#include "bench_cpu.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int bench_cpu_parse_proc_stat(const char *text, long ticks_per_second, struct bench_cpu_sample *out, char *err,
                              size_t errlen)
{
    if (ticks_per_second <= 0) {
        snprintf(err, errlen, "invalid clock tick rate %ld", ticks_per_second);
        return -1;
    }
    const char *p = strrchr(text, ')');
    if (!p) {
        snprintf(err, errlen, "no ')' after the command name");
        return -1;
    }
    p++;
    /* After ')' come fields 3 (state) onwards; utime and stime are fields
     * 14 and 15, i.e. the 12th and 13th after the command name. */
    unsigned long long values[13];
    for (int field = 0; field < 13; field++) {
        while (*p == ' ')
            p++;
        if (*p == '\0' || *p == '\n') {
            snprintf(err, errlen, "stat line ends before field %d", field + 3);
            return -1;
        }
        if (field == 0) { /* state is a letter */
            while (*p && *p != ' ')
                p++;
            values[0] = 0;
            continue;
        }
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno != 0 || (*end != ' ' && *end != '\n' && *end != '\0')) {
            snprintf(err, errlen, "field %d is not a number", field + 3);
            return -1;
        }
        values[field] = (unsigned long long)v;
        p = end;
    }
    unsigned long long tick_us = 1000000ull / (unsigned long long)ticks_per_second;
    out->user_us = values[11] * tick_us;
    out->system_us = values[12] * tick_us;
    return 0;
}

int bench_cpu_read_process(pid_t pid, struct bench_cpu_sample *out, char *err, size_t errlen)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[2048];
    size_t n = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[n] = '\0';
    return bench_cpu_parse_proc_stat(line, sysconf(_SC_CLK_TCK), out, err, errlen);
}

void bench_cpu_read_self(struct bench_cpu_sample *out)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    out->user_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec;
    out->system_us = (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
}

long bench_cpu_read_rss_kib(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    long rss = -1;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            rss = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return rss;
}
