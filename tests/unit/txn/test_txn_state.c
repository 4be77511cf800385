/* Transaction state transitions: the table accepts exactly Kafka's
 * transitions (TransactionState.validPreviousStates, written out here
 * independently), and txn_set_state applies a legal one and refuses an
 * illegal one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/test_state_table.h"
#include "protocol/generated/errors.h"
#include "txn/txn_coordinator_internal.h"

#define N_STATES (TXN_STATE_PREPARE_EPOCH_FENCE + 1)

/* {to, from} pairs Kafka allows. */
static const int legal[][2] = {
    {TXN_STATE_EMPTY, TXN_STATE_EMPTY},
    {TXN_STATE_EMPTY, TXN_STATE_COMPLETE_COMMIT},
    {TXN_STATE_EMPTY, TXN_STATE_COMPLETE_ABORT},
    {TXN_STATE_ONGOING, TXN_STATE_ONGOING},
    {TXN_STATE_ONGOING, TXN_STATE_EMPTY},
    {TXN_STATE_ONGOING, TXN_STATE_COMPLETE_COMMIT},
    {TXN_STATE_ONGOING, TXN_STATE_COMPLETE_ABORT},
    {TXN_STATE_PREPARE_COMMIT, TXN_STATE_ONGOING},
    {TXN_STATE_PREPARE_ABORT, TXN_STATE_ONGOING},
    {TXN_STATE_PREPARE_ABORT, TXN_STATE_PREPARE_EPOCH_FENCE},
    {TXN_STATE_COMPLETE_COMMIT, TXN_STATE_PREPARE_COMMIT},
    {TXN_STATE_COMPLETE_ABORT, TXN_STATE_PREPARE_ABORT},
    {TXN_STATE_DEAD, TXN_STATE_EMPTY},
    {TXN_STATE_DEAD, TXN_STATE_COMPLETE_COMMIT},
    {TXN_STATE_DEAD, TXN_STATE_COMPLETE_ABORT},
    {TXN_STATE_PREPARE_EPOCH_FENCE, TXN_STATE_ONGOING},
};

static bool can_follow(int from, int to)
{
    return txn_state_can_follow((enum txn_state)from, (enum txn_state)to);
}

static void test_table_is_kafkas(void **state)
{
    (void)state;
    test_check_state_table(N_STATES, legal, sizeof legal / sizeof legal[0], can_follow);
}

static void test_set_state(void **state)
{
    (void)state;
    struct txn_entry e = {.transactional_id = "t", .state = TXN_STATE_EMPTY};
    /* A commit, an abort after a fence, then expiry. */
    const enum txn_state path[] = {TXN_STATE_ONGOING,
                                   TXN_STATE_PREPARE_COMMIT,
                                   TXN_STATE_COMPLETE_COMMIT,
                                   TXN_STATE_ONGOING,
                                   TXN_STATE_PREPARE_EPOCH_FENCE,
                                   TXN_STATE_PREPARE_ABORT,
                                   TXN_STATE_COMPLETE_ABORT,
                                   TXN_STATE_EMPTY,
                                   TXN_STATE_DEAD};
    for (size_t i = 0; i < sizeof path / sizeof path[0]; i++) {
        assert_int_equal(txn_set_state(&e, path[i]), KAFKA_ERR_NONE);
        assert_int_equal(e.state, path[i]);
    }
    /* txn_persist asks the table too (no log configured: nothing written). */
    struct txn_coordinator c;
    memset(&c, 0, sizeof c);
    e.state = TXN_STATE_COMPLETE_COMMIT;
    assert_int_equal(txn_persist(&c, &e, 1, 0, TXN_STATE_EMPTY, NULL, 0, -1, 0), KAFKA_ERR_NONE);
#ifdef NDEBUG
    /* Release builds refuse and log; debug builds assert instead. */
    assert_int_equal(txn_persist(&c, &e, 1, 0, TXN_STATE_PREPARE_ABORT, NULL, 0, -1, 0), KAFKA_ERR_INVALID_TXN_STATE);
    e.state = TXN_STATE_EMPTY;
    assert_int_equal(txn_check_transition(&e, TXN_STATE_PREPARE_COMMIT), KAFKA_ERR_INVALID_TXN_STATE);
    assert_int_equal(txn_set_state(&e, TXN_STATE_COMPLETE_COMMIT), KAFKA_ERR_INVALID_TXN_STATE);
    assert_int_equal(e.state, TXN_STATE_EMPTY);
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
