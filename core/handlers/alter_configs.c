/* AlterConfigs and IncrementalAlterConfigs for topics and brokers: both
 * become one metadata_alter_topic_configs / metadata_alter_broker_configs
 * call per resource, so each resource succeeds or fails as a whole.
 * AlterConfigs replaces a resource's dynamic configs (keys left out are
 * removed); IncrementalAlterConfigs sets, deletes, appends to or subtracts
 * from single keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config/config_registry.h"
#include "config/topic_config.h"
#include "handlers/handler_util.h"
#include "handlers/topic_policy.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "util/logger.h"

#define RESOURCE_TOPIC 2
#define RESOURCE_BROKER 4
#define LIST_EDIT_MAX_BYTES 4096

enum alter_config_op {
    ALTER_CONFIG_SET = 0,
    ALTER_CONFIG_DELETE = 1,
    ALTER_CONFIG_APPEND = 2,
    ALTER_CONFIG_SUBTRACT = 3,
};

/* One requested change, with strings still pointing into the request. */
struct alter_config_change {
    struct kafka_str name;
    struct kafka_str value; /* len -1: null */
    int8_t op;
};

struct alter_result {
    int16_t error_code;
    char message[512];
};

static int16_t fail(struct alter_result *res, int16_t code, const char *fmt, const char *arg)
{
    res->error_code = code;
    snprintf(res->message, sizeof res->message, fmt, arg);
    return code;
}

static char *arena_cstr(struct request_context *ctx, struct kafka_str s)
{
    if (s.len < 0)
        return NULL;
    char *out = kafka_arena_alloc(&ctx->arena, (size_t)s.len + 1);
    if (out)
        kafka_str_to_cstr(s, out, (size_t)s.len + 1);
    return out;
}

static bool list_contains(const char *list, const char *item, size_t item_len)
{
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == item_len && memcmp(p, item, len) == 0)
            return true;
        if (!end)
            break;
        p = end + 1;
    }
    return false;
}

/* APPEND adds the items of `items` missing from `current`; SUBTRACT removes
 * the items of `current` that appear in `items`. Comma-separated lists, as
 * Kafka writes list configs. Returns an arena string or NULL (no memory). */
static char *list_edit(struct request_context *ctx, const char *current, const char *items, bool append)
{
    size_t cap = strlen(current) + strlen(items) + 2;
    char *out = kafka_arena_alloc(&ctx->arena, cap);
    if (!out)
        return NULL;
    size_t used = 0;
    out[0] = '\0';
    /* Pass 0 copies the current items (minus subtracted ones), pass 1 the appended ones. */
    for (int pass = 0; pass < (append ? 2 : 1); pass++) {
        const char *p = pass == 0 ? current : items;
        while (*p) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            bool keep = len > 0;
            if (keep && pass == 0 && !append)
                keep = !list_contains(items, p, len);
            if (keep && pass == 1)
                keep = !list_contains(out, p, len);
            if (keep && used + len + 2 <= cap) {
                if (used > 0)
                    out[used++] = ',';
                memcpy(out + used, p, len);
                used += len;
                out[used] = '\0';
            }
            if (!end)
                break;
            p = end + 1;
        }
    }
    return out;
}

/* The value a change leaves for def's key (NULL: unset): SET's value, or
 * current with APPEND / SUBTRACT applied to it (current NULL: empty). A
 * null SET unsets with replace_all (AlterConfigs) and is refused
 * otherwise. Returns KAFKA_ERR_NONE or res's error. */
static int16_t change_value(struct request_context *ctx, const struct alter_config_change *c,
                            const struct config_key_def *def, const char *current, bool replace_all, char **out,
                            struct alter_result *res)
{
    const char *key = def->name;
    char *value = arena_cstr(ctx, c->value);
    if (c->value.len >= 0 && !value)
        return fail(res, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "%s", "out of memory");
    switch (c->op) {
    case ALTER_CONFIG_SET:
        break;
    case ALTER_CONFIG_DELETE:
        value = NULL;
        break;
    case ALTER_CONFIG_APPEND:
    case ALTER_CONFIG_SUBTRACT: {
        if (def->type != CONFIG_TYPE_LIST)
            return fail(res, KAFKA_ERR_INVALID_CONFIG,
                        c->op == ALTER_CONFIG_APPEND ? "Config value append is not allowed for config key: %s"
                                                     : "Config value subtract is not allowed for config key: %s",
                        key);
        if (!value)
            return fail(res, KAFKA_ERR_INVALID_REQUEST, "Null value not supported for: %s", key);
        if (!current)
            current = "";
        /* List keys hold a few short names; the bound keeps the quadratic
         * merge below cheap. */
        if (strlen(value) > LIST_EDIT_MAX_BYTES || strlen(current) > LIST_EDIT_MAX_BYTES)
            return fail(res, KAFKA_ERR_INVALID_CONFIG, "List too long to append to or subtract from: %s", key);
        value = list_edit(ctx, current, value, c->op == ALTER_CONFIG_APPEND);
        if (!value)
            return fail(res, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "%s", "out of memory");
        break;
    }
    default:
        return fail(res, KAFKA_ERR_INVALID_REQUEST, "Unknown config operation for %s", key);
    }
    if (c->op == ALTER_CONFIG_SET && !value && !replace_all)
        return fail(res, KAFKA_ERR_INVALID_REQUEST, "Null value not supported for: %s", key);
    *out = value;
    return KAFKA_ERR_NONE;
}

/* Turns the requested changes into (key, value-or-NULL) pairs for the
 * controller. With replace_all (AlterConfigs), dynamic configs of the topic
 * that the request leaves out are deleted, and a key given twice takes its
 * last value (Kafka's behaviour; librdkafka's test suite relies on it);
 * IncrementalAlterConfigs refuses a key given twice. Keys are matched
 * through their index in the topic key table, so the work stays linear in
 * the request size. */
static int16_t plan_topic_changes(struct request_context *ctx, const struct metadata_topic *topic,
                                  const struct alter_config_change *changes, int32_t change_count, bool replace_all,
                                  struct metadata_config_kv **kvs_out, int32_t *kv_count_out, struct alter_result *res)
{
    size_t key_count = topic_config_key_count();
    const struct topic_key_def *first_key = topic_config_key_at(0);
    int32_t *last_change = kafka_arena_alloc(&ctx->arena, (key_count + 1) * sizeof *last_change);
    int32_t *key_of_change = kafka_arena_alloc(&ctx->arena, (size_t)(change_count + 1) * sizeof *key_of_change);
    if (!last_change || !key_of_change)
        return fail(res, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "%s", "out of memory");
    for (size_t k = 0; k < key_count; k++)
        last_change[k] = -1;

    /* Pass 1: every name must be a known topic key. */
    for (int32_t i = 0; i < change_count; i++) {
        const struct alter_config_change *c = &changes[i];
        if (c->name.len < 0)
            return fail(res, KAFKA_ERR_INVALID_REQUEST, "%s", "Config name must not be null");
        if ((c->name.len > 0 && memchr(c->name.data, '\0', (size_t)c->name.len)) ||
            (c->value.len > 0 && memchr(c->value.data, '\0', (size_t)c->value.len)))
            return fail(res, KAFKA_ERR_INVALID_REQUEST, "%s", "Config names and values must not contain NUL");
        char name[256];
        if ((size_t)c->name.len >= sizeof name)
            return fail(res, KAFKA_ERR_INVALID_CONFIG, "%s", "Unknown topic config name");
        kafka_str_to_cstr(c->name, name, sizeof name);
        const struct topic_key_def *def = topic_config_find(name);
        if (!def)
            return fail(res, KAFKA_ERR_INVALID_CONFIG, "Unknown topic config name: %s", name);
        int32_t k = (int32_t)(def - first_key);
        if (!replace_all && last_change[k] >= 0)
            return fail(res, KAFKA_ERR_INVALID_REQUEST, "%s", "Error due to duplicate config keys");
        last_change[k] = i;
        key_of_change[i] = k;
    }

    int32_t cap = (int32_t)key_count + (replace_all ? topic->config_count : 0);
    struct metadata_config_kv *kvs = kafka_arena_alloc(&ctx->arena, (size_t)(cap > 0 ? cap : 1) * sizeof *kvs);
    if (!kvs)
        return fail(res, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "%s", "out of memory");
    int32_t n = 0;
    /* Pass 2: the winning change of each key, at most one per key. */
    for (int32_t i = 0; i < change_count; i++) {
        const struct alter_config_change *c = &changes[i];
        int32_t k = key_of_change[i];
        if (last_change[k] != i)
            continue;
        const struct topic_key_def *def = topic_config_key_at((size_t)k);
        const char *key = def->def.name;
        const char *current = metadata_topic_config(topic, key);
        char *value;
        if (change_value(ctx, c, &def->def, current ? current : def->def.default_value, replace_all, &value, res) !=
            KAFKA_ERR_NONE)
            return res->error_code;
        kvs[n].key = key;
        kvs[n].value = value;
        n++;
    }
    for (int32_t i = 0; replace_all && i < topic->config_count; i++) {
        const char *name = topic->configs[i].name;
        const struct topic_key_def *def = topic_config_find(name);
        if (def && last_change[def - first_key] >= 0)
            continue; /* given in the request */
        struct kafka_str copy = kafka_arena_strdup(&ctx->arena, name);
        if (copy.len < 0)
            return fail(res, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "%s", "out of memory");
        kvs[n].key = copy.data;
        kvs[n].value = NULL;
        n++;
    }
    *kvs_out = kvs;
    *kv_count_out = n;
    return KAFKA_ERR_NONE;
}

/* The index of the last of changes[0..before) naming a per-listener key
 * spelled as name, or -1. */
static int32_t listener_change_named(const struct alter_config_change *changes, int32_t before, struct kafka_str name)
{
    for (int32_t j = before - 1; j >= 0; j--)
        if (changes[j].name.len == name.len && name.len > 0 &&
            memcmp(changes[j].name.data, name.data, (size_t)name.len) == 0)
            return j;
    return -1;
}

/* One listener.name.<l>.ssl.* change, typed as its ssl.* key. */
static int16_t plan_listener_change(struct request_context *ctx, const struct alter_config_change *c, bool replace_all,
                                    struct metadata_config_kv *kv, struct alter_result *res)
{
    char *name = arena_cstr(ctx, c->name);
    if (!name)
        return fail(res, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "%s", "out of memory");
    const struct config_key_def *def = config_broker_key_at((size_t)config_listener_key_index(name));
    if (def->type == CONFIG_TYPE_LIST && (c->op == ALTER_CONFIG_APPEND || c->op == ALTER_CONFIG_SUBTRACT))
        return fail(res, KAFKA_ERR_INVALID_REQUEST, "APPEND and SUBTRACT are not supported for per-listener key %s",
                    name);
    char *value;
    if (change_value(ctx, c, def, NULL, replace_all, &value, res) != KAFKA_ERR_NONE)
        return res->error_code;
    *kv = (struct metadata_config_kv){name, value};
    return KAFKA_ERR_NONE;
}

/* The changes to one broker resource as the controller takes them (kvs)
 * and the resource's whole dynamic layer after them (layer, for checking
 * the result builds). Keys are matched by their index in the broker key
 * table; duplicates as in plan_topic_changes. */
static int16_t plan_broker_changes(struct request_context *ctx, const struct metadata_image *img, const char *resource,
                                   const struct alter_config_change *changes, int32_t change_count, bool replace_all,
                                   struct metadata_config_kv **kvs_out, int32_t *kv_count_out,
                                   struct config_kv **layer_out, size_t *layer_count_out, struct alter_result *res)
{
    size_t key_count = config_broker_key_count();
    const struct metadata_broker_config *current;
    int32_t current_count = metadata_image_broker_configs(img, resource, &current);
    int32_t *last_change = kafka_arena_alloc(&ctx->arena, (key_count + 1) * sizeof *last_change);
    int32_t *key_of_change = kafka_arena_alloc(&ctx->arena, (size_t)(change_count + 1) * sizeof *key_of_change);
    /* Per-listener keys are not in the table: each change may add one. */
    size_t most = key_count + (size_t)change_count + (size_t)current_count + 1;
    struct metadata_config_kv *kvs = kafka_arena_alloc(&ctx->arena, most * sizeof *kvs);
    struct config_kv *layer = kafka_arena_alloc(&ctx->arena, most * sizeof *layer);
    if (!last_change || !key_of_change || !kvs || !layer)
        return fail(res, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "%s", "out of memory");
    for (size_t k = 0; k < key_count; k++)
        last_change[k] = -1;
    for (int32_t i = 0; i < change_count; i++) {
        const struct alter_config_change *c = &changes[i];
        char name[256];
        if (c->name.len < 0 || (size_t)c->name.len >= sizeof name ||
            (c->name.len > 0 && memchr(c->name.data, '\0', (size_t)c->name.len)) ||
            (c->value.len > 0 && memchr(c->value.data, '\0', (size_t)c->value.len)))
            return fail(res, KAFKA_ERR_INVALID_REQUEST, "%s", "Invalid config name or value");
        kafka_str_to_cstr(c->name, name, sizeof name);
        long k = config_broker_key_index(name);
        if (k < 0 && config_listener_key_index(name) >= 0) {
            /* listener.name.<l>.ssl.*: not in the key table, matched by name. */
            key_of_change[i] = -1;
            int32_t earlier = listener_change_named(changes, i, c->name);
            if (earlier >= 0 && !replace_all)
                return fail(res, KAFKA_ERR_INVALID_REQUEST, "%s", "Error due to duplicate config keys");
            if (earlier >= 0)
                key_of_change[earlier] = -2; /* AlterConfigs: the last one wins */
            continue;
        }
        if (k < 0)
            return fail(res, KAFKA_ERR_INVALID_CONFIG, "Unknown broker config: %s", name);
        if (!replace_all && last_change[k] >= 0)
            return fail(res, KAFKA_ERR_INVALID_REQUEST, "%s", "Error due to duplicate config keys");
        last_change[k] = i;
        key_of_change[i] = (int32_t)k;
    }
    int32_t n = 0;
    size_t l = 0;
    /* The entries left alone stay in the layer; AlterConfigs drops them. */
    for (int32_t i = 0; i < current_count; i++) {
        long k = config_broker_key_index(current[i].name);
        if (k >= 0 && last_change[k] >= 0)
            continue;
        if (k < 0 && listener_change_named(changes, change_count, kafka_str_from_cstr(current[i].name)) >= 0)
            continue;
        if (!replace_all) {
            layer[l++] = (struct config_kv){current[i].name, current[i].value};
            continue;
        }
        struct kafka_str copy = kafka_arena_strdup(&ctx->arena, current[i].name);
        if (copy.len < 0)
            return fail(res, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "%s", "out of memory");
        kvs[n++] = (struct metadata_config_kv){copy.data, NULL};
    }
    for (int32_t i = 0; i < change_count; i++) {
        int32_t k = key_of_change[i];
        if (k == -1) {
            if (plan_listener_change(ctx, &changes[i], replace_all, &kvs[n], res) != KAFKA_ERR_NONE)
                return res->error_code;
            if (kvs[n].value)
                layer[l++] = (struct config_kv){kvs[n].key, kvs[n].value};
            n++;
            continue;
        }
        if (k < 0 || last_change[k] != i)
            continue;
        const struct config_key_def *def = config_broker_key_at((size_t)k);
        const char *now = NULL; /* what APPEND / SUBTRACT edit: dynamic, else static */
        for (int32_t j = 0; j < current_count && !now && def->type == CONFIG_TYPE_LIST; j++)
            if (strcmp(current[j].name, def->name) == 0)
                now = current[j].value;
        if (!now && def->type == CONFIG_TYPE_LIST)
            now = config_get_string(ctx->env->config, def->name);
        char *value;
        if (change_value(ctx, &changes[i], def, now, replace_all, &value, res) != KAFKA_ERR_NONE)
            return res->error_code;
        kvs[n++] = (struct metadata_config_kv){def->name, value};
        if (value)
            layer[l++] = (struct config_kv){def->name, value};
    }
    *kvs_out = kvs;
    *kv_count_out = n;
    *layer_out = layer;
    *layer_count_out = l;
    return KAFKA_ERR_NONE;
}

/* A BROKER resource: "" (the cluster-wide default) or a broker id. The
 * resulting layer must build over this broker's static config (values
 * parse, cross-key checks hold) before it reaches the metadata log. */
static void alter_broker(struct request_context *ctx, struct kafka_str resource_name,
                         const struct alter_config_change *changes, int32_t change_count, bool replace_all,
                         bool validate_only, struct alter_result *res)
{
    char resource[16] = "";
    if (resource_name.len >= (int32_t)sizeof resource ||
        (resource_name.len > 0 && !handler_name_cstr(resource_name, resource, sizeof resource)) ||
        !metadata_broker_resource_valid(resource)) {
        fail(res, KAFKA_ERR_INVALID_REQUEST, "%s", "Invalid broker resource name: expected a broker id or empty");
        return;
    }
    char self[16];
    snprintf(self, sizeof self, "%d", (int)ctx->env->node_id);
    bool is_default = resource[0] == '\0';
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    struct metadata_config_kv *kvs = NULL;
    int32_t kv_count = 0;
    struct config_kv *layer = NULL;
    size_t layer_count = 0;
    int16_t rc = plan_broker_changes(ctx, img, resource, changes, change_count, replace_all, &kvs, &kv_count, &layer,
                                     &layer_count, res);
    struct broker_config *layered = NULL;
    if (rc == KAFKA_ERR_NONE && (is_default || strcmp(resource, self) == 0) &&
        metadata_broker_config_layered(img, ctx->env->config, ctx->env->node_id, layer, layer_count, is_default,
                                       &layered, res->message, sizeof res->message) != 0)
        rc = res->error_code = KAFKA_ERR_INVALID_CONFIG;
    else if (layered && ctx->env->check_broker_config &&
             ctx->env->check_broker_config(ctx->env->check_broker_config_ctx, layered, res->message,
                                           sizeof res->message) != 0)
        rc = res->error_code = KAFKA_ERR_INVALID_CONFIG;
    config_free(layered);
    metadata_image_release(img);
    if (rc != KAFKA_ERR_NONE)
        return;
    res->error_code = metadata_alter_broker_configs(ctx->env->metadata, resource, kvs, kv_count, validate_only,
                                                    res->message, sizeof res->message);
    if (res->error_code == KAFKA_ERR_NONE) {
        res->message[0] = '\0';
        if (!validate_only && kv_count > 0)
            logger_info("admin", "altered %d dynamic config(s) of broker resource '%s' for %s", (int)kv_count, resource,
                        ctx->net->peer);
    }
}

static const char *op_name(int8_t op)
{
    switch (op) {
    case ALTER_CONFIG_SET:
        return "SET";
    case ALTER_CONFIG_DELETE:
        return "DELETE";
    case ALTER_CONFIG_APPEND:
        return "APPEND";
    case ALTER_CONFIG_SUBTRACT:
        return "SUBTRACT";
    default:
        return "UNKNOWN";
    }
}

/* An ADMIN audit event naming every requested change; built only when an
 * audit plugin listens. */
static void audit_config_change(struct request_context *ctx, const char *operation, int8_t resource_type,
                                struct kafka_str resource_name, const struct alter_config_change *changes,
                                int32_t change_count, bool validate_only, const struct alter_result *res)
{
    if (!ctx->env->plugins || ctx->env->plugins->audit_count == 0)
        return;
    char name[256];
    kafka_str_to_cstr(resource_name, name, sizeof name);
    json_t *details = json_object();
    json_t *list = json_array();
    for (int32_t i = 0; details && list && i < change_count; i++) {
        char key[256], value[1024];
        kafka_str_to_cstr(changes[i].name, key, sizeof key);
        json_t *c = json_object();
        json_object_set_new(c, "name", json_string(key));
        json_object_set_new(c, "op", json_string(op_name(changes[i].op)));
        long k = resource_type == RESOURCE_BROKER ? config_broker_key_index(key) : -1;
        bool sensitive = k >= 0 && config_broker_key_at((size_t)k)->type == CONFIG_TYPE_PASSWORD;
        if (changes[i].value.len >= 0) {
            /* A password never reaches the audit trail, even when refused. */
            kafka_str_to_cstr(changes[i].value, value, sizeof value);
            json_object_set_new(c, "value", json_string(sensitive ? "[hidden]" : value));
        }
        json_array_append_new(list, c);
    }
    json_object_set_new(details, "changes", list);
    json_object_set_new(details, "validate_only", json_boolean(validate_only));
    if (res->error_code != KAFKA_ERR_NONE && res->message[0])
        json_object_set_new(details, "error_message", json_string(res->message));
    char *text = json_dumps(details, JSON_COMPACT | JSON_SORT_KEYS);
    handler_audit_admin(ctx, operation,
                        resource_type == RESOURCE_BROKER ? CAIRN_RESOURCE_CLUSTER : CAIRN_RESOURCE_TOPIC, name,
                        res->error_code, text);
    free(text);
    json_decref(details);
}

static void alter_resource_checked(struct request_context *ctx, int8_t resource_type, struct kafka_str resource_name,
                                   const struct alter_config_change *changes, int32_t change_count, bool replace_all,
                                   bool validate_only, struct alter_result *res);

/* ALTER_CONFIGS on the topic (or the cluster for broker resources), then
 * the change itself, audited as an ADMIN event whatever its outcome. */
static void alter_resource(struct request_context *ctx, const char *operation, int8_t resource_type,
                           struct kafka_str resource_name, const struct alter_config_change *changes,
                           int32_t change_count, bool replace_all, bool validate_only, struct alter_result *res)
{
    res->error_code = KAFKA_ERR_NONE;
    res->message[0] = '\0';
    bool allowed = resource_type == RESOURCE_BROKER
                       ? handler_authorize_resource(ctx, CAIRN_OP_ALTER_CONFIGS, CAIRN_RESOURCE_CLUSTER,
                                                    HANDLER_CLUSTER_RESOURCE, true)
                       : handler_authorize_name(ctx, CAIRN_OP_ALTER_CONFIGS, CAIRN_RESOURCE_TOPIC, resource_name, true);
    if (!allowed) {
        /* The denial is audited as an AUTHORIZATION event, as for topics. */
        fail(res,
             resource_type == RESOURCE_BROKER ? KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED
                                              : KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED,
             "%s", "not authorized to alter this resource's configs");
        return;
    }
    alter_resource_checked(ctx, resource_type, resource_name, changes, change_count, replace_all, validate_only, res);
    audit_config_change(ctx, operation, resource_type, resource_name, changes, change_count, validate_only, res);
}

static void alter_resource_checked(struct request_context *ctx, int8_t resource_type, struct kafka_str resource_name,
                                   const struct alter_config_change *changes, int32_t change_count, bool replace_all,
                                   bool validate_only, struct alter_result *res)
{
    if (resource_type == RESOURCE_BROKER) {
        alter_broker(ctx, resource_name, changes, change_count, replace_all, validate_only, res);
        return;
    }
    if (resource_type != RESOURCE_TOPIC) {
        fail(res, KAFKA_ERR_INVALID_REQUEST, "%s", "unsupported resource type");
        return;
    }
    char name[256];
    if (!handler_name_cstr(resource_name, name, sizeof name)) {
        fail(res, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, "%s", "topic does not exist");
        return;
    }

    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    const struct metadata_topic *topic = img ? metadata_image_topic_by_name(img, name, strlen(name)) : NULL;
    if (!topic) {
        if (img)
            metadata_image_release(img);
        fail(res, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, "Topic %s does not exist.", name);
        return;
    }
    struct metadata_config_kv *kvs = NULL;
    int32_t kv_count = 0;
    int16_t rc = plan_topic_changes(ctx, topic, changes, change_count, replace_all, &kvs, &kv_count, res);
    struct topic_policy_change change = {
        .kind = CAIRN_POLICY_ALTER_CONFIGS,
        .topic = name,
        .validate_only = validate_only,
        .partitions = topic->partition_count,
        .current_partitions = topic->partition_count,
        .replication_factor = topic->partition_count > 0 ? (int16_t)topic->partitions[0].replica_count : 0,
        .configs = kvs,
        .config_count = kv_count,
    };
    metadata_image_release(img);
    if (rc != KAFKA_ERR_NONE)
        return;
    res->error_code = topic_policy_check(ctx, &change, res->message, sizeof res->message);
    if (res->error_code != KAFKA_ERR_NONE)
        return;
    res->error_code = handler_check_remote_storage(ctx, kvs, kv_count, res->message, sizeof res->message);
    if (res->error_code != KAFKA_ERR_NONE)
        return;

    res->error_code = metadata_alter_topic_configs(ctx->env->metadata, name, kvs, kv_count, validate_only, res->message,
                                                   sizeof res->message);
    if (res->error_code == KAFKA_ERR_NONE) {
        res->message[0] = '\0';
        if (!validate_only && kv_count > 0)
            logger_info("admin", "altered %d config(s) of topic '%s' for %s", (int)kv_count, name, ctx->net->peer);
    }
}

static struct kafka_str result_message(struct request_context *ctx, const struct alter_result *res)
{
    if (res->error_code == KAFKA_ERR_NONE)
        return (struct kafka_str){NULL, -1};
    return kafka_arena_strdup(&ctx->arena, res->message[0] ? res->message : kafka_error_name(res->error_code));
}

/* A resource's identity, for finding those named twice in one request
 * (Kafka answers all of them with INVALID_REQUEST). Sorting keeps this
 * O(n log n) for requests naming very many resources. */
struct resource_key {
    int8_t type;
    struct kafka_str name;
    int32_t index;
};

static int resource_key_cmp(const void *pa, const void *pb)
{
    const struct resource_key *a = pa, *b = pb;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    int32_t la = a->name.len > 0 ? a->name.len : 0, lb = b->name.len > 0 ? b->name.len : 0;
    int32_t common = la < lb ? la : lb;
    int c = common > 0 ? memcmp(a->name.data, b->name.data, (size_t)common) : 0;
    if (c != 0)
        return c;
    return la == lb ? 0 : (la < lb ? -1 : 1);
}

/* Sorts keys and returns an arena array of flags, true for each index named
 * more than once; NULL when out of memory. */
static bool *named_twice_flags(struct request_context *ctx, struct resource_key *keys, int32_t n)
{
    bool *twice = kafka_arena_alloc(&ctx->arena, (size_t)(n + 1) * sizeof *twice);
    if (!twice)
        return NULL;
    memset(twice, 0, (size_t)(n + 1) * sizeof *twice);
    if (n > 1)
        qsort(keys, (size_t)n, sizeof *keys, resource_key_cmp);
    for (int32_t i = 1; i < n; i++) {
        if (resource_key_cmp(&keys[i - 1], &keys[i]) == 0) {
            twice[keys[i - 1].index] = true;
            twice[keys[i].index] = true;
        }
    }
    return twice;
}

/* One resource of either request in a common form: the per-API difference,
 * the operation of each change, is settled when the request is read. The
 * result goes straight into the API's response entry. Lives in the request
 * arena; only the handler thread serving the request touches it. */
struct alter_resource {
    int8_t type;
    struct kafka_str name;
    struct alter_config_change *changes;
    int32_t change_count;
    int16_t *error_code_out;
    struct kafka_str *error_message_out;
};

/* Sets up r and returns its change array (room for config_count entries)
 * for the caller to fill; NULL when out of memory. */
static struct alter_config_change *alter_resource_init(struct request_context *ctx, struct alter_resource *r,
                                                       int8_t type, struct kafka_str name, int32_t config_count,
                                                       int16_t *error_code_out, struct kafka_str *error_message_out)
{
    r->type = type;
    r->name = name;
    r->change_count = config_count > 0 ? config_count : 0;
    r->changes = kafka_arena_alloc(&ctx->arena, (size_t)(r->change_count + 1) * sizeof *r->changes);
    r->error_code_out = error_code_out;
    r->error_message_out = error_message_out;
    return r->changes;
}

/* The part both APIs share: refuse resources named twice, then authorize,
 * apply and audit each of the others, writing every result. replace_all
 * selects AlterConfigs' semantics (see plan_topic_changes). Returns false
 * when out of memory. */
static bool alter_resources(struct request_context *ctx, const char *operation, bool replace_all, bool validate_only,
                            const struct alter_resource *resources, int32_t count)
{
    struct resource_key *keys = kafka_arena_alloc(&ctx->arena, (size_t)(count + 1) * sizeof *keys);
    if (!keys)
        return false;
    for (int32_t i = 0; i < count; i++)
        keys[i] = (struct resource_key){resources[i].type, resources[i].name, i};
    bool *twice = named_twice_flags(ctx, keys, count);
    if (!twice)
        return false;
    for (int32_t i = 0; i < count; i++) {
        const struct alter_resource *r = &resources[i];
        struct alter_result res = {0};
        if (twice[i])
            fail(&res, KAFKA_ERR_INVALID_REQUEST, "%s", "resource named more than once in the request");
        else
            alter_resource(ctx, operation, r->type, r->name, r->changes, r->change_count, replace_all, validate_only,
                           &res);
        *r->error_code_out = res.error_code;
        *r->error_message_out = result_message(ctx, &res);
    }
    return true;
}

enum handler_result handle_alter_configs(struct request_context *ctx, void *request, void *response)
{
    struct alter_configs_request *req = request;
    struct alter_configs_response *resp = response;
    HANDLER_NEW_ARRAY(ctx, resp->responses, req->resources_count,
                      alter_configs_response_alter_configs_resource_response_init);
    if (!resp->responses)
        return HANDLER_CLOSE;
    resp->responses_count = req->resources_count > 0 ? req->resources_count : 0;
    struct alter_resource *resources = kafka_arena_alloc(&ctx->arena,
                                                         (size_t)(resp->responses_count + 1) * sizeof *resources);
    if (!resources)
        return HANDLER_CLOSE;
    for (int32_t i = 0; i < resp->responses_count; i++) {
        const struct alter_configs_request_alter_configs_resource *in = &req->resources[i];
        struct alter_configs_response_alter_configs_resource_response *out = &resp->responses[i];
        out->resource_type = in->resource_type;
        out->resource_name = in->resource_name;
        struct alter_config_change *changes = alter_resource_init(ctx, &resources[i], in->resource_type,
                                                                  in->resource_name, in->configs_count,
                                                                  &out->error_code, &out->error_message);
        if (!changes)
            return HANDLER_CLOSE;
        /* AlterConfigs sets every key it names (a null value unsets it). */
        for (int32_t k = 0; k < resources[i].change_count; k++)
            changes[k] = (struct alter_config_change){in->configs[k].name, in->configs[k].value, ALTER_CONFIG_SET};
    }
    if (!alter_resources(ctx, "AlterConfigs", true, req->validate_only, resources, resp->responses_count))
        return HANDLER_CLOSE;
    return HANDLER_RESPOND;
}

enum handler_result handle_incremental_alter_configs(struct request_context *ctx, void *request, void *response)
{
    struct incremental_alter_configs_request *req = request;
    struct incremental_alter_configs_response *resp = response;
    HANDLER_NEW_ARRAY(ctx, resp->responses, req->resources_count,
                      incremental_alter_configs_response_alter_configs_resource_response_init);
    if (!resp->responses)
        return HANDLER_CLOSE;
    resp->responses_count = req->resources_count > 0 ? req->resources_count : 0;
    struct alter_resource *resources = kafka_arena_alloc(&ctx->arena,
                                                         (size_t)(resp->responses_count + 1) * sizeof *resources);
    if (!resources)
        return HANDLER_CLOSE;
    for (int32_t i = 0; i < resp->responses_count; i++) {
        const struct incremental_alter_configs_request_alter_configs_resource *in = &req->resources[i];
        struct incremental_alter_configs_response_alter_configs_resource_response *out = &resp->responses[i];
        out->resource_type = in->resource_type;
        out->resource_name = in->resource_name;
        struct alter_config_change *changes = alter_resource_init(ctx, &resources[i], in->resource_type,
                                                                  in->resource_name, in->configs_count,
                                                                  &out->error_code, &out->error_message);
        if (!changes)
            return HANDLER_CLOSE;
        for (int32_t k = 0; k < resources[i].change_count; k++)
            changes[k] = (struct alter_config_change){in->configs[k].name, in->configs[k].value,
                                                      in->configs[k].config_operation};
    }
    if (!alter_resources(ctx, "IncrementalAlterConfigs", false, req->validate_only, resources, resp->responses_count))
        return HANDLER_CLOSE;
    return HANDLER_RESPOND;
}
