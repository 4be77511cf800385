/* Checks a state machine's transition table against the legal transitions
 * a test writes out independently: every listed pair accepted, every other
 * pair (and an out-of-range state) refused. Include after cmocka.h. */
#ifndef CAIRN_TESTS_COMMON_TEST_STATE_TABLE_H
#define CAIRN_TESTS_COMMON_TEST_STATE_TABLE_H

#include <stdbool.h>
#include <stddef.h>

/* The table under test, with the states as ints. */
typedef bool (*test_can_follow_fn)(int from, int to);

/* legal[i] is {to, from}: Kafka lists each state's valid previous states. */
static inline void test_check_state_table(int n_states, const int (*legal)[2], size_t n_legal,
                                          test_can_follow_fn can_follow)
{
    size_t allowed = 0;
    for (int from = 0; from < n_states; from++) {
        for (int to = 0; to < n_states; to++) {
            bool want = false;
            for (size_t i = 0; i < n_legal && !want; i++)
                want = legal[i][0] == to && legal[i][1] == from;
            bool got = can_follow(from, to);
            if (got != want)
                fail_msg("state %d -> %d: the table says %s", from, to, got ? "legal" : "illegal");
            allowed += got;
        }
    }
    assert_int_equal(allowed, n_legal);
    assert_false(can_follow(0, n_states));
    assert_false(can_follow(n_states, 0));
}

#endif
