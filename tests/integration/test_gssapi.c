/* SASL GSSAPI (Kerberos) through the auth-sasl plugin against a real MIT
 * KDC the test starts on loopback (krb5_kdc.c): librdkafka, which runs
 * kinit with the client's keytab and speaks GSSAPI through Cyrus SASL,
 * produces and consumes as kafka-client@CAIRN.TEST; the broker sees
 * User:kafka-client (the DEFAULT principal.to.local rule). A client whose
 * principal the KDC does not know gets no ticket and is refused, and a
 * token that is no Kerberos token gets SASL_AUTHENTICATION_FAILED with the
 * GSSAPI reason, and so does a ticket sealed with a service key the broker's
 * keytab lacks. SaslHandshake v0's bare tokens carry the same exchange
 * (a Cyrus SASL client written here). Every attempt reaches the audit log
 * once: a good ticket refused after Cyrus learnt its name (an authorization
 * id it may not take) as User:kafka-client, one whose name no rule maps as
 * that whole name, a token that is no ticket and
 * a ticket the broker cannot read as User:ANONYMOUS, a client without a
 * ticket (no token at all) as User:ANONYMOUS when it leaves. Skipped only
 * when the KDC binaries are not installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <sasl/sasl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "krb5_kdc.h"
#include "raw_kafka.h"
#include "raw_session.h"
#include "rk_helpers.h"
#include "sasl_it_fixture.h"

struct gssapi_it {
    struct test_kdc kdc;
    struct test_broker broker;
    int sasl_port;
    char sasl_bootstrap[64];
    char client_keytab[300];
    char ghost_keytab[300];
    char odd_keytab[300];
    char audit_path[600];
};

struct auth_errors {
    int count;
    char text[1024];
};

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    struct auth_errors *e = opaque;
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
        e->count++;
        snprintf(e->text, sizeof e->text, "%s", reason);
    }
}

/* The client settings of a Kerberos login as principal with keytab, into
 * kv (room for 16 entries): librdkafka runs kinit.cmd itself. */
static void kerberos_conf(const char *principal, const char *keytab, char *kinit, size_t kinit_len, const char **kv)
{
    /* kinit into this test's ticket cache (KRB5CCNAME, set by the KDC helper). */
    snprintf(kinit, kinit_len, "kinit -k -t '%s' %s", keytab, principal);
    const char *pairs[] = {"security.protocol",
                           "SASL_PLAINTEXT",
                           "sasl.mechanisms",
                           "GSSAPI",
                           "sasl.kerberos.service.name",
                           "kafka",
                           "sasl.kerberos.principal",
                           principal,
                           "sasl.kerberos.keytab",
                           keytab,
                           "sasl.kerberos.kinit.cmd",
                           kinit,
                           "broker.address.family",
                           "v4",
                           NULL};
    memcpy(kv, pairs, sizeof pairs);
}

static rd_kafka_t *kerberos_producer(struct gssapi_it *t, const char *principal, const char *keytab,
                                     struct auth_errors *errors)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512], kinit[600];
    const char *kv[16];
    kerberos_conf(principal, keytab, kinit, sizeof kinit, kv);
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", t->sasl_bootstrap, errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(conf, "linger.ms", "5", errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    for (int i = 0; kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
            fail_msg("%s: %s", kv[i], errstr);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, errors);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk)
        fail_msg("rd_kafka_new: %s", errstr);
    return rk;
}

/* Creates the realm, its principals and keytabs, and starts cairnd with a
 * SASL_PLAINTEXT listener serving GSSAPI as kafka/localhost. False: the
 * KDC binaries are missing (the test skips). */
static bool start(struct gssapi_it *t)
{
    if (!test_kdc_available())
        return false;
    char why[512], service_keytab[300];
    if (test_kdc_start(&t->kdc, why, sizeof why) != 0)
        fail_msg("KDC: %s", why);
    if (test_kdc_add_principal(&t->kdc, "kafka/localhost", "kafka.keytab", service_keytab, sizeof service_keytab, why,
                               sizeof why) != 0 ||
        test_kdc_add_principal(&t->kdc, "kafka-client", "client.keytab", t->client_keytab, sizeof t->client_keytab, why,
                               sizeof why) != 0 ||
        test_kdc_add_principal(&t->kdc, "ghost", "ghost.keytab", t->ghost_keytab, sizeof t->ghost_keytab, why,
                               sizeof why) != 0 ||
        /* An '@' inside the name: Cyrus cannot tell its realm, so the name
         * keeps one, which DEFAULT does not map. */
        test_kdc_add_principal(&t->kdc, "odd\\@x", "odd.keytab", t->odd_keytab, sizeof t->odd_keytab, why,
                               sizeof why) != 0)
        fail_msg("%s", why);
    /* ghost's keytab outlives its principal: the KDC no longer knows it. */
    assert_int_equal(test_kdc_admin(&t->kdc, "delprinc -force ghost"), 0);

    t->sasl_port = harness_free_port();
    assert_true(t->sasl_port > 0);
    /* The client asks for a ticket to kafka/<the host it dials>. */
    snprintf(t->sasl_bootstrap, sizeof t->sasl_bootstrap, "localhost:%d", t->sasl_port);
    char listeners[200], advertised[200], plugin_path[600], keytab[400], audit_file[700];
    snprintf(t->audit_path, sizeof t->audit_path, "/tmp/cairn-gssapi-audit-%d-%d.log", (int)getpid(), t->sasl_port);
    unlink(t->audit_path);
    snprintf(audit_file, sizeof audit_file, "plugin.audit.file.path=%s", t->audit_path);
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d",
             t->sasl_port);
    snprintf(advertised, sizeof advertised,
             "advertised.listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://localhost:%d", t->sasl_port);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(keytab, sizeof keytab, "plugin.auth-sasl.keytab=%s", service_keytab);
    const char *overrides[] = {listeners,   advertised,
                               plugin_path, "plugins=audit,auth-sasl",
                               audit_file,  "sasl.enabled.mechanisms=GSSAPI",
                               keytab,      "plugin.auth-sasl.kerberos_host=localhost",
                               NULL};
    broker_start(&t->broker, overrides);
    return true;
}

static void stop(struct gssapi_it *t)
{
    broker_stop(&t->broker);
    broker_mark_passed(&t->broker);
    broker_cleanup(&t->broker);
    test_kdc_stop(&t->kdc);
    unlink(t->audit_path);
}

/* Waits up to 10 s until the audit log holds want GSSAPI authentication
 * events of principal (NULL: any) with that outcome and reason_part (NULL:
 * any); then the count, which the caller compares. */
static int audited(struct gssapi_it *t, int want, const char *principal, bool success, const char *reason_part)
{
    long long deadline = harness_now_ms() + 10000;
    int n;
    while ((n = sasl_it_count_audited(t->audit_path, principal, success, reason_part, "GSSAPI")) < want &&
           harness_now_ms() < deadline)
        usleep(100 * 1000);
    return n;
}

static void produce_and_consume(struct gssapi_it *t, const char *topic)
{
    struct auth_errors errors = {0};
    rd_kafka_t *rk = kerberos_producer(t, "kafka-client", t->client_keytab, &errors);
    for (int i = 0; i < 10; i++) {
        char value[32];
        snprintf(value, sizeof value, "kerberos-%d", i);
        assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                           RD_KAFKA_V_VALUE(value, strlen(value)),
                                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    if (rd_kafka_flush(rk, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail_msg("produce over GSSAPI did not finish; authentication errors: %d %s", errors.count, errors.text);
    assert_int_equal(errors.count, 0);
    rd_kafka_destroy(rk);

    char kinit[600];
    const char *conf[16];
    kerberos_conf("kafka-client", t->client_keytab, kinit, sizeof kinit, conf);
    rd_kafka_t *consumer = rk_consumer_new(t->sasl_bootstrap, conf);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(consumer, topic, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
    int got = 0;
    long long deadline = harness_now_ms() + 30000;
    while (got < 10 && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 500);
        if (!m)
            continue;
        if (!m->err) {
            char want[32];
            snprintf(want, sizeof want, "kerberos-%d", got);
            assert_int_equal(m->len, strlen(want));
            assert_memory_equal(m->payload, want, m->len);
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    assert_int_equal(got, 10);
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(consumer);
}

/* The broker's log reaches its file a little later than the client's answer. */
static bool wait_log(struct gssapi_it *t, const char *needle)
{
    long long deadline = harness_now_ms() + 10000;
    while (!broker_log_contains(&t->broker, needle))
        if (harness_now_ms() > deadline)
            return false;
        else
            usleep(100 * 1000);
    return true;
}

/* SaslHandshake v1 for GSSAPI, then one SaslAuthenticate v2 with `token`;
 * returns the error code, the message in message. */
static int16_t raw_gssapi_token(struct gssapi_it *t, const void *token, size_t len, char *message, size_t cap)
{
    struct raw_session s = {raw_connect(t->sasl_port, 10000), 0};
    assert_true(s.fd >= 0);
    struct raw_writer w;
    struct raw_reader r;
    raw_writer_init(&w);
    raw_frame_begin(&w, 17, 1, ++s.correlation, "gssapi-it");
    raw_put_string(&w, "GSSAPI");
    uint8_t *frame = raw_session_roundtrip(&s, &w, &r, false);
    assert_int_equal(raw_get_i16(&r), 0);
    free(frame);

    raw_session_begin(&s, &w, 36, 2);
    raw_put_compact_bytes(&w, token, len);
    raw_put_uvarint(&w, 0);
    frame = raw_session_roundtrip(&s, &w, &r, true);
    int16_t err = raw_get_i16(&r);
    message[0] = '\0';
    raw_get_compact_string(&r, message, cap);
    free(frame);
    close(s.fd);
    return err;
}

/* The empty authorization id: the principal is the Kerberos name. */
static int empty_authzid(void *context, int id, const char **result, unsigned *len)
{
    (void)context;
    (void)id;
    *result = "";
    if (len)
        *len = 0;
    return SASL_OK;
}

/* An authorization id other than the Kerberos name: Cyrus's default proxy
 * policy refuses it once the ticket is accepted. */
static int other_authzid(void *context, int id, const char **result, unsigned *len)
{
    (void)context;
    (void)id;
    *result = "admin";
    if (len)
        *len = 5;
    return SASL_OK;
}

/* Sends one bare token (SaslHandshake v0 framing: a 4-byte length). */
static void send_bare(int fd, const char *token, unsigned len)
{
    uint32_t n = htonl(len);
    assert_int_equal(raw_send_all(fd, &n, 4), 0);
    if (len)
        assert_int_equal(raw_send_all(fd, token, len), 0);
}

/* Cyrus's client for callbacks (which must outlive it) and a connection
 * to the SASL listener that chose GSSAPI with SaslHandshake of version. */
static sasl_conn_t *gssapi_client_after_handshake(struct gssapi_it *t, sasl_callback_t *callbacks, int16_t version,
                                                  struct raw_session *s)
{
    assert_int_equal(sasl_client_init(NULL), SASL_OK);
    sasl_conn_t *conn = NULL;
    assert_int_equal(sasl_client_new("kafka", "localhost", NULL, NULL, callbacks, 0, &conn), SASL_OK);
    *s = (struct raw_session){raw_connect(t->sasl_port, 10000), 0};
    assert_true(s->fd >= 0);
    struct raw_writer w;
    struct raw_reader r;
    raw_writer_init(&w);
    raw_frame_begin(&w, 17, version, ++s->correlation, "gssapi-it");
    raw_put_string(&w, "GSSAPI");
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, false);
    assert_int_equal(raw_get_i16(&r), 0);
    free(frame);
    return conn;
}

/* GSSAPI after SaslHandshake v0 with Cyrus's client and the ticket kinit
 * put in the cache: every token goes bare, several round trips, then
 * Metadata is answered on the authenticated connection. */
static void gssapi_over_handshake_v0(struct gssapi_it *t)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "kinit -k -t '%s' kafka-client", t->client_keytab);
    assert_int_equal(system(cmd), 0);
    static sasl_callback_t callbacks[] = {
        {SASL_CB_USER, (int (*)(void))(void (*)(void))empty_authzid, NULL},
        {SASL_CB_AUTHNAME, (int (*)(void))(void (*)(void))empty_authzid, NULL},
        {SASL_CB_LIST_END, NULL, NULL},
    };
    struct raw_session s;
    sasl_conn_t *conn = gssapi_client_after_handshake(t, callbacks, 0, &s);
    uint8_t *frame = NULL;

    const char *out = NULL, *mech = NULL;
    unsigned out_len = 0;
    int rc = sasl_client_start(conn, "GSSAPI", NULL, &out, &out_len, &mech);
    if (rc != SASL_CONTINUE)
        fail_msg("sasl_client_start: %s", sasl_errdetail(conn));
    int round_trips = 0;
    for (;;) {
        send_bare(s.fd, out, out_len);
        size_t in_len = 0;
        if (raw_recv_frame(s.fd, 10000, 1 << 16, &frame, &in_len) != 0)
            fail_msg("the broker closed the connection after %d bare tokens", round_trips + 1);
        round_trips++;
        if (rc == SASL_OK) {
            assert_int_equal(in_len, 0); /* the broker's last, empty answer */
            free(frame);
            break;
        }
        rc = sasl_client_step(conn, (const char *)frame, (unsigned)in_len, NULL, &out, &out_len);
        free(frame);
        if (rc != SASL_OK && rc != SASL_CONTINUE)
            fail_msg("sasl_client_step: %s", sasl_errdetail(conn));
        assert_true(round_trips < 10);
    }
    if (round_trips < 3)
        fail_msg("GSSAPI took %d round trips, expected at least 3", round_trips);
    sasl_dispose(&conn);
    sasl_client_done(); /* frees the GSSAPI mechanism's credentials too */

    /* Metadata v1 with no topics: answered only on an authenticated connection. */
    struct raw_writer w;
    struct raw_reader r;
    raw_writer_init(&w);
    raw_frame_begin(&w, 3, 1, ++s.correlation, "gssapi-it");
    raw_put_i32(&w, 0);
    frame = raw_session_roundtrip(&s, &w, &r, false);
    free(frame);
    close(s.fd);
}

/* A valid ticket for principal (from keytab) that the broker refuses once
 * Cyrus has accepted it and learnt the name: with as_admin, because the
 * client asks to act as "admin" (Cyrus refuses the authorization id at the
 * last token); else because of the name itself. The broker closes (v0: no
 * error frame). */
static void gssapi_refused_login(struct gssapi_it *t, const char *principal, const char *keytab, bool as_admin)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "kinit -k -t '%s' '%s'", keytab, principal);
    assert_int_equal(system(cmd), 0);
    sasl_callback_t callbacks[] = {
        {SASL_CB_USER, (int (*)(void))(void (*)(void))(as_admin ? other_authzid : empty_authzid), NULL},
        {SASL_CB_AUTHNAME, (int (*)(void))(void (*)(void))empty_authzid, NULL},
        {SASL_CB_LIST_END, NULL, NULL},
    };
    struct raw_session s;
    sasl_conn_t *conn = gssapi_client_after_handshake(t, callbacks, 0, &s);
    uint8_t *frame = NULL;

    const char *out = NULL, *mech = NULL;
    unsigned out_len = 0;
    int rc = sasl_client_start(conn, "GSSAPI", NULL, &out, &out_len, &mech);
    if (rc != SASL_CONTINUE)
        fail_msg("sasl_client_start: %s", sasl_errdetail(conn));
    bool closed = false;
    for (int round_trips = 0; round_trips < 10 && !closed; round_trips++) {
        send_bare(s.fd, out, out_len);
        size_t in_len = 0;
        if (raw_recv_frame(s.fd, 10000, 1 << 16, &frame, &in_len) != 0) {
            closed = true;
            break;
        }
        if (rc == SASL_OK) {
            free(frame);
            break;
        }
        rc = sasl_client_step(conn, (const char *)frame, (unsigned)in_len, NULL, &out, &out_len);
        free(frame);
        if (rc != SASL_OK && rc != SASL_CONTINUE)
            fail_msg("sasl_client_step: %s", sasl_errdetail(conn));
    }
    if (!closed)
        fail_msg("the broker accepted %s%s", principal, as_admin ? " acting as admin" : "");
    sasl_dispose(&conn);
    sasl_client_done();
    close(s.fd);
}

/* A client with no ticket at all: it chooses GSSAPI, its own Cyrus cannot
 * start (no credentials), and it closes without sending a token, as
 * librdkafka does. */
static void gssapi_without_ticket(struct gssapi_it *t)
{
    assert_int_equal(system("kdestroy -q 2>/dev/null || true"), 0);
    static sasl_callback_t callbacks[] = {
        {SASL_CB_USER, (int (*)(void))(void (*)(void))empty_authzid, NULL},
        {SASL_CB_AUTHNAME, (int (*)(void))(void (*)(void))empty_authzid, NULL},
        {SASL_CB_LIST_END, NULL, NULL},
    };
    struct raw_session s;
    sasl_conn_t *conn = gssapi_client_after_handshake(t, callbacks, 1, &s);
    const char *out = NULL, *mech = NULL;
    unsigned out_len = 0;
    int rc = sasl_client_start(conn, "GSSAPI", NULL, &out, &out_len, &mech);
    if (rc == SASL_CONTINUE || rc == SASL_OK)
        fail_msg("Cyrus started a GSSAPI exchange without a ticket");
    sasl_dispose(&conn);
    sasl_client_done();
    close(s.fd);
}

static void test_gssapi_with_librdkafka(void **state)
{
    (void)state;
    struct gssapi_it t;
    memset(&t, 0, sizeof t);
    if (!start(&t)) {
        print_message("skipping: MIT Kerberos KDC binaries (krb5kdc, kdb5_util, kadmin.local, kinit) "
                      "are not installed; apt-get install krb5-kdc krb5-admin-server krb5-user\n");
        skip();
    }
    rk_create_topic(broker_bootstrap(&t.broker), "kerberos-topic", 1, NULL);
    produce_and_consume(&t, "kerberos-topic");
    /* The Kerberos name kafka-client@CAIRN.TEST is the Kafka user kafka-client. */
    if (!wait_log(&t, "User:kafka-client authenticated with GSSAPI"))
        fail_msg("the broker did not log User:kafka-client authenticating with GSSAPI");
    assert_true(audited(&t, 1, "User:kafka-client", true, NULL) >= 1);

    gssapi_over_handshake_v0(&t);

    /* The ticket is good but the login is refused (Cyrus's proxy policy:
     * kafka-client may not act as admin): audited once, as the Kerberos
     * name Cyrus learnt. */
    gssapi_refused_login(&t, "kafka-client", t.client_keytab, true);
    assert_int_equal(audited(&t, 1, "User:kafka-client", false, "Authentication failed during GSSAPI"), 1);
    /* A good ticket whose name no principal.to.local rule maps: audited
     * once, as the whole Kerberos name, realm included. */
    gssapi_refused_login(&t, "odd\\@x", t.odd_keytab, false);
    assert_int_equal(audited(&t, 1, "User:odd\\@x@CAIRN.TEST", false, "no principal.to.local rule applies"), 1);
    /* No ticket, no token: audited once as nobody when the client leaves. */
    gssapi_without_ticket(&t);
    assert_int_equal(audited(&t, 1, "User:ANONYMOUS", false, "before the SASL exchange finished"), 1);

    /* A principal the KDC does not know gets no ticket: librdkafka's kinit
     * fails and the login is refused. The cache holds no earlier ticket. */
    assert_int_equal(system("kdestroy -q 2>/dev/null || true"), 0);
    struct auth_errors errors = {0};
    rd_kafka_t *rk = kerberos_producer(&t, "ghost", t.ghost_keytab, &errors);
    long long deadline = harness_now_ms() + 20000;
    while (errors.count == 0 && harness_now_ms() < deadline)
        rd_kafka_poll(rk, 100);
    rd_kafka_destroy(rk);
    if (errors.count == 0 || !strstr(errors.text, "Kerberos"))
        fail_msg("a client without a ticket was not refused with a Kerberos error: %d %s", errors.count, errors.text);
    assert_false(broker_log_contains(&t.broker, "User:ghost authenticated"));
    /* librdkafka left after the handshake on each try: each audited. */
    assert_true(audited(&t, 2, "User:ANONYMOUS", false, "before the SASL exchange finished") >= 2);
    usleep(500 * 1000);
    int before_garbage = sasl_it_count_audited(t.audit_path, NULL, false, NULL, "GSSAPI");

    /* A token that is not Kerberos: the broker answers with the GSSAPI reason. */
    char message[256];
    const char garbage[] = "not a kerberos token";
    assert_int_equal(raw_gssapi_token(&t, garbage, sizeof garbage - 1, message, sizeof message),
                     ERR_SASL_AUTHENTICATION_FAILED);
    if (!strstr(message, "GSSAPI"))
        fail_msg("expected a GSSAPI failure message, got: %s", message);
    /* No name is known of a token that is no ticket: audited once as the
     * connection's principal, with Cyrus's reason. */
    assert_int_equal(audited(&t, 1, "User:ANONYMOUS", false, "Authentication failed during GSSAPI"), 1);
    usleep(500 * 1000);
    assert_int_equal(sasl_it_count_audited(t.audit_path, NULL, false, NULL, "GSSAPI"), before_garbage + 1);

    /* The KDC re-keys kafka/localhost: a fresh ticket is sealed with a key
     * the broker's keytab lacks, so the broker itself refuses it. */
    assert_int_equal(test_kdc_admin(&t.kdc, "cpw -randkey kafka/localhost"), 0);
    assert_int_equal(system("kdestroy -q 2>/dev/null || true"), 0);
    memset(&errors, 0, sizeof errors);
    rk = kerberos_producer(&t, "kafka-client", t.client_keytab, &errors);
    deadline = harness_now_ms() + 20000;
    while (errors.count == 0 && harness_now_ms() < deadline)
        rd_kafka_poll(rk, 100);
    rd_kafka_destroy(rk);
    if (errors.count == 0 || !strstr(errors.text, "Authentication failed during GSSAPI (Kerberos) authentication"))
        fail_msg("a ticket for the old service key was not refused by the broker: %d %s", errors.count, errors.text);
    print_message("refused by the broker: %s\n", errors.text);
    /* The ticket the broker cannot read names nobody it could trust. */
    assert_true(audited(&t, 2, "User:ANONYMOUS", false, "Authentication failed during GSSAPI") >= 2);
    assert_int_equal(sasl_it_count_audited(t.audit_path, "User:kafka-client", false, NULL, "GSSAPI"), 1);
    assert_int_equal(sasl_it_count_audited(t.audit_path, "User:ghost", false, NULL, NULL), 0);
    stop(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gssapi_with_librdkafka),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
