/* Changing an open log's configuration (a topic's dynamic configs were
 * altered). Appends, rolls, flushes and retention read log->cfg under
 * write_lock, so they see either the old or the new settings as a whole. */
#include <pthread.h>

#include "log/partition_log_internal.h"

/* Field by field: the structs' padding bytes are indeterminate. */
static bool log_config_equal(const struct log_config *a, const struct log_config *b)
{
    return a->segment_bytes == b->segment_bytes && a->segment_ms == b->segment_ms &&
           a->retention_ms == b->retention_ms && a->retention_bytes == b->retention_bytes &&
           a->index_interval_bytes == b->index_interval_bytes && a->segment_index_bytes == b->segment_index_bytes &&
           a->flush_messages == b->flush_messages && a->flush_ms == b->flush_ms &&
           a->max_message_bytes == b->max_message_bytes && a->message_timestamp_type == b->message_timestamp_type &&
           a->message_timestamp_before_max_ms == b->message_timestamp_before_max_ms &&
           a->message_timestamp_after_max_ms == b->message_timestamp_after_max_ms && a->preallocate == b->preallocate &&
           a->cleanup_delete == b->cleanup_delete && a->cleanup_compact == b->cleanup_compact &&
           a->delete_retention_ms == b->delete_retention_ms && a->min_compaction_lag_ms == b->min_compaction_lag_ms &&
           a->max_compaction_lag_ms == b->max_compaction_lag_ms &&
           a->min_cleanable_dirty_ratio == b->min_cleanable_dirty_ratio &&
           a->remote_storage_enable == b->remote_storage_enable && a->local_retention_ms == b->local_retention_ms &&
           a->local_retention_bytes == b->local_retention_bytes;
}

bool partition_log_set_config(struct partition_log *log, const struct log_config *cfg)
{
    pthread_mutex_lock(&log->write_lock);
    bool changed = !log_config_equal(&log->cfg, cfg);
    if (changed)
        log->cfg = *cfg;
    pthread_mutex_unlock(&log->write_lock);
    return changed;
}

void partition_log_get_config(struct partition_log *log, struct log_config *out)
{
    pthread_mutex_lock(&log->write_lock);
    *out = log->cfg;
    pthread_mutex_unlock(&log->write_lock);
}
