/* The partition side of transaction markers: the txn_marker_ops the
 * transaction coordinator calls in process (ctx = a struct
 * txn_markers_local), which writes the partitions this broker leads itself
 * and sends WriteTxnMarkers to the leaders of the others
 * (txn_markers_remote.c), and the per-partition step the WriteTxnMarkers
 * API shares with it.
 *
 * Thread-safety: every function may be called from any thread. */
#ifndef CAIRN_HANDLERS_TXN_MARKERS_LOCAL_H
#define CAIRN_HANDLERS_TXN_MARKERS_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#include "txn/txn_markers.h"

struct group_coordinator;
struct log_manager;
struct metadata_image;
struct metadata_store;
struct net_client;
struct partition_log;
struct purgatory;

/* What a marker touches besides the log. Owned by the broker; read-only
 * once built, and outlives every marker call. */
struct txn_markers_local {
    struct log_manager *logs;
    struct purgatory *fetch_purgatory; /* fetches parked on a log wake when its LSO moves; may be NULL */
    struct group_coordinator *groups;  /* completes TxnOffsetCommit offsets; may be NULL */
    /* With client and metadata set, a partition whose leader (in the
     * metadata image) is another broker gets its marker through a
     * WriteTxnMarkers request to it; NULL: every partition is written here. */
    struct metadata_store *metadata;
    struct net_client *client;
    int32_t node_id;
    const char *listener;       /* the inter-broker listener; NULL or "": the first PLAINTEXT endpoint */
    bool link_is_tls;           /* TLS or SASL link: never fall back to a PLAINTEXT endpoint */
    int64_t request_timeout_ms; /* per WriteTxnMarkers request; <= 0 means 5000 */
};

/* write_markers over the local logs; ctx is a struct txn_markers_local *. */
const struct txn_marker_ops *txn_markers_local_ops(void);

/* Append one marker to log (partition `partition` of `topic`), wake the
 * fetches watching it, and on __consumer_offsets flush it and complete the
 * producer's pending transactional offsets there. leader_epoch < 0: the
 * log's latest epoch. Returns a Kafka error code. */
int16_t txn_markers_write_partition(const struct txn_markers_local *local, struct partition_log *log, const char *topic,
                                    int32_t partition, int64_t producer_id, int16_t producer_epoch,
                                    int32_t coordinator_epoch, bool commit, int32_t leader_epoch);

/* Sends the markers of parts[i] with leaders[i] >= 0 to that leader (one
 * request per leader) and waits for the answers; each such part's
 * error_code is the leader's answer for it, or the network error. Parts
 * with leaders[i] < 0 are left alone. Blocks up to the request timeout. */
void txn_markers_write_remote(const struct txn_markers_local *local, const struct metadata_image *img,
                              const int32_t *leaders, int64_t producer_id, int16_t producer_epoch,
                              int32_t coordinator_epoch, bool commit, struct txn_marker_partition *parts, size_t count);

#endif
