/* FindCoordinator: with a single node, this broker coordinates every group
 * once its group store is loaded.
 * Transaction coordination is not served yet: COORDINATOR_NOT_AVAILABLE. */
#include <string.h>

#include "group/group_coordinator.h"
#include "handlers/handler_util.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"

#define KEY_TYPE_GROUP 0

struct coordinator_answer {
    int16_t error_code;
    int32_t node_id;
    struct kafka_str host;
    int32_t port;
};

static void find_one(struct request_context *ctx, const struct metadata_image *img, int8_t key_type,
                     struct coordinator_answer *out)
{
    out->node_id = -1;
    out->host = kafka_str_from_cstr("");
    out->port = -1;
    if (key_type != KEY_TYPE_GROUP) {
        out->error_code = key_type == 1 ? KAFKA_ERR_COORDINATOR_NOT_AVAILABLE : KAFKA_ERR_INVALID_REQUEST;
        return;
    }
    /* Until the group store is loaded, clients must retry elsewhere/later. */
    if (!ctx->env->groups || group_coordinator_is_loading(ctx->env->groups)) {
        out->error_code = KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
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
        find_one(ctx, img, key_type, &a);
        resp->error_code = a.error_code;
        if (a.error_code != KAFKA_ERR_NONE && ctx->api_version >= 1)
            resp->error_message = kafka_arena_strdup(&ctx->arena, kafka_error_name(a.error_code));
        resp->node_id = a.node_id;
        resp->host = a.host;
        resp->port = a.port;
        metadata_image_release(img);
        return HANDLER_RESPOND;
    }
    HANDLER_NEW_ARRAY(ctx, resp->coordinators, req->coordinator_keys_count,
                      find_coordinator_response_coordinator_init);
    if (!resp->coordinators) {
        metadata_image_release(img);
        return HANDLER_CLOSE;
    }
    resp->coordinators_count = req->coordinator_keys_count > 0 ? req->coordinator_keys_count : 0;
    for (int32_t i = 0; i < resp->coordinators_count; i++) {
        struct find_coordinator_response_coordinator *c = &resp->coordinators[i];
        find_one(ctx, img, key_type, &a);
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
