/* Committed offsets at scale: one group committing, fetching and deleting
 * 20,000 partitions must stay far from quadratic. The bound is loose for a
 * hashed lookup (a few ms here, even under sanitizers) and tight for a
 * linear scan per partition (seconds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group/group_coordinator.h"
#include "group/group_persistence.h"
#include "protocol/generated/errors.h"

#define SCALE_TOPICS 200
#define SCALE_PARTITIONS_PER_TOPIC 100
#define SCALE_TOTAL (SCALE_TOPICS * SCALE_PARTITIONS_PER_TOPIC)
#define SCALE_ROUNDS 3
/* Whole run: SCALE_ROUNDS commits of every partition, a fetch of every
 * partition, a fetch-all and an OffsetDelete of half of them. About 250 ms
 * on a quiet machine; the bound leaves room for a loaded runner (a run took
 * 504 ms at load 8) while a per-partition scan (20000^2 steps a round)
 * still takes seconds. */
#define SCALE_TIME_BOUND_MS 2000.0

static int64_t fake_now = 1000000;
static int64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static struct group_coordinator *make_gc(void)
{
    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.initial_rebalance_delay_ms = 0;
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);
    return gc;
}

static char topic_names[SCALE_TOPICS][32];

static void fill_names(void)
{
    /* Shared prefix: a string compare has to read past it. */
    for (int t = 0; t < SCALE_TOPICS; t++)
        snprintf(topic_names[t], sizeof topic_names[t], "orders.region-%03d", t);
}

static int64_t expected_offset(int round, int t, int p)
{
    return (int64_t)round * 1000000 + t * 1000 + p;
}

static void commit_all(struct group_coordinator *gc, struct group_offset_commit *c, int round)
{
    size_t i = 0;
    /* Partition-major order so consecutive entries differ by topic. */
    for (int p = 0; p < SCALE_PARTITIONS_PER_TOPIC; p++)
        for (int t = 0; t < SCALE_TOPICS; t++, i++)
            c[i] = (struct group_offset_commit){.topic = topic_names[t],
                                                .partition = p,
                                                .offset = expected_offset(round, t, p),
                                                .leader_epoch = round,
                                                .metadata = (p % 2) ? "m" : NULL,
                                                .metadata_len = (p % 2) ? 1 : 0};
    struct group_commit_params params = {
        .group_id = "scale-group", .generation_id = -1, .member_id = "", .retention_ms = -1};
    group_coordinator_commit(gc, &params, c, SCALE_TOTAL);
    for (size_t k = 0; k < SCALE_TOTAL; k++)
        assert_int_equal(c[k].error_code, KAFKA_ERR_NONE);
}

static void test_commit_fetch_delete_20000_partitions(void **state)
{
    (void)state;
    fill_names();
    struct group_coordinator *gc = make_gc();
    struct group_offset_commit *c = calloc(SCALE_TOTAL, sizeof *c);
    struct group_offset_fetch *f = calloc(SCALE_TOTAL, sizeof *f);
    struct group_offset_delete *d = calloc(SCALE_TOTAL / 2, sizeof *d);
    assert_non_null(c);
    assert_non_null(f);
    assert_non_null(d);

    double start = now_ms();
    for (int round = 0; round < SCALE_ROUNDS; round++)
        commit_all(gc, c, round);
    double committed = now_ms();

    size_t i = 0;
    for (int t = 0; t < SCALE_TOPICS; t++)
        for (int p = 0; p < SCALE_PARTITIONS_PER_TOPIC; p++, i++)
            f[i] = (struct group_offset_fetch){.topic = topic_names[t], .partition = p};
    assert_int_equal(group_coordinator_fetch_offsets(gc, "scale-group", f, SCALE_TOTAL), KAFKA_ERR_NONE);
    double fetched = now_ms();

    struct group_offset_fetch *all = NULL;
    size_t all_count = 0;
    assert_int_equal(group_coordinator_fetch_all_offsets(gc, "scale-group", &all, &all_count), KAFKA_ERR_NONE);

    /* OffsetDelete of every even topic (the group is Empty, so allowed). */
    size_t n = 0;
    for (int t = 0; t < SCALE_TOPICS; t += 2)
        for (int p = 0; p < SCALE_PARTITIONS_PER_TOPIC; p++)
            d[n++] = (struct group_offset_delete){.topic = topic_names[t], .partition = p};
    assert_int_equal(group_coordinator_delete_offsets(gc, "scale-group", d, n), KAFKA_ERR_NONE);
    double end = now_ms();

    print_message("20000 partitions: %d commit rounds %.1f ms, fetch %.1f ms, fetch-all + delete %.1f ms, "
                  "total %.1f ms (bound %.0f ms)\n",
                  SCALE_ROUNDS, committed - start, fetched - committed, end - fetched, end - start,
                  SCALE_TIME_BOUND_MS);

    /* The results are right, not only fast. */
    i = 0;
    for (int t = 0; t < SCALE_TOPICS; t++) {
        for (int p = 0; p < SCALE_PARTITIONS_PER_TOPIC; p++, i++) {
            assert_int_equal(f[i].offset, expected_offset(SCALE_ROUNDS - 1, t, p));
            assert_int_equal(f[i].leader_epoch, SCALE_ROUNDS - 1);
            if (p % 2)
                assert_string_equal(f[i].metadata, "m");
            else
                assert_null(f[i].metadata);
            free(f[i].metadata);
            f[i].metadata = NULL;
        }
    }
    assert_int_equal(all_count, SCALE_TOTAL);
    int64_t sum = 0, want = 0;
    for (size_t k = 0; k < all_count; k++)
        sum += all[k].offset;
    for (int t = 0; t < SCALE_TOPICS; t++)
        for (int p = 0; p < SCALE_PARTITIONS_PER_TOPIC; p++)
            want += expected_offset(SCALE_ROUNDS - 1, t, p);
    assert_true(sum == want);
    group_offset_fetch_free(all, all_count);
    for (size_t k = 0; k < n; k++)
        assert_int_equal(d[k].error_code, KAFKA_ERR_NONE);

    /* Deleted partitions are gone; the others kept their offsets. */
    i = 0;
    for (int t = 0; t < SCALE_TOPICS; t++)
        for (int p = 0; p < SCALE_PARTITIONS_PER_TOPIC; p++, i++)
            f[i] = (struct group_offset_fetch){.topic = topic_names[t], .partition = p};
    assert_int_equal(group_coordinator_fetch_offsets(gc, "scale-group", f, SCALE_TOTAL), KAFKA_ERR_NONE);
    i = 0;
    for (int t = 0; t < SCALE_TOPICS; t++) {
        for (int p = 0; p < SCALE_PARTITIONS_PER_TOPIC; p++, i++) {
            if (t % 2 == 0)
                assert_int_equal(f[i].offset, -1);
            else
                assert_int_equal(f[i].offset, expected_offset(SCALE_ROUNDS - 1, t, p));
            free(f[i].metadata);
        }
    }
    assert_int_equal(group_coordinator_fetch_all_offsets(gc, "scale-group", &all, &all_count), KAFKA_ERR_NONE);
    assert_int_equal(all_count, SCALE_TOTAL / 2);
    group_offset_fetch_free(all, all_count);

    assert_true(end - start < SCALE_TIME_BOUND_MS);
    free(c);
    free(f);
    free(d);
    group_coordinator_destroy(gc);
}

/* Removing entries one by one in every order keeps lookups right (the
 * table moves entries on removal). */
static void test_interleaved_commit_and_delete(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc();
    struct group_commit_params params = {.group_id = "churn", .generation_id = -1, .member_id = "", .retention_ms = -1};
    enum { N = 3000 };
    static bool present[N];
    memset(present, 0, sizeof present);
    unsigned seed = 12345;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        int p = (int)((seed >> 8) % N);
        const char *topic = (p % 3) ? "churn-a" : "churn-b";
        if ((seed >> 4) & 1) {
            struct group_offset_commit c = {.topic = topic, .partition = p, .offset = step, .leader_epoch = -1};
            group_coordinator_commit(gc, &params, &c, 1);
            assert_int_equal(c.error_code, KAFKA_ERR_NONE);
            present[p] = true;
        } else {
            struct group_offset_delete d = {.topic = topic, .partition = p};
            assert_int_equal(group_coordinator_delete_offsets(gc, "churn", &d, 1), KAFKA_ERR_NONE);
            present[p] = false;
        }
        if (step % 997 == 0) {
            size_t count = 0;
            for (int k = 0; k < N; k++) {
                struct group_offset_fetch f = {.topic = (k % 3) ? "churn-a" : "churn-b", .partition = k};
                assert_int_equal(group_coordinator_fetch_offsets(gc, "churn", &f, 1), KAFKA_ERR_NONE);
                assert_int_equal(f.offset >= 0, present[k]);
                count += present[k];
                free(f.metadata);
            }
            struct group_offset_fetch *all = NULL;
            size_t all_count = 0;
            assert_int_equal(group_coordinator_fetch_all_offsets(gc, "churn", &all, &all_count), KAFKA_ERR_NONE);
            assert_int_equal(all_count, count);
            group_offset_fetch_free(all, all_count);
        }
    }
    group_coordinator_destroy(gc);
}

/* Lookups must not depend on which ids clients pick or on how many
 * members a group has. Each check times the same work twice, on a shape
 * that is cheap for any table and on the shape under test, and bounds the
 * ratio: robust to a loaded machine and to sanitizers, which slow both
 * runs alike. A one-chain or linear lookup is about 100 times slower on
 * the second shape (see the report of the change); an index, 1 to 2. */
#define SHAPE_RATIO_BOUND 10.0
#define SHAPE_SLACK_MS 100.0
/* Each shape runs this often and its fastest run counts, which filters
 * out the moments another process had the cores. */
#define SHAPE_RUNS 2

/* Group ids a client picks so that an unseeded FNV-1a hash over 1024
 * buckets puts them all in one chain: every lookup would walk all groups. */
#define COLLIDING_GROUPS 5000

static uint32_t old_bucket(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h % 1024;
}

/* Creates the groups (one commit each), commits three more rounds and
 * fetches each; returns the time taken. */
static double run_groups(char (*ids)[48], size_t n)
{
    struct group_coordinator *gc = make_gc();
    double start = now_ms();
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < n; i++) {
            struct group_offset_commit c = {.topic = "t", .partition = 0, .offset = round, .leader_epoch = -1};
            struct group_commit_params params = {
                .group_id = ids[i], .generation_id = -1, .member_id = "", .retention_ms = -1};
            group_coordinator_commit(gc, &params, &c, 1);
            assert_int_equal(c.error_code, KAFKA_ERR_NONE);
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct group_offset_fetch f = {.topic = "t", .partition = 0};
        assert_int_equal(group_coordinator_fetch_offsets(gc, ids[i], &f, 1), KAFKA_ERR_NONE);
        assert_int_equal(f.offset, 3);
        free(f.metadata);
    }
    double took = now_ms() - start;
    struct group_listing *l = NULL;
    size_t count = 0;
    assert_int_equal(group_coordinator_list(gc, NULL, 0, &l, &count), KAFKA_ERR_NONE);
    assert_int_equal(count, n);
    group_listing_free(l, count);
    assert_int_equal(group_coordinator_delete_group(gc, ids[17]), KAFKA_ERR_NONE);
    struct group_offset_fetch f = {.topic = "t", .partition = 0};
    assert_int_equal(group_coordinator_fetch_offsets(gc, ids[17], &f, 1), KAFKA_ERR_NONE);
    assert_int_equal(f.offset, -1);
    group_coordinator_destroy(gc);
    return took;
}

static void test_many_groups_colliding_ids(void **state)
{
    (void)state;
    char(*ids)[48] = calloc(COLLIDING_GROUPS, sizeof *ids);
    assert_non_null(ids);
    for (size_t i = 0; i < COLLIDING_GROUPS; i++)
        snprintf(ids[i], sizeof ids[i], "consumer-group-%zu", i);
    double spread = 1e9, colliding = 1e9;
    for (int r = 0; r < SHAPE_RUNS; r++) {
        double t = run_groups(ids, COLLIDING_GROUPS);
        spread = t < spread ? t : spread;
    }
    size_t n = 0;
    for (unsigned long k = 0; n < COLLIDING_GROUPS; k++) {
        char id[48];
        snprintf(id, sizeof id, "consumer-group-%lu", k);
        if (old_bucket(id) == 7)
            memcpy(ids[n++], id, sizeof id);
    }
    for (int r = 0; r < SHAPE_RUNS; r++) {
        double t = run_groups(ids, n);
        colliding = t < colliding ? t : colliding;
    }
    print_message("%d groups: %.1f ms with spread ids, %.1f ms with colliding ids (bound %.0fx + %.0f ms)\n",
                  COLLIDING_GROUPS, spread, colliding, SHAPE_RATIO_BOUND, SHAPE_SLACK_MS);
    free(ids);
    assert_true(colliding < SHAPE_RATIO_BOUND * spread + SHAPE_SLACK_MS);
}

/* A Stable group of members (loaded from its record, as after a restart)
 * where each member heartbeats twice and commits, rounds times; returns
 * the time taken. */
static double run_members(int members, int rounds)
{
    struct group_member_record *recs = calloc((size_t)members, sizeof *recs);
    char(*ids)[64] = calloc((size_t)members, sizeof *ids);
    char(*instances)[64] = calloc((size_t)members, sizeof *instances);
    assert_non_null(recs);
    assert_non_null(ids);
    assert_non_null(instances);
    for (int i = 0; i < members; i++) {
        /* Kafka's member id shape: client id, then a uuid. */
        snprintf(ids[i], sizeof ids[i], "consumer-big-1-0000%04x-0000-0000-0000-%012d", i % 7, i);
        snprintf(instances[i], sizeof instances[i], "instance-%d", i);
        recs[i] = (struct group_member_record){.member_id = ids[i],
                                               .group_instance_id = (i % 2) ? instances[i] : NULL,
                                               .client_id = "consumer-big-1",
                                               .client_host = "/127.0.0.1",
                                               .rebalance_timeout_ms = 30000,
                                               .session_timeout_ms = 45000,
                                               .subscription = (const uint8_t *)"s",
                                               .subscription_len = 1};
    }
    struct group_snapshot_record rec = {.group_id = "big",
                                        .protocol_type = "consumer",
                                        .generation = 5,
                                        .protocol = "range",
                                        .leader = ids[0],
                                        .members = recs,
                                        .member_count = (size_t)members};
    struct group_coordinator *gc = make_gc();
    group_coordinator_load_visitor()->group(gc, "big", &rec);
    double start = now_ms();
    for (int round = 0; round < rounds; round++) {
        for (int hb = 0; hb < 2; hb++)
            for (int i = 0; i < members; i++)
                assert_int_equal(group_coordinator_heartbeat(gc, "big", 5, ids[i], (i % 2) ? instances[i] : NULL),
                                 KAFKA_ERR_NONE);
        for (int i = 0; i < members; i++) {
            struct group_offset_commit c = {.topic = "t", .partition = i % 64, .offset = i, .leader_epoch = -1};
            struct group_commit_params params = {.group_id = "big",
                                                 .generation_id = 5,
                                                 .member_id = ids[i],
                                                 .group_instance_id = (i % 2) ? instances[i] : NULL,
                                                 .retention_ms = -1};
            group_coordinator_commit(gc, &params, &c, 1);
            assert_int_equal(c.error_code, KAFKA_ERR_NONE);
        }
    }
    double took = now_ms() - start;
    /* Unknown ids and a fenced instance are still told apart. */
    assert_int_equal(group_coordinator_heartbeat(gc, "big", 5, "consumer-big-1-nobody", NULL),
                     KAFKA_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(group_coordinator_heartbeat(gc, "big", 5, ids[2], instances[1]), KAFKA_ERR_FENCED_INSTANCE_ID);
    group_coordinator_destroy(gc);
    free(recs);
    free(ids);
    free(instances);
    return took;
}

static void test_many_members_lookup(void **state)
{
    (void)state;
    /* The same 30,000 requests in a group of 100 and in one of 10,000. */
    double small = 1e9, big = 1e9;
    for (int r = 0; r < SHAPE_RUNS; r++) {
        double t = run_members(100, 100);
        small = t < small ? t : small;
        t = run_members(10000, 1);
        big = t < big ? t : big;
    }
    print_message("30000 member requests: %.1f ms in a group of 100, %.1f ms in a group of 10000 (bound %.0fx + "
                  "%.0f ms)\n",
                  small, big, SHAPE_RATIO_BOUND, SHAPE_SLACK_MS);
    assert_true(big < SHAPE_RATIO_BOUND * small + SHAPE_SLACK_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_fetch_delete_20000_partitions),
        cmocka_unit_test(test_interleaved_commit_and_delete),
        cmocka_unit_test(test_many_groups_colliding_ids),
        cmocka_unit_test(test_many_members_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
