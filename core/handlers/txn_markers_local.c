/* In-process transaction markers: the coordinator's txn_marker_ops over the
 * local partition logs. */
#include "handlers/txn_markers_local.h"

#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "group/group_coordinator.h"
#include "group/group_log.h"
#include "coordinator/purgatory.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

int16_t txn_markers_write_partition(const struct txn_markers_local *local, struct partition_log *log, const char *topic,
                                    int32_t partition, int64_t producer_id, int16_t producer_epoch,
                                    int32_t coordinator_epoch, bool commit, int32_t leader_epoch)
{
    if (leader_epoch < 0)
        leader_epoch = partition_log_latest_epoch(log);
    int64_t offset;
    int16_t code = partition_log_append_txn_marker(log, producer_id, producer_epoch, coordinator_epoch, commit,
                                                   leader_epoch, &offset);
    if (code == KAFKA_ERR_NONE && offset >= 0 && local->fetch_purgatory)
        /* The log's address is the watch key fetches park on, as for produce. */
        purgatory_notify(local->fetch_purgatory, (uintptr_t)log);
    if (code == KAFKA_ERR_NONE && local->groups && topic && strcmp(topic, GROUP_LOG_TOPIC) == 0) {
        /* A reload replays this marker to settle the pending offsets, so it
         * must be on disk before memory says they are settled. */
        code = partition_log_flush_records(log);
        if (code == KAFKA_ERR_NONE)
            group_coordinator_complete_txn(local->groups, partition, producer_id, commit);
    }
    return code;
}

static int16_t local_write_markers(void *ctx, int64_t producer_id, int16_t producer_epoch, int32_t coordinator_epoch,
                                   bool commit, struct txn_marker_partition *parts, size_t count)
{
    const struct txn_markers_local *local = ctx;
    int16_t result = KAFKA_ERR_NONE;
    for (size_t i = 0; i < count; i++) {
        struct partition_log *log = parts[i].topic ? log_manager_get(local->logs, parts[i].topic, parts[i].partition)
                                                   : NULL;
        if (!log) {
            /* A deleted partition needs no marker. */
            parts[i].error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        parts[i].error_code = txn_markers_write_partition(local, log, parts[i].topic, parts[i].partition, producer_id,
                                                          producer_epoch, coordinator_epoch, commit, -1);
        partition_log_close(log);
        if (parts[i].error_code != KAFKA_ERR_NONE) {
            logger_warn("txn", "%s marker for producer %" PRId64 " on %s-%" PRId32 " failed: %s",
                        commit ? "COMMIT" : "ABORT", producer_id, parts[i].topic, parts[i].partition,
                        kafka_error_name(parts[i].error_code));
            result = parts[i].error_code;
        }
    }
    return result;
}

static const struct txn_marker_ops local_ops = {
    .write_markers = local_write_markers,
};

const struct txn_marker_ops *txn_markers_local_ops(void)
{
    return &local_ops;
}
