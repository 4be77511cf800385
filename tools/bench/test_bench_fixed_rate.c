/* cairn-bench produce --rate against a real cairnd: the records go out on
 * the schedule (the run cannot finish before the last record is due),
 * every one is delivered, and the report carries the achieved rate and the
 * latency measured from each record's due time. The unbounded mode still
 * reports no rate. Main thread only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* Runs cairn-bench with the NULL-terminated args, its stdout and stderr in
 * files of the broker's dir; returns the exit code. */
static int run_bench(const struct test_broker *b, const char *const *args, char *out, size_t outlen)
{
    char out_path[700], err_path[700];
    snprintf(out_path, sizeof(out_path), "%s/bench.out", b->dir);
    snprintf(err_path, sizeof(err_path), "%s/bench.err", b->dir);
    const char *argv[40] = {CAIRN_BENCH_PATH};
    int n = 1;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0)
            _exit(127);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    out[0] = '\0';
    FILE *f = fopen(out_path, "r");
    if (f) {
        size_t got = fread(out, 1, outlen - 1, f);
        out[got] = '\0';
        fclose(f);
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    if (code != 0) {
        fprintf(stderr, "cairn-bench exited %d; stdout: %s\n", code, out);
        char line[512];
        FILE *e = fopen(err_path, "r");
        while (e && fgets(line, sizeof(line), e))
            fprintf(stderr, "cairn-bench stderr: %s", line);
        if (e)
            fclose(e);
    }
    return code;
}

static double number_at(json_t *report, const char *object, const char *key)
{
    json_t *parent = object ? json_object_get(report, object) : report;
    json_t *v = parent ? json_object_get(parent, key) : NULL;
    if (!json_is_number(v))
        fail_msg("report has no number %s.%s", object ? object : "", key);
    return json_number_value(v);
}

static void test_fixed_rate_keeps_the_schedule(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    char out[65536];
    /* 3 000 records at 1 500/s: the last one is due 1.9993 s after the
     * first, which a run as fast as possible would beat by far. */
    int code = run_bench(&b,
                         (const char *const[]){"produce", "--bootstrap", broker_bootstrap(&b), "--topic", "fixed-rate",
                                               "--records", "3000", "--rate", "1500", "--partitions", "1",
                                               "--linger-ms", "0", "--flush-timeout-ms", "60000", NULL},
                         out, sizeof(out));
    assert_int_equal(code, 0);
    json_error_t jerr;
    json_t *report = json_loads(out, 0, &jerr);
    assert_non_null(report);
    assert_int_equal((int)number_at(report, NULL, "records"), 3000);
    assert_int_equal((int)number_at(report, NULL, "failed"), 0);
    double seconds = number_at(report, NULL, "seconds");
    assert_true(seconds >= 1.999);
    assert_true(seconds < 60.0);
    assert_int_equal((int)number_at(report, "rate", "target"), 1500);
    /* Not faster than the schedule; slower only if this machine could not
     * send 1 500 small records a second (generous for a loaded host). */
    double achieved = number_at(report, "rate", "achieved");
    assert_true(achieved <= 1500.0 * 1.001);
    assert_true(achieved >= 300.0);
    json_t *lag = json_object_get(json_object_get(report, "rate"), "send_lag_ms");
    assert_non_null(lag);
    double lag_max = json_number_value(json_object_get(lag, "max"));
    double p50 = number_at(report, "latency_ms", "p50"), p99 = number_at(report, "latency_ms", "p99");
    double p999 = number_at(report, "latency_ms", "p999"), max = number_at(report, "latency_ms", "max");
    assert_true(p50 > 0.0);
    assert_true(p50 <= p99 && p99 <= p999 && p999 <= max);
    /* A record's latency runs from its due time, so it includes the time it
     * waited to be sent: the slowest send never exceeds the slowest record. */
    assert_true(lag_max <= max + 0.001);
    json_decref(report);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void test_unbounded_mode_reports_no_rate(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    char out[65536];
    int code = run_bench(&b,
                         (const char *const[]){"produce", "--bootstrap", broker_bootstrap(&b), "--topic", "unbounded",
                                               "--records", "3000", "--partitions", "1", NULL},
                         out, sizeof(out));
    assert_int_equal(code, 0);
    json_error_t jerr;
    json_t *report = json_loads(out, 0, &jerr);
    assert_non_null(report);
    assert_int_equal((int)number_at(report, NULL, "records"), 3000);
    assert_null(json_object_get(report, "rate"));
    json_decref(report);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void test_rate_with_transactions_is_refused(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    char out[4096];
    int code = run_bench(&b,
                         (const char *const[]){"produce", "--bootstrap", broker_bootstrap(&b), "--topic", "t", "--rate",
                                               "100", "--txn-size", "10", NULL},
                         out, sizeof(out));
    assert_int_equal(code, 2);
    assert_string_equal(out, "");
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_rate_keeps_the_schedule),
        cmocka_unit_test(test_unbounded_mode_reports_no_rate),
        cmocka_unit_test(test_rate_with_transactions_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
