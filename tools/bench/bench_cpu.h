#ifndef CAIRN_BENCH_CPU_H
#define CAIRN_BENCH_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* CPU time of a process in microseconds, split as the kernel reports it. */
struct bench_cpu_sample {
    uint64_t user_us;
    uint64_t system_us;
};

/* Parses the text of /proc/<pid>/stat. The command name (field 2) may hold
 * spaces and parentheses, so fields are counted from the last ')'.
 * Returns 0 on success, -1 on malformed input (err filled). */
int bench_cpu_parse_proc_stat(const char *text, long ticks_per_second, struct bench_cpu_sample *out, char *err,
                              size_t errlen);

/* Reads /proc/<pid>/stat of another process. Returns 0 or -1 (err filled). */
int bench_cpu_read_process(pid_t pid, struct bench_cpu_sample *out, char *err, size_t errlen);

/* CPU time of this process, all threads (librdkafka's included). */
void bench_cpu_read_self(struct bench_cpu_sample *out);

/* Resident set size of a process in KiB from /proc/<pid>/status, or -1. */
long bench_cpu_read_rss_kib(pid_t pid);

#endif
