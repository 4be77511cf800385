/* queued.max.request.bytes against a real cairnd: a flood of big Produce
 * requests on many connections at once cannot make the broker hold more
 * request bytes than the limit (plus at most one frame per network thread
 * begun as the limit was crossed), every flooding request is still
 * answered, and a well-behaved client keeps getting answers meanwhile.
 *
 * The bound is read from the broker's own gauge,
 * cairn_queued_request_bytes_max; without the limit the same flood drives
 * it to about CONNECTIONS x FRAME.
 *
 * Second test: peers that announce big requests and send only their first
 * bytes (trickling, or stalled) hold none of that memory, so a good client
 * is not muted behind them, and such a request, once its bytes do come, is
 * read and answered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#define CONNECTIONS 32
#define REQUESTS_PER_CONNECTION 2
#define VALUE_BYTES (4 * 1024 * 1024) /* above message.max.bytes: each is read in full, then refused */
#define LIMIT_BYTES (8 * 1024 * 1024)
#define NETWORK_THREADS 3
#define IO_MS 60000

static long vm_hwm_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

struct flooder {
    pthread_t thread;
    int port;
    const struct raw_writer *frame; /* shared, read only */
    int answered;
};

/* Sends its big requests back to back, then reads every answer. */
static void *flood_main(void *arg)
{
    struct flooder *f = arg;
    int fd = raw_connect(f->port, IO_MS);
    if (fd < 0)
        return NULL;
    for (int i = 0; i < REQUESTS_PER_CONNECTION; i++)
        if (raw_send_all(fd, f->frame->data, f->frame->len) != 0)
            goto out;
    for (int i = 0; i < REQUESTS_PER_CONNECTION; i++) {
        uint8_t *answer = NULL;
        size_t len = 0;
        if (raw_recv_frame(fd, IO_MS, 1 << 20, &answer, &len) != 0)
            break;
        free(answer);
        f->answered++;
    }
out:
    close(fd);
    return NULL;
}

static long long metric(int metrics_port, const char *series)
{
    char *page = raw_http_get(metrics_port, "/metrics");
    long long v = page ? raw_metric_value(page, series) : -1;
    free(page);
    return v;
}

static void test_flood_stays_within_queued_max_request_bytes(void **state)
{
    (void)state;
    struct test_broker b = {0};
    int metrics_port = harness_free_port();
    assert_true(metrics_port > 0);
    char metrics_kv[64], limit_kv[64], threads_kv[64];
    snprintf(metrics_kv, sizeof metrics_kv, "metrics.http.listener=127.0.0.1:%d", metrics_port);
    snprintf(limit_kv, sizeof limit_kv, "queued.max.request.bytes=%d", LIMIT_BYTES);
    snprintf(threads_kv, sizeof threads_kv, "num.network.threads=%d", NETWORK_THREADS);
    const char *overrides[] = {metrics_kv, limit_kv, threads_kv, NULL};
    broker_start(&b, overrides);
    rk_create_topic(broker_bootstrap(&b), "flood", 1, NULL);
    long hwm_before = vm_hwm_kib(broker_pid(&b));

    /* One Produce v3 frame with a single 4 MiB record. */
    char *value = malloc(VALUE_BYTES + 1);
    assert_non_null(value);
    memset(value, 'x', VALUE_BYTES);
    value[VALUE_BYTES] = '\0';
    struct raw_record rec = {NULL, value};
    struct raw_writer batch, frame;
    raw_writer_init(&batch);
    raw_build_record_batch(&batch, 0, &rec, 1);
    free(value);
    raw_writer_init(&frame);
    raw_frame_begin(&frame, 0, 3, 7, "flooder");
    raw_put_produce_body(&frame, NULL, 1, "flood", 0, batch.data, batch.len);
    raw_frame_finish(&frame);
    raw_writer_free(&batch);

    struct flooder flooders[CONNECTIONS];
    memset(flooders, 0, sizeof flooders);
    for (int i = 0; i < CONNECTIONS; i++) {
        flooders[i].port = broker_port(&b);
        flooders[i].frame = &frame;
        assert_int_equal(pthread_create(&flooders[i].thread, NULL, flood_main, &flooders[i]), 0);
    }
    /* A well-behaved client on its own connection while the flood runs. */
    int good = raw_connect(broker_port(&b), IO_MS);
    assert_true(good >= 0);
    long long worst_ms = 0;
    for (int i = 0; i < 20; i++) {
        long long t0 = harness_now_ms();
        struct raw_api_versions v;
        assert_int_equal(raw_api_versions(good, 0, 100 + i, &v), 0);
        long long took = harness_now_ms() - t0;
        if (took > worst_ms)
            worst_ms = took;
        usleep(50 * 1000);
    }
    close(good);
    for (int i = 0; i < CONNECTIONS; i++)
        pthread_join(flooders[i].thread, NULL);
    raw_writer_free(&frame);

    int answered = 0;
    for (int i = 0; i < CONNECTIONS; i++)
        answered += flooders[i].answered;
    long long peak = metric(metrics_port, "cairn_queued_request_bytes_max");
    long hwm_after = vm_hwm_kib(broker_pid(&b));
    long long bound = LIMIT_BYTES + (long long)NETWORK_THREADS * (VALUE_BYTES + 4096);
    fprintf(stderr,
            "[request-memory] %d connections x %d requests of %d bytes: peak queued request bytes %lld (limit %d, "
            "bound %lld), VmHWM %ld -> %ld KiB, %d/%d answered, good client worst round trip %lld ms\n",
            CONNECTIONS, REQUESTS_PER_CONNECTION, VALUE_BYTES, peak, LIMIT_BYTES, bound, hwm_before, hwm_after,
            answered, CONNECTIONS * REQUESTS_PER_CONNECTION, worst_ms);
    if (answered != CONNECTIONS * REQUESTS_PER_CONNECTION) {
        broker_print_log_tail(&b, 30);
        fail_msg("only %d of %d flooding requests were answered", answered, CONNECTIONS * REQUESTS_PER_CONNECTION);
    }
    /* The gauge must have seen the flood at all, and stayed under the bound. */
    assert_true(peak >= VALUE_BYTES);
    if (peak > bound)
        fail_msg("the broker held %lld request bytes at once; queued.max.request.bytes=%d allows %lld", peak,
                 LIMIT_BYTES, bound);
    /* Everything read is answered and freed. */
    long long end = harness_now_ms() + 10000;
    while (metric(metrics_port, "cairn_queued_request_bytes") != 0 && harness_now_ms() < end)
        usleep(20 * 1000);
    assert_int_equal(metric(metrics_port, "cairn_queued_request_bytes"), 0);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static struct raw_writer big_produce_frame(const char *topic, const char *client_id)
{
    char *value = malloc(VALUE_BYTES + 1);
    assert_non_null(value);
    memset(value, 'x', VALUE_BYTES);
    value[VALUE_BYTES] = '\0';
    struct raw_record rec = {NULL, value};
    struct raw_writer batch, frame;
    raw_writer_init(&batch);
    raw_build_record_batch(&batch, 0, &rec, 1);
    free(value);
    raw_writer_init(&frame);
    raw_frame_begin(&frame, 0, 3, 7, client_id);
    raw_put_produce_body(&frame, NULL, 1, topic, 0, batch.data, batch.len);
    raw_frame_finish(&frame);
    raw_writer_free(&batch);
    return frame;
}

#define STALLED 4         /* 4 x 4 MiB announced: twice LIMIT_BYTES */
#define STALLED_SENT 1000 /* bytes of each frame sent before it stalls */

static void test_stalled_big_requests_hold_no_request_memory(void **state)
{
    (void)state;
    struct test_broker b = {0};
    int metrics_port = harness_free_port();
    assert_true(metrics_port > 0);
    char metrics_kv[64], limit_kv[64];
    snprintf(metrics_kv, sizeof metrics_kv, "metrics.http.listener=127.0.0.1:%d", metrics_port);
    snprintf(limit_kv, sizeof limit_kv, "queued.max.request.bytes=%d", LIMIT_BYTES);
    /* Long enough that nothing here is closed for being slow. */
    const char *overrides[] = {metrics_kv, limit_kv, "connections.max.idle.ms=120000", NULL};
    broker_start(&b, overrides);
    struct raw_writer frame = big_produce_frame("stalled", "staller");
    assert_true(frame.len > (size_t)LIMIT_BYTES / 2);

    int fds[STALLED];
    for (int i = 0; i < STALLED; i++) {
        fds[i] = raw_connect(broker_port(&b), IO_MS);
        assert_true(fds[i] >= 0);
        assert_int_equal(raw_send_all(fds[i], frame.data, STALLED_SENT), 0);
    }
    usleep(300 * 1000);
    long long held = metric(metrics_port, "cairn_queued_request_bytes");

    /* A good client: every round trip answered, none waits for the stalled
     * peers (before, they held 16 MiB of the 8 MiB and it waited for
     * connections.max.idle.ms). */
    int good = raw_connect(broker_port(&b), 5000);
    assert_true(good >= 0);
    long long worst_ms = 0;
    int answered = 0;
    for (int i = 0; i < 10; i++) {
        long long t0 = harness_now_ms();
        struct raw_api_versions v;
        if (raw_api_versions(good, 0, 100 + i, &v) != 0)
            break;
        answered++;
        long long took = harness_now_ms() - t0;
        if (took > worst_ms)
            worst_ms = took;
    }
    close(good);

    /* The stalled requests, once their bytes come, are read and answered. */
    int finished = 0;
    for (int i = 0; i < STALLED; i++) {
        if (raw_send_all(fds[i], frame.data + STALLED_SENT, frame.len - STALLED_SENT) != 0)
            continue;
        uint8_t *answer = NULL;
        size_t len = 0;
        if (raw_recv_frame(fds[i], IO_MS, 1 << 20, &answer, &len) == 0)
            finished++;
        free(answer);
    }
    for (int i = 0; i < STALLED; i++)
        close(fds[i]);
    fprintf(stderr,
            "[request-memory] %d peers each announcing %zu bytes and sending %d: request bytes held %lld "
            "(limit %d); good client %d/10 answered, worst %lld ms; %d/%d stalled requests answered once sent\n",
            STALLED, frame.len, STALLED_SENT, held, LIMIT_BYTES, answered, worst_ms, finished, STALLED);
    raw_writer_free(&frame);
    if (answered != 10) {
        broker_print_log_tail(&b, 30);
        fail_msg("the good client got %d of 10 answers while peers stalled in big requests", answered);
    }
    assert_true(held < (long long)LIMIT_BYTES / 2);
    assert_int_equal(finished, STALLED);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flood_stays_within_queued_max_request_bytes),
        cmocka_unit_test(test_stalled_big_requests_hold_no_request_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
