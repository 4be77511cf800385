/* Static membership (KIP-345) in the group coordinator: a restarted static
 * member takes over its identity without a rebalance, the leader's rejoin
 * per JoinGroup version (KIP-814), and LeaveGroup by instance id. */
#include "group_test_driver.h"

/* Two static members, inst-1 and inst-2, synced at generation 1; the
 * leader is assigned "L", the follower "F". */
struct static_pair {
    struct join_box leader, follower;
    const char *leader_instance, *follower_instance;
};

static void static_pair_stable(struct group_coordinator *gc, struct static_pair *pair)
{
    struct join_box a, b;
    join(gc, "", "inst-1", range_proto, 1, &a);
    join(gc, "", "inst-2", range_proto, 1, &b);
    advance(gc, 10);
    assert_true(a.done && b.done);
    assert_int_equal(a.generation, 1);
    bool a_leads = strcmp(a.leader, a.member_id) == 0;
    pair->leader = a_leads ? a : b;
    pair->follower = a_leads ? b : a;
    pair->leader_instance = a_leads ? "inst-1" : "inst-2";
    pair->follower_instance = a_leads ? "inst-2" : "inst-1";
    struct group_assignment as[] = {{pair->leader.member_id, (const uint8_t *)"L", 1},
                                    {pair->follower.member_id, (const uint8_t *)"F", 1}};
    struct sync_box sl, sf;
    /* The follower first: it waits for the leader's assignment. */
    do_sync(gc, pair->follower.member_id, 1, NULL, 0, &sf);
    do_sync(gc, pair->leader.member_id, 1, as, 2, &sl);
    assert_true(sl.done && sf.done);
    assert_string_equal(sl.assignment, "L");
    assert_string_equal(sf.assignment, "F");
}

/* After a static member rejoined as new_id: the group stayed Stable at
 * generation 1, new_id syncs straight to the old assignment, and the old
 * incarnation is fenced. */
static void assert_took_over(struct group_coordinator *gc, const struct join_box *again, const char *old_id,
                             const char *instance, const char *assignment)
{
    assert_true(again->done);
    assert_int_equal(again->error, KAFKA_ERR_NONE);
    assert_int_equal(again->generation, 1);
    assert_string_not_equal(again->member_id, old_id);
    struct group_description d;
    group_coordinator_describe(gc, "g", &d);
    assert_string_equal(d.state, "Stable");
    group_description_free(&d);
    struct sync_box s;
    do_sync(gc, again->member_id, 1, NULL, 0, &s);
    assert_int_equal(s.error, KAFKA_ERR_NONE);
    assert_string_equal(s.assignment, assignment);
    assert_int_equal(group_coordinator_heartbeat(gc, "g", 1, old_id, instance), KAFKA_ERR_FENCED_INSTANCE_ID);
}

static void test_static_member_rejoin(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct static_pair pair;
    static_pair_stable(gc, &pair);

    /* The follower restarts: a new member id, no rebalance, same generation,
     * even though its subscription bytes changed (the chosen protocol did
     * not). */
    const char *old_id = pair.follower.member_id;
    static const struct group_protocol range_v2[] = {{"range", (const uint8_t *)"sub-B", 5}};
    struct join_box again;
    join(gc, "", pair.follower_instance, range_v2, 1, &again);
    assert_took_over(gc, &again, old_id, pair.follower_instance, "F");
    struct join_box z;
    join(gc, old_id, pair.follower_instance, range_proto, 1, &z);
    assert_int_equal(z.error, KAFKA_ERR_FENCED_INSTANCE_ID);
    group_coordinator_destroy(gc);
}

static void test_leave_by_instance(void **state)
{
    (void)state;
    struct group_coordinator *gc = make_gc(0);
    struct join_box a, b;
    join(gc, "", "i1", range_proto, 1, &a);
    join(gc, "", "i2", range_proto, 1, &b);
    advance(gc, 10);
    struct group_leave_member lm[] = {
        {.member_id = "wrong-id", .group_instance_id = "i1"},
        {.member_id = "", .group_instance_id = "i2"},
        {.member_id = "nobody"},
    };
    assert_int_equal(group_coordinator_leave(gc, "g", lm, 3), KAFKA_ERR_NONE);
    assert_int_equal(lm[0].error_code, KAFKA_ERR_FENCED_INSTANCE_ID);
    assert_int_equal(lm[1].error_code, KAFKA_ERR_NONE);
    assert_int_equal(lm[2].error_code, KAFKA_ERR_UNKNOWN_MEMBER_ID);
    struct group_description d;
    group_coordinator_describe(gc, "g", &d);
    assert_int_equal(d.member_count, 1);
    assert_string_equal(d.members[0].group_instance_id, "i1");
    assert_string_equal(d.state, "PreparingRebalance");
    group_description_free(&d);
    group_coordinator_destroy(gc);
}

/* The leader restarts. From JoinGroup v9 on it hears that it leads, gets
 * every member and skip_assignment; before v9 it is told the old id leads
 * and gets no members, so it does not run an assignment the Stable group
 * would ignore. */
static void test_static_leader_rejoin(void **state)
{
    (void)state;
    for (int16_t version = 5; version <= 9; version += 4) {
        join_version = version;
        struct group_coordinator *gc = make_gc(0);
        struct static_pair pair;
        static_pair_stable(gc, &pair);
        const struct join_box *leader = &pair.leader;
        struct join_box again;
        join(gc, "", pair.leader_instance, range_proto, 1, &again);
        /* No rebalance either way: the generation and its assignment stay. */
        assert_took_over(gc, &again, leader->member_id, pair.leader_instance, "L");
        if (version >= 9) {
            assert_string_equal(again.leader, again.member_id);
            assert_int_equal(again.member_count, 2);
            assert_true(again.skip_assignment);
        } else {
            assert_string_equal(again.leader, leader->member_id);
            assert_int_equal(again.member_count, 0);
            assert_false(again.skip_assignment);
        }
        group_coordinator_destroy(gc);
    }
    join_version = 9;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_member_rejoin),
        cmocka_unit_test(test_static_leader_rejoin),
        cmocka_unit_test(test_leave_by_instance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
