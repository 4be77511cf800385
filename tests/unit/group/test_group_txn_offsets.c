/* Transactional offset commits through the group coordinator over the real
 * group log in a temp dir: pending offsets are invisible until their
 * transaction commits, dropped when it aborts, reported unstable to
 * require_stable fetches, and survive a reload with or without the
 * transaction's marker in __consumer_offsets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "coordinator/coordinator_partition.h"
#include "group/group_coordinator.h"
#include "group/group_log.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "support/unit_fixture.h"

#define PARTITIONS 3
#define PID 4000
#define EPOCH 2

static int64_t fake_now = 1000000;
static int64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

/* Only the test's thread touches it. */
struct fixture {
    struct unit_fixture stores;
    struct group_log *gl;
    struct group_coordinator *gc;
};
_Static_assert(offsetof(struct fixture, stores) == 0, "unit_fixture_setup needs the stores first");

/* Opens the store and a coordinator that replays it, as the broker does. */
static void open_all(struct fixture *f)
{
    char err[256] = "";
    unit_fixture_open(&f->stores);
    struct group_log_options gopts = {
        .logs = f->stores.logs,
        .metadata = f->stores.metadata,
        .num_partitions = PARTITIONS,
        .replication_factor = 1,
        .segment_bytes = 1 << 20,
        .node_id = 1,
        .load_buffer_size = 4096,
    };
    if (group_log_open(&gopts, &f->gl, err, sizeof err) != 0)
        fail_msg("group log: %s", err);

    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.initial_rebalance_delay_ms = 0;
    o.ops = group_log_store_ops();
    o.store = f->gl;
    o.offsets_topic_partitions = group_log_partition_count(f->gl);
    o.start_loading = true;
    assert_int_equal(group_coordinator_create(&o, &f->gc), 0);
    if (group_log_load(f->gl, group_coordinator_load_visitor(), f->gc, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    group_coordinator_set_loaded(f->gc);
}

static void close_all(struct fixture *f)
{
    group_coordinator_destroy(f->gc);
    f->gc = NULL;
    group_log_close(f->gl);
    f->gl = NULL;
    unit_fixture_close(&f->stores);
}

static void reopen(struct fixture *f)
{
    close_all(f);
    open_all(f);
}

static int setup(void **state)
{
    if (unit_fixture_setup(state, sizeof(struct fixture), "cairn-txn-offsets") != 0)
        return -1;
    open_all(*state);
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f->gc)
        close_all(f);
    return unit_fixture_teardown(*state);
}

/* ---- helpers ---- */

static int32_t partition_for(const char *group)
{
    return coordinator_partition_for(group, strlen(group), PARTITIONS);
}

static int16_t txn_commit_full(struct fixture *f, const struct group_txn_commit_params *p, const char *topic,
                               int32_t partition, int64_t offset, const char *metadata)
{
    struct group_offset_commit c = {.topic = topic,
                                    .partition = partition,
                                    .offset = offset,
                                    .leader_epoch = 1,
                                    .metadata = metadata,
                                    .metadata_len = metadata ? strlen(metadata) : 0};
    group_coordinator_txn_commit(f->gc, p, &c, 1);
    return c.error_code;
}

static int16_t txn_commit(struct fixture *f, const char *group, int64_t pid, int16_t epoch, const char *topic,
                          int32_t partition, int64_t offset)
{
    struct group_txn_commit_params p = {
        .group_id = group, .producer_id = pid, .producer_epoch = epoch, .generation_id = -1, .member_id = ""};
    return txn_commit_full(f, &p, topic, partition, offset, "txn");
}

static int16_t plain_commit(struct fixture *f, const char *group, const char *topic, int32_t partition, int64_t offset)
{
    struct group_commit_params p = {.group_id = group, .generation_id = -1, .member_id = "", .retention_ms = -1};
    struct group_offset_commit c = {.topic = topic, .partition = partition, .offset = offset, .leader_epoch = 1};
    group_coordinator_commit(f->gc, &p, &c, 1);
    return c.error_code;
}

/* The offset OffsetFetch answers (-1: none); *error gets the entry's error. */
static int64_t fetch(struct fixture *f, const char *group, const char *topic, int32_t partition, bool require_stable,
                     int16_t *error)
{
    struct group_offset_fetch o = {.topic = topic, .partition = partition};
    int16_t group_err = group_coordinator_fetch_offsets_stable(f->gc, group, require_stable, &o, 1);
    assert_int_equal(group_err, KAFKA_ERR_NONE);
    free(o.metadata);
    if (error)
        *error = o.error_code;
    return o.offset;
}

static int64_t fetch_plain(struct fixture *f, const char *group, const char *topic, int32_t partition)
{
    int16_t err;
    int64_t off = fetch(f, group, topic, partition, false, &err);
    assert_int_equal(err, KAFKA_ERR_NONE);
    return off;
}

/* Appends a COMMIT or ABORT marker of the producer to the group's
 * partition through the partition log's marker path (coordinator epoch 7). */
static void write_marker(struct fixture *f, const char *group, int64_t pid, int16_t epoch, bool commit)
{
    struct partition_log *log = log_manager_get(f->stores.logs, GROUP_LOG_TOPIC, partition_for(group));
    assert_non_null(log);
    int64_t offset = -1;
    assert_int_equal(partition_log_append_txn_marker(log, pid, epoch, 7, commit, 0, &offset), KAFKA_ERR_NONE);
    assert_true(offset >= 0);
    partition_log_close(log);
}

/* What the marker writer does: the marker on disk, then the coordinator. */
static void end_txn(struct fixture *f, const char *group, int64_t pid, bool commit)
{
    write_marker(f, group, pid, EPOCH, commit);
    group_coordinator_complete_txn(f->gc, partition_for(group), pid, commit);
}

/* ---- tests ---- */

static void test_pending_invisible_until_commit(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(plain_commit(f, "g1", "orders", 0, 5), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g1", PID, EPOCH, "orders", 0, 42), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g1", PID, EPOCH, "orders", 1, 17), KAFKA_ERR_NONE);

    /* Without require_stable: the last committed offset (none for p1). */
    assert_int_equal(fetch_plain(f, "g1", "orders", 0), 5);
    assert_int_equal(fetch_plain(f, "g1", "orders", 1), -1);
    int16_t err;
    assert_int_equal(fetch(f, "g1", "orders", 0, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);
    assert_int_equal(fetch(f, "g1", "orders", 1, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);
    /* A partition without a pending offset is stable. */
    assert_int_equal(fetch(f, "g1", "orders", 2, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_NONE);

    /* Fetch-all: committed offsets only, unstable ones flagged. */
    struct group_offset_fetch *all;
    size_t n;
    assert_int_equal(group_coordinator_fetch_all_offsets_stable(f->gc, "g1", true, &all, &n), KAFKA_ERR_NONE);
    assert_int_equal(n, 1);
    assert_int_equal(all[0].partition, 0);
    assert_int_equal(all[0].error_code, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);
    group_offset_fetch_free(all, n);

    /* The marker of another producer or of another partition changes nothing. */
    group_coordinator_complete_txn(f->gc, partition_for("g1"), PID + 1, true);
    group_coordinator_complete_txn(f->gc, (partition_for("g1") + 1) % PARTITIONS, PID, true);
    assert_int_equal(fetch_plain(f, "g1", "orders", 0), 5);
    assert_int_equal(fetch(f, "g1", "orders", 0, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);

    end_txn(f, "g1", PID, true);
    assert_int_equal(fetch(f, "g1", "orders", 0, true, &err), 42);
    assert_int_equal(err, KAFKA_ERR_NONE);
    assert_int_equal(fetch(f, "g1", "orders", 1, true, &err), 17);
    assert_int_equal(err, KAFKA_ERR_NONE);
    /* Completing again (a retried marker) is harmless. */
    group_coordinator_complete_txn(f->gc, partition_for("g1"), PID, false);
    assert_int_equal(fetch_plain(f, "g1", "orders", 0), 42);
}

static void test_abort_drops(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(plain_commit(f, "g2", "orders", 0, 5), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g2", PID, EPOCH, "orders", 0, 42), KAFKA_ERR_NONE);
    end_txn(f, "g2", PID, false);
    int16_t err;
    assert_int_equal(fetch(f, "g2", "orders", 0, true, &err), 5);
    assert_int_equal(err, KAFKA_ERR_NONE);
    /* Nothing left to complete: a late commit marker applies nothing. */
    group_coordinator_complete_txn(f->gc, partition_for("g2"), PID, true);
    assert_int_equal(fetch_plain(f, "g2", "orders", 0), 5);
}

static void test_later_plain_commit_wins(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(txn_commit(f, "g3", PID, EPOCH, "orders", 0, 42), KAFKA_ERR_NONE);
    assert_int_equal(plain_commit(f, "g3", "orders", 0, 50), KAFKA_ERR_NONE);
    end_txn(f, "g3", PID, true);
    assert_int_equal(fetch_plain(f, "g3", "orders", 0), 50);
    /* The reload replays the same order. */
    reopen(f);
    assert_int_equal(fetch_plain(f, "g3", "orders", 0), 50);
}

static void test_two_producers_independent(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(txn_commit(f, "g4", PID, EPOCH, "orders", 0, 10), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g4", PID + 1, EPOCH, "orders", 1, 20), KAFKA_ERR_NONE);
    /* The same producer again: replaces its pending offset. */
    assert_int_equal(txn_commit(f, "g4", PID, EPOCH, "orders", 0, 11), KAFKA_ERR_NONE);
    end_txn(f, "g4", PID + 1, false);
    int16_t err;
    assert_int_equal(fetch(f, "g4", "orders", 1, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_NONE);
    assert_int_equal(fetch(f, "g4", "orders", 0, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);
    end_txn(f, "g4", PID, true);
    assert_int_equal(fetch(f, "g4", "orders", 0, true, &err), 11);
    assert_int_equal(err, KAFKA_ERR_NONE);
}

static void test_reload_with_commit_marker(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(plain_commit(f, "g5", "orders", 0, 5), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g5", PID, EPOCH, "orders", 0, 42), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g5", PID, EPOCH, "audit", 3, 9), KAFKA_ERR_NONE);
    write_marker(f, "g5", PID, EPOCH, true);
    reopen(f);
    int16_t err;
    assert_int_equal(fetch(f, "g5", "orders", 0, true, &err), 42);
    assert_int_equal(err, KAFKA_ERR_NONE);
    assert_int_equal(fetch(f, "g5", "audit", 3, true, &err), 9);
    assert_int_equal(err, KAFKA_ERR_NONE);
    struct group_offset_fetch o = {.topic = "orders", .partition = 0};
    assert_int_equal(group_coordinator_fetch_offsets(f->gc, "g5", &o, 1), KAFKA_ERR_NONE);
    assert_string_equal(o.metadata, "txn");
    assert_int_equal(o.leader_epoch, 1);
    free(o.metadata);
}

static void test_reload_with_abort_marker(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(plain_commit(f, "g6", "orders", 0, 5), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g6", PID, EPOCH, "orders", 0, 42), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g6", PID, EPOCH, "orders", 1, 43), KAFKA_ERR_NONE);
    write_marker(f, "g6", PID, EPOCH, false);
    reopen(f);
    int16_t err;
    assert_int_equal(fetch(f, "g6", "orders", 0, true, &err), 5);
    assert_int_equal(err, KAFKA_ERR_NONE);
    assert_int_equal(fetch(f, "g6", "orders", 1, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_NONE);
}

static void test_reload_without_marker_stays_pending(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(plain_commit(f, "g7", "orders", 0, 5), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g7", PID, EPOCH, "orders", 0, 42), KAFKA_ERR_NONE);
    /* Another producer's transaction in the same partition ends before the
     * reload: its marker must not complete the first one. */
    assert_int_equal(txn_commit(f, "g7", PID + 1, EPOCH, "orders", 2, 70), KAFKA_ERR_NONE);
    write_marker(f, "g7", PID + 1, EPOCH, true);
    reopen(f);
    int16_t err;
    assert_int_equal(fetch_plain(f, "g7", "orders", 0), 5);
    assert_int_equal(fetch(f, "g7", "orders", 0, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);
    assert_int_equal(fetch(f, "g7", "orders", 2, true, &err), 70);
    assert_int_equal(err, KAFKA_ERR_NONE);
    /* Pending keeps the group from deletion. */
    assert_int_equal(group_coordinator_delete_group(f->gc, "g7"), KAFKA_ERR_NON_EMPTY_GROUP);

    end_txn(f, "g7", PID, true);
    assert_int_equal(fetch(f, "g7", "orders", 0, true, &err), 42);
    assert_int_equal(err, KAFKA_ERR_NONE);
    /* And the marker written now is what the next reload finds. */
    reopen(f);
    assert_int_equal(fetch(f, "g7", "orders", 0, true, &err), 42);
    assert_int_equal(err, KAFKA_ERR_NONE);
}

static void test_pending_only_group_survives_delete_and_expiry(void **state)
{
    struct fixture *f = *state;
    /* A group known only through a pending offset. */
    assert_int_equal(txn_commit(f, "g8", PID, EPOCH, "orders", 0, 42), KAFKA_ERR_NONE);
    assert_int_equal(group_coordinator_delete_group(f->gc, "g8"), KAFKA_ERR_NON_EMPTY_GROUP);
    /* The retention sweep drops Empty groups without offsets, not this one. */
    fake_now += 24LL * 3600 * 1000 * 30;
    group_coordinator_tick(f->gc);
    struct group_description d;
    group_coordinator_describe(f->gc, "g8", &d);
    assert_string_equal(d.state, "Empty");
    group_description_free(&d);
    end_txn(f, "g8", PID, false);
    assert_int_equal(group_coordinator_delete_group(f->gc, "g8"), KAFKA_ERR_NONE);
}

static void test_request_errors(void **state)
{
    struct fixture *f = *state;
    struct group_txn_commit_params p = {
        .group_id = "g9", .producer_id = PID, .producer_epoch = EPOCH, .generation_id = -1, .member_id = ""};
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(txn_commit_full(f, &p, "orders", 0, 1, big), KAFKA_ERR_OFFSET_METADATA_TOO_LARGE);
    /* v3 identity on a group that does not exist yet (a new Empty group). */
    p.member_id = "nobody";
    assert_int_equal(txn_commit_full(f, &p, "orders", 0, 1, NULL), KAFKA_ERR_UNKNOWN_MEMBER_ID);
    p.member_id = "";
    p.generation_id = 3;
    assert_int_equal(txn_commit_full(f, &p, "orders", 0, 1, NULL), KAFKA_ERR_ILLEGAL_GENERATION);
    p.generation_id = -1;
    p.group_id = "";
    assert_int_equal(txn_commit_full(f, &p, "orders", 0, 1, NULL), KAFKA_ERR_INVALID_GROUP_ID);
    p.group_id = "g9";
    p.producer_id = -1;
    assert_int_equal(txn_commit_full(f, &p, "orders", 0, 1, NULL), KAFKA_ERR_INVALID_PRODUCER_ID_MAPPING);
    /* None of the failures left a group or an offset behind. */
    struct group_description d;
    group_coordinator_describe(f->gc, "g9", &d);
    assert_string_equal(d.state, "Dead");
    group_description_free(&d);

    /* An entry that arrives with an error is answered with it, untouched. */
    p.producer_id = PID;
    struct group_offset_commit c[2] = {
        {.topic = "gone",
         .partition = 0,
         .offset = 1,
         .leader_epoch = -1,
         .error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION},
        {.topic = "orders", .partition = 0, .offset = 8, .leader_epoch = -1},
    };
    group_coordinator_txn_commit(f->gc, &p, c, 2);
    assert_int_equal(c[0].error_code, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(c[1].error_code, KAFKA_ERR_NONE);

    /* A newer epoch of the producer fences the older one (the log's check). */
    assert_int_equal(txn_commit(f, "g9", PID, EPOCH + 1, "orders", 1, 9), KAFKA_ERR_NONE);
    assert_int_equal(txn_commit(f, "g9", PID, EPOCH, "orders", 1, 10), KAFKA_ERR_INVALID_PRODUCER_EPOCH);
}

struct join_box {
    bool done;
    int16_t error;
    int32_t generation;
    char member_id[256];
};

static void join_cb(void *arg, const struct group_join_result *r)
{
    struct join_box *b = arg;
    b->done = true;
    b->error = r->error_code;
    b->generation = r->generation_id;
    snprintf(b->member_id, sizeof b->member_id, "%s", r->member_id ? r->member_id : "");
}

static void test_member_checks(void **state)
{
    struct fixture *f = *state;
    /* One static member; the join phase ends at the next tick. */
    const struct group_protocol proto[] = {{"range", (const uint8_t *)"sub", 3}};
    struct group_join_params jp = {
        .group_id = "g10",
        .member_id = "",
        .group_instance_id = "instance-1",
        .client_id = "c",
        .client_host = "/127.0.0.1",
        .protocol_type = "consumer",
        .protocols = proto,
        .protocol_count = 1,
        .session_timeout_ms = 10000,
        .rebalance_timeout_ms = 30000,
    };
    struct join_box box = {0};
    group_coordinator_join(f->gc, &jp, join_cb, &box);
    fake_now += 10;
    group_coordinator_tick(f->gc);
    assert_true(box.done);
    assert_int_equal(box.error, KAFKA_ERR_NONE);
    assert_int_equal(box.generation, 1);

    struct group_txn_commit_params p = {
        .group_id = "g10",
        .producer_id = PID,
        .producer_epoch = EPOCH,
        .generation_id = 1,
        .member_id = box.member_id,
        .group_instance_id = "instance-1",
    };
    /* Unlike OffsetCommit, no REBALANCE_IN_PROGRESS while the group
     * completes its rebalance (the member has its generation). */
    assert_int_equal(txn_commit_full(f, &p, "orders", 0, 3, NULL), KAFKA_ERR_NONE);
    p.generation_id = 2;
    assert_int_equal(txn_commit_full(f, &p, "orders", 0, 3, NULL), KAFKA_ERR_ILLEGAL_GENERATION);
    p.generation_id = 1;
    p.member_id = "someone-else";
    assert_int_equal(txn_commit_full(f, &p, "orders", 0, 3, NULL), KAFKA_ERR_FENCED_INSTANCE_ID);
    p.group_instance_id = NULL;
    assert_int_equal(txn_commit_full(f, &p, "orders", 0, 3, NULL), KAFKA_ERR_UNKNOWN_MEMBER_ID);
    /* v0-2 carry no identity: accepted whatever the group's state. */
    p.member_id = "";
    p.generation_id = -1;
    assert_int_equal(txn_commit_full(f, &p, "orders", 1, 4, NULL), KAFKA_ERR_NONE);
    /* A group with members is not deletable anyway. */
    assert_int_equal(group_coordinator_delete_group(f->gc, "g10"), KAFKA_ERR_NON_EMPTY_GROUP);
}

static void test_loading_and_not_coordinator(void **state)
{
    struct fixture *f = *state;
    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.start_loading = true;
    struct group_coordinator *loading;
    assert_int_equal(group_coordinator_create(&o, &loading), 0);
    struct group_txn_commit_params p = {
        .group_id = "g11", .producer_id = PID, .producer_epoch = EPOCH, .generation_id = -1, .member_id = ""};
    struct group_offset_commit c = {.topic = "orders", .partition = 0, .offset = 1, .leader_epoch = -1};
    group_coordinator_txn_commit(loading, &p, &c, 1);
    assert_int_equal(c.error_code, KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    group_coordinator_destroy(loading);

    /* The store refuses a partition this broker holds no replica of. */
    const struct group_store_ops *ops = group_log_store_ops();
    struct group_offset_record r = {.topic = "orders",
                                    .partition = 0,
                                    .offset = 1,
                                    .leader_epoch = -1,
                                    .commit_timestamp = 1,
                                    .expire_timestamp = -1};
    assert_int_equal(ops->store_txn_offsets(f->gl, "g11", PID, EPOCH, &r, 1), KAFKA_ERR_NONE);
    close_all(f);
    /* Reopen as another node: the partitions stay replicated on node 1. */
    char err[256] = "";
    char other[160];
    snprintf(other, sizeof other, "%s/other", f->stores.dir);
    unit_fixture_open_logs_in(&f->stores, other);
    struct group_log_options gopts = {
        .logs = f->stores.logs, .metadata = f->stores.metadata, .num_partitions = PARTITIONS, .node_id = 2};
    if (group_log_open(&gopts, &f->gl, err, sizeof err) != 0)
        fail_msg("group log: %s", err);
    assert_int_equal(ops->store_txn_offsets(f->gl, "g11", PID, EPOCH, &r, 1), KAFKA_ERR_NOT_COORDINATOR);
    group_log_close(f->gl);
    f->gl = NULL;
    unit_fixture_close(&f->stores);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pending_invisible_until_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_drops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_later_plain_commit_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_producers_independent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_with_commit_marker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_with_abort_marker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_without_marker_stays_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_only_group_survives_delete_and_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_member_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loading_and_not_coordinator, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
