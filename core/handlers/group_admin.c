/* Heartbeat, LeaveGroup, DescribeGroups, ListGroups and DeleteGroups:
 * answered at once from the group coordinator. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "group/group_coordinator.h"
#include "handlers/group_handlers.h"

enum handler_result handle_heartbeat(struct request_context *ctx, void *request, void *response)
{
    struct heartbeat_request *req = request;
    struct heartbeat_response *resp = response;
    if (!handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, req->group_id, true)) {
        resp->error_code = KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    resp->error_code = group_coordinator_heartbeat(
        ctx->env->groups, group_handler_cstr_or_empty(ctx, req->group_id), req->generation_id,
        group_handler_cstr_or_empty(ctx, req->member_id),
        ctx->api_version >= 3 ? group_handler_cstr(ctx, req->group_instance_id) : NULL);
    return HANDLER_RESPOND;
}

enum handler_result handle_leave_group(struct request_context *ctx, void *request, void *response)
{
    struct leave_group_request *req = request;
    struct leave_group_response *resp = response;
    if (!handler_authorize_name(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_GROUP, req->group_id, true)) {
        resp->error_code = KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    const char *group_id = group_handler_cstr_or_empty(ctx, req->group_id);
    if (ctx->api_version < 3) {
        struct group_leave_member m = {.member_id = group_handler_cstr_or_empty(ctx, req->member_id)};
        int16_t err = group_coordinator_leave(ctx->env->groups, group_id, &m, 1);
        resp->error_code = err != KAFKA_ERR_NONE ? err : m.error_code;
        return HANDLER_RESPOND;
    }
    int32_t n = req->members_count > 0 ? req->members_count : 0;
    struct group_leave_member *members = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof *members);
    if (!members)
        return HANDLER_CLOSE;
    for (int32_t i = 0; i < n; i++) {
        members[i] = (struct group_leave_member){
            .member_id = group_handler_cstr_or_empty(ctx, req->members[i].member_id),
            .group_instance_id = group_handler_cstr(ctx, req->members[i].group_instance_id),
        };
    }
    resp->error_code = group_coordinator_leave(ctx->env->groups, group_id, members, (size_t)n);
    if (resp->error_code != KAFKA_ERR_NONE)
        return HANDLER_RESPOND;
    HANDLER_NEW_ARRAY(ctx, resp->members, n, leave_group_response_member_response_init);
    if (!resp->members)
        return HANDLER_CLOSE;
    resp->members_count = n;
    for (int32_t i = 0; i < n; i++) {
        resp->members[i].member_id = req->members[i].member_id;
        resp->members[i].group_instance_id = req->members[i].group_instance_id;
        resp->members[i].error_code = members[i].error_code;
    }
    return HANDLER_RESPOND;
}

enum handler_result handle_describe_groups(struct request_context *ctx, void *request, void *response)
{
    struct describe_groups_request *req = request;
    struct describe_groups_response *resp = response;
    int32_t n = req->groups_count > 0 ? req->groups_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->groups, n, describe_groups_response_described_group_init);
    if (!resp->groups)
        return HANDLER_CLOSE;
    resp->groups_count = n;
    for (int32_t i = 0; i < n; i++) {
        struct describe_groups_response_described_group *out = &resp->groups[i];
        if (!handler_authorize_name(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_GROUP, req->groups[i], true)) {
            out->group_id = req->groups[i];
            out->error_code = KAFKA_ERR_GROUP_AUTHORIZATION_FAILED;
            continue;
        }
        struct group_description d;
        group_coordinator_describe(ctx->env->groups, group_handler_cstr_or_empty(ctx, req->groups[i]), &d);
        out->error_code = d.error_code;
        out->group_id = req->groups[i];
        out->group_state = kafka_arena_strdup(&ctx->arena, d.state);
        out->protocol_type = kafka_arena_strdup(&ctx->arena, d.protocol_type ? d.protocol_type : "");
        out->protocol_data = kafka_arena_strdup(&ctx->arena, d.protocol ? d.protocol : "");
        HANDLER_NEW_ARRAY(ctx, out->members, (int32_t)d.member_count,
                          describe_groups_response_described_group_member_init);
        if (out->members) {
            out->members_count = (int32_t)d.member_count;
            for (size_t k = 0; k < d.member_count; k++) {
                struct describe_groups_response_described_group_member *m = &out->members[k];
                m->member_id = kafka_arena_strdup(&ctx->arena, d.members[k].member_id);
                if (ctx->api_version >= 4)
                    m->group_instance_id = group_handler_str(ctx, d.members[k].group_instance_id);
                m->client_id = kafka_arena_strdup(&ctx->arena, d.members[k].client_id);
                m->client_host = kafka_arena_strdup(&ctx->arena, d.members[k].client_host);
                m->member_metadata = group_handler_bytes(ctx, d.members[k].metadata, d.members[k].metadata_len);
                m->member_assignment = group_handler_bytes(ctx, d.members[k].assignment, d.members[k].assignment_len);
            }
        }
        group_description_free(&d);
    }
    return HANDLER_RESPOND;
}

#define LIST_GROUPS_TYPE_CLASSIC "classic"

/* Kafka matches group types case-insensitively; an unknown name matches nothing. */
static bool list_groups_types_include_classic(const struct list_groups_request *req)
{
    size_t want = strlen(LIST_GROUPS_TYPE_CLASSIC);
    for (int32_t i = 0; i < req->types_filter_count; i++) {
        struct kafka_str t = req->types_filter[i];
        if (t.len == (int32_t)want && strncasecmp(t.data, LIST_GROUPS_TYPE_CLASSIC, want) == 0)
            return true;
    }
    return false;
}

enum handler_result handle_list_groups(struct request_context *ctx, void *request, void *response)
{
    struct list_groups_request *req = request;
    struct list_groups_response *resp = response;
    int32_t ns = ctx->api_version >= 4 && req->states_filter_count > 0 ? req->states_filter_count : 0;
    const char **states = kafka_arena_alloc(&ctx->arena, (size_t)(ns + 1) * sizeof *states);
    if (!states)
        return HANDLER_CLOSE;
    for (int32_t i = 0; i < ns; i++)
        states[i] = group_handler_cstr_or_empty(ctx, req->states_filter[i]);
    struct group_listing *l = NULL;
    size_t n = 0;
    resp->error_code = group_coordinator_list(ctx->env->groups, states, (size_t)ns, &l, &n);
    /* Every Cairn group is a classic group: a types filter without "classic" lists none. */
    if (ctx->api_version >= 5 && req->types_filter_count > 0 && !list_groups_types_include_classic(req)) {
        group_listing_free(l, n);
        l = NULL;
        n = 0;
    }
    HANDLER_NEW_ARRAY(ctx, resp->groups, (int32_t)n, list_groups_response_listed_group_init);
    if (!resp->groups) {
        group_listing_free(l, n);
        return HANDLER_CLOSE;
    }
    /* DESCRIBE on the cluster lists every group; otherwise only the groups
     * the principal may DESCRIBE, without audit (an implicit listing). */
    bool list_all = handler_authorize_resource(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE,
                                               false);
    int32_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (!list_all &&
            !handler_authorize_resource(ctx, CAIRN_OP_DESCRIBE, CAIRN_RESOURCE_GROUP, l[i].group_id, false))
            continue;
        resp->groups[out].group_id = kafka_arena_strdup(&ctx->arena, l[i].group_id);
        resp->groups[out].protocol_type = kafka_arena_strdup(&ctx->arena, l[i].protocol_type);
        if (ctx->api_version >= 4)
            resp->groups[out].group_state = kafka_arena_strdup(&ctx->arena, l[i].state);
        if (ctx->api_version >= 5)
            resp->groups[out].group_type = kafka_str_from_cstr(LIST_GROUPS_TYPE_CLASSIC);
        out++;
    }
    resp->groups_count = out;
    group_listing_free(l, n);
    return HANDLER_RESPOND;
}

enum handler_result handle_delete_groups(struct request_context *ctx, void *request, void *response)
{
    struct delete_groups_request *req = request;
    struct delete_groups_response *resp = response;
    int32_t n = req->groups_names_count > 0 ? req->groups_names_count : 0;
    HANDLER_NEW_ARRAY(ctx, resp->results, n, delete_groups_response_deletable_group_result_init);
    if (!resp->results)
        return HANDLER_CLOSE;
    resp->results_count = n;
    for (int32_t i = 0; i < n; i++) {
        resp->results[i].group_id = req->groups_names[i];
        resp->results[i].error_code = !handler_authorize_name(ctx, CAIRN_OP_DELETE, CAIRN_RESOURCE_GROUP,
                                                              req->groups_names[i], true)
                                          ? KAFKA_ERR_GROUP_AUTHORIZATION_FAILED
                                          : group_coordinator_delete_group(
                                                ctx->env->groups,
                                                group_handler_cstr_or_empty(ctx, req->groups_names[i]));
    }
    return HANDLER_RESPOND;
}
