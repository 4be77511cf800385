/* Private state of the group coordinator, shared by its source files.
 * A group and everything in it is guarded by its shard's lock
 * (group_shard.lock: one per __consumer_offsets partition). */
#ifndef CAIRN_GROUP_GROUP_INTERNAL_H
#define CAIRN_GROUP_GROUP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "group/group_coordinator.h"
#include "group/group_index.h"
#include "group/group_offset_table.h"

enum group_state {
    GROUP_EMPTY,
    GROUP_PREPARING_REBALANCE,
    GROUP_COMPLETING_REBALANCE,
    GROUP_STABLE,
    GROUP_DEAD,
};

struct group_member_protocol {
    char *name;
    uint8_t *metadata;
    size_t metadata_len;
};

struct group_member {
    char *member_id;
    char *instance_id; /* NULL: dynamic */
    char *client_id;
    char *client_host;
    struct group_member_protocol *protocols;
    size_t protocol_count;
    int32_t session_timeout_ms;
    int32_t rebalance_timeout_ms;
    uint8_t *assignment;
    size_t assignment_len;
    /* A parked JoinGroup / SyncGroup, answered when the rebalance moves on. */
    group_join_cb join_cb;
    void *join_arg;
    group_sync_cb sync_cb;
    void *sync_arg;
    uint64_t join_conn, sync_conn; /* connections of the parked requests */
    bool synced;                   /* sent SyncGroup for the current generation */
    int64_t session_deadline;      /* mono ms */
};

/* A member id handed out with MEMBER_ID_REQUIRED, not yet joined. */
struct group_pending_member {
    char *member_id;
    int64_t deadline;
    size_t pos; /* in group.pending */
};

/* An offset written by TxnOffsetCommit whose transaction has not ended:
 * invisible to OffsetFetch until its producer's COMMIT marker. */
struct group_txn_offset {
    int64_t producer_id;
    struct group_offset offset; /* hash and marked unused */
};

struct group {
    char *group_id;
    enum group_state state;
    char *protocol_type; /* NULL until the first member joins */
    char *protocol;      /* NULL when none chosen */
    char *leader;        /* member id, NULL when none */
    int32_t generation;
    int64_t state_timestamp; /* wall ms of the last state change */

    /* In join order (the first member breaks protocol ties and leads
     * when the leader leaves); indexed by member id and by instance id. */
    struct group_member **members;
    size_t member_count, member_cap;
    struct group_index member_index;   /* by member_id */
    struct group_index instance_index; /* static members, by instance_id */
    /* Unordered; a removal moves the last entry into the hole. */
    struct group_pending_member **pending;
    size_t pending_count, pending_cap;
    struct group_index pending_index; /* by member_id */
    struct group_offset_table offsets;
    /* At most one per (producer, topic, partition), in write order. */
    struct group_txn_offset *txn_offsets;
    size_t txn_offset_count, txn_offset_cap;
    /* Plain commits written to the group log whose sync has not ended
     * (group_inflight.c), in write order; hash and marked unused. */
    struct group_offset *inflight;
    size_t inflight_count, inflight_cap;

    /* PreparingRebalance: when the join phase ends. The first rebalance of
     * an empty group waits group.initial.rebalance.delay.ms, extended while
     * new members keep arriving (at most the rebalance timeout). */
    int64_t join_deadline;
    bool initial_delay;
    bool new_member_added;
    int64_t initial_delay_remaining_ms;
    /* CompletingRebalance: members that have not synced by then are dropped. */
    int64_t sync_deadline;
    /* The generation whose assignment (the leader's SyncGroup) is being
     * written and replicated; 0 when none (generations start at 1). The
     * group stays CompletingRebalance until that write ends. */
    int32_t assignment_writing;

    int32_t partition;         /* of __consumer_offsets when the coordinator has shards; -1 otherwise */
    struct group_shard *shard; /* whose lock guards this group */
    struct group *prev, *next; /* group_shard.group_list */
};

/* A transaction end that reached a __consumer_offsets partition while it
 * loaded: replayed after the load, in case its marker landed past the end
 * the load read to. */
struct group_deferred_txn_end {
    int32_t partition;
    int64_t producer_id;
    bool commit;
};

/* A client connection that closed (group_coordinator_connection_closed). */
struct group_closed_conn {
    uint64_t id;
    int64_t at; /* group_now when queued */
};

/* The groups of one __consumer_offsets partition (group_id's partition
 * among shard_count; one shard when the coordinator has no partitions).
 * Groups of different shards never wait on each other.
 * Thread-safety: lock guards everything here and every group in it. */
struct group_shard {
    pthread_mutex_t lock;
    /* Groups by id (seeded hash, grown with the count) and in a list to
     * walk; removing the current group while walking is safe when the
     * walk saved next first. */
    struct group_index groups;
    struct group *group_list;
    size_t group_count;
    /* Transaction ends that reached this partition while it loaded. */
    struct group_deferred_txn_end *deferred;
    size_t deferred_count, deferred_cap;
};

/* Thread-safety: each shard's lock guards its groups; timer_lock guards
 * the timer fields (stopping, next_expiry_check, cond) and is taken
 * before a shard lock, never while holding one; the counters and flags
 * are atomics read without a lock. */
struct group_coordinator {
    struct group_coordinator_options opts;
    pthread_mutex_t timer_lock;
    pthread_cond_t cond;
    pthread_t timer_thread;
    bool timer_started;
    bool stopping;
    atomic_bool shut_down;
    atomic_bool loading;
    int64_t next_expiry_check;
    struct group_shard *shards;
    int32_t shard_count;
    uint64_t hash_seed;          /* of every index of this coordinator; set at create */
    atomic_size_t pending_total; /* pending members across groups */
    /* Last order number given to an offset write. A group's writes are
     * numbered under its shard lock, so they stay in log order. */
    _Atomic uint64_t write_seq;
    /* group_coordinator_connection_closed: ids queued under closed_lock
     * (not lock), taken by the next tick. */
    pthread_mutex_t closed_lock;
    struct group_closed_conn *closed_conns;
    size_t closed_count, closed_cap;
};

/* group_coordinator.c */
int64_t group_now(struct group_coordinator *gc);
int64_t group_wall_now(struct group_coordinator *gc);
/* The shard group_id belongs to, and the same shard locked. */
struct group_shard *group_shard_of(struct group_coordinator *gc, const char *group_id);
struct group_shard *group_lock(struct group_coordinator *gc, const char *group_id);
/* The shard of __consumer_offsets partition (shard 0 when the coordinator
 * has no partitions). */
struct group_shard *group_partition_shard(struct group_coordinator *gc, int32_t partition);
void group_unlock(struct group_shard *shard);
/* The caller holds group_id's shard lock. */
struct group *group_find(struct group_coordinator *gc, const char *group_id);
struct group *group_get_or_create(struct group_coordinator *gc, const char *group_id);
void group_remove(struct group_coordinator *gc, struct group *g);
const char *group_state_name(enum group_state s);
char *group_strdup(const char *s);
/* A Kafka string of n bytes (NUL bytes are data), NUL-terminated past n;
 * NULL for NULL. */
char *group_strndup_bytes(const char *s, size_t n);
uint8_t *group_memdup(const uint8_t *p, size_t n);
void group_snapshot_store(struct group_coordinator *gc, struct group *g);
/* Writes g's record. With a sync_point and a store that splits group
 * writes (append_group), only appends it and fills *sync_point for the
 * store's sync (partition -1: nothing to sync); otherwise writes it
 * durably. Returns the store's error. */
int16_t group_snapshot_write(struct group_coordinator *gc, struct group *g, struct group_sync_point *sync_point);
/* Common request preconditions for a request on group_id: NONE, or the
 * error to answer with (shut down, loading, its partition not served). */
int16_t group_coordinator_serving(struct group_coordinator *gc, const char *group_id);
/* Whether g's partition is served (always, without shards). */
bool group_partition_active(struct group_coordinator *gc, const struct group *g);

/* group_state.c: transitions, checked against Kafka's table of valid
 * previous states. An illegal one is refused (false, state unchanged) with
 * an error log, and asserts in debug builds. */
bool group_state_can_follow(enum group_state from, enum group_state to);
bool group_set_state(struct group_coordinator *gc, struct group *g, enum group_state s);

/* group_membership.c: members */
struct group_member *group_member_find(struct group *g, const char *member_id);
struct group_member *group_member_by_instance(struct group *g, const char *instance_id);
/* A new member from a join (takes member_id); NULL when out of memory. */
struct group_member *group_member_new(const struct group_join_params *p, char *member_id);
/* Adds m (its ids not yet in g) last. Returns 0, or -1 when out of memory
 * (g unchanged). */
int group_member_append(struct group *g, struct group_member *m);
void group_member_free(struct group_member *m);
const struct group_member_protocol *group_member_protocol(const struct group_member *m, const char *name);
struct group_member_protocol *group_protocols_copy(const struct group_protocol *src, size_t n);
void group_protocols_free(struct group_member_protocol *p, size_t n);
bool group_same_protocols(const struct group_member *m, const struct group_join_params *p);
struct group_pending_member *group_pending_find(struct group *g, const char *member_id);
/* Adds a pending member (takes member_id). Returns 0, or -1 when out of
 * memory (member_id freed). */
int group_pending_add(struct group_coordinator *gc, struct group *g, char *member_id, int64_t deadline);
void group_pending_remove(struct group_coordinator *gc, struct group *g, struct group_pending_member *pm);
/* Sets up and frees g's member and pending indexes. */
void group_members_init(struct group_coordinator *gc, struct group *g);
void group_members_free(struct group_coordinator *gc, struct group *g);
/* Frees every member (not the pending ones). */
void group_members_clear(struct group *g);
/* "<client id>-<uuid>", malloc'd; NULL when out of memory. */
char *group_generate_member_id(const char *client_id);

/* group_membership.c: protocol choice */
/* Whether a member with these protocols may join g (Kafka's rule). */
bool group_supports_protocols(const struct group *g, const struct group_join_params *p);
const char *group_select_protocol(const struct group *g);

/* group_membership.c: answers */
void group_join_respond_error(group_join_cb cb, void *arg, int16_t err, const char *member_id);
void group_sync_respond_error(group_sync_cb cb, void *arg, int16_t err);
/* The current generation; the leader also gets every member's metadata. */
void group_join_respond_current(struct group *g, struct group_member *m, group_join_cb cb, void *arg,
                                bool skip_assignment);
/* The current generation with leader_id as leader and no member list. */
void group_join_respond_follower(const struct group *g, const struct group_member *m, group_join_cb cb, void *arg,
                                 const char *leader_id);
/* Answers every parked request of the group with err (shutdown). */
void group_fail_parked(struct group *g, int16_t err);

/* group_membership.c: transitions */
void group_prepare_rebalance(struct group_coordinator *gc, struct group *g, int64_t now);
/* Completes the join phase once every member has rejoined. */
void group_try_complete_join(struct group_coordinator *gc, struct group *g, int64_t now);
void group_complete_join(struct group_coordinator *gc, struct group *g, int64_t now);
/* Removes members[i], answering its parked requests UNKNOWN_MEMBER_ID. */
void group_remove_member_at(struct group *g, size_t i);
/* Gives m a new member id, keeping the index in step (takes new_id).
 * Returns the old id, which the caller frees, or NULL when out of memory
 * (m unchanged, new_id freed). */
char *group_member_rename(struct group *g, struct group_member *m, char *new_id);
/* After members left or expired: the group rebalances without them. */
void group_member_removed(struct group_coordinator *gc, struct group *g, int64_t now);
/* m (re)joins with p's protocols and waits for the join phase to end. */
void group_member_update_and_park(struct group_coordinator *gc, struct group *g, struct group_member *m,
                                  const struct group_join_params *p, group_join_cb cb, void *arg, int64_t now);
void group_membership_tick(struct group_coordinator *gc, struct group *g, int64_t now);

/* group_offsets.c */
void group_offsets_expire(struct group_coordinator *gc, struct group *g, int64_t wall_now);
void group_offsets_free(struct group *g);
/* Whether the store splits commits into append (under the lock) and sync. */
bool group_store_split_commits(const struct group_coordinator *gc);
/* Called without the lock after an append_* op: makes the append durable
 * and replicated, or sets its error on every entry that has none. Returns
 * that error (NONE on success). */
int16_t group_store_sync(struct group_coordinator *gc, const struct group_sync_point *sync_point,
                         struct group_offset_commit *offsets, size_t count);

/* group_inflight.c: commits between append and sync */
/* Frees o's strings. */
void group_offset_release(struct group_offset *o);
/* Moves src into g's committed offsets unless a later write is there;
 * releases src's strings either way. */
void group_offset_apply(struct group *g, struct group_offset *src);
/* Keeps a copy of rec as in flight, numbered ++gc->write_seq. Returns 0, or
 * -1 when out of memory. */
int group_inflight_add(struct group_coordinator *gc, struct group *g, const struct group_offset_record *rec);
/* Ends the in-flight commits numbered first_seq..last_seq: applied to the
 * committed offsets (apply, their sync succeeded) or dropped. */
void group_inflight_finish(struct group *g, uint64_t first_seq, uint64_t last_seq, bool apply);
/* Whether a plain commit of the partition is in flight. */
bool group_inflight_pending(const struct group *g, const char *topic, int32_t partition);
/* OffsetDelete: a commit in flight for the partition is not applied. */
void group_inflight_drop_partition(struct group *g, const char *topic, int32_t partition);
void group_inflight_free(struct group *g);
/* Whether g holds nothing (made only for a request that then failed). */
bool group_unused(const struct group *g);

/* group_offsets_scan.c: what a pass over g's committed offsets needs,
 * built once per pass so the pass stays linear. */
struct group_topic_set {
    struct group_index index; /* of struct group_topic, by name */
};
/* The topics g's members subscribe to (consumer protocol). Returns 0, or
 * -1 when out of memory (s left empty). */
int group_subscribed_topics(const struct group *g, uint64_t seed, struct group_topic_set *s);
bool group_topic_set_has(const struct group_topic_set *s, const char *topic);
void group_topic_set_free(struct group_topic_set *s);
/* *out: per committed entry (index in g->offsets.items), whether a plain
 * commit of it is in flight (or, with_txn, a transactional one pending);
 * NULL when none is. Returns 0, or -1 when out of memory. */
int group_offsets_pending_flags(const struct group *g, bool with_txn, bool **out);

/* group_txn_offsets.c */
void group_txn_offsets_free(struct group *g);
/* Whether any producer has a pending offset for the partition. */
bool group_txn_offset_pending(const struct group *g, const char *topic, int32_t partition);
/* Applies (then forgets) the transaction ends deferred while partition
 * loaded; apply=false only forgets them. */
void group_txn_ends_replay(struct group_coordinator *gc, int32_t partition, bool apply);
/* Load visitor target for offsets still pending at the end of the log. */
void group_load_pending_offset(void *ctx, const char *group_id, int64_t producer_id, const char *topic,
                               int32_t partition, const struct group_offset_record *record);

#endif
