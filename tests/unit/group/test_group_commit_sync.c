/* OffsetCommit and TxnOffsetCommit sync the group log after the
 * coordinator lock is released: another request proceeds while a commit
 * waits for its sync, the commit is answered only after that sync, a failed
 * sync fails the entries that were written, and over the real group log the
 * recovery point covers the commit's record when the call returns. */
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
#include <pthread.h>
#include <stdatomic.h>

#include "coordinator/coordinator_partition.h"
#include "group/group_coordinator.h"
#include "group/group_log.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "support/unit_fixture.h"

static int64_t fake_now = 1000000;
static int64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

/* A store whose sync blocks until the test releases it. Shared between the
 * committing thread and the test thread; mu guards every field. */
struct gated_store {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int appends;
    int syncs_entered;
    bool released;
    int64_t release_end; /* a sync of this end_offset proceeds even when not released */
    int16_t sync_result;
    int64_t next_end;
    int64_t synced_end; /* end_offset of the last finished sync */
};

static int16_t gs_store_offsets(void *s, const char *g, const struct group_offset_record *o, size_t n)
{
    (void)s;
    (void)g;
    (void)o;
    (void)n;
    fail_msg("a store with sync must get append_offsets");
    return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
}

static int16_t gs_append(struct gated_store *gs, size_t n, struct group_sync_point *sp)
{
    pthread_mutex_lock(&gs->mu);
    gs->appends++;
    gs->next_end += (int64_t)n;
    *sp = (struct group_sync_point){.partition = 0, .end_offset = gs->next_end};
    pthread_mutex_unlock(&gs->mu);
    return KAFKA_ERR_NONE;
}

static int16_t gs_append_offsets(void *s, const char *g, const struct group_offset_record *o, size_t n,
                                 struct group_sync_point *sp)
{
    (void)g;
    (void)o;
    return gs_append(s, n, sp);
}

static int16_t gs_append_txn_offsets(void *s, const char *g, int64_t pid, int16_t epoch,
                                     const struct group_offset_record *o, size_t n, struct group_sync_point *sp)
{
    (void)g;
    (void)pid;
    (void)epoch;
    (void)o;
    return gs_append(s, n, sp);
}

static int16_t gs_sync(void *s, const struct group_sync_point *sp)
{
    struct gated_store *gs = s;
    pthread_mutex_lock(&gs->mu);
    gs->syncs_entered++;
    pthread_cond_broadcast(&gs->cond);
    while (!gs->released && sp->end_offset != gs->release_end)
        pthread_cond_wait(&gs->cond, &gs->mu);
    gs->synced_end = sp->end_offset;
    int16_t rc = gs->sync_result;
    pthread_mutex_unlock(&gs->mu);
    return rc;
}

static const struct group_store_ops gated_ops = {
    .store_offsets = gs_store_offsets,
    .append_offsets = gs_append_offsets,
    .append_txn_offsets = gs_append_txn_offsets,
    .sync = gs_sync,
};

static struct group_coordinator *gated_coordinator(struct gated_store *gs)
{
    memset(gs, 0, sizeof *gs);
    pthread_mutex_init(&gs->mu, NULL);
    pthread_cond_init(&gs->cond, NULL);
    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.initial_rebalance_delay_ms = 0;
    o.ops = &gated_ops;
    o.store = gs;
    o.offsets_topic_partitions = 1; /* every group in partition 0 */
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);
    return gc;
}

static void gated_free(struct group_coordinator *gc, struct gated_store *gs)
{
    group_coordinator_destroy(gc);
    pthread_mutex_destroy(&gs->mu);
    pthread_cond_destroy(&gs->cond);
}

/* One commit run on its own thread; the result is read after join. */
struct commit_job {
    struct group_coordinator *gc;
    struct gated_store *gs;
    bool transactional;
    struct group_offset_commit entry;
    int64_t synced_end_at_return; /* what the store had synced when the call returned */
};

static void *commit_thread(void *p)
{
    struct commit_job *j = p;
    if (j->transactional) {
        struct group_txn_commit_params tp = {
            .group_id = "g", .producer_id = 9, .producer_epoch = 0, .generation_id = -1, .member_id = ""};
        group_coordinator_txn_commit(j->gc, &tp, &j->entry, 1);
    } else {
        struct group_commit_params cp = {.group_id = "g", .generation_id = -1, .member_id = "", .retention_ms = -1};
        group_coordinator_commit(j->gc, &cp, &j->entry, 1);
    }
    pthread_mutex_lock(&j->gs->mu);
    j->synced_end_at_return = j->gs->synced_end;
    pthread_mutex_unlock(&j->gs->mu);
    return NULL;
}

static void wait_sync_entered(struct gated_store *gs, int n)
{
    pthread_mutex_lock(&gs->mu);
    while (gs->syncs_entered < n)
        pthread_cond_wait(&gs->cond, &gs->mu);
    pthread_mutex_unlock(&gs->mu);
}

static void release_sync(struct gated_store *gs)
{
    pthread_mutex_lock(&gs->mu);
    gs->released = true;
    pthread_cond_broadcast(&gs->cond);
    pthread_mutex_unlock(&gs->mu);
}

static void run_blocked_commit(bool transactional)
{
    struct gated_store gs;
    struct group_coordinator *gc = gated_coordinator(&gs);
    struct commit_job job = {.gc = gc,
                             .gs = &gs,
                             .transactional = transactional,
                             .entry = {.topic = "t", .partition = 0, .offset = 42, .leader_epoch = 1}};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, commit_thread, &job), 0);
    wait_sync_entered(&gs, 1);
    /* The committing thread is inside sync: the coordinator must be free. */
    struct group_offset_fetch f = {.topic = "t", .partition = 0};
    assert_int_equal(group_coordinator_fetch_offsets(gc, "g", &f, 1), KAFKA_ERR_NONE);
    free(f.metadata);
    struct group_offset_fetch other = {.topic = "t", .partition = 1};
    assert_int_equal(group_coordinator_fetch_offsets(gc, "other", &other, 1), KAFKA_ERR_NONE);
    free(other.metadata);
    release_sync(&gs);
    pthread_join(t, NULL);
    assert_int_equal(job.entry.error_code, KAFKA_ERR_NONE);
    /* Answered only after its own sync finished. */
    assert_int_equal(job.synced_end_at_return, 1);
    assert_int_equal(gs.appends, 1);
    assert_int_equal(gs.syncs_entered, 1);
    gated_free(gc, &gs);
}

static void test_commit_syncs_outside_lock(void **state)
{
    (void)state;
    run_blocked_commit(false);
}

static void test_txn_commit_syncs_outside_lock(void **state)
{
    (void)state;
    run_blocked_commit(true);
}

static void test_failed_sync_fails_written_entries(void **state)
{
    (void)state;
    struct gated_store gs;
    struct group_coordinator *gc = gated_coordinator(&gs);
    gs.released = true;
    gs.sync_result = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    struct group_offset_commit c[2] = {
        {.topic = "t", .partition = 0, .offset = 5},
        /* Refused before the append: keeps its own error. */
        {.topic = "t", .partition = 1, .offset = 6, .error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION},
    };
    struct group_commit_params cp = {.group_id = "g", .generation_id = -1, .member_id = "", .retention_ms = -1};
    group_coordinator_commit(gc, &cp, c, 2);
    assert_int_equal(c[0].error_code, KAFKA_ERR_UNKNOWN_SERVER_ERROR);
    assert_int_equal(c[1].error_code, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(gs.syncs_entered, 1);
    gated_free(gc, &gs);
}

static int64_t fetch_one(struct group_coordinator *gc, bool require_stable, int16_t *err)
{
    struct group_offset_fetch f = {.topic = "t", .partition = 0};
    assert_int_equal(group_coordinator_fetch_offsets_stable(gc, "g", require_stable, &f, 1), KAFKA_ERR_NONE);
    free(f.metadata);
    if (err)
        *err = f.error_code;
    return f.offset;
}

static void start_commit(struct commit_job *j, pthread_t *t, struct group_coordinator *gc, struct gated_store *gs,
                         bool transactional, int64_t offset)
{
    *j = (struct commit_job){.gc = gc,
                             .gs = gs,
                             .transactional = transactional,
                             .entry = {.topic = "t", .partition = 0, .offset = offset, .leader_epoch = 1}};
    assert_int_equal(pthread_create(t, NULL, commit_thread, j), 0);
}

static void set_gate(struct gated_store *gs, bool released, int16_t sync_result)
{
    pthread_mutex_lock(&gs->mu);
    gs->released = released;
    gs->sync_result = sync_result;
    pthread_cond_broadcast(&gs->cond);
    pthread_mutex_unlock(&gs->mu);
}

/* A commit whose sync has not ended is not an offset yet: OffsetFetch keeps
 * answering the previous one (require_stable: UNSTABLE_OFFSET_COMMIT), and
 * after a failed sync memory is as before the commit. */
static void test_commit_visible_only_after_sync(void **state)
{
    (void)state;
    struct gated_store gs;
    struct group_coordinator *gc = gated_coordinator(&gs);
    set_gate(&gs, true, KAFKA_ERR_NONE);
    struct commit_job j;
    pthread_t t;
    start_commit(&j, &t, gc, &gs, false, 10);
    pthread_join(t, NULL);
    assert_int_equal(j.entry.error_code, KAFKA_ERR_NONE);
    assert_int_equal(fetch_one(gc, false, NULL), 10);

    set_gate(&gs, false, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    start_commit(&j, &t, gc, &gs, false, 42);
    wait_sync_entered(&gs, 2);
    int16_t err, stable_err;
    int64_t seen = fetch_one(gc, false, &err);
    int64_t seen_stable = fetch_one(gc, true, &stable_err);
    /* Released before asserting, so a failure does not leave it blocked. */
    set_gate(&gs, true, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    pthread_join(t, NULL);
    assert_int_equal(seen, 10);
    assert_int_equal(err, KAFKA_ERR_NONE);
    assert_int_equal(seen_stable, -1);
    assert_int_equal(stable_err, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);
    assert_int_equal(j.entry.error_code, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal(fetch_one(gc, true, &err), 10);
    assert_int_equal(err, KAFKA_ERR_NONE);

    set_gate(&gs, true, KAFKA_ERR_NONE);
    start_commit(&j, &t, gc, &gs, false, 43);
    pthread_join(t, NULL);
    assert_int_equal(j.entry.error_code, KAFKA_ERR_NONE);
    assert_int_equal(fetch_one(gc, false, NULL), 43);
    gated_free(gc, &gs);
}

/* Two commits of one partition in flight: the one written later stays,
 * whichever sync ends first. */
static void test_later_commit_wins(void **state)
{
    (void)state;
    struct gated_store gs;
    struct group_coordinator *gc = gated_coordinator(&gs);
    struct commit_job first, second;
    pthread_t t1, t2;
    start_commit(&first, &t1, gc, &gs, false, 100);
    wait_sync_entered(&gs, 1);
    start_commit(&second, &t2, gc, &gs, false, 200);
    wait_sync_entered(&gs, 2);
    /* The second append ends at 2 (one record each): only its sync ends. */
    pthread_mutex_lock(&gs.mu);
    gs.release_end = 2;
    pthread_cond_broadcast(&gs.cond);
    pthread_mutex_unlock(&gs.mu);
    pthread_join(t2, NULL);
    int64_t seen = fetch_one(gc, false, NULL);
    release_sync(&gs);
    pthread_join(t1, NULL);
    assert_int_equal(second.entry.error_code, KAFKA_ERR_NONE);
    assert_int_equal(seen, 200);
    assert_int_equal(first.entry.error_code, KAFKA_ERR_NONE);
    assert_int_equal(fetch_one(gc, false, NULL), 200);
    gated_free(gc, &gs);
}

/* A TxnOffsetCommit whose sync failed leaves no pending offset: the
 * producer's COMMIT marker does not make it committed, and require_stable
 * fetches are not held up by it. A successful one still waits for the
 * marker. */
static void test_failed_txn_sync_not_committed(void **state)
{
    (void)state;
    struct gated_store gs;
    struct group_coordinator *gc = gated_coordinator(&gs);
    set_gate(&gs, true, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    struct commit_job j;
    pthread_t t;
    start_commit(&j, &t, gc, &gs, true, 7);
    pthread_join(t, NULL);
    assert_int_equal(j.entry.error_code, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    int16_t err;
    assert_int_equal(fetch_one(gc, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_NONE);
    group_coordinator_complete_txn(gc, 0, 9, true);
    assert_int_equal(fetch_one(gc, false, NULL), -1);

    set_gate(&gs, true, KAFKA_ERR_NONE);
    start_commit(&j, &t, gc, &gs, true, 8);
    pthread_join(t, NULL);
    assert_int_equal(j.entry.error_code, KAFKA_ERR_NONE);
    assert_int_equal(fetch_one(gc, true, &err), -1);
    assert_int_equal(err, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);
    group_coordinator_complete_txn(gc, 0, 9, true);
    assert_int_equal(fetch_one(gc, true, &err), 8);
    assert_int_equal(err, KAFKA_ERR_NONE);
    gated_free(gc, &gs);
}

/* ---- over the real group log ---- */

#define PARTITIONS 3

/* Owned by the test thread, except gc, which the committers share. */
struct log_fixture {
    struct unit_fixture stores;
    struct group_log *gl;
    struct group_coordinator *gc;
};

static void log_fixture_open(struct log_fixture *f)
{
    assert_int_equal(unit_fixture_init(&f->stores, "cairn-commit-sync"), 0);
    unit_fixture_open(&f->stores);
    char err[256] = "";
    struct group_log_options gopts = {.logs = f->stores.logs,
                                      .metadata = f->stores.metadata,
                                      .num_partitions = PARTITIONS,
                                      .replication_factor = 1,
                                      .segment_bytes = 1 << 20,
                                      .node_id = 1};
    if (group_log_open(&gopts, &f->gl, err, sizeof err) != 0)
        fail_msg("group log: %s", err);
    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.initial_rebalance_delay_ms = 0;
    o.ops = group_log_store_ops();
    o.store = f->gl;
    o.offsets_topic_partitions = PARTITIONS;
    assert_int_equal(group_coordinator_create(&o, &f->gc), 0);
}

static void log_fixture_close(struct log_fixture *f)
{
    group_coordinator_destroy(f->gc);
    group_log_close(f->gl);
    assert_int_equal(unit_fixture_destroy(&f->stores), 0);
}

static struct partition_log *group_partition(struct log_fixture *f, const char *group)
{
    int32_t p = coordinator_partition_for(group, strlen(group), PARTITIONS);
    struct partition_log *log = log_manager_get(f->stores.logs, GROUP_LOG_TOPIC, p);
    assert_non_null(log);
    return log;
}

static void test_group_log_durable_on_return(void **state)
{
    (void)state;
    struct log_fixture f;
    log_fixture_open(&f);
    struct partition_log *log = group_partition(&f, "durable");
    for (int round = 0; round < 3; round++) {
        int64_t before = partition_log_end_offset(log);
        struct group_offset_commit c = {.topic = "t", .partition = round, .offset = 100 + round};
        if (round < 2) {
            struct group_commit_params cp = {
                .group_id = "durable", .generation_id = -1, .member_id = "", .retention_ms = -1};
            group_coordinator_commit(f.gc, &cp, &c, 1);
        } else {
            struct group_txn_commit_params tp = {
                .group_id = "durable", .producer_id = 77, .producer_epoch = 0, .generation_id = -1, .member_id = ""};
            group_coordinator_txn_commit(f.gc, &tp, &c, 1);
        }
        assert_int_equal(c.error_code, KAFKA_ERR_NONE);
        int64_t end = partition_log_end_offset(log);
        assert_true(end > before); /* the record went to this partition */
        /* Its record (the last one in the log) is synced. */
        assert_true(partition_log_recovery_point(log) >= end);
    }
    partition_log_close(log);
    log_fixture_close(&f);
}

/* Groups of different __consumer_offsets partitions never wait on each
 * other: while one group's commit is stuck in the store's append (under
 * its partition's lock), a group of another partition commits, heartbeats
 * and is listed. */
#define SHARD_PARTITIONS 8

struct held_store {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    const char *held_group; /* its appends wait for released */
    bool entered, released;
};

static int16_t held_append_offsets(void *s, const char *g, const struct group_offset_record *o, size_t n,
                                   struct group_sync_point *sp)
{
    (void)o;
    (void)n;
    struct held_store *hs = s;
    pthread_mutex_lock(&hs->mu);
    if (strcmp(g, hs->held_group) == 0) {
        hs->entered = true;
        pthread_cond_broadcast(&hs->cond);
        while (!hs->released)
            pthread_cond_wait(&hs->cond, &hs->mu);
    }
    pthread_mutex_unlock(&hs->mu);
    *sp = (struct group_sync_point){.partition = -1, .end_offset = -1};
    return KAFKA_ERR_NONE;
}

static int16_t held_sync(void *s, const struct group_sync_point *sp)
{
    (void)s;
    (void)sp;
    return KAFKA_ERR_NONE;
}

static const struct group_store_ops held_ops = {
    .store_offsets = gs_store_offsets,
    .append_offsets = held_append_offsets,
    .append_txn_offsets = gs_append_txn_offsets,
    .sync = held_sync,
};

struct other_work {
    struct group_coordinator *gc;
    struct held_store *hs;
    const char *group;
    atomic_bool done;
};

static void *commit_other(void *arg)
{
    struct other_work *w = arg;
    struct group_offset_commit c = {.topic = "t", .partition = 0, .offset = 5};
    struct group_commit_params cp = {.group_id = w->group, .generation_id = -1, .member_id = "", .retention_ms = -1};
    group_coordinator_commit(w->gc, &cp, &c, 1);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
    struct group_offset_fetch f = {.topic = "t", .partition = 0};
    assert_int_equal(group_coordinator_fetch_offsets(w->gc, w->group, &f, 1), KAFKA_ERR_NONE);
    assert_int_equal(f.offset, 5);
    free(f.metadata);
    assert_int_equal(group_coordinator_heartbeat(w->gc, w->group, 1, "nobody", NULL), KAFKA_ERR_UNKNOWN_MEMBER_ID);
    atomic_store(&w->done, true);
    pthread_mutex_lock(&w->hs->mu);
    pthread_cond_broadcast(&w->hs->cond);
    pthread_mutex_unlock(&w->hs->mu);
    return NULL;
}

struct held_commit {
    struct group_coordinator *gc;
    const char *group;
};

static void *commit_held(void *arg)
{
    struct held_commit *h = arg;
    struct group_offset_commit c = {.topic = "t", .partition = 0, .offset = 7};
    struct group_commit_params cp = {.group_id = h->group, .generation_id = -1, .member_id = "", .retention_ms = -1};
    group_coordinator_commit(h->gc, &cp, &c, 1);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
    return NULL;
}

/* A group id in partition p of SHARD_PARTITIONS. */
static void group_in_partition(int32_t p, char *out, size_t len)
{
    for (int k = 0;; k++) {
        snprintf(out, len, "shard-group-%d", k);
        if (coordinator_partition_for(out, strlen(out), SHARD_PARTITIONS) == p)
            return;
    }
}

static void test_other_partition_not_blocked(void **state)
{
    (void)state;
    char held[64], other[64];
    group_in_partition(1, held, sizeof held);
    group_in_partition(2, other, sizeof other);
    struct held_store hs = {.held_group = held};
    pthread_mutex_init(&hs.mu, NULL);
    pthread_cond_init(&hs.cond, NULL);
    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.ops = &held_ops;
    o.store = &hs;
    o.offsets_topic_partitions = SHARD_PARTITIONS;
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);

    struct held_commit h = {gc, held};
    pthread_t ht, ot;
    assert_int_equal(pthread_create(&ht, NULL, commit_held, &h), 0);
    pthread_mutex_lock(&hs.mu);
    while (!hs.entered)
        pthread_cond_wait(&hs.cond, &hs.mu);
    pthread_mutex_unlock(&hs.mu);

    struct other_work w = {.gc = gc, .hs = &hs, .group = other};
    atomic_init(&w.done, false);
    assert_int_equal(pthread_create(&ot, NULL, commit_other, &w), 0);
    /* Generous for a loaded machine; with one lock for every group the
     * other commit waits for the held one, i.e. forever. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 5;
    pthread_mutex_lock(&hs.mu);
    while (!atomic_load(&w.done) && pthread_cond_timedwait(&hs.cond, &hs.mu, &until) == 0)
        ;
    bool done = atomic_load(&w.done);
    hs.released = true; /* let everything finish either way */
    pthread_cond_broadcast(&hs.cond);
    pthread_mutex_unlock(&hs.mu);
    pthread_join(ot, NULL);
    pthread_join(ht, NULL);
    assert_true(done);
    struct group_listing *l = NULL;
    size_t count = 0;
    assert_int_equal(group_coordinator_list(gc, NULL, 0, &l, &count), KAFKA_ERR_NONE);
    assert_int_equal(count, 2);
    group_listing_free(l, count);
    group_coordinator_destroy(gc);
    pthread_cond_destroy(&hs.cond);
    pthread_mutex_destroy(&hs.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_syncs_outside_lock),
        cmocka_unit_test(test_txn_commit_syncs_outside_lock),
        cmocka_unit_test(test_failed_sync_fails_written_entries),
        cmocka_unit_test(test_commit_visible_only_after_sync),
        cmocka_unit_test(test_later_commit_wins),
        cmocka_unit_test(test_failed_txn_sync_not_committed),
        cmocka_unit_test(test_group_log_durable_on_return),
        cmocka_unit_test(test_other_partition_not_blocked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
