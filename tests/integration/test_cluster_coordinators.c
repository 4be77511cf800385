/* The group and transaction coordinators across three brokers (quorum
 * nodes, as test_cluster.c starts them). FindCoordinator, single-key (v3)
 * and batched (v4), answers the same coordinator at every broker: the
 * leader of the key's __consumer_offsets / __transaction_state partition,
 * abs(Java hashCode(key)) % partitions, as Metadata names it; and a
 * librdkafka consumer group bootstrapped on another broker works. A
 * transaction over partitions led by every broker gets its COMMIT/ABORT
 * markers on all of them (WriteTxnMarkers from the coordinator), also when
 * one leader is down at commit time and comes back later; a leader that is
 * not the coordinator verifies a transactional batch with it (KIP-890
 * part 1) and refuses one from an unknown producer id. EndTxn answers
 * only once the coordinator's state is replicated to its followers, and
 * not at all below transaction.state.log.min.isr; an offset commit only
 * once its followers have it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_coordinator_helpers.h"
#include "cluster_harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

#define INTERNAL_PARTITIONS 3
#define CLUSTER_ID COORD_CLUSTER_ID
#define KEYS FIND_MAX_KEYS

/* Waits until node lists topic with `partitions` partitions, each led by
 * a live broker; returns that view. */
static struct view wait_topic(struct cluster *c, int node, const char *topic, int partitions, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    struct view s;
    for (;;) {
        bool ok = metadata(c, node, topic, &s) && s.partitions == partitions;
        for (int p = 0; ok && p < partitions; p++)
            ok = s.leaders[p] >= 1 && s.leaders[p] <= N;
        if (ok)
            return s;
        if (harness_now_ms() > deadline)
            fail_msg("node %d: %s not listed with %d led partitions", node, topic, partitions);
        usleep(100 * 1000);
    }
}

static void cluster_up(struct cluster *c)
{
    struct cluster_options o = {
        .cluster_id = CLUSTER_ID, .election_timeout_ms = 1000, .session_timeout_ms = 9000, .internal_partitions = 3};
    cluster_start(c, &o);
}

/* "Hello World", "orders" and "tx-neg" hash negative, and abs and the
 * sign mask place them in different partitions of 3, so a wrong rule shows. */
static const char *const group_keys[KEYS] = {"Hello World", "orders", "g-1", "g-2", "payments-eu", "g-abc"};
static const char *const txn_keys[KEYS] = {"Hello World", "orders", "t-1", "t-2", "ledger", "tx-neg"};

/* Asks node for every key: one v3 request per key, then one v4 request
 * with all of them. Fills node_of[k] (both versions must agree); returns
 * false while some answer is an error (retry). */
static bool find_all(struct cluster *c, int node, int8_t key_type, const char *const *keys, int32_t *node_of,
                     int32_t *port_of, int16_t *last_error)
{
    for (int k = 0; k < KEYS; k++) {
        struct find_coordinator_request req;
        find_coordinator_request_init(&req);
        req.key = kafka_str_from_cstr(keys[k]);
        req.key_type = key_type;
        struct find_answers s;
        if (!find(c, node, 3, &req, &s) || s.answers != 1 || s.errors[0] != KAFKA_ERR_NONE) {
            *last_error = s.answers == 1 ? s.errors[0] : -1;
            return false;
        }
        node_of[k] = s.node_ids[0];
        port_of[k] = s.ports[0];
    }
    struct kafka_str batch[KEYS];
    for (int k = 0; k < KEYS; k++)
        batch[k] = kafka_str_from_cstr(keys[k]);
    struct find_coordinator_request req;
    find_coordinator_request_init(&req);
    req.key_type = key_type;
    req.coordinator_keys = batch;
    req.coordinator_keys_count = KEYS;
    struct find_answers s;
    if (!find(c, node, 4, &req, &s) || s.answers != KEYS)
        fail_msg("node %d: FindCoordinator v4 gave %d answers", node, s.answers);
    for (int k = 0; k < KEYS; k++) {
        assert_string_equal(s.keys[k], keys[k]);
        if (s.errors[k] != KAFKA_ERR_NONE) {
            *last_error = s.errors[k];
            return false;
        }
        assert_int_equal(s.node_ids[k], node_of[k]);
        assert_int_equal(s.ports[k], port_of[k]);
    }
    return true;
}

static void check_coordinators(struct cluster *c, int8_t key_type, const char *const *keys, const char *topic,
                               int32_t *coordinator_of)
{
    /* Where Metadata says each key's partition is led. */
    struct view view = wait_topic(c, 1, topic, INTERNAL_PARTITIONS, 30000);
    for (int node = 1; node <= N; node++) {
        int32_t node_of[KEYS], port_of[KEYS];
        int16_t last_error = 0;
        long long deadline = harness_now_ms() + 30000;
        while (!find_all(c, node, key_type, keys, node_of, port_of, &last_error)) {
            if (harness_now_ms() > deadline) {
                struct find_answers now;
                for (int k = 0; k < KEYS; k++) {
                    struct find_coordinator_request req;
                    find_coordinator_request_init(&req);
                    req.key = kafka_str_from_cstr(keys[k]);
                    req.key_type = key_type;
                    find(c, node, 3, &req, &now);
                    fprintf(stderr, "[test] node %d: %s (partition %d): error %d, node %d\n", node, keys[k],
                            kafka_partition_for(keys[k], INTERNAL_PARTITIONS), now.errors[0], now.node_ids[0]);
                }
                struct view seen;
                metadata(c, node, topic, &seen);
                fail_msg("node %d: FindCoordinator (key type %d) still answers error %d after 30 s (%s there: "
                         "%d partitions led by %d, %d, %d; brokers listed 0x%x)",
                         node, (int)key_type, (int)last_error, topic, seen.partitions, seen.leaders[0], seen.leaders[1],
                         seen.leaders[2], seen.brokers);
            }
            usleep(200 * 1000);
        }
        for (int k = 0; k < KEYS; k++) {
            int32_t want = view.leaders[kafka_partition_for(keys[k], INTERNAL_PARTITIONS)];
            if (node_of[k] != want)
                fail_msg("node %d names broker %d for %s (key type %d); the leader of its partition %d is %d", node,
                         node_of[k], keys[k], (int)key_type, kafka_partition_for(keys[k], INTERNAL_PARTITIONS), want);
            assert_int_equal(port_of[k], broker_port(&c->nodes[want - 1]));
            if (node == 1)
                coordinator_of[k] = node_of[k];
            assert_int_equal(node_of[k], coordinator_of[k]);
        }
    }
}

static void test_find_coordinator_from_every_broker(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
    int32_t controller = agreed_controller(&c, -1, 30000);
    (void)controller;
    assert_true(java_hash("Hello World") < 0 && java_hash("orders") < 0 && java_hash("tx-neg") < 0);
    int32_t group_coordinator[KEYS], txn_coordinator[KEYS];
    check_coordinators(&c, 0, group_keys, "__consumer_offsets", group_coordinator);
    check_coordinators(&c, 1, txn_keys, "__transaction_state", txn_coordinator);
    /* Where the internal partitions are led depends on how many brokers
     * had registered when the first one created the topics; at least two
     * of the three brokers asked are not the coordinator either way. */
    unsigned seen = 0;
    for (int k = 0; k < KEYS; k++)
        seen |= 1u << group_coordinator[k] | 1u << txn_coordinator[k];
    fprintf(stderr, "[test] the keys' coordinators are on %d broker(s)\n", __builtin_popcount(seen));

    /* A consumer group bootstrapped on a broker that does not coordinate
     * it: joins, reads every record, commits, and the commit reads back. */
    wait_all_brokers(&c, 30000);
    int32_t leader = agreed_controller(&c, -1, 30000);
    assert_int_equal(create_topic(&c, leader, "grp", 3), KAFKA_ERR_NONE);
    for (int node = 1; node <= N; node++)
        wait_topic(&c, node, "grp", 3, 20000);
    const char *group = group_keys[1];
    int bootstrap_node = group_coordinator[1] % N + 1;
    const char *bootstrap = broker_bootstrap(&c.nodes[bootstrap_node - 1]);
    rd_kafka_t *p = rk_producer_new(bootstrap, NULL);
    assert_true(rk_wait_topic(p, "grp", 3, 20000));
    for (int i = 0; i < 9; i++) {
        char value[16];
        int n = snprintf(value, sizeof value, "v%d", i);
        assert_int_equal(rk_produce_blocking(p, "grp", i % 3, NULL, 0, value, (size_t)n, 0, NULL, NULL), 0);
    }
    rd_kafka_flush(p, 20000);
    assert_int_equal(rk_producer_stats(p)->delivered, 9);
    rk_producer_destroy(p);

    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers",
                        bootstrap,
                        "group.id",
                        group,
                        "auto.offset.reset",
                        "earliest",
                        "enable.auto.commit",
                        "false",
                        "session.timeout.ms",
                        "10000",
                        NULL};
    for (int i = 0; kv[i]; i += 2)
        assert_int_equal(rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null(consumer);
    rd_kafka_poll_set_consumer(consumer);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, "grp", RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(consumer, topics), 0);
    rd_kafka_topic_partition_list_destroy(topics);
    int got = 0;
    long long deadline = harness_now_ms() + 60000;
    while (got < 9 && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 200);
        if (!m)
            continue;
        if (!m->err)
            got++;
        rd_kafka_message_destroy(m);
    }
    assert_int_equal(got, 9);
    assert_int_equal(rd_kafka_commit(consumer, NULL, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_t *committed = rd_kafka_topic_partition_list_new(3);
    for (int part = 0; part < 3; part++)
        rd_kafka_topic_partition_list_add(committed, "grp", part);
    assert_int_equal(rd_kafka_committed(consumer, committed, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    for (int part = 0; part < 3; part++)
        assert_int_equal(committed->elems[part].offset, 3);
    rd_kafka_topic_partition_list_destroy(committed);
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    cluster_stop(&c);
}

#define TXN_TOPIC "txn-spread"
#define TXN_PARTITIONS 6
#define MAX_SEEN 16

/* Every partition of TXN_TOPIC as a read_committed consumer sees it up to
 * its end (the last stable offset). */
struct committed_view {
    int count[TXN_PARTITIONS];
    char values[TXN_PARTITIONS][MAX_SEEN][32];
    bool at_end[TXN_PARTITIONS];
};

static void read_committed(const char *bootstrap, struct committed_view *v)
{
    memset(v, 0, sizeof *v);
    /* assign() wants a group id; nothing is committed to it. */
    const char *conf[] = {"isolation.level", "read_committed", "fetch.wait.max.ms", "100", "group.id", "reader", NULL};
    rd_kafka_t *rk = rk_consumer_new(bootstrap, conf);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(TXN_PARTITIONS);
    for (int p = 0; p < TXN_PARTITIONS; p++)
        rd_kafka_topic_partition_list_add(list, TXN_TOPIC, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    assert_int_equal(rd_kafka_assign(rk, list), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(list);
    int ended = 0;
    long long deadline = harness_now_ms() + 20000;
    while (ended < TXN_PARTITIONS && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        int p = m->partition;
        if (p >= 0 && p < TXN_PARTITIONS) {
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                if (!v->at_end[p])
                    ended++;
                v->at_end[p] = true;
            } else if (!m->err && v->count[p] < MAX_SEEN) {
                snprintf(v->values[p][v->count[p]++], sizeof v->values[p][0], "%.*s", (int)m->len,
                         m->payload ? (const char *)m->payload : "");
            }
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

/* Reads committed records until every partition is read to its end with
 * at least min records; false (with each partition's state on stderr)
 * after 60 s. view names each partition's leader. */
static bool wait_committed(const char *bootstrap, struct committed_view *v, int min, const struct view *view)
{
    long long deadline = harness_now_ms() + 60000;
    for (;;) {
        read_committed(bootstrap, v);
        bool complete = true;
        for (int part = 0; part < TXN_PARTITIONS; part++)
            complete &= v->at_end[part] && v->count[part] >= min;
        if (complete)
            return true;
        if (harness_now_ms() > deadline) {
            for (int part = 0; part < TXN_PARTITIONS; part++)
                fprintf(stderr, "[test] partition %d (leader %d): %d committed records, %s\n", part,
                        view->leaders[part], v->count[part], v->at_end[part] ? "at its end" : "no end reached");
            return false;
        }
        usleep(500 * 1000);
    }
}

static void produce_txn(rd_kafka_t *p, const char *prefix, int per_partition, bool commit)
{
    rk_expect_ok(rd_kafka_begin_transaction(p), "begin_transaction");
    for (int part = 0; part < TXN_PARTITIONS; part++) {
        for (int i = 0; i < per_partition; i++) {
            char value[32];
            int n = snprintf(value, sizeof value, "%s-p%d-%d", prefix, part, i);
            assert_int_equal(rk_produce_blocking(p, TXN_TOPIC, part, NULL, 0, value, (size_t)n, 0, NULL, NULL), 0);
        }
    }
    /* Every record is in its partition's log before the transaction ends
     * (an abort would otherwise drop unsent ones). */
    assert_int_equal(rd_kafka_flush(p, 60000), RD_KAFKA_RESP_ERR_NO_ERROR);
    if (commit)
        rk_expect_ok(rd_kafka_commit_transaction(p, 60000), "commit_transaction");
    else
        rk_expect_ok(rd_kafka_abort_transaction(p, 60000), "abort_transaction");
}

/* A transaction over partitions led by all three brokers: the coordinator
 * sends WriteTxnMarkers to the other leaders, so a read_committed consumer
 * reads exactly the committed records of every partition, none of the
 * aborted ones, and reaches the end of each (nothing stalls at an open
 * transaction). */
static void test_transaction_across_brokers(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
    wait_all_brokers(&c, 30000);
    int32_t leader = agreed_controller(&c, -1, 30000);
    assert_int_equal(create_topic(&c, leader, TXN_TOPIC, TXN_PARTITIONS), KAFKA_ERR_NONE);
    struct view view = wait_topic(&c, 1, TXN_TOPIC, TXN_PARTITIONS, 20000);
    unsigned led = 0;
    for (int p = 0; p < TXN_PARTITIONS; p++)
        led |= 1u << view.leaders[p];
    assert_int_equal(__builtin_popcount(led), N);
    for (int node = 2; node <= N; node++)
        wait_topic(&c, node, TXN_TOPIC, TXN_PARTITIONS, 20000);
    const char *bootstrap = broker_bootstrap(&c.nodes[leader % N]);
    const char *conf[] = {
        "transactional.id", "spread-producer", "transaction.timeout.ms", "60000", "linger.ms", "5", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    assert_true(rk_wait_topic(p, TXN_TOPIC, TXN_PARTITIONS, 20000));
    rk_expect_ok(rd_kafka_init_transactions(p, 60000), "init_transactions");
    produce_txn(p, "c1", 3, true);
    produce_txn(p, "ab", 2, false);
    produce_txn(p, "c2", 1, true);
    rk_producer_destroy(p);

    /* The markers follow EndTxn: wait for every partition's LSO to pass
     * the last commit, then the view must be exactly the committed data. */
    struct committed_view v;
    if (!wait_committed(bootstrap, &v, 4, &view))
        fail_msg("read_committed did not see every committed record within 60 s");
    for (int part = 0; part < TXN_PARTITIONS; part++) {
        assert_int_equal(v.count[part], 4);
        char want[32];
        for (int i = 0; i < 3; i++) {
            snprintf(want, sizeof want, "c1-p%d-%d", part, i);
            assert_string_equal(v.values[part][i], want);
        }
        snprintf(want, sizeof want, "c2-p%d-0", part);
        assert_string_equal(v.values[part][3], want);
    }
    /* Transaction verification across brokers: a leader that is not the
     * id's coordinator asks it (AddPartitionsToTxn v4 verify_only), which
     * knows no such producer id, so the batch is refused. */
    int32_t coordinator = coordinator_of(&c, 1, 1, "spread-producer");
    int part = 0;
    while (part < TXN_PARTITIONS - 1 && view.leaders[part] == coordinator)
        part++;
    assert_true(view.leaders[part] != coordinator);
    assert_int_equal(raw_produce_txn_record(broker_port(&c.nodes[view.leaders[part] - 1]), "spread-producer", TXN_TOPIC,
                                            part, 987654321, 0),
                     KAFKA_ERR_INVALID_PRODUCER_ID_MAPPING);
    cluster_stop(&c);
}

static int32_t txn_coordinator_of(struct cluster *c, int node, const char *id)
{
    return coordinator_of(c, node, 1, id);
}

/* A leader that is down when the transaction commits: its marker fails
 * (connection refused, then no leader while it is fenced) and is retried
 * until the broker is back, instead of being dropped; then a
 * read_committed consumer reads the transaction on every partition. */
static void test_markers_wait_for_a_leader_that_is_down(void **state)
{
    (void)state;
    struct cluster c;
    cluster_up(&c);
    wait_all_brokers(&c, 30000);
    int32_t controller = agreed_controller(&c, -1, 30000);
    const char *id = "retrying-producer";
    int32_t coordinator = -1;
    long long deadline = harness_now_ms() + 30000;
    while ((coordinator = txn_coordinator_of(&c, controller, id)) < 0 && harness_now_ms() < deadline)
        usleep(200 * 1000);
    assert_true(coordinator >= 1 && coordinator <= N);
    /* The victim leads a partition but neither coordinates nor controls. */
    int victim = 1;
    while (victim == coordinator || victim == controller)
        victim++;
    assert_true(victim <= N);
    assert_int_equal(create_topic(&c, controller, TXN_TOPIC, TXN_PARTITIONS), KAFKA_ERR_NONE);
    struct view view = wait_topic(&c, controller, TXN_TOPIC, TXN_PARTITIONS, 20000);
    bool victim_leads = false;
    for (int p = 0; p < TXN_PARTITIONS; p++)
        victim_leads |= view.leaders[p] == victim;
    assert_true(victim_leads);
    const char *bootstrap = broker_bootstrap(&c.nodes[coordinator - 1]);
    const char *conf[] = {"transactional.id", id, "transaction.timeout.ms", "60000", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    assert_true(rk_wait_topic(p, TXN_TOPIC, TXN_PARTITIONS, 20000));
    rk_expect_ok(rd_kafka_init_transactions(p, 60000), "init_transactions");
    rk_expect_ok(rd_kafka_begin_transaction(p), "begin_transaction");
    for (int part = 0; part < TXN_PARTITIONS; part++) {
        char value[32];
        int n = snprintf(value, sizeof value, "c1-p%d-0", part);
        assert_int_equal(rk_produce_blocking(p, TXN_TOPIC, part, NULL, 0, value, (size_t)n, 0, NULL, NULL), 0);
    }
    assert_int_equal(rd_kafka_flush(p, 60000), RD_KAFKA_RESP_ERR_NO_ERROR);
    broker_kill9(&c.nodes[victim - 1]);
    /* EndTxn only needs the coordinator's log; the markers follow. */
    rk_expect_ok(rd_kafka_commit_transaction(p, 60000), "commit_transaction");
    rk_producer_destroy(p);
    usleep(1500 * 1000); /* a few marker retries fail meanwhile */
    broker_restart(&c.nodes[victim - 1]);
    wait_all_brokers(&c, 30000);
    struct committed_view v;
    if (!wait_committed(bootstrap, &v, 1, &view))
        fail_msg("the commit did not reach broker %d's partitions within 60 s of its restart", victim);
    for (int part = 0; part < TXN_PARTITIONS; part++) {
        char want[32];
        snprintf(want, sizeof want, "c1-p%d-0", part);
        assert_int_equal(v.count[part], 1);
        assert_string_equal(v.values[part][0], want);
    }
    cluster_stop(&c);
}

/* Creates TXN_TOPIC and a transactional producer bootstrapped on the
 * coordinator, with its transaction begun. */
static rd_kafka_t *begin_txn_on(struct cluster *c, int32_t controller, int32_t coordinator, const char *id)
{
    assert_int_equal(create_topic(c, controller, TXN_TOPIC, TXN_PARTITIONS), KAFKA_ERR_NONE);
    wait_topic(c, controller, TXN_TOPIC, TXN_PARTITIONS, 20000);
    const char *bootstrap = broker_bootstrap(&c->nodes[coordinator - 1]);
    const char *conf[] = {"transactional.id", id, "transaction.timeout.ms", "60000", NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    assert_true(rk_wait_topic(p, TXN_TOPIC, TXN_PARTITIONS, 20000));
    rk_expect_ok(rd_kafka_init_transactions(p, 60000), "init_transactions");
    rk_expect_ok(rd_kafka_begin_transaction(p), "begin_transaction");
    return p;
}

/* Commits, retrying retriable errors for up to 60 s. */
static void commit_with_retries(rd_kafka_t *p, const char *what)
{
    rd_kafka_error_t *e;
    long long deadline = harness_now_ms() + 60000;
    while ((e = rd_kafka_commit_transaction(p, 10000)) && rd_kafka_error_is_retriable(e) &&
           harness_now_ms() < deadline) {
        rd_kafka_error_destroy(e);
        usleep(200 * 1000);
    }
    rk_expect_ok(e, what);
}

/* EndTxn is answered only once the coordinator's PrepareCommit is
 * replicated: with both followers of its __transaction_state partition
 * stopped, a commit cannot succeed (a state only the coordinator held
 * would be lost with its leadership; the next coordinator would then take
 * an aborted transaction for an open one and commit it). Once they run
 * again, the same commit completes. */
static void test_end_txn_waits_for_replication(void **state)
{
    (void)state;
    struct cluster c;
    const char *id = "replicated-end";
    int32_t controller = -1, coordinator = -1;
    start_with_replicas(&c, NULL, 1, id, 2, &controller, &coordinator);
    rd_kafka_t *p = begin_txn_on(&c, controller, coordinator, id);
    for (int part = 0; part < TXN_PARTITIONS; part++)
        assert_int_equal(rk_produce_blocking(p, TXN_TOPIC, part, NULL, 0, "r", 1, 0, NULL, NULL), 0);
    assert_int_equal(rd_kafka_flush(p, 60000), RD_KAFKA_RESP_ERR_NO_ERROR);
    /* A follower out of the ISR would leave the coordinator alone in it, and
     * then the commit may rightly succeed: wait for every replica. */
    wait_full_isr(&c, "__transaction_state", id, coordinator);
    for (int n = 1; n <= N; n++)
        if (n != coordinator)
            assert_int_equal(kill(c.nodes[n - 1].pid, SIGSTOP), 0);
    rd_kafka_error_t *e = rd_kafka_commit_transaction(p, 8000);
    for (int n = 1; n <= N; n++)
        if (n != coordinator)
            assert_int_equal(kill(c.nodes[n - 1].pid, SIGCONT), 0);
    if (!e)
        fail_msg("commit_transaction succeeded while the coordinator's followers were stopped");
    assert_true(rd_kafka_error_is_retriable(e));
    rd_kafka_error_destroy(e);
    /* Retried: the followers fetch the coordinator's state, the commit ends. */
    commit_with_retries(p, "commit_transaction after the followers resumed");
    rk_producer_destroy(p);
    cluster_stop(&c);
}

/* transaction.state.log.min.isr, here 3 (the replication factor): with
 * one follower of the coordinator's __transaction_state partition dead and
 * out of its ISR, the coordinator writes nothing and answers
 * COORDINATOR_NOT_AVAILABLE, which the client retries (a replicated write
 * alone would succeed on the two replicas left); with the follower back in
 * the ISR, the same commit completes. */
static void test_txn_log_min_isr(void **state)
{
    (void)state;
    static const char *const extra[] = {"transaction.state.log.min.isr=3", "replica.lag.time.max.ms=2000", NULL};
    const char *id = "min-isr-producer";
    int txn_partition = kafka_partition_for(id, 3);
    struct cluster c;
    int32_t controller = -1, coordinator = -1;
    long long deadline;
    start_with_replicas(&c, extra, 1, id, N, &controller, &coordinator);
    int victim = 1;
    while (victim == coordinator || victim == controller)
        victim++;
    assert_true(victim <= N);
    rd_kafka_t *p = begin_txn_on(&c, controller, coordinator, id);
    assert_int_equal(rk_produce_blocking(p, TXN_TOPIC, 0, NULL, 0, "m", 1, 0, NULL, NULL), 0);
    assert_int_equal(rd_kafka_flush(p, 60000), RD_KAFKA_RESP_ERR_NO_ERROR);

    broker_kill9(&c.nodes[victim - 1]);
    bool shrunk = false;
    deadline = harness_now_ms() + 30000;
    while (!shrunk && harness_now_ms() < deadline) {
        struct view v;
        shrunk = metadata(&c, coordinator, "__transaction_state", &v) && v.partitions == 3 &&
                 v.p[txn_partition].leader == coordinator && v.p[txn_partition].isr_count == N - 1;
        if (!shrunk)
            usleep(200 * 1000);
    }
    if (!shrunk)
        fail_msg("__transaction_state-%d kept broker %d in its ISR", txn_partition, victim);
    rd_kafka_error_t *e = rd_kafka_commit_transaction(p, 5000);
    if (!e)
        fail_msg("commit_transaction succeeded with %d of %d replicas in sync and min.isr %d", N - 1, N, N);
    assert_true(rd_kafka_error_is_retriable(e));
    rd_kafka_error_destroy(e);
    assert_true(broker_log_contains(&c.nodes[coordinator - 1], "below min.insync.replicas 3: not written"));

    broker_restart(&c.nodes[victim - 1]);
    wait_all_brokers(&c, 30000);
    commit_with_retries(p, "commit_transaction once the ISR is whole again");
    rk_producer_destroy(p);
    cluster_stop(&c);
}

/* An offset commit is answered only once the followers of its
 * __consumer_offsets partition have it: with them stopped, the commit
 * waits offsets.commit.timeout.ms and is answered COORDINATOR_NOT_AVAILABLE
 * (a commit only the coordinator held would be lost with its leadership);
 * with them running again, it succeeds. */
static void test_offset_commit_waits_for_replication(void **state)
{
    (void)state;
    static const char *const extra[] = {"offsets.commit.timeout.ms=2000", NULL};
    const char *group = "replicated-commit";
    struct cluster c;
    int32_t controller = -1, coordinator = -1;
    start_with_replicas(&c, extra, 0, group, 2, &controller, &coordinator);
    assert_int_equal(create_topic(&c, controller, TXN_TOPIC, 1), KAFKA_ERR_NONE);
    wait_topic(&c, coordinator, TXN_TOPIC, 1, 20000);
    wait_full_isr(&c, "__consumer_offsets", group, coordinator);
    long long deadline = harness_now_ms() + 30000;
    int code;
    while ((code = commit_offset(&c, coordinator, group, TXN_TOPIC, 5)) != KAFKA_ERR_NONE &&
           harness_now_ms() < deadline)
        usleep(200 * 1000);
    assert_int_equal(code, KAFKA_ERR_NONE);

    for (int n = 1; n <= N; n++)
        if (n != coordinator)
            assert_int_equal(kill(c.nodes[n - 1].pid, SIGSTOP), 0);
    long long start = harness_now_ms();
    code = commit_offset(&c, coordinator, group, TXN_TOPIC, 7);
    long long took = harness_now_ms() - start;
    for (int n = 1; n <= N; n++)
        if (n != coordinator)
            assert_int_equal(kill(c.nodes[n - 1].pid, SIGCONT), 0);
    if (code != KAFKA_ERR_COORDINATOR_NOT_AVAILABLE)
        fail_msg("a commit with the followers stopped was answered %d after %lld ms, not "
                 "COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms",
                 code, took);
    assert_true(took >= 1900);

    deadline = harness_now_ms() + 60000;
    while ((code = commit_offset(&c, coordinator, group, TXN_TOPIC, 7)) != KAFKA_ERR_NONE &&
           harness_now_ms() < deadline)
        usleep(200 * 1000);
    assert_int_equal(code, KAFKA_ERR_NONE);
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_coordinator_from_every_broker),
        cmocka_unit_test(test_transaction_across_brokers),
        cmocka_unit_test(test_markers_wait_for_a_leader_that_is_down),
        cmocka_unit_test(test_end_txn_waits_for_replication),
        cmocka_unit_test(test_txn_log_min_isr),
        cmocka_unit_test(test_offset_commit_waits_for_replication),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
