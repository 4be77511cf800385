#include "log/log_config.h"

void log_config_defaults(struct log_config *cfg)
{
    cfg->segment_bytes = 1073741824;
    cfg->segment_ms = 604800000;
    cfg->retention_ms = 604800000;
    cfg->retention_bytes = -1;
    cfg->index_interval_bytes = 4096;
    cfg->segment_index_bytes = 10485760;
    cfg->flush_messages = INT64_MAX;
    cfg->flush_ms = INT64_MAX;
    cfg->max_message_bytes = 1048588;
    cfg->message_timestamp_type = LOG_TIMESTAMP_CREATE_TIME;
    cfg->message_timestamp_before_max_ms = INT64_MAX;
    cfg->message_timestamp_after_max_ms = INT64_MAX;
    cfg->preallocate = false;
    cfg->producer_id_expiration_ms = 86400000;
    cfg->cleanup_delete = true;
    cfg->cleanup_compact = false;
    cfg->delete_retention_ms = 86400000;
    cfg->min_compaction_lag_ms = 0;
    cfg->max_compaction_lag_ms = INT64_MAX;
    cfg->min_cleanable_dirty_ratio = 0.5;
    cfg->remote_storage_enable = false;
    cfg->local_retention_ms = -2;
    cfg->local_retention_bytes = -2;
}
