/* SCRAM server exchange (RFC 5802 section 3 and 5, RFC 7677). */
#include "sasl/scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Client messages are a few hundred bytes; anything far larger is abuse. */
#define SCRAM_MAX_MESSAGE 4096
#define SCRAM_USER_MAX 512
#define SCRAM_NONCE_BYTES 24

enum scram_phase { PHASE_FIRST, PHASE_CHALLENGE, PHASE_FINAL, PHASE_ENDED };

struct scram_server {
    int mechanism;
    enum scram_phase phase;
    char user[SCRAM_USER_MAX];
    char gs2_header[SCRAM_USER_MAX + 16];
    char client_first_bare[SCRAM_MAX_MESSAGE + 1];
    char server_first[SCRAM_MAX_MESSAGE + 1];
    char nonce[SCRAM_MAX_MESSAGE + 1]; /* client nonce + server nonce */
    size_t client_nonce_len;
    char fixed_nonce[48]; /* tests only; "" = random */
    struct scram_credential cred;
    char server_final[8 + 2 * SCRAM_MAX_KEY];
};

enum scram_mechanism scram_mechanism_from_name(const char *name)
{
    if (name && strcmp(name, "SCRAM-SHA-256") == 0)
        return SCRAM_SHA_256;
    if (name && strcmp(name, "SCRAM-SHA-512") == 0)
        return SCRAM_SHA_512;
    return SCRAM_UNKNOWN;
}

const char *scram_mechanism_name(int mechanism)
{
    switch (mechanism) {
    case SCRAM_SHA_256:
        return "SCRAM-SHA-256";
    case SCRAM_SHA_512:
        return "SCRAM-SHA-512";
    default:
        return NULL;
    }
}

size_t scram_key_len(int mechanism)
{
    return mechanism == SCRAM_SHA_256 ? 32 : mechanism == SCRAM_SHA_512 ? 64 : 0;
}

static const EVP_MD *digest_of(int mechanism)
{
    return mechanism == SCRAM_SHA_256 ? EVP_sha256() : mechanism == SCRAM_SHA_512 ? EVP_sha512() : NULL;
}

static int hmac(int mechanism, const uint8_t *key, size_t key_len, const void *data, size_t len, uint8_t *out)
{
    unsigned int n = 0;
    if (!HMAC(digest_of(mechanism), key, (int)key_len, data, len, out, &n))
        return -1;
    return n == scram_key_len(mechanism) ? 0 : -1;
}

static int hash(int mechanism, const uint8_t *data, size_t len, uint8_t *out)
{
    unsigned int n = 0;
    if (EVP_Digest(data, len, out, &n, digest_of(mechanism), NULL) != 1)
        return -1;
    return n == scram_key_len(mechanism) ? 0 : -1;
}

int scram_salted_password(int mechanism, const char *password, size_t password_len, const uint8_t *salt,
                          size_t salt_len, int32_t iterations, uint8_t *out)
{
    size_t klen = scram_key_len(mechanism);
    if (klen == 0 || iterations < 1 || password_len > INT32_MAX || salt_len > INT32_MAX)
        return -1;
    return PKCS5_PBKDF2_HMAC(password, (int)password_len, salt, (int)salt_len, iterations, digest_of(mechanism),
                             (int)klen, out) == 1
               ? 0
               : -1;
}

int scram_credential_from_salted(int mechanism, const uint8_t *salted, size_t salted_len, const uint8_t *salt,
                                 size_t salt_len, int32_t iterations, struct scram_credential *out)
{
    size_t klen = scram_key_len(mechanism);
    if (klen == 0 || salted_len != klen || salt_len > SCRAM_MAX_SALT)
        return -1;
    memset(out, 0, sizeof *out);
    out->mechanism = mechanism;
    memcpy(out->salt, salt, salt_len);
    out->salt_len = salt_len;
    out->iterations = iterations;
    uint8_t client_key[SCRAM_MAX_KEY];
    int rc = hmac(mechanism, salted, klen, "Client Key", 10, client_key) == 0 &&
                     hash(mechanism, client_key, klen, out->stored_key) == 0 &&
                     hmac(mechanism, salted, klen, "Server Key", 10, out->server_key) == 0
                 ? 0
                 : -1;
    OPENSSL_cleanse(client_key, sizeof client_key);
    return rc;
}

struct scram_server *scram_server_new(int mechanism)
{
    if (scram_key_len(mechanism) == 0)
        return NULL;
    struct scram_server *s = calloc(1, sizeof *s);
    if (s)
        s->mechanism = mechanism;
    return s;
}

void scram_server_free(struct scram_server *s)
{
    if (!s)
        return;
    OPENSSL_cleanse(s, sizeof *s);
    free(s);
}

void scram_server_set_nonce(struct scram_server *s, const char *nonce)
{
    snprintf(s->fixed_nonce, sizeof s->fixed_nonce, "%s", nonce);
}

static int fail(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return -1;
}

/* saslname (RFC 5802 5.1): "=2C" is ',' and "=3D" is '='; any other '='
 * is invalid. Returns 0, or -1. */
static int unescape_name(const char *in, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '=') {
            if (n - i < 3)
                return -1;
            if (memcmp(in + i, "=2C", 3) == 0)
                c = ',';
            else if (memcmp(in + i, "=3D", 3) == 0)
                c = '=';
            else
                return -1;
            i += 2;
        } else if (c == '\0') {
            return -1;
        }
        if (o + 1 >= cap)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

/* A printable nonce (RFC 5802: printable ASCII except ','). */
static bool nonce_ok(const char *p, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x21 || p[i] > 0x7e || p[i] == ',')
            return false;
    return true;
}

/* Value of the attribute "k=" that starts at p (up to the next ',' or end). */
static bool attr(const char *p, const char *end, char k, const char **val, size_t *vlen)
{
    if (end - p < 2 || p[0] != k || p[1] != '=')
        return false;
    const char *v = p + 2;
    const char *comma = memchr(v, ',', (size_t)(end - v));
    *val = v;
    *vlen = (size_t)((comma ? comma : end) - v);
    return true;
}

int scram_server_parse_first(struct scram_server *s, const uint8_t *msg, size_t len, const char **user, char *err,
                             size_t errlen)
{
    if (s->phase != PHASE_FIRST)
        return fail(err, errlen, "client-first-message out of order");
    if (len == 0 || len > SCRAM_MAX_MESSAGE || memchr(msg, '\0', len))
        return fail(err, errlen, "malformed client-first-message");
    const char *p = (const char *)msg, *end = p + len;
    /* gs2-header: cbind flag, optional authzid, then the bare message. */
    if (len < 3 || (p[0] != 'n' && p[0] != 'y'))
        return fail(err, errlen, p[0] == 'p' ? "channel binding is not supported" : "malformed gs2 header");
    if (p[1] != ',')
        return fail(err, errlen, "malformed gs2 header");
    const char *q = p + 2;
    char authzid[SCRAM_USER_MAX] = "";
    if (q < end && *q == 'a') {
        const char *v;
        size_t vn;
        if (!attr(q, end, 'a', &v, &vn) || unescape_name(v, vn, authzid, sizeof authzid) != 0)
            return fail(err, errlen, "malformed authzid");
        q = v + vn;
    }
    if (q >= end || *q != ',')
        return fail(err, errlen, "malformed gs2 header");
    q++;
    size_t gs2_len = (size_t)(q - p);
    if (gs2_len >= sizeof s->gs2_header)
        return fail(err, errlen, "gs2 header too long");
    memcpy(s->gs2_header, p, gs2_len);
    s->gs2_header[gs2_len] = '\0';

    const char *bare = q, *v;
    size_t vn;
    if (q < end && *q == 'm')
        return fail(err, errlen, "mandatory extensions are not supported");
    if (!attr(q, end, 'n', &v, &vn) || unescape_name(v, vn, s->user, sizeof s->user) != 0 || s->user[0] == '\0')
        return fail(err, errlen, "malformed user name");
    q = v + vn;
    if (q >= end || *q != ',' || !attr(q + 1, end, 'r', &v, &vn) || !nonce_ok(v, vn))
        return fail(err, errlen, "malformed client nonce");
    /* Extensions may follow (Kafka's tokenauth=true for delegation tokens). */
    for (const char *ext = v + vn; ext + 15 <= end; ext++)
        if (ext[0] == ',' && strncmp(ext, ",tokenauth=true", 15) == 0)
            return fail(err, errlen, "delegation tokens are not supported");
    if (authzid[0] && strcmp(authzid, s->user) != 0)
        return fail(err, errlen, "authorization id differs from the user name");
    memcpy(s->client_first_bare, bare, (size_t)(end - bare));
    s->client_first_bare[end - bare] = '\0';
    memcpy(s->nonce, v, vn);
    s->nonce[vn] = '\0';
    s->client_nonce_len = vn;
    s->phase = PHASE_CHALLENGE;
    *user = s->user;
    return 0;
}

int scram_server_challenge(struct scram_server *s, const struct scram_credential *cred, const uint8_t **out,
                           size_t *out_len, char *err, size_t errlen)
{
    if (s->phase != PHASE_CHALLENGE || !cred || cred->mechanism != s->mechanism)
        return fail(err, errlen, "no credential for this exchange");
    char server_nonce[sizeof s->fixed_nonce + 2 * SCRAM_NONCE_BYTES];
    if (s->fixed_nonce[0]) {
        snprintf(server_nonce, sizeof server_nonce, "%s", s->fixed_nonce);
    } else {
        uint8_t raw[SCRAM_NONCE_BYTES];
        if (RAND_bytes(raw, sizeof raw) != 1)
            return fail(err, errlen, "no random bytes for a nonce");
        scram_base64_encode(raw, sizeof raw, server_nonce);
    }
    size_t have = strlen(s->nonce), add = strlen(server_nonce);
    if (have + add >= sizeof s->nonce)
        return fail(err, errlen, "nonce too long");
    memcpy(s->nonce + have, server_nonce, add + 1);
    char salt64[((SCRAM_MAX_SALT + 2) / 3) * 4 + 1];
    scram_base64_encode(cred->salt, cred->salt_len, salt64);
    int n = snprintf(s->server_first, sizeof s->server_first, "r=%s,s=%s,i=%d", s->nonce, salt64,
                     (int)cred->iterations);
    if (n < 0 || (size_t)n >= sizeof s->server_first)
        return fail(err, errlen, "server-first-message too long");
    s->cred = *cred;
    s->phase = PHASE_FINAL;
    *out = (const uint8_t *)s->server_first;
    *out_len = (size_t)n;
    return 0;
}

static enum scram_step finish_fail(struct scram_server *s, char *err, size_t errlen, const char *why)
{
    s->phase = PHASE_ENDED;
    fail(err, errlen, why);
    return SCRAM_STEP_FAILED;
}

enum scram_step scram_server_finish(struct scram_server *s, const uint8_t *msg, size_t len, const uint8_t **out,
                                    size_t *out_len, char *err, size_t errlen)
{
    if (s->phase != PHASE_FINAL)
        return finish_fail(s, err, errlen, "client-final-message out of order");
    if (len == 0 || len > SCRAM_MAX_MESSAGE || memchr(msg, '\0', len))
        return finish_fail(s, err, errlen, "malformed client-final-message");
    const char *p = (const char *)msg, *end = p + len, *v;
    size_t vn;
    /* c=: the gs2 header, base64 */
    if (!attr(p, end, 'c', &v, &vn))
        return finish_fail(s, err, errlen, "malformed channel binding");
    uint8_t cbind[sizeof s->gs2_header];
    long cn = scram_base64_decode(v, vn, cbind, sizeof cbind);
    if (cn < 0 || (size_t)cn != strlen(s->gs2_header) || memcmp(cbind, s->gs2_header, (size_t)cn) != 0)
        return finish_fail(s, err, errlen, "channel binding does not match the gs2 header");
    const char *q = v + vn;
    if (q >= end || !attr(q + 1, end, 'r', &v, &vn))
        return finish_fail(s, err, errlen, "malformed nonce");
    /* Kafka accepts a nonce that ends with the combined one, because
     * librdkafka sends its client nonce in front of it once more; the
     * proof signs what was sent either way. */
    size_t want = strlen(s->nonce);
    if (vn < want || memcmp(v + vn - want, s->nonce, want) != 0 || !nonce_ok(v, vn))
        return finish_fail(s, err, errlen, "nonce does not match");
    /* The proof is the last attribute; what precedes it is signed. */
    const char *proof_at = NULL;
    for (const char *c = v + vn; c + 3 <= end; c++)
        if (c[0] == ',' && c[1] == 'p' && c[2] == '=')
            proof_at = c;
    if (!proof_at)
        return finish_fail(s, err, errlen, "missing proof");
    size_t klen = scram_key_len(s->mechanism);
    uint8_t proof[SCRAM_MAX_KEY + 3];
    long pn = scram_base64_decode(proof_at + 3, (size_t)(end - proof_at - 3), proof, sizeof proof);
    if (pn != (long)klen)
        return finish_fail(s, err, errlen, "malformed proof");

    /* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
    size_t a = strlen(s->client_first_bare), b = strlen(s->server_first), c = (size_t)(proof_at - p);
    char *auth = malloc(a + b + c + 2);
    if (!auth)
        return finish_fail(s, err, errlen, "out of memory");
    memcpy(auth, s->client_first_bare, a);
    auth[a] = ',';
    memcpy(auth + a + 1, s->server_first, b);
    auth[a + 1 + b] = ',';
    memcpy(auth + a + b + 2, p, c);
    size_t auth_len = a + b + c + 2;

    uint8_t signature[SCRAM_MAX_KEY], client_key[SCRAM_MAX_KEY], stored[SCRAM_MAX_KEY], server_sig[SCRAM_MAX_KEY];
    bool ok = hmac(s->mechanism, s->cred.stored_key, klen, auth, auth_len, signature) == 0;
    for (size_t i = 0; ok && i < klen; i++)
        client_key[i] = proof[i] ^ signature[i];
    ok = ok && hash(s->mechanism, client_key, klen, stored) == 0;
    bool match = ok && CRYPTO_memcmp(stored, s->cred.stored_key, klen) == 0;
    ok = ok && hmac(s->mechanism, s->cred.server_key, klen, auth, auth_len, server_sig) == 0;
    free(auth);
    OPENSSL_cleanse(client_key, sizeof client_key);
    if (!ok)
        return finish_fail(s, err, errlen, "digest computation failed");
    if (!match)
        return finish_fail(s, err, errlen, "invalid proof (wrong password)");
    memcpy(s->server_final, "v=", 2);
    size_t n = scram_base64_encode(server_sig, klen, s->server_final + 2);
    s->phase = PHASE_ENDED;
    *out = (const uint8_t *)s->server_final;
    *out_len = n + 2;
    return SCRAM_STEP_DONE;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t scram_base64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        out[o++] = B64[v >> 18 & 63];
        out[o++] = B64[v >> 12 & 63];
        out[o++] = i + 1 < n ? B64[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? B64[v & 63] : '=';
    }
    out[o] = '\0';
    return o;
}

static int b64_value(char c)
{
    const char *at = c ? strchr(B64, c) : NULL;
    return at ? (int)(at - B64) : -1;
}

long scram_base64_decode(const char *in, size_t n, uint8_t *out, size_t cap)
{
    if (n % 4 != 0)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int pad = (in[i + 3] == '=') + (in[i + 2] == '=' && in[i + 3] == '=');
        if (pad > 0 && i + 4 != n)
            return -1;
        int v[4];
        for (int k = 0; k < 4 - pad; k++)
            if ((v[k] = b64_value(in[i + k])) < 0)
                return -1;
        for (int k = 4 - pad; k < 4; k++)
            v[k] = 0;
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        uint8_t bytes[3] = {(uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w};
        for (int k = 0; k < 3 - pad; k++) {
            if (o >= cap)
                return -1;
            out[o++] = bytes[k];
        }
    }
    return (long)o;
}
