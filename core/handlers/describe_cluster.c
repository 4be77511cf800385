/* DescribeCluster: cluster id, controller and the live brokers. */
#include <string.h>

#include "handlers/handler_util.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"

#define ENDPOINT_TYPE_BROKERS 1

enum handler_result handle_describe_cluster(struct request_context *ctx, void *request, void *response)
{
    struct describe_cluster_request *req = request;
    struct describe_cluster_response *resp = response;
    if (ctx->api_version >= 1 && req->endpoint_type != ENDPOINT_TYPE_BROKERS) {
        resp->error_code = KAFKA_ERR_UNSUPPORTED_ENDPOINT_TYPE;
        resp->error_message = kafka_arena_strdup(&ctx->arena, "only broker endpoints are served here");
        resp->endpoint_type = req->endpoint_type;
        return HANDLER_RESPOND;
    }
    if (!handler_authorize_one(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE)) {
        resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        resp->endpoint_type = ENDPOINT_TYPE_BROKERS;
        return HANDLER_RESPOND;
    }
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return HANDLER_CLOSE;
    resp->endpoint_type = ENDPOINT_TYPE_BROKERS;
    resp->cluster_id = kafka_arena_strdup(&ctx->arena, img->cluster_id);
    resp->controller_id = ctx->env->active_controller ? ctx->env->active_controller(ctx->env->active_controller_ctx)
                                                      : img->controller_id;
    HANDLER_NEW_ARRAY(ctx, resp->brokers, img->broker_count, describe_cluster_response_describe_cluster_broker_init);
    enum handler_result result = resp->brokers ? HANDLER_RESPOND : HANDLER_CLOSE;
    int32_t n = 0;
    for (int32_t i = 0; resp->brokers && i < img->broker_count; i++) {
        const struct metadata_broker *b = &img->brokers[i];
        const struct metadata_endpoint *ep = b->fenced ? NULL : handler_endpoint_for_request(ctx, b);
        if (!ep)
            continue;
        struct describe_cluster_response_describe_cluster_broker *out = &resp->brokers[n++];
        out->broker_id = b->node_id;
        out->host = kafka_arena_strdup(&ctx->arena, ep->host);
        out->port = ep->port;
        out->rack = kafka_arena_strdup(&ctx->arena, b->rack);
    }
    resp->brokers_count = n;
    metadata_image_release(img);
    return result;
}
