/* Offset retention through the real broker: offsets committed with a
 * per-commit retention (OffsetCommit v2-4 retention_time_ms) into an
 * Empty group expire at the next retention sweep after their deadline,
 * and not before; a group whose last offset expired is removed; offsets
 * kept by the broker's retention stay; the expiry survives a restart
 * (tombstones in __consumer_offsets).
 *
 * The broker-wide offsets.retention.minutes path is not exercised here:
 * its smallest value is one minute, too slow for this suite; the unit
 * tests cover it with a fake clock. */
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

#define TOPIC "retention-topic"
#define SHORT_RETENTION_MS 1500
#define SWEEP_INTERVAL_MS 200
#define EXPIRY_WAIT_MS 15000

/* Owned by the test's main thread. */
struct retention_state {
    struct test_broker broker;
    int32_t correlation;
};

struct commit_entry {
    int32_t partition;
    int64_t offset;
};

/* A simple (generation -1) OffsetCommit v2 with retention_time_ms; every
 * partition must be accepted. */
static void commit_v2(struct retention_state *st, const char *group, int64_t retention_ms,
                      const struct commit_entry *entries, int count)
{
    int fd = raw_connect(broker_port(&st->broker), 10000);
    assert_true(fd >= 0);
    struct raw_writer w;
    raw_writer_init(&w);
    int32_t correlation = ++st->correlation;
    raw_frame_begin(&w, 8 /* OffsetCommit */, 2, correlation, "retention-test");
    raw_put_string(&w, group);
    raw_put_i32(&w, -1); /* generation: not a member */
    raw_put_string(&w, "");
    raw_put_i64(&w, retention_ms);
    raw_put_i32(&w, 1);
    raw_put_string(&w, TOPIC);
    raw_put_i32(&w, count);
    for (int i = 0; i < count; i++) {
        raw_put_i32(&w, entries[i].partition);
        raw_put_i64(&w, entries[i].offset);
        raw_put_string(&w, NULL);
    }
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);

    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv_frame(fd, 10000, 1 << 20, &frame, &len), 0);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    assert_int_equal(raw_get_i32(&r), correlation);
    assert_int_equal(raw_get_i32(&r), 1); /* topics */
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), count);
    for (int i = 0; i < count; i++) {
        assert_int_equal(raw_get_i32(&r), entries[i].partition);
        int16_t err = raw_get_i16(&r);
        if (err != 0)
            fail_msg("commit to %s partition %d: error %d", group, entries[i].partition, err);
    }
    assert_false(r.overflow);
    free(frame);
    close(fd);
}

/* The group's committed offsets of partitions 0 and 1 through
 * librdkafka's OffsetFetch (RD_KAFKA_OFFSET_INVALID when none). */
static void committed(struct retention_state *st, const char *group, int64_t out[2])
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", broker_bootstrap(&st->broker), errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null(rk);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(2);
    rd_kafka_topic_partition_list_add(parts, TOPIC, 0);
    rd_kafka_topic_partition_list_add(parts, TOPIC, 1);
    rd_kafka_resp_err_t err = rd_kafka_committed(rk, parts, 10000);
    if (err)
        fail_msg("committed(%s): %s", group, rd_kafka_err2str(err));
    for (int i = 0; i < 2; i++) {
        assert_int_equal(parts->elems[i].err, RD_KAFKA_RESP_ERR_NO_ERROR);
        out[parts->elems[i].partition] = parts->elems[i].offset;
    }
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_destroy(rk);
}

static void expect_committed(struct retention_state *st, const char *group, int64_t p0, int64_t p1)
{
    int64_t got[2];
    committed(st, group, got);
    if (got[0] != p0 || got[1] != p1)
        fail_msg("%s: committed %lld/%lld, expected %lld/%lld", group, (long long)got[0], (long long)got[1],
                 (long long)p0, (long long)p1);
}

/* Whether ListGroups names the group. */
static bool group_listed(struct retention_state *st, const char *group)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&st->broker), NULL);
    const struct rd_kafka_group_list *list = NULL;
    rd_kafka_resp_err_t err = rd_kafka_list_groups(rk, NULL, &list, 10000);
    if (err)
        fail_msg("ListGroups: %s", rd_kafka_err2str(err));
    bool found = false;
    for (int i = 0; i < list->group_cnt; i++)
        found |= strcmp(list->groups[i].group, group) == 0;
    rd_kafka_group_list_destroy(list);
    rk_producer_destroy(rk);
    return found;
}

/* A consumer joins `group` and leaves again, so the group is Empty with
 * a past generation rather than never having had members. */
static void join_and_leave(struct retention_state *st, const char *group)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers",
                        broker_bootstrap(&st->broker),
                        "group.id",
                        group,
                        "session.timeout.ms",
                        "6000",
                        "enable.auto.commit",
                        "false",
                        NULL};
    for (int i = 0; kv[i]; i += 2)
        assert_int_equal(rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null(rk);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, TOPIC, RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(rk, topics), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(topics);
    long long deadline = harness_now_ms() + 20000;
    bool assigned = false;
    while (!assigned && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (m)
            rd_kafka_message_destroy(m);
        rd_kafka_topic_partition_list_t *a = NULL;
        if (rd_kafka_assignment(rk, &a) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            assigned = a->cnt == 2;
            rd_kafka_topic_partition_list_destroy(a);
        }
    }
    if (!assigned)
        fail_msg("%s: consumer got no assignment within 20 s", group);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

static void test_per_commit_retention_expires_empty_group_offsets(void **state)
{
    struct retention_state *st = *state;
    join_and_leave(st, "ret-former-members");

    long long committed_at = harness_now_ms();
    const struct commit_entry both[] = {{0, 42}, {1, 43}};
    commit_v2(st, "ret-former-members", SHORT_RETENTION_MS, both, 2);
    commit_v2(st, "ret-simple", SHORT_RETENTION_MS, both, 2);
    const struct commit_entry short_p0[] = {{0, 5}};
    const struct commit_entry long_p1[] = {{1, 6}};
    commit_v2(st, "ret-mixed", SHORT_RETENTION_MS, short_p0, 1);
    commit_v2(st, "ret-mixed", -1, long_p1, 1);
    const struct commit_entry keep[] = {{0, 7}, {1, 8}};
    commit_v2(st, "ret-keep", -1, keep, 2);

    /* Visible right away: the retention has not run out. */
    expect_committed(st, "ret-former-members", 42, 43);
    expect_committed(st, "ret-simple", 42, 43);
    expect_committed(st, "ret-mixed", 5, 6);

    int64_t got[2] = {0, 0};
    long long gone_at = 0;
    while (harness_now_ms() - committed_at < EXPIRY_WAIT_MS) {
        committed(st, "ret-former-members", got);
        if (got[0] == RD_KAFKA_OFFSET_INVALID && got[1] == RD_KAFKA_OFFSET_INVALID) {
            gone_at = harness_now_ms();
            break;
        }
        /* Both partitions were committed together: they go together. */
        assert_int_equal(got[0], 42);
        assert_int_equal(got[1], 43);
        usleep(100 * 1000);
    }
    if (!gone_at)
        fail_msg("offsets still there %d ms after a %d ms retention", EXPIRY_WAIT_MS, SHORT_RETENTION_MS);
    /* Not before the deadline (the broker stamped the commit after we
     * started sending it); a small allowance for wall vs monotonic clocks. */
    long long lived = gone_at - committed_at;
    print_message("offsets with a %d ms retention expired after %lld ms\n", SHORT_RETENTION_MS, lived);
    assert_true(lived >= SHORT_RETENTION_MS - 50);

    /* One sweep later at most, every short-lived offset is gone. */
    usleep(2 * SWEEP_INTERVAL_MS * 1000);
    expect_committed(st, "ret-simple", RD_KAFKA_OFFSET_INVALID, RD_KAFKA_OFFSET_INVALID);
    expect_committed(st, "ret-mixed", RD_KAFKA_OFFSET_INVALID, 6);
    expect_committed(st, "ret-keep", 7, 8);
    /* A group with no offsets left is removed; the others stay. */
    assert_false(group_listed(st, "ret-former-members"));
    assert_false(group_listed(st, "ret-simple"));
    assert_true(group_listed(st, "ret-mixed"));
    assert_true(group_listed(st, "ret-keep"));

    /* The expiry was written to __consumer_offsets: a restart replays it. */
    broker_stop(&st->broker);
    broker_restart(&st->broker);
    expect_committed(st, "ret-former-members", RD_KAFKA_OFFSET_INVALID, RD_KAFKA_OFFSET_INVALID);
    expect_committed(st, "ret-simple", RD_KAFKA_OFFSET_INVALID, RD_KAFKA_OFFSET_INVALID);
    expect_committed(st, "ret-mixed", RD_KAFKA_OFFSET_INVALID, 6);
    expect_committed(st, "ret-keep", 7, 8);
    assert_false(group_listed(st, "ret-former-members"));
    broker_mark_passed(&st->broker);
}

static int retention_setup(void **state)
{
    struct retention_state *st = calloc(1, sizeof *st);
    assert_non_null(st);
    char interval[64];
    snprintf(interval, sizeof interval, "offsets.retention.check.interval.ms=%d", SWEEP_INTERVAL_MS);
    const char *overrides[] = {interval, "group.initial.rebalance.delay.ms=0", NULL};
    broker_start(&st->broker, overrides);
    rk_create_topic(broker_bootstrap(&st->broker), TOPIC, 2, NULL);
    *state = st;
    return 0;
}

static int retention_teardown(void **state)
{
    struct retention_state *st = *state;
    broker_cleanup(&st->broker);
    free(st);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_per_commit_retention_expires_empty_group_offsets, retention_setup,
                                        retention_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
