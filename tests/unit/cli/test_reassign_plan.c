/* cairn reassign generate's planner: the replication factor kept, replicas
 * and leaders spread evenly over the brokers listed, current replicas (and
 * the current leader) kept while their broker carries no more than its
 * share, and a partition wider than the broker list refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "reassign_generate.h"

static void set(struct reassign_plan_partition *p, const char *topic, int32_t partition, const int32_t *ids, int32_t n)
{
    memset(p, 0, sizeof *p);
    p->topic = topic;
    p->partition = partition;
    memcpy(p->current, ids, (size_t)n * sizeof(*ids));
    p->current_count = n;
}

static bool has(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Six partitions of three replicas, all on brokers 1-3, spread over 1-6:
 * three replicas and one leader each, and every proposal distinct ids. */
static void test_spread_over_new_brokers(void **state)
{
    (void)state;
    struct reassign_plan_partition parts[6];
    for (int32_t i = 0; i < 6; i++)
        set(&parts[i], i < 3 ? "a" : "b", i % 3, (const int32_t[]){1, 2, 3}, 3);
    const int32_t brokers[] = {1, 2, 3, 4, 5, 6};
    char err[128];
    assert_int_equal(reassign_plan(parts, 6, brokers, 6, err, sizeof err), 0);
    int32_t replicas[7] = {0}, leaders[7] = {0};
    for (int32_t i = 0; i < 6; i++) {
        assert_int_equal(parts[i].proposed_count, 3);
        for (int32_t k = 0; k < 3; k++) {
            assert_true(parts[i].proposed[k] >= 1 && parts[i].proposed[k] <= 6);
            assert_false(has(parts[i].proposed, k, parts[i].proposed[k]));
            replicas[parts[i].proposed[k]]++;
        }
        leaders[parts[i].proposed[0]]++;
    }
    for (int32_t b = 1; b <= 6; b++) {
        assert_int_equal(replicas[b], 3);
        assert_int_equal(leaders[b], 1);
    }
    /* The first partition keeps its replicas and leader (nothing loaded yet). */
    assert_int_equal(parts[0].proposed[0], 1);
    assert_true(has(parts[0].proposed, 3, 2) && has(parts[0].proposed, 3, 3));
}

/* Moving off broker 4: what sits on 1-3 stays, 4's replica goes to the
 * least loaded broker, and a leader on 4 hands over. */
static void test_keeps_current_replicas(void **state)
{
    (void)state;
    struct reassign_plan_partition parts[3];
    set(&parts[0], "t", 0, (const int32_t[]){1, 2}, 2);
    set(&parts[1], "t", 1, (const int32_t[]){4, 3}, 2);
    set(&parts[2], "t", 2, (const int32_t[]){2, 4}, 2);
    const int32_t brokers[] = {1, 2, 3};
    char err[128];
    assert_int_equal(reassign_plan(parts, 3, brokers, 3, err, sizeof err), 0);
    assert_int_equal(parts[0].proposed[0], 1);
    assert_int_equal(parts[0].proposed[1], 2);
    assert_int_equal(parts[1].proposed[0], 3); /* 4 led: 3 takes over */
    assert_int_equal(parts[1].proposed[1], 1); /* 1 and 3 least loaded, 1 then */
    assert_int_equal(parts[2].proposed[0], 2);
    assert_int_equal(parts[2].proposed[1], 3);
}

static void test_too_few_brokers(void **state)
{
    (void)state;
    struct reassign_plan_partition p;
    set(&p, "wide", 0, (const int32_t[]){1, 2, 3}, 3);
    char err[128];
    assert_int_equal(reassign_plan(&p, 1, (const int32_t[]){1, 2}, 2, err, sizeof err), -1);
    assert_string_equal(err, "wide-0 has 3 replicas, more than the 2 brokers given");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spread_over_new_brokers),
        cmocka_unit_test(test_keeps_current_replicas),
        cmocka_unit_test(test_too_few_brokers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
