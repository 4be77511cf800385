/* Dynamic broker configs: which keys AlterConfigs may set on a BROKER
 * resource, and a broker config with those values layered over the static
 * one (Kafka's order: per-broker, cluster-wide default, static, default). */
#include "config/config.h"

#include "config/config_internal.h"

#include <stdlib.h>
#include <string.h>

enum config_dynamic_verdict config_dynamic_check_key(const char *key, bool cluster_default, char *err, size_t errlen)
{
    long index = config_broker_key_index(key);
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
