/* The coordinator over a real __transaction_state (log manager and
 * metadata store in a temp dir): topic creation, placement by id, and a
 * reload that completes Prepare* transactions and keeps open ones for the
 * timeout to abort. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "coordinator/coordinator_partition.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "protocol/wire.h"
#include "support/unit_fixture.h"
#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"

#define PARTITIONS 5

struct marker_call {
    int64_t producer_id;
    int16_t epoch;
    bool commit;
    size_t count;
};

/* Owned by the test's thread; the coordinator calls the marker, clock and id
 * hooks (calls, now, next_id), possibly from its own thread. */
struct fixture {
    struct unit_fixture stores;
    struct txn_log *tl;
    struct txn_coordinator *c;
    struct marker_call calls[8];
    int call_count;
    int64_t now;
    int64_t next_id;
};
_Static_assert(offsetof(struct fixture, stores) == 0, "unit_fixture_setup needs the stores first");

static int16_t record_markers(void *ctx, int64_t producer_id, int16_t producer_epoch, int32_t coordinator_epoch,
                              bool commit, struct txn_marker_partition *parts, size_t count)
{
    (void)coordinator_epoch;
    (void)parts;
    struct fixture *f = ctx;
    assert_true(f->call_count < 8);
    f->calls[f->call_count++] = (struct marker_call){producer_id, producer_epoch, commit, count};
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

static void open_all(struct fixture *f, bool markers)
{
    char err[256] = "";
    unit_fixture_open(&f->stores);
    struct txn_log_options lopts = {
        .logs = f->stores.logs,
        .metadata = f->stores.metadata,
        .num_partitions = PARTITIONS,
        .replication_factor = 3,
        .segment_bytes = 1 << 20,
        .node_id = 1,
        .load_buffer_size = 512, /* small, so loads take several reads */
    };
    if (txn_log_open(&lopts, &f->tl, err, sizeof err) != 0)
        fail_msg("txn log: %s", err);
    struct txn_coordinator_options copts = {
        .log = f->tl,
        .markers = markers ? &recorder_ops : NULL,
        .markers_ctx = f,
        .allocate_producer_id = fake_allocate,
        .allocate_ctx = f,
        .now_ms = fake_now,
        .clock_ctx = f,
    };
    if (txn_coordinator_create(&copts, &f->c, err, sizeof err) != 0)
        fail_msg("coordinator: %s", err);
    if (txn_coordinator_load(f->c, err, sizeof err) != 0)
        fail_msg("load: %s", err);
}

static void close_all(struct fixture *f)
{
    txn_coordinator_destroy(f->c);
    f->c = NULL;
    txn_log_close(f->tl);
    f->tl = NULL;
    unit_fixture_close(&f->stores);
}

static int setup(void **state)
{
    if (unit_fixture_setup(state, sizeof(struct fixture), "cairn-txn-log") != 0)
        return -1;
    struct fixture *f = *state;
    f->now = 5000000;
    f->next_id = 1000;
    return 0;
}

static int teardown(void **state)
{
    close_all(*state);
    return unit_fixture_teardown(*state);
}

struct seen {
    enum txn_state state;
    int64_t producer_id;
    int16_t epoch;
    int32_t timeout_ms;
    int64_t start_ms;
    size_t parts;
    char first_part[64];
};

static void capture(void *ctx, const struct txn_view *v)
{
    struct seen *s = ctx;
    s->state = v->state;
    s->producer_id = v->producer_id;
    s->epoch = v->producer_epoch;
    s->timeout_ms = v->timeout_ms;
    s->start_ms = v->start_ms;
    s->parts = v->partition_count;
    if (v->partition_count > 0)
        snprintf(s->first_part, sizeof s->first_part, "%s-%d", v->partitions[0].topic, (int)v->partitions[0].partition);
}

static struct seen describe(struct fixture *f, const char *id)
{
    struct seen s;
    memset(&s, 0, sizeof s);
    assert_int_equal(txn_coordinator_describe(f->c, id, capture, &s), KAFKA_ERR_NONE);
    return s;
}

static const struct txn_topic_partition parts[] = {{"orders", 0}, {"orders", 1}, {"audit", 2}};

static void test_topic_created_and_placement(void **state)
{
    struct fixture *f = *state;
    open_all(f, true);
    assert_int_equal(txn_log_partition_count(f->tl), PARTITIONS);
    const struct metadata_image *img = metadata_image_acquire(f->stores.metadata);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, TXN_LOG_TOPIC, strlen(TXN_LOG_TOPIC));
    assert_non_null(t);
    assert_int_equal(t->partition_count, PARTITIONS);
    metadata_image_release(img);
    int64_t pid;
    int16_t epoch;
    const char *ids[] = {"alpha", "beta", "gamma", "delta"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(txn_coordinator_init_producer(f->c, ids[i], 10000, -1, -1, &pid, &epoch), KAFKA_ERR_NONE);
    int64_t total = 0;
    for (int32_t p = 0; p < PARTITIONS; p++) {
        struct partition_log *log = log_manager_get(f->stores.logs, TXN_LOG_TOPIC, p);
        assert_non_null(log);
        int64_t want = 0;
        for (int i = 0; i < 4; i++)
            want += coordinator_partition_for(ids[i], strlen(ids[i]), PARTITIONS) == p;
        assert_int_equal(partition_log_end_offset(log), want);
        total += partition_log_end_offset(log);
        partition_log_close(log);
    }
    assert_int_equal(total, 4);
}

static void test_reload_completes_prepared(void **state)
{
    struct fixture *f = *state;
    /* First life: no markers, so the commit stays prepared. */
    open_all(f, false);
    int64_t committed, open, done, idle_pid;
    int16_t e1, e2, e3;
    assert_int_equal(txn_coordinator_init_producer(f->c, "committing", 20000, -1, -1, &committed, &e1), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "committing", committed, e1, parts, 3), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_end(f->c, "committing", committed, e1, true), KAFKA_ERR_NONE);

    assert_int_equal(txn_coordinator_init_producer(f->c, "open", 30000, -1, -1, &open, &e2), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "open", open, e2, parts + 2, 1), KAFKA_ERR_NONE);
    int64_t started = f->now;

    assert_int_equal(txn_coordinator_init_producer(f->c, "idle", 40000, -1, -1, &done, &e3), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_init_producer(f->c, "idle", 40000, -1, -1, &done, &e3), KAFKA_ERR_NONE);
    assert_int_equal(e3, 1);
    idle_pid = done;
    assert_int_equal(txn_coordinator_init_producer(f->c, "gone", 40000, -1, -1, &done, &e3), KAFKA_ERR_NONE);
    f->now += 1000;
    close_all(f);

    /* Second life with markers: the prepared commit completes on load. */
    f->now += 1000;
    open_all(f, true);
    struct seen s = describe(f, "committing");
    assert_int_equal(s.state, TXN_STATE_PREPARE_COMMIT);
    assert_int_equal(s.parts, 3);
    assert_int_equal(txn_coordinator_end(f->c, "committing", committed, e1, true), KAFKA_ERR_CONCURRENT_TRANSACTIONS);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(f->call_count, 1);
    assert_true(f->calls[0].commit);
    assert_int_equal(f->calls[0].producer_id, committed);
    assert_int_equal(f->calls[0].epoch, e1);
    assert_int_equal(f->calls[0].count, 3);
    assert_int_equal(describe(f, "committing").state, TXN_STATE_COMPLETE_COMMIT);

    s = describe(f, "open");
    assert_int_equal(s.state, TXN_STATE_ONGOING);
    assert_int_equal(s.producer_id, open);
    assert_int_equal(s.timeout_ms, 30000);
    assert_int_equal(s.start_ms, started);
    assert_int_equal(s.parts, 1);
    assert_string_equal(s.first_part, "audit-2");
    s = describe(f, "idle");
    assert_int_equal(s.state, TXN_STATE_EMPTY);
    assert_int_equal(s.epoch, 1);
    assert_int_equal(s.producer_id, idle_pid);

    /* The open transaction times out and is aborted under a bumped epoch. */
    f->now = started + 30001;
    assert_int_equal(txn_coordinator_abort_timed_out(f->c), 1);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(f->call_count, 2);
    assert_false(f->calls[1].commit);
    assert_int_equal(f->calls[1].epoch, e2 + 1);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "open", open, e2, parts, 1), KAFKA_ERR_PRODUCER_FENCED);

    /* Expiry writes a tombstone, which a third life honours. */
    f->now += 604800000LL;
    assert_true(txn_coordinator_expire_ids(f->c) >= 1);
    close_all(f);
    open_all(f, true);
    struct seen none;
    assert_int_equal(txn_coordinator_describe(f->c, "gone", capture, &none), KAFKA_ERR_TRANSACTIONAL_ID_NOT_FOUND);
    assert_int_equal(txn_coordinator_describe(f->c, "idle", capture, &none), KAFKA_ERR_TRANSACTIONAL_ID_NOT_FOUND);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 0);
    assert_int_equal(f->call_count, 2);
}

static void test_requests_wait_for_load(void **state)
{
    struct fixture *f = *state;
    open_all(f, true);
    /* A coordinator not yet loaded answers as such. */
    struct txn_coordinator *fresh;
    char err[256] = "";
    struct txn_coordinator_options copts = {.log = f->tl, .allocate_producer_id = fake_allocate, .allocate_ctx = f};
    assert_int_equal(txn_coordinator_create(&copts, &fresh, err, sizeof err), 0);
    assert_int_equal(txn_coordinator_ownership(fresh, "x"), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    int64_t pid;
    int16_t epoch;
    assert_int_equal(txn_coordinator_init_producer(fresh, "x", 1000, -1, -1, &pid, &epoch),
                     KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    txn_coordinator_destroy(fresh);
    assert_int_equal(txn_coordinator_ownership(f->c, "x"), KAFKA_ERR_NONE);
}

static void test_value_versions(void **state)
{
    (void)state;
    struct txn_topic_partition ps[] = {{"t", 1}, {"u", 0}, {"t", 4}};
    struct txn_log_record rec = {
        .producer_id = 42,
        .previous_producer_id = -1,
        .producer_epoch = 3,
        .timeout_ms = 60000,
        .state = TXN_STATE_ONGOING,
        .partitions = ps,
        .partition_count = 3,
        .last_update_ms = 1700000000123,
        .start_ms = 1700000000000,
    };
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 64), 0);
    assert_int_equal(txn_log_encode_value(&w, &rec), 0);
    /* Version 0: int16 0, then producer id 42. */
    assert_true(w.len > 10);
    assert_int_equal(w.buf[0], 0);
    assert_int_equal(w.buf[1], 0);
    assert_int_equal(w.buf[9], 42);
    /* Topics are grouped: two entries, "t" with partitions 1 and 4. Layout
     * after the version: id 8, epoch 2, timeout 4, status 1, array 4. */
    assert_int_equal(w.buf[2 + 8 + 2 + 4], TXN_STATE_ONGOING);
    assert_int_equal(w.buf[2 + 8 + 2 + 4 + 1 + 3], 2);
    size_t v0_len = w.len;
    w.len = 0;
    rec.previous_producer_id = 41;
    assert_int_equal(txn_log_encode_value(&w, &rec), 0);
    assert_int_equal(w.buf[1], 1);
    assert_int_not_equal(w.len, v0_len);
    w.len = 0;
    assert_int_equal(txn_log_encode_key(&w, "abc"), 0);
    const uint8_t key[] = {0, 0, 0, 3, 'a', 'b', 'c'};
    assert_int_equal(w.len, sizeof key);
    assert_memory_equal(w.buf, key, sizeof key);
    kafka_writer_free(&w);
}

/* EndTxn whose PrepareCommit cannot be written (the disk is full: a
 * file-size limit makes the append fail with EFBIG, as ENOSPC would)
 * answers NOT_COORDINATOR, as Kafka's coordinator does when its log
 * refuses the append, so the client looks the coordinator up again and
 * retries. Later requests on the offline log keep a retriable answer. */
static void test_end_on_full_disk_is_retriable(void **state)
{
    struct fixture *f = *state;
    open_all(f, true);
    int64_t pid;
    int16_t epoch;
    assert_int_equal(txn_coordinator_init_producer(f->c, "full-disk", 20000, -1, -1, &pid, &epoch), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "full-disk", pid, epoch, parts, 3), KAFKA_ERR_NONE);
    struct rlimit saved, limited;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
    limited = saved;
    limited.rlim_cur = 1;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &limited), 0);
    int16_t code = txn_coordinator_end(f->c, "full-disk", pid, epoch, true);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
    assert_int_equal(code, KAFKA_ERR_NOT_COORDINATOR);
    /* The log is offline now: every request on its ids is retriable. */
    code = txn_coordinator_end(f->c, "full-disk", pid, epoch, true);
    assert_true(code == KAFKA_ERR_NOT_COORDINATOR || code == KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    /* The mapping of every append error Kafka names. */
    assert_int_equal(txn_log_append_error(KAFKA_ERR_NONE), KAFKA_ERR_NONE);
    assert_int_equal(txn_log_append_error(KAFKA_ERR_KAFKA_STORAGE_ERROR), KAFKA_ERR_NOT_COORDINATOR);
    assert_int_equal(txn_log_append_error(KAFKA_ERR_NOT_LEADER_OR_FOLLOWER), KAFKA_ERR_NOT_COORDINATOR);
    assert_int_equal(txn_log_append_error(KAFKA_ERR_NOT_ENOUGH_REPLICAS), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal(txn_log_append_error(KAFKA_ERR_REQUEST_TIMED_OUT), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal(txn_log_append_error(KAFKA_ERR_MESSAGE_TOO_LARGE), KAFKA_ERR_UNKNOWN_SERVER_ERROR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_value_versions),
        cmocka_unit_test_setup_teardown(test_topic_created_and_placement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reload_completes_prepared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requests_wait_for_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_on_full_disk_is_retriable, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
