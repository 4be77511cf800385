/* Incremental fetch sessions (KIP-227): creation, epochs, updates, forgetting, eviction, the byte budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "handlers/fetch_session.h"
#include "metrics/metrics.h"
#include "protocol/generated/errors.h"

/* The topics the tests' requests name (a request's own set). */
static struct fetch_topic_set test_topics;

static struct fetch_topic *topic(const char *name)
{
    static const struct kafka_uuid zero;
    struct fetch_topic *t = fetch_topic_set_intern(&test_topics, name, strlen(name), &zero);
    assert_non_null(t);
    return t;
}

static struct fetch_session_cache *cache(int32_t slots, int64_t bytes, int64_t stale_ms)
{
    struct fetch_session_limits l = {slots, bytes, stale_ms};
    struct fetch_session_cache *c = fetch_session_cache_create(&l);
    assert_non_null(c);
    return c;
}

static struct fetch_session_cache *cache_of_slots(int32_t slots)
{
    return cache(slots, INT64_MAX / 2, FETCH_SESSION_STALE_MS);
}

static struct fetch_partition_state part(const char *name, int32_t partition, int64_t offset)
{
    struct fetch_partition_state p;
    memset(&p, 0, sizeof p);
    p.topic = topic(name);
    p.partition = partition;
    p.fetch_offset = offset;
    p.max_bytes = 1024;
    p.last_high_watermark = -1;
    p.last_log_start_offset = -1;
    return p;
}

static const struct fetch_partition_state *find(const struct fetch_plan *plan, const char *topic, int32_t partition)
{
    for (int32_t i = 0; i < plan->partition_count; i++)
        if (!strcmp(plan->partitions[i].topic->name, topic) && plan->partitions[i].partition == partition)
            return &plan->partitions[i];
    return NULL;
}

static void test_sessionless_fetch_creates_nothing(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache_of_slots(10);
    struct fetch_partition_state parts[2] = {part("a", 0, 5), part("a", 1, 7)};
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, 0, -1, false, parts, 2, NULL, 0, &plan), 0);
    assert_int_equal(plan.error_code, KAFKA_ERR_NONE);
    assert_int_equal(plan.response_session_id, 0);
    assert_false(plan.incremental);
    assert_int_equal(plan.partition_count, 2);
    assert_int_equal(fetch_session_count(c), 0);
    fetch_plan_free(&plan);
    fetch_session_cache_destroy(c);
}

static void test_incremental_updates_and_forgets(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache_of_slots(10);
    struct fetch_partition_state full[3] = {part("a", 0, 5), part("a", 1, 7), part("b", 0, 9)};
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, 0, 0, false, full, 3, NULL, 0, &plan), 0);
    int32_t id = plan.response_session_id;
    assert_true(id > 0);
    assert_false(plan.incremental);
    fetch_plan_free(&plan);

    /* Epoch 1: move a-0 forward, forget b-0, add c-2. */
    struct fetch_partition_state upd[2] = {part("a", 0, 50), part("c", 2, 1)};
    struct fetch_partition_state forget[1] = {part("b", 0, 0)};
    assert_int_equal(fetch_session_apply(c, id, 1, false, upd, 2, forget, 1, &plan), 0);
    assert_int_equal(plan.error_code, KAFKA_ERR_NONE);
    assert_true(plan.incremental);
    assert_int_equal(plan.response_session_id, id);
    assert_int_equal(plan.partition_count, 3);
    assert_int_equal(find(&plan, "a", 0)->fetch_offset, 50);
    assert_int_equal(find(&plan, "a", 1)->fetch_offset, 7);
    assert_non_null(find(&plan, "c", 2));
    assert_null(find(&plan, "b", 0));
    fetch_plan_free(&plan);

    /* The same epoch again is stale. */
    assert_int_equal(fetch_session_apply(c, id, 1, false, NULL, 0, NULL, 0, &plan), 0);
    assert_int_equal(plan.error_code, KAFKA_ERR_INVALID_FETCH_SESSION_EPOCH);
    fetch_plan_free(&plan);
    /* An unknown session id. */
    assert_int_equal(fetch_session_apply(c, id + 1, 1, false, NULL, 0, NULL, 0, &plan), 0);
    assert_int_equal(plan.error_code, KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND);
    fetch_plan_free(&plan);
    /* Closing with epoch -1 removes it. */
    assert_int_equal(fetch_session_apply(c, id, -1, false, full, 1, NULL, 0, &plan), 0);
    assert_int_equal(plan.response_session_id, 0);
    assert_int_equal(fetch_session_count(c), 0);
    fetch_plan_free(&plan);
    fetch_session_cache_destroy(c);
}

static void test_sent_state_is_remembered(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache_of_slots(10);
    struct fetch_partition_state full[1] = {part("a", 0, 5)};
    struct fetch_plan plan;
    fetch_session_apply(c, 0, 0, false, full, 1, NULL, 0, &plan);
    int32_t id = plan.response_session_id;
    plan.partitions[0].last_high_watermark = 42;
    plan.partitions[0].last_log_start_offset = 3;
    fetch_session_record_sent(c, id, plan.partitions, 1);
    fetch_plan_free(&plan);
    assert_int_equal(fetch_session_apply(c, id, 1, false, NULL, 0, NULL, 0, &plan), 0);
    assert_int_equal(plan.partition_count, 1);
    assert_int_equal(plan.partitions[0].last_high_watermark, 42);
    assert_int_equal(plan.partitions[0].last_log_start_offset, 3);
    fetch_plan_free(&plan);
    fetch_session_cache_destroy(c);
}

/* Opens a session on `n` partitions of topic `name`; its id, 0 if not cached. */
static int32_t open_n(struct fetch_session_cache *c, bool privileged, const char *name, int32_t n)
{
    struct fetch_partition_state *parts = calloc((size_t)n, sizeof *parts);
    assert_non_null(parts);
    for (int32_t i = 0; i < n; i++)
        parts[i] = part(name, i, 0);
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, 0, 0, privileged, parts, n, NULL, 0, &plan), 0);
    assert_int_equal(plan.partition_count, n);
    int32_t id = plan.response_session_id;
    fetch_plan_free(&plan);
    free(parts);
    return id;
}

/* An incremental fetch with nothing new; its error and session id. */
static int16_t poll_session(struct fetch_session_cache *c, int32_t id, int32_t epoch, int32_t *answered_id)
{
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, id, epoch, false, NULL, 0, NULL, 0, &plan), 0);
    int16_t err = plan.error_code;
    if (answered_id)
        *answered_id = plan.response_session_id;
    fetch_plan_free(&plan);
    return err;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Kafka's FetchSessionCacheShard.tryEvict with Cairn's one added rank: a
 * full cache lets a newcomer evict a session created over the stale time
 * ago if worth no more (privileged, then used incrementally, then size);
 * a privileged newcomer may also evict any unprivileged session. */
static void test_full_cache_evicts_by_kafka_rules(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache(2, INT64_MAX / 2, 300);
    int32_t used = open_n(c, false, "a", 1);
    int32_t idle = open_n(c, false, "a", 1);
    assert_true(used > 0 && idle > 0);
    /* Recently created sessions are safe from unprivileged newcomers. */
    assert_int_equal(open_n(c, false, "b", 40), 0);
    sleep_ms(400);
    assert_int_equal(poll_session(c, used, 1, NULL), KAFKA_ERR_NONE);
    fetch_session_record_sent(c, idle, NULL, 0); /* used, not stale */
    /* A larger newcomer evicts the older idle one, not the one in use. */
    int32_t wide = open_n(c, false, "b", 40);
    assert_true(wide > 0);
    assert_int_equal(poll_session(c, idle, 1, NULL), KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND);
    /* A smaller one evicts nothing and is not cached: a full answer, id 0. */
    assert_int_equal(open_n(c, false, "c", 1), 0);
    assert_int_equal(fetch_session_count(c), 2);
    /* A follower's (privileged) session evicts the least valuable one. */
    assert_true(open_n(c, true, "d", 1) > 0);
    assert_int_equal(poll_session(c, wide, 1, NULL), KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND);
    assert_int_equal(poll_session(c, used, 2, NULL), KAFKA_ERR_NONE);
    fetch_session_cache_destroy(c);
}

static int64_t metric(const char *name, enum metrics_kind kind)
{
    struct metrics_metric *m = metrics_register(kind, name, NULL, "");
    assert_non_null(m);
    return metrics_value(m);
}

static void assert_gauges(struct fetch_session_cache *c, int64_t sessions, int64_t partitions)
{
    assert_int_equal(metric("cairn_fetch_sessions", METRICS_GAUGE), sessions);
    assert_int_equal(metric("cairn_fetch_session_partitions_cached", METRICS_GAUGE), partitions);
    assert_int_equal(metric("cairn_fetch_session_cache_bytes", METRICS_GAUGE), fetch_session_cache_bytes(c));
}

/* Kafka's FetchSessionCache gauges: sessions, partitions cached, bytes,
 * evictions, through opening, growing, evicting and closing. */
static void test_cache_gauges(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache(2, INT64_MAX / 2, 300);
    int64_t evicted = metric("cairn_fetch_session_evictions_total", METRICS_COUNTER);
    int32_t a = open_n(c, false, "a", 3);
    int32_t b = open_n(c, false, "b", 6);
    assert_true(a > 0 && b > 0);
    assert_gauges(c, 2, 9);
    struct fetch_partition_state more[2] = {part("a", 10, 0), part("a", 11, 0)};
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, a, 1, false, more, 2, NULL, 0, &plan), 0);
    assert_int_equal(plan.response_session_id, a);
    fetch_plan_free(&plan);
    assert_gauges(c, 2, 11);
    /* Both stale now: one of them makes room for a wider one. */
    sleep_ms(400);
    assert_true(open_n(c, false, "c", 40) > 0);
    assert_int_equal(metric("cairn_fetch_session_evictions_total", METRICS_COUNTER), evicted + 1);
    bool a_left = poll_session(c, a, 2, NULL) == KAFKA_ERR_NONE;
    assert_gauges(c, 2, 40 + (a_left ? 5 : 6));
    assert_int_equal(fetch_session_apply(c, a_left ? a : b, -1, false, NULL, 0, NULL, 0, &plan), 0);
    fetch_plan_free(&plan);
    assert_gauges(c, 1, 40);
    fetch_session_cache_destroy(c);
}

/* Any new session may evict one unused for the stale time, in use or not. */
static void test_stale_session_evicted_first(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache(1, INT64_MAX / 2, 300);
    int32_t old = open_n(c, false, "a", 8);
    assert_int_equal(poll_session(c, old, 1, NULL), KAFKA_ERR_NONE);
    assert_int_equal(open_n(c, false, "b", 1), 0); /* not stale yet */
    sleep_ms(400);
    assert_true(open_n(c, false, "b", 1) > 0);
    assert_int_equal(poll_session(c, old, 2, NULL), KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND);
    fetch_session_cache_destroy(c);
}

#define NAME_249                                                                                                       \
    "n0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"            \
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"             \
    "0123456789012345678901234567890123456789012345678"
#define SHARED_PARTS 20000

/* The partitions of a session share their topic's name: 20,000 partitions
 * of two 249-character topics, alternating as the hostile client sent
 * them, cost well under 128 bytes each (a 256-byte name each before). Each
 * request entry names its topic anew; the session keeps one per topic. */
static void test_cached_partition_shares_its_topic(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache_of_slots(10);
    static const struct kafka_uuid zero;
    char other[256];
    snprintf(other, sizeof other, "%s", NAME_249);
    other[0] = 'm';
    struct fetch_partition_state *parts = calloc(SHARED_PARTS, sizeof *parts);
    struct fetch_topic **entries = calloc(SHARED_PARTS, sizeof *entries);
    assert_non_null(parts);
    assert_non_null(entries);
    for (int32_t i = 0; i < SHARED_PARTS; i++) {
        const char *name = i % 2 ? other : NAME_249;
        entries[i] = fetch_topic_new(name, strlen(name), &zero);
        assert_non_null(entries[i]);
        memset(&parts[i], 0, sizeof parts[i]);
        parts[i].topic = entries[i];
        parts[i].partition = i / 2;
    }
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, 0, 0, false, parts, SHARED_PARTS, NULL, 0, &plan), 0);
    assert_true(plan.response_session_id > 0);
    assert_int_equal(plan.partition_count, SHARED_PARTS);
    assert_int_equal(plan.topic_count, 2);
    assert_ptr_equal(plan.partitions[0].topic, plan.partitions[2].topic);
    int64_t per_part = fetch_session_cache_bytes(c) / SHARED_PARTS;
    fprintf(stderr, "[fetch-session] %d cached partitions: %lld bytes each\n", SHARED_PARTS, (long long)per_part);
    assert_true(per_part > 0 && per_part < 128);
    for (int32_t i = 0; i < SHARED_PARTS; i++)
        fetch_topic_unref(entries[i]);
    /* Forgetting every partition of a topic drops it from the session. */
    int32_t id = plan.response_session_id;
    fetch_plan_free(&plan);
    struct fetch_partition_state *forget = calloc(SHARED_PARTS / 2, sizeof *forget);
    for (int32_t i = 0; i < SHARED_PARTS / 2; i++)
        forget[i] = part(other, i, 0);
    assert_int_equal(fetch_session_apply(c, id, 1, false, NULL, 0, forget, SHARED_PARTS / 2, &plan), 0);
    assert_int_equal(plan.partition_count, SHARED_PARTS / 2);
    assert_int_equal(plan.topic_count, 1);
    fetch_plan_free(&plan);
    free(forget);
    free(entries);
    free(parts);
    fetch_session_cache_destroy(c);
}

#define HOSTILE_PARTS 1000

/* The hostile run: a client opening ever new wide sessions it never uses.
 * The cache's bytes stay within the budget whatever the slots allow, and a
 * consumer polling its small session keeps it. A session larger than the
 * budget is answered in full with id 0; one that outgrows it is closed. */
static void test_byte_budget_bounds_all_sessions(void **state)
{
    (void)state;
    struct fetch_session_cache *probe = cache_of_slots(10);
    open_n(probe, false, "h", HOSTILE_PARTS);
    int64_t one = fetch_session_cache_bytes(probe);
    fetch_session_cache_destroy(probe);
    int64_t budget = 4 * one;
    struct fetch_session_cache *c = cache(1000, budget, FETCH_SESSION_STALE_MS);
    int32_t good = open_n(c, false, "g", 10);
    assert_true(good > 0);
    int32_t epoch = 1;
    for (int i = 0; i < 200; i++) {
        open_n(c, false, i % 2 ? "ha" : "hb", HOSTILE_PARTS);
        assert_true(fetch_session_cache_bytes(c) <= budget);
        int32_t answered;
        assert_int_equal(poll_session(c, good, epoch++, &answered), KAFKA_ERR_NONE);
        assert_int_equal(answered, good);
    }
    assert_true(fetch_session_count(c) <= 4);
    /* Wider than the whole budget: never cached. */
    assert_int_equal(open_n(c, false, "w", 5 * HOSTILE_PARTS), 0);
    /* The consumer's session growing past the budget is closed: full, id 0. */
    struct fetch_partition_state *more = calloc(5 * HOSTILE_PARTS, sizeof *more);
    for (int32_t i = 0; i < 5 * HOSTILE_PARTS; i++)
        more[i] = part("g", 100 + i, 0);
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, good, epoch, false, more, 5 * HOSTILE_PARTS, NULL, 0, &plan), 0);
    assert_int_equal(plan.error_code, KAFKA_ERR_NONE);
    assert_int_equal(plan.response_session_id, 0);
    assert_false(plan.incremental);
    assert_int_equal(plan.partition_count, 5 * HOSTILE_PARTS + 10);
    fetch_plan_free(&plan);
    assert_int_equal(poll_session(c, good, epoch + 1, NULL), KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND);
    assert_true(fetch_session_cache_bytes(c) <= budget);
    free(more);
    fetch_session_cache_destroy(c);
}

/* Kafka keeps a request's partitions in a map: a copy named again
 * replaces the first one's data in its place, so the plan holds each
 * partition once, sessionless or not. */
static void test_duplicates_collapse(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache_of_slots(10);
    struct fetch_partition_state parts[5] = {part("a", 0, 5), part("b", 0, 1), part("a", 0, 6), part("a", 0, 7),
                                             part("b", 1, 2)};
    struct fetch_plan plan;
    for (int32_t epoch = -1; epoch <= 0; epoch++) {
        assert_int_equal(fetch_session_apply(c, 0, epoch, false, parts, 5, NULL, 0, &plan), 0);
        assert_int_equal(plan.partition_count, 3);
        assert_string_equal(plan.partitions[0].topic->name, "a");
        assert_int_equal(plan.partitions[0].fetch_offset, 7);
        assert_string_equal(plan.partitions[1].topic->name, "b");
        assert_int_equal(plan.partitions[2].partition, 1);
        fetch_plan_free(&plan);
    }
    fetch_session_cache_destroy(c);
}

static uint32_t xorshift32(uint32_t x)
{
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
}

#define ID_SAMPLES 1024

/* A client that could guess another's session id could close it (X/-1) or
 * fetch through it. Ids come from the kernel's CSPRNG: no id follows from
 * the one before (they used to be successive xorshift32 states, masked to
 * 31 bits), steps do not repeat, and every bit is set about half the
 * time (1024 samples: 40..60 % is more than six standard deviations). */
static void test_session_ids_unpredictable(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache_of_slots(ID_SAMPLES);
    struct fetch_partition_state one = part("a", 0, 0);
    static int32_t ids[ID_SAMPLES];
    for (int i = 0; i < ID_SAMPLES; i++) {
        struct fetch_plan plan;
        assert_int_equal(fetch_session_apply(c, 0, 0, false, &one, 1, NULL, 0, &plan), 0);
        ids[i] = plan.response_session_id;
        assert_true(ids[i] > 0);
        fetch_plan_free(&plan);
    }
    assert_int_equal(fetch_session_count(c), ID_SAMPLES);
    int successors = 0, same_step = 0, bits[31] = {0};
    for (int i = 0; i < ID_SAMPLES; i++) {
        if (i > 0) {
            uint32_t prev = (uint32_t)ids[i - 1];
            uint32_t a = xorshift32(prev) & 0x7fffffff, b = xorshift32(prev | 0x80000000u) & 0x7fffffff;
            successors += (uint32_t)ids[i] == a || (uint32_t)ids[i] == b || ids[i] == ids[i - 1] + 1;
        }
        if (i > 1)
            same_step += ids[i] - ids[i - 1] == ids[1] - ids[0];
        for (int bit = 0; bit < 31; bit++)
            bits[bit] += ((uint32_t)ids[i] >> bit) & 1;
    }
    assert_int_equal(successors, 0);
    assert_true(same_step < 3);
    for (int bit = 0; bit < 31; bit++)
        if (bits[bit] < ID_SAMPLES * 40 / 100 || bits[bit] > ID_SAMPLES * 60 / 100)
            fail_msg("bit %d is set in %d of %d session ids", bit, bits[bit], ID_SAMPLES);
    fetch_session_cache_destroy(c);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define WIDE_PARTITIONS 40000

/* A session of 40,000 partitions (topics alternating a, b) is opened,
 * told what was sent, updated in full and half forgotten. With a scan per
 * partition this took minutes (n^2 / 2 comparisons over 320-byte
 * entries); linear, it takes milliseconds. The bound is loose enough for a
 * busy machine and far below the quadratic cost. */
static void test_wide_session_costs_linear_time(void **state)
{
    (void)state;
    struct fetch_session_cache *c = cache_of_slots(10);
    struct fetch_partition_state *parts = calloc(WIDE_PARTITIONS, sizeof *parts);
    assert_non_null(parts);
    for (int i = 0; i < WIDE_PARTITIONS; i++)
        parts[i] = part(i % 2 ? "b" : "a", i / 2, i);
    double start = now_seconds();
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, 0, 0, false, parts, WIDE_PARTITIONS, NULL, 0, &plan), 0);
    int32_t id = plan.response_session_id;
    assert_int_equal(plan.partition_count, WIDE_PARTITIONS);
    for (int32_t i = 0; i < plan.partition_count; i++)
        plan.partitions[i].last_high_watermark = plan.partitions[i].fetch_offset + 1;
    fetch_session_record_sent(c, id, plan.partitions, plan.partition_count);
    fetch_plan_free(&plan);
    assert_int_equal(fetch_session_apply(c, id, 1, false, parts, WIDE_PARTITIONS, parts, WIDE_PARTITIONS / 2, &plan),
                     0);
    double took = now_seconds() - start;
    assert_int_equal(plan.error_code, KAFKA_ERR_NONE);
    assert_int_equal(plan.partition_count, WIDE_PARTITIONS / 2);
    /* The forgotten half was the first half; what is left remembers what was sent. */
    const struct fetch_partition_state *last = find(&plan, "b", WIDE_PARTITIONS / 2 - 1);
    assert_non_null(last);
    assert_int_equal(last->last_high_watermark, WIDE_PARTITIONS);
    assert_null(find(&plan, "a", 0));
    fetch_plan_free(&plan);
    fprintf(stderr, "[fetch-session] %d partitions: open, record, update and forget in %.3f s\n", WIDE_PARTITIONS,
            took);
    if (took > 4.0)
        fail_msg("a %d-partition session took %.3f s", WIDE_PARTITIONS, took);
    free(parts);
    fetch_session_cache_destroy(c);
}

static int free_topics(void **state)
{
    (void)state;
    fetch_topic_set_free(&test_topics);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sessionless_fetch_creates_nothing),
        cmocka_unit_test(test_incremental_updates_and_forgets),
        cmocka_unit_test(test_sent_state_is_remembered),
        cmocka_unit_test(test_full_cache_evicts_by_kafka_rules),
        cmocka_unit_test(test_stale_session_evicted_first),
        cmocka_unit_test(test_cache_gauges),
        cmocka_unit_test(test_cached_partition_shares_its_topic),
        cmocka_unit_test(test_byte_budget_bounds_all_sessions),
        cmocka_unit_test(test_wide_session_costs_linear_time),
        cmocka_unit_test(test_duplicates_collapse),
        cmocka_unit_test(test_session_ids_unpredictable),
    };
    return cmocka_run_group_tests(tests, NULL, free_topics);
}
