#include "config/config.h"

#include "config/config_internal.h"
#include "util/logger.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void config_free(struct broker_config *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->slot_count; i++)
        config_parsed_free(&cfg->slots[i].parsed);
    free(cfg->slots);
    for (size_t i = 0; i < cfg->protocol_map_len; i++) {
        free(cfg->protocol_map[i].listener);
        free(cfg->protocol_map[i].protocol);
    }
    free(cfg->protocol_map);
    properties_free(&cfg->explicit_entries);
    free(cfg->file_path);
    free(cfg);
}

int config_build(const char *const *keys, const char *const *values, size_t count, struct broker_config **out,
                 char *err, size_t errlen)
{
    *out = NULL;
    struct broker_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        goto oom;
    for (size_t i = 0; i < count; i++)
        if (properties_set(&cfg->explicit_entries, keys[i], values[i], 0) < 0)
            goto oom;

    for (size_t i = 0; i < cfg->explicit_entries.count; i++) {
        const char *key = cfg->explicit_entries.entries[i].key;
        if (config_broker_key_index(key) >= 0)
            continue;
        if (strncmp(key, "plugin.", 7) == 0)
            logger_debug("config", "passing '%s' through to plugins", key);
        else if (strncmp(key, "listener.name.", 14) == 0)
            logger_debug("config", "'%s' applies to one listener", key);
        else
            logger_warn("config", "unknown configuration key '%s' ignored", key);
    }

    cfg->slot_count = config_broker_key_count();
    cfg->slots = calloc(cfg->slot_count, sizeof *cfg->slots);
    if (!cfg->slots)
        goto oom;
    for (size_t i = 0; i < cfg->slot_count; i++) {
        const struct config_key_def *def = config_broker_key_at(i);
        const char *raw = properties_get(&cfg->explicit_entries, def->name);
        cfg->slots[i].source = raw ? CONFIG_SOURCE_STATIC_BROKER_CONFIG : CONFIG_SOURCE_DEFAULT_CONFIG;
        if (!raw)
            raw = def->default_value;
        if (config_value_parse(def, raw, &cfg->slots[i].parsed, err, errlen) < 0)
            goto fail;
    }
    if (config_check_consistency(cfg, err, errlen) < 0)
        goto fail;
    *out = cfg;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    config_free(cfg);
    return -1;
}

const struct config_slot *config_slot_for(const struct broker_config *cfg, const char *key,
                                          const struct config_key_def **def)
{
    long index = config_broker_key_index(key);
    if (index < 0 || !cfg)
        return NULL;
    if (def)
        *def = config_broker_key_at((size_t)index);
    return &cfg->slots[index];
}

const char *config_value_text(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = config_slot_for(cfg, key, NULL);
    return slot ? slot->parsed.text : NULL;
}

const char *config_get_text(const struct broker_config *cfg, const char *key)
{
    return config_value_text(cfg, key);
}

/* Getter for a key expected to be of one of the given types. */
static const struct config_slot *typed_slot(const struct broker_config *cfg, const char *key, unsigned type_mask)
{
    const struct config_key_def *def;
    const struct config_slot *slot = config_slot_for(cfg, key, &def);
    if (!slot) {
        logger_error("config", "lookup of unknown configuration key '%s'", key);
        return NULL;
    }
    if (!(type_mask & (1u << def->type))) {
        logger_error("config", "configuration key '%s' is of type %s", key, config_type_name(def->type));
        return NULL;
    }
    return slot->parsed.is_null ? NULL : slot;
}

#define TYPE_BIT(t) (1u << CONFIG_TYPE_##t)

int32_t config_get_int(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = typed_slot(cfg, key, TYPE_BIT(INT) | TYPE_BIT(SHORT));
    return slot ? (int32_t)slot->parsed.integer : 0;
}

int64_t config_get_long(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = typed_slot(cfg, key, TYPE_BIT(INT) | TYPE_BIT(SHORT) | TYPE_BIT(LONG));
    return slot ? slot->parsed.integer : 0;
}

double config_get_double(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = typed_slot(cfg, key, TYPE_BIT(DOUBLE));
    return slot ? slot->parsed.number : 0.0;
}

bool config_get_bool(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = typed_slot(cfg, key, TYPE_BIT(BOOLEAN));
    return slot ? slot->parsed.integer != 0 : false;
}

const char *config_get_string(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = typed_slot(
        cfg, key, TYPE_BIT(STRING) | TYPE_BIT(CLASS) | TYPE_BIT(PASSWORD) | TYPE_BIT(LIST));
    return slot ? slot->parsed.text : NULL;
}

const char *const *config_get_list(const struct broker_config *cfg, const char *key, size_t *count)
{
    const struct config_slot *slot = typed_slot(cfg, key, TYPE_BIT(LIST) | TYPE_BIT(STRING));
    *count = slot ? slot->parsed.list_len : 0;
    return slot ? (const char *const *)slot->parsed.list : NULL;
}

bool config_has_value(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = config_slot_for(cfg, key, NULL);
    return slot && !slot->parsed.is_null;
}

enum config_source config_source(const struct broker_config *cfg, const char *key)
{
    const struct config_slot *slot = config_slot_for(cfg, key, NULL);
    return slot ? slot->source : CONFIG_SOURCE_UNKNOWN;
}

const char *config_file_path(const struct broker_config *cfg)
{
    return cfg->file_path;
}

int32_t config_node_id(const struct broker_config *cfg)
{
    int32_t node_id = config_get_int(cfg, "node.id");
    if (node_id >= 0)
        return node_id;
    int32_t broker_id = config_get_int(cfg, "broker.id");
    return broker_id >= 0 ? broker_id : 1;
}

const char *const *config_log_dirs(const struct broker_config *cfg, size_t *count)
{
    if (config_has_value(cfg, "log.dirs")) {
        const char *const *dirs = config_get_list(cfg, "log.dirs", count);
        if (*count > 0)
            return dirs;
    }
    return config_get_list(cfg, "log.dir", count);
}

/* Kafka treats a negative retention as "keep forever" and reports -1. */
int64_t config_log_retention_ms(const struct broker_config *cfg)
{
    int64_t ms;
    if (config_has_value(cfg, "log.retention.ms"))
        ms = config_get_long(cfg, "log.retention.ms");
    else if (config_has_value(cfg, "log.retention.minutes"))
        ms = (int64_t)config_get_int(cfg, "log.retention.minutes") * 60000;
    else
        ms = (int64_t)config_get_int(cfg, "log.retention.hours") * 3600000;
    return ms < 0 ? -1 : ms;
}

int64_t config_log_roll_ms(const struct broker_config *cfg)
{
    if (config_has_value(cfg, "log.roll.ms"))
        return config_get_long(cfg, "log.roll.ms");
    return (int64_t)config_get_int(cfg, "log.roll.hours") * 3600000;
}

int64_t config_log_roll_jitter_ms(const struct broker_config *cfg)
{
    if (config_has_value(cfg, "log.roll.jitter.ms"))
        return config_get_long(cfg, "log.roll.jitter.ms");
    return (int64_t)config_get_int(cfg, "log.roll.jitter.hours") * 3600000;
}

int64_t config_log_flush_interval_ms(const struct broker_config *cfg)
{
    if (config_has_value(cfg, "log.flush.interval.ms"))
        return config_get_long(cfg, "log.flush.interval.ms");
    return config_get_long(cfg, "log.flush.scheduler.interval.ms");
}

const char *config_advertised_listeners(const struct broker_config *cfg)
{
    const char *advertised = config_get_string(cfg, "advertised.listeners");
    return advertised ? advertised : config_get_string(cfg, "listeners");
}

const char *config_listener_security_protocol(const struct broker_config *cfg, const char *listener_name)
{
    for (size_t i = 0; i < cfg->protocol_map_len; i++)
        if (strcasecmp(cfg->protocol_map[i].listener, listener_name) == 0)
            return cfg->protocol_map[i].protocol;
    return NULL;
}

bool config_single_node(const struct broker_config *cfg)
{
    size_t voters, bootstrap;
    config_get_list(cfg, "controller.quorum.voters", &voters);
    config_get_list(cfg, "controller.quorum.bootstrap.servers", &bootstrap);
    return voters == 0 && bootstrap == 0;
}

int config_keys_with_prefix(const struct broker_config *cfg, const char *prefix, struct config_kv **out, size_t *count)
{
    size_t plen = strlen(prefix), n = 0;
    const struct properties *props = &cfg->explicit_entries;
    *out = NULL;
    *count = 0;
    for (size_t i = 0; i < props->count; i++)
        if (strncmp(props->entries[i].key, prefix, plen) == 0)
            n++;
    if (n == 0)
        return 0;
    struct config_kv *items = calloc(n, sizeof *items);
    if (!items)
        return -1;
    n = 0;
    for (size_t i = 0; i < props->count; i++)
        if (strncmp(props->entries[i].key, prefix, plen) == 0)
            items[n++] = (struct config_kv){props->entries[i].key, props->entries[i].value};
    *out = items;
    *count = n;
    return 0;
}

bool config_describe_next(const struct broker_config *cfg, size_t *pos, struct config_describe_entry *out)
{
    if (*pos >= cfg->slot_count)
        return false;
    const struct config_key_def *def = config_broker_key_at(*pos);
    const struct config_slot *slot = &cfg->slots[*pos];
    bool sensitive = def->type == CONFIG_TYPE_PASSWORD;
    *out = (struct config_describe_entry){
        .name = def->name,
        .value = sensitive ? NULL : slot->parsed.text,
        .read_only = !(def->flags & CONFIG_FLAG_RUNTIME),
        .source = slot->source,
        .is_sensitive = sensitive,
        .type = def->type,
        .documentation = def->doc,
    };
    (*pos)++;
    return true;
}
