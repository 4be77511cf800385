/* SASL/OAUTHBEARER on a real cairnd with the auth-oauth plugin: librdkafka
 * gets a JWT signed by a key made here (through its token refresh
 * callback and rd_kafka_oauthbearer_set_token), produces and consumes; a
 * token the broker must refuse (expired, another audience, unknown key)
 * fails with SASL_AUTHENTICATION_FAILED; the exchange on the wire (the
 * session lifetime is the token's, Kafka's invalid_token challenge and
 * %x01 answer); every refusal in the audit log once, when the token is
 * refused, also for a client that closes instead of answering %x01; and
 * the JWK set is fetched over HTTP (libcurl) from a server the test starts. */
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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "jwt_forge.h"
#include "raw_kafka.h"
#include "raw_session.h"

struct oauth_it {
    struct test_broker broker;
    int sasl_port;
    char sasl_bootstrap[64];
    char dir[256];
    char jwks_path[300];
    char audit_path[300];
    EVP_PKEY *key; /* in the JWKS, kid "test-key" */
};

/* What the refresh callback hands librdkafka, and the errors it reports. */
struct client_state {
    const char *token;
    const char *principal;
    int auth_errors;
    char last_error[512];
};

static void make_dir_and_key(struct oauth_it *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/cairn-oauth-it-%d-XXXXXX", (int)getpid());
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->jwks_path, sizeof t->jwks_path, "%s/jwks.json", t->dir);
    t->key = forge_keygen("ES256");
    assert_non_null(t->key);
    char *jwk = forge_jwk(t->key, "test-key", "ES256");
    assert_non_null(jwk);
    const char *const jwks[] = {jwk};
    assert_int_equal(forge_write_jwks(t->jwks_path, jwks, 1), 0);
    free(jwk);
}

static void start_broker(struct oauth_it *t, const char *jwks_url)
{
    t->sasl_port = harness_free_port();
    assert_true(t->sasl_port > 0);
    snprintf(t->sasl_bootstrap, sizeof t->sasl_bootstrap, "127.0.0.1:%d", t->sasl_port);
    char listeners[200], plugin_path[600], url[400], audit_file[400];
    snprintf(t->audit_path, sizeof t->audit_path, "%s/audit.log", t->dir);
    snprintf(audit_file, sizeof audit_file, "plugin.audit.file.path=%s", t->audit_path);
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d",
             t->sasl_port);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(url, sizeof url, "plugin.auth-oauth.sasl.oauthbearer.jwks.endpoint.url=%s", jwks_url);
    const char *overrides[] = {listeners,
                               "sasl.enabled.mechanisms=OAUTHBEARER",
                               plugin_path,
                               "plugins=auth-oauth,audit",
                               audit_file,
                               url,
                               "plugin.auth-oauth.sasl.oauthbearer.expected.audience=cairn",
                               "plugin.auth-oauth.sasl.oauthbearer.expected.issuer=https://issuer.test",
                               NULL};
    broker_start(&t->broker, overrides);
}

/* A key in a JWKS file and a broker reading it. */
static void start_with_jwks_file(struct oauth_it *t)
{
    make_dir_and_key(t);
    char url[400];
    snprintf(url, sizeof url, "file://%s", t->jwks_path);
    start_broker(t, url);
}

static void stop_all(struct oauth_it *t)
{
    if (t->broker.pid > 0)
        broker_stop(&t->broker);
    broker_mark_passed(&t->broker);
    broker_cleanup(&t->broker);
    EVP_PKEY_free(t->key);
    unlink(t->jwks_path);
    unlink(t->audit_path);
    rmdir(t->dir);
}

/* A token for sub from the test's issuer; exp_in seconds from now. */
static char *make_token(EVP_PKEY *key, const char *kid, const char *sub, const char *aud, long exp_in)
{
    char claims[512];
    long now = (long)time(NULL);
    snprintf(claims, sizeof claims,
             "{\"sub\":\"%s\",\"aud\":\"%s\",\"iss\":\"https://issuer.test\",\"iat\":%ld,\"exp\":%ld,"
             "\"scope\":\"kafka\"}",
             sub, aud, now - 5, now + exp_in);
    char *token = forge_token(key, "ES256", kid, claims);
    assert_non_null(token);
    return token;
}

static void on_refresh(rd_kafka_t *rk, const char *config, void *opaque)
{
    (void)config;
    struct client_state *cs = opaque;
    char errstr[512];
    /* librdkafka refreshes at 80% of this lifetime; the broker reads exp. */
    int64_t lifetime_ms = (int64_t)time(NULL) * 1000 + 600000;
    if (rd_kafka_oauthbearer_set_token(rk, cs->token, lifetime_ms, cs->principal, NULL, 0, errstr, sizeof errstr) !=
        RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_oauthbearer_set_token_failure(rk, errstr);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    struct client_state *cs = opaque;
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
        cs->auth_errors++;
        snprintf(cs->last_error, sizeof cs->last_error, "%s", reason);
    }
}

static rd_kafka_t *oauth_client(struct oauth_it *t, rd_kafka_type_t type, struct client_state *cs)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    const char *kv[] = {"bootstrap.servers",
                        t->sasl_bootstrap,
                        "security.protocol",
                        "SASL_PLAINTEXT",
                        "sasl.mechanisms",
                        "OAUTHBEARER",
                        "linger.ms",
                        "5",
                        NULL};
    for (int i = 0; kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
            fail_msg("%s: %s", kv[i], errstr);
    rd_kafka_conf_set_oauthbearer_token_refresh_cb(conf, on_refresh);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, cs);
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!rk)
        fail_msg("rd_kafka_new: %s", errstr);
    return rk;
}

static void produce_and_consume(struct oauth_it *t, const char *token, const char *topic, int count)
{
    struct client_state cs = {.token = token, .principal = "alice"};
    rd_kafka_t *rk = oauth_client(t, RD_KAFKA_PRODUCER, &cs);
    for (int i = 0; i < count; i++) {
        char value[32];
        snprintf(value, sizeof value, "oauth-%d", i);
        assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                           RD_KAFKA_V_VALUE(value, strlen(value)),
                                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(rk, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(cs.auth_errors, 0);
    rd_kafka_destroy(rk);

    rd_kafka_t *consumer = oauth_client(t, RD_KAFKA_CONSUMER, &cs);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(consumer, topic, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
    int got = 0;
    long long deadline = harness_now_ms() + 20000;
    while (got < count && harness_now_ms() < deadline) {
        rd_kafka_poll(consumer, 0); /* serves the token refresh callback */
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 200);
        if (!m)
            continue;
        if (!m->err) {
            char expected[32];
            snprintf(expected, sizeof expected, "oauth-%d", got);
            assert_int_equal(m->len, strlen(expected));
            assert_memory_equal(m->payload, expected, m->len);
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(consumer);
    assert_int_equal(got, count);
    assert_int_equal(cs.auth_errors, 0);
}

/* Failed OAUTHBEARER authentications in the audit log whose error holds
 * reason. */
static int audited_refusals(const struct oauth_it *t, const char *reason)
{
    FILE *f = fopen(t->audit_path, "r");
    if (!f)
        return 0;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, "\"type\":\"authentication\"") && strstr(line, "\"mechanism\":\"OAUTHBEARER\"") &&
             strstr(line, "\"success\":false") && strstr(line, reason);
    fclose(f);
    return n;
}

/* Waits (the audit plugin writes from a thread of its own) for count
 * refusals with reason in the audit log. */
static void expect_audited_refusals(const struct oauth_it *t, const char *reason, int count)
{
    long long deadline = harness_now_ms() + 15000;
    while (audited_refusals(t, reason) < count && harness_now_ms() < deadline)
        usleep(50000);
    if (audited_refusals(t, reason) != count)
        fail_msg("%d refusals saying '%s' in the audit log, expected %d", audited_refusals(t, reason), reason, count);
}

/* A producer with this token reports an authentication error, and the
 * broker logged and audited why it refused the token. */
static void expect_refused(struct oauth_it *t, const char *token, const char *log_reason)
{
    struct client_state cs = {.token = token, .principal = "alice"};
    rd_kafka_t *rk = oauth_client(t, RD_KAFKA_PRODUCER, &cs);
    long long deadline = harness_now_ms() + 10000;
    while (cs.auth_errors == 0 && harness_now_ms() < deadline)
        rd_kafka_poll(rk, 100);
    rd_kafka_destroy(rk);
    if (cs.auth_errors == 0)
        fail_msg("no authentication error for a token refused for '%s'", log_reason);
    /* librdkafka shows the broker's RFC 7628 error and SASL_AUTHENTICATION_FAILED. */
    if (!strstr(cs.last_error, "invalid_token"))
        fail_msg("client error without the broker's invalid_token: %s", cs.last_error);
    deadline = harness_now_ms() + 5000;
    while (!broker_log_contains(&t->broker, log_reason) && harness_now_ms() < deadline)
        usleep(50000);
    if (!broker_log_contains(&t->broker, log_reason))
        fail_msg("broker log does not say '%s'", log_reason);
    /* librdkafka may retry, so one or more refusals, each with the reason. */
    deadline = harness_now_ms() + 15000;
    while (audited_refusals(t, log_reason) == 0 && harness_now_ms() < deadline)
        usleep(50000);
    if (audited_refusals(t, log_reason) == 0)
        fail_msg("no refusal saying '%s' in the audit log", log_reason);
}

static void test_oauthbearer_with_librdkafka(void **state)
{
    (void)state;
    struct oauth_it t = {0};
    start_with_jwks_file(&t);
    char *good = make_token(t.key, "test-key", "alice", "cairn", 600);
    produce_and_consume(&t, good, "oauth-topic", 10);
    free(good);

    char *expired = make_token(t.key, "test-key", "alice", "cairn", -120);
    expect_refused(&t, expired, "expired");
    free(expired);
    char *wrong_aud = make_token(t.key, "test-key", "alice", "elsewhere", 600);
    expect_refused(&t, wrong_aud, "audience");
    free(wrong_aud);
    EVP_PKEY *other = forge_keygen("ES256");
    char *unknown = make_token(other, "other-key", "alice", "cairn", 600);
    expect_refused(&t, unknown, "no key with kid 'other-key'");
    free(unknown);
    char *forged = make_token(other, "test-key", "alice", "cairn", 600);
    expect_refused(&t, forged, "does not verify");
    free(forged);
    EVP_PKEY_free(other);
    stop_all(&t);
}

struct wire_answer {
    int16_t error;
    char message[256];
    char bytes[256];
    int64_t lifetime_ms;
};

/* SaslAuthenticate v2 with token on s. */
static void wire_authenticate(struct raw_session *s, const void *token, size_t len, struct wire_answer *a)
{
    struct raw_writer w;
    raw_session_begin(s, &w, 36, 2);
    raw_put_compact_bytes(&w, token, len);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
    a->error = raw_get_i16(&r);
    a->message[0] = '\0';
    raw_get_compact_string(&r, a->message, sizeof a->message);
    uint64_t n = raw_get_uvarint(&r);
    size_t blen = n > 0 ? (size_t)n - 1 : 0;
    assert_true(blen < sizeof a->bytes);
    memcpy(a->bytes, r.data + r.pos, blen);
    a->bytes[blen] = '\0';
    raw_skip(&r, blen);
    a->lifetime_ms = raw_get_i64(&r);
    raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
}

/* A connection to the SASL listener after SaslHandshake v1 OAUTHBEARER. */
static struct raw_session wire_handshake(struct oauth_it *t)
{
    struct raw_session s = {raw_connect(t->sasl_port, 10000), 0};
    assert_true(s.fd >= 0);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 17, 1, ++s.correlation, "oauth-it");
    raw_put_string(&w, "OAUTHBEARER");
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(&s, &w, &r, false);
    assert_int_equal(raw_get_i16(&r), 0);
    int32_t n = raw_get_i32(&r);
    assert_int_equal(n, 1);
    int16_t len = raw_get_i16(&r);
    assert_int_equal(len, 11);
    raw_skip(&r, 11);
    raw_session_finish_read(&r, frame);
    return s;
}

static void test_wire_exchange(void **state)
{
    (void)state;
    struct oauth_it t = {0};
    start_with_jwks_file(&t);
    char msg[2048];
    struct wire_answer a;

    /* A valid token: the session lasts until its exp (KIP-368), with
     * connections.max.reauth.ms unset. */
    char *good = make_token(t.key, "test-key", "alice", "cairn", 300);
    struct raw_session s = wire_handshake(&t);
    int n = snprintf(msg, sizeof msg,
                     "n,,\x01"
                     "auth=Bearer %s\x01\x01",
                     good);
    wire_authenticate(&s, msg, (size_t)n, &a);
    assert_int_equal(a.error, 0);
    assert_string_equal(a.bytes, "");
    if (a.lifetime_ms <= 290000 || a.lifetime_ms > 300000)
        fail_msg("session lifetime %lld ms, expected the token's ~300000", (long long)a.lifetime_ms);
    close(s.fd);
    free(good);

    /* An expired one: Kafka's challenge, the client's %x01, then
     * SASL_AUTHENTICATION_FAILED carrying the challenge, and a close. */
    char *expired = make_token(t.key, "test-key", "alice", "cairn", -300);
    s = wire_handshake(&t);
    n = snprintf(msg, sizeof msg,
                 "n,,\x01"
                 "auth=Bearer %s\x01\x01",
                 expired);
    wire_authenticate(&s, msg, (size_t)n, &a);
    assert_int_equal(a.error, 0);
    assert_string_equal(a.bytes, "{\"status\":\"invalid_token\"}");
    wire_authenticate(&s, "\x01", 1, &a);
    assert_int_equal(a.error, 58);
    assert_string_equal(a.message, "{\"status\":\"invalid_token\"}");
    assert_true(raw_wait_closed(s.fd, 5000));
    close(s.fd);
    /* Audited once, with the broker's reason rather than the challenge. */
    expect_audited_refusals(&t, "expired", 1);

    /* The same token from a client that gets the challenge and closes
     * without the %x01 (as some clients do): the refusal is in the audit
     * log while the connection is still open, and only once. */
    s = wire_handshake(&t);
    n = snprintf(msg, sizeof msg,
                 "n,,\x01"
                 "auth=Bearer %s\x01\x01",
                 expired);
    wire_authenticate(&s, msg, (size_t)n, &a);
    assert_int_equal(a.error, 0);
    assert_string_equal(a.bytes, "{\"status\":\"invalid_token\"}");
    expect_audited_refusals(&t, "expired", 2);
    close(s.fd);
    free(expired);

    /* Not an RFC 7628 message at all: Kafka's generic failure at once. */
    s = wire_handshake(&t);
    wire_authenticate(&s, "Bearer abc", 10, &a);
    assert_int_equal(a.error, 58);
    assert_non_null(strstr(a.message, "invalid credentials with SASL mechanism OAUTHBEARER"));
    close(s.fd);
    broker_stop(&t.broker); /* the audit plugin writes everything before exiting */
    assert_int_equal(audited_refusals(&t, "expired"), 2);
    assert_int_equal(audited_refusals(&t, "invalid credentials with SASL mechanism OAUTHBEARER"), 1);
    assert_int_equal(audited_refusals(&t, ""), 3); /* nothing else, e.g. at the close after a refusal */
    stop_all(&t);
}

/* python3 -m http.server serving dir on a free port; returns its pid. */
static pid_t start_http_server(const char *dir, int *port)
{
    *port = harness_free_port();
    assert_true(*port > 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char p[16];
        snprintf(p, sizeof p, "%d", *port);
        freopen("/dev/null", "w", stderr);
        execlp("python3", "python3", "-m", "http.server", p, "--bind", "127.0.0.1", "--directory", dir, (char *)NULL);
        _exit(127);
    }
    long long deadline = harness_now_ms() + 10000;
    while (harness_now_ms() < deadline) {
        int fd = raw_connect(*port, 500);
        if (fd >= 0) {
            close(fd);
            return pid;
        }
        usleep(50000);
    }
    kill(pid, SIGKILL);
    fail_msg("python3 -m http.server did not listen on %d", *port);
    return -1;
}

static void test_jwks_over_http(void **state)
{
    (void)state;
    struct oauth_it t = {0};
    make_dir_and_key(&t);
    int http_port;
    pid_t http = start_http_server(t.dir, &http_port);
    char url[400];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/jwks.json", http_port);
    start_broker(&t, url);
    char *good = make_token(t.key, "test-key", "alice", "cairn", 600);
    produce_and_consume(&t, good, "oauth-http", 3);
    free(good);
    kill(http, SIGTERM);
    waitpid(http, NULL, 0);
    stop_all(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_oauthbearer_with_librdkafka),
        cmocka_unit_test(test_wire_exchange),
        cmocka_unit_test(test_jwks_over_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
