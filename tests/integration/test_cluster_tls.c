/* TLS on the cluster's own links, with real cairnd processes: three
 * broker,controller nodes whose controller listener (CONTROLLER) and
 * inter-broker listener (INTERNAL) are SSL with client certificates
 * required, so the quorum's votes and fetches, registration and heartbeats,
 * replica fetchers and transaction markers all run over mutual TLS with
 * the server's host name checked (ssl.endpoint.identification.algorithm's
 * default, https). A quorum forms, and librdkafka produces (acks=all, an
 * RF=3 topic with min.insync.replicas=3: every follower must fetch over
 * TLS) and consumes. A node whose truststore holds another CA stays out:
 * never registered, and its log says the certificate failed to verify.
 * Certificates come from tls/make_certs.sh (the openssl command line). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"
#include "tls_cluster.h"

#define N 3
#define CLUSTER_ID "Q2x1c3RlclRsc1Rlc3QxMg"
#define RECORDS 200

static char certs_dir[256];

static int group_setup(void **state)
{
    (void)state;
    if (tls_certs_make("cairn-cluster-tls", certs_dir, sizeof certs_dir) != 0)
        return -1;
    /* A certificate from the right CA that names another host only. */
    char cmd[1600];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && printf 'subjectAltName=DNS:elsewhere.example\\n' >elsewhere.ext && "
             "openssl req -newkey rsa:2048 -nodes -keyout elsewhere.key -out elsewhere.csr -subj /CN=elsewhere "
             ">/dev/null 2>&1 && openssl x509 -req -in elsewhere.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-out elsewhere.crt -days 30 -extfile elsewhere.ext >/dev/null 2>&1 && "
             "cat elsewhere.crt elsewhere.key >elsewhere.pem",
             certs_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return tls_certs_remove(certs_dir);
}

struct cluster {
    struct test_broker nodes[N];
};

static bool port_taken(const int *ports, int n, int port)
{
    for (int i = 0; i < n; i++)
        if (ports[i] == port)
            return true;
    return false;
}

/* Spawns the three nodes with `keystore` (a file in certs_dir) and the
 * extra setting (NULL: none); node `wrong_ca` (1-based, 0: none) trusts
 * other-ca.pem instead of the CA that signed everyone's certificate. */
static void cluster_spawn_with(struct cluster *c, int wrong_ca, const char *keystore_file, const char *extra,
                               const char *extra2)
{
    memset(c, 0, sizeof *c);
    int ports[3 * N];
    int used = 0;
    while (used < 3 * N) {
        int p = harness_free_port();
        assert_true(p > 0);
        if (!port_taken(ports, used, p))
            ports[used++] = p;
    }
    /* ports: [0,N) PLAINTEXT, [N,2N) CONTROLLER, [2N,3N) INTERNAL */
    char voters[256] = "";
    for (int i = 0; i < N; i++) {
        size_t len = strlen(voters);
        snprintf(voters + len, sizeof voters - len, "%s%d@127.0.0.1:%d", i ? "," : "", i + 1, ports[N + i]);
    }
    for (int i = 0; i < N; i++) {
        char listeners[200], node_id[32], voters_kv[300], keystore[400], truststore[400];
        snprintf(listeners, sizeof listeners,
                 "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d,INTERNAL://127.0.0.1:%d", ports[i],
                 ports[N + i], ports[2 * N + i]);
        snprintf(node_id, sizeof node_id, "node.id=%d", i + 1);
        snprintf(voters_kv, sizeof voters_kv, "controller.quorum.voters=%s", voters);
        snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/%s", certs_dir, keystore_file);
        snprintf(truststore, sizeof truststore, "ssl.truststore.location=%s/%s", certs_dir,
                 i + 1 == wrong_ca ? "other-ca.pem" : "ca.pem");
        const char *overrides[] = {listeners,
                                   node_id,
                                   voters_kv,
                                   keystore,
                                   truststore,
                                   "ssl.client.auth=required",
                                   "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL,INTERNAL:SSL",
                                   "inter.broker.listener.name=INTERNAL",
                                   "process.roles=broker,controller",
                                   "controller.listener.names=CONTROLLER",
                                   "cluster.id=" CLUSTER_ID,
                                   "controller.quorum.election.timeout.ms=1000",
                                   "controller.quorum.fetch.timeout.ms=2000",
                                   "broker.heartbeat.interval.ms=500",
                                   "broker.session.timeout.ms=30000",
                                   "offsets.topic.num.partitions=1",
                                   "transaction.state.log.num.partitions=1",
                                   "replica.fetch.backoff.ms=200",
                                   extra,
                                   extra2,
                                   NULL};
        broker_spawn_on_port(&c->nodes[i], ports[i], overrides);
    }
}

static void cluster_spawn(struct cluster *c, int wrong_ca)
{
    cluster_spawn_with(c, wrong_ca, "server.pem", NULL, NULL);
}

static void cluster_stop(struct cluster *c)
{
    for (int i = 0; i < N; i++) {
        if (c->nodes[i].pid > 0)
            broker_stop(&c->nodes[i]);
        broker_mark_passed(&c->nodes[i]);
        broker_cleanup(&c->nodes[i]);
    }
}

/* Broker ids listed in node's metadata, a bit each; 0 when none answers. */
static unsigned listed_brokers(const struct test_broker *node)
{
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(node), NULL);
    const struct rd_kafka_metadata *md = NULL;
    unsigned ids = 0;
    if (rd_kafka_metadata(rk, 0, NULL, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        for (int i = 0; i < md->broker_cnt; i++)
            if (md->brokers[i].id >= 0 && md->brokers[i].id < 32)
                ids |= 1u << md->brokers[i].id;
        rd_kafka_metadata_destroy(md);
    }
    rk_producer_destroy(rk);
    return ids;
}

static void wait_brokers(const struct test_broker *node, unsigned want, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    unsigned got;
    while ((got = listed_brokers(node)) != want) {
        if (harness_now_ms() > deadline)
            fail_msg("node lists brokers 0x%x, want 0x%x", got, want);
        usleep(200 * 1000);
    }
}

static void test_quorum_and_replication_over_mutual_tls(void **state)
{
    (void)state;
    struct cluster c;
    cluster_spawn(&c, 0);
    for (int i = 0; i < N; i++)
        broker_wait_ready(&c.nodes[i]); /* registered and unfenced: the quorum has a leader */
    wait_brokers(&c.nodes[0], (1u << 1) | (1u << 2) | (1u << 3), 30000);

    /* min.insync.replicas=3: an acks=all produce is answered only once
     * both followers fetched it over the INTERNAL (SSL) listener. */
    rd_kafka_t *admin = rk_producer_new(broker_bootstrap(&c.nodes[0]), NULL);
    const char *configs[] = {"min.insync.replicas", "3", NULL};
    char errstr[256];
    long long deadline = harness_now_ms() + 60000;
    rd_kafka_resp_err_t err;
    while ((err = rk_create_topic_result(admin, "tls-repl", 1, 3, configs, false, errstr, sizeof errstr)) !=
           RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
            break;
        if (harness_now_ms() > deadline)
            fail_msg("CreateTopics: %s (%s)", rd_kafka_err2str(err), errstr);
        usleep(200 * 1000);
    }
    assert_true(rk_wait_topic(admin, "tls-repl", 1, 30000));
    rk_producer_destroy(admin);

    const char *conf[] = {"enable.idempotence", "true", "acks", "all", "linger.ms", "5", NULL};
    rd_kafka_t *p = rk_producer_new(broker_bootstrap(&c.nodes[0]), conf);
    for (int m = 0; m < RECORDS; m++) {
        char value[64];
        int vn = snprintf(value, sizeof value, "over-tls-%d", m);
        assert_int_equal(rk_produce_blocking(p, "tls-repl", 0, NULL, 0, value, (size_t)vn, 0, NULL, NULL), 0);
    }
    rd_kafka_flush(p, 60000);
    struct rk_delivery_stats *stats = rk_producer_stats(p);
    if (stats->failed)
        fail_msg("%ld deliveries failed: %s", stats->failed, stats->first_error_text);
    assert_int_equal(stats->delivered, RECORDS);
    rk_producer_destroy(p);

    long want[1] = {RECORDS};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(&c.nodes[1]), "tls-repl", 1, want, 30000, &set), RECORDS);
    for (size_t i = 0; i < set.count; i++) {
        char expect[64];
        snprintf(expect, sizeof expect, "over-tls-%lld", (long long)set.records[i].offset);
        assert_int_equal(set.records[i].value_len, strlen(expect));
        assert_memory_equal(set.records[i].value, expect, strlen(expect));
    }
    rk_record_set_free(&set);
    for (int i = 0; i < N; i++)
        assert_false(broker_log_contains(&c.nodes[i], "TLS handshake with"));
    cluster_stop(&c);
}

static void test_node_with_wrong_ca_stays_out(void **state)
{
    (void)state;
    struct cluster c;
    cluster_spawn(&c, 3);
    broker_wait_ready(&c.nodes[0]);
    broker_wait_ready(&c.nodes[1]);
    /* Node 3 cannot verify the others' certificates, nor they its. */
    broker_wait_log(&c.nodes[2], "certificate verify failed", 30000);
    wait_brokers(&c.nodes[0], (1u << 1) | (1u << 2), 30000);
    /* Still out a while later: never registered. */
    usleep(3000 * 1000);
    assert_int_equal(listed_brokers(&c.nodes[1]), (1u << 1) | (1u << 2));
    assert_true(broker_alive(&c.nodes[2]));
    /* Its start-up waits for a registration that cannot happen; SIGTERM
     * still stops it cleanly, and it says why. */
    broker_stop(&c.nodes[2]);
    assert_true(broker_log_contains(&c.nodes[2], "received SIGTERM during start-up"));
    cluster_stop(&c);
}

/* One broker,controller node, sole voter, CONTROLLER:SSL with client
 * certificates required and `keystore` (a file in certs_dir); extra
 * settings after. It registers itself through its own controller link. */
static void spawn_single(struct test_broker *b, const char *keystore, const char *const *extra)
{
    int port = harness_free_port(), cport;
    do {
        cport = harness_free_port();
    } while (cport == port);
    char listeners[160], voters[96], keystore_kv[400], truststore[400];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, cport);
    snprintf(voters, sizeof voters, "controller.quorum.voters=1@127.0.0.1:%d", cport);
    snprintf(keystore_kv, sizeof keystore_kv, "ssl.keystore.location=%s/%s", certs_dir, keystore);
    snprintf(truststore, sizeof truststore, "ssl.truststore.location=%s/ca.pem", certs_dir);
    const char *overrides[32] = {listeners,
                                 voters,
                                 keystore_kv,
                                 truststore,
                                 "node.id=1",
                                 "ssl.client.auth=required",
                                 "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL,"
                                 "INTERNAL:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
                                 "process.roles=broker,controller",
                                 "controller.listener.names=CONTROLLER",
                                 "cluster.id=" CLUSTER_ID,
                                 "offsets.topic.num.partitions=1",
                                 "transaction.state.log.num.partitions=1",
                                 NULL};
    int n = 0;
    while (overrides[n])
        n++;
    for (int i = 0; extra && extra[i]; i++)
        overrides[n++] = extra[i];
    overrides[n] = NULL;
    broker_spawn_on_port(b, port, overrides);
}

/* ssl.endpoint.identification.algorithm: with Kafka's default (https) a
 * server certificate that names another host is refused, even from the
 * trusted CA, so no quorum forms; empty (here per listener) turns the
 * host check off (the chain is still verified) and the cluster comes up. */
static void test_endpoint_identification(void **state)
{
    (void)state;
    struct cluster c;
    cluster_spawn_with(&c, 0, "elsewhere.pem", NULL, NULL);
    broker_wait_log(&c.nodes[0], "certificate verify failed: IP address mismatch", 30000);
    for (int i = 0; i < N; i++)
        broker_kill9(&c.nodes[i]);
    cluster_stop(&c);

    /* Per listener, as Kafka's listener.name.<name>.ssl.* overrides. */
    cluster_spawn_with(&c, 0, "elsewhere.pem", "listener.name.controller.ssl.endpoint.identification.algorithm=",
                       "listener.name.internal.ssl.endpoint.identification.algorithm=");
    for (int i = 0; i < N; i++)
        broker_wait_ready(&c.nodes[i]);
    wait_brokers(&c.nodes[0], (1u << 1) | (1u << 2) | (1u << 3), 30000);
    for (int i = 0; i < N; i++)
        assert_false(broker_log_contains(&c.nodes[i], "TLS handshake with"));
    cluster_stop(&c);
}

/* ssl.crl.location on the node's own links: the quorum, controller and
 * inter-broker links check the listener's certificate against the same
 * CRLs as the listeners check clients. Good certificates with a current
 * CRL form the cluster; a revoked one (bob's as every node's keystore, the
 * host name check off as it names no host) is refused by the connecting
 * link itself, which logs why. */
static void test_outgoing_links_check_crls(void **state)
{
    (void)state;
    const char *revoked[] = {"revoked.pem", "revoked.key", NULL};
    tls_certs_write(certs_dir, "revoked-server.pem", revoked);
    char crl[400];
    snprintf(crl, sizeof crl, "ssl.crl.location=%s/crl.pem", certs_dir);

    struct cluster c;
    cluster_spawn_with(&c, 0, "server.pem", crl, NULL);
    for (int i = 0; i < N; i++)
        broker_wait_ready(&c.nodes[i]);
    wait_brokers(&c.nodes[0], (1u << 1) | (1u << 2) | (1u << 3), 30000);
    for (int i = 0; i < N; i++)
        assert_false(broker_log_contains(&c.nodes[i], "TLS handshake with"));
    cluster_stop(&c);

    cluster_spawn_with(&c, 0, "revoked-server.pem", crl, "ssl.endpoint.identification.algorithm=");
    broker_wait_log(&c.nodes[0], "failed: certificate verify failed: certificate revoked", 30000);
    for (int i = 0; i < N; i++)
        broker_kill9(&c.nodes[i]);
    cluster_stop(&c);
}

/* The controller listener's ssl.* keys change at runtime like the
 * broker listeners': checked first (a missing file is refused naming the
 * key), then applied to its new connections and to the node's controller
 * link, which uses that listener's keys. */
static void test_controller_listener_keystore_at_runtime(void **state)
{
    (void)state;
    struct test_broker b;
    memset(&b, 0, sizeof b);
    spawn_single(&b, "server.pem", NULL);
    broker_wait_ready(&b);
    char msg[512], path[400];
    snprintf(path, sizeof path, "%s/no-such.pem", certs_dir);
    int code = raw_incremental_alter_broker(broker_port(&b), "1", "listener.name.controller.ssl.keystore.location", 0,
                                            path, msg, sizeof msg);
    if (code != 40 || !strstr(msg, "listener.name.controller.ssl.keystore.location: cannot open"))
        fail_msg("error %d '%s', expected INVALID_CONFIG naming the key", code, msg);
    snprintf(path, sizeof path, "%s/other-server.pem", certs_dir);
    code = raw_incremental_alter_broker(broker_port(&b), "1", "listener.name.controller.ssl.keystore.location", 0, path,
                                        msg, sizeof msg);
    if (code != 0)
        fail_msg("error %d '%s'", code, msg);
    broker_wait_log(&b, "listener CONTROLLER: new TLS settings applied", 20000);
    /* The node's controller link presents the new keystore from now on. */
    broker_wait_log(&b, "controller link: new TLS settings applied", 20000);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void wait_exit(struct test_broker *b)
{
    long long deadline = harness_now_ms() + 20000;
    while (broker_alive(b)) {
        if (harness_now_ms() > deadline)
            fail_msg("cairnd still runs");
        usleep(100 * 1000);
    }
}

/* A SASL inter-broker link needs a mechanism it speaks and the node's
 * credentials in Kafka's JAAS form, and so does a SASL controller listener,
 * which must also serve the mechanism the node uses. Each gap stops start-up with a line naming the key
 * (test_cluster_sasl.c runs the link itself). */
static void expect_refused(const char *const *extra, const char *needle)
{
    struct test_broker b;
    memset(&b, 0, sizeof b);
    spawn_single(&b, "server.pem", extra);
    wait_exit(&b);
    broker_wait_log(&b, needle, 5000);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void test_sasl_links_refused(void **state)
{
    (void)state;
    const char *gssapi[] = {"inter.broker.listener.name=INTERNAL", NULL};
    expect_refused(gssapi,
                   "inter-broker link: listener INTERNAL uses SASL GSSAPI (sasl.mechanism.inter.broker.protocol), "
                   "but listener.name.internal.gssapi.sasl.jaas.config is not set");

    const char *no_jaas[] = {"security.inter.broker.protocol=SASL_SSL", "sasl.mechanism.inter.broker.protocol=PLAIN",
                             NULL};
    expect_refused(no_jaas, "uses SASL PLAIN (sasl.mechanism.inter.broker.protocol), but "
                            "listener.name.sasl_ssl.plain.sasl.jaas.config is not set");

    const char *kerberos[] = {"inter.broker.listener.name=INTERNAL",
                              "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256",
                              "listener.name.internal.scram-sha-256.sasl.jaas.config="
                              "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;",
                              NULL};
    expect_refused(kerberos, "listener.name.internal.scram-sha-256.sasl.jaas.config: the login module must be "
                             "org.apache.kafka.common.security.scram.ScramLoginModule");

    const char *extra_option[] = {"inter.broker.listener.name=INTERNAL", "sasl.mechanism.inter.broker.protocol=PLAIN",
                                  "listener.name.internal.plain.sasl.jaas.config="
                                  "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                  "username=\"b\" password=\"p\" user_admin=\"x\";",
                                  NULL};
    expect_refused(extra_option, "option user_admin is not served (only username and password)");

    /* OAUTHBEARER needs the token endpoint and OAuthBearerLoginModule's client credentials. */
    const char *no_endpoint[] = {"inter.broker.listener.name=INTERNAL",
                                 "sasl.mechanism.inter.broker.protocol=OAUTHBEARER",
                                 "listener.name.internal.oauthbearer.sasl.jaas.config="
                                 "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                                 "clientId=\"b\" clientSecret=\"s\";",
                                 NULL};
    expect_refused(no_endpoint, "inter-broker link: listener INTERNAL uses SASL OAUTHBEARER, but "
                                "sasl.oauthbearer.token.endpoint.url is not set");
    const char *plain_module[] = {"inter.broker.listener.name=INTERNAL",
                                  "sasl.mechanism.inter.broker.protocol=oauthbearer",
                                  "sasl.oauthbearer.token.endpoint.url=http://127.0.0.1:1/token",
                                  "listener.name.internal.oauthbearer.sasl.jaas.config="
                                  "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                  "username=\"b\" password=\"p\";",
                                  NULL};
    expect_refused(plain_module, "listener.name.internal.oauthbearer.sasl.jaas.config: the login module must be "
                                 "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule");

    /* A SASL controller listener: the node's own credentials, and a
     * mechanism the listener serves (test_controller_sasl.c runs it). */
    const char *controller[] = {"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
                                "sasl.mechanism.controller.protocol=SCRAM-SHA-256", NULL};
    expect_refused(controller, "controller link: listener CONTROLLER uses SASL SCRAM-SHA-256 "
                               "(sasl.mechanism.controller.protocol), but "
                               "listener.name.controller.scram-sha-256.sasl.jaas.config is not set");

    const char *unserved[] = {"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
                              "sasl.mechanism.controller.protocol=PLAIN",
                              "listener.name.controller.plain.sasl.jaas.config="
                              "org.apache.kafka.common.security.plain.PlainLoginModule required "
                              "username=\"b\" password=\"p\";",
                              NULL};
    expect_refused(unserved, "controller listener CONTROLLER maps to SASL_SSL, but it serves none of its SASL "
                             "mechanisms");

    const char *other[] = {"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
                           "listener.name.controller.sasl.enabled.mechanisms=SCRAM-SHA-512",
                           "sasl.mechanism.controller.protocol=SCRAM-SHA-256",
                           "listener.name.controller.scram-sha-256.sasl.jaas.config="
                           "org.apache.kafka.common.security.scram.ScramLoginModule required "
                           "username=\"b\" password=\"p\";",
                           NULL};
    expect_refused(other, "sasl.mechanism.controller.protocol=SCRAM-SHA-256 is not one of the mechanisms the "
                          "controller listener CONTROLLER serves (SCRAM-SHA-512)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quorum_and_replication_over_mutual_tls),
        cmocka_unit_test(test_node_with_wrong_ca_stays_out),
        cmocka_unit_test(test_endpoint_identification),
        cmocka_unit_test(test_outgoing_links_check_crls),
        cmocka_unit_test(test_controller_listener_keystore_at_runtime),
        cmocka_unit_test(test_sasl_links_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
