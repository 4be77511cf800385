/* CreateTopics, DeleteTopics and CreatePartitions: controller operations on
 * the cluster metadata. Each topic succeeds or fails on its own. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/topic_config.h"
#include "handlers/handler_util.h"
#include "handlers/topic_policy.h"
#include "log/log_manager.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "util/clock.h"
#include "util/logger.h"

static struct kafka_str error_message(struct request_context *ctx, int16_t code, const char *err)
{
    if (code == KAFKA_ERR_NONE)
        return (struct kafka_str){NULL, -1};
    return kafka_arena_strdup(&ctx->arena, err[0] ? err : kafka_error_name(code));
}

/* An ADMIN audit event with a small JSON object of details; the JSON is
 * only built when an audit plugin listens. */
static void audit_topic_change(struct request_context *ctx, const char *operation, const char *topic,
                               int16_t error_code, json_t *details)
{
    if (ctx->env->plugins && ctx->env->plugins->audit_count > 0) {
        char *text = details ? json_dumps(details, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        handler_audit_admin(ctx, operation, CAIRN_RESOURCE_TOPIC, topic, error_code, text);
        free(text);
    }
    json_decref(details);
}

static bool auditing(struct request_context *ctx)
{
    return ctx->env->plugins && ctx->env->plugins->audit_count > 0;
}

/* Topics only the broker may reshape: the coordinators' logs and the
 * metadata log (never in the image, so known here by name). */
static bool internal_topic(const char *name, const struct metadata_topic *t)
{
    return (t && t->is_internal) || strcmp(name, "__consumer_offsets") == 0 ||
           strcmp(name, "__transaction_state") == 0 || strcmp(name, LOG_MANAGER_METADATA_TOPIC) == 0;
}

/* CreateTopics: CREATE on the cluster (not logged when denied), else on the topic. */
static bool may_create_topic(struct request_context *ctx, struct kafka_str name)
{
    if (!handler_decides(ctx))
        return true;
    return handler_authorize_resource(ctx, CAIRN_OP_CREATE, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE, false) ||
           handler_authorize_name(ctx, CAIRN_OP_CREATE, CAIRN_RESOURCE_TOPIC, name, true);
}

typedef struct create_topics_response_creatable_topic_configs created_config;

static int created_config_by_name(const void *a, const void *b)
{
    const struct kafka_str *x = &((const created_config *)a)->name, *y = &((const created_config *)b)->name;
    int n = memcmp(x->data, y->data, (size_t)(x->len < y->len ? x->len : y->len));
    return n ? n : (x->len > y->len) - (x->len < y->len);
}

/* CreateTopics v5+ (KIP-525) answers with the new topic's whole effective
 * configuration, sorted by name, as Kafka does (a validate_only request
 * too), unless DESCRIBE_CONFIGS on the topic is denied: then
 * topic_config_error_code says so and the counts stay -1. */
static void describe_created_topic(struct request_context *ctx, const struct metadata_config_kv *configs,
                                   int32_t config_count, struct create_topics_response_creatable_topic_result *out)
{
    if (!handler_authorize_name(ctx, CAIRN_OP_DESCRIBE_CONFIGS, CAIRN_RESOURCE_TOPIC, out->name, false)) {
        out->topic_config_error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
        out->num_partitions = -1;
        out->replication_factor = -1;
        return;
    }
    struct config_kv *overrides = NULL;
    if (config_count > 0) {
        overrides = kafka_arena_alloc(&ctx->arena, (size_t)config_count * sizeof *overrides);
        if (!overrides)
            goto no_memory;
        for (int32_t i = 0; i < config_count; i++) {
            overrides[i].key = configs[i].key;
            overrides[i].value = configs[i].value;
        }
    }
    size_t total = topic_config_key_count();
    HANDLER_NEW_ARRAY(ctx, out->configs, (int32_t)total, create_topics_response_creatable_topic_configs_init);
    if (!out->configs)
        goto no_memory;
    int32_t count = 0;
    struct topic_config_describe_entry e;
    for (size_t i = 0; i < total; i++) {
        if (topic_config_describe(ctx->env->config, overrides, config_count > 0 ? (size_t)config_count : 0, i, &e) != 0)
            continue;
        created_config *c = &out->configs[count++];
        c->name = kafka_arena_strdup(&ctx->arena, e.name);
        if (!c->name.data)
            goto no_memory;
        c->value = (struct kafka_str){NULL, -1};
        if (!e.is_sensitive && e.value) {
            c->value = kafka_arena_strdup(&ctx->arena, e.value);
            if (!c->value.data)
                goto no_memory;
        }
        c->read_only = e.read_only;
        c->config_source = (int8_t)e.source;
        c->is_sensitive = e.is_sensitive;
    }
    qsort(out->configs, (size_t)count, sizeof *out->configs, created_config_by_name);
    out->configs_count = count;
    return;
no_memory:
    /* The topic exists; only its description is missing. */
    out->configs = NULL;
    out->configs_count = -1;
    out->topic_config_error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
}

/* What is left of a request's TimeoutMs for its next topic, as
 * metadata_create_topic_within takes it: 0 (or less) answers once the
 * change is committed, as Kafka does; a positive one counts down from the
 * request's start, never below 1 ms (an expired one answers
 * REQUEST_TIMED_OUT unless the change applies at once). */
static int32_t timeout_left(int32_t timeout_ms, int64_t started_ms)
{
    if (timeout_ms <= 0)
        return 0;
    int64_t left = (int64_t)timeout_ms - (clock_mono_ms() - started_ms);
    return left < 1 ? 1 : (int32_t)left;
}

static void create_one(struct request_context *ctx, bool validate_only, int32_t timeout_ms,
                       const struct create_topics_request_creatable_topic *in,
                       struct create_topics_response_creatable_topic_result *out)
{
    char name[256];
    char err[512] = "";
    out->name = in->name;
    out->num_partitions = -1;
    out->replication_factor = -1;
    out->configs_count = -1;
    out->error_code = handler_topic_name_error(in->name);
    if (out->error_code != KAFKA_ERR_NONE) {
        snprintf(err, sizeof err,
                 "topic name is illegal: it must be 1-249 characters of [a-zA-Z0-9._-] and not '.' or '..'");
        out->error_message = error_message(ctx, out->error_code, err);
        return;
    }
    kafka_str_to_cstr(in->name, name, sizeof name);
    if (!may_create_topic(ctx, in->name)) {
        out->error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
        out->error_message = error_message(ctx, out->error_code, "not authorized to create this topic");
        return;
    }
    int32_t created = in->assignments_count > 0  ? in->assignments_count
                      : in->num_partitions == -1 ? ctx->env->default_num_partitions
                                                 : in->num_partitions;
    if (!validate_only && (out->error_code = handler_mutation_quota(ctx, created, 6, &out->error_message)) != 0)
        return;

    struct metadata_replica_assignment *assignments = NULL;
    if (in->assignments_count > 0) {
        assignments = kafka_arena_alloc(&ctx->arena, (size_t)in->assignments_count * sizeof *assignments);
        if (!assignments) {
            out->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            return;
        }
        for (int32_t i = 0; i < in->assignments_count; i++) {
            assignments[i].partition_index = in->assignments[i].partition_index;
            assignments[i].broker_ids = in->assignments[i].broker_ids;
            assignments[i].broker_count = in->assignments[i].broker_ids_count;
        }
    }
    struct metadata_config_kv *configs = NULL;
    if (in->configs_count > 0) {
        configs = kafka_arena_alloc(&ctx->arena, (size_t)in->configs_count * sizeof *configs);
        if (!configs) {
            out->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            return;
        }
        for (int32_t i = 0; i < in->configs_count; i++) {
            struct kafka_str k = in->configs[i].name, v = in->configs[i].value;
            char *key = kafka_arena_alloc(&ctx->arena, (size_t)(k.len > 0 ? k.len : 0) + 1);
            char *value = v.len < 0 ? NULL : kafka_arena_alloc(&ctx->arena, (size_t)v.len + 1);
            if (!key || (v.len >= 0 && !value)) {
                out->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
                return;
            }
            kafka_str_to_cstr(k, key, (size_t)(k.len > 0 ? k.len : 0) + 1);
            if (value)
                kafka_str_to_cstr(v, value, (size_t)v.len + 1);
            configs[i].key = key;
            configs[i].value = value;
        }
    }
    int32_t partitions = in->num_partitions, replication = in->replication_factor;
    if (in->assignments_count > 0) {
        partitions = in->assignments_count;
        replication = (int16_t)in->assignments[0].broker_ids_count;
    }
    if (partitions == -1)
        partitions = ctx->env->default_num_partitions;
    if (replication == -1)
        replication = ctx->env->default_replication_factor;
    struct topic_policy_change change = {
        .kind = CAIRN_POLICY_CREATE_TOPIC,
        .topic = name,
        .validate_only = validate_only,
        .partitions = partitions,
        .replication_factor = (int16_t)replication,
        .assignments = assignments,
        .assignment_count = in->assignments_count,
        .configs = configs,
        .config_count = in->configs_count,
    };
    out->error_code = topic_policy_check(ctx, &change, err, sizeof err);
    if (out->error_code == KAFKA_ERR_NONE)
        out->error_code = handler_check_remote_storage(ctx, configs, in->configs_count > 0 ? in->configs_count : 0, err,
                                                       sizeof err);
    if (out->error_code == KAFKA_ERR_NONE)
        out->error_code = metadata_create_topic_within(
            ctx->env->metadata, name, in->num_partitions, in->replication_factor, assignments,
            in->assignments_count > 0 ? in->assignments_count : 0, configs,
            in->configs_count > 0 ? in->configs_count : 0, validate_only, timeout_ms, &out->topic_id, err, sizeof err);
    out->error_message = error_message(ctx, out->error_code, err);
    if (out->error_code == KAFKA_ERR_NONE) {
        out->num_partitions = partitions;
        out->replication_factor = (int16_t)replication;
        if (ctx->api_version >= 5)
            describe_created_topic(ctx, configs, in->configs_count, out);
        if (!validate_only)
            logger_info("admin", "created topic '%s' (%d partitions, replication factor %d) for %s", name, partitions,
                        replication, ctx->net->peer);
    }
    if (auditing(ctx)) {
        json_t *configs = json_object();
        for (int32_t i = 0; configs && in->configs_count > 0 && i < in->configs_count; i++) {
            char key[256];
            kafka_str_to_cstr(in->configs[i].name, key, sizeof key);
            json_t *value = json_null();
            if (in->configs[i].value.len >= 0)
                value = json_stringn(in->configs[i].value.data, (size_t)in->configs[i].value.len);
            json_object_set_new(configs, key, value ? value : json_null());
        }
        audit_topic_change(ctx, "CreateTopics", name, out->error_code,
                           json_pack("{s:i, s:i, s:b, s:o*}", "partitions", partitions, "replication_factor",
                                     replication, "validate_only", validate_only, "configs", configs));
    }
}

#define MAX_PARTITIONS_PER_REQUEST HANDLER_MAX_PARTITIONS_PER_REQUEST
#define TOO_MANY_PARTITIONS_MESSAGE "Excessively large number of partitions per request."

static bool create_topics_too_large(struct request_context *ctx, const struct create_topics_request *req)
{
    int64_t total = 0;
    for (int32_t i = 0; i < req->topics_count; i++) {
        const struct create_topics_request_creatable_topic *t = &req->topics[i];
        if (t->assignments_count > 0)
            total += t->assignments_count;
        else if (t->num_partitions == -1)
            total += ctx->env->default_num_partitions;
        else if (t->num_partitions > 0)
            total += t->num_partitions;
    }
    return total > MAX_PARTITIONS_PER_REQUEST;
}

enum handler_result handle_create_topics(struct request_context *ctx, void *request, void *response)
{
    struct create_topics_request *req = request;
    struct create_topics_response *resp = response;
    HANDLER_NEW_ARRAY(ctx, resp->topics, req->topics_count, create_topics_response_creatable_topic_result_init);
    if (!resp->topics)
        return HANDLER_CLOSE;
    resp->topics_count = req->topics_count;
    if (create_topics_too_large(ctx, req)) {
        for (int32_t i = 0; i < req->topics_count; i++) {
            struct create_topics_response_creatable_topic_result *out = &resp->topics[i];
            out->name = req->topics[i].name;
            out->error_code = KAFKA_ERR_POLICY_VIOLATION;
            out->error_message = kafka_arena_strdup(&ctx->arena, TOO_MANY_PARTITIONS_MESSAGE);
            out->num_partitions = -1;
            out->replication_factor = -1;
            out->configs_count = -1;
        }
        return HANDLER_RESPOND;
    }
    int64_t started_ms = clock_mono_ms();
    for (int32_t i = 0; i < req->topics_count; i++) {
        struct create_topics_response_creatable_topic_result *out = &resp->topics[i];
        /* A name given twice in one request is an error for both (Kafka's rule). */
        bool duplicate = false;
        for (int32_t j = 0; j < req->topics_count && !duplicate; j++)
            duplicate = j != i && req->topics[j].name.len == req->topics[i].name.len &&
                        !memcmp(req->topics[j].name.data, req->topics[i].name.data, (size_t)req->topics[i].name.len);
        if (duplicate) {
            out->name = req->topics[i].name;
            out->error_code = KAFKA_ERR_INVALID_REQUEST;
            out->error_message = kafka_arena_strdup(&ctx->arena, "topic named more than once in the request");
            out->num_partitions = -1;
            out->replication_factor = -1;
            out->configs_count = -1;
            continue;
        }
        create_one(ctx, req->validate_only, timeout_left(req->timeout_ms, started_ms), &req->topics[i], out);
    }
    return HANDLER_RESPOND;
}

static void delete_one(struct request_context *ctx, struct kafka_str name, struct kafka_uuid id,
                       struct delete_topics_response_deletable_topic_result *out)
{
    char err[512] = "";
    char topic[256] = "";
    out->name = name;
    out->topic_id = id;
    if (name.len >= 0) {
        if (!handler_name_cstr(name, topic, sizeof topic)) {
            out->error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            out->error_message = error_message(ctx, out->error_code, err);
            return;
        }
        if (!handler_authorize_resource(ctx, CAIRN_OP_DELETE, CAIRN_RESOURCE_TOPIC, topic, true)) {
            out->error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
            out->error_message = error_message(ctx, out->error_code, err);
            return;
        }
    }
    /* The response names both the name and the id: look the other one up. */
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    const struct metadata_topic *t = name.len >= 0 ? metadata_image_topic_by_name(img, topic, strlen(topic))
                                                   : metadata_image_topic_by_id(img, &id);
    if (t) {
        out->topic_id = t->topic_id;
        if (name.len < 0) {
            out->name = kafka_arena_strdup(&ctx->arena, t->name);
            snprintf(topic, sizeof topic, "%s", t->name);
        }
    }
    bool internal = internal_topic(topic, t);
    int32_t deleted = t ? t->partition_count : 0;
    metadata_image_release(img);
    if (name.len < 0 && !handler_authorize_resource(ctx, CAIRN_OP_DELETE, CAIRN_RESOURCE_TOPIC, topic, true)) {
        /* Denied by id: the name behind it is shown only to a principal
         * that may describe the topic (Kafka's rule). */
        if (!handler_authorize_resource(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_TOPIC, topic, false))
            out->name = (struct kafka_str){NULL, -1};
        out->error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
        out->error_message = error_message(ctx, out->error_code, err);
        return;
    }
    if (internal) {
        out->error_code = KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
        snprintf(err, sizeof err, "Cannot delete internal topic %s", topic);
        out->error_message = error_message(ctx, out->error_code, err);
        return;
    }
    if ((out->error_code = handler_mutation_quota(ctx, deleted, 5, &out->error_message)) != 0)
        return;
    out->error_code = metadata_delete_topic(ctx->env->metadata, name.len >= 0 ? topic : NULL,
                                            name.len >= 0 ? NULL : &id, err, sizeof err);
    out->error_message = error_message(ctx, out->error_code, err);
    if (out->error_code == KAFKA_ERR_NONE)
        logger_info("admin", "deleted topic '%s' for %s", topic, ctx->net->peer);
    if (auditing(ctx)) {
        char id[40] = "";
        for (int i = 0; i < 16; i++)
            snprintf(id + 2 * i, sizeof id - 2 * (size_t)i, "%02x", out->topic_id.bytes[i]);
        audit_topic_change(ctx, "DeleteTopics", topic, out->error_code, json_pack("{s:s}", "topic_id", id));
    }
}

enum handler_result handle_delete_topics(struct request_context *ctx, void *request, void *response)
{
    struct delete_topics_request *req = request;
    struct delete_topics_response *resp = response;
    int32_t n = ctx->api_version >= 6 ? req->topics_count : req->topic_names_count;
    if (n < 0)
        n = 0;
    HANDLER_NEW_ARRAY(ctx, resp->responses, n, delete_topics_response_deletable_topic_result_init);
    if (!resp->responses)
        return HANDLER_CLOSE;
    resp->responses_count = n;
    if (!config_get_bool(ctx->env->config, "delete.topic.enable")) {
        /* Kafka refuses the whole request; versions before 3 have no
         * code for it. */
        int16_t code = ctx->api_version >= 3 ? KAFKA_ERR_TOPIC_DELETION_DISABLED : KAFKA_ERR_INVALID_REQUEST;
        for (int32_t i = 0; i < n; i++) {
            struct delete_topics_response_deletable_topic_result *out = &resp->responses[i];
            out->name = ctx->api_version >= 6 ? req->topics[i].name : req->topic_names[i];
            if (ctx->api_version >= 6)
                out->topic_id = req->topics[i].topic_id;
            out->error_code = code;
            out->error_message = error_message(ctx, code, "Topic deletion is disabled.");
        }
        return HANDLER_RESPOND;
    }
    for (int32_t i = 0; i < n; i++) {
        if (ctx->api_version >= 6)
            delete_one(ctx, req->topics[i].name, req->topics[i].topic_id, &resp->responses[i]);
        else
            delete_one(ctx, req->topic_names[i], (struct kafka_uuid){{0}}, &resp->responses[i]);
    }
    return HANDLER_RESPOND;
}

/* The partitions a CreatePartitions request would add, by today's counts. */
static bool create_partitions_too_large(struct request_context *ctx, const struct create_partitions_request *req)
{
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    if (!img)
        return false;
    int64_t total = 0;
    for (int32_t i = 0; i < req->topics_count; i++) {
        const struct create_partitions_request_create_partitions_topic *in = &req->topics[i];
        if (in->name.len <= 0)
            continue;
        const struct metadata_topic *t = metadata_image_topic_by_name(img, in->name.data, (size_t)in->name.len);
        if (t && in->count > t->partition_count)
            total += in->count - t->partition_count;
    }
    metadata_image_release(img);
    return total > MAX_PARTITIONS_PER_REQUEST;
}

enum handler_result handle_create_partitions(struct request_context *ctx, void *request, void *response)
{
    struct create_partitions_request *req = request;
    struct create_partitions_response *resp = response;
    HANDLER_NEW_ARRAY(ctx, resp->results, req->topics_count,
                      create_partitions_response_create_partitions_topic_result_init);
    if (!resp->results)
        return HANDLER_CLOSE;
    resp->results_count = req->topics_count;
    if (create_partitions_too_large(ctx, req)) {
        for (int32_t i = 0; i < req->topics_count; i++) {
            resp->results[i].name = req->topics[i].name;
            resp->results[i].error_code = KAFKA_ERR_POLICY_VIOLATION;
            resp->results[i].error_message = kafka_arena_strdup(&ctx->arena, TOO_MANY_PARTITIONS_MESSAGE);
        }
        return HANDLER_RESPOND;
    }
    int64_t started_ms = clock_mono_ms();
    for (int32_t i = 0; i < req->topics_count; i++) {
        struct create_partitions_request_create_partitions_topic *in = &req->topics[i];
        struct create_partitions_response_create_partitions_topic_result *out = &resp->results[i];
        char name[256], err[512] = "";
        out->name = in->name;
        if (!handler_name_cstr(in->name, name, sizeof name)) {
            out->error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            out->error_message = error_message(ctx, out->error_code, err);
            continue;
        }
        if (!handler_authorize_resource(ctx, CAIRN_OP_ALTER, CAIRN_RESOURCE_TOPIC, name, true)) {
            out->error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
            out->error_message = error_message(ctx, out->error_code, err);
            continue;
        }
        if (internal_topic(name, NULL)) {
            out->error_code = KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
            snprintf(err, sizeof err, "Cannot add partitions to internal topic %s", name);
            out->error_message = error_message(ctx, out->error_code, err);
            continue;
        }
        const struct metadata_image *now = metadata_image_acquire(ctx->env->metadata);
        const struct metadata_topic *cur = metadata_image_topic_by_name(now, name, strlen(name));
        int32_t added = cur ? in->count - cur->partition_count : 0;
        int32_t current = cur ? cur->partition_count : 0;
        int16_t replication = cur && cur->partition_count > 0 ? (int16_t)cur->partitions[0].replica_count : 0;
        metadata_image_release(now);
        if (!req->validate_only &&
            (out->error_code = handler_mutation_quota(ctx, added, 3, &out->error_message)) != KAFKA_ERR_NONE)
            continue;
        struct metadata_replica_assignment *assignments = NULL;
        int32_t assignment_count = in->assignments_count > 0 ? in->assignments_count : 0;
        if (assignment_count > 0) {
            /* Request assignments list the new partitions in order, from the current count. */
            const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
            const struct metadata_topic *t = metadata_image_topic_by_name(img, name, strlen(name));
            int32_t first_new = t ? t->partition_count : 0;
            metadata_image_release(img);
            assignments = kafka_arena_alloc(&ctx->arena, (size_t)assignment_count * sizeof *assignments);
            if (!assignments)
                return HANDLER_CLOSE;
            for (int32_t j = 0; j < assignment_count; j++) {
                assignments[j].partition_index = first_new + j;
                assignments[j].broker_ids = in->assignments[j].broker_ids;
                assignments[j].broker_count = in->assignments[j].broker_ids_count;
            }
        }
        /* An unknown topic is left to the metadata store to answer. */
        struct topic_policy_change change = {
            .kind = CAIRN_POLICY_CREATE_PARTITIONS,
            .topic = name,
            .validate_only = req->validate_only,
            .partitions = in->count,
            .current_partitions = current,
            .replication_factor = replication,
            .assignments = assignments,
            .assignment_count = assignment_count,
        };
        out->error_code = cur ? topic_policy_check(ctx, &change, err, sizeof err) : KAFKA_ERR_NONE;
        if (out->error_code == KAFKA_ERR_NONE)
            out->error_code = metadata_create_partitions_within(
                ctx->env->metadata, name, in->count, assignments, assignment_count, req->validate_only,
                timeout_left(req->timeout_ms, started_ms), err, sizeof err);
        out->error_message = error_message(ctx, out->error_code, err);
        if (auditing(ctx))
            audit_topic_change(ctx, "CreatePartitions", name, out->error_code,
                               json_pack("{s:i, s:i, s:b}", "count", in->count, "assignments", assignment_count,
                                         "validate_only", req->validate_only));
    }
    return HANDLER_RESPOND;
}
