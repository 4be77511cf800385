/* The group coordinator of the classic group protocol: membership,
 * rebalances (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) and committed
 * offsets, for every group this broker coordinates.
 *
 * Requests enter through plain C calls that do not depend on the wire
 * structs, so tests drive the state machine directly. JoinGroup and SyncGroup
 * may wait: their result arrives through a callback, either before the call
 * returns or later from another thread (another member's request or the
 * timer thread). Callbacks run with the coordinator's lock held: they must
 * copy what they need and must not call back into the coordinator.
 *
 * Thread-safety: every function may be called from any thread; one mutex
 * guards all groups. Durable store calls run under that mutex too, which
 * keeps the order of writes equal to the order of answers. */
#ifndef CAIRN_GROUP_GROUP_COORDINATOR_H
#define CAIRN_GROUP_GROUP_COORDINATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "group/group_persistence.h"

struct coordinator_shards;
struct coordinator_shard_ops;
struct group_coordinator;

struct group_coordinator_options {
    int32_t min_session_timeout_ms;     /* group.min.session.timeout.ms, 6000 */
    int32_t max_session_timeout_ms;     /* group.max.session.timeout.ms, 1800000 */
    int32_t initial_rebalance_delay_ms; /* group.initial.rebalance.delay.ms, 3000 */
    int32_t max_group_size;             /* group.max.size */
    /* KIP-394 pending members (ids handed out, not yet joined), at most
     * this many per group and across the coordinator; 0: no bound. */
    int32_t max_pending_members_per_group; /* group.max.pending.members, 1000 */
    int32_t max_pending_members;           /* group.coordinator.max.pending.members, 100000 */
    int32_t offset_metadata_max_bytes;     /* offset.metadata.max.bytes, 4096 */
    int64_t offsets_retention_ms;          /* offsets.retention.minutes * 60000 */
    int64_t offsets_retention_check_interval_ms;
    /* Durable store; NULL keeps everything in memory only. */
    const struct group_store_ops *ops;
    void *store;
    /* Start in the loading state (requests get COORDINATOR_LOAD_IN_PROGRESS)
     * until group_coordinator_set_loaded. */
    bool start_loading;
    /* Tests: no timer thread (call group_coordinator_tick) and a fake clock. */
    bool manual_time;
    int64_t (*now_ms)(void *clock_ctx); /* monotonic ms; NULL: clock_mono_ms */
    void *clock_ctx;
    /* Partitions of __consumer_offsets, to find a group's partition when a
     * transaction marker completes it; 0: every group matches. */
    int32_t offsets_topic_partitions;
    /* Which __consumer_offsets partitions are served here (the coordinator
     * runtime loads and unloads them through group_coordinator_shard_ops;
     * the store needs load_partition). NULL: every group is served once
     * loaded, as without a runtime. Not owned. */
    struct coordinator_shards *shards;
};

void group_coordinator_options_defaults(struct group_coordinator_options *opts);

int group_coordinator_create(const struct group_coordinator_options *opts, struct group_coordinator **out);
/* Answers every waiting JoinGroup/SyncGroup with NOT_COORDINATOR and refuses
 * new requests from then on. Call before the network layer drains. */
void group_coordinator_shutdown(struct group_coordinator *gc);
/* Shuts down (if not yet), stops the timer thread and frees everything. */
void group_coordinator_destroy(struct group_coordinator *gc);

/* Replay target for the durable store (ctx = the coordinator). */
const struct group_load_visitor *group_coordinator_load_visitor(void);
void group_coordinator_set_loaded(struct group_coordinator *gc);
bool group_coordinator_is_loading(struct group_coordinator *gc);

/* The coordinator runtime's hooks (ctx = the coordinator): load replays one
 * __consumer_offsets partition through the store's load_partition; unload
 * drops that partition's groups and offsets and answers their parked
 * JoinGroup/SyncGroup with NOT_COORDINATOR. */
const struct coordinator_shard_ops *group_coordinator_shard_ops(void);

/* FindCoordinator: NONE when this coordinator serves group_id, else
 * COORDINATOR_NOT_AVAILABLE (loading, not led here, shut down). */
int16_t group_coordinator_ownership(struct group_coordinator *gc, const char *group_id);

/* Runs timers due at now (session and rebalance timeouts, delayed joins,
 * offset expiry). The timer thread calls it; tests call it directly. */
void group_coordinator_tick(struct group_coordinator *gc);

/* ---- JoinGroup ---- */

struct group_protocol {
    const char *name;
    const uint8_t *metadata;
    size_t metadata_len;
};

struct group_join_params {
    const char *group_id;
    const char *member_id;         /* "" for a new member */
    const char *group_instance_id; /* NULL: dynamic member */
    const char *client_id;
    const char *client_host;
    const char *protocol_type;
    const struct group_protocol *protocols;
    size_t protocol_count;
    int32_t session_timeout_ms;
    int32_t rebalance_timeout_ms;
    bool require_known_member_id;  /* JoinGroup v4+ (KIP-394) */
    bool supports_skip_assignment; /* JoinGroup v9+ (KIP-814) */
    uint64_t connection_id;        /* the client's, for group_coordinator_connection_closed; 0 = none */
};

struct group_join_member {
    const char *member_id;
    const char *group_instance_id;
    const uint8_t *metadata;
    size_t metadata_len;
};

/* Borrowed for the duration of the callback. */
struct group_join_result {
    int16_t error_code;
    int32_t generation_id;
    const char *protocol_type; /* NULL when none */
    const char *protocol_name; /* NULL when none */
    const char *leader;
    const char *member_id;
    bool skip_assignment;
    const struct group_join_member *members; /* the leader's copy only */
    size_t member_count;
};

typedef void (*group_join_cb)(void *arg, const struct group_join_result *result);

void group_coordinator_join(struct group_coordinator *gc, const struct group_join_params *p, group_join_cb cb,
                            void *arg);

/* ---- SyncGroup ---- */

struct group_assignment {
    const char *member_id;
    const uint8_t *assignment;
    size_t assignment_len;
};

struct group_sync_params {
    const char *group_id;
    int32_t generation_id;
    const char *member_id;
    const char *group_instance_id;
    const char *protocol_type; /* NULL: not checked (before v5) */
    const char *protocol_name;
    const struct group_assignment *assignments; /* the leader's */
    size_t assignment_count;
    uint64_t connection_id; /* as in group_join_params */
};

struct group_sync_result {
    int16_t error_code;
    const char *protocol_type;
    const char *protocol_name;
    const uint8_t *assignment;
    size_t assignment_len;
};

typedef void (*group_sync_cb)(void *arg, const struct group_sync_result *result);

void group_coordinator_sync(struct group_coordinator *gc, const struct group_sync_params *p, group_sync_cb cb,
                            void *arg);

/* The client connection connection_id closed while a JoinGroup or SyncGroup
 * of it may be parked. Any thread; never waits for the coordinator lock, as
 * it runs in the network layer's cancel hook, which a coordinator callback
 * completing that same request waits for. The timer thread, within a tick,
 * answers (to nobody) what that connection has parked and removes its
 * member when dynamic (a static member keeps its place until its session
 * expires, as KIP-345 wants), so the rebalance goes on without it. */
void group_coordinator_connection_closed(struct group_coordinator *gc, uint64_t connection_id);

/* ---- Heartbeat / LeaveGroup ---- */

int16_t group_coordinator_heartbeat(struct group_coordinator *gc, const char *group_id, int32_t generation_id,
                                    const char *member_id, const char *group_instance_id);

struct group_leave_member {
    const char *member_id;         /* "" with an instance id: by instance */
    const char *group_instance_id; /* NULL for a dynamic member */
    int16_t error_code;            /* out */
};

/* Returns a group-level error (COORDINATOR_NOT_AVAILABLE, ...) or NONE with
 * each member's own error filled in. */
int16_t group_coordinator_leave(struct group_coordinator *gc, const char *group_id, struct group_leave_member *members,
                                size_t count);

/* ---- Offsets ---- */

struct group_offset_commit {
    const char *topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;
    const char *metadata; /* NULL: null; may hold NUL bytes (a Kafka string) */
    size_t metadata_len;
    int16_t error_code; /* in: a non-zero error skips the entry; out: result */
};

struct group_commit_params {
    const char *group_id;
    int32_t generation_id; /* -1: a simple (non-member) commit */
    const char *member_id;
    const char *group_instance_id;
    int64_t retention_ms; /* -1: the broker's retention */
    /* OffsetCommit v9+: a member commit to a group that does not exist gets
     * GROUP_ID_NOT_FOUND instead of ILLEGAL_GENERATION. */
    bool unknown_group_not_found;
};

/* Fills every entry's error_code. */
void group_coordinator_commit(struct group_coordinator *gc, const struct group_commit_params *p,
                              struct group_offset_commit *offsets, size_t count);

struct group_offset_fetch {
    const char *topic;
    int32_t partition;
    /* out */
    int64_t offset; /* -1 when none */
    int32_t leader_epoch;
    char *metadata; /* malloc'd copy (NUL-terminated past metadata_len) or NULL; the caller frees */
    size_t metadata_len;
    int16_t error_code; /* UNSTABLE_OFFSET_COMMIT (require_stable only) or NONE */
};

/* Fills the requested entries. */
int16_t group_coordinator_fetch_offsets(struct group_coordinator *gc, const char *group_id,
                                        struct group_offset_fetch *offsets, size_t count);
/* Every committed offset of the group: a malloc'd array the caller frees
 * with group_offset_fetch_free. */
int16_t group_coordinator_fetch_all_offsets(struct group_coordinator *gc, const char *group_id,
                                            struct group_offset_fetch **out, size_t *count);
/* The same for OffsetFetch v7+: with require_stable, a partition that has a
 * transactional offset still pending answers offset -1 and error_code
 * UNSTABLE_OFFSET_COMMIT (KIP-447); without it, the last committed offset. */
int16_t group_coordinator_fetch_offsets_stable(struct group_coordinator *gc, const char *group_id, bool require_stable,
                                               struct group_offset_fetch *offsets, size_t count);
int16_t group_coordinator_fetch_all_offsets_stable(struct group_coordinator *gc, const char *group_id,
                                                   bool require_stable, struct group_offset_fetch **out, size_t *count);
void group_offset_fetch_free(struct group_offset_fetch *offsets, size_t count);

struct group_offset_delete {
    const char *topic;
    int32_t partition;
    int16_t error_code; /* out */
};

/* OffsetDelete: returns the group-level error. */
int16_t group_coordinator_delete_offsets(struct group_coordinator *gc, const char *group_id,
                                         struct group_offset_delete *offsets, size_t count);

/* DeleteGroups for one group. NON_EMPTY_GROUP also while the group has
 * transactional offsets pending. */
int16_t group_coordinator_delete_group(struct group_coordinator *gc, const char *group_id);

/* ---- Transactional offsets (KIP-98, KIP-447) ---- */

struct group_txn_commit_params {
    const char *group_id;
    int64_t producer_id;
    int16_t producer_epoch;
    /* TxnOffsetCommit v3+; v0-2 pass -1, "" and NULL (nothing checked). */
    int32_t generation_id;
    const char *member_id;
    const char *group_instance_id;
};

/* TxnOffsetCommit: checks the member as Kafka does (FENCED_INSTANCE_ID,
 * UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION; no rebalance check), writes the
 * offsets through store_txn_offsets and keeps them pending for the
 * producer: OffsetFetch does not show them until
 * group_coordinator_complete_txn commits them. A later TxnOffsetCommit of
 * the same producer for a partition replaces its pending offset. Fills
 * every entry's error_code (entries that arrive with an error are skipped). */
void group_coordinator_txn_commit(struct group_coordinator *gc, const struct group_txn_commit_params *p,
                                  struct group_offset_commit *offsets, size_t count);

/* The end of a transaction on one __consumer_offsets partition.
 *
 * Contract for the transaction marker writer: call this after the COMMIT or
 * ABORT control batch of producer_id has been appended (and flushed) to
 * __consumer_offsets-<offsets_partition>, never before: the marker on disk
 * is what a reload replays, and this call makes memory agree with it. On
 * commit the producer's pending offsets of the groups in that partition
 * become committed (visible to OffsetFetch), replacing any commit written
 * before them but not one written after them; on abort they are dropped.
 * Writes nothing to the log. Idempotent: a producer with nothing pending
 * there is a no-op, so a retried marker is harmless. Any thread; must not
 * be called from a coordinator callback (it takes the coordinator lock). */
void group_coordinator_complete_txn(struct group_coordinator *gc, int32_t offsets_partition, int64_t producer_id,
                                    bool commit);

/* ---- Describe / List ---- */

struct group_member_description {
    char *member_id;
    char *group_instance_id;
    char *client_id;
    char *client_host;
    uint8_t *metadata;
    size_t metadata_len;
    uint8_t *assignment;
    size_t assignment_len;
};

/* malloc'd; free with group_description_free. */
struct group_description {
    int16_t error_code;
    char *group_id;
    const char *state; /* static string: "Empty", "Stable", ... "Dead" */
    char *protocol_type;
    char *protocol; /* "" unless Stable */
    int32_t generation_id;
    struct group_member_description *members;
    size_t member_count;
};

void group_coordinator_describe(struct group_coordinator *gc, const char *group_id, struct group_description *out);
void group_description_free(struct group_description *d);

struct group_listing {
    char *group_id;
    char *protocol_type;
    const char *state;
};

/* Groups whose state is in states (NULL/0: all). malloc'd array; free with
 * group_listing_free. Returns a group-level error. */
int16_t group_coordinator_list(struct group_coordinator *gc, const char *const *states, size_t state_count,
                               struct group_listing **out, size_t *count);
void group_listing_free(struct group_listing *l, size_t count);

#endif
