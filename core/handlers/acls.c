/* CreateAcls, DescribeAcls and DeleteAcls: ACL bindings kept in the
 * metadata log (AccessControlEntryRecord), Kafka's validation and errors.
 * CLUSTER ALTER authorizes creation and deletion, CLUSTER DESCRIBE the
 * listing. Unlike Kafka, the APIs answer without an authorizer loaded, so
 * ACLs can be put in place before the authorizer is turned on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers/handler_util.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "util/logger.h"

/* A filter from a DescribeAcls request or a DeleteAcls filter entry: the
 * generated structs differ in type but share these field names. */
#define FILTER_OF(ctx, in, oom)                                                                                        \
    ((struct metadata_acl_filter){                                                                                     \
        .resource_type = (in)->resource_type_filter,                                                                   \
        .resource_name = handler_arena_cstr((ctx), (in)->resource_name_filter, (oom)),                                 \
        .pattern_type = (in)->pattern_type_filter,                                                                     \
        .principal = handler_arena_cstr((ctx), (in)->principal_filter, (oom)),                                         \
        .host = handler_arena_cstr((ctx), (in)->host_filter, (oom)),                                                   \
        .operation = (in)->operation,                                                                                  \
        .permission_type = (in)->permission_type,                                                                      \
    })

static struct kafka_str message(struct request_context *ctx, int16_t code, const char *err)
{
    if (code == KAFKA_ERR_NONE)
        return (struct kafka_str){NULL, -1};
    return kafka_arena_strdup(&ctx->arena, err[0] ? err : kafka_error_name(code));
}

static bool may_alter_acls(struct request_context *ctx)
{
    return handler_authorize_one(ctx, CAIRN_OP_ALTER, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE);
}

enum handler_result handle_create_acls(struct request_context *ctx, void *request, void *response)
{
    struct create_acls_request *req = request;
    struct create_acls_response *resp = response;
    int32_t n = req->creations_count > 0 ? req->creations_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->results, n, create_acls_response_acl_creation_result_init);
    struct metadata_acl *valid = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof(*valid));
    int32_t *slot = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof(*slot));
    if (!resp->results || !valid || !slot)
        return HANDLER_CLOSE;
    resp->results_count = n;
    bool allowed = may_alter_acls(ctx);
    int32_t valid_count = 0;
    char err[512];
    for (int32_t i = 0; i < n; i++) {
        const struct create_acls_request_acl_creation *in = &req->creations[i];
        struct create_acls_response_acl_creation_result *out = &resp->results[i];
        err[0] = '\0';
        if (!allowed) {
            out->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
            out->error_message = message(ctx, out->error_code, "");
            continue;
        }
        bool oom = false;
        struct metadata_acl acl = {
            .resource_type = in->resource_type,
            .resource_name = handler_arena_cstr(ctx, in->resource_name, &oom),
            .pattern_type = in->resource_pattern_type,
            .principal = handler_arena_cstr(ctx, in->principal, &oom),
            .host = handler_arena_cstr(ctx, in->host, &oom),
            .operation = in->operation,
            .permission_type = in->permission_type,
        };
        if (oom)
            return HANDLER_CLOSE;
        out->error_code = metadata_acl_validate(&acl, err, sizeof err);
        out->error_message = message(ctx, out->error_code, err);
        if (out->error_code == KAFKA_ERR_NONE) {
            slot[valid_count] = i;
            valid[valid_count++] = acl;
        }
    }
    err[0] = '\0';
    int16_t rc = metadata_create_acls(ctx->env->metadata, valid, valid_count, err, sizeof err);
    for (int32_t v = 0; v < valid_count; v++) {
        struct create_acls_response_acl_creation_result *out = &resp->results[slot[v]];
        out->error_code = rc;
        out->error_message = message(ctx, rc, err);
        handler_audit_admin(ctx, "CreateAcls", valid[v].resource_type, valid[v].resource_name, rc, NULL);
    }
    if (rc == KAFKA_ERR_NONE && valid_count > 0)
        logger_info("admin", "created %d ACL binding(s) for %s", (int)valid_count, ctx->net->peer);
    return HANDLER_RESPOND;
}

static int by_resource(const void *a, const void *b)
{
    const struct metadata_acl *x = *(const struct metadata_acl *const *)a, *y = *(const struct metadata_acl *const *)b;
    if (x->resource_type != y->resource_type)
        return x->resource_type - y->resource_type;
    if (x->pattern_type != y->pattern_type)
        return x->pattern_type - y->pattern_type;
    return strcmp(x->resource_name, y->resource_name);
}

/* The bindings of img that f matches, as pointers in the request arena. */
static const struct metadata_acl **matching(struct request_context *ctx, const struct metadata_image *img,
                                            const struct metadata_acl_filter *f, int32_t *count)
{
    const struct metadata_acl **out = kafka_arena_alloc(&ctx->arena, (size_t)(img->acl_count + 1) * sizeof(*out));
    *count = 0;
    for (int32_t i = 0; out && i < img->acl_count; i++)
        if (metadata_acl_filter_matches(f, &img->acls[i]))
            out[(*count)++] = &img->acls[i];
    return out;
}

static enum handler_result describe_matches(struct request_context *ctx, const struct metadata_acl **m, int32_t count,
                                            struct describe_acls_response *resp)
{
    qsort(m, (size_t)count, sizeof(*m), by_resource);
    HANDLER_NEW_ARRAY(ctx, resp->resources, count, describe_acls_response_describe_acls_resource_init);
    if (!resp->resources)
        return HANDLER_CLOSE;
    int32_t groups = 0;
    for (int32_t i = 0; i < count;) {
        int32_t end = i + 1;
        while (end < count && by_resource(&m[i], &m[end]) == 0)
            end++;
        struct describe_acls_response_describe_acls_resource *r = &resp->resources[groups++];
        r->resource_type = m[i]->resource_type;
        r->resource_name = kafka_arena_strdup(&ctx->arena, m[i]->resource_name);
        r->pattern_type = m[i]->pattern_type;
        HANDLER_NEW_ARRAY(ctx, r->acls, end - i, describe_acls_response_acl_description_init);
        if (!r->acls)
            return HANDLER_CLOSE;
        r->acls_count = end - i;
        for (int32_t j = i; j < end; j++) {
            struct describe_acls_response_acl_description *d = &r->acls[j - i];
            d->principal = kafka_arena_strdup(&ctx->arena, m[j]->principal);
            d->host = kafka_arena_strdup(&ctx->arena, m[j]->host);
            d->operation = m[j]->operation;
            d->permission_type = m[j]->permission_type;
        }
        i = end;
    }
    resp->resources_count = groups;
    return HANDLER_RESPOND;
}

enum handler_result handle_describe_acls(struct request_context *ctx, void *request, void *response)
{
    struct describe_acls_request *req = request;
    struct describe_acls_response *resp = response;
    if (!handler_authorize_one(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE)) {
        resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        resp->error_message = message(ctx, resp->error_code, "");
        return HANDLER_RESPOND;
    }
    bool oom = false;
    struct metadata_acl_filter f = FILTER_OF(ctx, req, &oom);
    if (oom)
        return HANDLER_CLOSE;
    char err[256] = "";
    resp->error_code = metadata_acl_filter_validate(&f, err, sizeof err);
    if (resp->error_code != KAFKA_ERR_NONE) {
        resp->error_message = message(ctx, resp->error_code, err);
        return HANDLER_RESPOND;
    }
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    int32_t count = 0;
    const struct metadata_acl **m = matching(ctx, img, &f, &count);
    enum handler_result result = m ? describe_matches(ctx, m, count, resp) : HANDLER_CLOSE;
    /* The response points at arena copies only, so the image can go. */
    metadata_image_release(img);
    return result;
}

static bool fill_deleted(struct request_context *ctx, const struct metadata_acl *const *m, int32_t count,
                         struct delete_acls_response_delete_acls_filter_result *out)
{
    HANDLER_NEW_ARRAY(ctx, out->matching_acls, count, delete_acls_response_delete_acls_matching_acl_init);
    if (!out->matching_acls)
        return false;
    out->matching_acls_count = count;
    for (int32_t j = 0; j < count; j++) {
        struct delete_acls_response_delete_acls_matching_acl *d = &out->matching_acls[j];
        d->resource_type = m[j]->resource_type;
        d->resource_name = kafka_arena_strdup(&ctx->arena, m[j]->resource_name);
        d->pattern_type = m[j]->pattern_type;
        d->principal = kafka_arena_strdup(&ctx->arena, m[j]->principal);
        d->host = kafka_arena_strdup(&ctx->arena, m[j]->host);
        d->operation = m[j]->operation;
        d->permission_type = m[j]->permission_type;
    }
    return true;
}

enum handler_result handle_delete_acls(struct request_context *ctx, void *request, void *response)
{
    struct delete_acls_request *req = request;
    struct delete_acls_response *resp = response;
    int32_t n = req->filters_count > 0 ? req->filters_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->filter_results, n, delete_acls_response_delete_acls_filter_result_init);
    if (!resp->filter_results)
        return HANDLER_CLOSE;
    resp->filter_results_count = n;
    bool allowed = may_alter_acls(ctx);
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    const struct metadata_acl ***per_filter = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof(*per_filter));
    enum handler_result result = per_filter ? HANDLER_RESPOND : HANDLER_CLOSE;
    int32_t total = 0;
    char err[512];
    for (int32_t i = 0; per_filter && i < n; i++) {
        const struct delete_acls_request_delete_acls_filter *in = &req->filters[i];
        struct delete_acls_response_delete_acls_filter_result *out = &resp->filter_results[i];
        per_filter[i] = NULL;
        err[0] = '\0';
        if (!allowed) {
            out->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
            out->error_message = message(ctx, out->error_code, "");
            continue;
        }
        bool oom = false;
        struct metadata_acl_filter f = FILTER_OF(ctx, in, &oom);
        out->error_code = oom ? KAFKA_ERR_UNKNOWN_SERVER_ERROR : metadata_acl_filter_validate(&f, err, sizeof err);
        out->error_message = message(ctx, out->error_code, err);
        if (out->error_code != KAFKA_ERR_NONE)
            continue;
        int32_t count = 0;
        per_filter[i] = matching(ctx, img, &f, &count);
        if (!per_filter[i] || !fill_deleted(ctx, per_filter[i], count, out)) {
            result = HANDLER_CLOSE;
            break;
        }
        total += count;
    }
    /* Ids are copied before the image goes; the controller skips any a
     * concurrent deletion removed first. */
    struct kafka_uuid *ids = NULL;
    if (result == HANDLER_RESPOND && !(ids = kafka_arena_alloc(&ctx->arena, (size_t)(total + 1) * sizeof(*ids))))
        result = HANDLER_CLOSE;
    int32_t id_count = 0;
    for (int32_t i = 0; ids && i < n; i++)
        for (int32_t j = 0; per_filter[i] && j < resp->filter_results[i].matching_acls_count; j++)
            ids[id_count++] = per_filter[i][j]->id;
    metadata_image_release(img);
    if (result != HANDLER_RESPOND)
        return result;
    err[0] = '\0';
    int16_t rc = metadata_delete_acls(ctx->env->metadata, ids, id_count, err, sizeof err);
    for (int32_t i = 0; rc != KAFKA_ERR_NONE && i < n; i++) {
        struct delete_acls_response_delete_acls_filter_result *out = &resp->filter_results[i];
        if (out->error_code == KAFKA_ERR_NONE) {
            out->error_code = rc;
            out->error_message = message(ctx, rc, err);
            out->matching_acls_count = 0;
        }
    }
    if (id_count > 0)
        handler_audit_admin(ctx, "DeleteAcls", CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE, rc, NULL);
    return HANDLER_RESPOND;
}
