/* JoinGroup and SyncGroup: long-poll requests. The handler hands the
 * request to the group coordinator and returns HANDLER_DEFERRED; the
 * coordinator's callback (from this thread or a later one) fills the
 * response and sends it. A connection that closes meanwhile tells the
 * coordinator (the cancel hook), which gives the parked request up and
 * removes its member; the network layer drops the response. */
#include <stdlib.h>

#include "group/group_coordinator.h"
#include "handlers/group_handlers.h"

/* The network layer's cancel hook, on the connection's loop thread: the
 * request is alive until it returns (its completion waits for the hook). */
static void parked_cancel(void *arg)
{
    struct request_context *ctx = arg;
    group_coordinator_connection_closed(ctx->env->groups, ctx->net->connection_id);
}

static void join_done(void *arg, const struct group_join_result *r)
{
    struct request_context *ctx = arg;
    struct join_group_response *resp = ctx->response;
    int16_t v = ctx->api_version;
    resp->error_code = r->error_code;
    resp->generation_id = r->generation_id;
    resp->member_id = kafka_arena_strdup(&ctx->arena, r->member_id ? r->member_id : "");
    resp->leader = kafka_arena_strdup(&ctx->arena, r->leader ? r->leader : "");
    if (v >= 7) {
        resp->protocol_type = group_handler_str(ctx, r->protocol_type);
        resp->protocol_name = group_handler_str(ctx, r->protocol_name);
    } else {
        resp->protocol_name = kafka_arena_strdup(&ctx->arena, r->protocol_name ? r->protocol_name : "");
    }
    if (v >= 9)
        resp->skip_assignment = r->skip_assignment;
    if (r->member_count > 0) {
        HANDLER_NEW_ARRAY(ctx, resp->members, (int32_t)r->member_count,
                          join_group_response_join_group_response_member_init);
        if (resp->members) {
            resp->members_count = (int32_t)r->member_count;
            for (size_t i = 0; i < r->member_count; i++) {
                struct join_group_response_join_group_response_member *m = &resp->members[i];
                m->member_id = kafka_arena_strdup(&ctx->arena, r->members[i].member_id);
                if (v >= 5)
                    m->group_instance_id = group_handler_str(ctx, r->members[i].group_instance_id);
                m->metadata = group_handler_bytes(ctx, r->members[i].metadata, r->members[i].metadata_len);
            }
        } else {
            resp->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        }
    }
    request_context_respond(ctx);
}

enum handler_result handle_join_group(struct request_context *ctx, void *request, void *response)
{
    struct join_group_request *req = request;
    if (!handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, req->group_id, true)) {
        ((struct join_group_response *)response)->error_code = KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    int32_t n = req->protocols_count > 0 ? req->protocols_count : 0;
    struct group_protocol *protocols = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof *protocols);
    if (!protocols)
        return HANDLER_CLOSE;
    for (int32_t i = 0; i < n; i++) {
        protocols[i].name = group_handler_cstr_or_empty(ctx, req->protocols[i].name);
        protocols[i].metadata = req->protocols[i].metadata.data;
        protocols[i].metadata_len = req->protocols[i].metadata.len > 0 ? (size_t)req->protocols[i].metadata.len : 0;
    }
    struct group_join_params p = {
        .group_id = group_handler_cstr_or_empty(ctx, req->group_id),
        .member_id = group_handler_cstr_or_empty(ctx, req->member_id),
        .group_instance_id = ctx->api_version >= 5 ? group_handler_cstr(ctx, req->group_instance_id) : NULL,
        .client_id = ctx->client_id,
        .client_host = group_handler_client_host(ctx),
        .protocol_type = group_handler_cstr_or_empty(ctx, req->protocol_type),
        .protocols = protocols,
        .protocol_count = (size_t)n,
        .session_timeout_ms = req->session_timeout_ms,
        /* v0 has no rebalance timeout: the session timeout serves. */
        .rebalance_timeout_ms = ctx->api_version >= 1 ? req->rebalance_timeout_ms : req->session_timeout_ms,
        .require_known_member_id = ctx->api_version >= 4,
        .supports_skip_assignment = ctx->api_version >= 9,
        .connection_id = ctx->net->connection_id,
    };
    /* Before the join: it may answer (and free ctx) at once, and completing
     * removes the hook. */
    net_request_set_cancel(ctx->net, parked_cancel, ctx);
    group_coordinator_join(ctx->env->groups, &p, join_done, ctx);
    return HANDLER_DEFERRED;
}

static void sync_done(void *arg, const struct group_sync_result *r)
{
    struct request_context *ctx = arg;
    struct sync_group_response *resp = ctx->response;
    resp->error_code = r->error_code;
    if (ctx->api_version >= 5 && r->error_code == KAFKA_ERR_NONE) {
        resp->protocol_type = group_handler_str(ctx, r->protocol_type);
        resp->protocol_name = group_handler_str(ctx, r->protocol_name);
    }
    resp->assignment = group_handler_bytes(ctx, r->assignment, r->assignment ? r->assignment_len : 0);
    request_context_respond(ctx);
}

enum handler_result handle_sync_group(struct request_context *ctx, void *request, void *response)
{
    struct sync_group_request *req = request;
    if (!handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, req->group_id, true)) {
        ((struct sync_group_response *)response)->error_code = KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    int32_t n = req->assignments_count > 0 ? req->assignments_count : 0;
    struct group_assignment *a = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof *a);
    if (!a)
        return HANDLER_CLOSE;
    for (int32_t i = 0; i < n; i++) {
        a[i].member_id = group_handler_cstr_or_empty(ctx, req->assignments[i].member_id);
        a[i].assignment = req->assignments[i].assignment.data;
        a[i].assignment_len = req->assignments[i].assignment.len > 0 ? (size_t)req->assignments[i].assignment.len : 0;
    }
    struct group_sync_params p = {
        .group_id = group_handler_cstr_or_empty(ctx, req->group_id),
        .generation_id = req->generation_id,
        .member_id = group_handler_cstr_or_empty(ctx, req->member_id),
        .group_instance_id = ctx->api_version >= 3 ? group_handler_cstr(ctx, req->group_instance_id) : NULL,
        .protocol_type = ctx->api_version >= 5 ? group_handler_cstr(ctx, req->protocol_type) : NULL,
        .protocol_name = ctx->api_version >= 5 ? group_handler_cstr(ctx, req->protocol_name) : NULL,
        .assignments = a,
        .assignment_count = (size_t)n,
        .connection_id = ctx->net->connection_id,
    };
    net_request_set_cancel(ctx->net, parked_cancel, ctx);
    group_coordinator_sync(ctx->env->groups, &p, sync_done, ctx);
    return HANDLER_DEFERRED;
}
