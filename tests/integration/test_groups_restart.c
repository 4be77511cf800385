/* Committed offsets survive a broker restart: a group consumes and commits,
 * the broker restarts, and the group resumes exactly after its commits
 * (nothing read twice, nothing skipped). Needs the durable group store
 * (__consumer_offsets) wired into the broker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"
#include "test_groups_common.h"

#define GR_FIRST 50  /* records per partition before the restart */
#define GR_SECOND 30 /* and after */

static void test_resume_after_restart(void **state)
{
    (void)state;
    static struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    const char *overrides[] = {"group.initial.rebalance.delay.ms=100", NULL};
    broker_start(&broker, overrides);
    const char *bootstrap = broker_bootstrap(&broker);
    rk_create_topic(bootstrap, "gr-restart", GT_PARTITIONS, NULL);
    gt_produce(bootstrap, "gr-restart", GR_FIRST, 0);

    static struct gt_world before;
    gt_world_init(&before);
    static struct gt_consumer c;
    gt_consumer_start(&c, &before, 0, bootstrap, "gr-group", "gr-restart", NULL);
    bool first = gt_wait_distinct(&before, (long)GR_FIRST * GT_PARTITIONS, 20000);
    gt_consumer_stop(&c); /* close revokes, which commits every position */
    assert_true(first);
    assert_int_equal(before.commit_failures, 0);

    gt_produce(bootstrap, "gr-restart", GR_SECOND, 0);
    broker_stop(&broker);
    broker_restart(&broker);
    bootstrap = broker_bootstrap(&broker);

    static struct gt_world after;
    gt_world_init(&after);
    gt_consumer_start(&c, &after, 0, bootstrap, "gr-group", "gr-restart", NULL);
    bool second = gt_wait_distinct(&after, (long)GR_SECOND * GT_PARTITIONS, 20000);
    usleep(1500000); /* anything re-read would show up by now */
    gt_consumer_stop(&c);

    long reread = 0, missing = 0;
    for (int p = 0; p < GT_PARTITIONS; p++) {
        for (int o = 0; o < GR_FIRST; o++)
            reread += after.seen[p][o] > 0;
        for (int o = GR_FIRST; o < GR_FIRST + GR_SECOND; o++)
            missing += after.seen[p][o] == 0;
    }
    fprintf(stderr, "[groups] after restart: %ld distinct, %ld re-read, %ld missing\n", after.distinct, reread,
            missing);
    assert_true(second);
    assert_int_equal(reread, 0);
    assert_int_equal(missing, 0);
    assert_int_equal(after.duplicates, 0);
    broker_mark_passed(&broker);
    broker_cleanup(&broker);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_after_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
