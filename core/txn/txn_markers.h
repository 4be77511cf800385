/* The seam between the transaction coordinator and the partitions it
 * completes transactions on. The coordinator decides (commit or abort) and
 * calls write_markers for the partitions of a transaction; the partition
 * side appends one control batch (COMMIT or ABORT marker) per partition,
 * ends the producer's open transaction there and moves the last stable
 * offset. On a single node this is an in-process call; with several
 * brokers it becomes WriteTxnMarkers requests to partition leaders. */
#ifndef CAIRN_TXN_TXN_MARKERS_H
#define CAIRN_TXN_TXN_MARKERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct txn_marker_partition {
    const char *topic;
    int32_t partition;
    int16_t error_code; /* filled in by write_markers: KAFKA_ERR_NONE or why this partition failed */
};

/* Implemented by the partition side; may block on disk. Returns
 * KAFKA_ERR_NONE when every partition has its marker (per-partition errors
 * in parts[i].error_code otherwise). A partition that is gone
 * (UNKNOWN_TOPIC_OR_PARTITION) counts as done, as Kafka's coordinator
 * treats a deleted partition. Safe to call again with the same arguments: a
 * partition whose producer has no open transaction at that epoch takes no
 * second marker. */
struct txn_marker_ops {
    int16_t (*write_markers)(void *ctx, int64_t producer_id, int16_t producer_epoch, int32_t coordinator_epoch,
                             bool commit, struct txn_marker_partition *parts, size_t count);
};

#endif
