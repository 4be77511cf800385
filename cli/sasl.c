/* SASL on the tool's connections (security.protocol=sasl_plaintext or
 * sasl_ssl): SaslHandshake v1 then SaslAuthenticate, right after the
 * outbound client's ApiVersions, on every connection the tool opens.
 *
 * The outbound client opens connections lazily and knows nothing of SASL,
 * so authentication runs from cli_call's side: before a request goes to a
 * node, the node's connection counter (net_client_node_stats) is compared
 * with the one last authenticated; a new (or lost) connection is
 * authenticated first. This is sound because the tool has one request in
 * flight at a time, so nothing else can use a fresh connection before the
 * exchange. SCRAM's key derivation is core/sasl's (the server's half). */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "sasl/scram.h"

#define ERR_UNSUPPORTED_SASL_MECHANISM 33

/* The mechanisms the tool speaks, in the order docs/cli.md lists them. */
static const char *const mechanisms[] = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};

const char *cli_sasl_mechanism_canonical(const char *name)
{
    for (size_t i = 0; i < sizeof(mechanisms) / sizeof(mechanisms[0]); i++)
        if (strcasecmp(name, mechanisms[i]) == 0)
            return mechanisms[i];
    return NULL;
}

static int build_handshake(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    (void)version;
    (void)a;
    ((struct sasl_handshake_request *)req)->mechanism = kafka_str_from_cstr(ctx);
    return 0;
}

struct auth_bytes {
    const uint8_t *data;
    size_t len;
};

static int build_authenticate(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    (void)version;
    (void)a;
    const struct auth_bytes *b = ctx;
    ((struct sasl_authenticate_request *)req)->auth_bytes = (struct kafka_bytes){b->data, (int32_t)b->len};
    return 0;
}

/* One SaslAuthenticate round: sends out, copies the broker's answer into
 * in (NUL-terminated, at most cap-1 bytes). Returns 0 or an exit code
 * (message printed). */
static int authenticate_round(struct cli_conn *c, int32_t node, const void *out, size_t out_len, char *in, size_t cap)
{
    struct auth_bytes b = {out, out_len};
    struct cli_reply r;
    int rc = cli_call_raw(c, node, KAFKA_API_KEY_SASL_AUTHENTICATE, 1, build_authenticate, &b, &r);
    if (rc)
        return rc;
    const struct sasl_authenticate_response *m = r.response;
    if (m->error_code != 0) {
        char what[400];
        snprintf(what, sizeof(what), "SASL %s authentication of user '%s' failed", c->sasl_mechanism, c->sasl_username);
        rc = cli_kafka_fail(m->error_code, m->error_message, what,
                            "check sasl.username, sasl.password and sasl.mechanism");
    } else if (in) {
        int32_t n = m->auth_bytes.len < 0 ? 0 : m->auth_bytes.len;
        if ((size_t)n >= cap) {
            rc = cli_fail(CLI_EXIT_KAFKA, "SASL answer from the broker is too long (%d bytes)", (int)n);
        } else {
            if (n)
                memcpy(in, m->auth_bytes.data, (size_t)n);
            in[n] = '\0';
        }
    }
    cli_reply_free(&r);
    return rc;
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

#define SCRAM_MSG_MAX 2048

/* RFC 5802's client: client-first, server-first, client-final with the
 * proof, then the server's signature is checked. */
static int scram_exchange(struct cli_conn *c, int32_t node, int mech)
{
    uint8_t nonce_raw[24];
    char nonce[40], user[3 * 256 + 1];
    if (RAND_bytes(nonce_raw, sizeof(nonce_raw)) != 1)
        return cli_fail(CLI_EXIT_USAGE, "no random bytes for the SCRAM nonce");
    scram_base64_encode(nonce_raw, sizeof(nonce_raw), nonce);
    scram_escape(c->sasl_username, user, sizeof(user));

    char first[SCRAM_MSG_MAX], server_first[SCRAM_MSG_MAX];
    int first_len = snprintf(first, sizeof(first), "n,,n=%s,r=%s", user, nonce);
    int rc = authenticate_round(c, node, first, (size_t)first_len, server_first, sizeof(server_first));
    if (rc)
        return rc;

    char snonce[512], salt_b64[4 * SCRAM_MAX_SALT], iter_text[16];
    uint8_t salt[SCRAM_MAX_SALT];
    long long iterations;
    long salt_len = -1;
    if (scram_attr(server_first, 'r', snonce, sizeof(snonce)) < 0 ||
        scram_attr(server_first, 's', salt_b64, sizeof(salt_b64)) < 0 ||
        scram_attr(server_first, 'i', iter_text, sizeof(iter_text)) < 0 || strncmp(snonce, nonce, strlen(nonce)) != 0 ||
        (salt_len = scram_base64_decode(salt_b64, strlen(salt_b64), salt, sizeof(salt))) < 0 ||
        cli_parse_int(iter_text, 1, SCRAM_MAX_ITERATIONS, &iterations) < 0)
        return cli_fail(CLI_EXIT_KAFKA, "SASL %s: the broker sent a bad server-first-message '%s'", c->sasl_mechanism,
                        server_first);

    size_t key_len = scram_key_len(mech);
    uint8_t salted[SCRAM_MAX_KEY], client_key[SCRAM_MAX_KEY], signature[SCRAM_MAX_KEY], proof[SCRAM_MAX_KEY];
    struct scram_credential cred;
    char final[SCRAM_MSG_MAX], auth_msg[3 * SCRAM_MSG_MAX], proof_b64[4 * SCRAM_MAX_KEY / 3 + 8];
    int final_len = snprintf(final, sizeof(final), "c=biws,r=%s", snonce);
    int auth_len = snprintf(auth_msg, sizeof(auth_msg), "%s,%s,%s", first + 3, server_first, final);
    if (scram_salted_password(mech, c->sasl_password, strlen(c->sasl_password), salt, (size_t)salt_len,
                              (int32_t)iterations, salted) != 0 ||
        scram_credential_from_salted(mech, salted, key_len, salt, (size_t)salt_len, (int32_t)iterations, &cred) != 0 ||
        hmac(mech, salted, key_len, "Client Key", 10, client_key) != 0 ||
        hmac(mech, cred.stored_key, key_len, auth_msg, (size_t)auth_len, signature) != 0)
        return cli_fail(CLI_EXIT_USAGE, "SASL %s: key derivation failed", c->sasl_mechanism);
    for (size_t i = 0; i < key_len; i++)
        proof[i] = client_key[i] ^ signature[i];
    scram_base64_encode(proof, key_len, proof_b64);
    final_len += snprintf(final + final_len, sizeof(final) - (size_t)final_len, ",p=%s", proof_b64);

    char server_final[SCRAM_MSG_MAX], verifier_b64[4 * SCRAM_MAX_KEY / 3 + 8];
    uint8_t verifier[SCRAM_MAX_KEY], expected[SCRAM_MAX_KEY];
    rc = authenticate_round(c, node, final, (size_t)final_len, server_final, sizeof(server_final));
    if (rc)
        return rc;
    /* The broker proves it knows the credential too (ServerSignature). */
    if (scram_attr(server_final, 'v', verifier_b64, sizeof(verifier_b64)) < 0 ||
        scram_base64_decode(verifier_b64, strlen(verifier_b64), verifier, sizeof(verifier)) != (long)key_len ||
        hmac(mech, cred.server_key, key_len, auth_msg, (size_t)auth_len, expected) != 0 ||
        CRYPTO_memcmp(verifier, expected, key_len) != 0)
        return cli_fail(CLI_EXIT_KAFKA, "SASL %s: the broker did not prove it knows the credential ('%s')",
                        c->sasl_mechanism, server_final);
    return 0;
}

/* RFC 4616: authzid (empty), authcid and password, NUL-separated. */
static int plain_exchange(struct cli_conn *c, int32_t node)
{
    char msg[2 + sizeof(c->sasl_username) + sizeof(c->sasl_password)];
    size_t u = strlen(c->sasl_username), p = strlen(c->sasl_password);
    msg[0] = '\0';
    memcpy(msg + 1, c->sasl_username, u + 1);
    memcpy(msg + 2 + u, c->sasl_password, p);
    return authenticate_round(c, node, msg, 2 + u + p, NULL, 0);
}

static int handshake(struct cli_conn *c, int32_t node)
{
    struct cli_reply r;
    int rc = cli_call_raw(c, node, KAFKA_API_KEY_SASL_HANDSHAKE, 1, build_handshake, c->sasl_mechanism, &r);
    if (rc)
        return rc;
    const struct sasl_handshake_response *m = r.response;
    if (m->error_code != 0) {
        char enabled[512] = "";
        size_t n = 0;
        for (int32_t i = 0; i < m->mechanisms_count && n + 2 < sizeof(enabled); i++)
            n += (size_t)snprintf(enabled + n, sizeof(enabled) - n, "%s%s", i ? "," : "", cli_str(m->mechanisms[i]));
        char what[700];
        snprintf(what, sizeof(what), "the broker does not enable SASL mechanism %s (it enables: %s)", c->sasl_mechanism,
                 m->mechanisms_count > 0 ? enabled : "none");
        rc = cli_kafka_fail(m->error_code, (struct kafka_str){NULL, -1}, what,
                            m->error_code == ERR_UNSUPPORTED_SASL_MECHANISM ? "set sasl.mechanism to one of those"
                                                                            : "check security.protocol");
    }
    cli_reply_free(&r);
    return rc;
}

/* Where the node's authenticated connection count is kept; NULL when the
 * table is full (then every request re-checks and re-authenticates). */
static struct cli_sasl_node *node_slot(struct cli_conn *c, int32_t node)
{
    for (int i = 0; i < c->sasl_nodes_count; i++)
        if (c->sasl_nodes[i].node_id == node)
            return &c->sasl_nodes[i];
    if (c->sasl_nodes_count == CLI_SASL_MAX_NODES)
        return NULL;
    struct cli_sasl_node *s = &c->sasl_nodes[c->sasl_nodes_count++];
    s->node_id = node;
    s->connections = 0;
    return s;
}

int cli_sasl_ensure(struct cli_conn *c, int32_t node)
{
    if (!c->sasl_mechanism[0])
        return 0;
    struct net_client_node_stats st;
    struct cli_sasl_node *slot = node_slot(c, node);
    if (slot && net_client_node_stats(c->client, node, &st) == 0 && st.ready && st.connections == slot->connections)
        return 0;
    int rc = handshake(c, node);
    if (rc == 0) {
        int mech = scram_mechanism_from_name(c->sasl_mechanism);
        rc = mech == SCRAM_UNKNOWN ? plain_exchange(c, node) : scram_exchange(c, node, mech);
    }
    if (rc == 0 && slot && net_client_node_stats(c->client, node, &st) == 0)
        slot->connections = st.connections;
    return rc;
}
