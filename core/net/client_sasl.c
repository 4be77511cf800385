/* SASL on the outbound client's connections: after ApiVersions, a
 * SaslHandshake v1 naming cfg.sasl_mechanism, then SaslAuthenticate rounds
 * carrying the messages of sasl/sasl_client.h, all as the connection's own
 * requests, so nothing a caller queued goes out before the connection is
 * authenticated. Any refusal fails the connection (backoff) and is logged
 * once per run of failures at powers of two, as TLS refusals are. A
 * session lifetime the broker grants (connections.max.reauth.ms) is met by
 * reconnecting between requests before it ends (client_node_kick).
 * OAUTHBEARER (RFC 7628) sends the token cfg.sasl_token hands over in
 * Kafka's initial client response; a server's error challenge is answered
 * with %x01, as the RFC asks, and its refusal follows.
 * Everything here runs on the client's loop thread. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/client_internal.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/sasl_authenticate_request.h"
#include "protocol/generated/sasl_authenticate_response.h"
#include "protocol/generated/sasl_handshake_request.h"
#include "protocol/generated/sasl_handshake_response.h"
#include "sasl/sasl_client.h"
#include "util/logger.h"

#define SASL_HANDSHAKE_KEY 17
#define SASL_AUTHENTICATE_KEY 36
#define SASL_AUTHENTICATE_MAX_VERSION 2

/* Fails the connection, with a warning when the failures in a row reach
 * 1, 2, 4, 8... (a wrong password retried with backoff would flood), and
 * the calls waiting for the node with AUTH_FAILED, code and detail (the
 * node's message) in their result. */
static void auth_refused(struct client_node *n, int16_t code, const char *detail, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void auth_refused(struct client_node *n, int16_t code, const char *detail, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    const struct net_client_config *cfg = &n->client->cfg;
    uint32_t in_a_row = n->failures + 1;
    if (cfg->sasl_link[0] && (in_a_row & (in_a_row - 1)) == 0)
        logger_warn("sasl", "%s link: SASL %s authentication as %s with %s:%d failed: %s (%u failed in a row)",
                    cfg->sasl_link, cfg->sasl_mechanism, cfg->sasl_username, n->host, n->port, why, in_a_row);
    client_node_failed(n, "SASL %s authentication failed: %.200s", cfg->sasl_mechanism, why);
    for (struct client_call *call; (call = client_list_pop(&n->waiting));) {
        call->auth_error = code;
        client_call_finish(call, NET_CLIENT_AUTH_FAILED, -1, "%s", detail ? detail : why);
    }
}

#define auth_failed(n, ...) auth_refused((n), -1, NULL, __VA_ARGS__)

static bool is_oauthbearer(const struct net_client_config *cfg)
{
    return strcmp(cfg->sasl_mechanism, "OAUTHBEARER") == 0;
}

static bool is_gssapi(const struct net_client_config *cfg)
{
    return strcmp(cfg->sasl_mechanism, "GSSAPI") == 0;
}

void client_sasl_end(struct client_node *n)
{
    client_gssapi_free(n->gssapi);
    n->gssapi = NULL;
    n->gssapi_sent_last = false;
    if (n->sasl_msg) {
        memset(n->sasl_msg, 0, n->sasl_msg_len);
        free(n->sasl_msg);
        n->sasl_msg = NULL;
    }
    if (n->sasl) {
        sasl_client_clear(n->sasl);
        free(n->sasl);
        n->sasl = NULL;
    }
}

void client_sasl_start(struct client_node *n)
{
    const struct net_client_config *cfg = &n->client->cfg;
    n->state = CLIENT_NODE_AUTHENTICATING;
    if (n->api_max[SASL_HANDSHAKE_KEY] < 1 || n->api_max[SASL_AUTHENTICATE_KEY] < 0) {
        auth_failed(n, "the listener does not serve SaslHandshake v1 and SaslAuthenticate (is it a SASL listener?)");
        return;
    }
    n->sasl = malloc(sizeof *n->sasl);
    if (!n->sasl) {
        client_node_failed(n, "out of memory");
        return;
    }
    struct sasl_handshake_request req;
    sasl_handshake_request_init(&req);
    req.mechanism = kafka_str_from_cstr(cfg->sasl_mechanism);
    client_node_send_internal(n, SASL_HANDSHAKE_KEY, 1, &req);
}

static void send_authenticate(struct client_node *n, const uint8_t *bytes, size_t len)
{
    int16_t version = n->api_max[SASL_AUTHENTICATE_KEY];
    if (version > SASL_AUTHENTICATE_MAX_VERSION)
        version = SASL_AUTHENTICATE_MAX_VERSION;
    struct sasl_authenticate_request req;
    sasl_authenticate_request_init(&req);
    static const uint8_t empty[1];
    req.auth_bytes = (struct kafka_bytes){bytes ? bytes : empty, (int32_t)len};
    client_node_send_internal(n, SASL_AUTHENTICATE_KEY, version, &req);
}

static void on_handshake(struct client_node *n, const struct sasl_handshake_response *r)
{
    const struct net_client_config *cfg = &n->client->cfg;
    if (r->error_code != KAFKA_ERR_NONE) {
        char enabled[256] = "";
        size_t used = 0;
        for (int32_t i = 0; i < r->mechanisms_count && used + 2 < sizeof enabled; i++)
            used += (size_t)snprintf(enabled + used, sizeof enabled - used, "%s%.*s", i ? "," : "",
                                     r->mechanisms[i].data && r->mechanisms[i].len > 0 ? (int)r->mechanisms[i].len : 0,
                                     r->mechanisms[i].data ? r->mechanisms[i].data : "");
        auth_refused(n, r->error_code, enabled, "SaslHandshake error %d: the listener enables %s", r->error_code,
                     r->mechanisms_count > 0 ? enabled : "no mechanism");
        return;
    }
    char err[300];
    if (is_gssapi(cfg)) {
        const uint8_t *tok = NULL;
        size_t len = 0;
        int rc = client_gssapi_start(cfg->sasl_kerberos_service, n->host, &n->gssapi, &tok, &len, err, sizeof err);
        if (rc < 0) {
            auth_failed(n, "%s", err);
            return;
        }
        n->gssapi_sent_last = rc == 0;
        send_authenticate(n, tok, len);
        return;
    }
    if (is_oauthbearer(cfg)) {
        /* The token source never waits on the network: it hands over the
         * token it holds, or says why it has none. */
        char *token = NULL;
        if (!cfg->sasl_token || cfg->sasl_token(cfg->sasl_token_ctx, &token, err, sizeof err) != 0) {
            auth_failed(n, "%s", cfg->sasl_token ? err : "no token source for OAUTHBEARER");
            return;
        }
        memset(n->sasl, 0, sizeof *n->sasl);
        n->sasl_msg = (uint8_t *)sasl_oauthbearer_message(token, &n->sasl_msg_len);
        memset(token, 0, strlen(token));
        free(token);
        if (!n->sasl_msg) {
            client_node_failed(n, "out of memory");
            return;
        }
        send_authenticate(n, n->sasl_msg, n->sasl_msg_len);
        return;
    }
    if (sasl_client_begin(n->sasl, cfg->sasl_mechanism, cfg->sasl_username, cfg->sasl_password, err, sizeof err) !=
        SASL_CLIENT_SEND) {
        auth_failed(n, "%s", err);
        return;
    }
    send_authenticate(n, n->sasl->out, n->sasl->out_len);
}

/* OAUTHBEARER's answer: empty when the token is taken; otherwise the
 * server's error challenge, answered with %x01 (its refusal comes next). */
static enum sasl_client_step oauthbearer_next(struct client_node *n, const uint8_t *in, size_t len, char *err,
                                              size_t errlen)
{
    if (n->sasl->stage++ == 0 && len == 0)
        return SASL_CLIENT_DONE;
    if (n->sasl->stage == 1) {
        static const uint8_t ack[1] = {0x01};
        send_authenticate(n, ack, 1);
        return SASL_CLIENT_SEND;
    }
    snprintf(err, errlen, "the server answered %%x01 without refusing: '%.*s'", (int)(len > 200 ? 200 : len),
             (const char *)in);
    return SASL_CLIENT_FAILED;
}

static void on_authenticate(struct client_node *n, const struct sasl_authenticate_response *r)
{
    if (r->error_code != KAFKA_ERR_NONE) {
        char msg[300];
        snprintf(msg, sizeof msg, "%.*s",
                 r->error_message.data && r->error_message.len > 0 ? (int)r->error_message.len : 0,
                 r->error_message.data ? r->error_message.data : "");
        auth_refused(n, r->error_code, msg, "error %d: %s", r->error_code, msg);
        return;
    }
    char err[300];
    size_t len = r->auth_bytes.len > 0 ? (size_t)r->auth_bytes.len : 0;
    enum sasl_client_step step;
    if (n->gssapi) {
        /* Done once the server accepts the last token; else the next one. */
        if (n->gssapi_sent_last) {
            step = SASL_CLIENT_DONE;
        } else {
            const uint8_t *tok = NULL;
            size_t tlen = 0;
            int rc = client_gssapi_step(n->gssapi, r->auth_bytes.data, len, &tok, &tlen, err, sizeof err);
            if (rc >= 0) {
                n->gssapi_sent_last = rc == 0;
                send_authenticate(n, tok, tlen);
                return;
            }
            step = SASL_CLIENT_FAILED;
        }
    } else if (is_oauthbearer(&n->client->cfg)) {
        step = oauthbearer_next(n, r->auth_bytes.data, len, err, sizeof err);
        if (step == SASL_CLIENT_SEND)
            return;
    } else {
        step = sasl_client_next(n->sasl, r->auth_bytes.data, len, err, sizeof err);
    }
    if (step == SASL_CLIENT_SEND) {
        send_authenticate(n, n->sasl->out, n->sasl->out_len);
    } else if (step == SASL_CLIENT_DONE) {
        /* KIP-368: reconnect at 85% of the lifetime the broker grants. */
        if (r->session_lifetime_ms > 0)
            n->session_end_ms = client_now_ms() + r->session_lifetime_ms * 85 / 100;
        client_sasl_end(n);
        client_node_ready(n);
    } else {
        auth_failed(n, "%s", err);
    }
}

void client_sasl_on_response(struct client_node *n, int16_t api_key, int16_t version, const uint8_t *body, size_t len)
{
    if (n->state != CLIENT_NODE_AUTHENTICATING || !n->sasl) {
        client_node_failed(n, "unexpected SASL response");
        return;
    }
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct kafka_reader rd;
    kafka_reader_init(&rd, body, len);
    if (api_key == SASL_HANDSHAKE_KEY) {
        struct sasl_handshake_response r;
        if (sasl_handshake_response_decode(&r, &rd, version, &arena) != 0)
            client_node_failed(n, "malformed SaslHandshake v%d response: %s", version, rd.error);
        else
            on_handshake(n, &r);
    } else {
        struct sasl_authenticate_response r;
        if (sasl_authenticate_response_decode(&r, &rd, version, &arena) != 0)
            client_node_failed(n, "malformed SaslAuthenticate v%d response: %s", version, rd.error);
        else
            on_authenticate(n, &r);
    }
    kafka_arena_free(&arena);
}
