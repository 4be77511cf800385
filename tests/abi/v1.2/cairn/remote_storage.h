/* Cairn plugin ABI: remote (tiered) storage of closed log segments, in the
 * shape of KIP-405's RemoteStorageManager: copy a segment and its indexes
 * out, read a byte range or an index back, delete. Where segments live and
 * which are remote is tracked by the broker, not by this plugin. */
#ifndef CAIRN_REMOTE_STORAGE_H
#define CAIRN_REMOTE_STORAGE_H

#include "cairn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum cairn_remote_index_type {
    CAIRN_REMOTE_INDEX_OFFSET = 0,
    CAIRN_REMOTE_INDEX_TIMESTAMP = 1,
    CAIRN_REMOTE_INDEX_PRODUCER_SNAPSHOT = 2,
    CAIRN_REMOTE_INDEX_TRANSACTION = 3,
    CAIRN_REMOTE_INDEX_LEADER_EPOCH = 4,
};

/* RemoteLogSegmentMetadata: which segment, and what it holds. */
struct cairn_remote_segment {
    uint32_t struct_size;
    uint8_t topic_id[16];
    const char *topic;
    int32_t partition;
    uint8_t segment_id[16]; /* unique per copy attempt */
    int64_t start_offset;
    int64_t end_offset; /* inclusive */
    int64_t max_timestamp_ms;
    int32_t broker_id; /* the broker that copied it */
    int64_t event_timestamp_ms;
    int64_t segment_size_bytes;
    /* Leader epochs in the segment: epochs[i] starts at epoch_start_offsets[i]. */
    const int32_t *epochs;
    const int64_t *epoch_start_offsets;
    size_t epoch_count;
    /* What copy_segment returned as custom metadata, for fetch and delete. */
    const uint8_t *custom_metadata;
    size_t custom_metadata_len;
};

/* LogSegmentData: local files of a closed segment. Paths stay readable for
 * the duration of copy_segment. txn_index_path is NULL when the segment has
 * no aborted transactions; producer_snapshot_path is NULL when the broker
 * holds no snapshot at the segment's end (one pruned by recovery). */
struct cairn_remote_segment_files {
    uint32_t struct_size;
    const char *log_path;
    const char *offset_index_path;
    const char *time_index_path;
    const char *txn_index_path;
    const char *producer_snapshot_path;
    const uint8_t *leader_epoch_checkpoint; /* the leader-epoch-checkpoint content for the segment */
    size_t leader_epoch_checkpoint_len;
};

/* Where fetched bytes go. write returns CAIRN_OK, or an error to stop the
 * transfer (the reader went away); fetch then returns that error. */
struct cairn_byte_sink {
    uint32_t struct_size;
    void *ctx;
    int (*write)(void *ctx, const uint8_t *data, size_t len);
};

/* Thread-safety: every call may block (network, disk) and is made from the
 * host's blocking-work threads, never from an io thread; calls for different
 * segments run concurrently. */
struct cairn_remote_storage_vtable {
    uint32_t struct_size;
    /* Copies the segment and its indexes. May write up to
     * *custom_metadata_len bytes of plugin data to custom_metadata (set the
     * length used; 0 for none); the broker stores it and passes it back. */
    int (*copy_segment)(void *instance, const struct cairn_remote_segment *segment,
                        const struct cairn_remote_segment_files *files, uint8_t *custom_metadata,
                        size_t *custom_metadata_len, char *err, size_t errlen);
    /* Bytes [start_position, end_position) of the segment's log file;
     * end_position < 0 reads to its end. */
    int (*fetch_segment)(void *instance, const struct cairn_remote_segment *segment, int64_t start_position,
                         int64_t end_position, const struct cairn_byte_sink *sink, char *err, size_t errlen);
    /* One index (enum cairn_remote_index_type); CAIRN_NOT_FOUND when the
     * segment has none of that type. */
    int (*fetch_index)(void *instance, const struct cairn_remote_segment *segment, int32_t index_type,
                       const struct cairn_byte_sink *sink, char *err, size_t errlen);
    /* Deletes everything copy_segment stored; deleting a missing segment is
     * CAIRN_OK. */
    int (*delete_segment)(void *instance, const struct cairn_remote_segment *segment, char *err, size_t errlen);
};

#ifdef __cplusplus
}
#endif

#endif
