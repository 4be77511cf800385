/* JSON Web Tokens: compact JWS parsing (RFC 7515), signatures checked with
 * OpenSSL against a JWK, and the claims Kafka's broker-side validator
 * checks (RFC 7519). Only asymmetric algorithms are accepted: a token that
 * says "none" or HS* is refused before any key is looked at, so a public
 * key can never be used as an HMAC secret. */
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oauth_internal.h"

enum jwt_family { FAMILY_RSA, FAMILY_PSS, FAMILY_EC };

struct jwt_alg {
    const char *name;
    enum jwt_family family;
    const EVP_MD *(*md)(void);
    size_t ec_half; /* bytes of r (and of s) in a JWS ECDSA signature */
    const char *curve;
};

static const struct jwt_alg jwt_algs[] = {
    {"RS256", FAMILY_RSA, EVP_sha256, 0, NULL}, {"RS384", FAMILY_RSA, EVP_sha384, 0, NULL},
    {"RS512", FAMILY_RSA, EVP_sha512, 0, NULL}, {"PS256", FAMILY_PSS, EVP_sha256, 0, NULL},
    {"PS384", FAMILY_PSS, EVP_sha384, 0, NULL}, {"PS512", FAMILY_PSS, EVP_sha512, 0, NULL},
    {"ES256", FAMILY_EC, EVP_sha256, 32, "P-256"}, {"ES384", FAMILY_EC, EVP_sha384, 48, "P-384"},
    {"ES512", FAMILY_EC, EVP_sha512, 66, "P-521"},
};

static const struct jwt_alg *alg_find(const char *name)
{
    for (size_t i = 0; i < sizeof jwt_algs / sizeof jwt_algs[0]; i++)
        if (strcmp(jwt_algs[i].name, name) == 0)
            return &jwt_algs[i];
    return NULL;
}

bool jwt_alg_supported(const char *alg)
{
    return alg_find(alg) != NULL;
}

/* Decodes one base64url part as a JSON object. */
static json_t *decode_json_part(const char *part, size_t len, const char *what, char *err, size_t errlen)
{
    size_t n;
    uint8_t *raw = oauth_b64url_decode(part, len, &n);
    if (!raw) {
        snprintf(err, errlen, "the %s is not base64url", what);
        return NULL;
    }
    json_error_t jerr;
    json_t *obj = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, &jerr);
    free(raw);
    if (!obj || !json_is_object(obj)) {
        snprintf(err, errlen, "the %s is not a JSON object%s%s", what, obj ? "" : ": ", obj ? "" : jerr.text);
        json_decref(obj);
        return NULL;
    }
    return obj;
}

int jwt_parse(const char *token, size_t len, struct jwt *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *dot1 = memchr(token, '.', len);
    const char *dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - token)) : NULL;
    if (!dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - token))) {
        snprintf(err, errlen, "the token is not three dot-separated parts (a compact JWS)");
        return -1;
    }
    out->header = decode_json_part(token, (size_t)(dot1 - token), "header", err, errlen);
    if (!out->header)
        goto fail;
    out->claims = decode_json_part(dot1 + 1, (size_t)(dot2 - dot1 - 1), "payload", err, errlen);
    if (!out->claims)
        goto fail;
    out->signature = oauth_b64url_decode(dot2 + 1, len - (size_t)(dot2 + 1 - token), &out->signature_len);
    if (!out->signature) {
        snprintf(err, errlen, "the signature is not base64url");
        goto fail;
    }
    const char *alg = json_string_value(json_object_get(out->header, "alg"));
    if (!alg || strlen(alg) >= sizeof out->alg) {
        snprintf(err, errlen, "the header has no usable alg");
        goto fail;
    }
    snprintf(out->alg, sizeof out->alg, "%s", alg);
    json_t *kid = json_object_get(out->header, "kid");
    if (kid && (!json_is_string(kid) || strlen(json_string_value(kid)) >= sizeof out->kid)) {
        snprintf(err, errlen, "the header's kid is not a short string");
        goto fail;
    }
    if (kid)
        snprintf(out->kid, sizeof out->kid, "%s", json_string_value(kid));
    out->signing_input_len = (size_t)(dot2 - token);
    out->signing_input = malloc(out->signing_input_len + 1);
    if (!out->signing_input) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    memcpy(out->signing_input, token, out->signing_input_len);
    out->signing_input[out->signing_input_len] = 0;
    return 0;
fail:
    jwt_free(out);
    return -1;
}

void jwt_free(struct jwt *t)
{
    json_decref(t->header);
    json_decref(t->claims);
    free(t->signing_input);
    free(t->signature);
    memset(t, 0, sizeof *t);
}

/* A JWS ECDSA signature is r || s, fixed width; OpenSSL verifies DER. */
static unsigned char *ec_sig_to_der(const uint8_t *sig, size_t half, int *der_len)
{
    ECDSA_SIG *es = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(sig, (int)half, NULL), *s = BN_bin2bn(sig + half, (int)half, NULL);
    unsigned char *der = NULL;
    if (es && r && s && ECDSA_SIG_set0(es, r, s) == 1) {
        r = s = NULL; /* owned by es now */
        *der_len = i2d_ECDSA_SIG(es, &der);
        if (*der_len <= 0)
            der = NULL;
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(es);
    return der;
}

int jwt_verify(const struct jwt *t, const struct jwk *key, char *err, size_t errlen)
{
    const struct jwt_alg *alg = alg_find(t->alg);
    if (!alg) {
        snprintf(err, errlen, "algorithm '%s' is not accepted", t->alg);
        return -1;
    }
    if ((alg->family == FAMILY_EC) != (key->type == JWK_EC) ||
        (alg->family == FAMILY_EC && strcmp(alg->curve, key->curve) != 0)) {
        snprintf(err, errlen, "key '%s' does not fit algorithm %s", key->kid, t->alg);
        return -1;
    }
    if (key->alg[0] && strcmp(key->alg, t->alg) != 0) {
        snprintf(err, errlen, "key '%s' is for %s, the token says %s", key->kid, key->alg, t->alg);
        return -1;
    }
    const unsigned char *sig = t->signature;
    size_t sig_len = t->signature_len;
    unsigned char *der = NULL;
    if (alg->family == FAMILY_EC) {
        int der_len = 0;
        if (sig_len != 2 * alg->ec_half || !(der = ec_sig_to_der(sig, alg->ec_half, &der_len))) {
            snprintf(err, errlen, "the %s signature has the wrong length", t->alg);
            return -1;
        }
        sig = der;
        sig_len = (size_t)der_len;
    }
    int ok = 0;
    EVP_MD_CTX *mctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    if (mctx && EVP_DigestVerifyInit(mctx, &pctx, alg->md(), NULL, key->pkey) == 1) {
        if (alg->family == FAMILY_PSS)
            ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
                 EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1;
        else
            ok = 1;
        ok = ok && EVP_DigestVerify(mctx, sig, sig_len, (const unsigned char *)t->signing_input,
                                    t->signing_input_len) == 1;
    }
    EVP_MD_CTX_free(mctx);
    OPENSSL_free(der);
    if (!ok) {
        snprintf(err, errlen, "the %s signature does not verify with key '%s'", t->alg, key->kid);
        return -1;
    }
    return 0;
}

int jwt_verify_with(const struct jwt *t, const struct jwks *set, char *err, size_t errlen)
{
    const struct jwt_alg *alg = alg_find(t->alg);
    if (!alg) {
        snprintf(err, errlen, "algorithm '%s' is not accepted", t->alg);
        return -1;
    }
    const struct jwk *found = NULL;
    size_t candidates = 0;
    for (size_t i = 0; set && i < set->count; i++) {
        const struct jwk *k = &set->keys[i];
        if (t->kid[0] ? strcmp(k->kid, t->kid) == 0 : (k->type == JWK_EC) == (alg->family == FAMILY_EC)) {
            found = k;
            candidates++;
        }
    }
    if (candidates == 0) {
        if (t->kid[0])
            snprintf(err, errlen, "no key with kid '%s' in the JWKS", t->kid);
        else
            snprintf(err, errlen, "no key for %s in the JWKS", t->alg);
        return 1;
    }
    if (candidates > 1) {
        snprintf(err, errlen, "%zu keys fit a token %s, which cannot choose one", candidates,
                 t->kid[0] ? "whose kid several keys share" : "without a kid");
        return -1;
    }
    return jwt_verify(t, found, err, errlen);
}

/* A NumericDate claim: absent (false), or a number of seconds. */
static bool numeric_claim(const json_t *claims, const char *name, int64_t *out, bool *malformed)
{
    json_t *v = json_object_get(claims, name);
    if (!v)
        return false;
    if (json_is_integer(v))
        *out = (int64_t)json_integer_value(v);
    else if (json_is_real(v) && json_real_value(v) > -9e15 && json_real_value(v) < 9e15)
        *out = (int64_t)json_real_value(v);
    else
        *malformed = true;
    return true;
}

/* True when word is one of the items of list (split on commas and spaces). */
static bool list_has(const char *list, const char *word)
{
    size_t wlen = strlen(word);
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        size_t n = strcspn(p, ", ");
        if (n == wlen && n > 0 && memcmp(p, word, n) == 0)
            return true;
        p += n;
    }
    return false;
}

static bool audience_accepted(const json_t *aud, const char *expected)
{
    if (json_is_string(aud))
        return list_has(expected, json_string_value(aud));
    size_t i;
    json_t *item;
    json_array_foreach(aud, i, item)
    {
        if (json_is_string(item) && list_has(expected, json_string_value(item)))
            return true;
    }
    return false;
}

/* The token's scopes as one space-separated string: a string claim as is,
 * an array of strings joined (both forms are in use). */
static void scopes_of(const json_t *claim, char *out, size_t outlen)
{
    out[0] = 0;
    if (json_is_string(claim)) {
        snprintf(out, outlen, "%s", json_string_value(claim));
        return;
    }
    size_t i, used = 0;
    json_t *item;
    json_array_foreach(claim, i, item)
    {
        if (!json_is_string(item))
            continue;
        int n = snprintf(out + used, outlen - used, "%s%s", used ? " " : "", json_string_value(item));
        if (n < 0 || (size_t)n >= outlen - used)
            break;
        used += (size_t)n;
    }
}

enum jwt_claims_result jwt_check_claims(const struct jwt *t, const struct jwt_policy *p, char *principal,
                                        size_t principal_len, int64_t *exp_s, char *err, size_t errlen)
{
    int64_t exp = 0, nbf = 0, iat = 0;
    bool malformed = false;
    if (!numeric_claim(t->claims, "exp", &exp, &malformed) || malformed) {
        snprintf(err, errlen, malformed ? "exp is not a number" : "the token has no exp");
        return JWT_CLAIMS_INVALID;
    }
    if (p->now_s >= exp + p->clock_skew_s) {
        snprintf(err, errlen, "the token expired at %lld (now %lld, clock skew %llds)", (long long)exp,
                 (long long)p->now_s, (long long)p->clock_skew_s);
        return JWT_CLAIMS_INVALID;
    }
    if (numeric_claim(t->claims, "nbf", &nbf, &malformed) && (malformed || p->now_s + p->clock_skew_s < nbf)) {
        snprintf(err, errlen, malformed ? "nbf is not a number" : "the token is not valid before %lld (now %lld)",
                 (long long)nbf, (long long)p->now_s);
        return JWT_CLAIMS_INVALID;
    }
    if (!numeric_claim(t->claims, "iat", &iat, &malformed) || malformed) {
        snprintf(err, errlen, malformed ? "iat is not a number" : "the token has no iat");
        return JWT_CLAIMS_INVALID;
    }
    if (p->now_s + p->clock_skew_s < iat) {
        snprintf(err, errlen, "the token is issued in the future (iat %lld, now %lld)", (long long)iat,
                 (long long)p->now_s);
        return JWT_CLAIMS_INVALID;
    }
    if (p->expected_audience && p->expected_audience[0] &&
        !audience_accepted(json_object_get(t->claims, "aud"), p->expected_audience)) {
        snprintf(err, errlen, "the token's audience is not one of %s", p->expected_audience);
        return JWT_CLAIMS_INVALID;
    }
    if (p->expected_issuer && p->expected_issuer[0]) {
        const char *iss = json_string_value(json_object_get(t->claims, "iss"));
        if (!iss || strcmp(iss, p->expected_issuer) != 0) {
            snprintf(err, errlen, "the token's issuer '%.200s' is not %s", iss ? iss : "(none)", p->expected_issuer);
            return JWT_CLAIMS_INVALID;
        }
    }
    const char *sub = json_string_value(json_object_get(t->claims, p->sub_claim));
    if (!sub || !sub[0] || strlen(sub) >= principal_len) {
        snprintf(err, errlen, "the token's %s claim is not a non-empty string (of fewer than %zu bytes)",
                 p->sub_claim, principal_len);
        return JWT_CLAIMS_INVALID;
    }
    if (p->required_scopes && p->required_scopes[0]) {
        char scopes[2048];
        scopes_of(json_object_get(t->claims, p->scope_claim), scopes, sizeof scopes);
        const char *q = p->required_scopes;
        while (*q) {
            while (*q == ',' || *q == ' ')
                q++;
            size_t n = strcspn(q, ", ");
            char want[256];
            snprintf(want, sizeof want, "%.*s", (int)n, q);
            if (n > 0 && !list_has(scopes, want)) {
                snprintf(err, errlen, "the token's %s claim lacks the scope %s", p->scope_claim, want);
                return JWT_CLAIMS_SCOPE;
            }
            q += n;
        }
    }
    snprintf(principal, principal_len, "%s", sub);
    *exp_s = exp;
    return JWT_CLAIMS_OK;
}
