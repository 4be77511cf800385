/* SASL on the controller listener: three broker,controller nodes whose
 * CONTROLLER listener is SASL_PLAINTEXT with PLAIN, checked by the auth-sasl
 * plugin against a sasldb made here, each node's own credentials in
 * listener.name.controller.plain.sasl.jaas.config. Every quorum link
 * (Vote, BeginQuorumEpoch, Fetch), every registration and heartbeat and
 * every forwarded admin request (an Envelope from a voter that does not
 * lead) authenticates first; a connection that has
 * not gets ApiVersions and the SASL exchange only (anything else closes it,
 * a failed authentication in the audit log). A node with a wrong
 * password stays out while the other two go on. The same over SASL_SSL,
 * a node moved to SCRAM-SHA-512 once its credential is in the log, and
 * separate roles (controller-only nodes, an observing broker). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster_harness.h"
#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#define CLUSTER_ID "Y3RybC1zYXNsLWNsdXN0ZQ"
#define JAAS_KEY "listener.name.controller.plain.sasl.jaas.config="
#define JAAS_MODULE "org.apache.kafka.common.security.plain.PlainLoginModule required "
#define SASL_HANDSHAKE 17
#define SASL_AUTHENTICATE 36
#define DESCRIBE_QUORUM 55

static char sasldb[256], sasldb_kv[300], plugin_path_kv[600];

/* Makes the sasldb (user controller, password ctrl-secret) and returns
 * the SASL settings every node gets. */
static const char *const *sasl_settings(void)
{
    snprintf(sasldb, sizeof sasldb, "/tmp/cairn-ctrl-sasldb-%d", (int)getpid());
    unlink(sasldb);
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "printf %%s 'ctrl-secret' | /usr/sbin/saslpasswd2 -p -c -f '%s' -u cairn -a cairn controller 2>&1",
             sasldb);
    if (system(cmd) != 0)
        fail_msg("saslpasswd2 failed (is sasl2-bin installed?): %s", cmd);
    snprintf(sasldb_kv, sizeof sasldb_kv, "plugin.auth-sasl.sasldb_path=%s", sasldb);
    snprintf(plugin_path_kv, sizeof plugin_path_kv, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    static const char *settings[] = {"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
                                     plugin_path_kv,
                                     "plugins=auth-sasl",
                                     sasldb_kv,
                                     "plugin.auth-sasl.realm=cairn",
                                     "listener.name.controller.sasl.enabled.mechanisms=PLAIN",
                                     "sasl.mechanism.controller.protocol=PLAIN",
                                     JAAS_KEY JAAS_MODULE "username=\"controller\" password=\"ctrl-secret\";",
                                     NULL};
    return settings;
}

/* extra: NULL or more settings for every node, after the ones here. */
static void start(struct cluster *c, const char *node3, unsigned not_awaited, const char *const *extra)
{
    const char *const *settings = sasl_settings();
    struct cluster_options o = {.cluster_id = CLUSTER_ID,
                                .election_timeout_ms = 1000,
                                .session_timeout_ms = 6000,
                                .internal_partitions = 1,
                                .settings = settings,
                                .extra = extra,
                                .node_setting = {NULL, NULL, node3},
                                .not_awaited = not_awaited};
    cluster_start(c, &o);
}

static void stop(struct cluster *c)
{
    cluster_stop(c);
    unlink(sasldb);
}

/* The active controller as node 1 names it, once it is one of `among`
 * (a bit per node id). */
static int32_t controller_among(struct cluster *c, unsigned among)
{
    long long deadline = harness_now_ms() + 30000;
    for (;;) {
        struct view v;
        if (metadata(c, 1, NULL, &v) && v.controller_id >= 1 && v.controller_id <= N &&
            (among & (1u << v.controller_id)))
            return v.controller_id;
        if (harness_now_ms() > deadline)
            fail_msg("no active controller among the nodes 0x%x", among);
        usleep(200 * 1000);
    }
}

/* Creates topic (two partitions) at the active controller, which serves
 * CreateTopics on a combined node, retrying while the quorum settles. */
static int32_t create_at_controller(struct cluster *c, unsigned among, const char *topic, int16_t rf)
{
    long long deadline = harness_now_ms() + 30000;
    for (;;) {
        int32_t leader = controller_among(c, among);
        int16_t err = create_topic_rf(c, leader, topic, 2, rf);
        if (err == 0)
            return leader;
        if (harness_now_ms() > deadline)
            fail_msg("CreateTopics of %s at node %d: error %d", topic, leader, err);
        usleep(300 * 1000);
    }
}

/* The quorum elects, every broker registers and heartbeats, a topic made
 * at the active controller reaches every node's image over the quorum's
 * Fetch, and a config change at a voter that does not lead is forwarded. */
static void test_quorum_over_plain(void **state)
{
    (void)state;
    struct cluster c;
    /* The audit log on each node's stdout, so in its log file. */
    static const char *const audit[] = {"plugins=audit,auth-sasl", "plugin.audit.sink=stdout", NULL};
    start(&c, NULL, 0, audit);
    wait_view(&c, 1, ALL, NULL, 0, 30000);
    int32_t leader = agreed_controller(&c, -1, 30000);
    assert_true(leader >= 1 && leader <= N);
    int other = leader == 1 ? 2 : 1;
    leader = create_at_controller(&c, ALL, "over-sasl", 3);
    for (int node = 1; node <= N; node++)
        wait_view(&c, node, ALL, "over-sasl", 2, 30000);
    other = leader == 1 ? 2 : 1;
    cluster_alter_forwarded(&c, other);
    /* The leader saw the others as the PLAIN user on its controller listener. */
    broker_wait_log(&c.nodes[leader - 1], "User:controller authenticated with PLAIN from", 5000);
    assert_true(broker_log_contains(&c.nodes[leader - 1], "on CONTROLLER"));

    /* Unauthenticated: ApiVersions lists the SASL APIs; a quorum request
     * closes the connection unanswered. */
    int fd = raw_connect(c.controller_ports[other - 1], 5000);
    assert_true(fd >= 0);
    struct raw_api_versions versions;
    assert_int_equal(raw_api_versions(fd, 0, 1, &versions), 0);
    assert_int_equal(versions.error_code, 0);
    assert_non_null(raw_api_versions_find(&versions, SASL_HANDSHAKE));
    assert_non_null(raw_api_versions_find(&versions, SASL_AUTHENTICATE));
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, DESCRIBE_QUORUM, 0, 2, "probe");
    raw_put_i32(&w, 0); /* no topics */
    raw_frame_finish(&w);
    assert_int_equal(raw_send_all(fd, w.data, w.len), 0);
    raw_writer_free(&w);
    assert_true(raw_wait_closed(fd, 5000));
    close(fd);
    broker_wait_log(&c.nodes[other - 1], "unexpected DescribeQuorum request before SASL authentication", 5000);
    /* A failed authentication in the audit log: no mechanism chosen. */
    broker_wait_log(&c.nodes[other - 1],
                    "\"mechanism\":\"\",\"success\":false,\"error\":\"unexpected DescribeQuorum request before "
                    "SASL authentication\"",
                    5000);

    /* The operator's tool authenticates like the nodes do. */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%s' quorum status --bootstrap-controller 127.0.0.1:%d -X security.protocol=sasl_plaintext "
             "-X sasl.mechanism=PLAIN -X sasl.username=controller -X sasl.password=ctrl-secret 2>&1 | "
             "grep -q voter",
             CAIRN_CLI_PATH, c.controller_ports[other - 1]);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "'%s' quorum status --bootstrap-controller 127.0.0.1:%d --timeout 3000 >/dev/null 2>&1",
             CAIRN_CLI_PATH, c.controller_ports[other - 1]);
    assert_int_not_equal(system(cmd), 0);

    /* Heartbeats keep going over the authenticated links: after several
     * session timeouts every broker is still listed. */
    usleep(8000 * 1000);
    wait_view(&c, other, ALL, "over-sasl", 2, 10000);
    stop(&c);
}

/* Node 3's password is wrong: its Vote, Fetch and registration requests
 * are refused, it never joins, its log says why, and nodes 1 and 2 elect,
 * register and create topics between them. */
static void test_wrong_password_stays_out(void **state)
{
    (void)state;
    struct cluster c;
    start(&c, JAAS_KEY JAAS_MODULE "username=\"controller\" password=\"wrong\";", 1u << 3, NULL);
    const unsigned two = (1u << 1) | (1u << 2);
    wait_view(&c, 1, two, NULL, 0, 30000);
    broker_wait_log(&c.nodes[2], "controller link: SASL PLAIN authentication as controller with 127.0.0.1:", 30000);
    broker_wait_log(&c.nodes[2], "failed: error 58", 5000);
    int32_t leader = create_at_controller(&c, two, "without-three", 2);
    wait_view(&c, 1, two, "without-three", 2, 30000);
    wait_view(&c, 2, two, "without-three", 2, 30000);
    cluster_alter_forwarded(&c, leader == 1 ? 2 : 1);
    /* The others refused node 3 and say so. */
    assert_true(broker_log_contains(&c.nodes[0], "on CONTROLLER failed") ||
                broker_log_contains(&c.nodes[1], "on CONTROLLER failed"));
    /* Node 3 is still running and still out. */
    assert_true(broker_alive(&c.nodes[2]));
    /* Still in start-up (waiting to register), SIGTERM stops it cleanly. */
    broker_stop(&c.nodes[2]);
    assert_true(broker_log_contains(&c.nodes[2], "received SIGTERM during start-up"));
    stop(&c);
}

/* SCRAM on the controller link: the credential lives in the metadata log,
 * so it is made while the controllers authenticate with PLAIN (both
 * enabled), then node 3 restarts on SCRAM-SHA-512 and must get back in. */
static void test_move_to_scram(void **state)
{
    (void)state;
    const char *both[] = {"listener.name.controller.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512", NULL};
    struct cluster c;
    start(&c, NULL, 0, both);
    wait_view(&c, 1, ALL, NULL, 0, 30000);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "'%s' user create controller -b %s --mechanism SCRAM-SHA-512 --password scram-secret >/dev/null",
             CAIRN_CLI_PATH, broker_bootstrap(&c.nodes[0]));
    assert_int_equal(system(cmd), 0);
    for (int i = 0; i < N; i++) {
        snprintf(cmd, sizeof cmd, "'%s' user list controller -b %s 2>/dev/null | grep -q SCRAM-SHA-512", CAIRN_CLI_PATH,
                 broker_bootstrap(&c.nodes[i]));
        long long deadline = harness_now_ms() + 20000;
        while (system(cmd) != 0) {
            if (harness_now_ms() > deadline)
                fail_msg("node %d does not list the SCRAM credential of controller", i + 1);
            usleep(200 * 1000);
        }
    }
    broker_stop(&c.nodes[2]);
    broker_add_override(&c.nodes[2], "sasl.mechanism.controller.protocol=SCRAM-SHA-512");
    broker_add_override(&c.nodes[2], "listener.name.controller.scram-sha-512.sasl.jaas.config="
                                     "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                     "username=\"controller\" password=\"scram-secret\";");
    /* Ready only once registered and unfenced: over SCRAM. */
    broker_restart(&c.nodes[2]);
    long long deadline = harness_now_ms() + 10000;
    while (!cluster_any_logged(&c, "User:controller authenticated with SCRAM-SHA-512 from")) {
        if (harness_now_ms() > deadline)
            fail_msg("no controller logged node 3's SCRAM-SHA-512 authentication");
        usleep(200 * 1000);
    }
    create_at_controller(&c, ALL, "after-scram", 3);
    wait_view(&c, 3, ALL, "after-scram", 2, 30000);
    stop(&c);
}

/* Separate roles: three process.roles=controller nodes serve the SASL
 * controller listener alone (PLAIN from their own plugin host), and a
 * process.roles=broker node follows the log as an observer, registers,
 * and forwards a CreateTopics in an Envelope, each over an authenticated
 * link. */
static void test_controllers_and_observer_broker(void **state)
{
    (void)state;
    const char *const *settings = sasl_settings();
    int cports[N];
    char voters[256] = "", voters_kv[300];
    for (int i = 0; i < N; i++) {
        do {
            cports[i] = harness_free_port();
        } while (i > 0 && (cports[i] == cports[0] || cports[i] == cports[i - 1]));
        size_t used = strlen(voters);
        snprintf(voters + used, sizeof voters - used, "%s%d@127.0.0.1:%d", i ? "," : "", i + 1, cports[i]);
    }
    snprintf(voters_kv, sizeof voters_kv, "controller.quorum.voters=%s", voters);
    struct test_broker nodes[N + 1];
    memset(nodes, 0, sizeof nodes);
    for (int i = 0; i <= N; i++) {
        char listeners[96], node_id[32];
        snprintf(listeners, sizeof listeners, "listeners=CONTROLLER://127.0.0.1:%d", i < N ? cports[i] : 0);
        snprintf(node_id, sizeof node_id, "node.id=%d", i + 1);
        const char *overrides[32] = {node_id,
                                     voters_kv,
                                     i < N ? "process.roles=controller" : "process.roles=broker",
                                     "controller.listener.names=CONTROLLER",
                                     "cluster.id=" CLUSTER_ID,
                                     "controller.quorum.election.timeout.ms=1000",
                                     "controller.quorum.fetch.timeout.ms=2000",
                                     "broker.session.timeout.ms=6000",
                                     "broker.heartbeat.interval.ms=500",
                                     "offsets.topic.num.partitions=1",
                                     "transaction.state.log.num.partitions=1"};
        int n = 11;
        if (i < N)
            overrides[n++] = listeners;
        for (int k = 0; settings[k]; k++)
            overrides[n++] = settings[k];
        overrides[n] = NULL;
        int port = i < N ? cports[i] : harness_free_port();
        broker_spawn_on_port(&nodes[i], port, overrides);
    }
    /* The broker answers only once registered and unfenced. */
    for (int i = 0; i <= N; i++)
        broker_wait_ready(&nodes[i]);
    rd_kafka_t *admin = rk_producer_new(broker_bootstrap(&nodes[N]), NULL);
    long long deadline = harness_now_ms() + 30000;
    char errstr[256] = "";
    rd_kafka_resp_err_t err;
    while ((err = rk_create_topic_result(admin, "via-envelope", 2, 1, NULL, false, errstr, sizeof errstr)) !=
           RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (harness_now_ms() > deadline)
            fail_msg("CreateTopics at the broker: %s (%s)", rd_kafka_err2str(err), errstr);
        usleep(300 * 1000);
    }
    assert_true(rk_wait_topic(admin, "via-envelope", 2, 30000));
    rk_producer_destroy(admin);
    bool seen = false;
    for (int i = 0; i < N; i++)
        seen = seen || broker_log_contains(&nodes[i], "User:controller authenticated with PLAIN from");
    assert_true(seen);
    /* SIGHUP on a controller-only node reloads its quorum's TLS (none
     * here) and it serves on: the clean stop below checks it did not die. */
    assert_int_equal(kill(broker_pid(&nodes[0]), SIGHUP), 0);
    broker_wait_log(&nodes[0], "received SIGHUP", 10000);
    for (int i = 0; i <= N; i++) {
        broker_stop(&nodes[i]);
        broker_mark_passed(&nodes[i]);
        broker_cleanup(&nodes[i]);
    }
    unlink(sasldb);
}

/* SASL_SSL: the same PLAIN exchange inside TLS, the listener's certificate
 * checked against the CA (tests/integration/tls/make_certs.sh). */
static void test_quorum_over_sasl_ssl(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    char certs[256], cmd[1200], keystore[400], truststore[400];
    snprintf(certs, sizeof certs, "%s/cairn-ctrl-sasl-ssl-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(certs));
    snprintf(cmd, sizeof cmd, "sh '%s/tests/integration/tls/make_certs.sh' '%s' >/dev/null 2>&1", CAIRN_SOURCE_DIR,
             certs);
    assert_int_equal(system(cmd), 0);
    snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/server.pem", certs);
    snprintf(truststore, sizeof truststore, "ssl.truststore.location=%s/ca.pem", certs);
    const char *ssl[] = {"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL", keystore, truststore,
                         NULL};
    struct cluster c;
    start(&c, NULL, 0, ssl);
    wait_view(&c, 1, ALL, NULL, 0, 30000);
    int32_t leader = create_at_controller(&c, ALL, "over-sasl-ssl", 3);
    for (int node = 1; node <= N; node++)
        wait_view(&c, node, ALL, "over-sasl-ssl", 2, 30000);
    cluster_alter_forwarded(&c, leader == 1 ? 2 : 1);
    broker_wait_log(&c.nodes[leader - 1], "User:controller authenticated with PLAIN from", 5000);
    for (int i = 0; i < N; i++)
        assert_false(broker_log_contains(&c.nodes[i], "TLS handshake with"));
    stop(&c);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", certs);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quorum_over_plain),
        cmocka_unit_test(test_wrong_password_stays_out),
        cmocka_unit_test(test_quorum_over_sasl_ssl),
        cmocka_unit_test(test_move_to_scram),
        cmocka_unit_test(test_controllers_and_observer_broker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
