/* SyncGroup of the leader over a store that splits group writes
 * (append_group, then sync): the generation is answered only once its
 * record's sync (disk, then the ISR) has succeeded, with the lock free
 * meanwhile; a failed sync answers every waiting member with its error and
 * sends the group back to PreparingRebalance, as Kafka does. */
#include <pthread.h>
#include <time.h>

#include "group_test_driver.h"

/* A store whose sync blocks until the test releases it; mu guards it all. */
struct gated_group_store {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int appends, syncs_entered;
    bool released;
    int16_t sync_result;
};

static int16_t gg_append_group(void *s, const struct group_snapshot_record *g, struct group_sync_point *sp)
{
    struct gated_group_store *gs = s;
    (void)g;
    pthread_mutex_lock(&gs->mu);
    gs->appends++;
    *sp = (struct group_sync_point){.partition = 0, .end_offset = gs->appends};
    pthread_mutex_unlock(&gs->mu);
    return KAFKA_ERR_NONE;
}

static int16_t gg_sync(void *s, const struct group_sync_point *sp)
{
    struct gated_group_store *gs = s;
    (void)sp;
    pthread_mutex_lock(&gs->mu);
    gs->syncs_entered++;
    pthread_cond_broadcast(&gs->cond);
    while (!gs->released)
        pthread_cond_wait(&gs->cond, &gs->mu);
    int16_t rc = gs->sync_result;
    pthread_mutex_unlock(&gs->mu);
    return rc;
}

static const struct group_store_ops gated_group_ops = {
    .append_group = gg_append_group,
    .sync = gg_sync,
};

static struct group_coordinator *gated_gc(struct gated_group_store *gs, int16_t sync_result)
{
    memset(gs, 0, sizeof *gs);
    pthread_mutex_init(&gs->mu, NULL);
    pthread_cond_init(&gs->cond, NULL);
    gs->sync_result = sync_result;
    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.initial_rebalance_delay_ms = 0;
    o.ops = &gated_group_ops;
    o.store = gs;
    fake_now = 1000000;
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);
    return gc;
}

/* Waits up to 10 s for the first sync; false when none began. */
static bool wait_sync_entered(struct gated_group_store *gs)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&gs->mu);
    int rc = 0;
    while (gs->syncs_entered == 0 && rc == 0)
        rc = pthread_cond_timedwait(&gs->cond, &gs->mu, &until);
    bool entered = gs->syncs_entered > 0;
    pthread_mutex_unlock(&gs->mu);
    return entered;
}

static void release(struct gated_group_store *gs)
{
    pthread_mutex_lock(&gs->mu);
    gs->released = true;
    pthread_cond_broadcast(&gs->cond);
    pthread_mutex_unlock(&gs->mu);
}

struct sync_job {
    struct group_coordinator *gc;
    const char *member;
    int32_t generation;
    struct sync_box box;
};

static void *sync_thread(void *arg)
{
    struct sync_job *j = arg;
    const struct group_assignment a = {
        .member_id = j->member, .assignment = (const uint8_t *)"a1", .assignment_len = 2};
    do_sync(j->gc, j->member, j->generation, &a, 1, &j->box);
    return NULL;
}

static const char *state_of(struct group_coordinator *gc)
{
    struct group_description d;
    group_coordinator_describe(gc, "g", &d);
    const char *state = d.state;
    group_description_free(&d);
    return state;
}

/* One member joins (it leads); its SyncGroup runs on a thread. */
static void start_leader_sync(struct group_coordinator *gc, struct join_box *jb, struct sync_job *job, pthread_t *t)
{
    join_dynamic(gc, jb);
    if (!jb->done)
        advance(gc, 10);
    assert_true(jb->done);
    assert_int_equal(jb->error, KAFKA_ERR_NONE);
    *job = (struct sync_job){.gc = gc, .member = jb->member_id, .generation = jb->generation};
    assert_int_equal(pthread_create(t, NULL, sync_thread, job), 0);
}

static void test_sync_answered_after_replication(void **state)
{
    (void)state;
    struct gated_group_store gs;
    struct group_coordinator *gc = gated_gc(&gs, KAFKA_ERR_NONE);
    struct join_box jb;
    struct sync_job job;
    pthread_t t;
    start_leader_sync(gc, &jb, &job, &t);
    bool entered = wait_sync_entered(&gs);
    /* The lock is free while the record syncs: these do not block. */
    const char *during = state_of(gc);
    struct group_offset_fetch f = {.topic = "t", .partition = 0};
    int16_t fetch_err = group_coordinator_fetch_offsets(gc, "g", &f, 1);
    free(f.metadata);
    pthread_mutex_lock(&gs.mu);
    bool answered_early = job.box.done;
    pthread_mutex_unlock(&gs.mu);
    release(&gs);
    pthread_join(t, NULL);
    if (!entered)
        fail_msg("SyncGroup of the leader did not wait for the group record's sync");
    assert_false(answered_early);
    assert_string_equal(during, "CompletingRebalance");
    assert_int_equal(fetch_err, KAFKA_ERR_NONE);
    assert_true(job.box.done);
    assert_int_equal(job.box.error, KAFKA_ERR_NONE);
    assert_string_equal(job.box.assignment, "a1");
    assert_string_equal(state_of(gc), "Stable");
    group_coordinator_destroy(gc);
}

static void test_sync_fails_when_not_replicated(void **state)
{
    (void)state;
    struct gated_group_store gs;
    struct group_coordinator *gc = gated_gc(&gs, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    struct join_box jb;
    struct sync_job job;
    pthread_t t;
    start_leader_sync(gc, &jb, &job, &t);
    bool entered = wait_sync_entered(&gs);
    release(&gs);
    pthread_join(t, NULL);
    if (!entered)
        fail_msg("SyncGroup of the leader did not wait for the group record's sync");
    assert_true(job.box.done);
    assert_int_equal(job.box.error, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_string_equal(state_of(gc), "PreparingRebalance");
    /* The member rejoins and the next generation completes. */
    char member[256];
    snprintf(member, sizeof member, "%s", jb.member_id);
    join(gc, member, NULL, range_proto, 1, &jb);
    if (!jb.done)
        advance(gc, 10);
    assert_true(jb.done);
    assert_int_equal(jb.error, KAFKA_ERR_NONE);
    pthread_mutex_lock(&gs.mu);
    gs.sync_result = KAFKA_ERR_NONE;
    pthread_mutex_unlock(&gs.mu);
    struct sync_box sb;
    const struct group_assignment a = {.member_id = member, .assignment = (const uint8_t *)"a2", .assignment_len = 2};
    do_sync(gc, member, jb.generation, &a, 1, &sb);
    assert_true(sb.done);
    assert_int_equal(sb.error, KAFKA_ERR_NONE);
    assert_string_equal(sb.assignment, "a2");
    assert_string_equal(state_of(gc), "Stable");
    group_coordinator_destroy(gc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_answered_after_replication),
        cmocka_unit_test(test_sync_fails_when_not_replicated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
