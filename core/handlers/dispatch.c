/* Frame -> handler -> response, for every request. */
#include <stdlib.h>
#include <string.h>

#include "handlers/handlers.h"
#include "handlers/pipeline.h"
#include "handlers/sasl.h"
#include "net/server.h"
#include "util/clock.h"
#include "util/logger.h"

#define API_KEY_API_VERSIONS 18

static const struct api_handler_entry handler_table[] = {
    /* Produce from v0: clients such as librdkafka 2.0 only compress when
     * v0 is in range; v0-v2 requests with old message formats are refused
     * per partition with UNSUPPORTED_FOR_MESSAGE_FORMAT. */
    {0, 0, 11, handle_produce},
    {1, 4, 17, handle_fetch},
    {2, 1, 10, handle_list_offsets},
    {3, 0, 12, handle_metadata},
    {8, 0, 9, handle_offset_commit},
    {9, 0, 9, handle_offset_fetch},
    {10, 0, 5, handle_find_coordinator},
    {11, 0, 9, handle_join_group},
    {12, 0, 4, handle_heartbeat},
    {13, 0, 5, handle_leave_group},
    {14, 0, 5, handle_sync_group},
    {15, 0, 5, handle_describe_groups},
    {16, 0, 5, handle_list_groups},
    {17, 0, 1, handle_sasl_handshake},
    {18, 0, 4, handle_api_versions},
    {19, 2, 7, handle_create_topics},
    {20, 1, 6, handle_delete_topics},
    {21, 0, 2, handle_delete_records},
    {22, 0, 5, handle_init_producer_id},
    {23, 0, 4, handle_offset_for_leader_epoch},
    {24, 0, 5, handle_add_partitions_to_txn},
    {25, 0, 4, handle_add_offsets_to_txn},
    /* EndTxn v5 (an epoch bump on every transaction) is not served. */
    {26, 0, 4, handle_end_txn},
    {27, 0, 1, handle_write_txn_markers},
    {28, 0, 4, handle_txn_offset_commit},
    {29, 0, 3, handle_describe_acls},
    {30, 0, 3, handle_create_acls},
    {31, 0, 3, handle_delete_acls},
    {32, 1, 4, handle_describe_configs},
    {33, 0, 2, handle_alter_configs},
    {35, 0, 4, handle_describe_log_dirs},
    {36, 0, 2, handle_sasl_authenticate},
    {37, 0, 3, handle_create_partitions},
    {42, 0, 2, handle_delete_groups},
    {43, 0, 2, handle_elect_leaders},
    {44, 0, 1, handle_incremental_alter_configs},
    {45, 0, 1, handle_alter_partition_reassignments},
    {46, 0, 0, handle_list_partition_reassignments},
    {47, 0, 0, handle_offset_delete},
    {48, 0, 1, handle_describe_client_quotas},
    {49, 0, 1, handle_alter_client_quotas},
    {50, 0, 0, handle_describe_user_scram_credentials},
    {51, 0, 0, handle_alter_user_scram_credentials},
    {60, 0, 1, handle_describe_cluster},
    {61, 0, 0, handle_describe_producers},
    {65, 0, 0, handle_describe_transactions},
    {66, 0, 1, handle_list_transactions},
    {75, 0, 0, handle_describe_topic_partitions},
};

const struct api_handler_entry *handlers_table(int *count)
{
    *count = (int)(sizeof handler_table / sizeof handler_table[0]);
    return handler_table;
}

const struct api_handler_entry *handlers_find(int16_t api_key)
{
    int n;
    const struct api_handler_entry *t = handlers_table(&n);
    for (int i = 0; i < n; i++)
        if (t[i].api_key == api_key)
            return &t[i];
    return NULL;
}

static int32_t read_be32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

static int16_t read_be16(const uint8_t *p)
{
    return (int16_t)((uint16_t)p[0] << 8 | p[1]);
}

static void context_free(struct request_context *ctx)
{
    kafka_arena_free(&ctx->arena);
    free(ctx);
}

void request_context_abandon(struct request_context *ctx, bool close_connection)
{
    net_request_complete(ctx->net, NULL, 0, close_connection);
    context_free(ctx);
}

static bool encode_response(struct request_context *ctx, int16_t version, struct kafka_writer *w)
{
    kafka_writer_init(w, 256);
    size_t size_at = kafka_writer_reserve(w, 4);
    kafka_write_int32(w, ctx->correlation_id);
    if (kafka_response_header_version(ctx->api_key, version) >= 1)
        kafka_write_uvarint(w, 0);
    if (ctx->desc->response_encode(ctx->response, w, version) != 0 || w->failed)
        return false;
    kafka_writer_patch_int32(w, size_at, (int32_t)(kafka_writer_total_len(w) - 4));
    return !w->failed;
}

static bool encode_or_close(struct request_context *ctx, struct kafka_writer *w)
{
    if (encode_response(ctx, ctx->api_version, w))
        return true;
    logger_error("dispatch", "could not encode %s v%d response for %s; closing the connection", ctx->desc->name,
                 ctx->api_version, ctx->net->peer);
    kafka_writer_free(w);
    request_context_abandon(ctx, true);
    return false;
}

void request_context_respond(struct request_context *ctx)
{
    struct kafka_writer w;
    int64_t encode_start = pipeline_quota_active(ctx) ? clock_mono_ns() : 0;
    if (!encode_or_close(ctx, &w))
        return;
    int32_t throttle_ms = 0;
    if (encode_start) {
        /* Quotas measure the encoded response; a throttle then goes into
         * the response itself, which means encoding it again. */
        ctx->io_ns += clock_mono_ns() - encode_start;
        throttle_ms = pipeline_quota_record(ctx, (size_t)kafka_writer_total_len(&w));
        if (throttle_ms > 0 && pipeline_set_throttle(ctx, throttle_ms)) {
            kafka_writer_free(&w);
            if (!encode_or_close(ctx, &w))
                return;
        }
    }
    pipeline_count_response((size_t)kafka_writer_total_len(&w));
    net_request_complete(ctx->net, &w, throttle_ms, ctx->close_after_response);
    context_free(ctx);
}

/* ApiVersions at a version we do not serve: answer in the v0 layout with
 * UNSUPPORTED_VERSION and our ranges, so the client can pick a version. */
static void respond_api_versions_unsupported(struct request_context *ctx)
{
    struct api_versions_response *resp = ctx->response;
    handle_api_versions(ctx, NULL, resp);
    resp->error_code = KAFKA_ERR_UNSUPPORTED_VERSION;
    ctx->api_version = 0;
    request_context_respond(ctx);
}

void handlers_dispatch(struct net_request *req, void *env_arg)
{
    struct handler_env *env = env_arg;
    if (sasl_expects_raw_token(req)) {
        sasl_handle_raw_token(req, env);
        return;
    }
    if (req->frame_len < 8) {
        logger_warn("dispatch", "request of %zu bytes from %s is too short for a header; closing", req->frame_len,
                    req->peer);
        net_request_complete(req, NULL, 0, true);
        return;
    }
    struct request_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        net_request_complete(req, NULL, 0, true);
        return;
    }
    ctx->env = env;
    ctx->net = req;
    ctx->api_key = read_be16(req->frame);
    ctx->api_version = read_be16(req->frame + 2);
    ctx->correlation_id = read_be32(req->frame + 4);
    kafka_arena_init(&ctx->arena);
    pipeline_count_request(ctx);
    if (pipeline_quota_active(ctx))
        ctx->started_ns = clock_mono_ns();

    const struct api_handler_entry *entry = handlers_find(ctx->api_key);
    ctx->desc = kafka_api_lookup(ctx->api_key);
    bool supported = entry && ctx->desc && ctx->api_version >= entry->min_version &&
                     ctx->api_version <= entry->max_version;
    if (!supported) {
        if (ctx->api_key == API_KEY_API_VERSIONS && ctx->desc) {
            ctx->response = kafka_arena_alloc(&ctx->arena, ctx->desc->response_size_of);
            if (ctx->response) {
                ctx->desc->response_init(ctx->response);
                respond_api_versions_unsupported(ctx);
                return;
            }
        }
        logger_warn("dispatch", "unsupported API key %d version %d from %s; closing the connection", ctx->api_key,
                    ctx->api_version, req->peer);
        request_context_abandon(ctx, true);
        return;
    }

    struct kafka_reader r;
    kafka_reader_init(&r, req->frame, req->frame_len);
    struct request_header header;
    request_header_init(&header);
    if (request_header_decode(&header, &r, kafka_request_header_version(ctx->api_key, ctx->api_version), &ctx->arena) !=
        0) {
        logger_warn("dispatch", "malformed %s v%d request header from %s: %s; closing", ctx->desc->name,
                    ctx->api_version, req->peer, r.error);
        request_context_abandon(ctx, true);
        return;
    }
    kafka_str_to_cstr(header.client_id, ctx->client_id, sizeof ctx->client_id);

    ctx->request = kafka_arena_alloc(&ctx->arena, ctx->desc->request_size_of);
    ctx->response = kafka_arena_alloc(&ctx->arena, ctx->desc->response_size_of);
    if (!ctx->request || !ctx->response) {
        request_context_abandon(ctx, true);
        return;
    }
    ctx->desc->request_init(ctx->request);
    ctx->desc->response_init(ctx->response);
    if (ctx->desc->request_decode(ctx->request, &r, ctx->api_version, &ctx->arena) != 0) {
        logger_warn("dispatch", "malformed %s v%d request from %s (client %s): %s; closing", ctx->desc->name,
                    ctx->api_version, req->peer, ctx->client_id, r.error);
        request_context_abandon(ctx, true);
        return;
    }

    /* Authentication is the connection's principal (handler_request_info);
     * authorization runs inside each handler, per resource, as Kafka does.
     * On SASL listeners nothing else is served before it. */
    if (!sasl_gate(ctx))
        return;
    int64_t started_ns = ctx->started_ns;
    enum handler_result result = entry->handler(ctx, ctx->request, ctx->response);
    /* A deferred request may already be answered and freed: hands off. Its
     * REQUEST quota then counts the encoding only. */
    if (started_ns && result != HANDLER_DEFERRED)
        ctx->io_ns += clock_mono_ns() - started_ns;
    switch (result) {
    case HANDLER_RESPOND:
        request_context_respond(ctx);
        break;
    case HANDLER_DEFERRED:
        break;
    case HANDLER_NO_RESPONSE: {
        /* No response to carry a throttle time: muting alone slows the client. */
        int32_t throttle_ms = pipeline_quota_active(ctx) ? pipeline_quota_record(ctx, 0) : 0;
        net_request_complete(ctx->net, NULL, throttle_ms, false);
        context_free(ctx);
        break;
    }
    case HANDLER_CLOSE:
        request_context_abandon(ctx, true);
        break;
    }
}
