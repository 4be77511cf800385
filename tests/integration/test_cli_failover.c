/* `cairn produce` when brokers fail under it, on real cairnd processes:
 *  - test_produce_epoch_bump: the leader forgets the producer
 *    (producer.id.expiration.ms passes between two lines), answers the next
 *    batch UNKNOWN_PRODUCER_ID, and the run carries on under a bumped epoch
 *    (KIP-360): the stored batches show epoch 0 then 1 of one producer id,
 *    sequences restarting at 0, no line lost or repeated;
 *  - test_produce_bootstrap_dies: three brokers, a replicated topic, cairn
 *    given only the partition leader's address with -b; that broker is
 *    killed mid-stream and the run still finishes well within --timeout
 *    (Metadata refreshes go to the other brokers the cluster listed), every
 *    line written once, as `cairn consume` from another broker shows; a
 *    `cairn consume` started on the same single broker reads them all;
 *  - test_admin_waits_for_controller: the controller and another voter
 *    killed; `cairn topic create` bootstrapped on the node left finds the
 *    controller it names dead, or NOT_CONTROLLER, and keeps asking
 *    Metadata again (as Kafka's admin client retries both) until the other
 *    voter is back and a new controller takes the request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_runner.h"
#include "cluster_harness.h"
#include "../common/test_file.h"

#define LINES 40
#define TEXT_(x) #x
#define TEXT(x) TEXT_(x)

struct batches {
    struct batch_ids b[64];
    int n;
};

static void note_batch(const uint8_t *batch, size_t len, void *ctx)
{
    struct batches *s = ctx;
    struct batch_ids ids = batch_ids_read(batch, len);
    if (s->n < 64)
        s->b[s->n++] = ids;
}

static void test_produce_epoch_bump(void **state)
{
    struct test_broker *b = *state;
    /* Debug logging shows when the leader drops the idle producer. */
    setenv("CAIRN_LOG_LEVEL", "debug", 1);
    broker_start(b, (const char *const[]){"producer.id.expiration.ms=1000",
                                          "producer.id.expiration.check.interval.ms=200", NULL});
    unsetenv("CAIRN_LOG_LEVEL");
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "topic", "create", "bump", "-b", bs);
    expect(&r, 0, NULL, NULL);
    struct bg_run prod;
    bg_start(&prod, "produce", (const char *const[]){"produce", "bump", "-b", bs, "-v", "--timeout", "30000", NULL});
    bg_write(&prod, "a\nb\n");
    bg_wait_lines(&prod, 2);
    /* Past producer.id.expiration.ms the leader drops the producer, so the
     * next batch (sequence 2) is UNKNOWN_PRODUCER_ID. */
    for (long long until = harness_now_ms() + 30000; !broker_log_contains(b, "expired 1 idle producers");
         usleep(100000))
        assert_true(harness_now_ms() < until);
    bg_write(&prod, "c\n");
    bg_wait_lines(&prod, 3);
    assert_int_equal(bg_finish(&prod), 0);
    bg_wait_output(&prod, "partition 0 offset 0\npartition 0 offset 1\npartition 0 offset 2\n");
    struct batches s = {.n = 0};
    broker_each_stored_batch(b, "bump-0", note_batch, &s);
    assert_int_equal(s.n, 2);
    assert_true(s.b[0].pid >= 0);
    assert_true(s.b[1].pid == s.b[0].pid);
    assert_int_equal(s.b[0].epoch, 0);
    assert_int_equal(s.b[0].seq, 0);
    assert_int_equal(s.b[0].count, 2);
    assert_int_equal(s.b[1].epoch, 1); /* the bumped epoch starts at 0 again */
    assert_int_equal(s.b[1].seq, 0);
    RUN(&r, "consume", "bump", "-b", bs, "-e");
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "a\nb\nc\n");
    broker_mark_passed(b);
}

static struct cluster g_cluster;

static int cluster_setup(void **state)
{
    (void)state;
    snprintf(g_home, sizeof g_home, "/tmp/cairn-failover-home-XXXXXX");
    if (!mkdtemp(g_home))
        return -1;
    static const char *const settings[] = {"replica.fetch.backoff.ms=200", NULL};
    /* A short session: the controller fences the killed broker and moves
     * its leaderships within seconds. */
    struct cluster_options o = {.cluster_id = "Q2xpRmFpbG92ZXJUZXN0cw",
                                .election_timeout_ms = 1000,
                                .session_timeout_ms = 4000,
                                .internal_partitions = 1,
                                .settings = settings};
    cluster_start(&g_cluster, &o);
    return 0;
}

static int cluster_teardown(void **state)
{
    (void)state;
    cluster_stop(&g_cluster);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_home);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_produce_bootstrap_dies(void **state)
{
    (void)state;
    wait_view(&g_cluster, 1, ALL, NULL, 0, 30000); /* every broker registered */
    int32_t controller = agreed_controller(&g_cluster, -1, 30000);
    assert_int_equal(create_topic_rf(&g_cluster, controller, "failover", 1, 3), 0);
    struct view v = wait_view(&g_cluster, 1, ALL, "failover", 1, 30000);
    int32_t a = v.leaders[0];
    assert_true(a >= 1 && a <= N);
    int32_t other = a % N + 1;
    /* The bootstrap broker itself knows the topic before cairn asks it:
     * the view above is node 1's, and a consumer's first lookup takes an
     * unknown topic at its word. */
    (void)wait_view(&g_cluster, a, ALL, "failover", 1, 30000);
    char boot[64], other_bs[64];
    snprintf(boot, sizeof boot, "%s", broker_bootstrap(&g_cluster.nodes[a - 1]));
    snprintf(other_bs, sizeof other_bs, "%s", broker_bootstrap(&g_cluster.nodes[other - 1]));
    /* Every replica in sync first, so the new leader has every line. */
    for (long long until = harness_now_ms() + 30000; v.p[0].isr_count < 3; usleep(100000)) {
        assert_true(harness_now_ms() < until);
        v = wait_view(&g_cluster, other, ALL, "failover", 1, 30000);
    }
    struct bg_run prod, cons;
    bg_start(&prod, "produce",
             (const char *const[]){"produce", "failover", "-b", boot, "-v", "--timeout", "60000", NULL});
    /* A reader on the same single bootstrap follows the leader move too. */
    bg_start(&cons, "consume",
             (const char *const[]){"consume", "failover", "-b", boot, "-c", TEXT(LINES), "--timeout", "60000", NULL});
    char line[32];
    for (int i = 0; i < LINES / 2; i++) {
        snprintf(line, sizeof line, "line%d\n", i);
        bg_write(&prod, line);
    }
    bg_wait_lines(&prod, LINES / 2);
    broker_kill9(&g_cluster.nodes[a - 1]);
    long long killed = harness_now_ms();
    for (int i = LINES / 2; i < LINES; i++) {
        snprintf(line, sizeof line, "line%d\n", i);
        bg_write(&prod, line);
    }
    assert_int_equal(bg_finish(&prod), 0);
    long long took = harness_now_ms() - killed;
    printf("produce finished %lld ms after its only bootstrap broker was killed\n", took);
    /* The fence takes the session timeout (4 s); --timeout is 60 s. */
    assert_true(took < 30000);
    struct run r;
    RUN(&r, "consume", "failover", "-b", other_bs, "-e", "--timeout", "30000");
    expect(&r, 0, NULL, NULL);
    char want[LINES * 12] = "";
    size_t used = 0;
    for (int i = 0; i < LINES; i++)
        used += (size_t)snprintf(want + used, sizeof want - used, "line%d\n", i);
    assert_string_equal(r.out, want);
    bg_wait_lines(&cons, LINES);
    assert_int_equal(bg_finish(&cons), 0);
    bg_wait_output(&cons, want);
}

static void test_admin_waits_for_controller(void **state)
{
    (void)state;
    wait_view(&g_cluster, 1, ALL, NULL, 0, 30000);
    int32_t controller = agreed_controller(&g_cluster, -1, 30000);
    int32_t left = controller % N + 1, other = left % N + 1;
    broker_kill9(&g_cluster.nodes[controller - 1]);
    broker_kill9(&g_cluster.nodes[other - 1]);
    char bs[64];
    snprintf(bs, sizeof bs, "%s", broker_bootstrap(&g_cluster.nodes[left - 1]));
    struct bg_run create;
    bg_start(&create, "create",
             (const char *const[]){"topic", "create", "waited", "-b", bs, "--timeout", "60000", NULL});
    /* The node left names the dead controller, then none: no answer yet. */
    usleep(2000000);
    assert_int_equal(waitpid(create.pid, NULL, WNOHANG), 0);
    /* A quorum again, without the controller cairn first heard of: it
     * gets there only by asking Metadata again. */
    broker_respawn(&g_cluster.nodes[other - 1]);
    broker_wait_ready(&g_cluster.nodes[other - 1]);
    assert_int_equal(bg_finish(&create), 0);
    bg_wait_lines(&create, 1);
    char *out = test_read_file(create.out_path, NULL);
    assert_non_null(out);
    assert_non_null(strstr(out, "created topic 'waited'"));
    free(out);
    broker_respawn(&g_cluster.nodes[controller - 1]);
    broker_wait_ready(&g_cluster.nodes[controller - 1]);
    struct view v = wait_view(&g_cluster, left, ALL, "waited", 1, 30000);
    assert_int_equal(v.partitions, 1);
}

int main(void)
{
    const struct CMUnitTest single[] = {
        cmocka_unit_test_setup_teardown(test_produce_epoch_bump, cli_setup, cli_teardown),
    };
    const struct CMUnitTest cluster[] = {
        cmocka_unit_test(test_admin_waits_for_controller),
        cmocka_unit_test(test_produce_bootstrap_dies),
    };
    int failed = cmocka_run_group_tests_name("single broker", single, NULL, NULL);
    failed += cmocka_run_group_tests_name("cluster", cluster, cluster_setup, cluster_teardown);
    return failed;
}
