/* SASL PLAIN and SCRAM, client side, and the JAAS credentials of the
 * broker's links; see sasl_client.h. */
#include "sasl/sasl_client.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sasl/scram.h"

static const char *const mechanisms[] = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};

const char *sasl_client_mechanism_canonical(const char *name)
{
    for (size_t i = 0; name && i < sizeof mechanisms / sizeof mechanisms[0]; i++)
        if (strcasecmp(name, mechanisms[i]) == 0)
            return mechanisms[i];
    return NULL;
}

static enum sasl_client_step fail(char *err, size_t errlen, const char *fmt, const char *arg)
{
    snprintf(err, errlen, fmt, arg);
    return SASL_CLIENT_FAILED;
}

/* saslname of RFC 5802: ',' and '=' escaped. */
static void scram_escape(const char *user, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = user; *p && n + 4 < cap; p++) {
        if (*p == ',' || *p == '=') {
            memcpy(out + n, *p == ',' ? "=2C" : "=3D", 3);
            n += 3;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
}

/* The value of attribute "k=" in a SCRAM message (k at the start or after
 * a comma), copied into out; -1 when absent or too long. */
static int scram_attr(const char *msg, char k, char *out, size_t cap)
{
    for (const char *p = msg; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (p[0] == k && p[1] == '=') {
            const char *v = p + 2;
            size_t len = strcspn(v, ",");
            if (len >= cap)
                return -1;
            memcpy(out, v, len);
            out[len] = '\0';
            return 0;
        }
    }
    return -1;
}

static int hmac(int mech, const uint8_t *key, size_t key_len, const void *data, size_t len, uint8_t *out)
{
    unsigned int out_len = 0;
    const EVP_MD *md = mech == SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256();
    return HMAC(md, key, (int)key_len, data, len, out, &out_len) ? 0 : -1;
}

enum sasl_client_step sasl_client_begin(struct sasl_client *c, const char *mechanism, const char *username,
                                        const char *password, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    const char *canonical = sasl_client_mechanism_canonical(mechanism);
    if (!canonical)
        return fail(err, errlen, "SASL mechanism %s is not served (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)", mechanism);
    if (strlen(username) >= sizeof c->username || strlen(password) >= sizeof c->password)
        return fail(err, errlen, "SASL %s: user name or password too long", canonical);
    snprintf(c->mechanism, sizeof c->mechanism, "%s", canonical);
    snprintf(c->username, sizeof c->username, "%s", username);
    snprintf(c->password, sizeof c->password, "%s", password);
    c->scram = scram_mechanism_from_name(canonical);
    if (c->scram == SCRAM_UNKNOWN) {
        /* RFC 4616: authzid (empty), authcid and password, NUL-separated. */
        size_t u = strlen(username), p = strlen(password);
        c->out[0] = '\0';
        memcpy(c->out + 1, username, u + 1);
        memcpy(c->out + 2 + u, password, p);
        c->out_len = 2 + u + p;
        return SASL_CLIENT_SEND;
    }
    uint8_t nonce_raw[24];
    if (RAND_bytes(nonce_raw, sizeof nonce_raw) != 1)
        return fail(err, errlen, "SASL %s: no random bytes for the nonce", canonical);
    scram_base64_encode(nonce_raw, sizeof nonce_raw, c->nonce);
    char user[3 * SASL_CLIENT_NAME_MAX + 1];
    scram_escape(username, user, sizeof user);
    int n = snprintf(c->first_bare, sizeof c->first_bare, "n=%s,r=%s", user, c->nonce);
    if (n < 0 || (size_t)n >= sizeof c->first_bare)
        return fail(err, errlen, "SASL %s: user name too long", canonical);
    c->out_len = (size_t)snprintf((char *)c->out, sizeof c->out, "n,,%s", c->first_bare);
    return SASL_CLIENT_SEND;
}

/* server-first-message -> client-final-message with the proof. */
static enum sasl_client_step scram_final(struct sasl_client *c, const char *server_first, char *err, size_t errlen)
{
    char snonce[512], salt_b64[4 * SCRAM_MAX_SALT], iter_text[16];
    uint8_t salt[SCRAM_MAX_SALT];
    long salt_len = -1;
    char *end = NULL;
    long iterations = 0;
    if (scram_attr(server_first, 'r', snonce, sizeof snonce) == 0 &&
        scram_attr(server_first, 'i', iter_text, sizeof iter_text) == 0)
        iterations = strtol(iter_text, &end, 10);
    if (iterations < 1 || iterations > SCRAM_MAX_ITERATIONS || !end || *end ||
        strncmp(snonce, c->nonce, strlen(c->nonce)) != 0 ||
        scram_attr(server_first, 's', salt_b64, sizeof salt_b64) < 0 ||
        (salt_len = scram_base64_decode(salt_b64, strlen(salt_b64), salt, sizeof salt)) < 0)
        return fail(err, errlen, "the server sent a bad server-first-message '%.200s'", server_first);

    size_t key_len = scram_key_len(c->scram);
    uint8_t salted[SCRAM_MAX_KEY], client_key[SCRAM_MAX_KEY], signature[SCRAM_MAX_KEY], proof[SCRAM_MAX_KEY];
    struct scram_credential cred;
    char final[SASL_CLIENT_MSG_MAX], proof_b64[4 * SCRAM_MAX_KEY / 3 + 8];
    int final_len = snprintf(final, sizeof final, "c=biws,r=%s", snonce);
    int auth_len = snprintf(c->auth_msg, sizeof c->auth_msg, "%s,%s,%s", c->first_bare, server_first, final);
    enum sasl_client_step rc = SASL_CLIENT_SEND;
    if (final_len < 0 || (size_t)final_len >= sizeof final || auth_len < 0 || (size_t)auth_len >= sizeof c->auth_msg)
        rc = fail(err, errlen, "%s", "the server-first-message is too long");
    else if (scram_salted_password(c->scram, c->password, strlen(c->password), salt, (size_t)salt_len,
                                   (int32_t)iterations, salted) != 0 ||
             scram_credential_from_salted(c->scram, salted, key_len, salt, (size_t)salt_len, (int32_t)iterations,
                                          &cred) != 0 ||
             hmac(c->scram, salted, key_len, "Client Key", 10, client_key) != 0 ||
             hmac(c->scram, cred.stored_key, key_len, c->auth_msg, (size_t)auth_len, signature) != 0)
        rc = fail(err, errlen, "%s", "key derivation failed");
    if (rc == SASL_CLIENT_SEND) {
        for (size_t i = 0; i < key_len; i++)
            proof[i] = client_key[i] ^ signature[i];
        scram_base64_encode(proof, key_len, proof_b64);
        memcpy(c->server_key, cred.server_key, key_len);
        c->out_len = (size_t)snprintf((char *)c->out, sizeof c->out, "%s,p=%s", final, proof_b64);
    }
    OPENSSL_cleanse(salted, sizeof salted);
    OPENSSL_cleanse(client_key, sizeof client_key);
    OPENSSL_cleanse(&cred, sizeof cred);
    return rc;
}

/* server-final-message: the server proves it knows the credential too. */
static enum sasl_client_step scram_verify(struct sasl_client *c, const char *server_final, char *err, size_t errlen)
{
    char verifier_b64[4 * SCRAM_MAX_KEY / 3 + 8];
    uint8_t verifier[SCRAM_MAX_KEY], expected[SCRAM_MAX_KEY];
    size_t key_len = scram_key_len(c->scram);
    if (scram_attr(server_final, 'v', verifier_b64, sizeof verifier_b64) < 0 ||
        scram_base64_decode(verifier_b64, strlen(verifier_b64), verifier, sizeof verifier) != (long)key_len ||
        hmac(c->scram, c->server_key, key_len, c->auth_msg, strlen(c->auth_msg), expected) != 0 ||
        CRYPTO_memcmp(verifier, expected, key_len) != 0)
        return fail(err, errlen, "the server did not prove it knows the credential ('%.200s')", server_final);
    return SASL_CLIENT_DONE;
}

enum sasl_client_step sasl_client_next(struct sasl_client *c, const uint8_t *in, size_t in_len, char *err,
                                       size_t errlen)
{
    c->stage++;
    if (c->scram == SCRAM_UNKNOWN)
        return c->stage == 1 ? SASL_CLIENT_DONE : fail(err, errlen, "%s", "PLAIN has one round only");
    char msg[SASL_CLIENT_MSG_MAX];
    if (in_len >= sizeof msg || memchr(in, '\0', in_len))
        return fail(err, errlen, "%s", "the server's SCRAM message is too long or holds a NUL byte");
    memcpy(msg, in, in_len);
    msg[in_len] = '\0';
    if (c->stage == 1)
        return scram_final(c, msg, err, errlen);
    if (c->stage == 2)
        return scram_verify(c, msg, err, errlen);
    return fail(err, errlen, "%s", "SCRAM has two rounds only");
}

void sasl_client_clear(struct sasl_client *c)
{
    OPENSSL_cleanse(c, sizeof *c);
}

/* ---- JAAS ---- */

#define JAAS_PLAIN "org.apache.kafka.common.security.plain.PlainLoginModule"
#define JAAS_SCRAM "org.apache.kafka.common.security.scram.ScramLoginModule"

static const char *skip_space(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* A word (up to space, '=' or ';') or a "quoted" string with \" and \\
 * escapes; NULL when it does not fit or a quote is not closed. */
static const char *jaas_token(const char *p, char *out, size_t cap)
{
    size_t n = 0;
    if (*p == '"') {
        for (p++; *p && *p != '"'; p++) {
            if (*p == '\\' && p[1])
                p++;
            if (n + 1 >= cap)
                return NULL;
            out[n++] = *p;
        }
        if (*p != '"')
            return NULL;
        p++;
    } else {
        for (; *p && !isspace((unsigned char)*p) && *p != '=' && *p != ';'; p++) {
            if (n + 1 >= cap)
                return NULL;
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return p;
}

int sasl_jaas_parse_module(const char *text, const char *module_name, struct sasl_jaas_option *opts, size_t count,
                           char *err, size_t errlen)
{
    char module[128], flag[32], key[64], value[SASL_JAAS_VALUE_MAX];
    for (size_t i = 0; i < count; i++)
        opts[i].value[0] = '\0';
    const char *p = jaas_token(skip_space(text), module, sizeof module);
    if (!p || strcmp(module, module_name) != 0)
        return -2;
    p = jaas_token(skip_space(p), flag, sizeof flag);
    if (!p || strcmp(flag, "required") != 0) {
        snprintf(err, errlen, "expected 'required' after %s", module);
        return -1;
    }
    int rc = 0;
    for (p = skip_space(p); *p && *p != ';'; p = skip_space(p)) {
        p = jaas_token(p, key, sizeof key);
        if (!p || *(p = skip_space(p)) != '=') {
            snprintf(err, errlen, "expected key=\"value\" options after 'required'");
            return -1;
        }
        const char *v = jaas_token(skip_space(p + 1), value, sizeof value);
        if (!v) {
            snprintf(err, errlen, "the value of option %s is too long or its quote is not closed", key);
            rc = -1;
            break;
        }
        p = v;
        size_t i = 0;
        while (i < count && strcmp(key, opts[i].key) != 0)
            i++;
        if (i == count) {
            char served[160] = "";
            for (size_t k = 0, used = 0; k < count && used < sizeof served; k++)
                used += (size_t)snprintf(served + used, sizeof served - used, "%s%s",
                                         k == 0           ? ""
                                         : k + 1 == count ? " and "
                                                          : ", ",
                                         opts[k].key);
            snprintf(err, errlen, "option %s is not served (only %s)", key, served);
            rc = -1;
            break;
        }
        if (strlen(value) >= opts[i].cap) {
            snprintf(err, errlen, "the value of option %s is too long", key);
            rc = -1;
            break;
        }
        snprintf(opts[i].value, opts[i].cap, "%s", value);
    }
    OPENSSL_cleanse(value, sizeof value);
    if (rc == 0 && (*p != ';' || *skip_space(p + 1))) {
        snprintf(err, errlen, "the entry must end with a single ';'");
        rc = -1;
    }
    return rc;
}

int sasl_jaas_parse(const char *text, const char *mechanism, char *username, size_t ulen, char *password, size_t plen,
                    char *err, size_t errlen)
{
    bool scram = scram_mechanism_from_name(mechanism) != SCRAM_UNKNOWN;
    const char *want = scram ? JAAS_SCRAM : JAAS_PLAIN;
    struct sasl_jaas_option opts[] = {{"username", username, ulen}, {"password", password, plen}};
    int rc = sasl_jaas_parse_module(text, want, opts, 2, err, errlen);
    if (rc == -2)
        snprintf(err, errlen,
                 "the login module must be %s for %s (only PlainLoginModule and ScramLoginModule are "
                 "served)",
                 want, mechanism);
    if (rc != 0)
        return -1;
    if (!username[0] || !password[0]) {
        snprintf(err, errlen, "username and password are both required");
        return -1;
    }
    return 0;
}

char *sasl_oauthbearer_message(const char *token, size_t *len)
{
    size_t need = strlen(token) + sizeof "n,,\x01"
                                         "auth=Bearer \x01\x01";
    char *msg = malloc(need);
    if (!msg)
        return NULL;
    *len = (size_t)snprintf(msg, need,
                            "n,,\x01"
                            "auth=Bearer %s\x01\x01",
                            token);
    return msg;
}
