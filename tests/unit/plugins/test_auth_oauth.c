/* The auth-oauth plugin, loaded with dlopen into a test host, against a
 * JWK set and tokens made here with OpenSSL: every accepted algorithm,
 * the claims Kafka checks (exp, nbf, iat, aud, iss, sub, scope), refused
 * algorithms (none, HS256), bad signatures, an unknown kid picked up by
 * the refresh, malformed tokens and messages, and the RFC 7628 error
 * exchange as Kafka runs it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "jwt_forge.h"
#include "test_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N_ALGS 7
static const char *const algs[N_ALGS] = {"RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "ES512"};

static struct test_host oauth_host;
static EVP_PKEY *keys[N_ALGS];
static EVP_PKEY *rogue; /* an RSA key the JWKS does not hold */
static char jwks_path[128], jwks_url[160];
static char *jwk_text[N_ALGS];

static void write_jwks(size_t count)
{
    assert_int_equal(forge_write_jwks(jwks_path, (const char *const *)jwk_text, count), 0);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(jwks_path, sizeof jwks_path, "/tmp/cairn-oauth-jwks-%d.json", (int)getpid());
    snprintf(jwks_url, sizeof jwks_url, "file://%s", jwks_path);
    for (int i = 0; i < N_ALGS; i++) {
        keys[i] = forge_keygen(algs[i]);
        assert_non_null(keys[i]);
        char kid[32];
        snprintf(kid, sizeof kid, "k-%s", algs[i]);
        /* The PS256 key pins its alg, the others do not. */
        jwk_text[i] = forge_jwk(keys[i], kid, strcmp(algs[i], "PS256") == 0 ? "PS256" : NULL);
        assert_non_null(jwk_text[i]);
    }
    rogue = forge_keygen("RS256");
    write_jwks(N_ALGS);
    test_host_load(&oauth_host, "auth-oauth");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    test_host_unload(&oauth_host);
    for (int i = 0; i < N_ALGS; i++) {
        EVP_PKEY_free(keys[i]);
        free(jwk_text[i]);
    }
    EVP_PKEY_free(rogue);
    unlink(jwks_path);
    return 0;
}

/* (Re)starts the plugin with the standard policy plus up to two keys. */
static void start_with2(const char *key, const char *value, const char *key2, const char *value2)
{
    test_host_fini(&oauth_host);
    test_host_clear_config(&oauth_host);
    test_host_set(&oauth_host, "sasl.oauthbearer.jwks.endpoint.url", jwks_url);
    test_host_set(&oauth_host, "sasl.oauthbearer.expected.audience", "kafka,cairn");
    test_host_set(&oauth_host, "sasl.oauthbearer.expected.issuer", "https://issuer.test");
    test_host_set(&oauth_host, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", "100");
    if (key)
        test_host_set(&oauth_host, key, value);
    if (key2)
        test_host_set(&oauth_host, key2, value2);
    char err[512];
    if (test_host_init(&oauth_host, err, sizeof err) != CAIRN_OK)
        fail_msg("init failed: %s", err);
}

static void start_with(const char *key, const char *value)
{
    start_with2(key, value, NULL, NULL);
}

static void start(void)
{
    start_with(NULL, NULL);
}

/* Claims for sub with exp/iat/nbf relative to now; extra is appended. */
static void claims(char *out, size_t len, const char *sub, long exp_in, long iat_in, const char *extra)
{
    long now = (long)time(NULL);
    snprintf(out, len, "{\"sub\":\"%s\",\"aud\":\"cairn\",\"iss\":\"https://issuer.test\",\"exp\":%ld,\"iat\":%ld%s}",
             sub, now + exp_in, now + iat_in, extra ? extra : "");
}

struct outcome {
    int rc;              /* CAIRN_SASL_DONE or CAIRN_SASL_FAILED */
    char principal[600]; /* type:name on DONE */
    int64_t lifetime_ms;
    char challenge[256]; /* the error challenge, "" when none was sent */
    char error[512];     /* the client's message on FAILED */
    char refusal[512];   /* the reason given with the challenge */
};

/* Runs one exchange with a raw client message; on an error challenge the
 * client answers %x01 as RFC 7628 says. */
static struct outcome exchange_raw(const void *msg, size_t len)
{
    const struct cairn_authn_vtable *v = oauth_host.descriptor->authentication;
    struct outcome o = {0};
    void *session = NULL;
    char err[512] = "";
    assert_int_equal(v->sasl_start(oauth_host.instance, "OAUTHBEARER", NULL, &session, err, sizeof err), CAIRN_OK);
    struct cairn_bytes_out out = {0};
    struct cairn_principal_out principal = {.struct_size = sizeof principal};
    o.rc = v->sasl_step(oauth_host.instance, session, msg, len, &out, &principal, err, sizeof err);
    /* A refused token: FAILED with the error challenge still owed to the
     * client, and err the reason the broker audits. */
    if (o.rc == CAIRN_SASL_FAILED && out.data) {
        snprintf(o.challenge, sizeof o.challenge, "%.*s", (int)out.len, (const char *)out.data);
        snprintf(o.refusal, sizeof o.refusal, "%s", err);
        out = (struct cairn_bytes_out){0};
        o.rc = v->sasl_step(oauth_host.instance, session, (const uint8_t *)"\x01", 1, &out, &principal, err,
                            sizeof err);
        assert_int_equal(o.rc, CAIRN_SASL_FAILED);
    }
    if (o.rc == CAIRN_SASL_DONE) {
        snprintf(o.principal, sizeof o.principal, "%s:%s", principal.type, principal.name);
        o.lifetime_ms = principal.session_lifetime_ms;
    } else {
        snprintf(o.error, sizeof o.error, "%s", err);
    }
    v->sasl_end(oauth_host.instance, session);
    return o;
}

static struct outcome exchange(const char *token, const char *authzid)
{
    size_t len = strlen(token) + 200;
    char *msg = malloc(len);
    assert_non_null(msg);
    int n = snprintf(msg, len,
                     "n,%s%s,\x01"
                     "auth=Bearer %s\x01\x01",
                     authzid ? "a=" : "", authzid ? authzid : "", token);
    struct outcome o = exchange_raw(msg, (size_t)n);
    free(msg);
    return o;
}

/* The token is refused with Kafka's invalid_token exchange, and the log
 * names why. */
static void expect_refused(const char *token, const char *reason_part)
{
    struct outcome o = exchange(token, NULL);
    if (o.rc != CAIRN_SASL_FAILED)
        fail_msg("token accepted as %s, expected refusal for '%s'", o.principal, reason_part);
    assert_string_equal(o.challenge, "{\"status\":\"invalid_token\"}");
    assert_string_equal(o.error, "{\"status\":\"invalid_token\"}");
    if (!strstr(o.refusal, reason_part))
        fail_msg("refusal '%s' does not say '%s'", o.refusal, reason_part);
    if (!strstr(oauth_host.last_log, reason_part))
        fail_msg("log '%s' does not say '%s'", oauth_host.last_log, reason_part);
}

static char *token_for(int alg_index, const char *claims_json)
{
    char kid[32];
    snprintf(kid, sizeof kid, "k-%s", algs[alg_index]);
    char *t = forge_token(keys[alg_index], algs[alg_index], kid, claims_json);
    assert_non_null(t);
    return t;
}

static void test_every_algorithm_accepted(void **state)
{
    (void)state;
    start();
    char c[512];
    claims(c, sizeof c, "alice", 600, -5, NULL);
    for (int i = 0; i < N_ALGS; i++) {
        char *t = token_for(i, c);
        struct outcome o = exchange(t, NULL);
        if (o.rc != CAIRN_SASL_DONE)
            fail_msg("%s refused: %s (log: %s)", algs[i], o.error, oauth_host.last_log);
        assert_string_equal(o.principal, "User:alice");
        /* The session lasts as long as the token. */
        assert_true(o.lifetime_ms > 590000 && o.lifetime_ms <= 600000);
        free(t);
    }
    assert_int_equal(test_host_metric(&oauth_host, "accepted_tokens_total"), N_ALGS);
}

static void test_expired_and_future_tokens(void **state)
{
    (void)state;
    start();
    char c[512];
    claims(c, sizeof c, "alice", -60, -600, NULL);
    char *t = token_for(0, c);
    expect_refused(t, "expired");
    free(t);
    /* Within the clock skew (30 s) an expired token still passes. */
    claims(c, sizeof c, "alice", -10, -600, NULL);
    t = token_for(0, c);
    assert_int_equal(exchange(t, NULL).rc, CAIRN_SASL_DONE);
    free(t);
    claims(c, sizeof c, "alice", 600, 300, NULL);
    t = token_for(0, c);
    expect_refused(t, "issued in the future");
    free(t);
    claims(c, sizeof c, "alice", 600, -5, ",\"nbf\":9999999999");
    t = token_for(0, c);
    expect_refused(t, "not valid before");
    free(t);
    t = token_for(0, "{\"sub\":\"alice\",\"aud\":\"cairn\",\"iss\":\"https://issuer.test\",\"iat\":1}");
    expect_refused(t, "no exp");
    free(t);
    assert_true(test_host_metric(&oauth_host, "refused_tokens_total") >= 4);
}

static void test_audience_issuer_subject(void **state)
{
    (void)state;
    start();
    long now = (long)time(NULL);
    char c[512];
    snprintf(c, sizeof c, "{\"sub\":\"bob\",\"aud\":\"other\",\"iss\":\"https://issuer.test\",\"exp\":%ld,\"iat\":%ld}",
             now + 600, now);
    char *t = token_for(4, c);
    expect_refused(t, "audience");
    free(t);
    /* An audience array with one expected entry passes. */
    snprintf(c, sizeof c,
             "{\"sub\":\"bob\",\"aud\":[\"x\",\"kafka\"],\"iss\":\"https://issuer.test\",\"exp\":%ld,\"iat\":%ld}",
             now + 600, now);
    t = token_for(4, c);
    assert_string_equal(exchange(t, NULL).principal, "User:bob");
    free(t);
    snprintf(c, sizeof c, "{\"sub\":\"bob\",\"aud\":\"cairn\",\"iss\":\"https://evil.test\",\"exp\":%ld,\"iat\":%ld}",
             now + 600, now);
    t = token_for(4, c);
    expect_refused(t, "issuer");
    free(t);
    snprintf(c, sizeof c, "{\"aud\":\"cairn\",\"iss\":\"https://issuer.test\",\"exp\":%ld,\"iat\":%ld}", now + 600,
             now);
    t = token_for(4, c);
    expect_refused(t, "sub claim");
    free(t);
    /* sasl.oauthbearer.sub.claim.name picks another claim. */
    start_with("sasl.oauthbearer.sub.claim.name", "client_id");
    claims(c, sizeof c, "ignored", 600, 0, ",\"client_id\":\"svc-1\"");
    t = token_for(4, c);
    assert_string_equal(exchange(t, NULL).principal, "User:svc-1");
    free(t);
}

static void test_scopes(void **state)
{
    (void)state;
    start_with("required.scopes", "kafka.write");
    char c[512];
    claims(c, sizeof c, "carol", 600, 0, ",\"scope\":\"kafka.read\"");
    char *t = token_for(0, c);
    struct outcome o = exchange(t, NULL);
    assert_int_equal(o.rc, CAIRN_SASL_FAILED);
    assert_non_null(strstr(o.challenge, "\"status\":\"insufficient_scope\""));
    free(t);
    claims(c, sizeof c, "carol", 600, 0, ",\"scope\":[\"kafka.read\",\"kafka.write\"]");
    t = token_for(0, c);
    assert_string_equal(exchange(t, NULL).principal, "User:carol");
    free(t);
    /* sasl.oauthbearer.scope.claim.name: the scopes come from scp, scope is ignored. */
    start_with2("required.scopes", "kafka.write", "sasl.oauthbearer.scope.claim.name", "scp");
    claims(c, sizeof c, "carol", 600, 0, ",\"scp\":\"kafka.write other\",\"scope\":\"none\"");
    t = token_for(0, c);
    assert_string_equal(exchange(t, NULL).principal, "User:carol");
    free(t);
    claims(c, sizeof c, "carol", 600, 0, ",\"scope\":\"kafka.write\"");
    t = token_for(0, c);
    assert_int_equal(exchange(t, NULL).rc, CAIRN_SASL_FAILED);
    free(t);
}

static void test_refused_algorithms_and_signatures(void **state)
{
    (void)state;
    start();
    char c[512];
    claims(c, sizeof c, "mallory", 600, 0, NULL);
    char *t = forge_token(NULL, "none", "k-RS256", c);
    expect_refused(t, "algorithm 'none'");
    free(t);
    /* An HMAC token "signed" with anything: never checked against the RSA key. */
    const char *hs_header = "{\"alg\":\"HS256\",\"kid\":\"k-RS256\"}";
    char *h = forge_b64url(hs_header, strlen(hs_header));
    char *p = forge_b64url(c, strlen(c));
    char hs[2048];
    snprintf(hs, sizeof hs, "%s.%s.c2lnbmF0dXJl", h, p);
    expect_refused(hs, "algorithm 'HS256'");
    free(h);
    free(p);
    /* Signed by a key the JWKS does not hold, under a kid it does. */
    t = forge_token(rogue, "RS256", "k-RS256", c);
    expect_refused(t, "does not verify");
    free(t);
    /* A valid token with its payload swapped. */
    t = token_for(0, c);
    char other[512];
    claims(other, sizeof other, "admin", 600, 0, NULL);
    char *forged_payload = forge_b64url(other, strlen(other));
    char *dot1 = strchr(t, '.'), *dot2 = strchr(dot1 + 1, '.');
    char tampered[4096];
    snprintf(tampered, sizeof tampered, "%.*s.%s%s", (int)(dot1 - t), t, forged_payload, dot2);
    expect_refused(tampered, "does not verify");
    free(forged_payload);
    free(t);
    /* An RS256 token under an EC key's kid: the key does not fit. */
    t = forge_token(keys[0], "RS256", "k-ES256", c);
    expect_refused(t, "does not fit");
    free(t);
    /* The PS256 key pins its alg. */
    t = forge_token(keys[3], "RS256", "k-PS256", c);
    expect_refused(t, "is for PS256");
    free(t);
}

static void test_unknown_kid_refreshes_the_jwks(void **state)
{
    (void)state;
    write_jwks(1); /* only the RS256 key */
    start();
    char c[512];
    claims(c, sizeof c, "dave", 600, 0, NULL);
    char *t = token_for(4, c);
    expect_refused(t, "no key with kid 'k-ES256'");
    /* The unknown kid asked for a refresh; once the issuer publishes the
     * key, the same token passes without a restart. */
    write_jwks(N_ALGS);
    int rc = CAIRN_SASL_FAILED;
    for (int i = 0; i < 100 && rc != CAIRN_SASL_DONE; i++) {
        usleep(50000);
        rc = exchange(t, NULL).rc;
    }
    assert_int_equal(rc, CAIRN_SASL_DONE);
    assert_true(test_host_metric(&oauth_host, "jwks_refreshes_total") >= 1);
    free(t);
}

static void test_malformed_tokens(void **state)
{
    (void)state;
    start();
    expect_refused("abc", "three dot-separated parts");
    expect_refused("a.b.c.d", "three dot-separated parts");
    expect_refused("e30.e30.ab+c", "signature is not base64url"); /* '+' is base64, not base64url */
    char *bad_json = forge_b64url("{\"alg\":", 7);
    char t[256];
    snprintf(t, sizeof t, "%s.e30.AAAA", bad_json);
    expect_refused(t, "header is not a JSON object");
    free(bad_json);
    char *hdr = forge_b64url("{\"alg\":\"RS256\"}", 15);
    snprintf(t, sizeof t, "%s.W10.AAAA", hdr); /* payload [] */
    expect_refused(t, "payload is not a JSON object");
    snprintf(t, sizeof t, "%s.e30.A", hdr); /* a 1-char base64url cannot be */
    expect_refused(t, "signature is not base64url");
    free(hdr);
    /* A token above max.token.bytes (a message far above it is refused unread). */
    size_t big = 66000;
    char *huge = malloc(big + 1);
    memset(huge, 'A', big);
    huge[big] = 0;
    expect_refused(huge, "max.token.bytes");
    free(huge);
}

static void test_malformed_messages(void **state)
{
    (void)state;
    start();
    static const char *const bad[] = {
        "",
        "y,,\x01"
        "auth=Bearer abc\x01\x01",    /* channel binding */
        "n,,auth=Bearer abc\x01\x01", /* no separator after gs2 */
        "n,,\x01"
        "auth=Bearer abc\x01", /* not terminated */
        "n,,\x01"
        "auth=Basic abc\x01\x01", /* not Bearer */
        "n,,\x01"
        "auth=Bearer \x01\x01", /* empty token */
        "n,,\x01"
        "auth=Bearer a b\x01\x01", /* space in the token */
        "n,,\x01"
        "foo=bar\x01\x01", /* no auth */
        "n,,\x01"
        "auth=Bearer a\x01"
        "auth=Bearer b\x01\x01",
        "n,,\x01"
        "1x=y\x01"
        "auth=Bearer abc\x01\x01",
        "n,,\x01"
        "auth=Bearer abc\x01\x01trailing",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct outcome o = exchange_raw(bad[i], strlen(bad[i]));
        if (o.rc != CAIRN_SASL_FAILED || o.challenge[0])
            fail_msg("message %zu: rc %d challenge '%s'", i, o.rc, o.challenge);
        assert_string_equal(
            o.error,
            "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER");
    }
    /* Extensions are accepted and ignored; the authzid must be the principal. */
    char c[512];
    claims(c, sizeof c, "erin", 600, 0, NULL);
    char *t = token_for(0, c);
    char msg[4096];
    int n = snprintf(msg, sizeof msg,
                     "n,a=erin,\x01"
                     "auth=Bearer %s\x01"
                     "traceId=42\x01\x01",
                     t);
    assert_string_equal(exchange_raw(msg, (size_t)n).principal, "User:erin");
    struct outcome o = exchange(t, "frank");
    assert_int_equal(o.rc, CAIRN_SASL_FAILED);
    assert_non_null(strstr(o.error, "authorization id (frank)"));
    free(t);
}

static void test_init_refuses_bad_config(void **state)
{
    (void)state;
    test_host_fini(&oauth_host);
    char err[512];
    test_host_clear_config(&oauth_host);
    assert_int_equal(test_host_init(&oauth_host, err, sizeof err), CAIRN_ERROR); /* no url */
    test_host_set(&oauth_host, "sasl.oauthbearer.jwks.endpoint.url", "ftp://x/jwks");
    assert_int_equal(test_host_init(&oauth_host, err, sizeof err), CAIRN_ERROR);
    assert_non_null(strstr(err, "neither"));
    test_host_clear_config(&oauth_host);
    test_host_set(&oauth_host, "sasl.oauthbearer.jwks.endpoint.url", "file:///nonexistent/jwks.json");
    assert_int_equal(test_host_init(&oauth_host, err, sizeof err), CAIRN_ERROR);
    /* A file that is not a JWK set. */
    FILE *f = fopen(jwks_path, "w");
    fputs("{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}]}", f);
    fclose(f);
    test_host_clear_config(&oauth_host);
    test_host_set(&oauth_host, "sasl.oauthbearer.jwks.endpoint.url", jwks_url);
    assert_int_equal(test_host_init(&oauth_host, err, sizeof err), CAIRN_ERROR);
    assert_non_null(strstr(err, "no RSA or EC signing key"));
    write_jwks(N_ALGS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_algorithm_accepted),
        cmocka_unit_test(test_expired_and_future_tokens),
        cmocka_unit_test(test_audience_issuer_subject),
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_refused_algorithms_and_signatures),
        cmocka_unit_test(test_unknown_kid_refreshes_the_jwks),
        cmocka_unit_test(test_malformed_tokens),
        cmocka_unit_test(test_malformed_messages),
        cmocka_unit_test(test_init_refuses_bad_config),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
