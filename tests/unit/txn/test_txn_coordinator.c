/* The transaction coordinator's state machine through its C API, without a
 * log: a recording marker ops and an injected clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>

#include <cmocka.h>

#include "protocol/generated/errors.h"
#include "txn/txn_coordinator.h"

#define MAX_CALLS 16

struct marker_call {
    int64_t producer_id;
    int16_t epoch;
    bool commit;
    char parts[8][64];
    size_t count;
};

/* Records write_markers calls; fail makes the next calls fail. */
struct recorder {
    struct marker_call calls[MAX_CALLS];
    int count;
    bool fail;          /* read and written atomically: a test thread clears it */
    int failed_calls;   /* atomically, as fail */
    char fail_only[64]; /* "topic-partition": only that one fails (recorded) */
};

static int16_t record_markers(void *ctx, int64_t producer_id, int16_t producer_epoch, int32_t coordinator_epoch,
                              bool commit, struct txn_marker_partition *parts, size_t count)
{
    (void)coordinator_epoch;
    struct recorder *r = ctx;
    if (__atomic_load_n(&r->fail, __ATOMIC_SEQ_CST)) {
        __atomic_add_fetch(&r->failed_calls, 1, __ATOMIC_SEQ_CST);
        for (size_t i = 0; i < count; i++)
            parts[i].error_code = KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
        return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    assert_true(r->count < MAX_CALLS);
    int16_t result = KAFKA_ERR_NONE;
    for (size_t i = 0; r->fail_only[0] && i < count; i++) {
        char name[80];
        snprintf(name, sizeof name, "%s-%d", parts[i].topic, (int)parts[i].partition);
        if (strcmp(name, r->fail_only) == 0)
            parts[i].error_code = result = KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    struct marker_call *c = &r->calls[r->count++];
    c->producer_id = producer_id;
    c->epoch = producer_epoch;
    c->commit = commit;
    c->count = count;
    for (size_t i = 0; i < count && i < 8; i++)
        snprintf(c->parts[i], sizeof c->parts[i], "%s-%d", parts[i].topic, (int)parts[i].partition);
    return result;
}

static const struct txn_marker_ops recorder_ops = {.write_markers = record_markers};

struct fixture {
    struct recorder rec;
    int64_t now;
    int64_t next_id;
    struct txn_coordinator *c;
};

static int64_t fake_now(void *ctx)
{
    return ((struct fixture *)ctx)->now;
}

static int16_t fake_allocate(void *ctx, int64_t *id)
{
    *id = ((struct fixture *)ctx)->next_id++;
    return KAFKA_ERR_NONE;
}

static int setup_with(void **state, bool markers)
{
    struct fixture *f = calloc(1, sizeof *f);
    f->now = 1000000;
    f->next_id = 4000;
    struct txn_coordinator_options opts = {
        .markers = markers ? &recorder_ops : NULL,
        .markers_ctx = &f->rec,
        .allocate_producer_id = fake_allocate,
        .allocate_ctx = f,
        .now_ms = fake_now,
        .clock_ctx = f,
        .max_timeout_ms = 900000,
        .id_expiration_ms = 3600000,
    };
    char err[256] = "";
    if (txn_coordinator_create(&opts, &f->c, err, sizeof err) != 0)
        fail_msg("create: %s", err);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, true);
}
static int setup_no_markers(void **state)
{
    return setup_with(state, false);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    txn_coordinator_destroy(f->c);
    free(f);
    return 0;
}

static void load(struct fixture *f)
{
    char err[256] = "";
    assert_int_equal(txn_coordinator_load(f->c, err, sizeof err), 0);
}

static void init_ok(struct fixture *f, const char *id, int64_t *pid, int16_t *epoch)
{
    assert_int_equal(txn_coordinator_init_producer(f->c, id, 60000, -1, -1, pid, epoch), KAFKA_ERR_NONE);
}

static const struct txn_topic_partition three[] = {{"a", 0}, {"a", 1}, {"b", 3}};

struct seen {
    enum txn_state state;
    int16_t epoch;
    size_t parts;
    int calls;
};

static void capture(void *ctx, const struct txn_view *v)
{
    struct seen *s = ctx;
    s->state = v->state;
    s->epoch = v->producer_epoch;
    s->parts = v->partition_count;
    s->calls++;
}

static enum txn_state state_of(struct fixture *f, const char *id)
{
    struct seen s = {0};
    assert_int_equal(txn_coordinator_describe(f->c, id, capture, &s), KAFKA_ERR_NONE);
    return s.state;
}

static void test_requests_wait_for_load(void **state)
{
    struct fixture *f = *state;
    int64_t pid;
    int16_t epoch;
    assert_int_equal(txn_coordinator_init_producer(f->c, "t", 60000, -1, -1, &pid, &epoch),
                     KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    assert_int_equal(txn_coordinator_ownership(f->c, "t"), KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    load(f);
    assert_int_equal(txn_coordinator_ownership(f->c, "t"), KAFKA_ERR_NONE);
    init_ok(f, "t", &pid, &epoch);
}

static void test_init_new_and_bump(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid, pid2;
    int16_t epoch, epoch2;
    init_ok(f, "t1", &pid, &epoch);
    assert_int_equal(pid, 4000);
    assert_int_equal(epoch, 0);
    assert_int_equal(state_of(f, "t1"), TXN_STATE_EMPTY);
    /* A second producer with the same id bumps the epoch, fencing the first. */
    init_ok(f, "t1", &pid2, &epoch2);
    assert_int_equal(pid2, pid);
    assert_int_equal(epoch2, 1);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "t1", pid, 0, three, 3), KAFKA_ERR_PRODUCER_FENCED);
    assert_int_equal(txn_coordinator_end(f->c, "t1", pid, 0, true), KAFKA_ERR_PRODUCER_FENCED);
    /* Another id gets another producer id. */
    int64_t other;
    init_ok(f, "t2", &other, &epoch);
    assert_int_not_equal(other, pid);
}

static void test_init_rejects_bad_input(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid;
    int16_t epoch;
    assert_int_equal(txn_coordinator_init_producer(f->c, "t", 900001, -1, -1, &pid, &epoch),
                     KAFKA_ERR_INVALID_TRANSACTION_TIMEOUT);
    assert_int_equal(txn_coordinator_init_producer(f->c, "t", 0, -1, -1, &pid, &epoch),
                     KAFKA_ERR_INVALID_TRANSACTION_TIMEOUT);
    assert_int_equal(txn_coordinator_init_producer(f->c, "", 1000, -1, -1, &pid, &epoch), KAFKA_ERR_INVALID_REQUEST);
    assert_int_equal(pid, -1);
    struct seen s = {0};
    assert_int_equal(txn_coordinator_describe(f->c, "t", capture, &s), KAFKA_ERR_TRANSACTIONAL_ID_NOT_FOUND);
    assert_int_equal(s.calls, 0);
}

static void test_kip360_expected_epoch(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid, p;
    int16_t epoch, e;
    init_ok(f, "k", &pid, &epoch);
    /* Presenting the current (id, epoch) bumps it. */
    assert_int_equal(txn_coordinator_init_producer(f->c, "k", 60000, pid, 0, &p, &e), KAFKA_ERR_NONE);
    assert_int_equal(e, 1);
    /* Presenting the previous epoch is a retry: same answer, no bump. */
    assert_int_equal(txn_coordinator_init_producer(f->c, "k", 60000, pid, 0, &p, &e), KAFKA_ERR_NONE);
    assert_int_equal(e, 1);
    /* Anything else is fenced. */
    assert_int_equal(txn_coordinator_init_producer(f->c, "k", 60000, pid, 7, &p, &e), KAFKA_ERR_PRODUCER_FENCED);
    assert_int_equal(txn_coordinator_init_producer(f->c, "k", 60000, pid + 1, 1, &p, &e), KAFKA_ERR_PRODUCER_FENCED);
}

static void test_epoch_exhaustion_takes_new_id(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid, p;
    int16_t epoch, e;
    init_ok(f, "x", &pid, &epoch);
    for (int i = 1; i <= INT16_MAX - 1; i++) {
        init_ok(f, "x", &p, &e);
        assert_int_equal(p, pid);
        if (e != i)
            fail_msg("bump %d gave epoch %d", i, (int)e);
    }
    /* Epoch 32766 is used up: the next init moves to a new producer id. */
    init_ok(f, "x", &p, &e);
    assert_int_not_equal(p, pid);
    assert_int_equal(e, 0);
    /* The previous (id, epoch) still counts as a retry (KIP-360). */
    int64_t p2;
    int16_t e2;
    assert_int_equal(txn_coordinator_init_producer(f->c, "x", 60000, pid, INT16_MAX - 1, &p2, &e2), KAFKA_ERR_NONE);
    assert_int_equal(p2, p);
    assert_int_equal(e2, 0);
}

static void test_commit_writes_markers(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid;
    int16_t epoch;
    init_ok(f, "c", &pid, &epoch);
    assert_int_equal(txn_coordinator_end(f->c, "c", pid, epoch, true), KAFKA_ERR_INVALID_TXN_STATE);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "c", pid, epoch, three, 2), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "c", pid, epoch, three + 1, 2), KAFKA_ERR_NONE);
    struct seen s = {0};
    txn_coordinator_describe(f->c, "c", capture, &s);
    assert_int_equal(s.state, TXN_STATE_ONGOING);
    assert_int_equal(s.parts, 3);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "c", pid + 1, epoch, three, 1),
                     KAFKA_ERR_INVALID_PRODUCER_ID_MAPPING);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "nope", pid, epoch, three, 1),
                     KAFKA_ERR_INVALID_PRODUCER_ID_MAPPING);

    assert_int_equal(txn_coordinator_end(f->c, "c", pid, epoch, true), KAFKA_ERR_NONE);
    assert_int_equal(state_of(f, "c"), TXN_STATE_PREPARE_COMMIT);
    /* Until markers are written the id is busy. */
    assert_int_equal(txn_coordinator_end(f->c, "c", pid, epoch, true), KAFKA_ERR_CONCURRENT_TRANSACTIONS);
    assert_int_equal(txn_coordinator_end(f->c, "c", pid, epoch, false), KAFKA_ERR_INVALID_TXN_STATE);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "c", pid, epoch, three, 1),
                     KAFKA_ERR_CONCURRENT_TRANSACTIONS);
    int64_t p;
    int16_t e;
    assert_int_equal(txn_coordinator_init_producer(f->c, "c", 60000, -1, -1, &p, &e),
                     KAFKA_ERR_CONCURRENT_TRANSACTIONS);
    assert_int_equal(f->rec.count, 0);

    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(f->rec.count, 1);
    assert_true(f->rec.calls[0].commit);
    assert_int_equal(f->rec.calls[0].producer_id, pid);
    assert_int_equal(f->rec.calls[0].epoch, epoch);
    assert_int_equal(f->rec.calls[0].count, 3);
    assert_string_equal(f->rec.calls[0].parts[0], "a-0");
    assert_string_equal(f->rec.calls[0].parts[1], "a-1");
    assert_string_equal(f->rec.calls[0].parts[2], "b-3");
    assert_int_equal(state_of(f, "c"), TXN_STATE_COMPLETE_COMMIT);
    /* A retried EndTxn after completion succeeds; the opposite is refused. */
    assert_int_equal(txn_coordinator_end(f->c, "c", pid, epoch, true), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_end(f->c, "c", pid, epoch, false), KAFKA_ERR_INVALID_TXN_STATE);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 0);

    /* The next transaction starts with only its own partitions. */
    assert_int_equal(txn_coordinator_add_partitions(f->c, "c", pid, epoch, three + 2, 1), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_end(f->c, "c", pid, epoch, false), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(f->rec.count, 2);
    assert_false(f->rec.calls[1].commit);
    assert_int_equal(f->rec.calls[1].count, 1);
    assert_string_equal(f->rec.calls[1].parts[0], "b-3");
    assert_int_equal(state_of(f, "c"), TXN_STATE_COMPLETE_ABORT);
}

static void test_failed_markers_are_retried(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid;
    int16_t epoch;
    init_ok(f, "r", &pid, &epoch);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "r", pid, epoch, three, 1), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_end(f->c, "r", pid, epoch, true), KAFKA_ERR_NONE);
    f->rec.fail = true;
    assert_int_equal(txn_coordinator_complete_pending(f->c), 0);
    assert_int_equal(state_of(f, "r"), TXN_STATE_PREPARE_COMMIT);
    f->rec.fail = false;
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(state_of(f, "r"), TXN_STATE_COMPLETE_COMMIT);
}

/* One partition's marker fails: the retry sends that one only, and the
 * transaction completes once it is written. */
static void test_retry_resends_only_missing_markers(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid;
    int16_t epoch;
    init_ok(f, "m", &pid, &epoch);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "m", pid, epoch, three, 3), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_end(f->c, "m", pid, epoch, true), KAFKA_ERR_NONE);
    char missing[64];
    snprintf(missing, sizeof missing, "%s-%d", three[1].topic, (int)three[1].partition);
    snprintf(f->rec.fail_only, sizeof f->rec.fail_only, "%s", missing);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 0);
    assert_int_equal(state_of(f, "m"), TXN_STATE_PREPARE_COMMIT);
    assert_int_equal(f->rec.count, 1);
    assert_int_equal(f->rec.calls[0].count, 3);
    f->rec.fail_only[0] = '\0';
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(state_of(f, "m"), TXN_STATE_COMPLETE_COMMIT);
    assert_int_equal(f->rec.count, 2);
    assert_int_equal(f->rec.calls[1].count, 1);
    assert_string_equal(f->rec.calls[1].parts[0], missing);
}

static void test_no_marker_ops_stays_prepared(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid;
    int16_t epoch;
    init_ok(f, "n", &pid, &epoch);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "n", pid, epoch, three, 1), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_end(f->c, "n", pid, epoch, true), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 0);
    assert_int_equal(state_of(f, "n"), TXN_STATE_PREPARE_COMMIT);
    assert_int_equal(txn_coordinator_end(f->c, "n", pid, epoch, true), KAFKA_ERR_CONCURRENT_TRANSACTIONS);
}

static void test_init_aborts_open_transaction(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid, p;
    int16_t epoch, e;
    init_ok(f, "z", &pid, &epoch);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "z", pid, epoch, three, 2), KAFKA_ERR_NONE);
    /* A new producer instance: the open transaction is aborted under a
     * bumped epoch first, and the client retries. */
    assert_int_equal(txn_coordinator_init_producer(f->c, "z", 60000, -1, -1, &p, &e),
                     KAFKA_ERR_CONCURRENT_TRANSACTIONS);
    assert_int_equal(state_of(f, "z"), TXN_STATE_PREPARE_ABORT);
    assert_int_equal(txn_coordinator_end(f->c, "z", pid, epoch, true), KAFKA_ERR_PRODUCER_FENCED);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_false(f->rec.calls[0].commit);
    assert_int_equal(f->rec.calls[0].epoch, epoch + 1);
    assert_int_equal(f->rec.calls[0].count, 2);
    init_ok(f, "z", &p, &e);
    assert_int_equal(p, pid);
    assert_int_equal(e, epoch + 2);
    /* The zombie is fenced. */
    assert_int_equal(txn_coordinator_add_partitions(f->c, "z", pid, epoch, three, 1), KAFKA_ERR_PRODUCER_FENCED);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "z", p, e, three, 1), KAFKA_ERR_NONE);
}

static void test_timeout_aborts_and_fences(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid;
    int16_t epoch;
    assert_int_equal(txn_coordinator_init_producer(f->c, "slow", 5000, -1, -1, &pid, &epoch), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "slow", pid, epoch, three, 3), KAFKA_ERR_NONE);
    f->now += 5000;
    assert_int_equal(txn_coordinator_abort_timed_out(f->c), 0);
    f->now += 1;
    assert_int_equal(txn_coordinator_abort_timed_out(f->c), 1);
    assert_int_equal(state_of(f, "slow"), TXN_STATE_PREPARE_ABORT);
    assert_int_equal(txn_coordinator_complete_pending(f->c), 1);
    assert_int_equal(f->rec.count, 1);
    assert_false(f->rec.calls[0].commit);
    assert_int_equal(f->rec.calls[0].epoch, epoch + 1);
    assert_int_equal(state_of(f, "slow"), TXN_STATE_COMPLETE_ABORT);
    /* The producer learns it was fenced when it tries to go on. */
    assert_int_equal(txn_coordinator_end(f->c, "slow", pid, epoch, true), KAFKA_ERR_PRODUCER_FENCED);
    assert_int_equal(txn_coordinator_abort_timed_out(f->c), 0);
}

static void test_expiration_forgets_idle_ids(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid;
    int16_t epoch;
    init_ok(f, "idle", &pid, &epoch);
    init_ok(f, "busy", &pid, &epoch);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "busy", pid, epoch, three, 1), KAFKA_ERR_NONE);
    f->now += 3600000;
    assert_int_equal(txn_coordinator_expire_ids(f->c), 1);
    struct seen s = {0};
    assert_int_equal(txn_coordinator_describe(f->c, "idle", capture, &s), KAFKA_ERR_TRANSACTIONAL_ID_NOT_FOUND);
    assert_int_equal(state_of(f, "busy"), TXN_STATE_ONGOING);
}

static void test_verify_partitions(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid;
    int16_t epoch;
    init_ok(f, "v", &pid, &epoch);
    assert_int_equal(txn_coordinator_add_partitions(f->c, "v", pid, epoch, three, 2), KAFKA_ERR_NONE);
    int16_t errs[3] = {-1, -1, -1};
    assert_int_equal(txn_coordinator_verify_partitions(f->c, "v", pid, epoch, three, 3, errs), KAFKA_ERR_NONE);
    assert_int_equal(errs[0], KAFKA_ERR_NONE);
    assert_int_equal(errs[1], KAFKA_ERR_NONE);
    assert_int_equal(errs[2], KAFKA_ERR_INVALID_TXN_STATE);
    assert_int_equal(txn_coordinator_verify_partitions(f->c, "v", pid, (int16_t)(epoch + 1), three, 3, errs),
                     KAFKA_ERR_PRODUCER_FENCED);
    assert_int_equal(state_of(f, "v"), TXN_STATE_ONGOING);
}

static void count_visit(void *ctx, const struct txn_view *v)
{
    (void)v;
    (*(int *)ctx)++;
}

static void test_list_and_state_names(void **state)
{
    struct fixture *f = *state;
    load(f);
    int64_t pid;
    int16_t epoch;
    init_ok(f, "l1", &pid, &epoch);
    init_ok(f, "l2", &pid, &epoch);
    int n = 0;
    assert_int_equal(txn_coordinator_list(f->c, count_visit, &n), KAFKA_ERR_NONE);
    assert_int_equal(n, 2);
    for (int s = TXN_STATE_EMPTY; s <= TXN_STATE_PREPARE_EPOCH_FENCE; s++) {
        const char *name = txn_state_name((enum txn_state)s);
        assert_int_equal(txn_state_from_name(name, strlen(name)), s);
    }
    assert_string_equal(txn_state_name(TXN_STATE_PREPARE_COMMIT), "PrepareCommit");
    assert_int_equal(txn_state_from_name("Bogus", 5), -1);
}

/* ---- the background thread, with its own fixture: the thread reads the
 * clock, so it is atomic here ---- */

struct threaded {
    struct recorder rec; /* written by the coordinator thread, read after a locked describe */
    _Atomic int64_t now;
    int64_t next_id;
};

static int64_t threaded_now(void *ctx)
{
    return atomic_load(&((struct threaded *)ctx)->now);
}

static int16_t threaded_allocate(void *ctx, int64_t *id)
{
    *id = ((struct threaded *)ctx)->next_id++;
    return KAFKA_ERR_NONE;
}

static bool wait_for_state(struct txn_coordinator *c, const char *id, enum txn_state want)
{
    for (int i = 0; i < 500; i++) {
        struct seen s = {0};
        if (txn_coordinator_describe(c, id, capture, &s) == KAFKA_ERR_NONE && s.state == want)
            return true;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_background_thread_completes_and_times_out(void **state)
{
    (void)state;
    struct threaded t;
    memset(&t, 0, sizeof t);
    atomic_store(&t.now, 1000000);
    t.next_id = 70;
    struct txn_coordinator_options opts = {
        .markers = &recorder_ops,
        .markers_ctx = &t.rec,
        .allocate_producer_id = threaded_allocate,
        .allocate_ctx = &t,
        .now_ms = threaded_now,
        .clock_ctx = &t,
        .abort_check_interval_ms = 20,
        .background_thread = true,
    };
    struct txn_coordinator *c;
    char err[256] = "";
    assert_int_equal(txn_coordinator_create(&opts, &c, err, sizeof err), 0);
    assert_int_equal(txn_coordinator_load(c, err, sizeof err), 0);
    int64_t pid;
    int16_t epoch;
    assert_int_equal(txn_coordinator_init_producer(c, "bg", 10000, -1, -1, &pid, &epoch), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_add_partitions(c, "bg", pid, epoch, three, 3), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_end(c, "bg", pid, epoch, true), KAFKA_ERR_NONE);
    /* No explicit call: the thread writes the markers on its own. */
    assert_true(wait_for_state(c, "bg", TXN_STATE_COMPLETE_COMMIT));
    assert_int_equal(t.rec.count, 1);
    assert_true(t.rec.calls[0].commit);
    assert_int_equal(t.rec.calls[0].count, 3);

    assert_int_equal(txn_coordinator_add_partitions(c, "bg", pid, epoch, three, 1), KAFKA_ERR_NONE);
    atomic_fetch_add(&t.now, 10001);
    assert_true(wait_for_state(c, "bg", TXN_STATE_COMPLETE_ABORT));
    assert_int_equal(t.rec.count, 2);
    assert_false(t.rec.calls[1].commit);
    assert_int_equal(t.rec.calls[1].epoch, epoch + 1);
    txn_coordinator_destroy(c);
}

/* Failed markers are retried by the thread on its own, also when the
 * abort check runs as often as the marker retry (it used to keep the
 * retry from ever being due: the transaction stayed prepared for good). */
static void test_background_thread_retries_failed_markers(void **state)
{
    (void)state;
    struct threaded t;
    memset(&t, 0, sizeof t);
    atomic_store(&t.now, 1000000);
    t.next_id = 90;
    t.rec.fail = true;
    struct txn_coordinator_options opts = {
        .markers = &recorder_ops,
        .markers_ctx = &t.rec,
        .allocate_producer_id = threaded_allocate,
        .allocate_ctx = &t,
        .now_ms = threaded_now,
        .clock_ctx = &t,
        .abort_check_interval_ms = 500,
        .background_thread = true,
    };
    struct txn_coordinator *c;
    char err[256] = "";
    assert_int_equal(txn_coordinator_create(&opts, &c, err, sizeof err), 0);
    assert_int_equal(txn_coordinator_load(c, err, sizeof err), 0);
    int64_t pid;
    int16_t epoch;
    assert_int_equal(txn_coordinator_init_producer(c, "retry", 10000, -1, -1, &pid, &epoch), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_add_partitions(c, "retry", pid, epoch, three, 2), KAFKA_ERR_NONE);
    assert_int_equal(txn_coordinator_end(c, "retry", pid, epoch, true), KAFKA_ERR_NONE);
    for (int i = 0; i < 500 && __atomic_load_n(&t.rec.failed_calls, __ATOMIC_SEQ_CST) == 0; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    assert_true(__atomic_load_n(&t.rec.failed_calls, __ATOMIC_SEQ_CST) > 0);
    __atomic_store_n(&t.rec.fail, false, __ATOMIC_SEQ_CST);
    assert_true(wait_for_state(c, "retry", TXN_STATE_COMPLETE_COMMIT));
    assert_int_equal(t.rec.count, 1);
    assert_true(t.rec.calls[0].commit);
    assert_int_equal(t.rec.calls[0].count, 2);
    txn_coordinator_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_requests_wait_for_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_new_and_bump, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_rejects_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kip360_expected_epoch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoch_exhaustion_takes_new_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_writes_markers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_markers_are_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_resends_only_missing_markers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_marker_ops_stays_prepared, setup_no_markers, teardown),
        cmocka_unit_test_setup_teardown(test_init_aborts_open_transaction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_aborts_and_fences, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expiration_forgets_idle_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_verify_partitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_and_state_names, setup, teardown),
        cmocka_unit_test(test_background_thread_completes_and_times_out),
        cmocka_unit_test(test_background_thread_retries_failed_markers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
