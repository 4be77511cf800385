/* The automatic preferred-leader rebalance and the controller gauges on a
 * three-node broker,controller cluster (leader_cluster.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "leader_cluster.h"
#include "protocol/generated/errors.h"

/* auto.leader.rebalance.enable with a 1 s check: a broker back in the ISR
 * of the partition it prefers leads it again without any request, and the
 * controller's gauges count the offline and the imbalanced partitions on
 * the way (other nodes report 0). */
static void test_auto_rebalance_and_gauges(void **state)
{
    (void)state;
    const char *extra[] = {"leader.imbalance.check.interval.seconds=1", "leader.imbalance.per.broker.percentage=10",
                           NULL};
    struct cluster c;
    leader_cluster_start(&c, extra);
    wait_settled(&c, 1, ALL, "", 20000);
    int32_t controller = agreed_controller(&c, -1, 15000);
    assert_int_equal(create_topic_rf(&c, controller, "rb", PARTS, 3), KAFKA_ERR_NONE);
    struct view before = wait_settled(&c, controller, ALL, "rb", 10000);
    int32_t victim = -1;
    int vp = -1;
    for (int p = 0; p < PARTS; p++)
        if (before.p[p].leader != controller) {
            victim = before.p[p].leader;
            vp = p;
        }
    assert_true(victim > 0);
    int other = 6 - controller - victim;
    assert_int_equal(create_assigned(&c, controller, "solo", (int32_t[]){victim}, 1), KAFKA_ERR_NONE);
    wait_metric(&c, controller, "cairn_controller_offline_partitions", 0, false);
    wait_metric(&c, controller, "cairn_controller_preferred_replica_imbalance", 0, false);

    broker_kill9(&c.nodes[victim - 1]);
    unsigned survivors = ALL & ~(1u << victim);
    struct view moved = wait_settled(&c, controller, survivors, "rb", SESSION_TIMEOUT_MS + SLACK_MS);
    assert_int_not_equal(moved.p[vp].leader, victim);
    /* solo-0 has no leader; it and rb-vp are not led by their first
     * replica (an internal topic's partition may be on the victim too). */
    wait_metric(&c, controller, "cairn_controller_offline_partitions", 1, true);
    wait_metric(&c, controller, "cairn_controller_preferred_replica_imbalance", 2, true);
    assert_int_equal(metric(&c, other, "cairn_controller_offline_partitions"), 0);
    assert_int_equal(metric(&c, other, "cairn_controller_preferred_replica_imbalance"), 0);

    /* Back: rb-vp's leader brings it into the ISR with its own
     * AlterPartition, and the next check gives it the leadership back. */
    broker_restart(&c.nodes[victim - 1]);
    long long back_at = harness_now_ms();
    for (int i = 0; i < N; i++) {
        long long until = harness_now_ms() + 2 * SLACK_MS;
        struct view v;
        while (!(metadata(&c, i + 1, "rb", &v) && v.p[vp].leader == victim))
            if (harness_now_ms() > until)
                fail_msg("node %d: the rebalance did not give rb-%d back to broker %d", i + 1, vp, victim);
            else
                usleep(100 * 1000);
        assert_true(v.p[vp].leader_epoch > moved.p[vp].leader_epoch);
        assert_true(in_isr(&v.p[vp], victim));
    }
    fprintf(stderr, "[test] rebalanced %lld ms after the restart (check interval 1 s)\n", harness_now_ms() - back_at);
    wait_metric(&c, controller, "cairn_controller_offline_partitions", 0, false); /* solo leads again */
    wait_metric(&c, controller, "cairn_controller_preferred_replica_imbalance", 0, false);
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_rebalance_and_gauges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
