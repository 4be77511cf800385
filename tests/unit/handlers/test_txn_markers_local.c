/* The in-process txn_marker_ops over a log manager: markers land on the
 * partitions named, a missing partition counts as done, a retry writes
 * nothing, a stale epoch is reported per partition, and fetches parked on
 * the partition wake. Produce's translation of the coordinator's
 * verification answers (KIP-890 part 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/purgatory.h"
#include "handlers/produce_verify.h"
#include "handlers/txn_markers_local.h"
#include "log/log_manager.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/clock.h"

struct fixture {
    char root[64];
    struct log_manager *logs;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    snprintf(f->root, sizeof f->root, "/tmp/cairn-txn-markers-XXXXXX");
    if (!mkdtemp(f->root))
        return -1;
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = false;
    const char *dirs[] = {f->root};
    char err[256];
    if (log_manager_open(dirs, 1, &defaults, &mcfg, &f->logs, err, sizeof err) != 0)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    log_manager_close(f->logs, true);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->root);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", f->root);
    free(f);
    return 0;
}

static struct partition_log *create(struct fixture *f, const char *topic, int32_t partition)
{
    struct partition_log *log;
    char err[256];
    assert_int_equal(log_manager_create(f->logs, topic, partition, NULL, NULL, &log, err, sizeof err), KAFKA_ERR_NONE);
    return log;
}

static void produce_txn(struct partition_log *log, int64_t pid, int16_t epoch, int32_t seq)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1000);
    b.producer_id = pid;
    b.producer_epoch = epoch;
    b.base_sequence = seq;
    b.attributes = RECORD_BATCH_TRANSACTIONAL_BIT;
    record_batch_builder_add(&b, 1000, NULL, -1, "v", 1, NULL, 0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
    free(batch);
}

struct wait_op {
    struct delayed_op op;
    struct partition_log *log;
    int64_t want_lso;
    atomic_int completed_early;
};

static bool wait_try_complete(struct delayed_op *op, bool expired)
{
    struct wait_op *w = (struct wait_op *)op;
    if (expired)
        return true;
    if (partition_log_last_stable_offset(w->log) < w->want_lso)
        return false;
    atomic_store(&w->completed_early, 1);
    return true;
}

static void wait_free(struct delayed_op *op)
{
    (void)op; /* owned by the test */
}

static void test_write_markers(void **state)
{
    struct fixture *f = *state;
    struct partition_log *p0 = create(f, "orders", 0);
    struct partition_log *p1 = create(f, "orders", 1);
    produce_txn(p0, 5, 1, 0);
    produce_txn(p1, 5, 1, 0);
    produce_txn(p1, 6, 0, 0);
    assert_int_equal(partition_log_last_stable_offset(p0), 0);

    /* A fetch parked on p0 until its LSO reaches 2. */
    struct purgatory *purg;
    assert_int_equal(purgatory_create("fetch", &purg), 0);
    struct txn_markers_local local = {.logs = f->logs, .fetch_purgatory = purg};
    struct wait_op *w = calloc(1, sizeof *w);
    w->log = p0;
    w->want_lso = 2;
    w->op.try_complete = wait_try_complete;
    w->op.free_fn = wait_free;
    w->op.deadline_mono_ms = clock_mono_ms() + 60000;
    assert_int_equal(delayed_op_watch(&w->op, (uintptr_t)p0), 0);
    purgatory_add(purg, &w->op);
    assert_int_equal(purgatory_waiting(purg), 1);

    const struct txn_marker_ops *ops = txn_markers_local_ops();
    struct txn_marker_partition parts[] = {
        {"orders", 0, -1},
        {"orders", 1, -1},
        {"deleted-topic", 0, -1},
    };
    assert_int_equal(ops->write_markers(&local, 5, 1, 7, true, parts, 3), KAFKA_ERR_NONE);
    assert_int_equal(parts[0].error_code, KAFKA_ERR_NONE);
    assert_int_equal(parts[1].error_code, KAFKA_ERR_NONE);
    assert_int_equal(parts[2].error_code, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(partition_log_end_offset(p0), 2);
    assert_int_equal(partition_log_last_stable_offset(p0), 2);
    /* Producer 6 still holds p1 at offset 1. */
    assert_int_equal(partition_log_end_offset(p1), 3);
    assert_int_equal(partition_log_last_stable_offset(p1), 1);
    assert_int_equal(purgatory_waiting(purg), 0);
    assert_int_equal(atomic_load(&w->completed_early), 1);

    /* Retry: nothing written. */
    assert_int_equal(ops->write_markers(&local, 5, 1, 7, true, parts, 2), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_end_offset(p0), 2);
    assert_int_equal(partition_log_end_offset(p1), 3);

    /* A stale producer epoch fails that partition only. */
    produce_txn(p0, 5, 2, 0);
    struct txn_marker_partition one[] = {{"orders", 0, -1}, {"orders", 1, -1}};
    assert_int_equal(ops->write_markers(&local, 6, 0, 7, false, one + 1, 1), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_last_stable_offset(p1), 4);
    assert_int_equal(ops->write_markers(&local, 5, 1, 7, false, one, 2), KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(one[0].error_code, KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(one[1].error_code, KAFKA_ERR_NONE);
    assert_int_equal(partition_log_last_stable_offset(p0), 2);

    purgatory_destroy(purg);
    free(w);
    partition_log_close(p0);
    partition_log_close(p1);
}

/* Kafka's ReplicaManager: TRANSACTION_ABORTABLE only from Produce v11;
 * a coordinator that cannot answer now is the retriable NOT_ENOUGH_REPLICAS. */
static void test_produce_verify_errors(void **state)
{
    (void)state;
    assert_int_equal(produce_verify_error(KAFKA_ERR_INVALID_TXN_STATE, 10), KAFKA_ERR_INVALID_TXN_STATE);
    assert_int_equal(produce_verify_error(KAFKA_ERR_INVALID_TXN_STATE, 11), KAFKA_ERR_TRANSACTION_ABORTABLE);
    assert_int_equal(produce_verify_error(KAFKA_ERR_TRANSACTION_ABORTABLE, 3), KAFKA_ERR_INVALID_TXN_STATE);
    assert_int_equal(produce_verify_error(KAFKA_ERR_PRODUCER_FENCED, 11), KAFKA_ERR_INVALID_PRODUCER_EPOCH);
    const int16_t retriable[] = {
        KAFKA_ERR_CONCURRENT_TRANSACTIONS, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE, KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS,
        KAFKA_ERR_NOT_COORDINATOR,         KAFKA_ERR_NETWORK_EXCEPTION,         KAFKA_ERR_REQUEST_TIMED_OUT};
    for (size_t i = 0; i < sizeof retriable / sizeof retriable[0]; i++)
        assert_int_equal(produce_verify_error(retriable[i], 9), KAFKA_ERR_NOT_ENOUGH_REPLICAS);
    assert_int_equal(produce_verify_error(KAFKA_ERR_INVALID_PRODUCER_ID_MAPPING, 9),
                     KAFKA_ERR_INVALID_PRODUCER_ID_MAPPING);
    assert_int_equal(produce_verify_error(KAFKA_ERR_NONE, 9), KAFKA_ERR_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_markers, setup, teardown),
        cmocka_unit_test(test_produce_verify_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
