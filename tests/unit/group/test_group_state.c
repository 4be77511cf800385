/* Group state transitions: the table accepts exactly Kafka's transitions
 * (GroupState.validPreviousStates, written out here independently), and
 * group_set_state applies a legal one and refuses an illegal one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/test_state_table.h"
#include "group/group_internal.h"

#define N_STATES (GROUP_DEAD + 1)

/* {to, from} pairs Kafka allows. */
static const int legal[][2] = {
    {GROUP_EMPTY, GROUP_PREPARING_REBALANCE},
    {GROUP_PREPARING_REBALANCE, GROUP_STABLE},
    {GROUP_PREPARING_REBALANCE, GROUP_COMPLETING_REBALANCE},
    {GROUP_PREPARING_REBALANCE, GROUP_EMPTY},
    {GROUP_COMPLETING_REBALANCE, GROUP_PREPARING_REBALANCE},
    {GROUP_STABLE, GROUP_COMPLETING_REBALANCE},
    {GROUP_DEAD, GROUP_STABLE},
    {GROUP_DEAD, GROUP_PREPARING_REBALANCE},
    {GROUP_DEAD, GROUP_COMPLETING_REBALANCE},
    {GROUP_DEAD, GROUP_EMPTY},
    {GROUP_DEAD, GROUP_DEAD},
};

static bool can_follow(int from, int to)
{
    return group_state_can_follow((enum group_state)from, (enum group_state)to);
}

static void test_table_is_kafkas(void **state)
{
    (void)state;
    test_check_state_table(N_STATES, legal, sizeof legal / sizeof legal[0], can_follow);
}

static int64_t fake_now(void *ctx)
{
    return *(int64_t *)ctx;
}

static void test_set_state(void **state)
{
    (void)state;
    int64_t now = 1000;
    struct group_coordinator gc;
    memset(&gc, 0, sizeof gc);
    gc.opts.now_ms = fake_now;
    gc.opts.clock_ctx = &now;
    struct group g = {.group_id = "g", .state = GROUP_EMPTY};
    /* A whole rebalance, then a member leaves and the group empties. */
    const enum group_state path[] = {GROUP_PREPARING_REBALANCE,
                                     GROUP_COMPLETING_REBALANCE,
                                     GROUP_STABLE,
                                     GROUP_PREPARING_REBALANCE,
                                     GROUP_EMPTY,
                                     GROUP_DEAD};
    for (size_t i = 0; i < sizeof path / sizeof path[0]; i++) {
        now += 10;
        assert_true(group_set_state(&gc, &g, path[i]));
        assert_int_equal(g.state, path[i]);
        assert_int_equal(g.state_timestamp, now);
    }
#ifdef NDEBUG
    /* Release builds refuse and log; debug builds assert instead. */
    g.state = GROUP_EMPTY;
    int64_t before = g.state_timestamp;
    now += 10;
    assert_false(group_set_state(&gc, &g, GROUP_STABLE));
    assert_int_equal(g.state, GROUP_EMPTY);
    assert_int_equal(g.state_timestamp, before);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_is_kafkas),
        cmocka_unit_test(test_set_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
