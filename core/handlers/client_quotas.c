/* AlterClientQuotas and DescribeClientQuotas (KIP-546): client quotas kept
 * in the metadata log as ClientQuotaRecords, with Kafka's entity model,
 * validation and errors. CLUSTER ALTER_CONFIGS authorizes changes, CLUSTER
 * DESCRIBE_CONFIGS the listing. The quota plugin reads the stored quotas
 * through the quota host service (server/quota_feed.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "metadata/metadata_quota.h"
#include "metadata/metadata_store.h"
#include "net/server.h"

static struct kafka_str arena_copy(struct request_context *ctx, struct kafka_str s)
{
    if (s.len < 0 || !s.data)
        return s;
    char *out = kafka_arena_alloc(&ctx->arena, (size_t)s.len + 1);
    if (!out)
        return (struct kafka_str){NULL, -1};
    memcpy(out, s.data, (size_t)s.len);
    return (struct kafka_str){out, s.len};
}

/* Builds the entity of one request entry; NONE or INVALID_REQUEST with err. */
static int16_t entry_entity(struct request_context *ctx, const struct alter_client_quotas_request_entry_data *in,
                            struct metadata_quota_entity *e, bool *oom, char *err, size_t errlen)
{
    memset(e, 0, sizeof(*e));
    for (int32_t j = 0; j < in->entity_count; j++) {
        const struct alter_client_quotas_request_entity_data *d = &in->entity[j];
        const char *name = handler_arena_cstr(ctx, d->entity_name, oom);
        if (*oom)
            return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        int16_t rc = metadata_quota_entity_add(
            e, d->entity_type.data, d->entity_type.len > 0 ? (size_t)d->entity_type.len : 0, name, err, errlen);
        if (rc != KAFKA_ERR_NONE)
            return rc;
    }
    return KAFKA_ERR_NONE;
}

enum handler_result handle_alter_client_quotas(struct request_context *ctx, void *request, void *response)
{
    struct alter_client_quotas_request *req = request;
    struct alter_client_quotas_response *resp = response;
    int32_t n = req->entries_count > 0 ? req->entries_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->entries, n, alter_client_quotas_response_entry_data_init);
    struct metadata_quota_alteration *alts = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof(*alts));
    if (!resp->entries || !alts)
        return HANDLER_CLOSE;
    resp->entries_count = n;
    bool allowed = handler_authorize_one(ctx, CAIRN_OP_ALTER_CONFIGS, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE);
    bool oom = false;
    for (int32_t i = 0; i < n; i++) {
        const struct alter_client_quotas_request_entry_data *in = &req->entries[i];
        struct metadata_quota_alteration *a = &alts[i];
        memset(a, 0, sizeof(*a));
        if (!allowed) {
            a->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
            snprintf(a->error, sizeof a->error, "%s", kafka_error_name(a->error_code));
            continue;
        }
        a->error_code = entry_entity(ctx, in, &a->entity, &oom, a->error, sizeof a->error);
        int32_t ops = in->ops_count > 0 ? in->ops_count : 0;
        struct metadata_quota_op *op = kafka_arena_alloc(&ctx->arena, (size_t)(ops + 1) * sizeof(*op));
        if (oom || !op)
            return HANDLER_CLOSE;
        for (int32_t j = 0; j < ops; j++) {
            const struct alter_client_quotas_request_op_data *o = &in->ops[j];
            op[j] = (struct metadata_quota_op){
                .key = handler_arena_cstr(ctx, o->key, &oom), .value = o->value, .remove = o->remove};
            if (oom)
                return HANDLER_CLOSE;
            if (!op[j].key)
                op[j].key = "";
        }
        a->ops = op;
        a->op_count = ops;
    }
    char err[256] = "";
    if (allowed && n > 0)
        metadata_alter_client_quotas(ctx->env->metadata, alts, n, req->validate_only, err, sizeof err);
    for (int32_t i = 0; i < n; i++) {
        const struct alter_client_quotas_request_entry_data *in = &req->entries[i];
        struct alter_client_quotas_response_entry_data *out = &resp->entries[i];
        out->error_code = alts[i].error_code;
        out->error_message = out->error_code == KAFKA_ERR_NONE ? (struct kafka_str){NULL, -1}
                                                               : kafka_arena_strdup(&ctx->arena, alts[i].error);
        int32_t m = in->entity_count > 0 ? in->entity_count : 0;
        HANDLER_NEW_ARRAY(ctx, out->entity, m, alter_client_quotas_response_entity_data_init);
        if (!out->entity)
            return HANDLER_CLOSE;
        for (int32_t j = 0; j < m; j++) {
            out->entity[j].entity_type = arena_copy(ctx, in->entity[j].entity_type);
            out->entity[j].entity_name = arena_copy(ctx, in->entity[j].entity_name);
        }
        out->entity_count = m;
        if (!req->validate_only && allowed)
            handler_audit_admin(ctx, "AlterClientQuotas", CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE,
                                out->error_code, NULL);
    }
    return HANDLER_RESPOND;
}

/* The entity of the image's quota at index i, as response entries. */
static int describe_entity(struct request_context *ctx, const struct metadata_quota_entity *e,
                           struct describe_client_quotas_response_entry_data *out)
{
    int32_t parts = 0;
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++)
        parts += e->part[t] != METADATA_QUOTA_ABSENT;
    HANDLER_NEW_ARRAY(ctx, out->entity, parts, describe_client_quotas_response_entity_data_init);
    if (!out->entity)
        return -1;
    int32_t k = 0;
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++) {
        if (e->part[t] == METADATA_QUOTA_ABSENT)
            continue;
        out->entity[k].entity_type = kafka_str_from_cstr(metadata_quota_type_name(t));
        out->entity[k++].entity_name = e->part[t] == METADATA_QUOTA_NAMED ? kafka_arena_strdup(&ctx->arena, e->name[t])
                                                                          : (struct kafka_str){NULL, -1};
    }
    out->entity_count = k;
    return 0;
}

/* Lists every entity the filter matches, with its values (adjacent in the image). */
static int describe_matches(struct request_context *ctx, const struct metadata_image *img,
                            const struct metadata_quota_filter *f, struct describe_client_quotas_response *resp)
{
    HANDLER_NEW_ARRAY(ctx, resp->entries, img->quota_count, describe_client_quotas_response_entry_data_init);
    if (!resp->entries)
        return -1;
    int32_t n = 0;
    for (int32_t i = 0; i < img->quota_count;) {
        int32_t end = i + 1;
        while (end < img->quota_count &&
               metadata_quota_entity_cmp(&img->quotas[end].entity, &img->quotas[i].entity) == 0)
            end++;
        if (metadata_quota_filter_matches(f, &img->quotas[i].entity)) {
            struct describe_client_quotas_response_entry_data *out = &resp->entries[n++];
            if (describe_entity(ctx, &img->quotas[i].entity, out) != 0)
                return -1;
            HANDLER_NEW_ARRAY(ctx, out->values, end - i, describe_client_quotas_response_value_data_init);
            if (!out->values)
                return -1;
            for (int32_t j = i; j < end; j++) {
                out->values[j - i].key = kafka_arena_strdup(&ctx->arena, img->quotas[j].key);
                out->values[j - i].value = img->quotas[j].value;
            }
            out->values_count = end - i;
        }
        i = end;
    }
    resp->entries_count = n;
    return 0;
}

enum handler_result handle_describe_client_quotas(struct request_context *ctx, void *request, void *response)
{
    struct describe_client_quotas_request *req = request;
    struct describe_client_quotas_response *resp = response;
    if (!handler_authorize_one(ctx, CAIRN_OP_DESCRIBE_CONFIGS, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE)) {
        resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        resp->error_message = kafka_str_from_cstr(kafka_error_name(resp->error_code));
        resp->entries_count = -1;
        return HANDLER_RESPOND;
    }
    struct metadata_quota_filter f;
    metadata_quota_filter_init(&f, req->strict);
    char err[256] = "";
    int16_t rc = KAFKA_ERR_NONE;
    bool oom = false;
    for (int32_t i = 0; rc == KAFKA_ERR_NONE && i < req->components_count; i++) {
        const struct describe_client_quotas_request_component_data *c = &req->components[i];
        const char *match = handler_arena_cstr(ctx, c->match, &oom);
        if (oom)
            return HANDLER_CLOSE;
        rc = metadata_quota_filter_add(&f, c->entity_type.data, c->entity_type.len > 0 ? (size_t)c->entity_type.len : 0,
                                       c->match_type, match, err, sizeof err);
    }
    if (rc == KAFKA_ERR_NONE)
        rc = metadata_quota_filter_check(&f, err, sizeof err);
    if (rc != KAFKA_ERR_NONE) {
        resp->error_code = rc;
        resp->error_message = kafka_arena_strdup(&ctx->arena, err);
        resp->entries_count = -1;
        return HANDLER_RESPOND;
    }
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    int failed = describe_matches(ctx, img, &f, resp);
    metadata_image_release(img);
    return failed ? HANDLER_CLOSE : HANDLER_RESPOND;
}
