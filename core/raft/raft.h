/* KRaft quorum core: one replica of the controller quorum as a pure state
 * machine. It reads no clock, does no I/O and starts no thread: the time,
 * received messages, client appends and disk completions come in as calls,
 * and everything it wants done (send a message, write or truncate the log,
 * persist the quorum state, tell the listener about a new high watermark or
 * role) goes out as raft_output values the caller drains with
 * raft_node_poll() after each call, in order.
 *
 * Behaviour follows Kafka's KRaft (KIP-595, pre-vote KIP-996): Vote (with
 * PreVote), BeginQuorumEpoch, EndQuorumEpoch and Fetch, where followers and
 * observers pull from the leader. Message structs name their fields after
 * the Kafka RPC fields so the networked shell can map them to the generated
 * codecs.
 *
 * Durability: a message produced after a quorum-state change is held until
 * the caller reports that state persisted (raft_node_qs_persisted), so no
 * vote is granted and no epoch is acted on before it is durable; log
 * entries count towards the high watermark, and followers fetch again, only
 * once the caller reports them fsynced (raft_node_flushed).
 *
 * Ownership: a raft_node is owned by one thread (the caller's); it owns its
 * in-memory copy of the log. Messages and outputs own their entries' bytes
 * and are released with raft_msg_clear / raft_output_clear. */
#ifndef CAIRN_RAFT_H
#define CAIRN_RAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RAFT_MAX_VOTERS 9
#define RAFT_NO_ID (-1)

enum raft_error {
    RAFT_OK = 0,
    RAFT_ERR_NOT_LEADER = 6, /* NOT_LEADER_OR_FOLLOWER */
    RAFT_ERR_FENCED_LEADER_EPOCH = 74,
    RAFT_ERR_UNKNOWN_LEADER_EPOCH = 75,
    RAFT_ERR_INCONSISTENT_VOTER_SET = 94,
    RAFT_ERR_INVALID = 87, /* bad argument from the caller */
    RAFT_ERR_NOMEM = -1,
};

enum raft_role {
    RAFT_UNATTACHED = 0, /* no known leader in this epoch */
    RAFT_FOLLOWER,
    RAFT_PROSPECTIVE, /* asking for pre-votes; epoch unchanged */
    RAFT_CANDIDATE,
    RAFT_LEADER,
};

const char *raft_role_name(enum raft_role role);

/* One entry of the log: an atomic batch of `count` records at offsets
 * offset .. offset + count - 1. Fetch, truncation and the high watermark
 * move at entry boundaries only, so a committed prefix never ends inside a
 * batch. The core does not look inside data. */
struct raft_entry {
    int64_t offset;
    int32_t epoch;
    int32_t count; /* >= 1 */
    uint32_t len;
    uint8_t *data; /* owned */
};

/* The first entry a new leader writes at its epoch (LeaderChange control
 * record); the caller sees it as any other entry of count 1 whose body is
 * this byte, the leader's id and then the voters' ids (int32 each, host
 * order): the store turns it into Kafka's LeaderChangeMessage. */
#define RAFT_LEADER_CHANGE_BYTE 0xC0
#define RAFT_LEADER_CHANGE_MAX_LEN (1 + 4 + 4 * RAFT_MAX_VOTERS)

enum raft_msg_type {
    RAFT_MSG_VOTE_REQ = 1,
    RAFT_MSG_VOTE_RESP,
    RAFT_MSG_BEGIN_EPOCH_REQ,
    RAFT_MSG_BEGIN_EPOCH_RESP,
    RAFT_MSG_END_EPOCH_REQ,
    RAFT_MSG_END_EPOCH_RESP,
    RAFT_MSG_FETCH_REQ,
    RAFT_MSG_FETCH_RESP,
};

struct raft_vote_req {
    int32_t candidate_epoch;
    int32_t candidate_id;
    int32_t last_offset_epoch;
    int64_t last_offset; /* the candidate's log end offset */
    bool pre_vote;
};

struct raft_vote_resp {
    int16_t error_code;
    int32_t leader_id;
    int32_t leader_epoch;
    bool vote_granted;
    bool pre_vote; /* echo of the request's flag; the shell keeps it per in-flight request */
};

struct raft_begin_epoch_req {
    int32_t leader_id;
    int32_t leader_epoch;
};

struct raft_end_epoch_req {
    int32_t leader_id;
    int32_t leader_epoch;
};

/* BeginQuorumEpoch and EndQuorumEpoch responses share a shape. */
struct raft_epoch_resp {
    int16_t error_code;
    int32_t leader_id;
    int32_t leader_epoch;
};

struct raft_fetch_req {
    int32_t replica_id;
    int32_t current_leader_epoch;
    int64_t fetch_offset;
    int32_t last_fetched_epoch;
    /* The request's byte budget for records (0: the codec's default). The
     * core ignores it; a caller that fills answers from its store bounds
     * them with it. */
    int32_t max_bytes;
};

struct raft_fetch_resp {
    int16_t error_code;
    int64_t high_watermark;
    int32_t diverging_epoch;      /* -1: none */
    int64_t diverging_end_offset; /* -1: none */
    int32_t current_leader_id;
    int32_t current_leader_epoch;
    int64_t fetch_offset;       /* the request's; records start here */
    struct raft_entry *records; /* owned, consecutive from fetch_offset */
    int32_t n_records;
    /* Kafka's SnapshotId: the fetch offset is below the leader's log start,
     * so the fetcher must first download the snapshot ending here (with
     * FetchSnapshot). 0 or -1: none (no snapshot ends at 0). */
    int64_t snapshot_end_offset;
    int32_t snapshot_epoch;
};

struct raft_msg {
    enum raft_msg_type type;
    int32_t src;
    int32_t dst;
    /* The request header's correlation id; a response carries its request's.
     * A follower accepts only the answer to its fetch in flight: a late or
     * duplicated answer could otherwise match a log truncated and regrown
     * to the same length. */
    int32_t correlation_id;
    union {
        struct raft_vote_req vote_req;
        struct raft_vote_resp vote_resp;
        struct raft_begin_epoch_req begin_req;
        struct raft_end_epoch_req end_req;
        struct raft_epoch_resp epoch_resp;
        struct raft_fetch_req fetch_req;
        struct raft_fetch_resp fetch_resp;
    } u;
};

void raft_msg_clear(struct raft_msg *msg);
/* Deep copy (records included). Returns RAFT_OK or RAFT_ERR_NOMEM. */
int raft_msg_copy(struct raft_msg *dst, const struct raft_msg *src);

/* The quorum-state record: what must survive a restart. */
struct raft_quorum_state {
    int32_t leader_epoch;
    int32_t voted_id;
    int32_t leader_id;
};

enum raft_output_type {
    RAFT_OUT_SEND = 1,       /* msg */
    RAFT_OUT_APPEND,         /* entry: write it at entry.offset */
    RAFT_OUT_TRUNCATE,       /* offset (an entry boundary): drop every entry at or past it */
    RAFT_OUT_PERSIST_QS,     /* qs, qs_version: report back with raft_node_qs_persisted */
    RAFT_OUT_HIGH_WATERMARK, /* offset: entries below it are committed */
    RAFT_OUT_ROLE,           /* role, epoch, leader_id */
    /* offset, epoch, leader_id: this replica is behind the leader's log
     * start and must download the snapshot (offset, epoch) from leader_id,
     * then call raft_node_snapshot_done. It fetches nothing until then. */
    RAFT_OUT_FETCH_SNAPSHOT,
};

struct raft_output {
    enum raft_output_type type;
    struct raft_msg msg;
    struct raft_entry entry;
    int64_t offset;
    struct raft_quorum_state qs;
    uint64_t qs_version;
    enum raft_role role;
    int32_t epoch;
    int32_t leader_id;
};

void raft_output_clear(struct raft_output *out);

struct raft_config {
    int32_t node_id;
    int32_t voters[RAFT_MAX_VOTERS];
    int n_voters;
    int64_t election_timeout_ms;     /* controller.quorum.election.timeout.ms */
    int64_t fetch_timeout_ms;        /* controller.quorum.fetch.timeout.ms */
    int64_t election_backoff_max_ms; /* controller.quorum.election.backoff.max.ms */
    int64_t fetch_idle_ms;           /* wait before re-fetching after an empty answer */
    int64_t retry_backoff_ms;        /* controller.quorum.retry.backoff.ms: after a failed request */
    int32_t fetch_max_records;
    /* The caller's store holds the log's bytes: the core keeps each entry's
     * offset, epoch, count and len but not its data (NULL in its log, in
     * raft_node_entry and in the entries of a fetch answer, which the caller
     * fills from its store before sending), so its memory does not grow
     * with the bytes of the log. raft_node_create then takes entries
     * without data. APPEND outputs still carry the data. */
    bool entries_on_disk;
    /* Where the log starts (the end of the snapshot it follows, and that
     * snapshot's epoch); 0 / 0 for a log from the beginning. */
    int64_t log_start_offset;
    int32_t log_start_epoch;
    uint64_t seed; /* randomizes timeouts; no global PRNG */
};

/* Kafka's defaults (1000, 2000, 1000 ms) and the rest. */
void raft_config_defaults(struct raft_config *cfg);

struct raft_node;

/* Starts a replica from what is durable: the last persisted quorum state
 * (NULL: none) and the fsynced log entries (copied; consecutive from
 * cfg->log_start_offset, each count >= 1). node_id need not be a voter: then the replica is an
 * observer. */
int raft_node_create(struct raft_node **out, const struct raft_config *cfg, const struct raft_quorum_state *qs,
                     const struct raft_entry *entries, int64_t n_entries, int64_t now_ms);
void raft_node_destroy(struct raft_node *node);

/* Inputs. Each may queue outputs. */
void raft_node_tick(struct raft_node *node, int64_t now_ms);
void raft_node_receive(struct raft_node *node, int64_t now_ms, const struct raft_msg *msg);
/* Appends a client entry of `count` records (>= 1) at the leader;
 * *offset_out gets its first offset. RAFT_ERR_NOT_LEADER when this replica
 * is not the leader, RAFT_ERR_INVALID for a count below 1. */
int raft_node_append(struct raft_node *node, int64_t now_ms, const void *data, uint32_t len, int32_t count,
                     int64_t *offset_out);
/* Every entry now in the log that ends at or below `offset` is fsynced (an
 * offset inside an entry covers only the entries before it). */
void raft_node_flushed(struct raft_node *node, int64_t now_ms, int64_t offset);
void raft_node_qs_persisted(struct raft_node *node, int64_t now_ms, uint64_t version);
/* A request the core sent will get no answer: its connection was refused
 * or broke, or it timed out in the caller's client. msg is the request as
 * the core sent it (type, dst and correlation_id are read). A failed Fetch
 * is sent again after cfg.retry_backoff_ms; an observer whose fetch to its
 * leader failed asks another voter who leads instead of waiting out the
 * fetch timeout (Kafka's observer does the same). */
void raft_node_request_failed(struct raft_node *node, int64_t now_ms, const struct raft_msg *msg);
/* Graceful resignation of a leader: EndQuorumEpoch to the other voters. */
void raft_node_resign(struct raft_node *node, int64_t now_ms);

/* Log start (KIP-630). Cleaning behind a snapshot: drops the entries below
 * offset, which must be an entry boundary at or below the high watermark;
 * epoch is the epoch of the entry just before it (the snapshot's epoch).
 * RAFT_ERR_INVALID otherwise. Fetches below it get a SnapshotId answer. */
int raft_node_advance_log_start(struct raft_node *node, int64_t offset, int32_t epoch);
/* The answer to RAFT_OUT_FETCH_SNAPSHOT. installed: the caller wrote the
 * snapshot (offset, epoch), loaded it and emptied its store to start at
 * offset; the core drops its log and starts it there (the high watermark
 * rises to offset: a snapshot holds committed entries only). Not
 * installed: the download failed; the replica fetches again. */
void raft_node_snapshot_done(struct raft_node *node, int64_t now_ms, bool installed, int64_t offset, int32_t epoch);
/* A chunk of the snapshot arrived from the leader: counts as contact, so a
 * long download does not time the leader out. */
void raft_node_snapshot_progress(struct raft_node *node, int64_t now_ms);
int64_t raft_node_log_start(const struct raft_node *node);
/* The bytes of the log's entries from its start to its end (the sum of
 * their lengths), kept as the log changes rather than walked. */
int64_t raft_node_log_bytes(const struct raft_node *node);

/* Takes the next output; false when none is queued. */
bool raft_node_poll(struct raft_node *node, struct raft_output *out);

/* Read-only views. */
enum raft_role raft_node_role(const struct raft_node *node);
int32_t raft_node_epoch(const struct raft_node *node);
int32_t raft_node_leader(const struct raft_node *node);
int64_t raft_node_high_watermark(const struct raft_node *node);
int64_t raft_node_end_offset(const struct raft_node *node);
bool raft_node_is_voter(const struct raft_node *node);
/* What the leader knows of one replica, for DescribeQuorum (Kafka's
 * ReplicaState). Times are in the caller's clock (the now_ms it passes). */
struct raft_replica_state {
    int32_t replica_id;
    int64_t log_end_offset;    /* its last successful fetch offset; -1: none this epoch */
    int64_t last_fetch_ms;     /* -1: no fetch this epoch */
    int64_t last_caught_up_ms; /* last time it had fetched up to the leader's end; -1: never */
};

/* An observer that has not fetched for this long drops out of the view
 * (Kafka's LeaderState.OBSERVER_SESSION_TIMEOUT_MS). */
#define RAFT_OBSERVER_SESSION_MS 300000

/* The leader's view of its voters, in configuration order, itself included
 * (with its log end and the current time). Returns the number of voters,
 * or RAFT_ERR_NOT_LEADER (as a negative) when this replica does not lead. */
int raft_node_voter_states(const struct raft_node *node, struct raft_replica_state out[RAFT_MAX_VOTERS]);
/* The observers that fetched from this leader in its epoch within
 * RAFT_OBSERVER_SESSION_MS: writes up to cap of them and returns how many
 * there are, or RAFT_ERR_NOT_LEADER as a negative. */
int raft_node_observer_states(const struct raft_node *node, struct raft_replica_state *out, int cap);

/* Out of memory once: the node ignores every input from then on and must
 * be restarted from what is durable. */
bool raft_node_failed(const struct raft_node *node);
/* The entry holding offset (its first offset may be lower), or NULL outside
 * the log. Valid until the next input. Its data is NULL when the config
 * says entries_on_disk. */
const struct raft_entry *raft_node_entry(const struct raft_node *node, int64_t offset);

#endif
