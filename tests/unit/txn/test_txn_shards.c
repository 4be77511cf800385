/* The transaction coordinator loaded and unloaded per __transaction_state
 * partition by the coordinator runtime, over a real transaction log:
 * unloading one partition forgets its ids and leaves the others alone,
 * loading it again brings them back from the log, a partition answers
 * LOAD_IN_PROGRESS while it loads, and markers carry the coordinator epoch
 * of their id's partition. */
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
#include "protocol/generated/errors.h"
#include "support/shard_gate.h"
#include "support/unit_fixture.h"
#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"

#define PARTITIONS 4
#define FIRST_EPOCH 5

/* Shared by the test's thread and (for the gate) the loader thread. */
struct fixture {
    struct unit_fixture stores;
    struct txn_log *tl;
    struct coordinator_shards *shards;
    struct txn_coordinator *c;
    struct coordinator_runtime *rt;
    struct shard_gate gate;
    int64_t now;
    int64_t next_id;
    bool markers_fail;
    int marker_calls;
    int32_t last_coordinator_epoch;
    struct shard_key_pair ids; /* two transactional ids in different partitions */
};
_Static_assert(offsetof(struct fixture, stores) == 0, "unit_fixture_setup needs the stores first");

static int16_t record_markers(void *ctx, int64_t producer_id, int16_t producer_epoch, int32_t coordinator_epoch,
                              bool commit, struct txn_marker_partition *parts, size_t count)
{
    (void)producer_id, (void)producer_epoch, (void)commit;
    struct fixture *f = ctx;
    if (f->markers_fail) {
        for (size_t i = 0; i < count; i++)
            parts[i].error_code = KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
        return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    f->marker_calls++;
    f->last_coordinator_epoch = coordinator_epoch;
    return KAFKA_ERR_NONE;
}

static const struct txn_marker_ops recorder_ops = {.write_markers = record_markers};

static int64_t fake_now(void *ctx)
{
    return ((struct fixture *)ctx)->now;
}

static int16_t fake_allocate(void *ctx, int64_t *id)
{
    *id = ((struct fixture *)ctx)->next_id++;
    return KAFKA_ERR_NONE;
}

static void wait_idle(struct fixture *f)
{
    shard_runtime_idle(f->rt);
}

static void lead(struct fixture *f, int32_t partition, bool leader, int32_t epoch)
{
    coordinator_runtime_on_leadership(f->rt, TXN_LOG_TOPIC, partition, leader, epoch);
}

static int setup(void **state)
{
    if (unit_fixture_setup(state, sizeof(struct fixture), "cairn-txn-shards") != 0)
        return -1;
    struct fixture *f = *state;
    f->now = 5000000;
    f->next_id = 1000;
    char err[256] = "";
    unit_fixture_open(&f->stores);
    struct txn_log_options lopts = {
        .logs = f->stores.logs,
        .metadata = f->stores.metadata,
        .num_partitions = PARTITIONS,
        .replication_factor = 1,
        .segment_bytes = 1 << 20,
        .node_id = 1,
        .load_buffer_size = 512,
    };
    if (txn_log_open(&lopts, &f->tl, err, sizeof err) != 0)
        fail_msg("txn log: %s", err);
    f->shards = coordinator_shards_create(txn_log_partition_count(f->tl));
    assert_non_null(f->shards);
    struct txn_coordinator_options copts = {
        .log = f->tl,
        .markers = &recorder_ops,
        .markers_ctx = f,
        .allocate_producer_id = fake_allocate,
        .allocate_ctx = f,
        .now_ms = fake_now,
        .clock_ctx = f,
        .shards = f->shards,
    };
    if (txn_coordinator_create(&copts, &f->c, err, sizeof err) != 0)
        fail_msg("coordinator: %s", err);
    shard_gate_init(&f->gate, txn_coordinator_shard_ops(), f->c);
    assert_int_equal(coordinator_runtime_create(&f->rt), 0);
    assert_int_equal(coordinator_runtime_register(f->rt, TXN_LOG_TOPIC, f->shards, &shard_gate_ops, &f->gate), 0);
    shard_runtime_lead_all(f->rt, TXN_LOG_TOPIC, PARTITIONS, FIRST_EPOCH);
    shard_key_pair_pick(&f->ids, "txn", PARTITIONS);
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    shard_gate_set_closed(&f->gate, false);
    coordinator_runtime_destroy(f->rt);
    txn_coordinator_destroy(f->c);
    shard_gate_destroy(&f->gate);
    coordinator_shards_free(f->shards);
    txn_log_close(f->tl);
    unit_fixture_close(&f->stores);
    return unit_fixture_teardown(f);
}

struct seen {
    enum txn_state state;
    int64_t producer_id;
    int16_t epoch;
    size_t parts;
};

static void capture(void *ctx, const struct txn_view *v)
{
    struct seen *s = ctx;
    *s = (struct seen){
        .state = v->state, .producer_id = v->producer_id, .epoch = v->producer_epoch, .parts = v->partition_count};
}

static int16_t describe(struct fixture *f, const char *id, struct seen *s)
{
    memset(s, 0, sizeof *s);
    return txn_coordinator_describe(f->c, id, capture, s);
}

static int16_t init(struct fixture *f, const char *id, int64_t *pid, int16_t *epoch)
{
    return txn_coordinator_init_producer(f->c, id, 60000, -1, -1, pid, epoch);
}

static const struct txn_topic_partition two[] = {{"a", 0}, {"b", 1}};

/* Opens a transaction on two partitions and ends it with commit. */
static void commit_txn(struct fixture *f, const char *id, int64_t pid, int16_t epoch)
{
    assert_int_equal(txn_coordinator_add_partitions(f->c, id, pid, epoch, two, 2), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_end(f->c, id, pid, epoch, true), KAFKA_ERR_NONE);
}

static void test_unload_then_load_ids(void **state)
{
    struct fixture *f = *state;
    int64_t pid_a, pid_b;
    int16_t epoch_a, epoch_b;
    assert_int_equal(init(f, f->ids.a, &pid_a, &epoch_a), KAFKA_ERR_NONE);
    assert_int_equal(init(f, f->ids.b, &pid_b, &epoch_b), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_add_partitions(f->c, f->ids.a, pid_a, epoch_a, two, 2), KAFKA_ERR_NONE);

    lead(f, f->ids.part_a, false, -1);
    wait_idle(f);
    struct seen s;
    assert_int_equal(describe(f, f->ids.a, &s), KAFKA_ERR_NOT_COORDINATOR);
    int64_t pid;
    int16_t epoch;
    assert_int_equal(init(f, f->ids.a, &pid, &epoch), KAFKA_ERR_NOT_COORDINATOR);
    assert_int_equal(txn_coordinator_ownership(f->c, f->ids.a), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal(txn_coordinator_epoch_for(f->c, f->ids.a), -1);
    /* The other partition's ids are untouched. */
    assert_int_equal(describe(f, f->ids.b, &s), KAFKA_ERR_NONE);
    assert_int_equal(s.producer_id, pid_b);
    assert_int_equal(txn_coordinator_add_partitions(f->c, f->ids.b, pid_b, epoch_b, two, 2), KAFKA_ERR_NONE);

    lead(f, f->ids.part_a, true, FIRST_EPOCH + 1);
    wait_idle(f);
    assert_int_equal(txn_coordinator_epoch_for(f->c, f->ids.a), FIRST_EPOCH + 1);
    assert_int_equal(txn_coordinator_epoch_for(f->c, f->ids.b), FIRST_EPOCH);
    assert_int_equal(describe(f, f->ids.a, &s), KAFKA_ERR_NONE); /* back from the log */
    assert_int_equal(s.state, TXN_STATE_ONGOING);
    assert_int_equal(s.producer_id, pid_a);
    assert_int_equal(s.epoch, epoch_a);
    assert_int_equal(s.parts, 2);
    assert_int_equal(txn_coordinator_ownership(f->c, f->ids.a), KAFKA_ERR_NONE);
}

static void test_markers_carry_partition_epoch(void **state)
{
    struct fixture *f = *state;
    int64_t pid_a, pid_b;
    int16_t epoch_a, epoch_b;
    assert_int_equal(init(f, f->ids.a, &pid_a, &epoch_a), KAFKA_ERR_NONE);
    assert_int_equal(init(f, f->ids.b, &pid_b, &epoch_b), KAFKA_ERR_NONE);
    commit_txn(f, f->ids.a, pid_a, epoch_a);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(f->last_coordinator_epoch, FIRST_EPOCH);

    /* A transaction left in PrepareCommit completes after a reload, its
     * markers under the new epoch. */
    f->markers_fail = true;
    commit_txn(f, f->ids.a, pid_a, epoch_a);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 0);
    lead(f, f->ids.part_a, false, -1);
    wait_idle(f);
    f->markers_fail = false;
    int calls = f->marker_calls;
    assert_int_equal(txn_coordinator_complete_pending(f->c), 0); /* its id is gone from memory */
    assert_int_equal(f->marker_calls, calls);
    lead(f, f->ids.part_a, true, FIRST_EPOCH + 4);
    wait_idle(f);
    struct seen s;
    assert_int_equal(describe(f, f->ids.a, &s), KAFKA_ERR_NONE);
    assert_int_equal(s.state, TXN_STATE_PREPARE_COMMIT);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(f->last_coordinator_epoch, FIRST_EPOCH + 4);
    assert_int_equal(describe(f, f->ids.a, &s), KAFKA_ERR_NONE);
    assert_int_equal(s.state, TXN_STATE_COMPLETE_COMMIT);

    commit_txn(f, f->ids.b, pid_b, epoch_b);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(f->last_coordinator_epoch, FIRST_EPOCH);
}

/* Between losing leadership and the unload, a prepared transaction of the
 * partition gets no markers (the loader is held busy with another load). */
static void test_no_markers_once_not_leader(void **state)
{
    struct fixture *f = *state;
    int64_t pid_a;
    int16_t epoch_a;
    assert_int_equal(init(f, f->ids.a, &pid_a, &epoch_a), KAFKA_ERR_NONE);
    commit_txn(f, f->ids.a, pid_a, epoch_a);
    shard_gate_hold_reload(&f->gate, f->rt, TXN_LOG_TOPIC, f->ids.part_b, FIRST_EPOCH + 1);
    lead(f, f->ids.part_a, false, -1);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 0);
    assert_int_equal(f->marker_calls, 0);
    shard_gate_set_closed(&f->gate, false);
    wait_idle(f);
    struct seen s;
    assert_int_equal(describe(f, f->ids.a, &s), KAFKA_ERR_NOT_COORDINATOR);
}

static void test_load_in_progress(void **state)
{
    struct fixture *f = *state;
    int64_t pid_a, pid;
    int16_t epoch_a, epoch;
    assert_int_equal(init(f, f->ids.a, &pid_a, &epoch_a), KAFKA_ERR_NONE);
    shard_gate_hold_reload(&f->gate, f->rt, TXN_LOG_TOPIC, f->ids.part_a, FIRST_EPOCH + 2);

    assert_int_equal(txn_coordinator_epoch_for(f->c, f->ids.a), FIRST_EPOCH + 2);
    assert_int_equal(init(f, f->ids.a, &pid, &epoch), KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    struct seen s;
    assert_int_equal(describe(f, f->ids.a, &s), KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    assert_int_equal(txn_coordinator_ownership(f->c, f->ids.a), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal(txn_coordinator_list(f->c, capture, &s), KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    assert_int_equal(init(f, f->ids.b, &pid, &epoch), KAFKA_ERR_NONE); /* served meanwhile */

    shard_gate_set_closed(&f->gate, false);
    wait_idle(f);
    assert_int_equal(describe(f, f->ids.a, &s), KAFKA_ERR_NONE);
    assert_int_equal(s.producer_id, pid_a);
    assert_int_equal(s.epoch, epoch_a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unload_then_load_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_markers_carry_partition_epoch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_markers_once_not_leader, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_in_progress, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
