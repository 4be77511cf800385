/* Transaction state transitions as data: each state lists the states it may
 * follow, as Kafka's TransactionState.validPreviousStates does. Guarded by
 * the coordinator's lock, like the entries it changes. */
#include <assert.h>

#include "protocol/generated/errors.h"
#include "txn/txn_coordinator_internal.h"
#include "util/logger.h"

#define FROM(s) (1u << (s))

static const unsigned valid_previous[] = {
    [TXN_STATE_EMPTY] = FROM(TXN_STATE_EMPTY) | FROM(TXN_STATE_COMPLETE_COMMIT) | FROM(TXN_STATE_COMPLETE_ABORT),
    [TXN_STATE_ONGOING] = FROM(TXN_STATE_ONGOING) | FROM(TXN_STATE_EMPTY) | FROM(TXN_STATE_COMPLETE_COMMIT) |
                          FROM(TXN_STATE_COMPLETE_ABORT),
    [TXN_STATE_PREPARE_COMMIT] = FROM(TXN_STATE_ONGOING),
    [TXN_STATE_PREPARE_ABORT] = FROM(TXN_STATE_ONGOING) | FROM(TXN_STATE_PREPARE_EPOCH_FENCE),
    [TXN_STATE_COMPLETE_COMMIT] = FROM(TXN_STATE_PREPARE_COMMIT),
    [TXN_STATE_COMPLETE_ABORT] = FROM(TXN_STATE_PREPARE_ABORT),
    [TXN_STATE_DEAD] = FROM(TXN_STATE_EMPTY) | FROM(TXN_STATE_COMPLETE_COMMIT) | FROM(TXN_STATE_COMPLETE_ABORT),
    [TXN_STATE_PREPARE_EPOCH_FENCE] = FROM(TXN_STATE_ONGOING),
};

bool txn_state_can_follow(enum txn_state from, enum txn_state to)
{
    size_t n = sizeof valid_previous / sizeof valid_previous[0];
    return (size_t)to < n && (size_t)from < n && (valid_previous[to] & FROM(from)) != 0;
}

int16_t txn_check_transition(const struct txn_entry *e, enum txn_state to)
{
    if (txn_state_can_follow(e->state, to))
        return KAFKA_ERR_NONE;
    logger_error("txn", "%s: refused the illegal state change %s -> %s", e->transactional_id, txn_state_name(e->state),
                 txn_state_name(to));
    assert(!"illegal transaction state change");
    return KAFKA_ERR_INVALID_TXN_STATE;
}

int16_t txn_set_state(struct txn_entry *e, enum txn_state to)
{
    int16_t code = txn_check_transition(e, to);
    if (code == KAFKA_ERR_NONE)
        e->state = to;
    return code;
}
