/* A certificate rotation on the cluster's own links, with real cairnd
 * processes: three broker,controller nodes whose controller listener
 * (CONTROLLER) and inter-broker listener (INTERNAL) are SSL with client
 * certificates required, all reading one keystore file and one truststore
 * file. The keystore starts signed by CA1 (ca.pem) and the truststore
 * holds CA1 and CA2 (other-ca.pem). A topic with replication factor 3 and
 * min.insync.replicas=3 takes acks=all records; then the keystore is
 * rewritten with a CA2 certificate and every node gets SIGHUP, then the
 * truststore with CA2 alone and SIGHUP again. One node is killed (-9) and
 * restarted, so every link to and from it reconnects: it trusts CA2 only,
 * so the others' links must present their new certificates. It leads the
 * topic's partition (its first replica; should the controller move the
 * leadership while it is down, the rebalance every second gives it back
 * once it is in the ISR), so the others' replica fetchers connect to it.
 * The ISR is full again and acks=all succeeds. Before the
 * rotation, a truststore that is no certificate at all is refused on
 * SIGHUP with a line naming the link and the file, and the old one stays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster_harness.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"
#include "rk_helpers.h"
#include "tls_cluster.h"

#define TOPIC "rotate"
#define RECORDS 50
#define RELOADED "link: TLS certificates and keys reloaded"
#define LAG_TIME_MS 30000
#define STR_(x) #x
#define STR(x) STR_(x)

static char certs_dir[256];

static int group_setup(void **state)
{
    (void)state;
    return tls_certs_make("cairn-tls-rotation", certs_dir, sizeof certs_dir);
}

static int group_teardown(void **state)
{
    (void)state;
    return tls_certs_remove(certs_dir);
}

/* RF 3 led first by `leader`, min.insync.replicas=3, at the active
 * controller. */
static void create_led_by(struct cluster *c, int32_t controller, int32_t leader)
{
    int32_t replicas[N] = {leader, leader % N + 1, (leader + 1) % N + 1};
    struct create_topics_request_creatable_replica_assignment a;
    create_topics_request_creatable_replica_assignment_init(&a);
    a.partition_index = 0;
    a.broker_ids = replicas;
    a.broker_ids_count = N;
    struct create_topics_request_creatable_topic_config min_isr = {kafka_str_from_cstr("min.insync.replicas"),
                                                                   kafka_str_from_cstr("3")};
    struct create_topics_request_creatable_topic t;
    create_topics_request_creatable_topic_init(&t);
    t.name = kafka_str_from_cstr(TOPIC);
    t.num_partitions = -1;
    t.replication_factor = -1;
    t.assignments = &a;
    t.assignments_count = 1;
    t.configs = &min_isr;
    t.configs_count = 1;
    long long deadline = harness_now_ms() + 30000;
    int16_t err;
    while ((err = create_one_topic(c, controller, &t)) != KAFKA_ERR_NONE && err != KAFKA_ERR_TOPIC_ALREADY_EXISTS) {
        if (harness_now_ms() > deadline)
            fail_msg("CreateTopics %s: error %d", TOPIC, err);
        usleep(200 * 1000);
    }
}

/* Until node 1 reports the partition led by `leader` with all three in
 * the ISR. */
static void wait_full_isr(struct cluster *c, int32_t leader, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    struct view v;
    for (;;) {
        bool ok = metadata(c, 1, TOPIC, &v);
        if (ok && v.partitions == 1 && v.p[0].leader == leader && v.p[0].isr_count == N)
            return;
        if (harness_now_ms() > deadline)
            fail_msg("%s-0: leader %d with %d in the ISR, want %d with %d", TOPIC, ok ? v.p[0].leader : -2,
                     ok ? v.p[0].isr_count : -2, leader, N);
        usleep(200 * 1000);
    }
}

/* RECORDS acks=all records, each delivered within timeout_ms: with
 * min.insync.replicas=3 the leader answers only once both followers
 * fetched them over their INTERNAL (SSL) links. */
static void produce_all_acked(const char *bootstrap, int round, int timeout_ms)
{
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", timeout_ms);
    const char *conf[] = {"enable.idempotence", "true", "acks", "all", "message.timeout.ms", timeout, NULL};
    rd_kafka_t *p = rk_producer_new(bootstrap, conf);
    for (int m = 0; m < RECORDS; m++) {
        char value[64];
        int vn = snprintf(value, sizeof value, "round-%d-%d", round, m);
        assert_int_equal(rk_produce_blocking(p, TOPIC, 0, NULL, 0, value, (size_t)vn, 0, NULL, NULL), 0);
    }
    rd_kafka_flush(p, timeout_ms + 10000);
    struct rk_delivery_stats *stats = rk_producer_stats(p);
    if (stats->failed || stats->delivered != RECORDS)
        fail_msg("round %d: %ld of %d delivered, %ld failed: %s", round, stats->delivered, RECORDS, stats->failed,
                 stats->failed ? stats->first_error_text : "-");
    rk_producer_destroy(p);
}

static void sighup_all(struct cluster *c)
{
    for (int i = 0; i < N; i++)
        assert_int_equal(kill(broker_pid(&c->nodes[i]), SIGHUP), 0);
}

/* Both links of every node reloaded `times` times in all. */
static void wait_links_reloaded(struct cluster *c, int times)
{
    for (int i = 0; i < N; i++) {
        broker_wait_log_count(&c->nodes[i], "inter-broker " RELOADED, times, 20000);
        /* The broker's controller link and the quorum's own. */
        broker_wait_log_count(&c->nodes[i], "controller " RELOADED, 2 * times, 20000);
    }
}

static void test_links_follow_a_certificate_rotation(void **state)
{
    (void)state;
    static const char *const ca1_signed[] = {"server.pem", NULL};
    static const char *const ca2_signed[] = {"other-server.pem", NULL};
    static const char *const both_cas[] = {"ca.pem", "other-ca.pem", NULL};
    static const char *const ca2_only[] = {"other-ca.pem", NULL};
    tls_certs_write(certs_dir, "keystore.pem", ca1_signed);
    tls_certs_write(certs_dir, "truststore.pem", both_cas);
    char keystore[400], truststore[400];
    snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/keystore.pem", certs_dir);
    snprintf(truststore, sizeof truststore, "ssl.truststore.location=%s/truststore.pem", certs_dir);
    const char *settings[] = {keystore,
                              truststore,
                              "ssl.client.auth=required",
                              "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL,INTERNAL:SSL",
                              "inter.broker.listener.name=INTERNAL",
                              "replica.fetch.backoff.ms=200",
                              "replica.lag.time.max.ms=" STR(LAG_TIME_MS),
                              "leader.imbalance.check.interval.seconds=1",
                              "leader.imbalance.per.broker.percentage=0",
                              NULL};
    struct cluster_options o = {.cluster_id = "Q2x1c3RlclJvdGF0aW9uMQ",
                                .election_timeout_ms = 1000,
                                /* The victim back from kill -9 is refused
                                 * registration until its previous session
                                 * lapses: short of the start timeout. */
                                .session_timeout_ms = 10000,
                                .internal_partitions = 1,
                                .settings = settings,
                                .extra_listener = "INTERNAL"};
    struct cluster c;
    cluster_start(&c, &o);
    wait_view(&c, 1, ALL, NULL, 0, 30000);
    /* Not the active controller: its restart needs no election. */
    int32_t controller = agreed_controller(&c, -1, 20000);
    int32_t victim = controller % N + 1;
    create_led_by(&c, controller, victim);
    wait_full_isr(&c, victim, 30000);
    produce_all_acked(broker_bootstrap(&c.nodes[0]), 1, 30000);

    /* A bad truststore: refused, named, and the old contexts stay. */
    char bad[400], named[500];
    snprintf(bad, sizeof bad, "%s/garbage.pem", certs_dir);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("not a certificate\n", f);
    fclose(f);
    static const char *const garbage[] = {"garbage.pem", NULL};
    tls_certs_write(certs_dir, "truststore.pem", garbage);
    assert_int_equal(kill(broker_pid(&c.nodes[0]), SIGHUP), 0);
    snprintf(named, sizeof named, "(in %s/truststore.pem)", certs_dir);
    broker_wait_log_count(&c.nodes[0],
                          "TLS reload failed, keeping the previous certificates: inter-broker link: "
                          "ssl.truststore.location: no certificate found",
                          1, 20000);
    broker_wait_log_count(&c.nodes[0],
                          "TLS reload failed, keeping the previous certificates: controller link: "
                          "ssl.truststore.location: no certificate found",
                          2, 20000);
    broker_wait_log_count(&c.nodes[0], named, 5, 20000); /* and the two listeners */
    assert_int_equal(broker_log_count(&c.nodes[0], RELOADED), 0);
    tls_certs_write(certs_dir, "truststore.pem", both_cas);

    /* The rotation: CA2 certificates first, trusted by both sides... */
    tls_certs_write(certs_dir, "keystore.pem", ca2_signed);
    sighup_all(&c);
    wait_links_reloaded(&c, 1);
    /* ...then CA1 no longer trusted. */
    tls_certs_write(certs_dir, "truststore.pem", ca2_only);
    sighup_all(&c);
    wait_links_reloaded(&c, 2);
    for (int i = 0; i < N; i++)
        assert_true(broker_alive(&c.nodes[i]));

    /* Every link to and from the victim connects anew, and it now refuses
     * any CA1 certificate a link of the others would still present. */
    broker_kill9(&c.nodes[victim - 1]);
    broker_restart(&c.nodes[victim - 1]);
    wait_view(&c, victim, ALL, NULL, 0, 30000);
    /* Back in the ISR by fetching from the interim leader, then the leader
     * again: the others fetch from it. */
    wait_full_isr(&c, victim, 40000);
    /* Within less than replica.lag.time.max.ms: a follower whose link is
     * refused is still listed in the ISR, and must really fetch. */
    produce_all_acked(broker_bootstrap(&c.nodes[0]), 2, LAG_TIME_MS / 2);
    for (int i = 0; i < N; i++)
        assert_true(broker_alive(&c.nodes[i]));
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_links_follow_a_certificate_rotation),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
