/* Layout of struct broker_config, shared by the files of this module only. */
#ifndef CAIRN_CONFIG_CONFIG_INTERNAL_H
#define CAIRN_CONFIG_CONFIG_INTERNAL_H
#include "config/config_registry.h"
#include "config/properties.h"

struct config_slot {
    struct config_parsed parsed; /* value as set, or the default */
    enum config_source source;
};

struct protocol_map_entry {
    char *listener;
    char *protocol;
};

/* Immutable after config_build returns; see config.h. */
struct broker_config {
    struct config_slot *slots; /* one per broker registry key, same order */
    size_t slot_count;
    struct properties explicit_entries; /* file entries, then overrides */
    char *file_path;
    struct protocol_map_entry *protocol_map;
    size_t protocol_map_len;
};

const struct config_slot *config_slot_for(const struct broker_config *cfg, const char *key,
                                          const struct config_key_def **def);

/* Trimmed text of any known key's value; NULL when null or unknown. */
const char *config_value_text(const struct broker_config *cfg, const char *key);

/* Cross-key checks run after every key parsed (config_checks.c). */
int config_check_consistency(struct broker_config *cfg, char *err, size_t errlen);

#endif
