/* JWK sets (RFC 7517/7518): the public RSA and EC keys that sign tokens,
 * turned into OpenSSL keys once per refresh so a check is one verify. */
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oauth_internal.h"

/* A member decoded from base64url, or NULL (absent or malformed). */
static uint8_t *b64_member(const json_t *key, const char *name, size_t *len)
{
    const char *v = json_string_value(json_object_get(key, name));
    return v ? oauth_b64url_decode(v, strlen(v), len) : NULL;
}

static EVP_PKEY *pkey_from_params(const char *type, OSSL_PARAM_BLD *bld)
{
    EVP_PKEY *pkey = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (params && ctx && EVP_PKEY_fromdata_init(ctx) == 1)
        EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return pkey;
}

static EVP_PKEY *rsa_key(const json_t *key, char *err, size_t errlen)
{
    size_t nlen = 0, elen = 0;
    uint8_t *n = b64_member(key, "n", &nlen), *e = b64_member(key, "e", &elen);
    EVP_PKEY *pkey = NULL;
    BIGNUM *bn_n = n ? BN_bin2bn(n, (int)nlen, NULL) : NULL, *bn_e = e ? BN_bin2bn(e, (int)elen, NULL) : NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    /* Below 2048 bits RSA is not a signature anyone should trust. */
    if (bn_n && bn_e && BN_num_bits(bn_n) >= 2048 && bld &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1)
        pkey = pkey_from_params("RSA", bld);
    if (!pkey)
        snprintf(err, errlen, "an RSA key without a usable n and e (of at least 2048 bits)");
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    free(n);
    free(e);
    return pkey;
}

static const struct {
    const char *jwk;
    const char *openssl;
    size_t bytes;
} ec_curves[] = {{"P-256", "prime256v1", 32}, {"P-384", "secp384r1", 48}, {"P-521", "secp521r1", 66}};

static EVP_PKEY *ec_key(const json_t *key, char *curve, size_t curve_len, char *err, size_t errlen)
{
    const char *crv = json_string_value(json_object_get(key, "crv"));
    size_t c = 0;
    while (crv && c < sizeof ec_curves / sizeof ec_curves[0] && strcmp(ec_curves[c].jwk, crv) != 0)
        c++;
    if (!crv || c == sizeof ec_curves / sizeof ec_curves[0]) {
        snprintf(err, errlen, "an EC key on a curve other than P-256, P-384, P-521");
        return NULL;
    }
    snprintf(curve, curve_len, "%s", crv);
    size_t xlen = 0, ylen = 0, bytes = ec_curves[c].bytes;
    uint8_t *x = b64_member(key, "x", &xlen), *y = b64_member(key, "y", &ylen);
    EVP_PKEY *pkey = NULL;
    uint8_t point[1 + 2 * 66];
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (x && y && xlen == bytes && ylen == bytes && bld) {
        /* The uncompressed point: 0x04 || x || y. OpenSSL checks it is on the curve. */
        point[0] = 0x04;
        memcpy(point + 1, x, bytes);
        memcpy(point + 1 + bytes, y, bytes);
        if (OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, ec_curves[c].openssl, 0) == 1 &&
            OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, 1 + 2 * bytes) == 1)
            pkey = pkey_from_params("EC", bld);
    }
    if (!pkey)
        snprintf(err, errlen, "an EC key without a usable x and y on %s", crv);
    OSSL_PARAM_BLD_free(bld);
    free(x);
    free(y);
    return pkey;
}

/* Fills k from one JWK; 1 when the key is skipped (not a signing key we
 * serve), -1 when it claims to be one and is malformed. */
static int parse_key(const json_t *key, struct jwk *k, char *err, size_t errlen)
{
    const char *kty = json_string_value(json_object_get(key, "kty"));
    const char *use = json_string_value(json_object_get(key, "use"));
    const char *kid = json_string_value(json_object_get(key, "kid"));
    const char *alg = json_string_value(json_object_get(key, "alg"));
    if (!json_is_object(key) || !kty || (use && strcmp(use, "sig") != 0))
        return 1;
    if (strcmp(kty, "RSA") != 0 && strcmp(kty, "EC") != 0)
        return 1; /* "oct" (HMAC secrets) and others are never used */
    memset(k, 0, sizeof *k);
    if ((kid && strlen(kid) >= sizeof k->kid) || (alg && strlen(alg) >= sizeof k->alg)) {
        snprintf(err, errlen, "a key with an over-long kid or alg");
        return -1;
    }
    snprintf(k->kid, sizeof k->kid, "%s", kid ? kid : "");
    snprintf(k->alg, sizeof k->alg, "%s", alg ? alg : "");
    char why[160] = "";
    if (strcmp(kty, "RSA") == 0) {
        k->type = JWK_RSA;
        k->pkey = rsa_key(key, why, sizeof why);
    } else {
        k->type = JWK_EC;
        k->pkey = ec_key(key, k->curve, sizeof k->curve, why, sizeof why);
    }
    if (!k->pkey) {
        snprintf(err, errlen, "key '%s': %s", k->kid, why);
        return -1;
    }
    return 0;
}

int jwks_parse(const char *json, size_t len, struct jwks **out, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *doc = json_loadb(json, len, 0, &jerr);
    json_t *keys = json_object_get(doc, "keys");
    if (!doc || !json_is_array(keys)) {
        snprintf(err, errlen, "not a JWK set (a JSON object with a keys array)%s%s", doc ? "" : ": ",
                 doc ? "" : jerr.text);
        json_decref(doc);
        return -1;
    }
    struct jwks *set = calloc(1, sizeof *set);
    if (set)
        set->keys = calloc(json_array_size(keys) + 1, sizeof *set->keys);
    if (!set || !set->keys) {
        snprintf(err, errlen, "out of memory");
        jwks_free(set);
        json_decref(doc);
        return -1;
    }
    size_t i;
    json_t *key;
    json_array_foreach(keys, i, key)
    {
        int rc = parse_key(key, &set->keys[set->count], err, errlen);
        if (rc < 0) {
            jwks_free(set);
            json_decref(doc);
            return -1;
        }
        if (rc == 0)
            set->count++;
    }
    json_decref(doc);
    if (set->count == 0) {
        snprintf(err, errlen, "the JWK set has no RSA or EC signing key");
        jwks_free(set);
        return -1;
    }
    *out = set;
    return 0;
}

void jwks_free(struct jwks *set)
{
    if (!set)
        return;
    for (size_t i = 0; set->keys && i < set->count; i++)
        EVP_PKEY_free(set->keys[i].pkey);
    free(set->keys);
    free(set);
}

size_t jwks_count(const struct jwks *set)
{
    return set ? set->count : 0;
}
