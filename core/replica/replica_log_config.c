/* A topic's log settings: its dynamic configs over the broker's. */
#include "replica/replica_manager.h"

#include "config/config.h"
#include "config/topic_config.h"
#include "util/logger.h"

/* More dynamic configs than a topic can hold (one per topic-level key). */
#define MAX_TOPIC_OVERRIDES 64

/* The topic's configs over the broker's; on an invalid topic config the
 * broker defaults alone (logged). */
static void resolve_topic(const struct broker_config *config, const struct metadata_topic *topic,
                          struct topic_config_values *v)
{
    struct config_kv overrides[MAX_TOPIC_OVERRIDES] = {{0}};
    int32_t n = 0;
    for (int32_t i = 0; topic && i < topic->config_count && n < MAX_TOPIC_OVERRIDES; i++) {
        overrides[n].key = topic->configs[i].name;
        overrides[n].value = topic->configs[i].value;
        n++;
    }
    char err[256];
    if (topic_config_resolve(config, overrides, (size_t)n, v, err, sizeof err) != 0) {
        logger_warn("replica", "topic %s has an invalid config (%s); using broker defaults for it",
                    topic ? topic->name : "(defaults)", err);
        topic_config_resolve(config, NULL, 0, v, err, sizeof err);
    }
}

int32_t replica_min_insync_replicas(const struct broker_config *config, const struct metadata_topic *topic)
{
    struct topic_config_values v;
    resolve_topic(config, topic, &v);
    return v.min_insync_replicas;
}

void replica_log_config(const struct broker_config *config, const struct metadata_topic *topic, struct log_config *out)
{
    struct topic_config_values v;
    resolve_topic(config, topic, &v);
    log_config_defaults(out);
    out->segment_bytes = v.segment_bytes;
    out->segment_ms = v.segment_ms;
    out->retention_ms = v.retention_ms;
    out->retention_bytes = v.retention_bytes;
    out->index_interval_bytes = v.index_interval_bytes;
    out->segment_index_bytes = v.segment_index_bytes;
    out->flush_messages = v.flush_messages;
    out->flush_ms = v.flush_ms;
    out->max_message_bytes = v.max_message_bytes;
    out->producer_id_expiration_ms = config_get_long(config, "producer.id.expiration.ms");
    out->preallocate = v.preallocate;
    out->cleanup_delete = v.cleanup_delete;
    out->cleanup_compact = v.cleanup_compact;
    out->delete_retention_ms = v.delete_retention_ms;
    out->min_compaction_lag_ms = v.min_compaction_lag_ms;
    out->max_compaction_lag_ms = v.max_compaction_lag_ms;
    out->min_cleanable_dirty_ratio = v.min_cleanable_dirty_ratio;
    out->remote_storage_enable = v.remote_storage_enable;
    out->local_retention_ms = v.local_retention_ms;
    out->local_retention_bytes = v.local_retention_bytes;
    out->message_timestamp_type = v.message_timestamp_type == TOPIC_TIMESTAMP_LOG_APPEND_TIME
                                      ? LOG_TIMESTAMP_LOG_APPEND_TIME
                                      : LOG_TIMESTAMP_CREATE_TIME;
    /* Kafka's resolution: the deprecated difference applies to whichever
     * side is left at its default. */
    out->message_timestamp_before_max_ms = v.message_timestamp_before_max_ms != INT64_MAX
                                               ? v.message_timestamp_before_max_ms
                                               : v.message_timestamp_difference_max_ms;
    out->message_timestamp_after_max_ms = v.message_timestamp_after_max_ms != INT64_MAX
                                              ? v.message_timestamp_after_max_ms
                                              : v.message_timestamp_difference_max_ms;
}
