/* See jwt_forge.h. */
#include "jwt_forge.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/rsa.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *curve_of(const char *alg, size_t *half, const char **jwk_crv)
{
    if (strcmp(alg, "ES256") == 0)
        return *half = 32, *jwk_crv = "P-256", "P-256";
    if (strcmp(alg, "ES384") == 0)
        return *half = 48, *jwk_crv = "P-384", "P-384";
    if (strcmp(alg, "ES512") == 0)
        return *half = 66, *jwk_crv = "P-521", "P-521";
    return NULL;
}

static const EVP_MD *md_of(const char *alg)
{
    if (strstr(alg, "384"))
        return EVP_sha384();
    if (strstr(alg, "512"))
        return EVP_sha512();
    return EVP_sha256();
}

EVP_PKEY *forge_keygen(const char *alg)
{
    size_t half;
    const char *crv;
    const char *curve = curve_of(alg, &half, &crv);
    return curve ? EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve) : EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
}

char *forge_b64url(const void *data, size_t len)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const unsigned char *in = data;
    char *out = malloc(len / 3 * 4 + 5);
    if (!out)
        return NULL;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        acc = (acc << 8) | in[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = alphabet[(acc >> bits) & 63];
        }
    }
    if (bits > 0)
        out[o++] = alphabet[(acc << (6 - bits)) & 63];
    out[o] = 0;
    return out;
}

static char *bn_b64(const BIGNUM *bn, size_t width)
{
    size_t n = width ? width : (size_t)BN_num_bytes(bn);
    unsigned char *buf = malloc(n ? n : 1);
    char *out = NULL;
    if (buf && BN_bn2binpad(bn, buf, (int)n) == (int)n)
        out = forge_b64url(buf, n);
    free(buf);
    return out;
}

char *forge_jwk(EVP_PKEY *pkey, const char *kid, const char *alg)
{
    char extra[256] = "";
    int used = 0;
    if (kid)
        used += snprintf(extra + used, sizeof extra - (size_t)used, ",\"kid\":\"%s\"", kid);
    if (alg)
        snprintf(extra + used, sizeof extra - (size_t)used, ",\"alg\":\"%s\"", alg);
    char *json = NULL;
    if (EVP_PKEY_is_a(pkey, "RSA")) {
        BIGNUM *n = NULL, *e = NULL;
        EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_N, &n);
        EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &e);
        char *bn = n ? bn_b64(n, 0) : NULL, *be = e ? bn_b64(e, 0) : NULL;
        if (bn && be && (json = malloc(strlen(bn) + strlen(be) + 400)))
            sprintf(json, "{\"kty\":\"RSA\",\"use\":\"sig\",\"n\":\"%s\",\"e\":\"%s\"%s}", bn, be, extra);
        free(bn);
        free(be);
        BN_free(n);
        BN_free(e);
        return json;
    }
    char group[32] = "";
    size_t glen = 0;
    EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &glen);
    const char *crv = strcmp(group, "prime256v1") == 0 ? "P-256" : strcmp(group, "secp384r1") == 0 ? "P-384" : "P-521";
    size_t half = strcmp(crv, "P-256") == 0 ? 32 : strcmp(crv, "P-384") == 0 ? 48 : 66;
    BIGNUM *x = NULL, *y = NULL;
    EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_X, &x);
    EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, &y);
    char *bx = x ? bn_b64(x, half) : NULL, *by = y ? bn_b64(y, half) : NULL;
    if (bx && by && (json = malloc(strlen(bx) + strlen(by) + 400)))
        sprintf(json, "{\"kty\":\"EC\",\"crv\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"%s}", crv, bx, by, extra);
    free(bx);
    free(by);
    BN_free(x);
    BN_free(y);
    return json;
}

int forge_write_jwks(const char *path, const char *const *jwks, size_t count)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"keys\":[");
    for (size_t i = 0; i < count; i++)
        fprintf(f, "%s%s", i ? "," : "", jwks[i]);
    fprintf(f, "]}\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* The signature over input in JWS form (ECDSA as fixed-width r || s). */
static char *sign(EVP_PKEY *pkey, const char *alg, const char *input)
{
    if (strcmp(alg, "none") == 0)
        return strdup("");
    EVP_MD_CTX *mctx = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    unsigned char *sig = NULL;
    size_t sig_len = 0;
    char *out = NULL;
    if (!mctx || EVP_DigestSignInit(mctx, &pctx, md_of(alg), NULL, pkey) != 1)
        goto done;
    if (alg[0] == 'P' && (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
                          EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1))
        goto done;
    if (EVP_DigestSign(mctx, NULL, &sig_len, (const unsigned char *)input, strlen(input)) != 1 ||
        !(sig = malloc(sig_len)) ||
        EVP_DigestSign(mctx, sig, &sig_len, (const unsigned char *)input, strlen(input)) != 1)
        goto done;
    size_t half;
    const char *crv;
    if (curve_of(alg, &half, &crv)) {
        const unsigned char *p = sig;
        ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)sig_len);
        unsigned char raw[132];
        if (!es || BN_bn2binpad(ECDSA_SIG_get0_r(es), raw, (int)half) < 0 ||
            BN_bn2binpad(ECDSA_SIG_get0_s(es), raw + half, (int)half) < 0) {
            ECDSA_SIG_free(es);
            goto done;
        }
        ECDSA_SIG_free(es);
        out = forge_b64url(raw, 2 * half);
    } else {
        out = forge_b64url(sig, sig_len);
    }
done:
    free(sig);
    EVP_MD_CTX_free(mctx);
    return out;
}

char *forge_token(EVP_PKEY *pkey, const char *alg, const char *kid, const char *claims_json)
{
    char header[256];
    if (kid)
        snprintf(header, sizeof header, "{\"alg\":\"%s\",\"typ\":\"JWT\",\"kid\":\"%s\"}", alg, kid);
    else
        snprintf(header, sizeof header, "{\"alg\":\"%s\",\"typ\":\"JWT\"}", alg);
    char *h = forge_b64url(header, strlen(header)), *c = forge_b64url(claims_json, strlen(claims_json));
    char *input = NULL, *sig = NULL, *token = NULL;
    if (h && c && (input = malloc(strlen(h) + strlen(c) + 2))) {
        sprintf(input, "%s.%s", h, c);
        sig = sign(pkey, alg, input);
    }
    if (sig && (token = malloc(strlen(input) + strlen(sig) + 2)))
        sprintf(token, "%s.%s", input, sig);
    free(h);
    free(c);
    free(input);
    free(sig);
    return token;
}
