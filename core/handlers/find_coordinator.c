/* FindCoordinator: the coordinator of a group (transactional id) is the
 * leader of the key's __consumer_offsets (__transaction_state) partition,
 * Kafka's abs(hashCode(key)) % partitions. Every broker answers with that
 * leader's endpoint on the request's listener, so a client may ask any of
 * them; COORDINATOR_NOT_AVAILABLE only when the partition has no live
 * leader, or when it is led here and not loaded yet (clients retry). v5
 * only lets the answer carry TRANSACTION_ABORTABLE, which a lookup here
 * never needs. */
#include <string.h>

#include "coordinator/coordinator_partition.h"
#include "group/group_coordinator.h"
#include "group/group_log.h"
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
    /* Led here per the image but not served yet: the load is on its way. */
    return code == KAFKA_ERR_NOT_COORDINATOR ? KAFKA_ERR_COORDINATOR_NOT_AVAILABLE : code;
}

/* The live leader of the key's partition of the internal topic, or -1. */
static int32_t coordinator_node(const struct metadata_image *img, const char *topic_name, struct kafka_str key)
{
    const struct metadata_topic *topic = img ? metadata_image_topic_by_name(img, topic_name, strlen(topic_name))
                                             : NULL;
    if (!topic || topic->partition_count <= 0)
        return -1; /* not created yet: clients retry */
    size_t len = key.len > 0 ? (size_t)key.len : 0;
    int32_t p = coordinator_partition_for(len ? key.data : "", len, topic->partition_count);
    const struct metadata_partition *part = metadata_topic_partition(topic, p);
    return part && part->present ? part->leader : -1;
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
    if (key_type != KEY_TYPE_TRANSACTION && key_type != KEY_TYPE_GROUP) {
        out->error_code = KAFKA_ERR_INVALID_REQUEST;
        return;
    }
    if (key_type == KEY_TYPE_TRANSACTION && (key.len <= 0 || memchr(key.data, '\0', (size_t)key.len))) {
        out->error_code = KAFKA_ERR_INVALID_REQUEST;
        return;
    }
    int32_t leader = coordinator_node(img, key_type == KEY_TYPE_GROUP ? GROUP_LOG_TOPIC : TXN_LOG_TOPIC, key);
    if (leader >= 0 && leader == ctx->env->node_id) {
        /* Ours: answer only once the partition is loaded, so the client's
         * next request finds its state here. */
        if (key_type == KEY_TYPE_TRANSACTION) {
            out->error_code = transaction_coordinator_error(ctx, key);
        } else {
            char *group_id = key_cstr(ctx, key);
            out->error_code = group_id ? group_coordinator_ownership(ctx->env->groups, group_id)
                                       : KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
        }
        if (out->error_code != KAFKA_ERR_NONE)
            return;
    }
    const struct metadata_broker *node = leader >= 0 ? metadata_image_broker(img, leader) : NULL;
    const struct metadata_endpoint *ep = node && !node->fenced ? handler_endpoint_for_request(ctx, node) : NULL;
    if (!ep) {
        out->error_code = KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
        return;
    }
    out->error_code = KAFKA_ERR_NONE;
    out->node_id = node->node_id;
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
