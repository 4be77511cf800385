/* Metadata: brokers, cluster id, controller, and topic/partition leadership,
 * read from one immutable metadata image. Creates missing topics when
 * auto.create.topics.enable and the request allow it. */
#include <string.h>

#include "handlers/handlers.h"
#include "handlers/handler_util.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"

static int fill_brokers(struct request_context *ctx, const struct metadata_image *img, struct metadata_response *resp)
{
    HANDLER_NEW_ARRAY(ctx, resp->brokers, img->broker_count, metadata_response_metadata_response_broker_init);
    if (!resp->brokers)
        return -1;
    int32_t n = 0;
    for (int32_t i = 0; i < img->broker_count; i++) {
        const struct metadata_broker *b = &img->brokers[i];
        if (b->fenced)
            continue;
        const struct metadata_endpoint *ep = handler_endpoint_for_request(ctx, b);
        if (!ep)
            continue;
        struct metadata_response_metadata_response_broker *out = &resp->brokers[n++];
        out->node_id = b->node_id;
        out->host = kafka_arena_strdup(&ctx->arena, ep->host);
        out->port = ep->port;
        out->rack = kafka_arena_strdup(&ctx->arena, b->rack);
    }
    resp->brokers_count = n;
    return 0;
}

static int fill_partitions(struct request_context *ctx, const struct metadata_image *img,
                           const struct metadata_topic *topic, struct metadata_response_metadata_response_topic *out)
{
    HANDLER_NEW_ARRAY(ctx, out->partitions, topic->partition_count, metadata_response_metadata_response_partition_init);
    if (!out->partitions)
        return -1;
    int32_t n = 0;
    for (int32_t i = 0; i < topic->partition_count; i++) {
        const struct metadata_partition *p = &topic->partitions[i];
        if (!p->present)
            continue;
        struct metadata_response_metadata_response_partition *mp = &out->partitions[n++];
        mp->partition_index = p->partition_index;
        mp->leader_id = p->leader;
        mp->leader_epoch = p->leader_epoch;
        /* Copies: the response outlives the image reference. */
        mp->replica_nodes = handler_copy_int32s(ctx, p->replicas, p->replica_count);
        mp->replica_nodes_count = p->replica_count;
        mp->isr_nodes = handler_copy_int32s(ctx, p->isr, p->isr_count);
        mp->isr_nodes_count = p->isr_count;
        if ((p->replica_count && !mp->replica_nodes) || (p->isr_count && !mp->isr_nodes))
            return -1;
        mp->offline_replicas_count = 0;
        const struct metadata_broker *leader = metadata_image_broker(img, p->leader);
        mp->error_code = (leader && !leader->fenced) ? KAFKA_ERR_NONE : KAFKA_ERR_LEADER_NOT_AVAILABLE;
    }
    out->partitions_count = n;
    return 0;
}

static int fill_topic(struct request_context *ctx, const struct metadata_image *img, const struct metadata_topic *topic,
                      struct metadata_response_metadata_response_topic *out)
{
    out->error_code = KAFKA_ERR_NONE;
    out->name = kafka_arena_strdup(&ctx->arena, topic->name);
    out->topic_id = topic->topic_id;
    out->is_internal = topic->is_internal;
    return fill_partitions(ctx, img, topic, out);
}

/* Versions 10 and 11 carry topic ids in requests, but only 12+ may use them:
 * as Kafka, a null name or a set id below 12 refuses the whole request with
 * INVALID_REQUEST on every topic. The answer's names are not nullable
 * below 12, so a null one is echoed as "". */
static bool refuse_ids_before_v12(struct request_context *ctx, const struct metadata_request *req,
                                  struct metadata_response *resp, enum handler_result *result)
{
    if (ctx->api_version < 10 || ctx->api_version >= 12 || req->topics_count <= 0)
        return false;
    bool uses_ids = false;
    for (int32_t i = 0; i < req->topics_count; i++)
        uses_ids |= req->topics[i].name.len < 0 || !kafka_uuid_is_zero(req->topics[i].topic_id);
    if (!uses_ids)
        return false;
    HANDLER_NEW_ARRAY(ctx, resp->topics, req->topics_count, metadata_response_metadata_response_topic_init);
    if (!resp->topics) {
        *result = HANDLER_CLOSE;
        return true;
    }
    resp->topics_count = req->topics_count;
    for (int32_t i = 0; i < req->topics_count; i++) {
        struct metadata_response_metadata_response_topic *out = &resp->topics[i];
        out->error_code = KAFKA_ERR_INVALID_REQUEST;
        out->name = req->topics[i].name.len < 0 ? kafka_str_from_cstr("") : req->topics[i].name;
        out->topic_id = req->topics[i].topic_id;
    }
    *result = HANDLER_RESPOND;
    return true;
}

enum handler_result handle_metadata(struct request_context *ctx, void *request, void *response)
{
    struct metadata_request *req = request;
    struct metadata_response *resp = response;
    struct handler_env *env = ctx->env;
    enum handler_result refused;
    if (refuse_ids_before_v12(ctx, req, resp, &refused))
        return refused;

    const struct metadata_image *img = metadata_image_acquire(env->metadata);
    if (!img)
        return HANDLER_CLOSE;

    bool all_topics = req->topics_count < 0 || (ctx->api_version == 0 && req->topics_count == 0);
    bool allow_create = env->auto_create_topics && (ctx->api_version < 4 || req->allow_auto_topic_creation);

    /* DESCRIBE per requested topic, asked once: a denied topic is neither
     * created nor described. A topic asked for by id is authorized by the
     * name the id resolves to, and a denied one is answered with its id
     * only (Kafka's rule): its name and partitions are not the tenant's to
     * see. An unknown id has nothing to deny. */
    bool *describable = NULL;
    if (!all_topics && handler_decides(ctx) && req->topics_count > 0) {
        describable = kafka_arena_alloc(&ctx->arena, (size_t)req->topics_count * sizeof *describable);
        if (!describable) {
            metadata_image_release(img);
            return HANDLER_CLOSE;
        }
        for (int32_t i = 0; i < req->topics_count; i++) {
            struct kafka_str name = req->topics[i].name;
            if (name.len < 0) {
                const struct metadata_topic *by_id = metadata_image_topic_by_id(img, &req->topics[i].topic_id);
                if (!by_id) {
                    describable[i] = true;
                    continue;
                }
                name = kafka_str_from_cstr(by_id->name);
            }
            describable[i] = handler_authorize_name(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TOPIC, name, true);
        }
    }

    /* Create what is missing first, then answer from one image. Auto-
     * creation is bounded as CreateTopics is: at most 10,000 new partitions
     * per request, and each topic asks the controller mutation quota
     * (KIP-599) first. Kafka records that quota permissively here; Cairn
     * refuses a topic once the client is over it (answered unknown, with
     * the throttle), so a client cannot create topics faster than its
     * quota by asking Metadata instead of CreateTopics. */
    if (!all_topics && allow_create) {
        bool created = false;
        int64_t new_partitions = 0;
        for (int32_t i = 0; i < req->topics_count; i++) {
            struct kafka_str name = req->topics[i].name;
            if (name.len <= 0 || (describable && !describable[i]))
                continue;
            if (metadata_image_topic_by_name(img, name.data, (size_t)name.len))
                continue;
            char topic[256];
            if (!handler_name_cstr(name, topic, sizeof topic))
                continue;
            /* Kafka's rule: CREATE on the cluster, else CREATE on the topic. */
            if (handler_decides(ctx) &&
                !handler_authorize_resource(ctx, CAIRN_OP_CREATE, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE,
                                            false) &&
                !handler_authorize_resource(ctx, CAIRN_OP_CREATE, CAIRN_RESOURCE_TOPIC, topic, true))
                continue;
            if (handler_topic_name_error(name) != KAFKA_ERR_NONE)
                continue; /* answered INVALID_TOPIC_EXCEPTION below, at no quota cost */
            new_partitions += env->default_num_partitions;
            if (new_partitions > HANDLER_MAX_PARTITIONS_PER_REQUEST)
                break;
            struct kafka_str quota_message;
            if (handler_mutation_quota(ctx, env->default_num_partitions, 0, &quota_message) != KAFKA_ERR_NONE)
                break;
            if (handler_auto_create_topic(ctx, topic) == KAFKA_ERR_NONE)
                created = true;
        }
        if (created) {
            metadata_image_release(img);
            img = metadata_image_acquire(env->metadata);
            if (!img)
                return HANDLER_CLOSE;
        }
    }

    enum handler_result result = HANDLER_RESPOND;
    if (fill_brokers(ctx, img, resp) != 0) {
        result = HANDLER_CLOSE;
        goto out;
    }
    resp->cluster_id = kafka_arena_strdup(&ctx->arena, img->cluster_id);
    resp->controller_id = ctx->env->active_controller ? ctx->env->active_controller(ctx->env->active_controller_ctx)
                                                      : img->controller_id;

    if (all_topics) {
        HANDLER_NEW_ARRAY(ctx, resp->topics, img->topic_count, metadata_response_metadata_response_topic_init);
        if (!resp->topics) {
            result = HANDLER_CLOSE;
            goto out;
        }
        /* Topics the principal may not describe are left out. */
        int32_t n = 0;
        for (int32_t i = 0; i < img->topic_count; i++) {
            if (handler_has_authorizer(ctx) &&
                !handler_authorize_resource(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TOPIC, img->topics[i]->name, false))
                continue;
            if (fill_topic(ctx, img, img->topics[i], &resp->topics[n++]) != 0) {
                result = HANDLER_CLOSE;
                goto out;
            }
        }
        resp->topics_count = n;
        goto out;
    }

    HANDLER_NEW_ARRAY(ctx, resp->topics, req->topics_count, metadata_response_metadata_response_topic_init);
    if (!resp->topics) {
        result = HANDLER_CLOSE;
        goto out;
    }
    resp->topics_count = req->topics_count;
    for (int32_t i = 0; i < req->topics_count; i++) {
        struct metadata_request_metadata_request_topic *rt = &req->topics[i];
        struct metadata_response_metadata_response_topic *out = &resp->topics[i];
        const struct metadata_topic *topic = NULL;
        if (rt->name.len >= 0)
            topic = metadata_image_topic_by_name(img, rt->name.data, (size_t)rt->name.len);
        else
            topic = metadata_image_topic_by_id(img, &rt->topic_id);
        out->name = rt->name;
        out->topic_id = rt->topic_id;
        if (describable && !describable[i]) {
            out->error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
            continue;
        }
        if (!topic) {
            if (rt->name.len >= 0 && handler_topic_name_error(rt->name) != KAFKA_ERR_NONE)
                out->error_code = KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
            else if (rt->name.len < 0)
                out->error_code = KAFKA_ERR_UNKNOWN_TOPIC_ID;
            else
                out->error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        if (fill_topic(ctx, img, topic, out) != 0) {
            result = HANDLER_CLOSE;
            goto out;
        }
    }

out:
    metadata_image_release(img);
    return result;
}
