/* ACLs enforced on authenticated principals: cairnd with the
 * acl-authorizer plugin and a SASL_PLAINTEXT listener; a SCRAM user made
 * through AlterUserScramCredentials (the cairn tool) is allowed READ and
 * WRITE on one topic by ACL and refused on another, with librdkafka
 * producing and consuming as that user. The same on an SSL listener for
 * the principal auth-mtls maps from a client certificate. The PLAINTEXT
 * listener's User:ANONYMOUS is the super user that sets things up. */
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

#include "harness.h"
#include "rk_helpers.h"

#define APP_USER "app"
#define APP_PASSWORD "app-secret"

struct acl_it {
    struct test_broker broker;
    char bootstrap[64];        /* the authenticating listener */
    const char *const *client; /* librdkafka conf of the authenticated client */
};

/* PLAINTEXT plus protocol on another port; extra overrides after. */
static void start(struct acl_it *t, const char *protocol, const char *const *extra)
{
    int port = harness_free_port();
    assert_true(port > 0);
    snprintf(t->bootstrap, sizeof t->bootstrap, "127.0.0.1:%d", port);
    char listeners[200], plugin_path[600];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},%s://127.0.0.1:%d", protocol,
             port);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    const char *overrides[BROKER_MAX_OVERRIDES] = {listeners, plugin_path,
                                                   "plugin.acl-authorizer.super.users=User:ANONYMOUS"};
    int n = 3;
    for (int i = 0; extra[i]; i++)
        overrides[n++] = extra[i];
    overrides[n] = NULL;
    broker_start(&t->broker, overrides);
}

/* cairn user create app --password app-secret -b <plaintext> */
static void create_user(struct acl_it *t)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(CAIRN_CLI_PATH, CAIRN_CLI_PATH, "user", "create", APP_USER, "--password", APP_PASSWORD, "-b",
              broker_bootstrap(&t->broker), (char *)NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void allow(struct acl_it *t, const char *principal, const char *topic, rd_kafka_AclOperation_t op)
{
    char errstr[256];
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&t->broker), NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AclBinding_t *acl =
        rd_kafka_AclBinding_new(RD_KAFKA_RESOURCE_TOPIC, topic, RD_KAFKA_RESOURCE_PATTERN_LITERAL, principal,
                                "*", op, RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, errstr, sizeof errstr);
    assert_non_null(acl);
    rd_kafka_CreateAcls(rk, &acl, 1, NULL, q);
    rd_kafka_event_t *ev = rk_admin_result(q, RD_KAFKA_EVENT_CREATEACLS_RESULT, 20000);
    size_t n = 0;
    const rd_kafka_acl_result_t **r = rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
    assert_int_equal(n, 1);
    assert_null(rd_kafka_acl_result_error(r[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_AclBinding_destroy(acl);
    rd_kafka_queue_destroy(q);
    rk_producer_destroy(rk);
}

/* One record as the authenticated client; the delivery error. */
static rd_kafka_resp_err_t produce_as_client(struct acl_it *t, const char *topic)
{
    rd_kafka_t *rk = rk_producer_new(t->bootstrap, t->client);
    rd_kafka_resp_err_t err = rk_produce_one_delivered(rk, topic);
    rk_producer_destroy(rk);
    return err;
}

/* Reads partition 0 from the start as the authenticated client: the first
 * record's error, or NO_ERROR once a record arrives. */
static rd_kafka_resp_err_t consume_as_client(struct acl_it *t, const char *topic)
{
    rd_kafka_t *rk = rk_consumer_new(t->bootstrap, t->client);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
    rd_kafka_resp_err_t result = RD_KAFKA_RESP_ERR__TIMED_OUT;
    long long deadline = harness_now_ms() + 15000;
    while (result == RD_KAFKA_RESP_ERR__TIMED_OUT && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 200);
        if (m && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            result = m->err;
        if (m)
            rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return result;
}

/* principal may read and write "<prefix>-allowed" by ACL and nothing
 * else: "<prefix>-denied" refuses it both ways. */
static void check_acls_apply(struct acl_it *t, const char *principal, const char *prefix)
{
    char allowed[64], denied[64];
    snprintf(allowed, sizeof allowed, "%s-allowed", prefix);
    snprintf(denied, sizeof denied, "%s-denied", prefix);
    rk_create_topic(broker_bootstrap(&t->broker), allowed, 1, NULL);
    rk_create_topic(broker_bootstrap(&t->broker), denied, 1, NULL);
    /* Without an ACL the authenticated principal may do nothing. */
    assert_int_equal(produce_as_client(t, allowed), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    allow(t, principal, allowed, RD_KAFKA_ACL_OPERATION_WRITE);
    allow(t, principal, allowed, RD_KAFKA_ACL_OPERATION_READ);
    assert_int_equal(produce_as_client(t, allowed), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(consume_as_client(t, allowed), RD_KAFKA_RESP_ERR_NO_ERROR);
    /* The other topic stays closed to it, for writing and for reading; it
     * may see the topic (DESCRIBE), so the client gets as far as Produce
     * and Fetch and the refusal is theirs. */
    allow(t, principal, denied, RD_KAFKA_ACL_OPERATION_DESCRIBE);
    assert_int_equal(produce_as_client(t, denied), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    const char *const super_conf[] = {"message.timeout.ms", "5000", NULL};
    rd_kafka_t *rk = rk_producer_new(broker_bootstrap(&t->broker), super_conf);
    assert_int_equal(rk_produce_one_delivered(rk, denied), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(rk);
    assert_int_equal(consume_as_client(t, denied), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    broker_stop(&t->broker);
    broker_mark_passed(&t->broker);
    broker_cleanup(&t->broker);
}

static void test_scram_principal_under_acls(void **state)
{
    (void)state;
    struct acl_it t = {0};
    const char *const extra[] = {"sasl.enabled.mechanisms=SCRAM-SHA-256", "plugins=acl-authorizer", NULL};
    start(&t, "SASL_PLAINTEXT", extra);
    create_user(&t);
    static const char *const conf[] = {"security.protocol", "SASL_PLAINTEXT", "sasl.mechanisms", "SCRAM-SHA-256",
                                       "sasl.username",     APP_USER,         "sasl.password",   APP_PASSWORD,
                                       "message.timeout.ms", "5000",          NULL};
    t.client = conf;
    check_acls_apply(&t, "User:" APP_USER, "app");
}

/* A client certificate CN=alice,OU=Streams,... mapped to User:alice by
 * auth-mtls (tests/integration/tls/make_certs.sh makes it). */
static void test_certificate_principal_under_acls(void **state)
{
    (void)state;
    char dir[256], cmd[700], keystore[400], truststore[400], ca[400], cert[400], key[400];
    snprintf(dir, sizeof dir, "/tmp/cairn-acl-certs-%d-XXXXXX", (int)getpid());
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "sh '%s/tests/integration/tls/make_certs.sh' '%s'", CAIRN_SOURCE_DIR, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/server.pem", dir);
    snprintf(truststore, sizeof truststore, "ssl.truststore.location=%s/ca.pem", dir);
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    snprintf(cert, sizeof cert, "%s/client.pem", dir);
    snprintf(key, sizeof key, "%s/client.key", dir);
    struct acl_it t = {0};
    const char *const extra[] = {keystore,
                                 truststore,
                                 "ssl.client.auth=required",
                                 "plugins=acl-authorizer,auth-mtls",
                                 "plugin.auth-mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]*),OU=Streams,.*$/$1/L",
                                 NULL};
    start(&t, "SSL", extra);
    const char *const conf[] = {"security.protocol", "ssl", "ssl.ca.location", ca, "ssl.certificate.location",
                                cert, "ssl.key.location", key, "message.timeout.ms", "5000", NULL};
    t.client = conf;
    check_acls_apply(&t, "User:alice", "tls");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scram_principal_under_acls),
        cmocka_unit_test(test_certificate_principal_under_acls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
