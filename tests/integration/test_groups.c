/* Consumer groups with librdkafka against one cairnd: members join and
 * leave while records flow into a 12-partition topic, and every record is
 * consumed exactly once, by the single owner of its partition, with the
 * range, roundrobin and cooperative-sticky assignors. With
 * cooperative-sticky, partitions that stay put keep flowing during the
 * rebalance. Two groups read one topic independently. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"
#include "test_groups_common.h"

#define GT_PER_PARTITION 400
#define GT_TESTS 4

/* Owned by the test's main thread. */
struct groups_state {
    struct test_broker broker;
    int passed;
};

struct producer_args {
    const char *bootstrap;
    const char *topic;
};

static void *producer_main(void *arg)
{
    struct producer_args *a = arg;
    gt_produce(a->bootstrap, a->topic, GT_PER_PARTITION, 6000);
    return NULL;
}

/* Four members at the end, five over the run: 0,1,2 start; 3 joins; 1
 * leaves; 4 joins. Checks exactly-once and single ownership throughout. */
static void run_membership_churn(struct groups_state *st, const char *assignor, const char *topic,
                                 long long *max_gap_ms)
{
    const char *bootstrap = broker_bootstrap(&st->broker);
    rk_create_topic(bootstrap, topic, GT_PARTITIONS, NULL);
    static struct gt_world w;
    gt_world_init(&w);
    const char *extra[] = {"partition.assignment.strategy", assignor, NULL};
    char group[64];
    snprintf(group, sizeof group, "churn-%s", assignor);
    static struct gt_consumer c[5];

    pthread_t producer;
    struct producer_args pa = {bootstrap, topic};
    if (pthread_create(&producer, NULL, producer_main, &pa) != 0)
        fail_msg("pthread_create");
    for (int i = 0; i < 3; i++)
        gt_consumer_start(&c[i], &w, i, bootstrap, group, topic, extra);
    usleep(2000000);
    gt_consumer_start(&c[3], &w, 3, bootstrap, group, topic, extra);
    usleep(1000000);
    /* A member that leaves in the middle of a rebalance commits with a
     * generation the group has already moved past, and Kafka refuses that
     * commit (ILLEGAL_GENERATION): its records would then be read again.
     * So the member leaves once the group has settled, as a graceful
     * shutdown does. */
    bool settled = gt_wait_settled(&w, 1500, 20000);
    gt_consumer_stop(&c[1]);
    usleep(1000000);
    gt_consumer_start(&c[4], &w, 4, bootstrap, group, topic, extra);
    pthread_join(producer, NULL);

    long total = (long)GT_PER_PARTITION * GT_PARTITIONS;
    bool all = gt_wait_distinct(&w, total, 30000);
    /* Let the last rebalance settle before checking who owns what. */
    long long settle = harness_now_ms() + 15000;
    int owned = 0;
    while (harness_now_ms() < settle) {
        owned = gt_owned_by(&w, 0) + gt_owned_by(&w, 2) + gt_owned_by(&w, 3) + gt_owned_by(&w, 4);
        if (owned == GT_PARTITIONS && gt_owned_by(&w, 4) > 0)
            break;
        usleep(100000);
    }
    int per[5];
    for (int i = 0; i < 5; i++)
        per[i] = gt_owned_by(&w, i);
    for (int i = 0; i < 5; i++)
        if (i != 1)
            gt_consumer_stop(&c[i]);

    fprintf(stderr,
            "[groups] %s: distinct %ld/%ld, duplicates %ld, foreign %ld, double owners %ld, "
            "commit failures %ld (retried %ld), max gap %lld ms, owned %d %d %d %d %d\n",
            assignor, w.distinct, total, w.duplicates, w.foreign, w.double_owner, w.commit_failures, w.commit_retries,
            w.max_unmoved_gap_ms, per[0], per[1], per[2], per[3], per[4]);
    if (w.error[0])
        fprintf(stderr, "[groups] first problem: %s\n", w.error);
    assert_true(settled);
    assert_true(all);
    assert_int_equal(w.distinct, total);
    assert_int_equal(w.duplicates, 0);
    assert_int_equal(w.foreign, 0);
    assert_int_equal(w.double_owner, 0);
    assert_int_equal(w.commit_failures, 0);
    assert_int_equal(owned, GT_PARTITIONS);
    assert_int_equal(per[1], 0);
    for (int i = 0; i < 5; i++)
        if (i != 1)
            assert_true(per[i] >= 2); /* 12 over 4: nobody idles */
    *max_gap_ms = w.max_unmoved_gap_ms;
}

static void test_range(void **state)
{
    struct groups_state *st = *state;
    long long gap;
    run_membership_churn(st, "range", "grp-range", &gap);
    st->passed++;
}

static void test_roundrobin(void **state)
{
    struct groups_state *st = *state;
    long long gap;
    run_membership_churn(st, "roundrobin", "grp-rr", &gap);
    st->passed++;
}

static void test_cooperative_sticky(void **state)
{
    struct groups_state *st = *state;
    long long gap;
    run_membership_churn(st, "cooperative-sticky", "grp-coop", &gap);
    /* Records arrive every ~15 ms per partition and fetches wait at most
     * 100 ms: a partition that never moved must not stall for a whole
     * rebalance. */
    assert_true(gap < 2500);
    st->passed++;
}

/* Two groups over one topic each read everything, independently. */
static void test_two_groups(void **state)
{
    struct groups_state *st = *state;
    const char *bootstrap = broker_bootstrap(&st->broker);
    const char *topic = "grp-two";
    rk_create_topic(bootstrap, topic, GT_PARTITIONS, NULL);
    gt_produce(bootstrap, topic, 50, 0);
    static struct gt_world wa, wb;
    gt_world_init(&wa);
    gt_world_init(&wb);
    static struct gt_consumer a, b;
    gt_consumer_start(&a, &wa, 0, bootstrap, "two-a", topic, NULL);
    gt_consumer_start(&b, &wb, 0, bootstrap, "two-b", topic, NULL);
    bool done_a = gt_wait_distinct(&wa, 50L * GT_PARTITIONS, 20000);
    bool done_b = gt_wait_distinct(&wb, 50L * GT_PARTITIONS, 20000);
    gt_consumer_stop(&a);
    gt_consumer_stop(&b);
    assert_true(done_a && done_b);
    assert_int_equal(wa.duplicates + wb.duplicates, 0);
    st->passed++;
}

static int groups_setup(void **state)
{
    static struct groups_state st;
    memset(&st, 0, sizeof st);
    *state = &st;
    const char *overrides[] = {"group.initial.rebalance.delay.ms=100", "num.partitions=12", NULL};
    broker_start(&st.broker, overrides);
    return 0;
}

static int groups_teardown(void **state)
{
    struct groups_state *st = *state;
    if (st->passed == GT_TESTS)
        broker_mark_passed(&st->broker);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_roundrobin),
        cmocka_unit_test(test_cooperative_sticky),
        cmocka_unit_test(test_two_groups),
    };
    return cmocka_run_group_tests(tests, groups_setup, groups_teardown);
}
