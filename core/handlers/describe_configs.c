/* DescribeConfigs for topics (dynamic overrides over broker settings over
 * defaults, with synonyms) and for brokers: this broker's configs with the
 * dynamic ones layered over the static ones, or the cluster-wide default
 * layer (resource ""). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_registry.h"
#include "config/topic_config.h"
#include "handlers/handler_util.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"

#define RESOURCE_TOPIC 2
#define RESOURCE_BROKER 4
#define MAX_TOPIC_OVERRIDES 256

typedef struct describe_configs_response_describe_configs_resource_result config_result;

static bool key_requested(const struct describe_configs_request_describe_configs_resource *res, const char *name)
{
    if (res->configuration_keys_count < 0)
        return true;
    for (int32_t i = 0; i < res->configuration_keys_count; i++)
        if (kafka_str_eq_cstr(res->configuration_keys[i], name))
            return true;
    return false;
}

static struct kafka_str opt_str(struct request_context *ctx, const char *s)
{
    return kafka_arena_strdup(&ctx->arena, s);
}

static int describe_topic(struct request_context *ctx, bool synonyms, bool docs,
                          const struct describe_configs_request_describe_configs_resource *res,
                          struct describe_configs_response_describe_configs_result *out)
{
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    const struct metadata_topic *topic = res->resource_name.len > 0
                                             ? metadata_image_topic_by_name(img, res->resource_name.data,
                                                                            (size_t)res->resource_name.len)
                                             : NULL;
    if (!topic) {
        metadata_image_release(img);
        out->error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        out->error_message = kafka_arena_strdup(&ctx->arena, "topic does not exist");
        return 0;
    }
    struct config_kv overrides[MAX_TOPIC_OVERRIDES];
    size_t n_over = 0;
    for (int32_t i = 0; i < topic->config_count && n_over < MAX_TOPIC_OVERRIDES; i++) {
        overrides[n_over].key = topic->configs[i].name;
        overrides[n_over].value = topic->configs[i].value;
        n_over++;
    }
    /* Topic defaults come from the broker's keys, dynamic ones included. */
    struct broker_config *layered = NULL;
    char why[256];
    if (metadata_broker_configs_changed(NULL, img, ctx->env->node_id) &&
        metadata_broker_config_layered(img, ctx->env->config, ctx->env->node_id, NULL, 0, false, &layered, why,
                                       sizeof why) != 0)
        layered = NULL; /* an unusable layer is not applied either (replica manager) */
    const struct broker_config *broker_cfg = layered ? layered : ctx->env->config;
    size_t total = topic_config_key_count();
    HANDLER_NEW_ARRAY(ctx, out->configs, (int32_t)total,
                      describe_configs_response_describe_configs_resource_result_init);
    int rc = out->configs ? 0 : -1;
    int32_t count = 0;
    struct topic_config_describe_entry e;
    for (size_t i = 0; rc == 0 && i < total; i++) {
        if (topic_config_describe(broker_cfg, overrides, n_over, i, &e) != 0)
            continue;
        if (!key_requested(res, e.name))
            continue;
        config_result *c = &out->configs[count++];
        c->name = opt_str(ctx, e.name);
        c->value = e.is_sensitive ? (struct kafka_str){NULL, -1} : opt_str(ctx, e.value);
        c->read_only = e.read_only;
        c->config_source = (int8_t)e.source;
        c->is_sensitive = e.is_sensitive;
        c->config_type = (int8_t)e.type;
        c->documentation = docs ? opt_str(ctx, e.documentation) : (struct kafka_str){NULL, -1};
        if (synonyms && e.synonym_count > 0) {
            HANDLER_NEW_ARRAY(ctx, c->synonyms, (int32_t)e.synonym_count,
                              describe_configs_response_describe_configs_synonym_init);
            if (!c->synonyms) {
                rc = -1;
                break;
            }
            c->synonyms_count = (int32_t)e.synonym_count;
            for (size_t s = 0; s < e.synonym_count; s++) {
                c->synonyms[s].name = opt_str(ctx, e.synonyms[s].name);
                c->synonyms[s].value = opt_str(ctx, e.synonyms[s].value);
                c->synonyms[s].source = (int8_t)e.synonyms[s].source;
            }
        }
    }
    out->configs_count = count;
    config_free(layered);
    metadata_image_release(img);
    return rc;
}

/* Fills one entry's common fields. */
static void fill_entry(struct request_context *ctx, config_result *c, const char *name, const char *value,
                       const struct config_key_def *def, enum config_source source, bool docs)
{
    bool sensitive = def->type == CONFIG_TYPE_PASSWORD;
    c->name = opt_str(ctx, name);
    c->value = sensitive ? (struct kafka_str){NULL, -1} : opt_str(ctx, value);
    c->read_only = !(def->flags & CONFIG_FLAG_RUNTIME);
    c->config_source = (int8_t)source;
    c->is_sensitive = sensitive;
    c->config_type = (int8_t)def->type;
    c->documentation = docs ? opt_str(ctx, def->doc) : (struct kafka_str){NULL, -1};
}

/* The value of key in a resource's dynamic layer, or NULL. */
static const char *layer_value(const struct metadata_broker_config *layer, int32_t n, const char *key)
{
    for (int32_t i = 0; i < n; i++)
        if (strcmp(layer[i].name, key) == 0)
            return layer[i].value;
    return NULL;
}

/* Kafka's synonyms of a broker key: every layer that gives it a value,
 * highest precedence first. */
static int add_synonyms(struct request_context *ctx, config_result *c, const struct config_key_def *def,
                        const char *mine, const char *dflt)
{
    struct layer {
        const char *value;
        enum config_source source;
    } layers[4];
    int n = 0;
    if (mine)
        layers[n++] = (struct layer){mine, CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG};
    if (dflt)
        layers[n++] = (struct layer){dflt, CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG};
    if (config_source(ctx->env->config, def->name) == CONFIG_SOURCE_STATIC_BROKER_CONFIG)
        layers[n++] = (struct layer){config_get_text(ctx->env->config, def->name), CONFIG_SOURCE_STATIC_BROKER_CONFIG};
    if (def->default_value)
        layers[n++] = (struct layer){def->default_value, CONFIG_SOURCE_DEFAULT_CONFIG};
    if (n == 0)
        return 0;
    HANDLER_NEW_ARRAY(ctx, c->synonyms, n, describe_configs_response_describe_configs_synonym_init);
    if (!c->synonyms)
        return -1;
    c->synonyms_count = n;
    bool sensitive = def->type == CONFIG_TYPE_PASSWORD;
    for (int i = 0; i < n; i++) {
        c->synonyms[i].name = c->name;
        c->synonyms[i].value = sensitive ? (struct kafka_str){NULL, -1} : opt_str(ctx, layers[i].value);
        c->synonyms[i].source = (int8_t)layers[i].source;
    }
    return 0;
}

static int describe_broker(struct request_context *ctx, bool synonyms, bool docs,
                           const struct describe_configs_request_describe_configs_resource *res,
                           struct describe_configs_response_describe_configs_result *out)
{
    char self[16];
    snprintf(self, sizeof self, "%d", ctx->env->node_id);
    bool is_default = res->resource_name.len <= 0;
    if (!is_default && !kafka_str_eq_cstr(res->resource_name, self)) {
        out->error_code = KAFKA_ERR_INVALID_REQUEST;
        out->error_message = kafka_arena_strdup(&ctx->arena, "this broker only describes its own configs");
        return 0;
    }
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    const struct metadata_broker_config *dflt, *mine;
    int32_t n_dflt = metadata_image_broker_configs(img, "", &dflt);
    int32_t n_mine = is_default ? 0 : metadata_image_broker_configs(img, self, &mine);
    size_t total = config_broker_key_count();
    HANDLER_NEW_ARRAY(ctx, out->configs, (int32_t)(total + (size_t)n_mine),
                      describe_configs_response_describe_configs_resource_result_init);
    int rc = out->configs ? 0 : -1;
    int32_t count = 0;
    for (size_t i = 0; rc == 0 && i < total; i++) {
        const struct config_key_def *def = config_broker_key_at(i);
        if (!key_requested(res, def->name))
            continue;
        const char *my_value = n_mine > 0 ? layer_value(mine, n_mine, def->name) : NULL;
        const char *default_value = layer_value(dflt, n_dflt, def->name);
        /* The cluster-wide default resource lists only what is set there, as Kafka does. */
        if (is_default && !default_value)
            continue;
        config_result *c = &out->configs[count++];
        if (my_value)
            fill_entry(ctx, c, def->name, my_value, def, CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG, docs);
        else if (default_value)
            fill_entry(ctx, c, def->name, default_value, def, CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG, docs);
        else
            fill_entry(ctx, c, def->name, config_get_text(ctx->env->config, def->name), def,
                       config_source(ctx->env->config, def->name), docs);
        if (synonyms)
            rc = add_synonyms(ctx, c, def, my_value, default_value);
    }
    /* Per-listener keys set dynamically (listener.name.<l>.ssl.*), as Kafka
     * lists them: not in the key table, typed as their ssl.* key. */
    for (int32_t i = 0; rc == 0 && i < n_mine; i++) {
        long k = config_listener_key_index(mine[i].name);
        if (k < 0 || !key_requested(res, mine[i].name))
            continue;
        const struct config_key_def *def = config_broker_key_at((size_t)k);
        config_result *c = &out->configs[count++];
        fill_entry(ctx, c, mine[i].name, mine[i].value, def, CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG, docs);
        if (synonyms) {
            HANDLER_NEW_ARRAY(ctx, c->synonyms, 1, describe_configs_response_describe_configs_synonym_init);
            if (!c->synonyms) {
                rc = -1;
                break;
            }
            c->synonyms_count = 1;
            c->synonyms[0] = (struct describe_configs_response_describe_configs_synonym){
                .name = c->name, .value = c->value, .source = c->config_source};
        }
    }
    out->configs_count = count;
    metadata_image_release(img);
    return rc;
}

enum handler_result handle_describe_configs(struct request_context *ctx, void *request, void *response)
{
    struct describe_configs_request *req = request;
    struct describe_configs_response *resp = response;
    HANDLER_NEW_ARRAY(ctx, resp->results, req->resources_count, describe_configs_response_describe_configs_result_init);
    if (!resp->results)
        return HANDLER_CLOSE;
    resp->results_count = req->resources_count;
    for (int32_t i = 0; i < req->resources_count; i++) {
        const struct describe_configs_request_describe_configs_resource *res = &req->resources[i];
        struct describe_configs_response_describe_configs_result *out = &resp->results[i];
        out->resource_type = res->resource_type;
        out->resource_name = res->resource_name;
        out->error_message = (struct kafka_str){NULL, -1};
        int rc = 0;
        bool is_topic = res->resource_type == RESOURCE_TOPIC;
        if ((is_topic || res->resource_type == RESOURCE_BROKER) &&
            !handler_authorize_name(
                ctx, CAIRN_OP_DESCRIBE_CONFIGS, is_topic ? CAIRN_RESOURCE_TOPIC : CAIRN_RESOURCE_CLUSTER,
                is_topic ? res->resource_name : kafka_str_from_cstr(HANDLER_CLUSTER_RESOURCE), true)) {
            out->error_code = is_topic ? KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED : KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        } else if (res->resource_type == RESOURCE_TOPIC) {
            rc = describe_topic(ctx, req->include_synonyms, req->include_documentation, res, out);
        } else if (res->resource_type == RESOURCE_BROKER) {
            rc = describe_broker(ctx, req->include_synonyms, req->include_documentation, res, out);
        } else {
            out->error_code = KAFKA_ERR_INVALID_REQUEST;
            out->error_message = kafka_arena_strdup(&ctx->arena, "unsupported resource type");
        }
        if (rc != 0)
            return HANDLER_CLOSE;
    }
    return HANDLER_RESPOND;
}
