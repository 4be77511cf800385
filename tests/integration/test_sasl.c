/* SASL/SCRAM on a real cairnd with a PLAINTEXT and a SASL_PLAINTEXT
 * listener: credentials created with AlterUserScramCredentials (sent by
 * the test: librdkafka 2.0 has no admin call for it), librdkafka producing
 * and consuming with SCRAM-SHA-256 and -512, wrong passwords and unknown
 * users refused with Kafka's message, requests before the handshake
 * refused (and audited once as failed authentications), UNSUPPORTED_SASL_MECHANISM with the enabled list, KIP-368
 * session lifetime and re-authentication (a SCRAM client written here),
 * and every authentication in the audit log. */
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
#include "raw_session.h"
#include "rk_helpers.h"
#include "sasl_it_fixture.h"
#include "scram_wire_client.h"

static void test_scram_with_librdkafka(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    sasl_it_start(&t, "0");
    sasl_it_create_user(&t, "alice", SHA256, "alice-secret");
    sasl_it_create_user(&t, "bob", SHA512, "bob-secret");
    rk_create_topic(broker_bootstrap(&t.broker), "sasl-topic", 1, NULL);

    sasl_it_produce_and_consume(&t, "SCRAM-SHA-256", "alice", "alice-secret", "sasl-topic");
    sasl_it_expect_auth_failure(&t, "SCRAM-SHA-256", "alice", "not-her-password");
    sasl_it_expect_auth_failure(&t, "SCRAM-SHA-256", "mallory", "whatever");
    /* bob has no SCRAM-SHA-256 credential, only -512. */
    sasl_it_expect_auth_failure(&t, "SCRAM-SHA-256", "bob", "bob-secret");

    /* Credentials live in the metadata log: a restarted broker knows them. */
    broker_stop(&t.broker);
    broker_restart(&t.broker);
    sasl_it_produce_and_consume(&t, "SCRAM-SHA-512", "bob", "bob-secret", "sasl-topic-2");

    sasl_it_expect_audited(&t, "User:alice", true, NULL, "SCRAM-SHA-256");
    sasl_it_expect_audited(&t, "User:alice", false, "wrong password", "SCRAM-SHA-256");
    sasl_it_expect_audited(&t, "User:mallory", false, "no SCRAM-SHA-256 credential", "SCRAM-SHA-256");
    sasl_it_expect_audited(&t, "User:bob", true, NULL, "SCRAM-SHA-512");
    sasl_it_stop(&t);
}

static void test_wire_gate_and_mechanisms(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    sasl_it_start(&t, "0");
    sasl_it_create_user(&t, "carol", SHA256, "carol-secret");
    sasl_it_create_user(&t, "frank", SHA256, "frank-secret");

    /* Before the handshake only ApiVersions is served; anything else closes. */
    struct scram_wire_conn c = scram_wire_connect(&t);
    struct raw_api_versions versions;
    assert_int_equal(raw_api_versions(c.fd, 3, 1, &versions), 0);
    assert_non_null(raw_api_versions_find(&versions, 17));
    assert_non_null(raw_api_versions_find(&versions, 36));
    c.corr = 1;
    assert_int_equal(scram_wire_metadata(&c), 1);
    close(c.fd);
    /* Kafka's authenticator fails the authentication there: audited once,
     * as nobody, with no mechanism chosen yet. */
    sasl_it_expect_audited(&t, "User:ANONYMOUS", false, "unexpected Metadata request before SASL authentication", "");

    /* SaslAuthenticate before a handshake closes too. */
    c = scram_wire_connect(&t);
    struct scram_wire_answer a;
    assert_int_equal(scram_wire_authenticate(&c, "n,,n=carol,r=abc", 16, &a), 1);
    close(c.fd);
    sasl_it_expect_audited(&t, "User:ANONYMOUS", false,
                           "unexpected SaslAuthenticate request before SASL authentication", "");

    /* A client that leaves after the server's first message: its attempt
     * is audited (once, when the connection goes) as the user it named. */
    char mechanisms[200];
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    assert_int_equal(scram_wire_authenticate(&c, "n,,n=carol,r=abc", 16, &a), 0);
    assert_int_equal(a.error, 0);
    close(c.fd);
    sasl_it_expect_audited(&t, "User:carol", false, "before the SASL exchange finished", "SCRAM-SHA-256");

    /* A mechanism that is not enabled: the enabled list, then a close. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "PLAIN", mechanisms, sizeof mechanisms), ERR_UNSUPPORTED_SASL_MECHANISM);
    assert_string_equal(mechanisms, "SCRAM-SHA-256,SCRAM-SHA-512");
    assert_true(raw_wait_closed(c.fd, 5000));
    close(c.fd);
    /* That ended the client's attempt: a failed authentication with PLAIN. */
    sasl_it_expect_audited(&t, "User:ANONYMOUS", false, "SASL mechanism 'PLAIN' is not enabled", "PLAIN");
    assert_int_equal(sasl_it_count_audited(t.audit_path, NULL, false, "before the SASL exchange finished", NULL), 1);

    /* After a handshake, another request is ILLEGAL_SASL_STATE, then a close. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), ERR_ILLEGAL_SASL_STATE);
    assert_true(raw_wait_closed(c.fd, 5000));
    close(c.fd);
    sasl_it_expect_audited(&t, "User:ANONYMOUS", false, "unexpected SaslHandshake request during SASL authentication",
                           "SCRAM-SHA-256");

    /* Metadata in the middle of an exchange: refused and audited once, as
     * the user the exchange named, not again as an abandoned exchange. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    assert_int_equal(scram_wire_authenticate(&c, "n,,n=frank,r=abc", 16, &a), 0);
    assert_int_equal(a.error, 0);
    assert_int_equal(scram_wire_metadata(&c), 1);
    close(c.fd);
    sasl_it_expect_audited(&t, "User:frank", false, "unexpected Metadata request during SASL authentication",
                           "SCRAM-SHA-256");

    /* A client that chose a mechanism and left without a token (a GSSAPI
     * client with no ticket does): audited when the connection goes. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    close(c.fd);
    sasl_it_expect_audited(&t, "User:ANONYMOUS", false, "before the SASL exchange finished", "SCRAM-SHA-512");

    /* A wrong password: Kafka's message (KIP-152) and a close. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA256, "carol", "wrong", &a);
    assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
    assert_string_equal(a.message, "Authentication failed during authentication due to invalid credentials with SASL "
                                   "mechanism SCRAM-SHA-256");
    assert_true(raw_wait_closed(c.fd, 5000));
    close(c.fd);

    /* The right one: then any request is served, and SaslAuthenticate is
     * ILLEGAL_SASL_STATE outside an exchange. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA256, "carol", "carol-secret", &a);
    assert_int_equal(a.error, 0);
    assert_true(a.len > 2 && memcmp(a.bytes, "v=", 2) == 0);
    assert_int_equal(a.lifetime_ms, 0);
    assert_int_equal(scram_wire_metadata(&c), 0);
    assert_int_equal(scram_wire_authenticate(&c, "x", 1, &a), 0);
    assert_int_equal(a.error, ERR_ILLEGAL_SASL_STATE);
    assert_int_equal(scram_wire_metadata(&c), 0);
    close(c.fd);

    /* SaslHandshake v0: the tokens follow bare, without Kafka headers. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake_v(&c, 0, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_wire_login_as(&c, true, SHA256, "carol", "carol-secret", &a);
    assert_int_equal(a.error, 0);
    assert_true(a.len > 2 && memcmp(a.bytes, "v=", 2) == 0);
    assert_int_equal(scram_wire_metadata(&c), 0);
    close(c.fd);
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake_v(&c, 0, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_wire_login_as(&c, true, SHA256, "carol", "wrong", &a);
    assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
    close(c.fd);

    /* The PLAINTEXT listener answers SASL requests with ILLEGAL_SASL_STATE. */
    struct scram_wire_conn p = {raw_connect(broker_port(&t.broker), 10000), 0};
    assert_true(p.fd >= 0);
    assert_int_equal(scram_wire_handshake(&p, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), ERR_ILLEGAL_SASL_STATE);
    close(p.fd);

    /* Each refused connection was audited exactly once, and the refused
     * mid-exchange one did not come back as abandoned when it went. */
    usleep(1000 * 1000);
    assert_int_equal(sasl_it_count_audited(t.audit_path, NULL, false, "request before SASL authentication", NULL), 2);
    assert_int_equal(sasl_it_count_audited(t.audit_path, NULL, false, "request during SASL authentication", NULL), 2);
    assert_int_equal(sasl_it_count_audited(t.audit_path, "User:frank", false, NULL, NULL), 1);
    assert_int_equal(sasl_it_count_audited(t.audit_path, NULL, false, "before the SASL exchange finished", NULL), 2);
    sasl_it_stop(&t);
}

static void test_reauthentication(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    sasl_it_start(&t, "1500");
    sasl_it_create_user(&t, "dave", SHA512, "dave-secret");
    sasl_it_create_user(&t, "erin", SHA512, "erin-secret");

    struct scram_wire_conn c = scram_wire_connect(&t);
    char mechanisms[200];
    struct scram_wire_answer a;
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA512, "dave", "dave-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(a.lifetime_ms, 1500);
    assert_int_equal(scram_wire_metadata(&c), 0);

    /* Re-authenticating as the same user renews the session. */
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA512, "dave", "dave-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(a.lifetime_ms, 1500);
    assert_int_equal(scram_wire_metadata(&c), 0);

    /* Past its lifetime, a request other than SASL closes the connection. */
    usleep(1700 * 1000);
    assert_int_equal(scram_wire_metadata(&c), 1);
    close(c.fd);

    /* Re-authenticating as another user is refused. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA512, "dave", "dave-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA512, "erin", "erin-secret", &a);
    assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
    assert_string_equal(a.message, "Cannot change principals during re-authentication from User:dave: User:erin");
    assert_true(raw_wait_closed(c.fd, 5000));
    close(c.fd);
    sasl_it_expect_audited(&t, "User:erin", false, "re-authentication as User:erin", "SCRAM-SHA-512");

    /* Re-authenticating with another mechanism is refused at the handshake,
     * and audited as the session's user. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-512", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA512, "dave", "dave-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), ERR_ILLEGAL_SASL_STATE);
    assert_true(raw_wait_closed(c.fd, 5000));
    close(c.fd);
    sasl_it_expect_audited(&t, "User:dave", false, "re-authentication with SCRAM-SHA-256", "SCRAM-SHA-256");
    sasl_it_stop(&t);
}

/* DescribeUserScramCredentials v0 of one user: error, and the first
 * credential's mechanism and iterations. */
static int16_t describe_user(struct sasl_it *t, const char *user, int *mech, int *iterations)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, 50, 0, 9, "sasl-it");
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, user);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(broker_port(&t->broker), &w, 9, true, 10000, &frame, &r), 0);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), 0);
    char text[256];
    raw_get_compact_string(&r, text, sizeof text);
    assert_int_equal(raw_get_uvarint(&r), 2);
    raw_get_compact_string(&r, text, sizeof text);
    assert_string_equal(text, user);
    int16_t err = raw_get_i16(&r);
    raw_get_compact_string(&r, text, sizeof text);
    int n = (int)raw_get_uvarint(&r) - 1;
    for (int i = 0; i < n; i++) {
        int m = raw_get_i8(&r);
        int it = raw_get_i32(&r);
        raw_skip_tagged_fields(&r);
        if (i == 0) {
            *mech = m;
            *iterations = it;
        }
    }
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
    return err;
}

static void test_credential_admin(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    sasl_it_start(&t, "0");
    sasl_it_create_user(&t, "frank", SHA256, "frank-secret");
    int mech = 0, iterations = 0;
    assert_int_equal(describe_user(&t, "frank", &mech, &iterations), 0);
    assert_int_equal(mech, SHA256);
    assert_int_equal(iterations, 4096);
    assert_int_equal(describe_user(&t, "nobody", &mech, &iterations), ERR_RESOURCE_NOT_FOUND);

    char users[8][64];
    int16_t errors[8];
    struct sasl_it_upsert bad[] = {
        {"few", SHA256, 100, "x"},    {"many", SHA512, 20000, "x"}, {"twice", SHA256, 4096, "x"},
        {"twice", SHA256, 8192, "y"}, {"weird", 9, 4096, "x"},
    };
    int n = sasl_it_alter_credentials(&t, bad, 5, NULL, NULL, 0, users, errors, 8);
    assert_int_equal(n, 4);
    assert_string_equal(users[0], "few");
    assert_int_equal(errors[0], ERR_UNACCEPTABLE_CREDENTIAL);
    assert_int_equal(errors[1], ERR_UNACCEPTABLE_CREDENTIAL);
    assert_string_equal(users[2], "twice");
    assert_int_equal(errors[2], ERR_DUPLICATE_RESOURCE);
    assert_int_equal(errors[3], ERR_UNSUPPORTED_SASL_MECHANISM);
    assert_int_equal(describe_user(&t, "twice", &mech, &iterations), ERR_RESOURCE_NOT_FOUND);

    /* Deleting: a missing credential is RESOURCE_NOT_FOUND; frank's goes. */
    const char *del_users[] = {"frank", "ghost"};
    int del_mechs[] = {SHA256, SHA256};
    n = sasl_it_alter_credentials(&t, NULL, 0, del_users, del_mechs, 2, users, errors, 8);
    assert_int_equal(n, 2);
    assert_int_equal(errors[0], 0);
    assert_int_equal(errors[1], ERR_RESOURCE_NOT_FOUND);
    assert_int_equal(describe_user(&t, "frank", &mech, &iterations), ERR_RESOURCE_NOT_FOUND);

    /* frank can no longer log in; the change needed no restart. */
    struct scram_wire_conn c = scram_wire_connect(&t);
    char mechanisms[200];
    struct scram_wire_answer a;
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA256, "frank", "frank-secret", &a);
    assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
    close(c.fd);
    sasl_it_stop(&t);
}

/* PLAIN through the auth-sasl plugin (Cyrus SASL) against a sasldb the
 * test makes with saslpasswd2. */
static void test_plain_through_cyrus(void **state)
{
    (void)state;
    char db[256], cmd[600], db_key[300];
    snprintf(db, sizeof db, "/tmp/cairn-sasldb-%d", (int)getpid());
    unlink(db);
    snprintf(cmd, sizeof cmd,
             "printf %%s 'gina-secret' | /usr/sbin/saslpasswd2 -p -c -f '%s' -u cairn -a cairn gina 2>&1", db);
    if (system(cmd) != 0)
        fail_msg("saslpasswd2 failed (is sasl2-bin installed?): %s", cmd);
    snprintf(db_key, sizeof db_key, "plugin.auth-sasl.sasldb_path=%s", db);
    const char *extra[] = {"plugins=audit,auth-sasl", db_key, "plugin.auth-sasl.realm=cairn",
                           "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256", NULL};
    struct sasl_it t = {0};
    sasl_it_start_with(&t, "0", extra);
    rk_create_topic(broker_bootstrap(&t.broker), "plain-topic", 1, NULL);
    sasl_it_produce_and_consume(&t, "PLAIN", "gina", "gina-secret", "plain-topic");

    struct sasl_it_auth_errors errors = {0};
    rd_kafka_t *rk = sasl_it_producer(&t, "PLAIN", "gina", "wrong", &errors);
    long long deadline = harness_now_ms() + 10000;
    while (errors.count == 0 && harness_now_ms() < deadline)
        rd_kafka_poll(rk, 100);
    rd_kafka_destroy(rk);
    if (!strstr(errors.text, "Authentication failed: Invalid username or password"))
        fail_msg("expected Kafka's PLAIN failure message, got: %s", errors.text);

    /* The handshake offers what is enabled and served, in the configured order. */
    struct scram_wire_conn c = scram_wire_connect(&t);
    char mechanisms[200];
    assert_int_equal(scram_wire_handshake(&c, "GSSAPI", mechanisms, sizeof mechanisms), ERR_UNSUPPORTED_SASL_MECHANISM);
    assert_string_equal(mechanisms, "PLAIN,SCRAM-SHA-256");
    close(c.fd);

    /* A name Cyrus does not know is refused the same way. */
    errors = (struct sasl_it_auth_errors){0};
    rk = sasl_it_producer(&t, "PLAIN", "nobody", "guess", &errors);
    deadline = harness_now_ms() + 10000;
    while (errors.count == 0 && harness_now_ms() < deadline)
        rd_kafka_poll(rk, 100);
    rd_kafka_destroy(rk);
    assert_true(errors.count > 0);

    sasl_it_expect_audited(&t, "User:gina", true, NULL, "PLAIN");
    /* A refusal names the user the client claimed to be, as SCRAM's do. */
    sasl_it_expect_audited(&t, "User:gina", false, "Invalid username or password", "PLAIN");
    sasl_it_expect_audited(&t, "User:nobody", false, "Invalid username or password", "PLAIN");
    assert_int_equal(sasl_it_count_audited(t.audit_path, "User:ANONYMOUS", false, NULL, "PLAIN"), 0);
    sasl_it_stop(&t);
    unlink(db);
}

/* SASL_SSL: SCRAM over the TLS transport, with the certificates the TLS
 * tests make; a wrong password is refused there too. */
static void test_scram_over_sasl_ssl(void **state)
{
    (void)state;
    char dir[256], cmd[700], keystore[300], ca[300], listeners[200];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/cairn-sasl-ssl-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "sh '%s/tests/integration/tls/make_certs.sh' '%s'", CAIRN_SOURCE_DIR, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(keystore, sizeof keystore, "ssl.keystore.location=%s/server.pem", dir);
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);

    struct sasl_it t = {.ca_location = ca};
    int port = harness_free_port();
    assert_true(port > 0);
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:%d", port);
    const char *extra[] = {listeners, keystore, NULL};
    sasl_it_start_with(&t, "0", extra);
    /* The listener override replaced the SASL_PLAINTEXT port start_broker_with chose. */
    t.sasl_port = port;
    snprintf(t.sasl_bootstrap, sizeof t.sasl_bootstrap, "127.0.0.1:%d", port);
    sasl_it_create_user(&t, "carol", SHA512, "carol-secret");
    rk_create_topic(broker_bootstrap(&t.broker), "sasl-ssl-topic", 1, NULL);
    sasl_it_produce_and_consume(&t, "SCRAM-SHA-512", "carol", "carol-secret", "sasl-ssl-topic");
    sasl_it_expect_auth_failure(&t, "SCRAM-SHA-512", "carol", "not-her-password");
    sasl_it_stop(&t);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* connection.failed.authentication.delay.ms: a wrong password's answer and
 * the close after it wait that long; a right one does not. */
static void test_failed_authentication_delay(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    const char *const extra[] = {"connection.failed.authentication.delay.ms=800", NULL};
    sasl_it_start_with(&t, "0", extra);
    sasl_it_create_user(&t, "dana", SHA256, "dana-secret");
    char mechanisms[200];
    struct scram_wire_answer a;
    for (int right = 0; right <= 1; right++) {
        struct scram_wire_conn c = scram_wire_connect(&t);
        assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
        long long began = harness_now_ms();
        scram_wire_login(&c, SHA256, "dana", right ? "dana-secret" : "wrong", &a);
        long long answered = harness_now_ms() - began;
        if (right) {
            assert_int_equal(a.error, 0);
            if (answered >= 700)
                fail_msg("a successful login took %lld ms", answered);
        } else {
            assert_int_equal(a.error, ERR_SASL_AUTHENTICATION_FAILED);
            assert_true(raw_wait_closed(c.fd, 5000));
            long long closed = harness_now_ms() - began;
            if (answered < 780 || closed < 780)
                fail_msg("failure answered after %lld ms, closed after %lld ms; expected >= 800", answered, closed);
        }
        close(c.fd);
    }
    sasl_it_stop(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_gate_and_mechanisms),
        cmocka_unit_test(test_reauthentication),
        cmocka_unit_test(test_credential_admin),
        cmocka_unit_test(test_scram_with_librdkafka),
        cmocka_unit_test(test_scram_over_sasl_ssl),
        cmocka_unit_test(test_plain_through_cyrus),
        cmocka_unit_test(test_failed_authentication_delay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
