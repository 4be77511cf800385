/* The parts of the auth-oauth plugin that need no broker: the RFC 7628
 * client message, JWT (RFC 7515/7519) parsing, signature checks and claim
 * validation, and JWKS (RFC 7517) key sets. Compiled into the plugin, its
 * unit tests and the SASL fuzz target.
 *
 * Every function is pure over its arguments (no globals), so any thread
 * may call it; a struct belongs to whoever made it. */
#ifndef CAIRN_AUTH_OAUTH_INTERNAL_H
#define CAIRN_AUTH_OAUTH_INTERNAL_H

#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- RFC 7628 client initial response ---- */

/* Pointers into the message given to oauth_client_message_parse. */
struct oauth_client_message {
    const char *authzid; /* the gs2 a= value, "" when absent (not terminated) */
    size_t authzid_len;
    const char *token; /* the Bearer token */
    size_t token_len;
};

/* Parses "n,[a=authzid],\x01auth=Bearer <token>\x01[key=value\x01]*\x01".
 * Extensions other than auth are accepted and ignored. Returns 0, or -1
 * with err saying what is wrong. */
int oauth_client_message_parse(const uint8_t *in, size_t len, struct oauth_client_message *out, char *err,
                               size_t errlen);

/* ---- base64url (RFC 4648 section 5, no padding) ---- */

/* Decodes into a new buffer (NUL-terminated for convenience; *out_len
 * excludes it). Returns NULL on a character outside the alphabet, padding
 * or an impossible length. The caller frees. */
uint8_t *oauth_b64url_decode(const char *in, size_t len, size_t *out_len);

/* ---- JWK sets ---- */

enum jwk_type { JWK_RSA = 1, JWK_EC = 2 };

struct jwk {
    char kid[128];   /* "" when the key has none */
    char alg[16];    /* "" when the key does not pin one */
    enum jwk_type type;
    char curve[8];   /* EC: "P-256", "P-384", "P-521" */
    EVP_PKEY *pkey;  /* public key, owned */
};

struct jwks {
    struct jwk *keys;
    size_t count;
};

/* Reads a JWK set: RSA (n, e) and EC (crv, x, y) keys whose "use" is
 * absent or "sig"; other keys (symmetric, encryption) are skipped. Fails
 * when the document is not a JWK set or no usable key is left. */
int jwks_parse(const char *json, size_t len, struct jwks **out, char *err, size_t errlen);
void jwks_free(struct jwks *set);
/* Number of usable keys. */
size_t jwks_count(const struct jwks *set);

/* ---- JWT ---- */

struct jwt {
    char alg[16];
    char kid[128]; /* "" when the header has none */
    json_t *header;
    json_t *claims;
    char *signing_input; /* "<header>.<payload>", owned */
    size_t signing_input_len;
    uint8_t *signature; /* decoded, owned */
    size_t signature_len;
};

/* Splits a compact JWS, decodes and parses its header and claims. Does not
 * look at the algorithm or the signature. Returns 0, or -1 with err. */
int jwt_parse(const char *token, size_t len, struct jwt *out, char *err, size_t errlen);
void jwt_free(struct jwt *t);

/* True for an algorithm this plugin checks: RS256/384/512, PS256/384/512,
 * ES256/384/512. "none" and the HMAC family are never accepted. */
bool jwt_alg_supported(const char *alg);

/* Checks t's signature with key (its type, curve and pinned alg must fit
 * t->alg). Returns 0, or -1 with err. */
int jwt_verify(const struct jwt *t, const struct jwk *key, char *err, size_t errlen);

/* Finds the key for t in set (by kid; without a kid, a key of the
 * algorithm's type when exactly one exists) and checks the signature.
 * Returns 0, 1 when no key fits (unknown kid), -1 on a bad signature;
 * err says which. */
int jwt_verify_with(const struct jwt *t, const struct jwks *set, char *err, size_t errlen);

struct jwt_policy {
    int64_t now_s;
    int64_t clock_skew_s;
    const char *expected_audience; /* comma-separated; "" accepts any */
    const char *expected_issuer;   /* "" accepts any */
    const char *sub_claim;         /* the principal's claim */
    const char *scope_claim;
    const char *required_scopes;   /* space- or comma-separated; "" none */
};

enum jwt_claims_result { JWT_CLAIMS_OK = 0, JWT_CLAIMS_INVALID = -1, JWT_CLAIMS_SCOPE = -2 };

/* Validates exp (required), nbf, iat (required), aud, iss, the subject and
 * the scopes. On success principal holds the subject and *exp_s the
 * expiry. */
enum jwt_claims_result jwt_check_claims(const struct jwt *t, const struct jwt_policy *p, char *principal,
                                        size_t principal_len, int64_t *exp_s, char *err, size_t errlen);

#endif
