/* SaslHandshake and SaslAuthenticate, the pre-authentication gate, and
 * KIP-368 re-authentication. The mechanisms themselves are in
 * sasl_mech.c (the core's SCRAM, and authentication plugins). */
#include "handlers/sasl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "handlers/handler_util.h"
#include "handlers/sasl_internal.h"
#include "net/server.h"
#include "protocol/generated/api_table.h"
#include "util/clock.h"
#include "util/logger.h"

#define API_SASL_HANDSHAKE 17
#define API_API_VERSIONS 18
#define API_SASL_AUTHENTICATE 36

static bool sasl_listener(int16_t protocol)
{
    return protocol == NET_SECURITY_SASL_PLAINTEXT || protocol == NET_SECURITY_SASL_SSL;
}

/* An exchange the client left unfinished (it closed after a challenge)
 * is a failed authentication too, audited as the user it named so far. */
static void audit_abandoned(struct sasl_conn *st)
{
    struct sasl_pending_audit *p = &st->pending;
    if (!p->host)
        return;
    struct cairn_principal who = {sizeof who, p->principal_type, p->principal_name};
    struct cairn_request_info info = {.struct_size = sizeof info,
                                      .connection_id = p->connection_id,
                                      .principal = &who,
                                      .client_host = p->client_host,
                                      .client_port = p->client_port,
                                      .client_id = p->client_id,
                                      .listener_name = p->listener_name,
                                      .security_protocol = p->security_protocol,
                                      .api_key = -1,
                                      .api_version = -1};
    plugin_host_audit_authentication(p->host, &info, st->mechanism, false,
                                     "the client closed the connection before the SASL exchange finished");
    p->host = NULL;
}

static void sasl_conn_free(void *p)
{
    struct sasl_conn *st = p;
    audit_abandoned(st);
    sasl_mech_end(st);
    free(st);
}

/* The exchange goes on past this token (or, step NULL, past the accepted
 * SaslHandshake): remember whom to audit should the client close before it
 * ends. */
static void expect_more(struct request_context *ctx, struct sasl_conn *st, const struct sasl_step *step)
{
    static const struct sasl_step none = {0};
    if (!step)
        step = &none;
    if (!ctx->env->plugins || ctx->env->plugins->audit_count == 0)
        return;
    const struct cairn_request_info *info = handler_request_info(ctx);
    struct sasl_pending_audit *p = &st->pending;
    p->host = ctx->env->plugins;
    p->connection_id = info->connection_id;
    snprintf(p->client_host, sizeof p->client_host, "%s", info->client_host);
    p->client_port = info->client_port;
    snprintf(p->client_id, sizeof p->client_id, "%s", info->client_id);
    snprintf(p->listener_name, sizeof p->listener_name, "%s", info->listener_name);
    p->security_protocol = info->security_protocol;
    snprintf(p->principal_type, sizeof p->principal_type, "%s",
             step->principal_type[0] ? step->principal_type : info->principal->type);
    snprintf(p->principal_name, sizeof p->principal_name, "%s", step->user[0] ? step->user : info->principal->name);
}

/* A connection refused before it authenticated, for something other than
 * its credentials (a request SASL does not allow at that point, a frame
 * above sasl.server.max.receive.size): one failed AUTHENTICATION event, as
 * Kafka's authenticator fails the authentication there. info is the
 * connection's (its principal: ANONYMOUS, or the session's user during a
 * re-authentication). The mechanism is the one the last SaslHandshake
 * chose, "" before any. An exchange in progress is audited here, as the
 * user it named so far, instead of when the connection goes: once. */
static void audit_refused_connection(struct plugin_host *host, struct sasl_conn *st,
                                     const struct cairn_request_info *info, const char *reason)
{
    struct cairn_request_info copy = *info;
    struct cairn_principal named;
    if (st && st->pending.host) {
        named = (struct cairn_principal){sizeof named, st->pending.principal_type, st->pending.principal_name};
        copy.principal = &named;
    }
    if (st)
        st->pending.host = NULL;
    if (host && host->audit_count > 0)
        plugin_host_audit_authentication(host, &copy, st ? st->mechanism : "", false, reason);
}

/* audit_refused_connection for a connection known only by its network
 * fields (no request decoded: no client id, api_key -1). */
static void audit_refused_peer(struct plugin_host *host, struct sasl_conn *st, uint64_t connection_id, const char *peer,
                               const char *listener_name, int16_t security_protocol, const char *principal_type,
                               const char *principal_name, const char *reason)
{
    char client_host[64];
    struct cairn_principal who = {sizeof who, principal_type ? principal_type : "User",
                                  principal_name ? principal_name : "ANONYMOUS"};
    struct cairn_request_info info = {.struct_size = sizeof info,
                                      .connection_id = connection_id,
                                      .principal = &who,
                                      .client_host = client_host,
                                      .client_id = "",
                                      .listener_name = listener_name ? listener_name : "",
                                      .security_protocol = net_security_protocol_name(security_protocol),
                                      .api_key = -1,
                                      .api_version = -1};
    handler_split_peer(peer, client_host, sizeof client_host, &info.client_port);
    audit_refused_connection(host, st, &info, reason);
}

void sasl_audit_net_refusal(void *env_arg, const struct net_auth_refusal *refusal)
{
    const struct handler_env *env = env_arg;
    if (!sasl_listener(refusal->security_protocol))
        return;
    audit_refused_peer(env->plugins, refusal->auth_state, refusal->connection_id, refusal->peer, refusal->listener_name,
                       refusal->security_protocol, refusal->principal_type, refusal->principal_name, refusal->reason);
}

static enum sasl_phase phase_of(const struct net_request *req)
{
    const struct sasl_conn *st = req->auth_state;
    return st ? st->phase : SASL_PHASE_INITIAL;
}

static void close_after(struct request_context *ctx)
{
    ctx->close_after_response = true;
}

bool sasl_gate(struct request_context *ctx)
{
    if (!sasl_listener(ctx->net->security_protocol))
        return true;
    enum sasl_phase phase = phase_of(ctx->net);
    if (phase == SASL_PHASE_AUTHENTICATED)
        return true;
    int16_t key = ctx->api_key;
    if (phase == SASL_PHASE_INITIAL) {
        if (key == API_API_VERSIONS || key == API_SASL_HANDSHAKE)
            return true;
        /* Kafka closes without an answer: the client is not speaking SASL. */
        logger_info("sasl", "closing connection from %s on %s: unexpected %s request during SASL handshake",
                    ctx->net->peer, ctx->net->listener_name, ctx->desc->name);
        char reason[160];
        snprintf(reason, sizeof reason, "unexpected %s request before SASL authentication (no SaslHandshake)",
                 ctx->desc->name);
        audit_refused_connection(ctx->env->plugins, ctx->net->auth_state, handler_request_info(ctx), reason);
        request_context_abandon(ctx, true);
        return false;
    }
    if (key == API_SASL_AUTHENTICATE)
        return true;
    /* A handshake chose a mechanism: only its tokens may follow. Kafka
     * answers ILLEGAL_SASL_STATE where the response has a top-level error
     * code, then closes. */
    logger_info("sasl", "closing connection from %s on %s: unexpected %s request during SASL authentication",
                ctx->net->peer, ctx->net->listener_name, ctx->desc->name);
    char reason[160];
    snprintf(reason, sizeof reason, "unexpected %s request during SASL authentication (SaslAuthenticate expected)",
             ctx->desc->name);
    audit_refused_connection(ctx->env->plugins, ctx->net->auth_state, handler_request_info(ctx), reason);
    if (key == API_SASL_HANDSHAKE) {
        ((struct sasl_handshake_response *)ctx->response)->error_code = KAFKA_ERR_ILLEGAL_SASL_STATE;
    } else if (key == API_API_VERSIONS) {
        ((struct api_versions_response *)ctx->response)->error_code = KAFKA_ERR_ILLEGAL_SASL_STATE;
    } else {
        request_context_abandon(ctx, true);
        return false;
    }
    close_after(ctx);
    request_context_respond(ctx);
    return false;
}

void sasl_front_dispatch(struct net_request *req, struct handler_env *env, net_request_handler next, void *next_ctx)
{
    enum sasl_phase phase = phase_of(req);
    if (!sasl_listener(req->security_protocol) || phase == SASL_PHASE_AUTHENTICATED) {
        next(req, next_ctx);
        return;
    }
    if (sasl_expects_raw_token(req)) {
        handlers_dispatch(req, env);
        return;
    }
    if (req->frame_len < 8) {
        net_request_complete(req, NULL, 0, true);
        return;
    }
    int16_t key = (int16_t)((uint16_t)req->frame[0] << 8 | req->frame[1]);
    if (key == API_API_VERSIONS && phase == SASL_PHASE_INITIAL) {
        next(req, next_ctx);
        return;
    }
    /* The gate answers an ApiVersions in the middle of an exchange. */
    if (key == API_SASL_HANDSHAKE || key == API_SASL_AUTHENTICATE || key == API_API_VERSIONS) {
        handlers_dispatch(req, env);
        return;
    }
    const struct kafka_api_desc *desc = kafka_api_lookup(key);
    logger_info("sasl", "closing connection from %s on %s: unexpected %s request before SASL authentication", req->peer,
                req->listener_name, desc ? desc->name : "unknown");
    char reason[160];
    snprintf(reason, sizeof reason, "unexpected %s request %s SASL authentication", desc ? desc->name : "unknown",
             phase == SASL_PHASE_INITIAL ? "before" : "during");
    audit_refused_peer(env->plugins, req->auth_state, req->connection_id, req->peer, req->listener_name,
                       req->security_protocol, req->principal_type, req->principal_name, reason);
    net_request_complete(req, NULL, 0, true);
}

int sasl_enabled_mechanisms(const struct broker_config *cfg, const char *listener, const char **out, int max, char *buf,
                            size_t buflen)
{
    struct config_kv *kvs = NULL;
    size_t count = 0;
    const char *override = NULL;
    if (listener && config_keys_with_prefix(cfg, "listener.name.", &kvs, &count) == 0) {
        size_t llen = strlen(listener);
        for (size_t i = 0; i < count; i++) {
            const char *k = kvs[i].key + strlen("listener.name.");
            if (strncasecmp(k, listener, llen) == 0 && strcmp(k + llen, ".sasl.enabled.mechanisms") == 0)
                override = kvs[i].value;
        }
        free(kvs);
    }
    int n = 0;
    if (override) {
        snprintf(buf, buflen, "%s", override);
        for (char *save = NULL, *tok = strtok_r(buf, ", \t", &save); tok && n < max;
             tok = strtok_r(NULL, ", \t", &save))
            out[n++] = tok;
        return n;
    }
    size_t list_len = 0;
    const char *const *list = config_get_list(cfg, "sasl.enabled.mechanisms", &list_len);
    for (size_t i = 0; i < list_len && n < max; i++)
        out[n++] = list[i];
    return n;
}

int sasl_offered_mechanisms(const struct handler_env *env, const char *listener, const char **out, int max)
{
    /* The override's copy must outlive the call: one per thread is enough,
     * as callers use the names before their next call. */
    static _Thread_local char buf[1024];
    const char *enabled[SASL_MAX_MECHANISMS];
    int n = sasl_enabled_mechanisms(env->config, listener, enabled, SASL_MAX_MECHANISMS, buf, sizeof buf);
    int k = 0;
    for (int i = 0; i < n && k < max; i++)
        if (sasl_mech_served(env, enabled[i]))
            out[k++] = enabled[i];
    return k;
}

static bool offered(const char *const *list, int n, const char *mechanism)
{
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], mechanism) == 0)
            return true;
    return false;
}

/* A SaslHandshake the broker refused (a mechanism it does not offer, a
 * re-authentication that changes mechanism) ends the client's attempt:
 * audited as a failure of the mechanism asked for, as the connection's
 * principal. */
static void audit_handshake_refusal(struct request_context *ctx, const char *mechanism, const char *reason)
{
    if (ctx->env->plugins && ctx->env->plugins->audit_count > 0)
        plugin_host_audit_authentication(ctx->env->plugins, handler_request_info(ctx), mechanism, false, reason);
}

enum handler_result handle_sasl_handshake(struct request_context *ctx, void *request, void *response)
{
    struct sasl_handshake_request *req = request;
    struct sasl_handshake_response *resp = response;
    if (!sasl_listener(ctx->net->security_protocol)) {
        resp->error_code = KAFKA_ERR_ILLEGAL_SASL_STATE;
        return HANDLER_RESPOND;
    }
    const char *list[SASL_MAX_MECHANISMS];
    int n = sasl_offered_mechanisms(ctx->env, ctx->net->listener_name, list, SASL_MAX_MECHANISMS);
    resp->mechanisms = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof *resp->mechanisms);
    if (!resp->mechanisms)
        return HANDLER_CLOSE;
    for (int i = 0; i < n; i++)
        resp->mechanisms[i] = kafka_str_from_cstr(list[i]);
    resp->mechanisms_count = n;

    char mechanism[SASL_MECHANISM_MAX];
    kafka_str_to_cstr(req->mechanism, mechanism, sizeof mechanism);
    struct sasl_conn *st = ctx->net->auth_state;
    bool reauth = st && st->phase == SASL_PHASE_AUTHENTICATED;
    if (!offered(list, n, mechanism) || (size_t)req->mechanism.len >= sizeof mechanism) {
        logger_info("sasl", "client %s on %s asked for SASL mechanism '%s', which is not enabled", ctx->net->peer,
                    ctx->net->listener_name, mechanism);
        char reason[SASL_MECHANISM_MAX + 160];
        snprintf(reason, sizeof reason, "SASL mechanism '%s' is not enabled on listener %s", mechanism,
                 ctx->net->listener_name);
        audit_handshake_refusal(ctx, mechanism, reason);
        resp->error_code = KAFKA_ERR_UNSUPPORTED_SASL_MECHANISM;
        close_after(ctx);
        return HANDLER_RESPOND;
    }
    /* KIP-368: a re-authentication keeps the mechanism, and needs the
     * SaslAuthenticate headers (v1) to carry the session lifetime. */
    if (reauth && (ctx->api_version < 1 || strcmp(st->session_mechanism, mechanism) != 0)) {
        logger_info("sasl", "client %s on %s re-authenticates with %s v%d after %s: refused", ctx->net->peer,
                    ctx->net->listener_name, mechanism, ctx->api_version, st->session_mechanism);
        char reason[2 * SASL_MECHANISM_MAX + 96];
        snprintf(reason, sizeof reason, "re-authentication with %s (SaslHandshake v%d) on a session of %s", mechanism,
                 ctx->api_version, st->session_mechanism);
        audit_handshake_refusal(ctx, mechanism, reason);
        resp->error_code = KAFKA_ERR_ILLEGAL_SASL_STATE;
        close_after(ctx);
        return HANDLER_RESPOND;
    }
    if (!st) {
        st = calloc(1, sizeof *st);
        if (!st || net_request_set_auth_state(ctx->net, st, sasl_conn_free) != 0)
            return HANDLER_CLOSE;
    }
    sasl_mech_end(st);
    snprintf(st->mechanism, sizeof st->mechanism, "%s", mechanism);
    st->handshake_version = ctx->api_version;
    st->reauthenticating = reauth;
    st->refused = false;
    st->pending.host = NULL;
    st->phase = SASL_PHASE_HANDSHAKE_DONE;
    /* The client chose a mechanism: leaving before it authenticates (a
     * GSSAPI client with no ticket sends no token at all) is a failure. */
    expect_more(ctx, st, NULL);
    if (reauth)
        net_request_begin_reauthentication(ctx->net);
    resp->error_code = KAFKA_ERR_NONE;
    return HANDLER_RESPOND;
}

/* The audit event of an exchange that ended, as the user it was for. */
static void audit(struct request_context *ctx, struct sasl_conn *st, const struct sasl_step *step, bool success,
                  const char *reason)
{
    st->pending.host = NULL; /* this exchange ends here */
    if (!ctx->env->plugins || ctx->env->plugins->audit_count == 0)
        return;
    struct cairn_request_info info = *handler_request_info(ctx);
    struct cairn_principal who = {sizeof who, step->principal_type[0] ? step->principal_type : "User",
                                  step->user[0] ? step->user : info.principal->name};
    info.principal = &who;
    plugin_host_audit_authentication(ctx->env->plugins, &info, st->mechanism, success, reason);
}

/* The exchange failed: tell the client (KIP-152), log, audit, close. */
static void fail(struct request_context *ctx, struct sasl_conn *st, const struct sasl_step *step, int16_t *error_code,
                 struct kafka_str *message)
{
    char text[sizeof step->client_message];
    if (step->client_message[0])
        snprintf(text, sizeof text, "%s", step->client_message);
    else
        snprintf(text, sizeof text, "Authentication failed during %s due to invalid credentials with SASL mechanism %s",
                 st->reauthenticating ? "re-authentication" : "authentication", st->mechanism);
    /* A refused exchange was logged and audited when it was refused. */
    if (!st->refused) {
        logger_info("sasl", "%s of '%s' with %s from %s on %s failed: %s",
                    st->reauthenticating ? "re-authentication" : "authentication", step->user, st->mechanism,
                    ctx->net->peer, ctx->net->listener_name, step->reason);
        audit(ctx, st, step, false, step->reason);
    }
    if (error_code)
        *error_code = KAFKA_ERR_SASL_AUTHENTICATION_FAILED;
    if (message)
        *message = kafka_arena_strdup(&ctx->arena, text);
    sasl_mech_end(st);
    st->phase = SASL_PHASE_FAILED;
    close_after(ctx);
    net_request_delay_response(ctx->net, config_get_int(ctx->env->config, "connection.failed.authentication.delay.ms"));
}

/* The mechanism refused the client but owes it a last challenge (RFC 7628
 * 3.2.3): the refusal is logged and audited now, so a client that closes
 * instead of answering is recorded too, and only once. */
static void refuse(struct request_context *ctx, struct sasl_conn *st, const struct sasl_step *step)
{
    logger_info("sasl", "%s of '%s' with %s from %s on %s failed: %s",
                st->reauthenticating ? "re-authentication" : "authentication", step->user, st->mechanism,
                ctx->net->peer, ctx->net->listener_name, step->reason);
    audit(ctx, st, step, false, step->reason);
    st->refused = true;
}

/* The exchange succeeded: the connection acts as the new principal from
 * its next request; returns the session lifetime (0: none), or -1 when the
 * principal cannot be taken (failed then). */
static int64_t succeed(struct request_context *ctx, struct sasl_conn *st, struct sasl_step *step)
{
    const char *type = step->principal_type[0] ? step->principal_type : "User";
    char principal[SASL_PRINCIPAL_MAX];
    snprintf(principal, sizeof principal, "%s:%s", type, step->user);
    if (st->reauthenticating && strcmp(principal, st->session_principal) != 0) {
        snprintf(step->reason, sizeof step->reason, "re-authentication as %s on a session of %s", principal,
                 st->session_principal);
        snprintf(step->client_message, sizeof step->client_message,
                 "Cannot change principals during re-authentication from %s: %s", st->session_principal, principal);
        return -1;
    }
    if (net_request_set_principal(ctx->net, type, step->user) != 0) {
        snprintf(step->reason, sizeof step->reason, "principal name too long");
        return -1;
    }
    int64_t lifetime = config_get_long(ctx->env->config, "connections.max.reauth.ms");
    if (step->lifetime_ms > 0 && (lifetime <= 0 || step->lifetime_ms < lifetime))
        lifetime = step->lifetime_ms;
    if (lifetime < 0)
        lifetime = 0;
    net_request_set_session_expiry(ctx->net, lifetime > 0 ? clock_mono_ms() + lifetime : 0);
    logger_info("sasl", "%s %s with %s from %s on %s", principal,
                st->reauthenticating ? "re-authenticated" : "authenticated", st->mechanism, ctx->net->peer,
                ctx->net->listener_name);
    audit(ctx, st, step, true, NULL);
    snprintf(st->session_principal, sizeof st->session_principal, "%s", principal);
    snprintf(st->session_mechanism, sizeof st->session_mechanism, "%s", st->mechanism);
    sasl_mech_end(st);
    st->phase = SASL_PHASE_AUTHENTICATED;
    st->reauthenticating = false;
    return lifetime;
}

/* Runs one token through the mechanism; the answer token is copied into
 * the request arena. Returns the step outcome. */
static enum sasl_step_outcome run_step(struct request_context *ctx, struct sasl_conn *st, const uint8_t *in,
                                       size_t in_len, struct sasl_step *step, struct kafka_bytes *out)
{
    memset(step, 0, sizeof *step);
    sasl_mech_step(ctx, st, in, in_len, step);
    if (st->refused && step->outcome != SASL_STEP_FAILED) {
        /* After a refusal the exchange can only end, whatever the answer. */
        if (step->outcome != SASL_STEP_REFUSED)
            step->client_message[0] = '\0';
        step->outcome = SASL_STEP_FAILED;
        snprintf(step->reason, sizeof step->reason, "the client answered a refusal");
    }
    *out = (struct kafka_bytes){NULL, 0};
    if (step->outcome != SASL_STEP_FAILED && step->out_len > 0) {
        uint8_t *copy = kafka_arena_alloc(&ctx->arena, step->out_len);
        if (!copy) {
            step->outcome = SASL_STEP_FAILED;
            snprintf(step->reason, sizeof step->reason, "out of memory");
        } else {
            memcpy(copy, step->out, step->out_len);
            *out = (struct kafka_bytes){copy, (int32_t)step->out_len};
        }
    }
    sasl_step_release(step);
    return step->outcome;
}

enum handler_result handle_sasl_authenticate(struct request_context *ctx, void *request, void *response)
{
    struct sasl_authenticate_request *req = request;
    struct sasl_authenticate_response *resp = response;
    struct sasl_conn *st = ctx->net->auth_state;
    if (!sasl_listener(ctx->net->security_protocol) || !st || st->phase != SASL_PHASE_HANDSHAKE_DONE) {
        /* KafkaApis: an authenticate outside an exchange. */
        resp->error_code = KAFKA_ERR_ILLEGAL_SASL_STATE;
        resp->error_message = kafka_str_from_cstr("SaslAuthenticate request received outside a SASL exchange");
        return HANDLER_RESPOND;
    }
    struct sasl_step step;
    enum sasl_step_outcome outcome = run_step(ctx, st, req->auth_bytes.data,
                                              req->auth_bytes.len > 0 ? (size_t)req->auth_bytes.len : 0, &step,
                                              &resp->auth_bytes);
    if (outcome == SASL_STEP_REFUSED) {
        refuse(ctx, st, &step);
        return HANDLER_RESPOND;
    }
    if (outcome == SASL_STEP_DONE) {
        int64_t lifetime = succeed(ctx, st, &step);
        if (lifetime >= 0) {
            resp->session_lifetime_ms = lifetime;
            return HANDLER_RESPOND;
        }
        resp->auth_bytes = (struct kafka_bytes){NULL, 0};
    }
    if (outcome == SASL_STEP_CONTINUE)
        expect_more(ctx, st, &step);
    else
        fail(ctx, st, &step, &resp->error_code, &resp->error_message);
    return HANDLER_RESPOND;
}

bool sasl_expects_raw_token(const struct net_request *req)
{
    const struct sasl_conn *st = req->auth_state;
    return st && st->phase == SASL_PHASE_HANDSHAKE_DONE && st->handshake_version == 0 &&
           sasl_listener(req->security_protocol);
}

void sasl_handle_raw_token(struct net_request *req, struct handler_env *env)
{
    struct request_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        net_request_complete(req, NULL, 0, true);
        return;
    }
    ctx->env = env;
    ctx->net = req;
    ctx->api_key = API_SASL_AUTHENTICATE;
    kafka_arena_init(&ctx->arena);
    struct sasl_conn *st = req->auth_state;
    struct sasl_step step;
    struct kafka_bytes token;
    enum sasl_step_outcome outcome = run_step(ctx, st, req->frame, req->frame_len, &step, &token);
    if (outcome == SASL_STEP_DONE && succeed(ctx, st, &step) < 0)
        outcome = SASL_STEP_FAILED;
    if (outcome == SASL_STEP_REFUSED)
        refuse(ctx, st, &step);
    if (outcome == SASL_STEP_CONTINUE)
        expect_more(ctx, st, &step);
    if (outcome == SASL_STEP_FAILED) {
        /* No error frame exists before SaslAuthenticate: just close. */
        fail(ctx, st, &step, NULL, NULL);
        request_context_abandon(ctx, true);
        return;
    }
    struct kafka_writer w;
    kafka_writer_init(&w, (size_t)token.len + 4);
    kafka_write_int32(&w, token.len);
    kafka_write_raw(&w, token.data, (size_t)token.len);
    if (w.failed) {
        kafka_writer_free(&w);
        request_context_abandon(ctx, true);
        return;
    }
    net_request_complete(req, &w, 0, false);
    kafka_arena_free(&ctx->arena);
    free(ctx);
}
