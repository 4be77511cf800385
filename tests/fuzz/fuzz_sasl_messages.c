/* Fuzzes the SASL messages a client controls before it is authenticated:
 * the first byte picks the parser, the rest is the message.
 *   0: SCRAM client-first-message
 *   1: SCRAM client-final-message (after a fixed client-first)
 *   2: OAUTHBEARER client initial response (RFC 7628)
 *   3: a JWT through parsing, key lookup, signature and claims
 *   4: a JWK set
 * Each must refuse or accept without a crash, a leak or undefined
 * behaviour; nothing random reaches a verdict, so a crash reproduces. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jwt_forge.h"
#include "oauth_internal.h"
#include "sasl/scram.h"

static struct jwks *fuzz_keys;
static struct scram_credential fuzz_cred; /* PBKDF2 once, not per input */

/* A JWK set with one RSA and one EC key, made once. */
static void make_keys(void)
{
    EVP_PKEY *rsa = forge_keygen("RS256"), *ec = forge_keygen("ES256");
    char *jwks[2] = {forge_jwk(rsa, "rsa", NULL), forge_jwk(ec, "ec", "ES256")};
    char doc[4096];
    snprintf(doc, sizeof doc, "{\"keys\":[%s,%s]}", jwks[0], jwks[1]);
    char err[256];
    if (jwks_parse(doc, strlen(doc), &fuzz_keys, err, sizeof err) != 0)
        abort();
    free(jwks[0]);
    free(jwks[1]);
    EVP_PKEY_free(rsa);
    EVP_PKEY_free(ec);
    uint8_t salted[32], salt[16] = {1, 2, 3};
    if (scram_salted_password(SCRAM_SHA_256, "pencil", 6, salt, sizeof salt, 4096, salted) != 0 ||
        scram_credential_from_salted(SCRAM_SHA_256, salted, sizeof salted, salt, sizeof salt, 4096, &fuzz_cred) != 0)
        abort();
}

static void scram_final(const uint8_t *data, size_t size)
{
    static const char first[] = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
    char err[256];
    const char *user;
    const uint8_t *out;
    size_t out_len;
    struct scram_server *s = scram_server_new(SCRAM_SHA_256);
    if (!s)
        abort();
    scram_server_set_nonce(s, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
    if (scram_server_parse_first(s, (const uint8_t *)first, strlen(first), &user, err, sizeof err) != 0 ||
        scram_server_challenge(s, &fuzz_cred, &out, &out_len, err, sizeof err) != 0)
        abort();
    scram_server_finish(s, data, size, &out, &out_len, err, sizeof err);
    scram_server_free(s);
}

static void jwt_all(const uint8_t *data, size_t size)
{
    struct jwt t;
    char err[512], principal[256];
    if (jwt_parse((const char *)data, size, &t, err, sizeof err) != 0)
        return;
    if (jwt_alg_supported(t.alg))
        jwt_verify_with(&t, fuzz_keys, err, sizeof err);
    struct jwt_policy p = {.now_s = 1700000000,
                           .clock_skew_s = 30,
                           .expected_audience = "kafka,cairn",
                           .expected_issuer = "https://issuer.test",
                           .sub_claim = "sub",
                           .scope_claim = "scope",
                           .required_scopes = "a b"};
    int64_t exp;
    jwt_check_claims(&t, &p, principal, sizeof principal, &exp, err, sizeof err);
    jwt_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!fuzz_keys)
        make_keys();
    const uint8_t *msg = data + 1;
    size_t len = size - 1;
    char err[512];
    switch (data[0] % 5) {
    case 0: {
        struct scram_server *s = scram_server_new(SCRAM_SHA_512);
        const char *user;
        if (!s)
            abort();
        scram_server_parse_first(s, msg, len, &user, err, sizeof err);
        scram_server_free(s);
        break;
    }
    case 1:
        scram_final(msg, len);
        break;
    case 2: {
        struct oauth_client_message m;
        if (oauth_client_message_parse(msg, len, &m, err, sizeof err) == 0 &&
            (m.token + m.token_len > (const char *)msg + len || m.token_len == 0))
            abort();
        break;
    }
    case 3:
        jwt_all(msg, len);
        break;
    case 4: {
        struct jwks *set = NULL;
        if (jwks_parse((const char *)msg, len, &set, err, sizeof err) == 0)
            jwks_free(set);
        break;
    }
    }
    return 0;
}
