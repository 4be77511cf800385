/* What one Fetch or ListOffsets may cost the broker: hand-built requests
 * that used to make it allocate far more than their size (alternating
 * topics), and checks that the broker's peak memory stays bounded. Raw
 * frames, so the test controls the exact partition lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Peak resident memory of a process in KiB (VmHWM), or -1. */
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

/* One partition of a raw Fetch v7. */
struct raw_fetch_part {
    const char *topic;
    int32_t partition;
    int64_t fetch_offset;
};

/* A Fetch v7 frame: one topic entry per element of parts (so A, B, A, B
 * makes four entries), opening a session when epoch is 0. */
static void put_fetch_v7(struct raw_writer *w, int32_t correlation_id, int32_t max_wait_ms, int32_t min_bytes,
                         int32_t session_id, int32_t epoch, const struct raw_fetch_part *parts, int count)
{
    raw_writer_init(w);
    raw_frame_begin(w, 1, 7, correlation_id, "cairn-it");
    raw_put_i32(w, -1); /* replica_id */
    raw_put_i32(w, max_wait_ms);
    raw_put_i32(w, min_bytes);
    raw_put_i32(w, 1 << 20); /* max_bytes */
    raw_put_i8(w, 0);        /* isolation_level */
    raw_put_i32(w, session_id);
    raw_put_i32(w, epoch);
    raw_put_i32(w, count);
    for (int i = 0; i < count; i++) {
        raw_put_string(w, parts[i].topic);
        raw_put_i32(w, 1);
        raw_put_i32(w, parts[i].partition);
        raw_put_i64(w, parts[i].fetch_offset);
        raw_put_i64(w, -1); /* log_start_offset */
        raw_put_i32(w, 65536);
    }
    raw_put_i32(w, 0); /* forgotten topics */
    raw_frame_finish(w);
}

/* Parsed Fetch v7 answer: top-level error and session, and the partitions. */
struct fetch_answer {
    int16_t error_code;
    int32_t session_id;
    int topics;
    int partitions;
    int first_error; /* first partition error code */
};

static void parse_fetch_v7(const uint8_t *frame, size_t len, int32_t correlation_id, struct fetch_answer *out)
{
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    memset(out, 0, sizeof *out);
    assert_int_equal(raw_get_i32(&r), correlation_id);
    raw_get_i32(&r); /* throttle */
    out->error_code = raw_get_i16(&r);
    out->session_id = raw_get_i32(&r);
    out->topics = raw_get_i32(&r);
    for (int t = 0; t < out->topics && !r.overflow; t++) {
        raw_skip_string(&r);
        int32_t parts = raw_get_i32(&r);
        for (int32_t i = 0; i < parts && !r.overflow; i++) {
            raw_get_i32(&r); /* partition */
            int16_t err = raw_get_i16(&r);
            if (out->partitions == 0)
                out->first_error = err;
            raw_skip(&r, 24); /* high watermark, last stable offset, log start offset */
            int32_t aborted = raw_get_i32(&r);
            for (int32_t a = 0; a < aborted; a++)
                raw_skip(&r, 16);
            int32_t records = raw_get_i32(&r);
            if (records > 0)
                raw_skip(&r, (size_t)records);
            out->partitions++;
        }
    }
    assert_false(r.overflow);
}

/* On a new connection; answers up to 256 MiB (the wide measurements). */
static void fetch_exchange(int port, struct raw_writer *w, int32_t correlation_id, struct fetch_answer *out)
{
    raw_frame_finish(w);
    int fd = raw_connect(port, 30000);
    int rc = fd >= 0 && raw_send_all(fd, w->data, w->len) == 0 ? 0 : -1;
    raw_writer_free(w);
    uint8_t *frame = NULL;
    size_t len = 0;
    if (rc == 0)
        rc = raw_recv_frame(fd, 120000, (size_t)256 << 20, &frame, &len);
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        fail_msg("no Fetch answer (rc %d)", rc);
    parse_fetch_v7(frame, len, correlation_id, out);
    free(frame);
}

#define ALTERNATING_ENTRIES 2000
#define DUPLICATE_COPIES 200
#define PARKED_CONNECTIONS 100
#define PARKED_WAIT_MS 25000

/* Topics A, B, A, B ...: a ~60 KB request. Building its response used to
 * size every topic entry for all the partitions left (n^2/2 partition
 * structs, about 260 MB here); now the broker's peak grows by little. */
static void test_alternating_topics_cost_linear_memory(void **state)
{
    struct test_broker *b = *state;
    /* FETCH_ALTERNATING_ENTRIES: a wider request, for docs/benchmarks.md. */
    const char *env = getenv("FETCH_ALTERNATING_ENTRIES");
    int entries = env && atoi(env) > ALTERNATING_ENTRIES ? atoi(env) : ALTERNATING_ENTRIES;
    struct raw_fetch_part *parts = calloc((size_t)entries, sizeof *parts);
    for (int i = 0; i < entries; i++) {
        parts[i].topic = i % 2 ? "alt-b" : "alt-a";
        parts[i].partition = i / 2;
    }
    long before = vm_hwm_kib(broker_pid(b));
    assert_true(before > 0);
    struct raw_writer w;
    put_fetch_v7(&w, 21, 0, 0, 0, 0, parts, entries);
    size_t request_bytes = w.len;
    struct fetch_answer ans;
    fetch_exchange(broker_port(b), &w, 21, &ans);
    long after = vm_hwm_kib(broker_pid(b));
    fprintf(stderr, "[fetch-cost] %zu-byte alternating Fetch (%d entries): broker VmHWM %ld -> %ld KiB (+%ld)\n",
            request_bytes, entries, before, after, after - before);
    assert_int_equal(ans.error_code, 0);
    assert_true(ans.session_id != 0);
    assert_int_equal(ans.topics, entries);
    assert_int_equal(ans.partitions, entries);
    assert_int_equal(ans.first_error, 3); /* UNKNOWN_TOPIC_OR_PARTITION */
    /* Linear cost: a few hundred bytes of state per partition. */
    if (after - before > 48 * 1024 / ALTERNATING_ENTRIES * entries)
        fail_msg("one %zu-byte Fetch raised the broker's peak memory by %ld KiB", request_bytes, after - before);
    free(parts);
    broker_mark_passed(b);
}

/* Kafka keys a Fetch's partitions by topic and partition (a later copy
 * wins, in the first one's place): one partition named many times is read
 * once and answered once, and a parked fetch watches its log once. */
static void test_duplicate_fetch_partitions_collapse(void **state)
{
    struct test_broker *b = *state;
    const char *topic = "dup-fetch";
    rk_create_topic(broker_bootstrap(b), topic, 2, NULL);
    struct raw_fetch_part parts[DUPLICATE_COPIES + 1];
    for (int i = 0; i < DUPLICATE_COPIES; i++)
        parts[i] = (struct raw_fetch_part){topic, 0, 0};
    parts[DUPLICATE_COPIES] = (struct raw_fetch_part){topic, 1, 0};
    /* Sessionless and session-opening: both answer each partition once. */
    for (int32_t epoch = -1; epoch <= 0; epoch++) {
        struct raw_writer w;
        put_fetch_v7(&w, 31, 0, 0, 0, epoch, parts, DUPLICATE_COPIES + 1);
        struct fetch_answer ans;
        fetch_exchange(broker_port(b), &w, 31, &ans);
        assert_int_equal(ans.error_code, 0);
        assert_int_equal(ans.partitions, 2);
        assert_int_equal(ans.first_error, 0);
    }
    /* Parked on both partitions; one append answers it once, at once. */
    int fd = raw_connect(broker_port(b), 20000);
    assert_true(fd >= 0);
    struct raw_writer w;
    put_fetch_v7(&w, 32, 15000, 1, 0, -1, parts, DUPLICATE_COPIES + 1);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    usleep(300 * 1000);
    const char *conf[] = {"linger.ms", "0", NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(b), conf);
    long long start = harness_now_ms();
    assert_int_equal(rk_produce_blocking(rk, topic, 0, NULL, 0, "x", 1, 0, NULL, NULL), 0);
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv_frame(fd, 20000, 1 << 20, &frame, &len), 0);
    long long took = harness_now_ms() - start;
    close(fd);
    struct fetch_answer ans;
    parse_fetch_v7(frame, len, 32, &ans);
    free(frame);
    rk_producer_destroy(rk);
    fprintf(stderr, "[fetch-cost] parked fetch naming partition 0 %d times answered in %lld ms\n", DUPLICATE_COPIES,
            took);
    assert_int_equal(ans.partitions, 2);
    assert_true(took < 7500);
    broker_mark_passed(b);
}

/* ListOffsets v1+ (as Kafka): every copy of a partition named twice gets
 * INVALID_REQUEST and is not looked up; the others are answered. */
static void test_duplicate_list_offsets_partitions_refused(void **state)
{
    struct test_broker *b = *state;
    const char *topic = "dup-offsets";
    rk_create_topic(broker_bootstrap(b), topic, 2, NULL);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 2, 5, 41, "cairn-it");
    raw_put_i32(&w, -1); /* replica_id */
    raw_put_i8(&w, 0);   /* isolation_level */
    raw_put_i32(&w, 2);  /* the topic twice: partition 0 in both, 1 once */
    for (int t = 0; t < 2; t++) {
        raw_put_string(&w, topic);
        raw_put_i32(&w, t == 0 ? 2 : 1);
        for (int p = 0; p < (t == 0 ? 2 : 1); p++) {
            raw_put_i32(&w, p);  /* partition */
            raw_put_i32(&w, -1); /* current_leader_epoch */
            raw_put_i64(&w, 0);  /* timestamp: by time */
        }
    }
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(broker_port(b), &w, 41, false, 10000, &frame, &r), 0);
    raw_get_i32(&r); /* throttle */
    int32_t topics = raw_get_i32(&r);
    assert_int_equal(topics, 2);
    int16_t errors[3];
    int32_t indexes[3];
    int n = 0;
    for (int t = 0; t < topics; t++) {
        raw_skip_string(&r);
        int32_t parts = raw_get_i32(&r);
        for (int32_t i = 0; i < parts && n < 3; i++, n++) {
            indexes[n] = raw_get_i32(&r);
            errors[n] = raw_get_i16(&r);
            raw_skip(&r, 16); /* timestamp, offset */
            raw_get_i32(&r);  /* leader epoch */
        }
    }
    assert_false(r.overflow);
    free(frame);
    assert_int_equal(n, 3);
    assert_int_equal(indexes[0], 0);
    assert_int_equal(errors[0], 42); /* INVALID_REQUEST */
    assert_int_equal(indexes[1], 1);
    assert_int_equal(errors[1], 0);
    assert_int_equal(indexes[2], 0);
    assert_int_equal(errors[2], 42);
    broker_mark_passed(b);
}

/* A hundred clients each park a Fetch that may wait 25 s, then go away.
 * Each parked fetch is cancelled when its connection closes, so the
 * purgatory (and the plans, arenas and frames it holds) is back to empty
 * within moments, not at the fetches' deadline. */
static void test_parked_fetches_of_closed_connections_are_freed(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    int metrics_port = harness_free_port();
    assert_true(metrics_port > 0);
    char metrics_kv[64];
    snprintf(metrics_kv, sizeof metrics_kv, "metrics.http.listener=127.0.0.1:%d", metrics_port);
    const char *overrides[] = {metrics_kv, NULL};
    broker_start(&b, overrides);
    const char *topic = "parked";
    rk_create_topic(broker_bootstrap(&b), topic, 1, NULL);
    assert_int_equal(raw_wait_fetch_purgatory(metrics_port, 0, 5000) >= 0, 1);

    struct raw_fetch_part part = {topic, 0, 0};
    int fds[PARKED_CONNECTIONS];
    for (int i = 0; i < PARKED_CONNECTIONS; i++) {
        fds[i] = raw_connect(broker_port(&b), 10000);
        assert_true(fds[i] >= 0);
        struct raw_writer w;
        put_fetch_v7(&w, 50 + i, PARKED_WAIT_MS, 1, 0, -1, &part, 1);
        assert_int_equal(raw_send_all(fds[i], w.data, w.len), 0);
        raw_writer_free(&w);
    }
    long long parked_after = raw_wait_fetch_purgatory(metrics_port, PARKED_CONNECTIONS, 10000);
    if (parked_after < 0)
        fail_msg("expected %d parked fetches, the gauge says %lld", PARKED_CONNECTIONS,
                 raw_fetch_purgatory_waiting(metrics_port));
    long hwm_parked = vm_hwm_kib(broker_pid(&b));
    for (int i = 0; i < PARKED_CONNECTIONS; i++)
        close(fds[i]);
    long long freed_after = raw_wait_fetch_purgatory(metrics_port, 0, PARKED_WAIT_MS / 2);
    fprintf(stderr,
            "[fetch-cost] %d parked fetches (max_wait %d ms): parked in %lld ms, all gone %lld ms after their "
            "clients closed; VmHWM %ld KiB\n",
            PARKED_CONNECTIONS, PARKED_WAIT_MS, parked_after, freed_after, hwm_parked);
    if (freed_after < 0)
        fail_msg("%lld fetches still parked %d ms after their connections closed",
                 raw_fetch_purgatory_waiting(metrics_port), PARKED_WAIT_MS / 2);
    /* The broker still serves: a fresh fetch parks and answers at its deadline. */
    struct raw_writer w;
    put_fetch_v7(&w, 49, 200, 1, 0, -1, &part, 1);
    struct fetch_answer ans;
    fetch_exchange(broker_port(&b), &w, 49, &ans);
    assert_int_equal(ans.partitions, 1);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

/* Defaults; FETCH_FLOOD_SESSIONS and FETCH_FLOOD_PARTITIONS override
 * them for the measurement in docs/benchmarks.md. */
#define FLOOD_SESSIONS 400
#define FLOOD_PARTITIONS 4000
/* 64 MiB of sessions (the default budget) plus what serving one request
 * and the allocator's slack add; the flood cached whole took 530 MiB. */
#define FLOOD_MAX_GROWTH_KIB (128 * 1024)
/* Under ASan freed blocks sit in quarantine (256 MiB) and every block has
 * redzones, so RSS says little: the bound is checked without it only. */
#if defined(__SANITIZE_ADDRESS__)
#define FLOOD_CHECK_RSS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FLOOD_CHECK_RSS 0
#endif
#endif
#ifndef FLOOD_CHECK_RSS
#define FLOOD_CHECK_RSS 1
#endif

/* An incremental Fetch of nothing new on a session; its answer. */
static void poll_session(int port, int32_t correlation_id, int32_t session_id, int32_t epoch, struct fetch_answer *out)
{
    struct raw_writer w;
    put_fetch_v7(&w, correlation_id, 0, 0, session_id, epoch, NULL, 0);
    fetch_exchange(port, &w, correlation_id, out);
}

/* Issue 20's hostile client: hundreds of new sessions, each naming 4,000
 * partitions of two unknown topics (A, B, A, B), never used again. Every
 * session was cached (1000 slots, ~350 bytes a partition: 530 MiB here,
 * 2.8 GiB with 8,000-partition requests); now the sessions share their
 * topics and stay within max.incremental.fetch.session.cache.bytes, later
 * newcomers are answered in full with session id 0, and a consumer's
 * session opened before the flood keeps answering incrementally. */
static void test_wide_sessions_stay_within_budget(void **state)
{
    struct test_broker *b = *state;
    int port = broker_port(b);
    const char *topic = "well-behaved";
    rk_create_topic(broker_bootstrap(b), topic, 1, NULL);
    struct raw_fetch_part good = {topic, 0, 0};
    struct raw_writer w;
    struct fetch_answer ans;
    put_fetch_v7(&w, 60, 0, 0, 0, 0, &good, 1);
    fetch_exchange(port, &w, 60, &ans);
    int32_t good_id = ans.session_id;
    assert_true(good_id != 0);
    int32_t epoch = 1;
    poll_session(port, 61, good_id, epoch++, &ans);
    assert_int_equal(ans.error_code, 0);

    const char *env = getenv("FETCH_FLOOD_SESSIONS");
    int sessions = env && atoi(env) > 0 ? atoi(env) : FLOOD_SESSIONS;
    env = getenv("FETCH_FLOOD_PARTITIONS");
    int width = env && atoi(env) > 0 ? atoi(env) : FLOOD_PARTITIONS;
    struct raw_fetch_part *parts = calloc((size_t)width, sizeof *parts);
    assert_non_null(parts);
    for (int i = 0; i < width; i++) {
        parts[i].topic = i % 2 ? "flood-b" : "flood-a";
        parts[i].partition = i / 2;
    }
    long before = vm_hwm_kib(broker_pid(b));
    long long start = harness_now_ms();
    int uncached = 0;
    for (int i = 0; i < sessions; i++) {
        put_fetch_v7(&w, 100 + i, 0, 0, 0, 0, parts, width);
        fetch_exchange(port, &w, 100 + i, &ans);
        assert_int_equal(ans.error_code, 0);
        assert_int_equal(ans.partitions, width);
        uncached += ans.session_id == 0;
        if (i % 50 == 49) {
            poll_session(port, 62, good_id, epoch++, &ans);
            assert_int_equal(ans.error_code, 0);
            assert_int_equal(ans.session_id, good_id);
        }
    }
    long after = vm_hwm_kib(broker_pid(b));
    fprintf(stderr,
            "[fetch-cost] %d sessions x %d partitions in %lld ms: %d not cached; broker VmHWM %ld -> %ld KiB "
            "(+%ld)\n",
            sessions, width, harness_now_ms() - start, uncached, before, after, after - before);
    free(parts);
    assert_true(uncached > 0);
    if (FLOOD_CHECK_RSS && after - before > FLOOD_MAX_GROWTH_KIB)
        fail_msg("%d wide sessions raised the broker's peak memory by %ld KiB", sessions, after - before);
    broker_mark_passed(b);
}

static int setup(void **state)
{
    static struct test_broker b;
    memset(&b, 0, sizeof b);
    broker_start(&b, NULL);
    *state = &b;
    return 0;
}

static int teardown(void **state)
{
    broker_cleanup(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alternating_topics_cost_linear_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_fetch_partitions_collapse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_list_offsets_partitions_refused, setup, teardown),
        cmocka_unit_test(test_parked_fetches_of_closed_connections_are_freed),
        cmocka_unit_test_setup_teardown(test_wide_sessions_stay_within_budget, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
