/* ISR shrink and expand at the leader, through three cairnd processes
 * (process.roles=broker,controller), replica.lag.time.max.ms 2000 and a
 * broker session of 30 s, so only the leader's AlterPartition can move a
 * live-registered follower out of the ISR in time. A topic with
 * replication factor 3 and min.insync.replicas=2: a follower killed with
 * kill -9 leaves the ISR (Metadata shows two members) within the lag plus
 * slack, and an acks=all produce waiting meanwhile succeeds; restarted,
 * it catches up and rejoins the ISR. Down again while DeleteRecords moves the leader's log
 * start past its end, restarted it starts its log over at that start.
 * The replication metrics on /metrics follow: the leader's
 * under-replicated, under-min-ISR and at-min-ISR gauges and its ISR shrink
 * and expand counters, and the followers' fetcher max lag. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_harness.h"
#include "net/client.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/fetch_request.h"
#include "protocol/generated/fetch_response.h"
#include "raw_kafka.h"
#include "rk_helpers.h"
#include "topic_configs.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAG_MS 2000
#define API_FETCH 1
#define LAG_MS_TEXT "2000"
/* A loaded machine (ASan, parallel builds) stretches fetches and commits. */
#define SLACK_MS 20000

#define CLUSTER_ID "SXNyU2hyaW5rRXhwYW5kMQ"

static void cluster_up(struct cluster *c)
{
    static const char *const extra[] = {"replica.lag.time.max.ms=" LAG_MS_TEXT, NULL};
    /* Sessions well past the lag time (the leaders shrink the ISR, not
     * the controller's fencing), short enough that a follower back from
     * kill -9, refused until its previous session lapses, is not long out. */
    replicated_cluster_start_session(c, CLUSTER_ID, extra, 12000);
}

/* The partition's ISR as a broker's Metadata names it; -1 when unknown. */
static int isr_of(rd_kafka_t *rk, const char *topic, int32_t isr[8])
{
    const struct rd_kafka_metadata *md = NULL;
    int n = -1;
    if (rd_kafka_metadata(rk, 1, NULL, &md, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return -1;
    for (int t = 0; t < md->topic_cnt; t++)
        if (strcmp(md->topics[t].topic, topic) == 0 && md->topics[t].partition_cnt == 1) {
            const rd_kafka_metadata_partition_t *p = &md->topics[t].partitions[0];
            n = p->isr_cnt < 8 ? p->isr_cnt : 8;
            for (int i = 0; i < n; i++)
                isr[i] = p->isrs[i];
        }
    rd_kafka_metadata_destroy(md);
    return n;
}

static bool has(const int32_t *ids, int n, int32_t id)
{
    for (int i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Waits until the leader's Metadata gives the ISR want members, with or
 * without follower; returns the time it took. */
static long long wait_isr(rd_kafka_t *rk, const char *topic, int want, int32_t follower, bool with, int timeout_ms)
{
    long long start = harness_now_ms();
    for (;;) {
        int32_t isr[8];
        int n = isr_of(rk, topic, isr);
        if (n == want && has(isr, n, follower) == with)
            return harness_now_ms() - start;
        if (harness_now_ms() - start > timeout_ms)
            fail_msg("ISR of %s: %d members (want %d, %s broker %d)", topic, n, want, with ? "with" : "without",
                     (int)follower);
        usleep(100 * 1000);
    }
}

/* AlterConfigs of one topic key (librdkafka has no incremental one here). */
static void set_topic_config(rd_kafka_t *rk, const char *topic, const char *key, const char *value)
{
    assert_int_equal(rk_set_topic_config(rk, topic, key, value), RD_KAFKA_RESP_ERR_NO_ERROR);
}

#define UNDER_REPLICATED "cairn_replication_under_replicated_partitions"
#define UNDER_MIN_ISR "cairn_replication_under_min_isr_partitions"
#define AT_MIN_ISR "cairn_replication_at_min_isr_partitions"
#define SHRINKS "cairn_replication_isr_shrinks_total"
#define EXPANDS "cairn_replication_isr_expands_total"
#define MAX_LAG "cairn_replication_fetcher_max_lag"
#define MAX_LAG_MS "cairn_replication_fetcher_max_lag_ms"

static void produce_all(rd_kafka_t *p, const char *topic, int count)
{
    for (int m = 0; m < count; m++) {
        char value[64];
        int vn = snprintf(value, sizeof value, "isr-%d", m);
        assert_int_equal(rk_produce_blocking(p, topic, 0, NULL, 0, value, (size_t)vn, 0, NULL, NULL), 0);
    }
    rd_kafka_flush(p, 60000);
}

static void test_isr_shrinks_and_grows_back(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
    const char *configs[] = {"min.insync.replicas", "2", NULL};
    int32_t leader = create_replicated(&c, "isr", configs);
    const char *bootstrap = broker_bootstrap(&c.nodes[leader - 1]);
    const char *conf[] = {"enable.idempotence", "true", "acks", "all", "message.timeout.ms", "60000", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    produce_all(p, "isr", 100);
    assert_int_equal(rk_producer_stats(p)->delivered, 100);
    /* Followers fetching keep the ISR whole past the lag. */
    wait_isr(p, "isr", 3, leader, true, 30000);
    usleep(2 * LAG_MS * 1000);
    int32_t isr[8];
    assert_int_equal(isr_of(p, "isr", isr), 3);
    int32_t follower = leader % 3 + 1;
    int32_t other = follower % 3 + 1; /* the follower that stays up */
    /* Whole ISR: nothing under-replicated; 3 in sync is above min 2.
     * Caught-up followers lag by nothing. An internal partition this
     * leader leads with one replica (created while fewer brokers were
     * live) is at its minimum of 1, as Kafka counts it: a baseline. */
    wait_metric(&c, leader, UNDER_REPLICATED, 0, false);
    wait_metric(&c, leader, UNDER_MIN_ISR, 0, false);
    long long at_min0 = metric(&c, leader, AT_MIN_ISR);
    assert_true(at_min0 >= 0);
    wait_metric(&c, other, MAX_LAG, 0, false);
    wait_metric(&c, follower, MAX_LAG, 0, false);
    long long shrinks0 = metric(&c, leader, SHRINKS), expands0 = metric(&c, leader, EXPANDS);
    assert_true(shrinks0 >= 0 && expands0 >= 0);

    long long killed_at = harness_now_ms();
    broker_kill9(&c.nodes[follower - 1]);
    /* acks=all sent at once waits while the dead follower holds the high
     * watermark, and is answered when the shrink lets it advance: two in
     * sync meet min.insync.replicas=2. */
    produce_all(p, "isr", 50);
    long long acked_ms = harness_now_ms() - killed_at;
    assert_int_equal(rk_producer_stats(p)->failed, 0);
    assert_int_equal(rk_producer_stats(p)->delivered, 150);
    wait_isr(p, "isr", 2, follower, false, LAG_MS + SLACK_MS);
    long long shrink_ms = harness_now_ms() - killed_at;
    fprintf(stderr,
            "[test] broker %d out of the ISR by %lld ms after kill -9, acks=all answered after %lld ms "
            "(replica.lag.time.max.ms %d)\n",
            (int)follower, shrink_ms, acked_ms, LAG_MS);
    assert_true(acked_ms <= LAG_MS + SLACK_MS);
    assert_true(broker_log_contains(&c.nodes[leader - 1], "ISR ["));
    /* A dead follower stays out (its last fetch does not bring it back). */
    usleep(LAG_MS * 1000);
    int n_isr = isr_of(p, "isr", isr);
    assert_int_equal(n_isr, 2);
    assert_false(has(isr, n_isr, follower));
    /* The leader counts the shrink and the partition now under-replicated
     * and at its minimum of 2; a minimum of 3 puts it under instead. The
     * leader may also lead internal partitions (their ISRs shrank in the
     * same round, more than a gauge period ago): counts are relative. */
    assert_true(metric(&c, leader, SHRINKS) >= shrinks0 + 1);
    wait_metric(&c, leader, UNDER_REPLICATED, 1, true);
    wait_metric(&c, leader, AT_MIN_ISR, at_min0 + 1, true);
    long long at_min = metric(&c, leader, AT_MIN_ISR), under_min = metric(&c, leader, UNDER_MIN_ISR);
    fprintf(stderr, "[test] leader %d: %lld under-replicated, %lld at min ISR, %lld under min ISR\n", (int)leader,
            metric(&c, leader, UNDER_REPLICATED), at_min, under_min);
    set_topic_config(p, "isr", "min.insync.replicas", "3");
    wait_metric(&c, leader, UNDER_MIN_ISR, under_min + 1, false);
    assert_int_equal(metric(&c, leader, AT_MIN_ISR), at_min - 1);
    set_topic_config(p, "isr", "min.insync.replicas", "2");
    wait_metric(&c, leader, UNDER_MIN_ISR, under_min, false);
    wait_metric(&c, leader, AT_MIN_ISR, at_min, false);
    /* Records the dead follower lacks: it has something to catch up on. */
    produce_all(p, "isr", 50);
    assert_int_equal(rk_producer_stats(p)->failed, 0);

    broker_restart(&c.nodes[follower - 1]);
    long long rejoin_ms = wait_isr(p, "isr", 3, follower, true, 60000);
    fprintf(stderr, "[test] broker %d back in the ISR %lld ms after its restart\n", (int)follower, rejoin_ms);
    /* The expand is counted and nothing is under-replicated or at its
     * minimum; the restarted follower caught up: no lag. */
    /* The counter moves when the AlterPartition answer arrives, which may
     * be after the ISR reached Metadata. */
    wait_metric(&c, leader, EXPANDS, expands0 + 1, true);
    wait_metric(&c, leader, UNDER_REPLICATED, 0, false);
    wait_metric(&c, leader, AT_MIN_ISR, at_min0, false);
    assert_int_equal(metric(&c, leader, UNDER_MIN_ISR), 0);
    wait_metric(&c, follower, MAX_LAG, 0, false);
    /* Back in sync it holds the high watermark again, and keeps up. */
    produce_all(p, "isr", 50);
    assert_int_equal(rk_producer_stats(p)->failed, 0);
    assert_int_equal(rk_producer_stats(p)->delivered, 250);
    assert_int_equal(isr_of(p, "isr", isr), 3);
    long want[1] = {250};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(bootstrap, "isr", 1, want, 30000, &set), 250);
    rk_record_set_free(&set);

    /* Down again while the leader goes on and DeleteRecords moves its log
     * start past the follower's end: restarted, the follower's fetch is
     * OFFSET_OUT_OF_RANGE, so it drops its log, starts at the leader's log
     * start, catches up and rejoins. */
    broker_kill9(&c.nodes[follower - 1]);
    wait_isr(p, "isr", 2, follower, false, LAG_MS + SLACK_MS);
    produce_all(p, "isr", 100);
    assert_int_equal(rk_producer_stats(p)->failed, 0);
    int64_t low = -1;
    assert_int_equal(rk_delete_records(p, "isr", 340, &low), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(low, 340);
    /* Ten more batches of one record each (the producer batched the 100).
     * The follower gets one batch a fetch, each held the full
     * replica.fetch.wait.max.ms (500) for a megabyte that never comes:
     * catching up takes seconds, and its max lag shows it. */
    for (int i = 0; i < 10; i++)
        produce_all(p, "isr", 1);
    assert_int_equal(rk_producer_stats(p)->failed, 0);
    broker_add_override(&c.nodes[follower - 1], "replica.fetch.max.bytes=1");
    broker_add_override(&c.nodes[follower - 1], "replica.fetch.min.bytes=1048576");
    broker_restart(&c.nodes[follower - 1]);
    long long max_lag = -1, max_lag_ms = -1, lag_deadline = harness_now_ms() + SLACK_MS;
    while ((max_lag <= 0 || max_lag_ms < 1000) && harness_now_ms() < lag_deadline) {
        long long v = metric(&c, follower, MAX_LAG);
        max_lag = v > max_lag ? v : max_lag;
        v = metric(&c, follower, MAX_LAG_MS);
        max_lag_ms = v > max_lag_ms ? v : max_lag_ms;
        usleep(20 * 1000);
    }
    fprintf(stderr, "[test] broker %d: fetcher max lag %lld records, %lld ms while catching up\n", (int)follower,
            max_lag, max_lag_ms);
    assert_true(max_lag > 0 && max_lag <= 10);
    /* Each one-record fetch is held 500 ms: behind for seconds. */
    assert_true(max_lag_ms >= 1000);
    wait_isr(p, "isr", 3, follower, true, 60000);
    wait_metric(&c, follower, MAX_LAG, 0, false);
    /* Caught up, the time lag is back under one held fetch and a bit. */
    long long settle = harness_now_ms() + SLACK_MS;
    while (metric(&c, follower, MAX_LAG_MS) > 1500) {
        if (harness_now_ms() > settle)
            fail_msg("broker %d: %s still %lld", (int)follower, MAX_LAG_MS, metric(&c, follower, MAX_LAG_MS));
        usleep(100 * 1000);
    }
    assert_true(broker_log_contains(&c.nodes[follower - 1], "truncated fully"));
    /* Its old segment went; the new log starts at the batch holding 340. */
    char path[700];
    snprintf(path, sizeof path, "%s/isr-0/%020d.log", c.nodes[follower - 1].data_dir, 0);
    assert_int_not_equal(access(path, F_OK), 0);
    /* In the ISR, it holds acks=all again. */
    produce_all(p, "isr", 10);
    assert_int_equal(rk_producer_stats(p)->failed, 0);
    assert_int_equal(rk_producer_stats(p)->delivered, 370);
    rk_producer_destroy(p);
    cluster_stop(&c);
}

/* The broker epoch a node last logged for itself, -1 when none. */
static long long logged_broker_epoch(const struct test_broker *b)
{
    FILE *f = fopen(b->log_path, "r");
    if (!f)
        return -1;
    char line[1024];
    long long epoch = -1;
    while (fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "now has broker epoch ");
        if (at)
            epoch = strtoll(at + strlen("now has broker epoch "), NULL, 10);
    }
    fclose(f);
    return epoch;
}

struct forged_answer {
    int16_t error;
    int64_t high_watermark;
};

static void forged_parse(const struct net_client_result *result, void *arg)
{
    struct forged_answer *a = arg;
    const struct fetch_response *m = result->response;
    if (result->status != NET_CLIENT_OK || !m || m->responses_count != 1 || m->responses[0].partitions_count != 1)
        return;
    a->error = m->responses[0].partitions[0].error_code;
    a->high_watermark = m->responses[0].partitions[0].high_watermark;
}

/* A follower's Fetch v15 of partition 0 as broker `replica` at broker
 * epoch `replica_epoch` (ReplicaState, KIP-903), sent by the test. */
static struct forged_answer forged_fetch(struct cluster *c, int32_t leader, const struct view *v, int32_t replica,
                                         int64_t replica_epoch, int64_t offset)
{
    struct fetch_request_fetch_partition part;
    fetch_request_fetch_partition_init(&part);
    part.partition = 0;
    part.fetch_offset = offset;
    part.current_leader_epoch = v->p[0].leader_epoch;
    part.partition_max_bytes = 1024;
    struct fetch_request_fetch_topic t;
    fetch_request_fetch_topic_init(&t);
    memcpy(t.topic_id.bytes, v->topic_id, sizeof t.topic_id.bytes);
    t.partitions = &part;
    t.partitions_count = 1;
    struct fetch_request req;
    fetch_request_init(&req);
    req.replica_id = -1;
    req.replica_state.replica_id = replica;
    req.replica_state.replica_epoch = replica_epoch;
    req.max_wait_ms = 0;
    req.min_bytes = 1;
    req.max_bytes = 1 << 20;
    req.session_epoch = -1;
    req.topics = &t;
    req.topics_count = 1;
    struct forged_answer a = {.error = -1, .high_watermark = -1};
    assert_int_equal(client_call(c->client, leader, API_FETCH, 15, &req, 10000, forged_parse, &a), NET_CLIENT_OK);
    return a;
}

/* KIP-903: the leader names each ISR member's broker epoch in
 * AlterPartition (v3), as the member's own fetches gave it. A fetch that
 * names an epoch the broker no longer has (an earlier incarnation's) must
 * not bring it back into the ISR: the controller answers
 * INELIGIBLE_REPLICA. The same fetch with the current epoch does. The
 * follower is paused throughout, so only the test's fetches speak for it. */
static void test_isr_refuses_stale_broker_epoch(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
    int32_t leader = create_replicated(&c, "stale", NULL);
    const char *bootstrap = broker_bootstrap(&c.nodes[leader - 1]);
    const char *conf[] = {"enable.idempotence", "true", "acks", "all", "message.timeout.ms", "60000", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    produce_all(p, "stale", 10);
    assert_int_equal(rk_producer_stats(p)->delivered, 10);
    wait_isr(p, "stale", 3, leader, true, 30000);
    int32_t follower = leader % 3 + 1;
    long long epoch = logged_broker_epoch(&c.nodes[follower - 1]);
    assert_true(epoch >= 0);
    long long stale = epoch > 0 ? epoch - 1 : epoch + 1;

    assert_int_equal(kill(c.nodes[follower - 1].pid, SIGSTOP), 0);
    wait_isr(p, "stale", 2, follower, false, LAG_MS + SLACK_MS);
    struct view v;
    assert_true(metadata(&c, leader, "stale", &v));
    assert_true(v.p[0].leader == leader);
    struct forged_answer a = forged_fetch(&c, leader, &v, follower, stale, 0);
    assert_int_equal(a.error, KAFKA_ERR_NONE);
    assert_true(a.high_watermark >= 10);
    int64_t end = a.high_watermark;

    /* Caught up, but at a stale epoch: refused, and it stays out. */
    for (int i = 0; i < 20; i++) {
        a = forged_fetch(&c, leader, &v, follower, stale, end);
        assert_int_equal(a.error, KAFKA_ERR_NONE);
        usleep(150 * 1000);
    }
    broker_wait_log(&c.nodes[leader - 1], "failed (error 107)", SLACK_MS);
    int32_t isr[8];
    int n = isr_of(p, "stale", isr);
    assert_int_equal(n, 2);
    assert_false(has(isr, n, follower));

    /* The same fetch at the epoch the broker has now brings it back. */
    long long deadline = harness_now_ms() + SLACK_MS;
    for (;;) {
        a = forged_fetch(&c, leader, &v, follower, epoch, end);
        assert_int_equal(a.error, KAFKA_ERR_NONE);
        n = isr_of(p, "stale", isr);
        if (n == 3 && has(isr, n, follower))
            break;
        if (harness_now_ms() > deadline)
            fail_msg("broker %d not back in the ISR at its current epoch %lld", (int)follower, epoch);
        usleep(150 * 1000);
    }
    assert_int_equal(kill(c.nodes[follower - 1].pid, SIGCONT), 0);
    produce_all(p, "stale", 10);
    assert_int_equal(rk_producer_stats(p)->failed, 0);
    assert_int_equal(rk_producer_stats(p)->delivered, 20);
    rk_producer_destroy(p);
    cluster_stop(&c);
}

/* acks=all with min.insync.replicas 3 on 3 replicas: a record sent while
 * a follower is dead waits, and when the ISR shrinks to 2 (which lets the
 * high watermark pass it) it is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND,
 * as Kafka does; the next is refused before the append with
 * NOT_ENOUGH_REPLICAS. */
static void test_acks_all_after_shrink_below_min_isr(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
    const char *configs[] = {"min.insync.replicas", "3", NULL};
    int32_t leader = create_replicated(&c, "below-min", configs);
    const char *bootstrap = broker_bootstrap(&c.nodes[leader - 1]);
    const char *conf[] = {"acks", "all", "retries", "0", "message.timeout.ms", "60000", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    wait_isr(p, "below-min", 3, leader, true, 30000);
    assert_int_equal(rk_produce_one_delivered(p, "below-min"), RD_KAFKA_RESP_ERR_NO_ERROR);
    int32_t follower = leader % 3 + 1;
    broker_kill9(&c.nodes[follower - 1]);
    struct rk_delivery_slot slot = {0};
    assert_int_equal(rk_produce_blocking(p, "below-min", 0, NULL, 0, "w", 1, 0, NULL, &slot), 0);
    long long deadline = harness_now_ms() + LAG_MS + SLACK_MS;
    while (!slot.done && harness_now_ms() < deadline)
        rd_kafka_poll(p, 100);
    assert_true(slot.done);
    fprintf(stderr, "[test] acks=all while the ISR shrank below min.insync.replicas: %s\n",
            rd_kafka_err2name(slot.err));
    assert_int_equal(slot.err, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND);
    wait_isr(p, "below-min", 2, follower, false, SLACK_MS);
    assert_int_equal(rk_produce_one_delivered(p, "below-min"), RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS);
    rk_producer_destroy(p);
    broker_restart(&c.nodes[follower - 1]);
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isr_shrinks_and_grows_back),
        cmocka_unit_test(test_isr_refuses_stale_broker_epoch),
        cmocka_unit_test(test_acks_all_after_shrink_below_min_isr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
