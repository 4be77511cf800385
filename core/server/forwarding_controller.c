/* The controller's side of forwarding (KIP-590): an Envelope from a
 * broker, its inner request run through the same API handler a broker
 * runs, as the principal the broker authenticated, and the encoded answer
 * returned inside the EnvelopeResponse. A controller that is not the
 * active one answers the Envelope itself with NOT_CONTROLLER, as Kafka's
 * does. The broker's side, which wraps and sends the requests (and sends
 * them again on NOT_CONTROLLER), is forwarding.c. */
#include "server/forwarding.h"
#include "server/forwarding_internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "handlers/handlers.h"
#include "metadata/metadata_store.h"
#include "plugin/plugin_host.h"
#include "protocol/generated/api_table.h"
#include "protocol/generated/envelope_request.h"
#include "protocol/generated/envelope_response.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/request_header.h"
#include "util/logger.h"

#define LOG "forwarding"

/* Read-only after start. */
struct controller_forwarding {
    struct handler_env env;
    struct handler_env own_env; /* a broker's own requests: no plugins */
};

int controller_forwarding_start(const struct broker_config *cfg, struct metadata_store *store,
                                struct plugin_host *plugins, struct controller_forwarding **out, char *err,
                                size_t errlen)
{
    *out = NULL;
    struct controller_forwarding *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    f->env.config = cfg;
    f->env.metadata = store;
    f->env.plugins = plugins;
    f->env.node_id = config_node_id(cfg);
    f->env.default_num_partitions = config_get_int(cfg, "num.partitions");
    f->env.default_replication_factor = (int16_t)config_get_int(cfg, "default.replication.factor");
    f->own_env = f->env;
    f->own_env.plugins = NULL;
    *out = f;
    return 0;
}

void controller_forwarding_stop(struct controller_forwarding *f)
{
    free(f);
}

/* Runs the inner request through its handler and encodes its response
 * (header and body) into w. Returns 0, or -1 with a reason logged. */
static int run_inner(struct controller_forwarding *f, const struct envelope_request *env_req, const char *peer,
                     struct kafka_writer *w)
{
    const uint8_t *frame = env_req->request_data.data;
    size_t len = env_req->request_data.len > 0 ? (size_t)env_req->request_data.len : 0;
    if (len < 8)
        return -1;
    int16_t key = forwarding_be16(frame);
    int16_t version = forwarding_be16(frame + 2);
    const struct api_handler_entry *entry = handlers_find(key);
    const struct kafka_api_desc *desc = kafka_api_lookup(key);
    if (!forwarding_api_forwarded(key) || !entry || !desc || version < entry->min_version ||
        version > entry->max_version) {
        logger_warn(LOG, "%s forwarded API %d v%d, which is not forwarded here", peer, key, version);
        return -1;
    }
    char ptype[64], pname[256];
    if (forwarding_read_principal(env_req->request_principal, ptype, sizeof ptype, pname, sizeof pname) != 0) {
        logger_warn(LOG, "%s forwarded a request with an unreadable principal", peer);
        return -1;
    }
    char client[64] = "unknown";
    const struct kafka_bytes *a = &env_req->client_host_address;
    if (a->len == 4 || a->len == 16) {
        char host[INET6_ADDRSTRLEN];
        if (inet_ntop(a->len == 4 ? AF_INET : AF_INET6, a->data, host, sizeof host))
            snprintf(client, sizeof client, a->len == 4 ? "%s:0" : "[%s]:0", host);
    }
    /* The inner request as if it had come on a connection of its own: the
     * handlers read the peer and the principal from it; nothing completes
     * it (the Envelope's request is completed instead). */
    struct net_request inner = {
        .listener_name = "",
        .security_protocol = NET_SECURITY_PLAINTEXT,
        .principal_type = ptype,
        .principal_name = pname,
        .frame = (uint8_t *)frame,
        .frame_len = len,
    };
    snprintf(inner.peer, sizeof inner.peer, "%s", client);
    struct request_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return -1;
    ctx->env = strcmp(ptype, FORWARDING_OWN_PRINCIPAL_TYPE) == 0 ? &f->own_env : &f->env;
    ctx->net = &inner;
    ctx->api_key = key;
    ctx->api_version = version;
    ctx->desc = desc;
    kafka_arena_init(&ctx->arena);
    int rc = -1;
    struct kafka_reader r;
    kafka_reader_init(&r, frame, len);
    struct request_header header;
    request_header_init(&header);
    if (request_header_decode(&header, &r, kafka_request_header_version(key, version), &ctx->arena) != 0)
        goto out;
    ctx->correlation_id = header.correlation_id;
    kafka_str_to_cstr(header.client_id, ctx->client_id, sizeof ctx->client_id);
    ctx->request = kafka_arena_alloc(&ctx->arena, desc->request_size_of);
    ctx->response = kafka_arena_alloc(&ctx->arena, desc->response_size_of);
    if (!ctx->request || !ctx->response)
        goto out;
    desc->request_init(ctx->request);
    desc->response_init(ctx->response);
    if (desc->request_decode(ctx->request, &r, version, &ctx->arena) != 0) {
        logger_warn(LOG, "malformed forwarded %s v%d from %s: %s", desc->name, version, peer, r.error);
        goto out;
    }
    /* The forwarded APIs answer before they return (none defers). */
    if (entry->handler(ctx, ctx->request, ctx->response) != HANDLER_RESPOND)
        goto out;
    kafka_write_int32(w, ctx->correlation_id);
    if (kafka_response_header_version(key, version) >= 1)
        kafka_write_uvarint(w, 0);
    rc = desc->response_encode(ctx->response, w, version) != 0 || w->failed ? -1 : 0;
out:
    kafka_arena_free(&ctx->arena);
    free(ctx);
    return rc;
}

/* As Kafka: only a broker (CLUSTER_ACTION on the cluster, as the
 * principal of the Envelope's own connection) may forward requests. */
static bool sender_may_forward(struct controller_forwarding *f, struct net_request *req, int16_t version)
{
    if (!f->env.plugins || f->env.plugins->authorizer_count == 0)
        return true;
    struct request_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return false;
    ctx->env = &f->env;
    ctx->net = req;
    ctx->api_key = FORWARDING_API_ENVELOPE;
    ctx->api_version = version;
    ctx->desc = kafka_api_lookup(FORWARDING_API_ENVELOPE);
    kafka_arena_init(&ctx->arena);
    bool allowed = handler_authorize_one(ctx, CAIRN_OP_CLUSTER_ACTION, CAIRN_RESOURCE_CLUSTER,
                                         HANDLER_CLUSTER_RESOURCE);
    kafka_arena_free(&ctx->arena);
    free(ctx);
    return allowed;
}

/* A leader still applying its log counts as active: its operations wait
 * for the log (metadata_controller_lock) rather than refuse. */
static bool controller_active(const struct controller_forwarding *f)
{
    return metadata_store_is_controller(f->env.metadata) || metadata_store_catching_up(f->env.metadata);
}

void controller_forwarding_serve(void *arg, struct net_request *req)
{
    struct controller_forwarding *f = arg;
    if (req->frame_len < 8) {
        net_request_complete(req, NULL, 0, true);
        return;
    }
    int16_t version = forwarding_be16(req->frame + 2);
    const struct kafka_api_desc *desc = kafka_api_lookup(FORWARDING_API_ENVELOPE);
    struct kafka_reader r;
    kafka_reader_init(&r, req->frame, req->frame_len);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct request_header header;
    request_header_init(&header);
    struct envelope_request in;
    envelope_request_init(&in);
    int16_t header_version = kafka_request_header_version(FORWARDING_API_ENVELOPE, version);
    if (!desc || version < desc->min_version || version > desc->max_version || header_version < 0 ||
        request_header_decode(&header, &r, header_version, &arena) != 0 ||
        envelope_request_decode(&in, &r, version, &arena) != 0) {
        logger_warn(LOG, "malformed Envelope v%d from %s; closing", version, req->peer);
        kafka_arena_free(&arena);
        net_request_complete(req, NULL, 0, true);
        return;
    }
    struct envelope_response out;
    envelope_response_init(&out);
    struct kafka_writer inner;
    kafka_writer_init(&inner, 256);
    if (!sender_may_forward(f, req, version)) {
        logger_warn(LOG, "%s (%s:%s) may not forward requests: no CLUSTER_ACTION on the cluster", req->peer,
                    req->principal_type ? req->principal_type : "User",
                    req->principal_name ? req->principal_name : "ANONYMOUS");
        out.error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
    } else if (!controller_active(f)) {
        /* As Kafka: the Envelope itself is refused, its request not run,
         * so the forwarding broker sends it again to the new leader
         * instead of handing the client the inner NOT_CONTROLLER. */
        logger_debug(LOG, "Envelope from %s refused: this node is not the active controller", req->peer);
        out.error_code = KAFKA_ERR_NOT_CONTROLLER;
    } else if (run_inner(f, &in, req->peer, &inner) == 0 && !inner.failed && kafka_writer_flatten(&inner) == 0)
        out.response_data = (struct kafka_bytes){inner.buf, (int32_t)inner.len};
    else
        out.error_code = KAFKA_ERR_INVALID_REQUEST;
    struct kafka_writer w;
    kafka_writer_init(&w, 256 + inner.len);
    size_t size_at = kafka_writer_reserve(&w, 4);
    kafka_write_int32(&w, header.correlation_id);
    if (kafka_response_header_version(FORWARDING_API_ENVELOPE, version) >= 1)
        kafka_write_uvarint(&w, 0);
    bool ok = envelope_response_encode(&out, &w, version) == 0 && !w.failed;
    if (ok)
        kafka_writer_patch_int32(&w, size_at, (int32_t)(kafka_writer_total_len(&w) - 4));
    net_request_complete(req, ok ? &w : NULL, 0, !ok);
    kafka_writer_free(&w);
    kafka_writer_free(&inner);
    kafka_arena_free(&arena);
}
