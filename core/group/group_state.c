/* Group state transitions as data: each state lists the states it may
 * follow, as Kafka's GroupState.validPreviousStates does. Every state change
 * goes through group_set_state, which checks this table. Guarded by
 * group_coordinator.lock, like the groups it changes. */
#include <assert.h>

#include "group/group_internal.h"
#include "util/logger.h"

#define FROM(s) (1u << (s))

static const unsigned valid_previous[] = {
    [GROUP_EMPTY] = FROM(GROUP_PREPARING_REBALANCE),
    [GROUP_PREPARING_REBALANCE] = FROM(GROUP_STABLE) | FROM(GROUP_COMPLETING_REBALANCE) | FROM(GROUP_EMPTY),
    [GROUP_COMPLETING_REBALANCE] = FROM(GROUP_PREPARING_REBALANCE),
    [GROUP_STABLE] = FROM(GROUP_COMPLETING_REBALANCE),
    [GROUP_DEAD] = FROM(GROUP_STABLE) | FROM(GROUP_PREPARING_REBALANCE) | FROM(GROUP_COMPLETING_REBALANCE) |
                   FROM(GROUP_EMPTY) | FROM(GROUP_DEAD),
};

bool group_state_can_follow(enum group_state from, enum group_state to)
{
    size_t n = sizeof valid_previous / sizeof valid_previous[0];
    return (size_t)to < n && (size_t)from < n && (valid_previous[to] & FROM(from)) != 0;
}

bool group_set_state(struct group_coordinator *gc, struct group *g, enum group_state s)
{
    if (!group_state_can_follow(g->state, s)) {
        logger_error("group", "group %s: refused the illegal state change %s -> %s", g->group_id,
                     group_state_name(g->state), group_state_name(s));
        assert(!"illegal group state change");
        return false;
    }
    g->state = s;
    g->state_timestamp = group_wall_now(gc);
    return true;
}
