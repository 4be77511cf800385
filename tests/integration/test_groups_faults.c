/* Consumer groups when members misbehave: a consumer that stops polling
 * past max.poll.interval.ms, a consumer process killed with SIGKILL (gone
 * after session.timeout.ms), a static member restarting without a
 * rebalance, and hand-made requests with stale or foreign identities,
 * unknown topics and oversized metadata. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"
#include "test_groups_common.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#define GF_TESTS 5

/* Owned by the test's main thread. */
struct faults_state {
    struct test_broker broker;
    int passed;
};

static void test_max_poll_interval(void **state)
{
    struct faults_state *st = *state;
    const char *bootstrap = broker_bootstrap(&st->broker);
    rk_create_topic(bootstrap, "gf-poll", GT_PARTITIONS, NULL);
    static struct gt_world w;
    gt_world_init(&w);
    const char *extra[] = {"max.poll.interval.ms", "7000", NULL};
    static struct gt_consumer a, b;
    gt_consumer_start(&a, &w, 0, bootstrap, "gf-poll", "gf-poll", extra);
    gt_consumer_start(&b, &w, 1, bootstrap, "gf-poll", "gf-poll", extra);
    assert_true(gt_wait_owned(&w, 0, 6, 20000));
    assert_true(gt_wait_owned(&w, 1, 6, 20000));
    long long paused_at = harness_now_ms();
    atomic_store(&a.pause, true);
    /* a's client leaves the group once it has not polled for 7 s; b then owns all. */
    bool took_over = gt_wait_owned(&w, 1, GT_PARTITIONS, 25000);
    long long took = harness_now_ms() - paused_at;
    atomic_store(&a.pause, false);
    /* Back to polling, a rejoins and gets its share again. */
    bool rejoined = gt_wait_owned(&w, 0, 6, 25000);
    gt_consumer_stop(&a);
    gt_consumer_stop(&b);
    fprintf(stderr, "[groups] stalled member lost its partitions after %lld ms\n", took);
    assert_true(took_over);
    assert_true(took >= 6000);
    assert_true(rejoined);
    st->passed++;
}

/* A kcat balanced consumer in its own process, so SIGKILL is real. */
static pid_t spawn_kcat_member(const char *bootstrap, const char *group, const char *topic)
{
    pid_t pid = fork();
    if (pid < 0)
        fail_msg("fork");
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, STDOUT_FILENO);
            dup2(devnull, STDERR_FILENO);
        }
        execl(KCAT_PATH, "kcat", "-b", bootstrap, "-G", group, "-q", "-X", "session.timeout.ms=6000", "-X",
              "heartbeat.interval.ms=500", "-X", "partition.assignment.strategy=range", topic, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void test_killed_consumer_expires(void **state)
{
    struct faults_state *st = *state;
    const char *bootstrap = broker_bootstrap(&st->broker);
    rk_create_topic(bootstrap, "gf-kill", GT_PARTITIONS, NULL);
    pid_t child = spawn_kcat_member(bootstrap, "gf-kill", "gf-kill");
    usleep(3000000);
    static struct gt_world w;
    gt_world_init(&w);
    static struct gt_consumer b;
    const char *extra[] = {"partition.assignment.strategy", "range", NULL};
    gt_consumer_start(&b, &w, 0, bootstrap, "gf-kill", "gf-kill", extra);
    bool shared = gt_wait_owned(&w, 0, 6, 20000);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    long long killed_at = harness_now_ms();
    bool took_over = gt_wait_owned(&w, 0, GT_PARTITIONS, 25000);
    long long took = harness_now_ms() - killed_at;
    gt_consumer_stop(&b);
    fprintf(stderr, "[groups] killed member expired after %lld ms\n", took);
    assert_true(shared);
    assert_true(took_over);
    /* Not before its session could have run out (heartbeats every 0.5 s). */
    assert_true(took >= 5000);
    st->passed++;
}

/* DescribeGroups v0 for one group: state and member count. */
static void describe_group(int port, const char *group, char *state_out, size_t state_len, int *members)
{
    int fd = raw_connect(port, 5000);
    assert_true(fd >= 0);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 15, 0, 5, "gf-raw");
    raw_put_i32(&w, 1);
    raw_put_string(&w, group);
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame;
    size_t len;
    assert_int_equal(raw_recv_frame(fd, 10000, 1 << 20, &frame, &len), 0);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    raw_get_i32(&r); /* correlation id */
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i16(&r), 0);
    raw_skip_string(&r); /* group id */
    int16_t sl = raw_get_i16(&r);
    assert_true(sl >= 0 && (size_t)sl < state_len && r.pos + (size_t)sl <= r.len);
    memcpy(state_out, r.data + r.pos, (size_t)sl);
    state_out[sl] = '\0';
    raw_skip(&r, (size_t)sl);
    raw_skip_string(&r); /* protocol type */
    raw_skip_string(&r); /* protocol */
    *members = raw_get_i32(&r);
    assert_false(r.overflow);
    free(frame);
    close(fd);
}

static void test_static_member_restart(void **state)
{
    struct faults_state *st = *state;
    const char *bootstrap = broker_bootstrap(&st->broker);
    rk_create_topic(bootstrap, "gf-static", GT_PARTITIONS, NULL);
    static struct gt_world w;
    gt_world_init(&w);
    const char *s1[] = {"group.instance.id", "static-1", NULL};
    const char *s2[] = {"group.instance.id", "static-2", NULL};
    static struct gt_consumer a, b, a2;
    gt_consumer_start(&a, &w, 0, bootstrap, "gf-static", "gf-static", s1);
    gt_consumer_start(&b, &w, 1, bootstrap, "gf-static", "gf-static", s2);
    assert_true(gt_wait_owned(&w, 0, 6, 20000));
    assert_true(gt_wait_owned(&w, 1, 6, 20000));
    usleep(1000000);
    pthread_mutex_lock(&w.lock);
    int b_events = w.assign_events[1];
    pthread_mutex_unlock(&w.lock);

    /* Restart static-1 well within its session timeout. */
    gt_consumer_stop(&a);
    gt_consumer_start(&a2, &w, 2, bootstrap, "gf-static", "gf-static", s1);
    bool back = gt_wait_owned(&w, 2, 6, 20000);
    usleep(2000000);
    pthread_mutex_lock(&w.lock);
    int b_events_after = w.assign_events[1];
    pthread_mutex_unlock(&w.lock);
    int b_owned = gt_owned_by(&w, 1);
    char gstate[64];
    int members;
    describe_group(broker_port(&st->broker), "gf-static", gstate, sizeof gstate, &members);
    gt_consumer_stop(&a2);
    gt_consumer_stop(&b);
    fprintf(stderr, "[groups] static restart: state %s, %d members, other member assignments %d -> %d\n", gstate,
            members, b_events, b_events_after);
    assert_true(back);
    assert_int_equal(b_owned, 6);
    /* No rebalance: the other member was never reassigned. */
    assert_int_equal(b_events_after, b_events);
    assert_string_equal(gstate, "Stable");
    assert_int_equal(members, 2);
    st->passed++;
}

/* ---- hand-made requests ---- */

static uint8_t *raw_roundtrip(int fd, struct raw_writer *w, size_t *len)
{
    raw_frame_finish(w);
    assert_int_equal(raw_send_all(fd, w->data, w->len), 0);
    raw_writer_free(w);
    uint8_t *frame;
    assert_int_equal(raw_recv_frame(fd, 10000, 1 << 20, &frame, len), 0);
    return frame;
}

static int16_t raw_heartbeat(int fd, const char *group, int32_t generation, const char *member)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 12, 0, 11, "gf-raw");
    raw_put_string(&w, group);
    raw_put_i32(&w, generation);
    raw_put_string(&w, member);
    size_t len;
    uint8_t *frame = raw_roundtrip(fd, &w, &len);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    raw_get_i32(&r);
    int16_t err = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return err;
}

/* OffsetCommit v2 of one partition; returns its error. */
static int16_t raw_commit(int fd, const char *group, int32_t generation, const char *member, const char *topic,
                          int32_t partition, int64_t offset, const char *metadata)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 8, 2, 12, "gf-raw");
    raw_put_string(&w, group);
    raw_put_i32(&w, generation);
    raw_put_string(&w, member);
    raw_put_i64(&w, -1);
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, partition);
    raw_put_i64(&w, offset);
    raw_put_string(&w, metadata);
    size_t len;
    uint8_t *frame = raw_roundtrip(fd, &w, &len);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i32(&r), partition);
    int16_t err = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return err;
}

/* OffsetFetch v1 of one partition: the committed offset (or -1). */
static int64_t raw_fetch_offset(int fd, const char *group, const char *topic, int32_t partition)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 9, 1, 13, "gf-raw");
    raw_put_string(&w, group);
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, partition);
    size_t len;
    uint8_t *frame = raw_roundtrip(fd, &w, &len);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i32(&r), partition);
    int64_t offset = raw_get_i64(&r);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i16(&r), 0);
    assert_false(r.overflow);
    free(frame);
    return offset;
}

static int16_t raw_delete_group(int fd, const char *group)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 42, 0, 14, "gf-raw");
    raw_put_i32(&w, 1);
    raw_put_string(&w, group);
    size_t len;
    uint8_t *frame = raw_roundtrip(fd, &w, &len);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    raw_get_i32(&r);
    raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    int16_t err = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return err;
}

/* JoinGroup v0 with a session timeout below group.min.session.timeout.ms. */
static int16_t raw_join_short_session(int fd)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 11, 0, 15, "gf-raw");
    raw_put_string(&w, "gf-raw-join");
    raw_put_i32(&w, 100);
    raw_put_string(&w, "");
    raw_put_string(&w, "consumer");
    raw_put_i32(&w, 1);
    raw_put_string(&w, "range");
    raw_put_i32(&w, 0); /* empty metadata bytes */
    size_t len;
    uint8_t *frame = raw_roundtrip(fd, &w, &len);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    raw_get_i32(&r);
    int16_t err = raw_get_i16(&r);
    free(frame);
    return err;
}

/* ListGroups v4 filtered by one state: whether group appears, and with
 * which state. */
static bool raw_list_groups_has(int fd, const char *state_filter, const char *group, char *state_out, size_t len)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 16, 4, 16, "gf-raw");
    raw_put_uvarint(&w, 2); /* one state */
    raw_put_compact_string(&w, state_filter);
    raw_put_uvarint(&w, 0);
    size_t flen;
    uint8_t *frame = raw_roundtrip(fd, &w, &flen);
    struct raw_reader r;
    raw_reader_init(&r, frame, flen);
    raw_get_i32(&r);
    raw_skip_tagged_fields(&r);
    raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_i16(&r), 0);
    uint64_t n = raw_get_uvarint(&r);
    bool found = false;
    for (uint64_t i = 1; i < n && !r.overflow; i++) {
        char id[128], type[64], st[64];
        raw_get_compact_string(&r, id, sizeof id);
        raw_get_compact_string(&r, type, sizeof type);
        raw_get_compact_string(&r, st, sizeof st);
        raw_skip_tagged_fields(&r);
        assert_string_equal(st, state_filter);
        if (strcmp(id, group) == 0) {
            found = true;
            snprintf(state_out, len, "%s", st);
        }
    }
    assert_false(r.overflow);
    free(frame);
    return found;
}

static void test_bad_requests(void **state)
{
    struct faults_state *st = *state;
    const char *bootstrap = broker_bootstrap(&st->broker);
    rk_create_topic(bootstrap, "gf-bad", GT_PARTITIONS, NULL);
    static struct gt_world w;
    gt_world_init(&w);
    static struct gt_consumer c;
    gt_consumer_start(&c, &w, 0, bootstrap, "gf-bad", "gf-bad", NULL);
    assert_true(gt_wait_owned(&w, 0, GT_PARTITIONS, 20000));
    char *member = rd_kafka_memberid(c.rk);
    assert_non_null(member);

    int fd = raw_connect(broker_port(&st->broker), 5000);
    assert_true(fd >= 0);
    /* Another member's id, and the right id with a generation never issued. */
    assert_int_equal(raw_heartbeat(fd, "gf-bad", 1, "not-a-member"), 25 /* UNKNOWN_MEMBER_ID */);
    assert_int_equal(raw_heartbeat(fd, "gf-bad", 9999, member), 22 /* ILLEGAL_GENERATION */);
    assert_int_equal(raw_commit(fd, "gf-bad", 9999, member, "gf-bad", 0, 1, NULL), 22);
    assert_int_equal(raw_commit(fd, "gf-bad", 1, "not-a-member", "gf-bad", 0, 1, NULL), 25);
    /* A simple commit on a group that has members is not allowed either. */
    assert_int_equal(raw_commit(fd, "gf-bad", -1, "", "gf-bad", 0, 1, NULL), 25);

    /* Simple (group-less) commits: unknown topic or partition, oversized metadata. */
    assert_int_equal(raw_commit(fd, "gf-simple", -1, "", "gf-no-such-topic", 0, 5, NULL), 3);
    assert_int_equal(raw_commit(fd, "gf-simple", -1, "", "gf-bad", 99, 5, NULL), 3);
    char big[5000];
    memset(big, 'm', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(raw_commit(fd, "gf-simple", -1, "", "gf-bad", 0, 5, big), 12 /* OFFSET_METADATA_TOO_LARGE */);
    assert_int_equal(raw_fetch_offset(fd, "gf-simple", "gf-bad", 0), -1);
    assert_int_equal(raw_commit(fd, "gf-simple", -1, "", "gf-bad", 0, 5, "ok"), 0);
    assert_int_equal(raw_fetch_offset(fd, "gf-simple", "gf-bad", 0), 5);

    assert_int_equal(raw_join_short_session(fd), 26 /* INVALID_SESSION_TIMEOUT */);
    assert_int_equal(raw_delete_group(fd, "gf-bad"), 68 /* NON_EMPTY_GROUP */);
    assert_int_equal(raw_delete_group(fd, "gf-never-seen"), 69 /* GROUP_ID_NOT_FOUND */);
    assert_int_equal(raw_delete_group(fd, "gf-simple"), 0);
    assert_int_equal(raw_fetch_offset(fd, "gf-simple", "gf-bad", 0), -1);

    /* ListGroups filters by state. */
    char st_found[64] = "";
    assert_true(raw_list_groups_has(fd, "Stable", "gf-bad", st_found, sizeof st_found));
    assert_string_equal(st_found, "Stable");
    assert_false(raw_list_groups_has(fd, "Empty", "gf-bad", st_found, sizeof st_found));
    close(fd);
    rd_kafka_mem_free(c.rk, member);
    gt_consumer_stop(&c);
    st->passed++;
}

/* A JoinGroup whose connection is gone right after it was sent: the member
 * leaves, with its connection if the join was still parked (see
 * test_group_cancel.c), else when its session runs out; the answers go
 * into the void. */
static void test_parked_join_connection_closed(void **state)
{
    struct faults_state *st = *state;
    int port = broker_port(&st->broker);
    int fd = raw_connect(port, 5000);
    assert_true(fd >= 0);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 11, 0, 21, "gf-gone");
    raw_put_string(&w, "gf-gone");
    raw_put_i32(&w, 6000);
    raw_put_string(&w, "");
    raw_put_string(&w, "consumer");
    raw_put_i32(&w, 1);
    raw_put_string(&w, "range");
    raw_put_i32(&w, 0);
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    close(fd); /* before the initial rebalance delay lets the join complete */

    char gstate[64];
    int members;
    long long end = harness_now_ms() + 15000;
    while (harness_now_ms() < end) {
        describe_group(port, "gf-gone", gstate, sizeof gstate, &members);
        if (members == 0)
            break;
        usleep(200000);
    }
    fprintf(stderr, "[groups] abandoned join: %s with %d member(s)\n", gstate, members);
    assert_int_equal(members, 0);
    /* Empty, or Dead once the expiration pass has removed the member-less
     * group with no offsets (as Kafka's does). */
    if (strcmp(gstate, "Empty") != 0 && strcmp(gstate, "Dead") != 0)
        fail_msg("the abandoned group is %s, want Empty or Dead", gstate);
    assert_true(broker_alive(&st->broker));
    st->passed++;
}

static int faults_setup(void **state)
{
    static struct faults_state st;
    memset(&st, 0, sizeof st);
    *state = &st;
    const char *overrides[] = {"group.initial.rebalance.delay.ms=100", NULL};
    broker_start(&st.broker, overrides);
    return 0;
}

static int faults_teardown(void **state)
{
    struct faults_state *st = *state;
    if (st->passed == GF_TESTS)
        broker_mark_passed(&st->broker);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_static_member_restart),
        cmocka_unit_test(test_killed_consumer_expires),
        cmocka_unit_test(test_max_poll_interval),
        cmocka_unit_test(test_parked_join_connection_closed),
    };
    return cmocka_run_group_tests(tests, faults_setup, faults_teardown);
}
