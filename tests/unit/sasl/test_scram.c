/* SCRAM server against RFC 7677's SCRAM-SHA-256 example exchange, a full
 * SCRAM-SHA-512 exchange driven by a client computed here, and the ways a
 * client message can be wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

#include "sasl/scram.h"

#define RFC_CLIENT_FIRST "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
#define RFC_SERVER_NONCE "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
#define RFC_SERVER_FIRST "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define RFC_CLIENT_FINAL                                                                                               \
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
#define RFC_SERVER_FINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

static void rfc_credential(struct scram_credential *cred, const char *password)
{
    uint8_t salt[32], salted[SCRAM_MAX_KEY];
    long n = scram_base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==", 24, salt, sizeof salt);
    assert_int_equal(n, 16);
    assert_int_equal(scram_salted_password(SCRAM_SHA_256, password, strlen(password), salt, 16, 4096, salted), 0);
    assert_int_equal(scram_credential_from_salted(SCRAM_SHA_256, salted, 32, salt, 16, 4096, cred), 0);
}

/* Runs the RFC 7677 exchange with the credential for password; returns the
 * final step. */
static enum scram_step rfc_exchange(const char *password, const char *client_final, char *final_out)
{
    struct scram_credential cred;
    rfc_credential(&cred, password);
    struct scram_server *s = scram_server_new(SCRAM_SHA_256);
    assert_non_null(s);
    scram_server_set_nonce(s, RFC_SERVER_NONCE);
    const char *user = NULL;
    char err[256] = "";
    assert_int_equal(
        scram_server_parse_first(s, (const uint8_t *)RFC_CLIENT_FIRST, strlen(RFC_CLIENT_FIRST), &user, err, 256), 0);
    assert_string_equal(user, "user");
    const uint8_t *out;
    size_t out_len;
    assert_int_equal(scram_server_challenge(s, &cred, &out, &out_len, err, sizeof err), 0);
    assert_int_equal(out_len, strlen(RFC_SERVER_FIRST));
    assert_memory_equal(out, RFC_SERVER_FIRST, out_len);
    enum scram_step step = scram_server_finish(s, (const uint8_t *)client_final, strlen(client_final), &out, &out_len,
                                               err, sizeof err);
    if (step == SCRAM_STEP_DONE) {
        memcpy(final_out, out, out_len);
        final_out[out_len] = '\0';
    } else {
        snprintf(final_out, 256, "%s", err);
    }
    scram_server_free(s);
    return step;
}

static void test_rfc7677_sha256_exchange(void **state)
{
    (void)state;
    char final[256];
    assert_int_equal(rfc_exchange("pencil", RFC_CLIENT_FINAL, final), SCRAM_STEP_DONE);
    assert_string_equal(final, RFC_SERVER_FINAL);
}

static void test_wrong_password_fails(void **state)
{
    (void)state;
    char final[256];
    assert_int_equal(rfc_exchange("pencil2", RFC_CLIENT_FINAL, final), SCRAM_STEP_FAILED);
    assert_string_equal(final, "invalid proof (wrong password)");
}

/* librdkafka repeats its client nonce in front of the combined one; Kafka
 * accepts a nonce that ends with the combined one, and so does this. */
static void test_nonce_with_client_prefix(void **state)
{
    (void)state;
    char final[256];
    assert_int_equal(rfc_exchange("pencil",
                                  "c=biws,r=xyzrOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+"
                                  "Ute9ytag9zjfMHgsqmmiz7AndVQ=",
                                  final),
                     SCRAM_STEP_FAILED); /* the proof signed another message */
    assert_string_equal(final, "invalid proof (wrong password)");
    assert_int_equal(rfc_exchange("pencil",
                                  "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k,p=dHzbZapWIk4jUhN+"
                                  "Ute9ytag9zjfMHgsqmmiz7AndVQ=",
                                  final),
                     SCRAM_STEP_FAILED);
    assert_string_equal(final, "nonce does not match");
}

static void test_tampered_messages_fail(void **state)
{
    (void)state;
    char final[256];
    /* Another nonce, a bad channel binding, a flipped proof byte, no proof. */
    assert_int_equal(rfc_exchange("pencil",
                                  "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k1,p=dHzbZapWIk4jUhN+Ute9yt"
                                  "ag9zjfMHgsqmmiz7AndVQ=",
                                  final),
                     SCRAM_STEP_FAILED);
    assert_string_equal(final, "nonce does not match");
    assert_int_equal(rfc_exchange("pencil",
                                  "c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9yt"
                                  "ag9zjfMHgsqmmiz7AndVQ=",
                                  final),
                     SCRAM_STEP_FAILED);
    assert_string_equal(final, "channel binding does not match the gs2 header");
    assert_int_equal(rfc_exchange("pencil",
                                  "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=eHzbZapWIk4jUhN+Ute9yt"
                                  "ag9zjfMHgsqmmiz7AndVQ=",
                                  final),
                     SCRAM_STEP_FAILED);
    assert_int_equal(rfc_exchange("pencil", "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", final),
                     SCRAM_STEP_FAILED);
    assert_string_equal(final, "missing proof");
}

static void expect_first_refused(const char *msg, const char *why)
{
    struct scram_server *s = scram_server_new(SCRAM_SHA_256);
    const char *user = NULL;
    char err[256] = "";
    assert_int_equal(scram_server_parse_first(s, (const uint8_t *)msg, strlen(msg), &user, err, sizeof err), -1);
    assert_string_equal(err, why);
    scram_server_free(s);
}

static void test_client_first_parsing(void **state)
{
    (void)state;
    expect_first_refused("p=tls-unique,,n=user,r=abc", "channel binding is not supported");
    expect_first_refused("n,,r=abc", "malformed user name");
    expect_first_refused("n,,n=us=41er,r=abc", "malformed user name");
    expect_first_refused("n,,n=user,r=", "malformed client nonce");
    expect_first_refused("n,,n=user,x=1", "malformed client nonce");
    expect_first_refused("n,,m=ext,n=user,r=abc", "mandatory extensions are not supported");
    expect_first_refused("n,a=other,n=user,r=abc", "authorization id differs from the user name");
    expect_first_refused("n,,n=user,r=abc,tokenauth=true", "delegation tokens are not supported");

    /* Escaped names and an authzid equal to the user are fine. */
    struct scram_server *s = scram_server_new(SCRAM_SHA_512);
    const char *user = NULL;
    char err[256] = "";
    const char *msg = "y,a=a=2Cb=3Dc,n=a=2Cb=3Dc,r=xyz,ext=1";
    assert_int_equal(scram_server_parse_first(s, (const uint8_t *)msg, strlen(msg), &user, err, sizeof err), 0);
    assert_string_equal(user, "a,b=c");
    scram_server_free(s);
    assert_null(scram_server_new(SCRAM_UNKNOWN));
}

static void hmac512(const uint8_t *key, size_t klen, const char *data, uint8_t *out)
{
    unsigned int n = 0;
    assert_non_null(HMAC(EVP_sha512(), key, (int)klen, (const unsigned char *)data, strlen(data), out, &n));
    assert_int_equal(n, 64);
}

/* A SCRAM-SHA-512 client computed here (RFC 5802 section 3) against the
 * server with a random server nonce. */
static void test_sha512_exchange_with_random_nonce(void **state)
{
    (void)state;
    const uint8_t salt[] = "0123456789abcdef";
    uint8_t salted[64];
    assert_int_equal(scram_salted_password(SCRAM_SHA_512, "s3cret", 6, salt, 16, 4096, salted), 0);
    struct scram_credential cred;
    assert_int_equal(scram_credential_from_salted(SCRAM_SHA_512, salted, 64, salt, 16, 4096, &cred), 0);

    struct scram_server *s = scram_server_new(SCRAM_SHA_512);
    const char *first = "n,,n=bob,r=clientnonce42";
    const char *user;
    char err[256] = "";
    assert_int_equal(scram_server_parse_first(s, (const uint8_t *)first, strlen(first), &user, err, sizeof err), 0);
    const uint8_t *out;
    size_t out_len;
    assert_int_equal(scram_server_challenge(s, &cred, &out, &out_len, err, sizeof err), 0);
    char server_first[512];
    memcpy(server_first, out, out_len);
    server_first[out_len] = '\0';
    assert_true(strncmp(server_first, "r=clientnonce42", 15) == 0);
    const char *comma = strchr(server_first, ',');
    assert_true(comma - server_first > 15 + 16); /* a server nonce was added */
    assert_non_null(strstr(server_first, ",s=MDEyMzQ1Njc4OWFiY2RlZg==,i=4096"));

    char without_proof[600];
    snprintf(without_proof, sizeof without_proof, "c=biws,r=%.*s", (int)(comma - server_first - 2), server_first + 2);
    char auth[1200];
    snprintf(auth, sizeof auth, "%s,%s,%s", first + 3, server_first, without_proof);
    uint8_t client_key[64], stored[64], sig[64], proof[64], server_key[64], server_sig[64];
    hmac512(salted, 64, "Client Key", client_key);
    unsigned int n = 0;
    EVP_Digest(client_key, 64, stored, &n, EVP_sha512(), NULL);
    hmac512(stored, 64, auth, sig);
    for (int i = 0; i < 64; i++)
        proof[i] = client_key[i] ^ sig[i];
    char proof64[100], final[800];
    scram_base64_encode(proof, 64, proof64);
    snprintf(final, sizeof final, "%s,p=%s", without_proof, proof64);
    assert_int_equal(scram_server_finish(s, (const uint8_t *) final, strlen(final), &out, &out_len, err, sizeof err),
                     SCRAM_STEP_DONE);
    hmac512(salted, 64, "Server Key", server_key);
    hmac512(server_key, 64, auth, server_sig);
    char expected[100] = "v=";
    scram_base64_encode(server_sig, 64, expected + 2);
    assert_int_equal(out_len, strlen(expected));
    assert_memory_equal(out, expected, out_len);
    /* The exchange is over: a replayed final message is refused. */
    assert_int_equal(scram_server_finish(s, (const uint8_t *) final, strlen(final), &out, &out_len, err, sizeof err),
                     SCRAM_STEP_FAILED);
    scram_server_free(s);
}

static void test_base64_and_names(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(scram_base64_encode((const uint8_t *)"n,,", 3, out), 4);
    assert_string_equal(out, "biws");
    uint8_t bytes[8];
    assert_int_equal(scram_base64_decode("YQ==", 4, bytes, sizeof bytes), 1);
    assert_int_equal(bytes[0], 'a');
    assert_int_equal(scram_base64_decode("YQ=", 3, bytes, sizeof bytes), -1);
    assert_int_equal(scram_base64_decode("Y!==", 4, bytes, sizeof bytes), -1);
    assert_int_equal(scram_base64_decode("YQ==YQ==", 8, bytes, sizeof bytes), -1);
    assert_int_equal(scram_mechanism_from_name("SCRAM-SHA-512"), SCRAM_SHA_512);
    assert_int_equal(scram_mechanism_from_name("scram-sha-256"), SCRAM_UNKNOWN);
    assert_string_equal(scram_mechanism_name(SCRAM_SHA_256), "SCRAM-SHA-256");
    assert_null(scram_mechanism_name(7));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc7677_sha256_exchange),  cmocka_unit_test(test_wrong_password_fails),
        cmocka_unit_test(test_tampered_messages_fail),   cmocka_unit_test(test_client_first_parsing),
        cmocka_unit_test(test_nonce_with_client_prefix), cmocka_unit_test(test_sha512_exchange_with_random_nonce),
        cmocka_unit_test(test_base64_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
