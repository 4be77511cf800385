/* Topic-level configuration: the keys a topic may override (CreateTopics,
 * AlterConfigs), their broker-level synonyms, validation, and resolution of
 * effective values. Tables are constant; functions are thread-safe given a
 * broker_config that is not being freed. */
#ifndef CAIRN_CONFIG_TOPIC_CONFIG_H
#define CAIRN_CONFIG_TOPIC_CONFIG_H
#include "config/config.h"
#include "config/config_registry.h"

#define TOPIC_CONFIG_MAX_SYNONYMS 3

struct topic_key_def {
    struct config_key_def def;                       /* topic key name, type, Kafka default, validation */
    const char *synonyms[TOPIC_CONFIG_MAX_SYNONYMS]; /* broker keys, highest precedence first */
};

size_t topic_config_key_count(void);
const struct topic_key_def *topic_config_key_at(size_t index);
const struct topic_key_def *topic_config_find(const char *name);

/* Validate one (key, value) pair from a client. Returns 0, or
 * KAFKA_ERR_INVALID_CONFIG (40) with a message such as
 *   invalid value 'x' for 'retention.ms': expected an integer in [-1, 9223372036854775807]
 *   unknown topic config 'foo' */
int topic_config_validate(const char *key, const char *value, char *err, size_t errlen);

enum topic_timestamp_type { TOPIC_TIMESTAMP_CREATE_TIME = 0, TOPIC_TIMESTAMP_LOG_APPEND_TIME = 1 };

/* Effective values of every topic key. */
struct topic_config_values {
    bool cleanup_delete;
    bool cleanup_compact;
    char compression_type[16]; /* uncompressed, zstd, lz4, snappy, gzip or producer */
    int64_t delete_retention_ms;
    int64_t file_delete_delay_ms;
    int64_t flush_messages;
    int64_t flush_ms;
    int32_t index_interval_bytes;
    int64_t max_compaction_lag_ms;
    int32_t max_message_bytes;
    enum topic_timestamp_type message_timestamp_type;
    int64_t message_timestamp_difference_max_ms;
    int64_t message_timestamp_before_max_ms;
    int64_t message_timestamp_after_max_ms;
    double min_cleanable_dirty_ratio;
    int64_t min_compaction_lag_ms;
    int32_t min_insync_replicas;
    bool preallocate;
    int64_t retention_bytes;
    int64_t retention_ms; /* -1: keep forever */
    int32_t segment_bytes;
    int32_t segment_index_bytes;
    int64_t segment_jitter_ms;
    int64_t segment_ms;
    bool unclean_leader_election_enable;
    bool message_downconversion_enable;
    bool remote_storage_enable;
    int64_t local_retention_ms;    /* -2: as retention.ms */
    int64_t local_retention_bytes; /* -2: as retention.bytes */
};

/* Topic overrides win over the broker's synonyms, which win over Kafka's
 * defaults. broker_cfg may be NULL (Kafka defaults only). Each override is
 * validated; returns 0 or KAFKA_ERR_INVALID_CONFIG with err filled. */
int topic_config_resolve(const struct broker_config *broker_cfg, const struct config_kv *overrides,
                         size_t override_count, struct topic_config_values *out, char *err, size_t errlen);

/* One topic key as DescribeConfigs reports it, with its synonyms in
 * precedence order: the topic override (DYNAMIC_TOPIC_CONFIG), broker keys
 * set in the config (STATIC_BROKER_CONFIG), then the default
 * (DEFAULT_CONFIG). Strings point into the tables, overrides or broker_cfg. */
struct topic_config_synonym {
    const char *name;
    const char *value;
    enum config_source source;
};
struct topic_config_describe_entry {
    const char *name;
    const char *value;         /* effective value as text; NULL when null */
    enum config_source source; /* source of the winning value */
    bool read_only;            /* always false: topic keys are alterable */
    bool is_sensitive;
    enum config_type type;
    const char *documentation;
    struct topic_config_synonym synonyms[2 * TOPIC_CONFIG_MAX_SYNONYMS + 1];
    size_t synonym_count;
    char value_buffer[24]; /* holds value when derived from several broker keys */
};
/* Describe key number index (0..topic_config_key_count()-1). Returns 0, -1 when out of range. */
int topic_config_describe(const struct broker_config *broker_cfg, const struct config_kv *overrides,
                          size_t override_count, size_t index, struct topic_config_describe_entry *out);

#endif
