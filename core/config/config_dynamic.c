/* Dynamic broker configs: which keys AlterConfigs may set on a BROKER
 * resource, and a broker config with those values layered over the static
 * one (Kafka's order: per-broker, cluster-wide default, static, default). */
#include "config/config.h"

#include "config/config_internal.h"

#include <stdlib.h>
#include <string.h>

#define LISTENER_PREFIX "listener.name."

long config_listener_key_index(const char *key)
{
    size_t plen = strlen(LISTENER_PREFIX);
    if (strncmp(key, LISTENER_PREFIX, plen) != 0)
        return -1;
    const char *name = key + plen;
    const char *dot = strchr(name, '.');
    if (!dot || dot == name || strncmp(dot + 1, "ssl.", 4) != 0)
        return -1;
    return config_broker_key_index(dot + 1);
}

enum config_dynamic_verdict config_dynamic_check_key(const char *key, bool cluster_default, char *err, size_t errlen)
{
    long index = config_broker_key_index(key);
    if (index < 0)
        index = config_listener_key_index(key);
    if (index < 0) {
        snprintf(err, errlen, "Unknown broker config: %s", key);
        return CONFIG_DYNAMIC_UNKNOWN;
    }
    const struct config_key_def *def = config_broker_key_at((size_t)index);
    if (!(def->flags & CONFIG_FLAG_DYNAMIC)) {
        snprintf(err, errlen,
                 "Cannot update these configs dynamically: %s is read-only (set it in the broker's "
                 "config file and restart)",
                 key);
        return CONFIG_DYNAMIC_READ_ONLY;
    }
    if (!(def->flags & CONFIG_FLAG_RUNTIME)) {
        snprintf(err, errlen,
                 "Cannot update these configs dynamically: Cairn does not apply %s at runtime (set it "
                 "in the broker's config file and restart)",
                 key);
        return CONFIG_DYNAMIC_NOT_RUNTIME;
    }
    if (cluster_default && (def->flags & CONFIG_FLAG_PER_BROKER)) {
        snprintf(err, errlen, "Cannot update these configs at default cluster level, broker id must be specified: %s",
                 key);
        return CONFIG_DYNAMIC_PER_BROKER_ONLY;
    }
    return CONFIG_DYNAMIC_OK;
}

bool config_key_runtime(const char *key)
{
    long index = config_broker_key_index(key);
    if (index < 0)
        index = config_listener_key_index(key);
    return index >= 0 && (config_broker_key_at((size_t)index)->flags & CONFIG_FLAG_RUNTIME);
}

/* The value a layer gives key (the last entry naming it wins), or NULL. */
static const struct config_kv *layer_entry(const struct config_kv *layer, size_t count, const char *key)
{
    const struct config_kv *found = NULL;
    for (size_t i = 0; i < count; i++)
        if (strcmp(layer[i].key, key) == 0)
            found = &layer[i];
    return found;
}

int config_build_layered(const struct broker_config *base, const struct config_kv *cluster_default,
                         size_t default_count, const struct config_kv *per_broker, size_t per_broker_count,
                         struct broker_config **out, char *err, size_t errlen)
{
    *out = NULL;
    struct broker_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        goto oom;
    for (size_t i = 0; i < base->explicit_entries.count; i++) {
        const struct properties_entry *e = &base->explicit_entries.entries[i];
        if (properties_set(&cfg->explicit_entries, e->key, e->value, e->line) < 0)
            goto oom;
    }
    if (base->file_path && !(cfg->file_path = strdup(base->file_path)))
        goto oom;
    cfg->slot_count = base->slot_count;
    cfg->slots = calloc(cfg->slot_count, sizeof *cfg->slots);
    if (!cfg->slots)
        goto oom;
    for (size_t i = 0; i < cfg->slot_count; i++) {
        const struct config_key_def *def = config_broker_key_at(i);
        const struct config_kv *kv = layer_entry(per_broker, per_broker_count, def->name);
        enum config_source source = CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG;
        if (!kv) {
            kv = layer_entry(cluster_default, default_count, def->name);
            source = CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG;
        }
        const char *raw = kv ? kv->value : base->slots[i].parsed.text;
        cfg->slots[i].source = kv ? source : base->slots[i].source;
        if (config_value_parse(def, raw, &cfg->slots[i].parsed, err, errlen) < 0)
            goto fail;
    }
    /* Per-listener keys live with the file's entries, where
     * tls_settings_from_config looks them up (per-broker over default). */
    const struct config_kv *layers[2] = {cluster_default, per_broker};
    size_t counts[2] = {default_count, per_broker_count};
    for (int layer = 0; layer < 2; layer++)
        for (size_t i = 0; i < counts[layer]; i++) {
            const struct config_kv *kv = &layers[layer][i];
            if (config_listener_key_index(kv->key) < 0)
                continue;
            struct config_parsed parsed;
            char why[256];
            if (config_value_parse(config_broker_key_at((size_t)config_listener_key_index(kv->key)), kv->value, &parsed,
                                   why, sizeof why) < 0) {
                snprintf(err, errlen, "%s: %s", kv->key, why);
                goto fail;
            }
            config_parsed_free(&parsed);
            if (properties_set(&cfg->explicit_entries, kv->key, kv->value, 0) < 0)
                goto oom;
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
