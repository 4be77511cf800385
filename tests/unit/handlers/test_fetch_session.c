/* Incremental fetch sessions (KIP-227): creation, epochs, updates, forgetting, eviction. */
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
#include "protocol/generated/errors.h"

static struct fetch_partition_state part(const char *topic, int32_t partition, int64_t offset)
{
    struct fetch_partition_state p;
    memset(&p, 0, sizeof p);
    snprintf(p.topic, sizeof p.topic, "%s", topic);
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
        if (!strcmp(plan->partitions[i].topic, topic) && plan->partitions[i].partition == partition)
            return &plan->partitions[i];
    return NULL;
}

static void test_sessionless_fetch_creates_nothing(void **state)
{
    (void)state;
    struct fetch_session_cache *c = fetch_session_cache_create(10);
    struct fetch_partition_state parts[2] = {part("a", 0, 5), part("a", 1, 7)};
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, 0, -1, parts, 2, NULL, 0, &plan), 0);
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
    struct fetch_session_cache *c = fetch_session_cache_create(10);
    struct fetch_partition_state full[3] = {part("a", 0, 5), part("a", 1, 7), part("b", 0, 9)};
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, 0, 0, full, 3, NULL, 0, &plan), 0);
    int32_t id = plan.response_session_id;
    assert_true(id > 0);
    assert_false(plan.incremental);
    fetch_plan_free(&plan);

    /* Epoch 1: move a-0 forward, forget b-0, add c-2. */
    struct fetch_partition_state upd[2] = {part("a", 0, 50), part("c", 2, 1)};
    struct fetch_partition_state forget[1] = {part("b", 0, 0)};
    assert_int_equal(fetch_session_apply(c, id, 1, upd, 2, forget, 1, &plan), 0);
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
    assert_int_equal(fetch_session_apply(c, id, 1, NULL, 0, NULL, 0, &plan), 0);
    assert_int_equal(plan.error_code, KAFKA_ERR_INVALID_FETCH_SESSION_EPOCH);
    fetch_plan_free(&plan);
    /* An unknown session id. */
    assert_int_equal(fetch_session_apply(c, id + 1, 1, NULL, 0, NULL, 0, &plan), 0);
    assert_int_equal(plan.error_code, KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND);
    fetch_plan_free(&plan);
    /* Closing with epoch -1 removes it. */
    assert_int_equal(fetch_session_apply(c, id, -1, full, 1, NULL, 0, &plan), 0);
    assert_int_equal(plan.response_session_id, 0);
    assert_int_equal(fetch_session_count(c), 0);
    fetch_plan_free(&plan);
    fetch_session_cache_destroy(c);
}

static void test_sent_state_is_remembered(void **state)
{
    (void)state;
    struct fetch_session_cache *c = fetch_session_cache_create(10);
    struct fetch_partition_state full[1] = {part("a", 0, 5)};
    struct fetch_plan plan;
    fetch_session_apply(c, 0, 0, full, 1, NULL, 0, &plan);
    int32_t id = plan.response_session_id;
    plan.partitions[0].last_high_watermark = 42;
    plan.partitions[0].last_log_start_offset = 3;
    fetch_session_record_sent(c, id, plan.partitions, 1);
    fetch_plan_free(&plan);
    assert_int_equal(fetch_session_apply(c, id, 1, NULL, 0, NULL, 0, &plan), 0);
    assert_int_equal(plan.partition_count, 1);
    assert_int_equal(plan.partitions[0].last_high_watermark, 42);
    assert_int_equal(plan.partitions[0].last_log_start_offset, 3);
    fetch_plan_free(&plan);
    fetch_session_cache_destroy(c);
}

static void test_full_cache_evicts_least_recent(void **state)
{
    (void)state;
    struct fetch_session_cache *c = fetch_session_cache_create(2);
    struct fetch_partition_state full[1] = {part("a", 0, 0)};
    struct fetch_plan plan;
    int32_t ids[3];
    for (int i = 0; i < 3; i++) {
        fetch_session_apply(c, 0, 0, full, 1, NULL, 0, &plan);
        ids[i] = plan.response_session_id;
        fetch_plan_free(&plan);
    }
    assert_int_equal(fetch_session_count(c), 2);
    assert_int_equal(fetch_session_apply(c, ids[0], 1, NULL, 0, NULL, 0, &plan), 0);
    assert_int_equal(plan.error_code, KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND);
    fetch_plan_free(&plan);
    assert_int_equal(fetch_session_apply(c, ids[2], 1, NULL, 0, NULL, 0, &plan), 0);
    assert_int_equal(plan.error_code, KAFKA_ERR_NONE);
    fetch_plan_free(&plan);
    fetch_session_cache_destroy(c);
}

/* Kafka keeps a request's partitions in a map: a copy named again
 * replaces the first one's data in its place, so the plan holds each
 * partition once, sessionless or not. */
static void test_duplicates_collapse(void **state)
{
    (void)state;
    struct fetch_session_cache *c = fetch_session_cache_create(10);
    struct fetch_partition_state parts[5] = {part("a", 0, 5), part("b", 0, 1), part("a", 0, 6), part("a", 0, 7),
                                             part("b", 1, 2)};
    struct fetch_plan plan;
    for (int32_t epoch = -1; epoch <= 0; epoch++) {
        assert_int_equal(fetch_session_apply(c, 0, epoch, parts, 5, NULL, 0, &plan), 0);
        assert_int_equal(plan.partition_count, 3);
        assert_string_equal(plan.partitions[0].topic, "a");
        assert_int_equal(plan.partitions[0].fetch_offset, 7);
        assert_string_equal(plan.partitions[1].topic, "b");
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
    struct fetch_session_cache *c = fetch_session_cache_create(ID_SAMPLES);
    struct fetch_partition_state one = part("a", 0, 0);
    static int32_t ids[ID_SAMPLES];
    for (int i = 0; i < ID_SAMPLES; i++) {
        struct fetch_plan plan;
        assert_int_equal(fetch_session_apply(c, 0, 0, &one, 1, NULL, 0, &plan), 0);
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
    struct fetch_session_cache *c = fetch_session_cache_create(10);
    struct fetch_partition_state *parts = calloc(WIDE_PARTITIONS, sizeof *parts);
    assert_non_null(parts);
    for (int i = 0; i < WIDE_PARTITIONS; i++)
        parts[i] = part(i % 2 ? "b" : "a", i / 2, i);
    double start = now_seconds();
    struct fetch_plan plan;
    assert_int_equal(fetch_session_apply(c, 0, 0, parts, WIDE_PARTITIONS, NULL, 0, &plan), 0);
    int32_t id = plan.response_session_id;
    assert_int_equal(plan.partition_count, WIDE_PARTITIONS);
    for (int32_t i = 0; i < plan.partition_count; i++)
        plan.partitions[i].last_high_watermark = plan.partitions[i].fetch_offset + 1;
    fetch_session_record_sent(c, id, plan.partitions, plan.partition_count);
    fetch_plan_free(&plan);
    assert_int_equal(fetch_session_apply(c, id, 1, parts, WIDE_PARTITIONS, parts, WIDE_PARTITIONS / 2, &plan), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sessionless_fetch_creates_nothing),
        cmocka_unit_test(test_incremental_updates_and_forgets),
        cmocka_unit_test(test_sent_state_is_remembered),
        cmocka_unit_test(test_full_cache_evicts_least_recent),
        cmocka_unit_test(test_wide_session_costs_linear_time),
        cmocka_unit_test(test_duplicates_collapse),
        cmocka_unit_test(test_session_ids_unpredictable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
