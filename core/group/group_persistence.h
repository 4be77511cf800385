/* The seam between the group coordinator (membership and offsets in memory)
 * and the durable group log (__consumer_offsets). The coordinator calls the
 * store functions before it answers a request, so what a client was told is
 * on disk; when a partition is loaded (at start-up, or when this broker
 * becomes its leader) the group log replays it through the load callbacks
 * before the coordinator serves the partition's groups.
 *
 * Plain data only: every pointer is borrowed for the duration of the call. */
#ifndef CAIRN_GROUP_GROUP_PERSISTENCE_H
#define CAIRN_GROUP_GROUP_PERSISTENCE_H

#include <stddef.h>
#include <stdint.h>

/* One committed offset (OffsetCommitKey/OffsetCommitValue). */
struct group_offset_record {
    const char *topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;     /* -1 when unknown */
    const char *metadata;     /* NULL when the client sent null */
    size_t metadata_len;      /* a Kafka string: NUL bytes are data */
    int64_t commit_timestamp; /* wall ms */
    int64_t expire_timestamp; /* -1: by offsets.retention.minutes */
};

/* One member in a group snapshot (GroupMetadataValue.members). */
struct group_member_record {
    const char *member_id;
    const char *group_instance_id; /* NULL when not static */
    const char *client_id;
    const char *client_host;
    int32_t rebalance_timeout_ms;
    int32_t session_timeout_ms;
    const uint8_t *subscription; /* protocol metadata of the chosen protocol */
    size_t subscription_len;
    const uint8_t *assignment;
    size_t assignment_len;
};

/* The group as GroupMetadataValue carries it; written when a generation
 * completes (SyncGroup of the leader) and when the group becomes Empty. */
struct group_snapshot_record {
    const char *group_id;
    const char *protocol_type; /* "" for a group used for offsets only */
    int32_t generation;
    const char *protocol; /* NULL when none chosen */
    const char *leader;   /* NULL when none */
    int64_t current_state_timestamp;
    const struct group_member_record *members;
    size_t member_count;
};

/* What a store must still make durable after an append: the partition of
 * the group log written to and the offset just past the appended batch. */
struct group_sync_point {
    int32_t partition;
    int64_t end_offset;
    int32_t leader_epoch; /* the partition's epoch the batch was written in */
};

struct group_load_visitor;

/* Durable store. Every function returns KAFKA_ERR_NONE or the Kafka error
 * to give the client (e.g. COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
 * UNKNOWN_SERVER_ERROR on an I/O failure). May block on disk; called from
 * io threads, possibly concurrently for different groups. */
struct group_store_ops {
    int16_t (*store_offsets)(void *store, const char *group_id, const struct group_offset_record *offsets,
                             size_t count);
    int16_t (*store_group)(void *store, const struct group_snapshot_record *group);
    /* Tombstones for the group record and for the listed offsets. */
    int16_t (*delete_group)(void *store, const char *group_id, const struct group_offset_record *offsets, size_t count);
    /* Tombstones for the listed offsets only (OffsetDelete, expiry). */
    int16_t (*delete_offsets)(void *store, const char *group_id, const struct group_offset_record *offsets,
                              size_t count);
    /* TxnOffsetCommit: the offsets as one transactional batch of the
     * producer (its id and epoch, no sequence). They count only once a
     * COMMIT marker of that producer follows them in the same partition.
     * INVALID_PRODUCER_EPOCH when a newer epoch of the producer wrote there. */
    int16_t (*store_txn_offsets)(void *store, const char *group_id, int64_t producer_id, int16_t producer_epoch,
                                 const struct group_offset_record *offsets, size_t count);

    /* Split commits, so the coordinator lock is not held across a disk
     * sync: the append_* ops write like store_offsets / store_txn_offsets
     * but return before the data is durable, filling *sync_point; the
     * coordinator then drops its lock and calls `sync` with that point
     * before it answers the client. A store without them (any of the three
     * NULL) gets the store_* ops under the lock. */
    int16_t (*append_offsets)(void *store, const char *group_id, const struct group_offset_record *offsets,
                              size_t count, struct group_sync_point *sync_point);
    int16_t (*append_txn_offsets)(void *store, const char *group_id, int64_t producer_id, int16_t producer_epoch,
                                  const struct group_offset_record *offsets, size_t count,
                                  struct group_sync_point *sync_point);
    /* store_group split the same way, for the leader's SyncGroup: the
     * group is answered only once its assignment is replicated. NULL: the
     * coordinator uses store_group. */
    int16_t (*append_group)(void *store, const struct group_snapshot_record *group,
                            struct group_sync_point *sync_point);
    /* Makes durable what an append_* reported, and waits until the
     * partition's ISR has it (offsets.commit.timeout.ms), as Kafka commits
     * offsets with acks=all; concurrent calls may share one disk sync. Any
     * thread, no coordinator lock held. */
    int16_t (*sync)(void *store, const struct group_sync_point *sync_point);

    /* Replays one partition of the store into the visitor (per-partition
     * loading by the coordinator runtime). Returns 0, or -1 with err. NULL:
     * the store cannot load one partition. */
    int (*load_partition)(void *store, int32_t partition, const struct group_load_visitor *visitor, void *ctx,
                          char *err, size_t errlen);
};

/* Replay targets, called in log order for each record found while loading.
 * A tombstone arrives as a NULL record (the group or offset is removed).
 * Transactional offsets reach `offset` when their COMMIT marker is read
 * (unless a plain commit of the same partition came after them), and never
 * when the marker is ABORT. */
struct group_load_visitor {
    void (*offset)(void *ctx, const char *group_id, const char *topic, int32_t partition,
                   const struct group_offset_record *record_or_null);
    void (*group)(void *ctx, const char *group_id, const struct group_snapshot_record *record_or_null);
    /* A transactional offset whose transaction has no marker yet in its
     * partition: still pending for producer_id. Called after the partition's
     * other records, in log order; the transaction coordinator completes it
     * later. One followed by a plain commit of the same partition is left
     * out (its commit could not override that newer offset). NULL: such
     * offsets are dropped from the load. */
    void (*pending_offset)(void *ctx, const char *group_id, int64_t producer_id, const char *topic, int32_t partition,
                           const struct group_offset_record *record);
};

#endif
