/* In-process transaction markers: the coordinator's txn_marker_ops over the
 * local partition logs. */
#include "handlers/txn_markers_local.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "handlers/purgatory.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

static _Atomic(struct purgatory *) marker_fetch_purgatory;

void txn_markers_local_set_fetch_purgatory(struct purgatory *fetch_purgatory)
{
    atomic_store(&marker_fetch_purgatory, fetch_purgatory);
}

int16_t txn_markers_write_partition(struct partition_log *log, int64_t producer_id,
                                    int16_t producer_epoch, int32_t coordinator_epoch, bool commit,
                                    int32_t leader_epoch)
{
    if (leader_epoch < 0)
        leader_epoch = partition_log_latest_epoch(log);
    int64_t offset;
    int16_t code = partition_log_append_txn_marker(log, producer_id, producer_epoch,
                                                   coordinator_epoch, commit, leader_epoch, &offset);
    if (code == KAFKA_ERR_NONE && offset >= 0) {
        struct purgatory *p = atomic_load(&marker_fetch_purgatory);
        /* The log's address is the watch key fetches park on, as for produce. */
        if (p)
            purgatory_notify(p, (uintptr_t)log);
    }
    return code;
}

static int16_t local_write_markers(void *ctx, int64_t producer_id, int16_t producer_epoch,
                                   int32_t coordinator_epoch, bool commit,
                                   struct txn_marker_partition *parts, size_t count)
{
    struct log_manager *logs = ctx;
    int16_t result = KAFKA_ERR_NONE;
    for (size_t i = 0; i < count; i++) {
        struct partition_log *log = parts[i].topic
                                        ? log_manager_get(logs, parts[i].topic, parts[i].partition)
                                        : NULL;
        if (!log) {
            /* A deleted partition needs no marker. */
            parts[i].error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        parts[i].error_code = txn_markers_write_partition(log, producer_id, producer_epoch,
                                                          coordinator_epoch, commit, -1);
        partition_log_close(log);
        if (parts[i].error_code != KAFKA_ERR_NONE) {
            logger_warn("txn", "%s marker for producer %" PRId64 " on %s-%" PRId32 " failed: %s",
                        commit ? "COMMIT" : "ABORT", producer_id, parts[i].topic,
                        parts[i].partition, kafka_error_name(parts[i].error_code));
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
