#ifndef CAIRN_BENCH_REPORT_H
#define CAIRN_BENCH_REPORT_H

#include <jansson.h>
#include <stdint.h>

#include "bench.h"
#include "bench_cpu.h"

/* Broker and client CPU around a measured interval. Owned by the thread
 * running the benchmark; no sharing. */
struct bench_cpu_window {
    pid_t broker_pid;
    int broker_ok; /* both broker samples were read */
    struct bench_cpu_sample broker_before, broker_after;
    struct bench_cpu_sample client_before, client_after;
};

void bench_cpu_window_start(struct bench_cpu_window *w, pid_t broker_pid);
void bench_cpu_window_stop(struct bench_cpu_window *w);

/* Adds records, bytes, seconds, msgs_per_sec, mb_per_sec, client_cpu and,
 * when measured, broker_cpu to the report object. */
void bench_report_add_totals(json_t *report, uint64_t records, uint64_t bytes, double seconds,
                             const struct bench_cpu_window *w);

/* Records the -X client properties, which take precedence over the
 * options named in the report. */
void bench_report_add_overrides(json_t *report, const struct bench_options *opts);

/* Prints the report as one line of JSON on stdout and releases it. */
void bench_report_print(json_t *report);

#endif
