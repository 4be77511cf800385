/* The partition side of transaction markers on this broker: the
 * txn_marker_ops the transaction coordinator calls in process (ctx = the
 * broker's struct log_manager *), and the per-partition step the
 * WriteTxnMarkers API shares with it.
 *
 * Thread-safety: every function may be called from any thread. The fetch
 * purgatory is registered once at start-up, before requests are served. */
#ifndef CAIRN_HANDLERS_TXN_MARKERS_LOCAL_H
#define CAIRN_HANDLERS_TXN_MARKERS_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#include "txn/txn_markers.h"

struct partition_log;
struct purgatory;

/* write_markers over the local logs; ctx is a struct log_manager *. */
const struct txn_marker_ops *txn_markers_local_ops(void);

/* Fetches parked in this purgatory wake when a marker moves a partition's
 * last stable offset. NULL: no wake-ups. */
void txn_markers_local_set_fetch_purgatory(struct purgatory *fetch_purgatory);

/* Append one marker to log and wake the fetches watching it. leader_epoch
 * < 0: the log's latest epoch. Returns a Kafka error code. */
int16_t txn_markers_write_partition(struct partition_log *log, int64_t producer_id,
                                    int16_t producer_epoch, int32_t coordinator_epoch, bool commit,
                                    int32_t leader_epoch);

#endif
