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
 * exchange. The messages themselves are core/sasl's client (sasl_client.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sasl/sasl_client.h"

#define ERR_UNSUPPORTED_SASL_MECHANISM 33

const char *cli_sasl_mechanism_canonical(const char *name)
{
    return sasl_client_mechanism_canonical(name);
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

/* Runs the exchange of core/sasl's client: each message it builds goes out
 * in a SaslAuthenticate round, each answer goes back in. */
static int exchange(struct cli_conn *c, int32_t node)
{
    struct sasl_client *s = malloc(sizeof *s);
    if (!s)
        return cli_fail(CLI_EXIT_USAGE, "out of memory");
    char err[300], answer[SASL_CLIENT_MSG_MAX];
    int rc = 0;
    enum sasl_client_step step = sasl_client_start(s, c->sasl_mechanism, c->sasl_username, c->sasl_password, err,
                                                   sizeof(err));
    while (step == SASL_CLIENT_SEND) {
        rc = authenticate_round(c, node, s->out, s->out_len, answer, sizeof(answer));
        if (rc)
            break;
        step = sasl_client_next(s, (const uint8_t *)answer, strlen(answer), err, sizeof(err));
    }
    if (rc == 0 && step == SASL_CLIENT_FAILED)
        rc = cli_fail(CLI_EXIT_KAFKA, "SASL %s: %s", c->sasl_mechanism, err);
    sasl_client_clear(s);
    free(s);
    return rc;
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
        rc = exchange(c, node);
    }
    if (rc == 0 && slot && net_client_node_stats(c->client, node, &st) == 0)
        slot->connections = st.connections;
    return rc;
}
