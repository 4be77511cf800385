/* FindCoordinator: with a single node, this broker coordinates every group
 * once the group's __consumer_offsets partition is loaded. A transactional
 * id is coordinated here when this broker holds its __transaction_state
 * partition and has loaded it. v5 only lets the answer carry TRANSACTION_ABORTABLE, which a
 * lookup here never needs. */
#include <string.h>

#include "group/group_coordinator.h"
#include "handlers/handler_util.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "txn/txn_coordinator.h"

#define KEY_TYPE_GROUP 0
#define KEY_TYPE_TRANSACTION 1

struct coordinator_answer {
    int16_t error_code;
    int32_t node_id;
    struct kafka_str host;
    int32_t port;
};

/* The key as a C string in the request's arena; NULL when out of memory. */
static char *key_cstr(struct request_context *ctx, struct kafka_str key)
{
    size_t len = key.len > 0 ? (size_t)key.len : 0;
    char *s = kafka_arena_alloc(&ctx->arena, len + 1);
    if (!s)
        return NULL;
    if (len)
        memcpy(s, key.data, len);
    s[len] = '\0';
    return s;
}

/* NONE when this broker coordinates the transactional id. */
static int16_t transaction_coordinator_error(struct request_context *ctx, struct kafka_str key)
{
    if (key.len <= 0 || memchr(key.data, '\0', (size_t)key.len))
        return KAFKA_ERR_INVALID_REQUEST;
    char *id = key_cstr(ctx, key);
    if (!id)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    int16_t code = txn_coordinator_ownership(ctx->env->txn_coordinator, id);
    /* With one broker there is nobody else to point at. */
    return code == KAFKA_ERR_NOT_COORDINATOR ? KAFKA_ERR_COORDINATOR_NOT_AVAILABLE : code;
}

static void find_one(struct request_context *ctx, const struct metadata_image *img, int8_t key_type,
                     struct kafka_str key, struct coordinator_answer *out)
{
    out->node_id = -1;
    out->host = kafka_str_from_cstr("");
    out->port = -1;
    /* DESCRIBE on the key's resource before revealing its coordinator. */
    if (key_type == KEY_TYPE_GROUP || key_type == KEY_TYPE_TRANSACTION) {
        bool group = key_type == KEY_TYPE_GROUP;
        if (!handler_authorize_name(ctx, CAIRN_OP_DESCRIBE,
                                    group ? CAIRN_RESOURCE_GROUP : CAIRN_RESOURCE_TRANSACTIONAL_ID, key, true)) {
            out->error_code = group ? KAFKA_ERR_GROUP_AUTHORIZATION_FAILED
                                    : KAFKA_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
            return;
        }
    }
    if (key_type == KEY_TYPE_TRANSACTION) {
        out->error_code = transaction_coordinator_error(ctx, key);
        if (out->error_code != KAFKA_ERR_NONE)
            return;
    } else if (key_type != KEY_TYPE_GROUP) {
        out->error_code = KAFKA_ERR_INVALID_REQUEST;
        return;
    }
    /* Until the group's partition is loaded, clients must retry elsewhere/later. */
    if (key_type == KEY_TYPE_GROUP) {
        char *group_id = key_cstr(ctx, key);
        out->error_code = group_id ? group_coordinator_ownership(ctx->env->groups, group_id)
                                   : KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
        if (out->error_code != KAFKA_ERR_NONE)
            return;
    }
    const struct metadata_broker *self = metadata_image_broker(img, ctx->env->node_id);
    const struct metadata_endpoint *ep = self && !self->fenced ? handler_endpoint_for_request(ctx, self) : NULL;
    if (!ep) {
        out->error_code = KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    out->error_code = KAFKA_ERR_NONE;
    out->node_id = self->node_id;
    out->host = kafka_arena_strdup(&ctx->arena, ep->host);
    out->port = ep->port;
}

enum handler_result handle_find_coordinator(struct request_context *ctx, void *request, void *response)
{
    struct find_coordinator_request *req = request;
    struct find_coordinator_response *resp = response;
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    int8_t key_type = ctx->api_version >= 1 ? req->key_type : KEY_TYPE_GROUP;
    struct coordinator_answer a;
    if (ctx->api_version < 4) {
        find_one(ctx, img, key_type, req->key, &a);
        resp->error_code = a.error_code;
        if (a.error_code != KAFKA_ERR_NONE && ctx->api_version >= 1)
            resp->error_message = kafka_arena_strdup(&ctx->arena, kafka_error_name(a.error_code));
        resp->node_id = a.node_id;
        resp->host = a.host;
        resp->port = a.port;
        metadata_image_release(img);
        return HANDLER_RESPOND;
    }
    HANDLER_NEW_ARRAY(ctx, resp->coordinators, req->coordinator_keys_count, find_coordinator_response_coordinator_init);
    if (!resp->coordinators) {
        metadata_image_release(img);
        return HANDLER_CLOSE;
    }
    resp->coordinators_count = req->coordinator_keys_count > 0 ? req->coordinator_keys_count : 0;
    for (int32_t i = 0; i < resp->coordinators_count; i++) {
        struct find_coordinator_response_coordinator *c = &resp->coordinators[i];
        find_one(ctx, img, key_type, req->coordinator_keys[i], &a);
        c->key = req->coordinator_keys[i];
        c->error_code = a.error_code;
        if (a.error_code != KAFKA_ERR_NONE)
            c->error_message = kafka_arena_strdup(&ctx->arena, kafka_error_name(a.error_code));
        c->node_id = a.node_id;
        c->host = a.host;
        c->port = a.port;
    }
    metadata_image_release(img);
    return HANDLER_RESPOND;
}
