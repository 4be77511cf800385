/* The group coordinator loaded and unloaded per __consumer_offsets
 * partition by the coordinator runtime, over a real group log: unloading
 * one partition leaves the others alone and answers its parked JoinGroup,
 * loading it again brings its offsets back from the log, a partition
 * answers LOAD_IN_PROGRESS while it loads, a load overtaken by an unload
 * leaves nothing behind, a transaction end arriving mid-load is not lost,
 * and a failed load answers NOT_COORDINATOR. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coordinator/coordinator_runtime.h"
#include "group/group_coordinator.h"
#include "group/group_log.h"
#include "group_test_driver.h"
#include "protocol/generated/errors.h"
#include "support/shard_gate.h"
#include "support/unit_fixture.h"

#define PARTITIONS 4
#define FIRST_EPOCH 5

/* Only the test's thread touches it (the gate is shared with the loader). */
struct fixture {
    struct unit_fixture stores;
    struct group_log *gl;
    struct coordinator_shards *shards;
    struct group_coordinator *gc;
    struct coordinator_runtime *rt;
    struct shard_gate gate;
    struct shard_key_pair groups; /* two groups in different partitions */
};
_Static_assert(offsetof(struct fixture, stores) == 0, "unit_fixture_setup needs the stores first");

static void wait_idle(struct fixture *f)
{
    shard_runtime_idle(f->rt);
}

static void lead(struct fixture *f, int32_t partition, bool leader, int32_t epoch)
{
    coordinator_runtime_on_leadership(f->rt, GROUP_LOG_TOPIC, partition, leader, epoch);
}

static int setup(void **state)
{
    if (unit_fixture_setup(state, sizeof(struct fixture), "cairn-group-shards") != 0)
        return -1;
    struct fixture *f = *state;
    char err[256] = "";
    unit_fixture_open(&f->stores);
    struct group_log_options gopts = {
        .logs = f->stores.logs,
        .metadata = f->stores.metadata,
        .num_partitions = PARTITIONS,
        .replication_factor = 1,
        .segment_bytes = 1 << 20,
        .node_id = 1,
        .load_buffer_size = 512,
    };
    if (group_log_open(&gopts, &f->gl, err, sizeof err) != 0)
        fail_msg("group log: %s", err);
    f->shards = coordinator_shards_create(group_log_partition_count(f->gl));
    assert_non_null(f->shards);
    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.initial_rebalance_delay_ms = 3000;
    o.ops = group_log_store_ops();
    o.store = f->gl;
    o.offsets_topic_partitions = group_log_partition_count(f->gl);
    o.shards = f->shards;
    assert_int_equal(group_coordinator_create(&o, &f->gc), 0);
    shard_gate_init(&f->gate, group_coordinator_shard_ops(), f->gc);
    assert_int_equal(coordinator_runtime_create(&f->rt), 0);
    assert_int_equal(coordinator_runtime_register(f->rt, GROUP_LOG_TOPIC, f->shards, &shard_gate_ops, &f->gate), 0);
    shard_runtime_lead_all(f->rt, GROUP_LOG_TOPIC, PARTITIONS, FIRST_EPOCH);
    shard_key_pair_pick(&f->groups, "group", PARTITIONS);
    fake_now = 1000000;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    shard_gate_set_closed(&f->gate, false);
    coordinator_runtime_destroy(f->rt);
    group_coordinator_destroy(f->gc);
    shard_gate_destroy(&f->gate);
    coordinator_shards_free(f->shards);
    group_log_close(f->gl);
    unit_fixture_close(&f->stores);
    return unit_fixture_teardown(f);
}

/* Commits offset and offset + 1 for partitions 0 and 1 of topic "t". */
static int16_t commit(struct fixture *f, const char *group, int64_t offset)
{
    struct group_offset_commit offsets[2] = {
        {.topic = "t", .partition = 0, .offset = offset, .leader_epoch = 3, .metadata = "m0", .metadata_len = 2},
        {.topic = "t", .partition = 1, .offset = offset + 1, .leader_epoch = -1},
    };
    struct group_commit_params p = {.group_id = group, .generation_id = -1, .retention_ms = -1};
    group_coordinator_commit(f->gc, &p, offsets, 2);
    assert_int_equal(offsets[1].error_code, offsets[0].error_code);
    return offsets[0].error_code;
}

/* The group-level answer; with NONE, checks the offsets commit() wrote. */
static int16_t fetch(struct fixture *f, const char *group, int64_t offset)
{
    struct group_offset_fetch o[2] = {{.topic = "t", .partition = 0}, {.topic = "t", .partition = 1}};
    int16_t err = group_coordinator_fetch_offsets(f->gc, group, o, 2);
    if (err == KAFKA_ERR_NONE) {
        assert_int_equal(o[0].offset, offset);
        assert_int_equal(o[0].leader_epoch, 3);
        assert_int_equal(o[0].metadata_len, 2);
        assert_memory_equal(o[0].metadata, "m0", 2);
        assert_int_equal(o[1].offset, offset + 1);
        assert_int_equal(o[1].leader_epoch, -1);
    }
    free(o[0].metadata);
    free(o[1].metadata);
    return err;
}

static size_t listed(struct fixture *f, const char *group)
{
    struct group_listing *l = NULL;
    size_t n = 0, found = 0;
    assert_int_equal(group_coordinator_list(f->gc, NULL, 0, &l, &n), KAFKA_ERR_NONE);
    for (size_t i = 0; i < n; i++)
        found += strcmp(l[i].group_id, group) == 0;
    group_listing_free(l, n);
    return found;
}

static void test_unload_then_load_offsets(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(commit(f, f->groups.a, 100), KAFKA_ERR_NONE);
    assert_int_equal(commit(f, f->groups.b, 200), KAFKA_ERR_NONE);
    assert_int_equal(coordinator_shards_epoch(f->shards, f->groups.part_a), FIRST_EPOCH);

    lead(f, f->groups.part_a, false, -1);
    wait_idle(f);
    assert_int_equal(coordinator_shards_state(f->shards, f->groups.part_a), COORDINATOR_SHARD_NOT_LEADER);
    assert_int_equal(coordinator_shards_epoch(f->shards, f->groups.part_a), -1);
    assert_int_equal(fetch(f, f->groups.a, 100), KAFKA_ERR_NOT_COORDINATOR);
    assert_int_equal(commit(f, f->groups.a, 150), KAFKA_ERR_NOT_COORDINATOR);
    assert_int_equal(group_coordinator_ownership(f->gc, f->groups.a), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal(listed(f, f->groups.a), 0);
    /* The other partition's groups are untouched. */
    assert_int_equal(fetch(f, f->groups.b, 200), KAFKA_ERR_NONE);
    assert_int_equal(commit(f, f->groups.b, 300), KAFKA_ERR_NONE);
    assert_int_equal(listed(f, f->groups.b), 1);

    lead(f, f->groups.part_a, true, FIRST_EPOCH + 1);
    wait_idle(f);
    assert_int_equal(coordinator_shards_epoch(f->shards, f->groups.part_a), FIRST_EPOCH + 1);
    assert_int_equal(coordinator_shards_epoch(f->shards, f->groups.part_b), FIRST_EPOCH);
    assert_int_equal(fetch(f, f->groups.a, 100), KAFKA_ERR_NONE); /* back from the log */
    assert_int_equal(fetch(f, f->groups.b, 300), KAFKA_ERR_NONE);
    assert_int_equal(group_coordinator_ownership(f->gc, f->groups.a), KAFKA_ERR_NONE);
    assert_int_equal(listed(f, f->groups.a), 1);
}

static void join_group(struct fixture *f, const char *group, const char *member, struct join_box *box)
{
    memset(box, 0, sizeof *box);
    struct group_join_params p = {
        .group_id = group,
        .member_id = member,
        .client_id = "c",
        .client_host = "/127.0.0.1",
        .protocol_type = "consumer",
        .protocols = range_proto,
        .protocol_count = 1,
        .session_timeout_ms = 10000,
        .rebalance_timeout_ms = 30000,
        .require_known_member_id = true,
    };
    group_coordinator_join(f->gc, &p, join_cb, box);
}

static void test_unload_answers_parked_join(void **state)
{
    struct fixture *f = *state;
    struct join_box a, b;
    join_group(f, f->groups.a, "", &a);
    assert_true(a.done);
    assert_int_equal(a.error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    char member[256];
    snprintf(member, sizeof member, "%s", a.member_id);
    join_group(f, f->groups.a, member, &a);
    assert_false(a.done); /* parked for the initial rebalance delay */
    join_group(f, f->groups.b, "", &b);
    snprintf(member, sizeof member, "%s", b.member_id);
    join_group(f, f->groups.b, member, &b);
    assert_false(b.done);

    lead(f, f->groups.part_a, false, -1);
    wait_idle(f);
    assert_true(a.done);
    assert_int_equal(a.error, KAFKA_ERR_NOT_COORDINATOR);
    assert_false(b.done); /* the other partition's join still waits */
    join_group(f, f->groups.a, "", &a);
    assert_true(a.done);
    assert_int_equal(a.error, KAFKA_ERR_NOT_COORDINATOR);

    fake_now += 3001;
    group_coordinator_tick(f->gc);
    assert_true(b.done);
    assert_int_equal(b.error, KAFKA_ERR_NONE);
}

static void test_load_in_progress(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(commit(f, f->groups.a, 100), KAFKA_ERR_NONE);
    shard_gate_hold_reload(&f->gate, f->rt, GROUP_LOG_TOPIC, f->groups.part_a, FIRST_EPOCH + 2);

    assert_int_equal(coordinator_shards_state(f->shards, f->groups.part_a), COORDINATOR_SHARD_LOADING);
    assert_int_equal(coordinator_shards_epoch(f->shards, f->groups.part_a), FIRST_EPOCH + 2);
    assert_int_equal(fetch(f, f->groups.a, 100), KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    assert_int_equal(commit(f, f->groups.a, 100), KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    struct join_box a;
    join_group(f, f->groups.a, "", &a);
    assert_true(a.done);
    assert_int_equal(a.error, KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    struct group_listing *l = NULL;
    size_t n = 0;
    assert_int_equal(group_coordinator_list(f->gc, NULL, 0, &l, &n), KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    group_listing_free(l, n);
    assert_int_equal(commit(f, f->groups.b, 7), KAFKA_ERR_NONE); /* served meanwhile */

    shard_gate_set_closed(&f->gate, false);
    wait_idle(f);
    assert_int_equal(fetch(f, f->groups.a, 100), KAFKA_ERR_NONE);
}

/* Leadership lost while the load runs: nothing of it stays in memory. */
static void test_load_overtaken_by_unload(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(commit(f, f->groups.a, 100), KAFKA_ERR_NONE);
    shard_gate_hold_reload(&f->gate, f->rt, GROUP_LOG_TOPIC, f->groups.part_a, FIRST_EPOCH + 3);
    lead(f, f->groups.part_a, false, -1);
    assert_int_equal(fetch(f, f->groups.a, 100), KAFKA_ERR_NOT_COORDINATOR);
    shard_gate_set_closed(&f->gate, false);
    wait_idle(f);
    assert_int_equal(coordinator_shards_state(f->shards, f->groups.part_a), COORDINATOR_SHARD_NOT_LEADER);
    assert_int_equal(listed(f, f->groups.a), 0);

    /* A repeated notice for the current term does not reload. */
    lead(f, f->groups.part_a, true, FIRST_EPOCH + 4);
    wait_idle(f);
    int entered = shard_gate_entered(&f->gate);
    lead(f, f->groups.part_a, true, FIRST_EPOCH + 4);
    wait_idle(f);
    assert_int_equal(shard_gate_entered(&f->gate), entered);
    assert_int_equal(fetch(f, f->groups.a, 100), KAFKA_ERR_NONE);
}

/* A transaction's end that reaches a partition while it loads, with its
 * marker past what the load reads (here: no marker in the log at all),
 * still commits the pending offset once the load is done. */
static void test_txn_end_during_load(void **state)
{
    struct fixture *f = *state;
    struct group_offset_commit c = {.topic = "t", .partition = 0, .offset = 42, .leader_epoch = -1};
    struct group_txn_commit_params p = {
        .group_id = f->groups.a, .producer_id = 7000, .producer_epoch = 0, .generation_id = -1, .member_id = ""};
    group_coordinator_txn_commit(f->gc, &p, &c, 1);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
    struct group_offset_fetch o = {.topic = "t", .partition = 0};

    shard_gate_hold_reload(&f->gate, f->rt, GROUP_LOG_TOPIC, f->groups.part_a, FIRST_EPOCH + 1);
    group_coordinator_complete_txn(f->gc, f->groups.part_a, 7000, true);
    shard_gate_set_closed(&f->gate, false);
    wait_idle(f);
    assert_int_equal(group_coordinator_fetch_offsets_stable(f->gc, f->groups.a, true, &o, 1), KAFKA_ERR_NONE);
    assert_int_equal(o.error_code, KAFKA_ERR_NONE);
    assert_int_equal(o.offset, 42);
    free(o.metadata);

    /* Kept for that load only: a later reload finds the offset pending, as
     * the log says. */
    lead(f, f->groups.part_a, true, FIRST_EPOCH + 2);
    wait_idle(f);
    assert_int_equal(group_coordinator_fetch_offsets_stable(f->gc, f->groups.a, true, &o, 1), KAFKA_ERR_NONE);
    assert_int_equal(o.error_code, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);
    free(o.metadata);
}

static void test_failed_load(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(commit(f, f->groups.a, 100), KAFKA_ERR_NONE);
    lead(f, f->groups.part_a, false, -1);
    shard_gate_fail_next(&f->gate);
    lead(f, f->groups.part_a, true, FIRST_EPOCH + 1);
    char err[256] = "";
    assert_int_equal(coordinator_runtime_wait_idle(f->rt, err, sizeof err), -1);
    assert_non_null(strstr(err, "injected load failure"));
    assert_int_equal(coordinator_shards_state(f->shards, f->groups.part_a), COORDINATOR_SHARD_FAILED);
    assert_int_equal(fetch(f, f->groups.a, 100), KAFKA_ERR_NOT_COORDINATOR);
    assert_int_equal(coordinator_runtime_wait_idle(f->rt, err, sizeof err), 0); /* reported once */
    lead(f, f->groups.part_a, true, FIRST_EPOCH + 2);
    wait_idle(f);
    assert_int_equal(fetch(f, f->groups.a, 100), KAFKA_ERR_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unload_then_load_offsets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unload_answers_parked_join, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_in_progress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_overtaken_by_unload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txn_end_during_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_load, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
