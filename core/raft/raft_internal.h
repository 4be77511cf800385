/* The replica's state, shared by raft_state.c (log, outputs, transitions),
 * raft_election.c (votes, epochs) and raft_replication.c (fetch, HW). */
#ifndef CAIRN_RAFT_INTERNAL_H
#define CAIRN_RAFT_INTERNAL_H

#include "raft/raft.h"

struct raft_held_msg {
    struct raft_msg msg;
    uint64_t qs_version; /* released once this quorum state is durable */
};

/* The leader's record of a replica's fetches (Kafka's ReplicaState). */
struct raft_replica_track {
    struct raft_replica_state view;
    int64_t leader_end_at_fetch; /* the leader's log end at its last fetch */
};

struct raft_node {
    struct raft_config cfg;
    int self_index; /* in cfg.voters, -1 for an observer */
    uint64_t rng;
    int64_t now;

    /* quorum state; qs_version counts changes, qs_persisted what is durable */
    int32_t epoch;
    int32_t voted_id;
    int32_t leader_id;
    uint64_t qs_version;
    uint64_t qs_persisted;
    enum raft_role role;
    bool failed; /* an output could not be queued: inputs are ignored */

    /* log: log_len entries, the first at log_start (the end of the snapshot
     * it follows, of epoch log_start_epoch), each starting where the one
     * before ends; flushed_end and hw are entry boundaries */
    int64_t log_start;
    int32_t log_start_epoch;
    bool snapshot_pending; /* follower: RAFT_OUT_FETCH_SNAPSHOT not answered yet */
    struct raft_entry *log;
    int64_t log_len;
    int64_t log_cap;
    /* The sum of the log's entry lengths, kept on append, truncation and
     * start moves: retention (metadata.max.retention.bytes) reads it
     * instead of walking every entry. */
    int64_t log_bytes;
    int64_t flushed_end;
    int64_t hw;
    int64_t leader_hw; /* follower: the leader's last reported HW this epoch */

    /* timers (local milliseconds) */
    int64_t election_deadline; /* unattached, prospective, candidate */
    int64_t fetch_deadline;    /* follower: leader silence limit */
    int64_t leader_contact;    /* follower: last answer from the leader */
    int64_t next_fetch_at;
    int64_t fetch_sent_at;
    bool fetch_inflight;
    int32_t fetch_correlation; /* of the fetch in flight */
    int32_t fetch_dst;         /* whom the fetch in flight went to */
    /* Observer following a leader: its last fetch to the leader failed, so
     * it alternates between asking another voter who leads (ask_other) and
     * trying the leader again, until either answers with news. */
    bool leader_unreachable;
    bool ask_other;
    int32_t discover_next; /* observer without leader: voter index to ask */

    /* election */
    bool granted[RAFT_MAX_VOTERS];
    bool rejected[RAFT_MAX_VOTERS];

    /* leader */
    int64_t voter_end[RAFT_MAX_VOTERS];
    int64_t voter_last_fetch[RAFT_MAX_VOTERS];              /* from the epoch's start, for the quorum check */
    struct raft_replica_track voters_seen[RAFT_MAX_VOTERS]; /* for DescribeQuorum */
    struct raft_replica_track *observers;
    size_t n_observers, observers_cap;
    bool begin_acked[RAFT_MAX_VOTERS];
    int64_t next_begin_at;
    int64_t epoch_start_offset;

    struct raft_output *out;
    size_t out_head, out_len, out_cap;
    struct raft_held_msg *held;
    size_t held_len, held_cap;
};

/* raft_state.c */
uint64_t raft_rand(struct raft_node *n, uint64_t bound);
int raft_voter_index(const struct raft_node *n, int32_t id);
int raft_majority(const struct raft_node *n);
int32_t raft_last_epoch(const struct raft_node *n);
void raft_emit(struct raft_node *n, struct raft_output *o);
void raft_send(struct raft_node *n, struct raft_msg *msg);
void raft_set_qs(struct raft_node *n, int32_t epoch, int32_t voted, int32_t leader);
void raft_set_role(struct raft_node *n, enum raft_role role);
int64_t raft_log_end(const struct raft_node *n);
int64_t raft_log_index(const struct raft_node *n, int64_t offset);
int64_t raft_log_boundary(const struct raft_node *n, int64_t offset);
int raft_log_append(struct raft_node *n, int32_t epoch, const void *data, uint32_t len, int32_t count);
void raft_log_truncate(struct raft_node *n, int64_t offset);
void raft_raise_hw(struct raft_node *n, int64_t hw);
void raft_end_offset_for_epoch(const struct raft_node *n, int32_t epoch, int32_t *epoch_out, int64_t *end_out);

/* raft_election.c */
void raft_become_unattached(struct raft_node *n, int32_t epoch, int64_t deadline);
void raft_become_follower(struct raft_node *n, int32_t epoch, int32_t leader);
void raft_become_prospective(struct raft_node *n);
bool raft_observe_epoch(struct raft_node *n, int32_t epoch, int32_t leader);
void raft_election_tick(struct raft_node *n);
void raft_on_vote_req(struct raft_node *n, const struct raft_msg *m);
void raft_on_vote_resp(struct raft_node *n, const struct raft_msg *m);
void raft_on_begin_req(struct raft_node *n, const struct raft_msg *m);
void raft_on_end_req(struct raft_node *n, const struct raft_msg *m);
void raft_on_epoch_resp(struct raft_node *n, const struct raft_msg *m);
void raft_resign(struct raft_node *n);
int64_t raft_election_timeout(struct raft_node *n);

/* raft_replication.c */
void raft_leader_start(struct raft_node *n);
void raft_replication_tick(struct raft_node *n);
void raft_on_fetch_req(struct raft_node *n, const struct raft_msg *m);
void raft_on_fetch_resp(struct raft_node *n, const struct raft_msg *m);
void raft_fetch_failed(struct raft_node *n);
void raft_update_hw(struct raft_node *n);
void raft_track_fetch(struct raft_node *n, int32_t replica_id, int64_t fetch_offset);

#endif
