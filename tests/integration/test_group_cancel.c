/* A JoinGroup or SyncGroup parked in a rebalance is given up as soon as its
 * connection closes: the member (a dynamic one) leaves the group at once
 * instead of holding the rebalance until its timeouts. Raw JoinGroup v9,
 * SyncGroup v5 and DescribeGroups v5 against a real cairnd.
 *
 * The parked requests here would otherwise wait 30 s (rebalance and session
 * timeouts), and the test wants the member gone within 10 s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"

#define TIMEOUT_MS 30000
#define GONE_WITHIN_MS 10000

static int32_t correlation = 1;

static void put_join_v9(struct raw_writer *w, const char *group, const char *member_id)
{
    raw_writer_init(w);
    raw_frame_begin_flexible(w, 11, 9, correlation++, "cancel-client");
    raw_put_compact_string(w, group);
    raw_put_i32(w, TIMEOUT_MS); /* session timeout */
    raw_put_i32(w, TIMEOUT_MS); /* rebalance timeout */
    raw_put_compact_string(w, member_id);
    raw_put_compact_string(w, NULL); /* no instance id: a dynamic member */
    raw_put_compact_string(w, "consumer");
    raw_put_uvarint(w, 2); /* one protocol */
    raw_put_compact_string(w, "range");
    raw_put_uvarint(w, 4);
    raw_put_bytes(w, "SUB", 3);
    raw_put_uvarint(w, 0);
    raw_put_compact_string(w, "test"); /* reason */
    raw_put_uvarint(w, 0);
    raw_frame_finish(w);
}

/* Sends JoinGroup and reads its answer: error code, generation, member id. */
static int16_t join(int fd, const char *group, const char *member_id, int32_t *generation, char *out_member,
                    size_t out_len)
{
    struct raw_writer w;
    put_join_v9(&w, group, member_id);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame;
    size_t len;
    assert_int_equal(raw_recv_frame(fd, TIMEOUT_MS + 10000, 1 << 20, &frame, &len), 0);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    raw_get_i32(&r); /* correlation id */
    raw_skip_tagged_fields(&r);
    raw_get_i32(&r); /* throttle */
    int16_t err = raw_get_i16(&r);
    *generation = raw_get_i32(&r);
    char skip[256];
    raw_get_compact_string(&r, skip, sizeof skip); /* protocol type */
    raw_get_compact_string(&r, skip, sizeof skip); /* protocol name */
    raw_get_compact_string(&r, skip, sizeof skip); /* leader */
    raw_get_i8(&r);
    raw_get_compact_string(&r, out_member, out_len);
    assert_false(r.overflow);
    free(frame);
    return err;
}

/* A member id the coordinator handed out (KIP-394's first round). */
static void member_id_for(int fd, const char *group, char *member, size_t len)
{
    int32_t generation;
    assert_int_equal(join(fd, group, "", &generation, member, len), 79 /* MEMBER_ID_REQUIRED */);
}

/* DescribeGroups v5: the group's state and member count. */
static void describe(int port, const char *group, char *state, size_t state_len, int *members)
{
    int fd = raw_connect(port, 10000);
    assert_true(fd >= 0);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 15, 5, correlation++, "cancel-admin");
    raw_put_uvarint(&w, 2);
    raw_put_compact_string(&w, group);
    raw_put_i8(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame;
    size_t len;
    assert_int_equal(raw_recv_frame(fd, 10000, 1 << 20, &frame, &len), 0);
    close(fd);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    raw_get_i32(&r);
    raw_skip_tagged_fields(&r);
    raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i16(&r), 0);
    char skip[256];
    raw_get_compact_string(&r, skip, sizeof skip); /* group id */
    raw_get_compact_string(&r, state, state_len);
    raw_get_compact_string(&r, skip, sizeof skip);
    raw_get_compact_string(&r, skip, sizeof skip);
    *members = (int)raw_get_uvarint(&r) - 1;
    assert_false(r.overflow);
    free(frame);
}

/* Waits until the group is in want_state with want_members members;
 * returns the ms it took, or -1. */
static long long wait_group(int port, const char *group, const char *want_state, int want_members, int within_ms)
{
    long long start = harness_now_ms();
    char state[64] = "";
    int members = -1;
    while (harness_now_ms() - start < within_ms) {
        describe(port, group, state, sizeof state, &members);
        if (strcmp(state, want_state) == 0 && members == want_members)
            return harness_now_ms() - start;
        usleep(20 * 1000);
    }
    fprintf(stderr, "group %s: state %s with %d members, wanted %s with %d\n", group, state, members, want_state,
            want_members);
    return -1;
}

/* The first member's JoinGroup waits out group.initial.rebalance.delay.ms
 * (30 s here); its client goes away meanwhile. */
static void test_parked_join_of_closed_connection(void **state)
{
    (void)state;
    struct test_broker b = {0};
    const char *overrides[] = {"group.initial.rebalance.delay.ms=30000", NULL};
    broker_start(&b, overrides);
    int port = broker_port(&b);

    int fd = raw_connect(port, 10000);
    assert_true(fd >= 0);
    char member[256];
    member_id_for(fd, "parked-join", member, sizeof member);
    struct raw_writer w;
    put_join_v9(&w, "parked-join", member);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    if (wait_group(port, "parked-join", "PreparingRebalance", 1, 10000) < 0)
        fail_msg("the join never parked");
    close(fd);
    long long gone = wait_group(port, "parked-join", "Empty", 0, GONE_WITHIN_MS);
    fprintf(stderr, "[group-cancel] parked JoinGroup: member gone %lld ms after its connection closed\n", gone);
    if (gone < 0) {
        broker_print_log_tail(&b, 20);
        fail_msg("the member of a closed connection's parked JoinGroup was still in the group after %d ms",
                 GONE_WITHIN_MS);
    }
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

/* Two members complete a join; the follower's SyncGroup parks until the
 * leader syncs, and the follower's client goes away meanwhile. */
static void test_parked_sync_of_closed_connection(void **state)
{
    (void)state;
    struct test_broker b = {0};
    const char *overrides[] = {"group.initial.rebalance.delay.ms=0", NULL};
    broker_start(&b, overrides);
    int port = broker_port(&b);
    const char *group = "parked-sync";

    int leader_fd = raw_connect(port, 10000), follower_fd = raw_connect(port, 10000);
    assert_true(leader_fd >= 0 && follower_fd >= 0);
    char leader[256], follower[256], got[256];
    int32_t generation = 0;
    member_id_for(leader_fd, group, leader, sizeof leader);
    assert_int_equal(join(leader_fd, group, leader, &generation, got, sizeof got), 0);
    /* The second member's join starts a rebalance the leader rejoins. */
    member_id_for(follower_fd, group, follower, sizeof follower);
    struct raw_writer w;
    put_join_v9(&w, group, follower);
    assert_int_equal(raw_send_all(follower_fd, w.data, w.len), 0);
    raw_writer_free(&w);
    if (wait_group(port, group, "PreparingRebalance", 2, 10000) < 0)
        fail_msg("the second member's join did not start a rebalance");
    assert_int_equal(join(leader_fd, group, leader, &generation, got, sizeof got), 0);
    uint8_t *frame;
    size_t len;
    assert_int_equal(raw_recv_frame(follower_fd, 10000, 1 << 20, &frame, &len), 0);
    free(frame);
    if (wait_group(port, group, "CompletingRebalance", 2, 10000) < 0)
        fail_msg("the group did not reach CompletingRebalance with two members");

    /* SyncGroup v5 from the follower, which parks until the leader syncs. */
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 14, 5, correlation++, "cancel-client");
    raw_put_compact_string(&w, group);
    raw_put_i32(&w, generation);
    raw_put_compact_string(&w, follower);
    raw_put_compact_string(&w, NULL);
    raw_put_compact_string(&w, "consumer");
    raw_put_compact_string(&w, "range");
    raw_put_uvarint(&w, 1); /* no assignments */
    raw_put_uvarint(&w, 0);
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(follower_fd, w.data, w.len), 0);
    raw_writer_free(&w);
    /* Nothing shows a parked SyncGroup from outside: give it time to reach the
     * coordinator (a close before that leaves no request to cancel). */
    usleep(500 * 1000);
    close(follower_fd);
    /* The follower leaves; the group rebalances without it, waiting for the
     * leader, which is still connected but has not rejoined. */
    long long gone = wait_group(port, group, "PreparingRebalance", 1, GONE_WITHIN_MS);
    fprintf(stderr, "[group-cancel] parked SyncGroup: member gone %lld ms after its connection closed\n", gone);
    if (gone < 0) {
        broker_print_log_tail(&b, 20);
        fail_msg("the member of a closed connection's parked SyncGroup was still in the group after %d ms",
                 GONE_WITHIN_MS);
    }
    close(leader_fd);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parked_join_of_closed_connection),
        cmocka_unit_test(test_parked_sync_of_closed_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
