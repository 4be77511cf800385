/* DescribeTopicPartitions (KIP-966) against three cairnd nodes: each
 * partition's leader, replicas and ISR as the controller placed them (and
 * as Metadata says), topics in name order with an unknown one answered
 * UNKNOWN_TOPIC_OR_PARTITION, a topic the authorizer hides answered
 * TOPIC_AUTHORIZATION_FAILED (and never named by a cursor), and paging by
 * ResponsePartitionLimit with the cursor across topics, as Kafka's broker
 * pages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "dtp_view.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/errors.h"

#define CLUSTER_ID "RGVzY1RvcGljUGFydHNBQg"
/* READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS,
 * ALTER_CONFIGS: every topic operation, as answered without an authorizer. */
#define ALL_TOPIC_OPS ((1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11))

static void create_rf(struct cluster *c, const char *name, int partitions, int16_t rf)
{
    long long deadline = harness_now_ms() + 60000;
    for (int node = 1;; node = node % N + 1) {
        int16_t err = create_topic_rf(c, node, name, partitions, rf);
        if (err == KAFKA_ERR_NONE || err == KAFKA_ERR_TOPIC_ALREADY_EXISTS)
            return;
        if (harness_now_ms() > deadline)
            fail_msg("CreateTopics %s: error %d", name, (int)err);
        usleep(200 * 1000);
    }
}

static bool all_replicas_in_sync(const struct dtp_topic *t, int partitions)
{
    if (t->error_code != KAFKA_ERR_NONE || t->partition_count != partitions)
        return false;
    for (int i = 0; i < partitions; i++)
        if (t->p[i].leader < 1 || t->p[i].isr_count != 3)
            return false;
    return true;
}

/* Waits until node answers both topics with a leader and three in-sync
 * replicas on every partition. */
static struct dtp_view wait_in_sync(struct cluster *c, int node)
{
    const char *both[] = {"dtp-b", "dtp-a", NULL};
    long long deadline = harness_now_ms() + 90000;
    struct dtp_view v;
    for (;;) {
        if (describe_topic_partitions(c->client, node, both, 2000, NULL, 0, &v) && v.topic_count == 2 &&
            all_replicas_in_sync(&v.topics[0], 3) && all_replicas_in_sync(&v.topics[1], 2))
            return v;
        if (harness_now_ms() > deadline)
            fail_msg("node %d: dtp-a and dtp-b never had three in-sync replicas everywhere", node);
        usleep(200 * 1000);
    }
}

static bool contains(const int32_t *ids, int n, int32_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static void expect_page(const struct dtp_view *v, const char *topic, int32_t first, int count)
{
    bool found = false;
    for (int t = 0; t < v->topic_count && !found; t++) {
        if (strcmp(v->topics[t].name, topic) != 0)
            continue;
        found = true;
        assert_int_equal(v->topics[t].partition_count, count);
        for (int i = 0; i < count; i++)
            assert_int_equal(v->topics[t].p[i].partition_index, first + i);
    }
    if (!found)
        fail_msg("%s is not in the page", topic);
}

static void expect_cursor(const struct dtp_view *v, const char *topic, int32_t partition)
{
    if (!topic) {
        assert_false(v->has_cursor);
        return;
    }
    assert_true(v->has_cursor);
    assert_string_equal(v->cursor_topic, topic);
    assert_int_equal(v->cursor_partition, partition);
}

static void test_describe_and_page(void **state)
{
    (void)state;
    struct cluster c;
    /* The test authorizer denies every operation on dtp-secret. */
    const char *authz[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz",
                           "plugin.test_authz.deny.topics=dtp-secret", NULL};
    replicated_cluster_start(&c, CLUSTER_ID, authz);
    /* First: a node that has dtp-a and dtp-b has it too (one log). */
    create_rf(&c, "dtp-secret", 1, 1);
    create_rf(&c, "dtp-a", 3, 3);
    create_rf(&c, "dtp-b", 2, 3);
    /* Every node asked below must have both topics first. */
    wait_in_sync(&c, 1);
    wait_in_sync(&c, 3);
    struct dtp_view v = wait_in_sync(&c, 2);

    /* Name order whatever the request's; leaders as Metadata has them. */
    assert_string_equal(v.topics[0].name, "dtp-a");
    assert_string_equal(v.topics[1].name, "dtp-b");
    expect_cursor(&v, NULL, 0);
    for (int t = 0; t < 2; t++) {
        struct view mv;
        assert_true(metadata(&c, 2, v.topics[t].name, &mv));
        assert_int_equal(v.topics[t].authorized_operations, ALL_TOPIC_OPS);
        for (int i = 0; i < v.topics[t].partition_count; i++) {
            const struct dtp_partition *p = &v.topics[t].p[i];
            assert_int_equal(p->error_code, KAFKA_ERR_NONE);
            assert_int_equal(p->partition_index, i);
            assert_int_equal(p->leader, mv.p[i].leader);
            assert_int_equal(p->leader_epoch, mv.p[i].leader_epoch);
            assert_int_equal(p->replica_count, 3);
            for (int32_t node = 1; node <= N; node++) {
                assert_true(contains(p->replicas, p->replica_count, node));
                assert_true(contains(p->isr, p->isr_count, node));
            }
            assert_int_equal(p->elr_count, 0);
            assert_int_equal(p->last_known_elr_count, 0);
            assert_int_equal(p->offline_count, 0);
        }
    }

    /* An unknown topic among known ones. */
    const char *with_unknown[] = {"dtp-missing", "dtp-b", NULL};
    assert_true(describe_topic_partitions(c.client, 1, with_unknown, 2000, NULL, 0, &v));
    assert_int_equal(v.topic_count, 2);
    assert_string_equal(v.topics[0].name, "dtp-b");
    assert_int_equal(v.topics[0].error_code, KAFKA_ERR_NONE);
    assert_string_equal(v.topics[1].name, "dtp-missing");
    assert_int_equal(v.topics[1].error_code, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(v.topics[1].partition_count, 0);

    /* Pages of two partitions: dtp-a 0-1, then dtp-a 2 and dtp-b 0, then
     * dtp-b 1 and no cursor. */
    const char *both[] = {"dtp-a", "dtp-b", NULL};
    assert_true(describe_topic_partitions(c.client, 1, both, 2, NULL, 0, &v));
    assert_int_equal(v.topic_count, 1);
    expect_page(&v, "dtp-a", 0, 2);
    expect_cursor(&v, "dtp-a", 2);
    assert_true(describe_topic_partitions(c.client, 1, both, 2, v.cursor_topic, v.cursor_partition, &v));
    assert_int_equal(v.topic_count, 2);
    expect_page(&v, "dtp-a", 2, 1);
    expect_page(&v, "dtp-b", 0, 1);
    expect_cursor(&v, "dtp-b", 1);
    assert_true(describe_topic_partitions(c.client, 1, both, 2, v.cursor_topic, v.cursor_partition, &v));
    assert_int_equal(v.topic_count, 1);
    expect_page(&v, "dtp-b", 1, 1);
    expect_cursor(&v, NULL, 0);

    /* A limit ending at a topic's end points the cursor at the next one. */
    assert_true(describe_topic_partitions(c.client, 1, both, 3, NULL, 0, &v));
    assert_int_equal(v.topic_count, 1);
    expect_page(&v, "dtp-a", 0, 3);
    expect_cursor(&v, "dtp-b", 0);

    /* Every topic (none named), from the cursor on. */
    assert_true(describe_topic_partitions(c.client, 3, NULL, 4, "dtp-a", 1, &v));
    expect_page(&v, "dtp-a", 1, 2);
    expect_page(&v, "dtp-b", 0, 2);
    /* The limit is spent at dtp-b's end; dtp-secret is next but hidden. */
    assert_int_equal(v.topic_count, 2);
    expect_cursor(&v, NULL, 0);

    /* A denied topic comes after the others, with no id or partitions. */
    const char *with_denied[] = {"dtp-secret", "dtp-a", NULL};
    assert_true(describe_topic_partitions(c.client, 1, with_denied, 2000, NULL, 0, &v));
    assert_int_equal(v.topic_count, 2);
    assert_string_equal(v.topics[0].name, "dtp-a");
    assert_int_equal(v.topics[0].error_code, KAFKA_ERR_NONE);
    assert_int_equal(v.topics[0].authorized_operations, ALL_TOPIC_OPS);
    assert_string_equal(v.topics[1].name, "dtp-secret");
    assert_int_equal(v.topics[1].error_code, KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(v.topics[1].partition_count, 0);
    assert_int_equal(v.topics[1].authorized_operations, INT32_MIN);

    /* A cursor on a topic the request does not name. */
    const char *only_b[] = {"dtp-b", NULL};
    assert_true(describe_topic_partitions(c.client, 1, only_b, 10, "dtp-a", 0, &v));
    assert_int_equal(v.topic_count, 1);
    assert_int_equal(v.topics[0].error_code, KAFKA_ERR_INVALID_REQUEST);

    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe_and_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
