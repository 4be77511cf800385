#include "bench_report.h"

#include <stdio.h>
#include <stdlib.h>

void bench_cpu_window_start(struct bench_cpu_window *w, pid_t broker_pid)
{
    char err[256];
    w->broker_pid = broker_pid;
    w->broker_ok = 0;
    if (broker_pid > 0) {
        if (bench_cpu_read_process(broker_pid, &w->broker_before, err, sizeof(err)) == 0)
            w->broker_ok = 1;
        else
            fprintf(stderr, "cairn-bench: broker CPU: %s\n", err);
    }
    bench_cpu_read_self(&w->client_before);
}

void bench_cpu_window_stop(struct bench_cpu_window *w)
{
    char err[256];
    bench_cpu_read_self(&w->client_after);
    if (w->broker_ok && bench_cpu_read_process(w->broker_pid, &w->broker_after, err, sizeof(err)) != 0) {
        fprintf(stderr, "cairn-bench: broker CPU: %s\n", err);
        w->broker_ok = 0;
    }
}

static json_t *cpu_json(const struct bench_cpu_sample *before, const struct bench_cpu_sample *after, uint64_t records)
{
    double user_ms = (double)(after->user_us - before->user_us) / 1000.0;
    double system_ms = (double)(after->system_us - before->system_us) / 1000.0;
    double total_us = (user_ms + system_ms) * 1000.0;
    return json_pack("{s:f, s:f, s:f, s:f}", "user_ms", user_ms, "system_ms", system_ms, "total_ms",
                     user_ms + system_ms, "us_per_record", records ? total_us / (double)records : 0.0);
}

void bench_report_add_totals(json_t *report, uint64_t records, uint64_t bytes, double seconds,
                             const struct bench_cpu_window *w)
{
    double rate = seconds > 0 ? (double)records / seconds : 0.0;
    /* MB is 2^20 bytes, as in Kafka's own perf tools. */
    double mb_rate = seconds > 0 ? (double)bytes / (1024.0 * 1024.0) / seconds : 0.0;
    json_object_set_new(report, "records", json_integer((json_int_t)records));
    json_object_set_new(report, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(report, "seconds", json_real(seconds));
    json_object_set_new(report, "msgs_per_sec", json_real(rate));
    json_object_set_new(report, "mb_per_sec", json_real(mb_rate));
    json_object_set_new(report, "client_cpu", cpu_json(&w->client_before, &w->client_after, records));
    if (w->broker_ok) {
        json_t *broker = cpu_json(&w->broker_before, &w->broker_after, records);
        json_object_set_new(broker, "pid", json_integer(w->broker_pid));
        json_object_set_new(report, "broker_cpu", broker);
    }
}

void bench_report_add_overrides(json_t *report, const struct bench_options *opts)
{
    json_t *list = json_array();
    for (int i = 0; i < opts->override_count; i++)
        json_array_append_new(list, json_string(opts->overrides[i]));
    json_object_set_new(report, "client_overrides", list);
}

void bench_report_print(json_t *report)
{
    char *text = json_dumps(report, JSON_COMPACT | JSON_REAL_PRECISION(6));
    if (text) {
        puts(text);
        free(text);
    }
    fflush(stdout);
    json_decref(report);
}
