/* OAUTHBEARER end to end with an OpenID Connect style identity provider:
 * the test's provider (oauth_idp.h) issues RS256 JWTs for the
 * client-credentials grant on loopback HTTP and publishes its JWK set over
 * HTTPS with a certificate of a test CA (tls/make_certs.sh); cairnd's
 * auth-oauth plugin fetches that set (libcurl, trusting the CA given by
 * plugin.auth-oauth.ssl.truststore.location) and checks librdkafka's
 * tokens against it.
 *
 * The client is librdkafka. Where it was built with libcurl it runs the
 * grant itself (sasl.oauthbearer.method=oidc with client.id, client.secret,
 * token.endpoint.url); where it was not (Debian's 2.0.2 package) the
 * grant is made by Cairn's own OAuth login (core/oauth) and handed to
 * librdkafka from its token refresh callback.
 *
 * Asserted: the right secret produces and consumes, as the token's sub
 * (the only principal the ACL authorizer lets in besides the harness's
 * ANONYMOUS); a wrong secret gets no token and fails authentication; a
 * token signed by a key outside the set is refused; after the provider
 * rotates to a new key the plugin fetches the set again on the unknown
 * kid and the new tokens work while old-key ones are refused; without
 * the CA the HTTPS set is not trusted and every token is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "jwt_forge.h"
#include "oauth/oauth_login.h"
#include "oauth_idp.h"

#define CLIENT_ID "orders-service"
#define SECRET "orders-secret"
#define SCOPE "kafka"

struct fixture {
    char dir[256], ca[300], cert[300], key_file[300];
    EVP_PKEY *key1, *key2, *rogue;
    char *jwk1, *jwk2;
    struct idp idp;
    struct test_broker broker;
    char sasl_bootstrap[64];
    bool native_oidc; /* librdkafka runs the grant itself */
};

/* One client: librdkafka and, without native OIDC, the login feeding it. */
struct client {
    rd_kafka_t *rk;
    struct oauth_login *login;
    int auth_errors;
    char last_error[512];
};

static bool librdkafka_has_oidc(void)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    bool ok = rd_kafka_conf_set(conf, "sasl.oauthbearer.method", "oidc", errstr, sizeof errstr) == RD_KAFKA_CONF_OK;
    rd_kafka_conf_destroy(conf);
    return ok;
}

static void start_broker(struct fixture *f, struct test_broker *b, char *bootstrap, bool with_ca)
{
    int port = harness_free_port();
    assert_true(port > 0);
    snprintf(bootstrap, 64, "127.0.0.1:%d", port);
    char listeners[200], plugin_path[600], url[200], ca[400];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d", port);
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    snprintf(url, sizeof url, "plugin.auth-oauth.sasl.oauthbearer.jwks.endpoint.url=https://127.0.0.1:%d/jwks.json",
             f->idp.tls_port);
    snprintf(ca, sizeof ca, "plugin.auth-oauth.ssl.truststore.location=%s", with_ca ? f->ca : "");
    const char *overrides[] = {listeners, "sasl.enabled.mechanisms=OAUTHBEARER", plugin_path,
                               "plugins=acl-authorizer,auth-oauth",
                               "plugin.acl-authorizer.super.users=User:ANONYMOUS;User:" CLIENT_ID, url, ca,
                               "plugin.auth-oauth.sasl.oauthbearer.expected.audience=cairn",
                               "plugin.auth-oauth.sasl.oauthbearer.expected.issuer=https://issuer.test",
                               /* Only an unknown kid makes the plugin fetch again in these tests. */
                               "plugin.auth-oauth.sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms=500", NULL};
    broker_start(b, overrides);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/cairn-oidc-it-%d-XXXXXX", (int)getpid());
    assert_non_null(mkdtemp(f->dir));
    char cmd[800];
    snprintf(cmd, sizeof cmd, "sh '%s/tests/integration/tls/make_certs.sh' '%s'", CAIRN_SOURCE_DIR, f->dir);
    assert_int_equal(system(cmd), 0);
    snprintf(f->ca, sizeof f->ca, "%s/ca.pem", f->dir);
    snprintf(f->cert, sizeof f->cert, "%s/server.crt", f->dir);
    snprintf(f->key_file, sizeof f->key_file, "%s/server.key", f->dir);
    f->key1 = forge_keygen("RS256");
    f->key2 = forge_keygen("RS256");
    f->rogue = forge_keygen("RS256");
    assert_true(f->key1 && f->key2 && f->rogue);
    f->jwk1 = forge_jwk(f->key1, "key-1", "RS256");
    f->jwk2 = forge_jwk(f->key2, "key-2", "RS256");
    assert_true(f->jwk1 && f->jwk2);
    const struct idp_options o = {.client_id = CLIENT_ID,
                                  .secret = SECRET,
                                  .scope = SCOPE,
                                  .lifetime_s = 600,
                                  .key = f->key1,
                                  .alg = "RS256",
                                  .kid = "key-1",
                                  .tls_cert = f->cert,
                                  .tls_key = f->key_file};
    idp_start(&f->idp, &o);
    const char *const set[] = {f->jwk1};
    idp_publish(&f->idp, set, 1);
    f->native_oidc = librdkafka_has_oidc();
    if (!f->native_oidc)
        print_message("librdkafka %s has no sasl.oauthbearer.method=oidc (built without libcurl): the grant is "
                      "made by core/oauth's login\n",
                      rd_kafka_version_str());
    start_broker(f, &f->broker, f->sasl_bootstrap, true);
    /* The set came over HTTPS at start: one key. */
    broker_wait_log(&f->broker, "jwks.json (1 keys", 10000);
    assert_true(atomic_load(&f->idp.jwks_served) >= 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    broker_stop(&f->broker);
    broker_mark_passed(&f->broker);
    broker_cleanup(&f->broker);
    idp_stop(&f->idp);
    EVP_PKEY_free(f->key1);
    EVP_PKEY_free(f->key2);
    EVP_PKEY_free(f->rogue);
    free(f->jwk1);
    free(f->jwk2);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        print_message("could not remove %s\n", f->dir);
    free(f);
    return 0;
}

/* librdkafka asks for a token: hand it the login's current one. */
static void on_refresh(rd_kafka_t *rk, const char *config, void *opaque)
{
    (void)config;
    struct client *c = opaque;
    char *token = NULL, err[512] = "";
    int64_t expiry_ms = 0;
    if (oauth_login_token(c->login, &token, err, sizeof err) != 0 || oauth_token_expiry_ms(token, &expiry_ms) != 0) {
        rd_kafka_oauthbearer_set_token_failure(rk, err[0] ? err : "the access token is not a JWT with exp");
        free(token);
        return;
    }
    if (rd_kafka_oauthbearer_set_token(rk, token, expiry_ms, CLIENT_ID, NULL, 0, err, sizeof err) !=
        RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_oauthbearer_set_token_failure(rk, err);
    free(token);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    struct client *c = opaque;
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
        c->auth_errors++;
        snprintf(c->last_error, sizeof c->last_error, "%s", reason);
    }
}

static void client_open(struct fixture *f, struct client *c, rd_kafka_type_t type, const char *secret)
{
    memset(c, 0, sizeof *c);
    char endpoint[100], errstr[512];
    snprintf(endpoint, sizeof endpoint, "http://127.0.0.1:%d/token", f->idp.port);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers",
                        f->sasl_bootstrap,
                        "security.protocol",
                        "SASL_PLAINTEXT",
                        "sasl.mechanisms",
                        "OAUTHBEARER",
                        "linger.ms",
                        "5",
                        "reconnect.backoff.max.ms",
                        "1000",
                        NULL};
    for (int i = 0; kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
            fail_msg("%s: %s", kv[i], errstr);
    if (f->native_oidc) {
        const char *oidc[] = {"sasl.oauthbearer.method",
                              "oidc",
                              "sasl.oauthbearer.client.id",
                              CLIENT_ID,
                              "sasl.oauthbearer.client.secret",
                              secret,
                              "sasl.oauthbearer.scope",
                              SCOPE,
                              "sasl.oauthbearer.token.endpoint.url",
                              endpoint,
                              NULL};
        for (int i = 0; oidc[i]; i += 2)
            if (rd_kafka_conf_set(conf, oidc[i], oidc[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
                fail_msg("%s: %s", oidc[i], errstr);
    } else {
        const struct oauth_login_settings s = {.link = "test client",
                                               .token_endpoint_url = endpoint,
                                               .client_id = CLIENT_ID,
                                               .client_secret = secret,
                                               .scope = SCOPE,
                                               .refresh_window_factor = 0.8,
                                               .refresh_window_jitter = 0.05,
                                               .refresh_min_period_ms = 60000,
                                               .refresh_buffer_ms = 300000,
                                               .connect_timeout_ms = 10000,
                                               .read_timeout_ms = 10000,
                                               .retry_backoff_ms = 100,
                                               .retry_backoff_max_ms = 10000};
        c->login = oauth_login_start(&s, errstr, sizeof errstr);
        if (!c->login)
            fail_msg("oauth_login_start: %s", errstr);
        rd_kafka_conf_set_oauthbearer_token_refresh_cb(conf, on_refresh);
    }
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, c);
    c->rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
    if (!c->rk)
        fail_msg("rd_kafka_new: %s", errstr);
}

static void client_close(struct client *c)
{
    rd_kafka_destroy(c->rk);
    oauth_login_stop(c->login);
}

/* Produces count messages to topic within the deadline; returns how many
 * were acknowledged. */
static int produce(struct fixture *f, const char *topic, int count, int timeout_ms, struct client *c)
{
    client_open(f, c, RD_KAFKA_PRODUCER, SECRET);
    for (int i = 0; i < count; i++) {
        char value[32];
        snprintf(value, sizeof value, "%s-%d", topic, i);
        assert_int_equal(rd_kafka_producev(c->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                           RD_KAFKA_V_VALUE(value, strlen(value)),
                                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    rd_kafka_flush(c->rk, timeout_ms);
    int left = rd_kafka_outq_len(c->rk);
    client_close(c);
    return count - left;
}

static void consume(struct fixture *f, const char *topic, int count)
{
    struct client c;
    client_open(f, &c, RD_KAFKA_CONSUMER, SECRET);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(c.rk, topic, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
    int got = 0;
    long long deadline = harness_now_ms() + 30000;
    while (got < count && harness_now_ms() < deadline) {
        rd_kafka_poll(c.rk, 0); /* serves the token refresh callback */
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 200);
        if (!m)
            continue;
        if (!m->err) {
            char expected[32];
            snprintf(expected, sizeof expected, "%s-%d", topic, got);
            assert_int_equal(m->len, strlen(expected));
            assert_memory_equal(m->payload, expected, m->len);
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    int auth_errors = c.auth_errors;
    client_close(&c);
    assert_int_equal(got, count);
    assert_int_equal(auth_errors, 0);
}

/* A producer with secret reports an authentication error containing
 * client_text within 30 s and delivers nothing. */
static void expect_auth_failure(struct fixture *f, const char *secret, const char *client_text)
{
    struct client c;
    client_open(f, &c, RD_KAFKA_PRODUCER, secret);
    assert_int_equal(rd_kafka_producev(c.rk, RD_KAFKA_V_TOPIC("oidc-refused"), RD_KAFKA_V_PARTITION(0),
                                       RD_KAFKA_V_VALUE("x", 1), RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    long long deadline = harness_now_ms() + 30000;
    while (c.auth_errors == 0 && harness_now_ms() < deadline)
        rd_kafka_poll(c.rk, 100);
    int queued = rd_kafka_outq_len(c.rk);
    rd_kafka_purge(c.rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    char last[512];
    snprintf(last, sizeof last, "%s", c.last_error);
    int errors = c.auth_errors;
    client_close(&c);
    if (errors == 0)
        fail_msg("no authentication error (expected one saying '%s')", client_text);
    if (!strstr(last, client_text))
        fail_msg("authentication error without '%s': %s", client_text, last);
    assert_int_equal(queued, 1);
}

static void wait_broker_log(struct fixture *f, const char *needle)
{
    broker_wait_log(&f->broker, needle, 10000);
}

/* The right secret: a token from the provider, produce and consume as
 * User:orders-service (ACLs let no other authenticated principal in). */
static void test_client_credentials_produce_consume(void **state)
{
    struct fixture *f = *state;
    int issued = atomic_load(&f->idp.issued);
    struct client c;
    assert_int_equal(produce(f, "oidc-orders", 5, 30000, &c), 5);
    assert_int_equal(c.auth_errors, 0);
    consume(f, "oidc-orders", 5);
    assert_true(atomic_load(&f->idp.issued) >= issued + 2);
    wait_broker_log(f, "User:" CLIENT_ID " authenticated with OAUTHBEARER from");
}

/* A wrong client secret: the provider answers 401 invalid_client, the
 * client has no token and fails authentication. */
static void test_wrong_secret_fails(void **state)
{
    struct fixture *f = *state;
    int issued = atomic_load(&f->idp.issued), refused = atomic_load(&f->idp.refused);
    expect_auth_failure(f, "not-the-secret", f->native_oidc ? "OAUTHBEARER" : "invalid_client");
    assert_int_equal(atomic_load(&f->idp.issued), issued);
    assert_true(atomic_load(&f->idp.refused) > refused);
}

/* The provider signs with a key that is not in its published set (under
 * the published kid): the broker refuses the signature. */
static void test_foreign_key_refused(void **state)
{
    struct fixture *f = *state;
    idp_sign_with(&f->idp, f->rogue, "RS256", "key-1");
    expect_auth_failure(f, SECRET, "invalid_token");
    wait_broker_log(f, "does not verify");
    idp_sign_with(&f->idp, f->key1, "RS256", "key-1");
}

/* Rotation: the provider publishes key-2 alone and signs with it. The
 * first key-2 token meets an unknown kid and makes the plugin fetch the
 * set again; the client's next attempt is let in. Key-1 tokens are then
 * refused. */
static void test_key_rotation(void **state)
{
    struct fixture *f = *state;
    int served = atomic_load(&f->idp.jwks_served);
    const char *const rotated[] = {f->jwk2};
    idp_publish(&f->idp, rotated, 1);
    idp_sign_with(&f->idp, f->key2, "RS256", "key-2");
    struct client c;
    assert_int_equal(produce(f, "oidc-rotated", 3, 60000, &c), 3);
    assert_true(atomic_load(&f->idp.jwks_served) > served);
    wait_broker_log(f, "no key with kid 'key-2'");
    consume(f, "oidc-rotated", 3);

    idp_sign_with(&f->idp, f->key1, "RS256", "key-1");
    expect_auth_failure(f, SECRET, "invalid_token");
    wait_broker_log(f, "no key with kid 'key-1'");
    idp_sign_with(&f->idp, f->key2, "RS256", "key-2");
}

/* Without plugin.auth-oauth.ssl.truststore.location the provider's
 * certificate chains to no trusted CA: no set, every token refused. */
static void test_https_needs_the_ca(void **state)
{
    struct fixture *f = *state;
    struct test_broker other;
    char bootstrap[64], saved[64];
    memset(&other, 0, sizeof other);
    start_broker(f, &other, bootstrap, false);
    broker_wait_log(&other, "no JWKS yet, every token is refused until a fetch succeeds", 10000);
    assert_true(broker_log_contains(&other, "certificate"));
    memcpy(saved, f->sasl_bootstrap, sizeof saved);
    memcpy(f->sasl_bootstrap, bootstrap, sizeof saved);
    expect_auth_failure(f, SECRET, "invalid_token");
    memcpy(f->sasl_bootstrap, saved, sizeof saved);
    broker_stop(&other);
    broker_mark_passed(&other);
    broker_cleanup(&other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client_credentials_produce_consume),
        cmocka_unit_test(test_wrong_secret_fails),
        cmocka_unit_test(test_foreign_key_refused),
        cmocka_unit_test(test_key_rotation),
        cmocka_unit_test(test_https_needs_the_ca),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
