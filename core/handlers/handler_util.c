#include "handlers/handler_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "util/logger.h"
#include "util/topic_name.h"

int32_t *handler_copy_int32s(struct request_context *ctx, const int32_t *src, int32_t n)
{
    if (n <= 0)
        return NULL;
    int32_t *out = kafka_arena_alloc(&ctx->arena, (size_t)n * sizeof *out);
    if (out)
        memcpy(out, src, (size_t)n * sizeof *out);
    return out;
}

const struct metadata_endpoint *handler_endpoint_for_request(struct request_context *ctx,
                                                             const struct metadata_broker *b)
{
    const char *listener = ctx->net->listener_name;
    for (int32_t i = 0; listener && i < b->endpoint_count; i++)
        if (strcmp(b->endpoints[i].listener, listener) == 0)
            return &b->endpoints[i];
    return b->endpoint_count > 0 ? &b->endpoints[0] : NULL;
}

int16_t handler_topic_name_error(struct kafka_str name)
{
    bool ok = name.len > 0 && topic_name_valid(name.data, (size_t)name.len, NULL, 0);
    return ok ? KAFKA_ERR_NONE : KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
}

bool handler_name_cstr(struct kafka_str name, char *buf, size_t buflen)
{
    if (buflen)
        buf[0] = '\0';
    if (name.len <= 0 || (size_t)name.len >= buflen || memchr(name.data, '\0', (size_t)name.len))
        return false;
    kafka_str_to_cstr(name, buf, buflen);
    return true;
}

int16_t handler_auto_create_topic(struct request_context *ctx, const char *name)
{
    if (handler_topic_name_error(kafka_str_from_cstr(name)) != KAFKA_ERR_NONE)
        return KAFKA_ERR_INVALID_TOPIC_EXCEPTION;
    char err[256] = "";
    int16_t code = metadata_create_own_topic(ctx->env->metadata, name, -1, -1, NULL, 0, err, sizeof err);
    if (code == KAFKA_ERR_NONE)
        logger_info("handlers", "auto-created topic '%s' with %d partitions for %s", name,
                    ctx->env->default_num_partitions, ctx->net->peer);
    else if (code != KAFKA_ERR_TOPIC_ALREADY_EXISTS)
        logger_warn("handlers", "auto-create of topic '%s' failed: %s", name, err);
    return code == KAFKA_ERR_TOPIC_ALREADY_EXISTS ? KAFKA_ERR_NONE : code;
}

int16_t handler_leader_log(struct request_context *ctx, const struct metadata_topic *topic, int32_t partition,
                           struct partition_log **log_out)
{
    *log_out = NULL;
    const struct metadata_partition *p = topic ? metadata_topic_partition(topic, partition) : NULL;
    if (!p || !p->present)
        return KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    if (p->leader != ctx->env->node_id)
        return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    struct partition_log *log = log_manager_get(ctx->env->logs, topic->name, partition);
    if (!log)
        return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    *log_out = log;
    return KAFKA_ERR_NONE;
}

int64_t handler_high_watermark(struct partition_log *log)
{
    return partition_log_high_watermark(log);
}

void handler_split_peer(const char *peer, char *host, size_t hostlen, uint16_t *port)
{
    const char *colon = strrchr(peer, ':');
    size_t len = colon ? (size_t)(colon - peer) : strlen(peer);
    const char *start = peer;
    if (len >= 2 && peer[0] == '[' && peer[len - 1] == ']') {
        start++;
        len -= 2;
    }
    snprintf(host, hostlen, "%.*s", (int)len, start);
    *port = colon ? (uint16_t)strtoul(colon + 1, NULL, 10) : 0;
}

const struct cairn_request_info *handler_request_info(struct request_context *ctx)
{
    struct cairn_request_info *info = &ctx->info;
    if (info->struct_size)
        return info;
    ctx->principal.struct_size = sizeof ctx->principal;
    ctx->principal.type = ctx->net->principal_type ? ctx->net->principal_type : "User";
    ctx->principal.name = ctx->net->principal_name ? ctx->net->principal_name : "ANONYMOUS";
    handler_split_peer(ctx->net->peer, ctx->client_host, sizeof ctx->client_host, &info->client_port);
    info->connection_id = ctx->net->connection_id;
    info->principal = &ctx->principal;
    info->client_host = ctx->client_host;
    info->client_id = ctx->client_id;
    info->listener_name = ctx->net->listener_name ? ctx->net->listener_name : "";
    /* Resolved once, when the listener opened. */
    info->security_protocol = net_security_protocol_name(ctx->net->security_protocol);
    info->api_key = ctx->api_key;
    info->api_version = ctx->api_version;
    info->correlation_id = ctx->correlation_id;
    info->struct_size = sizeof *info;
    return info;
}

void handler_authorize(struct request_context *ctx, const struct cairn_authz_action *const *actions, size_t n,
                       uint8_t *results)
{
    if (!handler_decides(ctx)) {
        memset(results, CAIRN_AUTHZ_ALLOWED, n);
        return;
    }
    plugin_host_authorize(ctx->env->plugins, handler_request_info(ctx), actions, n, results);
}

/* One decision, kept in the request arena so a resource named many times
 * in a request (a topic per partition, a fetch retried from the purgatory)
 * is asked about, and audited, once. */
struct handler_authz_memo {
    struct handler_authz_memo *next;
    int32_t operation;
    int32_t resource_type;
    bool allowed;
    char name[];
};

#define HANDLER_AUTHZ_MEMO_MAX 256

bool handler_authorize_resource(struct request_context *ctx, int32_t operation, int32_t resource_type, const char *name,
                                bool audit)
{
    return handler_authorize_logged(ctx, operation, resource_type, name, audit, audit);
}

bool handler_authorize_logged(struct request_context *ctx, int32_t operation, int32_t resource_type, const char *name,
                              bool log_if_allowed, bool log_if_denied)
{
    if (!handler_decides(ctx))
        return true;
    int memo_count = 0;
    for (struct handler_authz_memo *m = ctx->authz_memo; m; m = m->next, memo_count++)
        if (m->operation == operation && m->resource_type == resource_type && strcmp(m->name, name) == 0)
            return m->allowed;
    struct cairn_authz_action action = {
        .struct_size = sizeof action,
        .operation = operation,
        .resource_type = resource_type,
        .resource_name = name,
        .pattern_type = CAIRN_PATTERN_LITERAL,
        .resource_reference_count = 1,
        .log_if_allowed = log_if_allowed,
        .log_if_denied = log_if_denied,
    };
    const struct cairn_authz_action *list[1] = {&action};
    uint8_t result = CAIRN_AUTHZ_DENIED;
    handler_authorize(ctx, list, 1, &result);
    bool allowed = result == CAIRN_AUTHZ_ALLOWED;
    size_t name_len = strlen(name);
    struct handler_authz_memo *m = memo_count < HANDLER_AUTHZ_MEMO_MAX
                                       ? kafka_arena_alloc(&ctx->arena, sizeof *m + name_len + 1)
                                       : NULL;
    if (m) {
        m->operation = operation;
        m->resource_type = resource_type;
        m->allowed = allowed;
        memcpy(m->name, name, name_len + 1);
        m->next = ctx->authz_memo;
        ctx->authz_memo = m;
    }
    return allowed;
}

bool handler_authorize_one(struct request_context *ctx, int32_t operation, int32_t resource_type,
                           const char *resource_name)
{
    if (!handler_decides(ctx))
        return true;
    return handler_authorize_resource(ctx, operation, resource_type, resource_name ? resource_name : "", true);
}

bool handler_authorize_name(struct request_context *ctx, int32_t operation, int32_t resource_type,
                            struct kafka_str resource_name, bool audit)
{
    if (!handler_decides(ctx))
        return true;
    size_t len = resource_name.len > 0 ? (size_t)resource_name.len : 0;
    char *name = kafka_arena_alloc(&ctx->arena, len + 1);
    if (!name)
        return false;
    if (len)
        memcpy(name, resource_name.data, len);
    name[len] = '\0';
    return handler_authorize_resource(ctx, operation, resource_type, name, audit);
}

void handler_audit_admin(struct request_context *ctx, const char *operation, int32_t resource_type,
                         const char *resource_name, int16_t error_code, const char *details_json)
{
    if (!ctx->env->plugins || ctx->env->plugins->audit_count == 0)
        return;
    plugin_host_audit_admin(ctx->env->plugins, handler_request_info(ctx), operation, resource_type, resource_name,
                            error_code, details_json);
}

int16_t handler_check_leader_epoch(const struct metadata_partition *p, int32_t current_leader_epoch)
{
    if (current_leader_epoch == -1 || !p || current_leader_epoch == p->leader_epoch)
        return KAFKA_ERR_NONE;
    return current_leader_epoch < p->leader_epoch ? KAFKA_ERR_FENCED_LEADER_EPOCH : KAFKA_ERR_UNKNOWN_LEADER_EPOCH;
}

char *handler_arena_cstr(struct request_context *ctx, struct kafka_str s, bool *oom)
{
    if (s.len < 0 || !s.data)
        return NULL;
    char *out = kafka_arena_alloc(&ctx->arena, (size_t)s.len + 1);
    if (!out) {
        *oom = true;
        return NULL;
    }
    memcpy(out, s.data, (size_t)s.len);
    out[s.len] = '\0';
    return out;
}

int16_t handler_check_remote_storage(const struct request_context *ctx, const struct metadata_config_kv *kvs,
                                     int32_t count, char *msg, size_t msglen)
{
    if (config_get_bool(ctx->env->config, "remote.log.storage.system.enable"))
        return KAFKA_ERR_NONE;
    for (int32_t i = 0; i < count; i++) {
        if (kvs[i].key && kvs[i].value && strcmp(kvs[i].key, "remote.storage.enable") == 0 &&
            strcasecmp(kvs[i].value, "true") == 0) {
            snprintf(msg, msglen,
                     "Tiered Storage functionality is disabled in the broker (remote.log.storage.system.enable is "
                     "false). Topic cannot be configured with remote log storage (remote.storage.enable=true).");
            return KAFKA_ERR_INVALID_CONFIG;
        }
    }
    return KAFKA_ERR_NONE;
}
