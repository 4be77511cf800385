/* The group coordinator's state machine, driven through its C API with a
 * fake clock: joins, syncs, heartbeats, leaves, timeouts,
 * offsets, and the store/load seam. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_coordinator.h"
#include "protocol/generated/errors.h"
#include "group_test_driver.h"

static void test_single_member_lifecycle(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(3000);
    struct join_box j;
    join_dynamic(gc, &j);
    assert_false(j.done); /* waits out the initial rebalance delay */
    advance(gc, 2000);
    assert_false(j.done);
    advance(gc, 1100);
    assert_true(j.done);
    assert_int_equal(j.error, KAFKA_ERR_NONE);
    assert_int_equal(j.generation, 1);
    assert_string_equal(j.leader, j.member_id);
    assert_string_equal(j.protocol, "range");
    assert_int_equal(j.member_count, 1);

    struct group_description d;
    group_coordinator_describe(gc, "g", &d);
    assert_string_equal(d.state, "CompletingRebalance");
    group_description_free(&d);

    struct group_assignment a = {j.member_id, (const uint8_t *)"ASSIGN-1", 8};
    struct sync_box s;
    do_sync(gc, j.member_id, 1, &a, 1, &s);
    assert_true(s.done);
    assert_int_equal(s.error, KAFKA_ERR_NONE);
    assert_string_equal(s.assignment, "ASSIGN-1");
    assert_int_equal(group_coordinator_heartbeat(gc, "g", 1, j.member_id, NULL), KAFKA_ERR_NONE);
    assert_int_equal(group_coordinator_heartbeat(gc, "g", 0, j.member_id, NULL), KAFKA_ERR_ILLEGAL_GENERATION);
    assert_int_equal(group_coordinator_heartbeat(gc, "g", 1, "someone-else", NULL), KAFKA_ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(group_coordinator_heartbeat(gc, "nope", 1, j.member_id, NULL), KAFKA_ERR_UNKNOWN_MEMBER_ID);

    group_coordinator_describe(gc, "g", &d);
    assert_string_equal(d.state, "Stable");
    assert_string_equal(d.protocol, "range");
    assert_int_equal(d.member_count, 1);
    assert_int_equal(d.members[0].assignment_len, 8);
    group_description_free(&d);

    struct group_leave_member lm = {.member_id = j.member_id};
    assert_int_equal(group_coordinator_leave(gc, "g", &lm, 1), KAFKA_ERR_NONE);
    assert_int_equal(lm.error_code, KAFKA_ERR_NONE);
    group_coordinator_describe(gc, "g", &d);
    assert_string_equal(d.state, "Empty");
    assert_int_equal(d.generation_id, 2);
    group_description_free(&d);
    group_coordinator_destroy(gc);
}

static void test_two_members_rebalance(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct join_box a, b;
    join_dynamic(gc, &a);
    advance(gc, 100);
    assert_true(a.done);
    struct group_assignment as1 = {a.member_id, (const uint8_t *)"all", 3};
    struct sync_box sa, sb;
    do_sync(gc, a.member_id, 1, &as1, 1, &sa);
    assert_true(sa.done);

    join_dynamic(gc, &b);
    assert_false(b.done);
    /* The existing member learns of the rebalance through its heartbeat. */
    assert_int_equal(group_coordinator_heartbeat(gc, "g", 1, a.member_id, NULL), KAFKA_ERR_REBALANCE_IN_PROGRESS);
    char a_id[256];
    snprintf(a_id, sizeof a_id, "%s", a.member_id);
    join(gc, a_id, NULL, range_proto, 1, &a);
    /* Everyone rejoined: the generation completes without waiting. */
    assert_true(a.done && b.done);
    assert_int_equal(a.generation, 2);
    assert_int_equal(b.generation, 2);
    assert_string_equal(a.leader, a_id);
    assert_int_equal(a.member_count, 2);
    assert_int_equal(b.member_count, 0);

    do_sync(gc, b.member_id, 2, NULL, 0, &sb);
    assert_false(sb.done); /* waits for the leader */
    assert_int_equal(group_coordinator_heartbeat(gc, "g", 2, a_id, NULL), KAFKA_ERR_NONE);
    struct group_assignment as2[] = {{a_id, (const uint8_t *)"p0", 2}, {b.member_id, (const uint8_t *)"p1", 2}};
    do_sync(gc, a_id, 2, as2, 2, &sa);
    assert_true(sa.done && sb.done);
    assert_string_equal(sa.assignment, "p0");
    assert_string_equal(sb.assignment, "p1");

    /* A stale generation is refused. */
    do_sync(gc, b.member_id, 1, NULL, 0, &sb);
    assert_int_equal(sb.error, KAFKA_ERR_ILLEGAL_GENERATION);
    group_coordinator_destroy(gc);
}

static void test_rebalance_timeout_removes_laggard(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct join_box a, b;
    join_dynamic(gc, &a);
    advance(gc, 10);
    join_dynamic(gc, &b);
    /* b arrived before a's generation synced: both are in generation 2. */
    char a_id[256];
    snprintf(a_id, sizeof a_id, "%s", a.member_id);
    join(gc, a_id, NULL, range_proto, 1, &a);
    assert_true(a.done && b.done);
    struct sync_box sa, sb;
    do_sync(gc, a_id, a.generation, NULL, 0, &sa);
    do_sync(gc, b.member_id, b.generation, NULL, 0, &sb);
    assert_true(sa.done && sb.done);

    /* A third member triggers a rebalance; b never rejoins. */
    struct join_box c;
    join_dynamic(gc, &c);
    join(gc, a_id, NULL, range_proto, 1, &a);
    assert_false(a.done);
    /* b keeps heartbeating but does not rejoin: removed at the rebalance timeout. */
    for (int i = 0; i < 5; i++) {
        advance(gc, 5000);
        if (!a.done)
            assert_int_equal(group_coordinator_heartbeat(gc, "g", b.generation, b.member_id, NULL),
                             KAFKA_ERR_REBALANCE_IN_PROGRESS);
    }
    assert_false(a.done);
    advance(gc, 6000);
    assert_true(a.done && c.done);
    assert_int_equal(a.member_count, 2);
    assert_int_equal(group_coordinator_heartbeat(gc, "g", a.generation, b.member_id, NULL),
                     KAFKA_ERR_UNKNOWN_MEMBER_ID);
    group_coordinator_destroy(gc);
}

static void test_session_timeout(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct join_box a;
    join_dynamic(gc, &a);
    advance(gc, 10);
    struct sync_box s;
    do_sync(gc, a.member_id, 1, NULL, 0, &s);
    assert_true(s.done);
    advance(gc, 9000);
    assert_int_equal(group_coordinator_heartbeat(gc, "g", 1, a.member_id, NULL), KAFKA_ERR_NONE);
    advance(gc, 9000); /* still within the session renewed by the heartbeat */
    struct group_description d;
    group_coordinator_describe(gc, "g", &d);
    assert_string_equal(d.state, "Stable");
    group_description_free(&d);
    advance(gc, 1100);
    group_coordinator_describe(gc, "g", &d);
    assert_string_equal(d.state, "Empty");
    assert_int_equal(d.member_count, 0);
    group_description_free(&d);
    group_coordinator_destroy(gc);
}

/* Defaults, the fake clock and no initial rebalance delay. */
static void manual_options(struct group_coordinator_options *o)
{
    group_coordinator_options_defaults(o);
    o->manual_time = true;
    o->now_ms = fake_clock;
    o->initial_rebalance_delay_ms = 0;
}

/* A JoinGroup of a KIP-394 client to group gid ("" member: a new one). */
static void join_to(struct group_coordinator *gc, const char *gid, const char *member, struct join_box *box)
{
    memset(box, 0, sizeof *box);
    struct group_join_params p = {.group_id = gid,
                                  .member_id = member,
                                  .client_id = "c",
                                  .protocol_type = "consumer",
                                  .protocols = range_proto,
                                  .protocol_count = 1,
                                  .session_timeout_ms = 10000,
                                  .rebalance_timeout_ms = 30000,
                                  .require_known_member_id = true};
    group_coordinator_join(gc, &p, join_cb, box);
}

static void join_new(struct group_coordinator *gc, const char *gid, struct join_box *box)
{
    join_to(gc, gid, "", box);
    assert_true(box->done);
}

/* One client sending JoinGroup without a member id over and over gets at
 * most group.max.pending.members (default 1000) pending ids in a group;
 * the next is told the group is full. */
static void test_pending_members_bounded_by_default(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct join_box j;
    for (int i = 0; i < 1000; i++) {
        join_new(gc, "g", &j);
        assert_int_equal(j.error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    }
    join_new(gc, "g", &j);
    assert_int_equal(j.error, KAFKA_ERR_GROUP_MAX_SIZE_REACHED);
    /* Pending ids expire at their session timeout, and make room. */
    advance(gc, 10001);
    join_new(gc, "g", &j);
    assert_int_equal(j.error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    group_coordinator_destroy(gc);
}

static void test_pending_members_bounds(void **state)
{
    (void)state;
    struct group_coordinator_options o;
    manual_options(&o);
    o.max_pending_members_per_group = 3;
    o.max_pending_members = 5;
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);
    struct join_box j, first;
    join_new(gc, "a", &first);
    assert_int_equal(first.error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    for (int i = 0; i < 2; i++) {
        join_new(gc, "a", &j);
        assert_int_equal(j.error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    }
    join_new(gc, "a", &j);
    assert_int_equal(j.error, KAFKA_ERR_GROUP_MAX_SIZE_REACHED);
    /* A pending member that joins with its id frees its place. */
    struct join_box parked; /* waits for the other pending ids */
    join_to(gc, "a", first.member_id, &parked);
    struct join_box again;
    join_new(gc, "a", &again);
    assert_int_equal(again.error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    /* 3 pending in a, 2 in b: the coordinator's bound answers a retriable
     * error in a third group. */
    for (int i = 0; i < 2; i++) {
        join_new(gc, "b", &j);
        assert_int_equal(j.error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    }
    join_new(gc, "c", &j);
    assert_int_equal(j.error, KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);
    /* A LeaveGroup of a pending id frees its place too. */
    struct group_leave_member lm = {.member_id = again.member_id};
    assert_int_equal(group_coordinator_leave(gc, "a", &lm, 1), KAFKA_ERR_NONE);
    assert_int_equal(lm.error_code, KAFKA_ERR_NONE);
    join_new(gc, "c", &j);
    assert_int_equal(j.error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    group_coordinator_destroy(gc);
}

static void test_join_validation(void **state)
{
    (void)state;
    struct group_coordinator_options o;
    manual_options(&o);
    o.max_group_size = 1;
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);

    struct join_box j;
    memset(&j, 0, sizeof j);
    struct group_join_params p = {.group_id = "g",
                                  .member_id = "",
                                  .protocol_type = "consumer",
                                  .protocols = range_proto,
                                  .protocol_count = 1,
                                  .session_timeout_ms = 10,
                                  .rebalance_timeout_ms = 100};
    group_coordinator_join(gc, &p, join_cb, &j);
    assert_int_equal(j.error, KAFKA_ERR_INVALID_SESSION_TIMEOUT);
    memset(&j, 0, sizeof j);
    p.session_timeout_ms = 10000;
    p.protocol_count = 0;
    group_coordinator_join(gc, &p, join_cb, &j);
    assert_int_equal(j.error, KAFKA_ERR_INCONSISTENT_GROUP_PROTOCOL);

    join(gc, "", NULL, range_proto, 1, &j);
    assert_int_equal(j.error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    struct join_box k;
    join(gc, "", NULL, range_proto, 1, &k);
    assert_int_equal(k.error, KAFKA_ERR_GROUP_MAX_SIZE_REACHED);
    char id[256];
    snprintf(id, sizeof id, "%s", j.member_id);
    join(gc, id, NULL, range_proto, 1, &j);
    advance(gc, 10);
    assert_int_equal(j.error, KAFKA_ERR_NONE);
    /* A protocol nobody in the group supports. */
    static const struct group_protocol other[] = {{"sticky", (const uint8_t *)"", 0}};
    join(gc, j.member_id, NULL, other, 1, &k);
    assert_int_equal(k.error, KAFKA_ERR_INCONSISTENT_GROUP_PROTOCOL);
    join(gc, "not-a-member", NULL, range_proto, 1, &k);
    assert_int_equal(k.error, KAFKA_ERR_UNKNOWN_MEMBER_ID);
    group_coordinator_destroy(gc);
}

static void test_list_filter(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct join_box j;
    join(gc, "", "i", range_proto, 1, &j);
    advance(gc, 10);
    struct sync_box s;
    do_sync(gc, j.member_id, 1, NULL, 0, &s);
    struct group_commit_params simple = {
        .group_id = "offsets-only", .generation_id = -1, .member_id = "", .retention_ms = -1};
    struct group_offset_commit c = {.topic = "t", .partition = 0, .offset = 1};
    group_coordinator_commit(gc, &simple, &c, 1);

    struct group_listing *l;
    size_t n;
    const char *stable[] = {"Stable"};
    assert_int_equal(group_coordinator_list(gc, stable, 1, &l, &n), KAFKA_ERR_NONE);
    assert_int_equal(n, 1);
    assert_string_equal(l[0].group_id, "g");
    assert_string_equal(l[0].protocol_type, "consumer");
    group_listing_free(l, n);
    const char *empty[] = {"empty"}; /* matched case-insensitively, as Kafka does */
    assert_int_equal(group_coordinator_list(gc, empty, 1, &l, &n), KAFKA_ERR_NONE);
    assert_int_equal(n, 1);
    assert_string_equal(l[0].group_id, "offsets-only");
    assert_string_equal(l[0].protocol_type, "");
    group_listing_free(l, n);
    assert_int_equal(group_coordinator_list(gc, NULL, 0, &l, &n), KAFKA_ERR_NONE);
    assert_int_equal(n, 2);
    group_listing_free(l, n);
    group_coordinator_destroy(gc);
}

static void test_protocol_vote(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct join_box a, b;
    join(gc, "", "i1", rr_range, 2, &a);
    join(gc, "", "i2", range_proto, 1, &b);
    advance(gc, 10);
    /* range is the only protocol both support. */
    assert_string_equal(a.protocol, "range");
    assert_string_equal(b.protocol, "range");
    group_coordinator_destroy(gc);
}

static void test_offsets(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct group_commit_params simple = {.group_id = "g", .generation_id = -1, .member_id = "", .retention_ms = -1};
    struct group_offset_commit c[] = {
        {.topic = "t", .partition = 0, .offset = 42, .leader_epoch = 3, .metadata = "meta", .metadata_len = 4},
        {.topic = "t", .partition = 1, .offset = 7, .leader_epoch = -1, .metadata = NULL},
        {.topic = "gone", .partition = 0, .offset = 1, .error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION},
    };
    group_coordinator_commit(gc, &simple, c, 3);
    assert_int_equal(c[0].error_code, KAFKA_ERR_NONE);
    assert_int_equal(c[1].error_code, KAFKA_ERR_NONE);
    assert_int_equal(c[2].error_code, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);

    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct group_offset_commit too_big = {
        .topic = "t", .partition = 2, .offset = 1, .metadata = big, .metadata_len = strlen(big)};
    group_coordinator_commit(gc, &simple, &too_big, 1);
    assert_int_equal(too_big.error_code, KAFKA_ERR_OFFSET_METADATA_TOO_LARGE);

    struct group_offset_fetch f[] = {{.topic = "t", .partition = 0}, {.topic = "t", .partition = 2}};
    assert_int_equal(group_coordinator_fetch_offsets(gc, "g", f, 2), KAFKA_ERR_NONE);
    assert_int_equal(f[0].offset, 42);
    assert_int_equal(f[0].leader_epoch, 3);
    assert_string_equal(f[0].metadata, "meta");
    assert_int_equal(f[1].offset, -1);
    free(f[0].metadata);
    free(f[1].metadata);
    struct group_offset_fetch *all;
    size_t n;
    assert_int_equal(group_coordinator_fetch_all_offsets(gc, "g", &all, &n), KAFKA_ERR_NONE);
    assert_int_equal(n, 2);
    group_offset_fetch_free(all, n);

    /* With members, commits need the right member and generation. */
    struct join_box j;
    join_dynamic(gc, &j);
    advance(gc, 10);
    struct group_offset_commit m = {.topic = "t", .partition = 0, .offset = 50};
    struct group_commit_params stale = {.group_id = "g", .generation_id = j.generation - 1, .member_id = j.member_id};
    group_coordinator_commit(gc, &stale, &m, 1);
    assert_int_equal(m.error_code, KAFKA_ERR_ILLEGAL_GENERATION);
    struct group_commit_params current = {.group_id = "g", .generation_id = j.generation, .member_id = j.member_id};
    m.error_code = 0;
    group_coordinator_commit(gc, &current, &m, 1);
    assert_int_equal(m.error_code, KAFKA_ERR_REBALANCE_IN_PROGRESS); /* not synced yet */
    struct sync_box s;
    do_sync(gc, j.member_id, j.generation, NULL, 0, &s);
    m.error_code = 0;
    group_coordinator_commit(gc, &stale, &m, 1);
    assert_int_equal(m.error_code, KAFKA_ERR_ILLEGAL_GENERATION);
    m.error_code = 0;
    group_coordinator_commit(gc, &simple, &m, 1);
    assert_int_equal(m.error_code, KAFKA_ERR_UNKNOWN_MEMBER_ID);
    struct group_commit_params good = {.group_id = "g", .generation_id = j.generation, .member_id = j.member_id};
    m.error_code = 0;
    group_coordinator_commit(gc, &good, &m, 1);
    assert_int_equal(m.error_code, KAFKA_ERR_NONE);

    /* The member subscribes (range_proto metadata is not a consumer
     * subscription naming "t"), so deleting t's offsets is allowed but
     * deleting the group is not. */
    assert_int_equal(group_coordinator_delete_group(gc, "g"), KAFKA_ERR_NON_EMPTY_GROUP);
    assert_int_equal(group_coordinator_delete_group(gc, "unknown"), KAFKA_ERR_GROUP_ID_NOT_FOUND);
    struct group_offset_delete del = {.topic = "t", .partition = 1};
    assert_int_equal(group_coordinator_delete_offsets(gc, "g", &del, 1), KAFKA_ERR_NONE);
    assert_int_equal(del.error_code, KAFKA_ERR_NONE);
    struct group_offset_fetch f1 = {.topic = "t", .partition = 1};
    group_coordinator_fetch_offsets(gc, "g", &f1, 1);
    assert_int_equal(f1.offset, -1);

    struct group_leave_member lm = {.member_id = j.member_id};
    group_coordinator_leave(gc, "g", &lm, 1);
    assert_int_equal(group_coordinator_delete_group(gc, "g"), KAFKA_ERR_NONE);
    struct group_listing *l;
    assert_int_equal(group_coordinator_list(gc, NULL, 0, &l, &n), KAFKA_ERR_NONE);
    assert_int_equal(n, 0);
    group_listing_free(l, n);
    group_coordinator_destroy(gc);
}

/* A consumer-protocol subscription: version 0, topics ["t"], no user data. */
static const uint8_t consumer_sub[] = {0, 0, 0, 0, 0, 1, 0, 1, 't', 0xff, 0xff, 0xff, 0xff};

static void test_offset_delete_subscribed(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct group_protocol proto = {"range", consumer_sub, sizeof consumer_sub};
    struct join_box j;
    join(gc, "", "i", &proto, 1, &j);
    advance(gc, 10);
    struct sync_box s;
    do_sync(gc, j.member_id, 1, NULL, 0, &s);
    struct group_commit_params good = {
        .group_id = "g", .generation_id = 1, .member_id = j.member_id, .group_instance_id = "i"};
    struct group_offset_commit c[] = {{.topic = "t", .partition = 0, .offset = 5},
                                      {.topic = "u", .partition = 0, .offset = 6}};
    group_coordinator_commit(gc, &good, c, 2);
    assert_int_equal(c[0].error_code, KAFKA_ERR_NONE);
    struct group_offset_delete d[] = {{.topic = "t", .partition = 0}, {.topic = "u", .partition = 0}};
    assert_int_equal(group_coordinator_delete_offsets(gc, "g", d, 2), KAFKA_ERR_NONE);
    assert_int_equal(d[0].error_code, KAFKA_ERR_GROUP_SUBSCRIBED_TO_TOPIC);
    assert_int_equal(d[1].error_code, KAFKA_ERR_NONE);
    group_coordinator_destroy(gc);
}

static void test_offset_expiry(void **state)
{
    (void)state;
    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.offsets_retention_ms = 60000;
    o.offsets_retention_check_interval_ms = 1000;
    fake_now = 5000000;
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);
    struct group_commit_params simple = {.group_id = "g", .generation_id = -1, .member_id = "", .retention_ms = -1};
    struct group_offset_commit c = {.topic = "t", .partition = 0, .offset = 9};
    group_coordinator_commit(gc, &simple, &c, 1);
    advance(gc, 30000);
    struct group_offset_fetch f = {.topic = "t", .partition = 0};
    group_coordinator_fetch_offsets(gc, "g", &f, 1);
    assert_int_equal(f.offset, 9);
    advance(gc, 31000);
    group_coordinator_fetch_offsets(gc, "g", &f, 1);
    assert_int_equal(f.offset, -1);
    struct group_description d;
    group_coordinator_describe(gc, "g", &d);
    assert_string_equal(d.state, "Dead"); /* gone with its last offset */
    group_description_free(&d);

    /* A group whose only member left, with no offsets, goes at the next sweep. */
    struct join_box j;
    memset(&j, 0, sizeof j);
    struct group_join_params p = {.group_id = "h",
                                  .member_id = "",
                                  .client_id = "c",
                                  .protocol_type = "consumer",
                                  .protocols = range_proto,
                                  .protocol_count = 1,
                                  .session_timeout_ms = 10000,
                                  .rebalance_timeout_ms = 10000};
    group_coordinator_join(gc, &p, join_cb, &j);
    advance(gc, 3100);
    assert_true(j.done);
    struct group_leave_member lm = {.member_id = j.member_id};
    group_coordinator_leave(gc, "h", &lm, 1);
    group_coordinator_describe(gc, "h", &d);
    assert_string_equal(d.state, "Empty");
    group_description_free(&d);
    advance(gc, 1000);
    group_coordinator_describe(gc, "h", &d);
    assert_string_equal(d.state, "Dead");
    group_description_free(&d);
    group_coordinator_destroy(gc);
}

static void test_offset_expiry_stable_group(void **state)
{
    (void)state;
    struct group_coordinator_options o;
    manual_options(&o);
    o.offsets_retention_ms = 60000;
    o.offsets_retention_check_interval_ms = 1000;
    o.min_session_timeout_ms = 1000;
    o.max_session_timeout_ms = 1000000;
    fake_now = 7000000;
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);
    struct group_protocol proto = {"range", consumer_sub, sizeof consumer_sub}; /* subscribes to "t" */
    struct join_box j;
    memset(&j, 0, sizeof j);
    struct group_join_params p = {.group_id = "g",
                                  .member_id = "",
                                  .group_instance_id = "i",
                                  .client_id = "c",
                                  .protocol_type = "consumer",
                                  .protocols = &proto,
                                  .protocol_count = 1,
                                  .session_timeout_ms = 500000,
                                  .rebalance_timeout_ms = 500000};
    group_coordinator_join(gc, &p, join_cb, &j);
    advance(gc, 10);
    struct sync_box s;
    do_sync(gc, j.member_id, 1, NULL, 0, &s);
    struct group_commit_params good = {
        .group_id = "g", .generation_id = 1, .member_id = j.member_id, .group_instance_id = "i", .retention_ms = -1};
    struct group_offset_commit c[] = {{.topic = "t", .partition = 0, .offset = 5},
                                      {.topic = "u", .partition = 0, .offset = 6}};
    group_coordinator_commit(gc, &good, c, 2);
    advance(gc, 61000);
    struct group_offset_fetch f[] = {{.topic = "t", .partition = 0}, {.topic = "u", .partition = 0}};
    group_coordinator_fetch_offsets(gc, "g", f, 2);
    assert_int_equal(f[0].offset, 5);  /* subscribed: kept */
    assert_int_equal(f[1].offset, -1); /* not subscribed: expired */
    free(f[0].metadata);
    free(f[1].metadata);
    struct group_description d;
    group_coordinator_describe(gc, "g", &d);
    assert_string_equal(d.state, "Stable");
    group_description_free(&d);
    group_coordinator_destroy(gc);
}

/* A store that records what it was asked to write. */
struct fake_store {
    int offsets_calls;
    int group_calls;
    int last_generation;
    size_t last_members;
    int16_t fail_with;
};

static int16_t fs_store_offsets(void *s, const char *g, const struct group_offset_record *o, size_t n)
{
    (void)g;
    (void)o;
    (void)n;
    struct fake_store *fs = s;
    fs->offsets_calls++;
    return fs->fail_with;
}

static int16_t fs_store_group(void *s, const struct group_snapshot_record *g)
{
    struct fake_store *fs = s;
    fs->group_calls++;
    fs->last_generation = g->generation;
    fs->last_members = g->member_count;
    return KAFKA_ERR_NONE;
}

static const struct group_store_ops fake_ops = {.store_offsets = fs_store_offsets, .store_group = fs_store_group};

static void test_store_and_load(void **state)
{
    (void)state;
    struct fake_store fs = {0};
    struct group_coordinator_options o;
    manual_options(&o);
    o.ops = &fake_ops;
    o.store = &fs;
    o.start_loading = true;
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);
    assert_true(group_coordinator_is_loading(gc));
    struct join_box j;
    join(gc, "", NULL, range_proto, 1, &j);
    assert_int_equal(j.error, KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS);

    /* Replay: an offset, a tombstoned offset, and a stable generation. */
    const struct group_load_visitor *v = group_coordinator_load_visitor();
    struct group_offset_record r = {.topic = "t",
                                    .partition = 0,
                                    .offset = 77,
                                    .leader_epoch = 2,
                                    .metadata = "m",
                                    .metadata_len = 1,
                                    .commit_timestamp = fake_now,
                                    .expire_timestamp = -1};
    v->offset(gc, "loaded", "t", 0, &r);
    v->offset(gc, "loaded", "t", 1, &r);
    v->offset(gc, "loaded", "t", 1, NULL);
    struct group_member_record mr = {.member_id = "m-1",
                                     .group_instance_id = "inst",
                                     .client_id = "c",
                                     .client_host = "/h",
                                     .rebalance_timeout_ms = 30000,
                                     .session_timeout_ms = 10000,
                                     .subscription = (const uint8_t *)"s",
                                     .subscription_len = 1,
                                     .assignment = (const uint8_t *)"A",
                                     .assignment_len = 1};
    struct group_snapshot_record gr = {.group_id = "loaded",
                                       .protocol_type = "consumer",
                                       .generation = 5,
                                       .protocol = "range",
                                       .leader = "m-1",
                                       .members = &mr,
                                       .member_count = 1};
    v->group(gc, "loaded", &gr);
    group_coordinator_set_loaded(gc);
    assert_false(group_coordinator_is_loading(gc));

    struct group_offset_fetch f[] = {{.topic = "t", .partition = 0}, {.topic = "t", .partition = 1}};
    group_coordinator_fetch_offsets(gc, "loaded", f, 2);
    assert_int_equal(f[0].offset, 77);
    assert_int_equal(f[1].offset, -1);
    free(f[0].metadata);
    free(f[1].metadata);
    struct group_description d;
    group_coordinator_describe(gc, "loaded", &d);
    assert_string_equal(d.state, "Stable");
    assert_int_equal(d.generation_id, 5);
    group_description_free(&d);
    /* The loaded member may carry on with its generation. */
    assert_int_equal(group_coordinator_heartbeat(gc, "loaded", 5, "m-1", "inst"), KAFKA_ERR_NONE);
    /* Until its session expires. */
    advance(gc, 11000);
    group_coordinator_describe(gc, "loaded", &d);
    assert_string_equal(d.state, "Empty");
    group_description_free(&d);
    assert_true(fs.group_calls >= 1);
    assert_int_equal(fs.last_members, 0);

    /* Commits reach the store first; a store failure is the client's answer. */
    struct group_commit_params simple = {
        .group_id = "loaded", .generation_id = -1, .member_id = "", .retention_ms = -1};
    struct group_offset_commit c = {.topic = "t", .partition = 0, .offset = 80};
    group_coordinator_commit(gc, &simple, &c, 1);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
    assert_int_equal(fs.offsets_calls, 1);
    fs.fail_with = KAFKA_ERR_NOT_COORDINATOR;
    c.error_code = 0;
    c.offset = 90;
    group_coordinator_commit(gc, &simple, &c, 1);
    assert_int_equal(c.error_code, KAFKA_ERR_NOT_COORDINATOR);
    struct group_offset_fetch f0 = {.topic = "t", .partition = 0};
    group_coordinator_fetch_offsets(gc, "loaded", &f0, 1);
    assert_int_equal(f0.offset, 80);
    free(f0.metadata);
    group_coordinator_destroy(gc);
}

static void test_shutdown_answers_parked(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(3000);
    struct join_box j;
    join_dynamic(gc, &j);
    assert_false(j.done);
    group_coordinator_shutdown(gc);
    assert_true(j.done);
    assert_int_equal(j.error, KAFKA_ERR_NOT_COORDINATOR);
    group_coordinator_destroy(gc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_member_lifecycle),
        cmocka_unit_test(test_two_members_rebalance),
        cmocka_unit_test(test_rebalance_timeout_removes_laggard),
        cmocka_unit_test(test_session_timeout),
        cmocka_unit_test(test_join_validation),
        cmocka_unit_test(test_pending_members_bounded_by_default),
        cmocka_unit_test(test_pending_members_bounds),
        cmocka_unit_test(test_protocol_vote),
        cmocka_unit_test(test_list_filter),
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_offset_delete_subscribed),
        cmocka_unit_test(test_offset_expiry),
        cmocka_unit_test(test_offset_expiry_stable_group),
        cmocka_unit_test(test_store_and_load),
        cmocka_unit_test(test_shutdown_answers_parked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
