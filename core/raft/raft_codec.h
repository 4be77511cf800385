/* raft_msg <-> Kafka's KRaft RPCs on the wire: Vote, BeginQuorumEpoch,
 * EndQuorumEpoch and Fetch requests and responses, and the DescribeQuorum
 * response, through the generated codecs. Every request names the one
 * partition the quorum replicates, __cluster_metadata-0 (topic id
 * 00..01 from Fetch v13 on).
 *
 * Log entries travel as RecordBatch v2: one batch per entry, its base
 * offset the entry's offset and its partition leader epoch the entry's
 * epoch. An entry's data is its whole encoded batch (raft_store.h), so it
 * goes out as it is (raft_store_entry_batch, which also turns the core's
 * LeaderChange body into Kafka's control batch) and comes in as one entry
 * of the batch's record count.
 *
 * PreVote (KIP-996) is VoteRequest v2's field, which the schemas in the tree
 * (v0-1) do not have yet: a pre-vote travels as Vote v1 with a top-level
 * tagged field (RAFT_CODEC_PREVOTE_TAG) that Kafka's decoder skips. Between
 * Cairn nodes the meaning is kept; a Kafka voter would take it as a vote.
 *
 * Pure functions over caller-provided buffers: thread-safe. */
#ifndef CAIRN_RAFT_RAFT_CODEC_H
#define CAIRN_RAFT_RAFT_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_manager.h"
#include "protocol/wire.h"
#include "raft/raft.h"

#define RAFT_CODEC_TOPIC LOG_MANAGER_METADATA_TOPIC
#define RAFT_CODEC_PREVOTE_TAG 10000
/* The record bytes a follower's quorum Fetch asks for when the core sets
 * no budget; the leader answers with whole batches within it (at least one). */
#define RAFT_CODEC_FETCH_MAX_BYTES 1048576

#define RAFT_API_FETCH 1
#define RAFT_API_VOTE 52
#define RAFT_API_BEGIN_QUORUM_EPOCH 53
#define RAFT_API_END_QUORUM_EPOCH 54
#define RAFT_API_DESCRIBE_QUORUM 55
#define RAFT_API_FETCH_SNAPSHOT 59

/* The API that carries a message type (request or response alike). */
int16_t raft_codec_api_key(enum raft_msg_type type);
bool raft_codec_is_request(enum raft_msg_type type);
/* Versions the controller listener serves for a quorum API; false for any
 * other key. */
bool raft_codec_served(int16_t api_key, int16_t *min_version, int16_t *max_version);

/* Writes the body (no header) of request m at version. cluster_id may be
 * NULL (sent as null where nullable, "" otherwise). Returns 0 or -1. */
int raft_codec_write_request(struct kafka_writer *w, int16_t version, const char *cluster_id, const struct raft_msg *m);

/* Decodes a request body into out (type, src, dst where the wire says,
 * and the fields; correlation_id is the caller's). Returns 0 when out is a
 * request for the core; a Kafka error code > 0 when the request decoded but
 * must be refused with that error (INCONSISTENT_CLUSTER_ID, INVALID_REQUEST
 * for another partition); -1 when it did not decode (err filled). out owns
 * nothing on return but a Fetch response's records, so raft_msg_clear is
 * always safe. */
int raft_codec_read_request(int16_t api_key, int16_t version, const uint8_t *body, size_t len, const char *cluster_id,
                            struct raft_msg *out, char *err, size_t errlen);

/* Where a node's controller listener is: what a Fetch answer's
 * NodeEndpoints (v17+, KIP-853) carries for the leader it names. */
struct raft_codec_endpoint {
    int32_t node_id;
    char host[256];
    int port;
};

/* A Fetch response m (a RAFT_MSG_FETCH_RESP) at version, with leader (NULL:
 * none) in NodeEndpoints from v17 on, as Kafka's voters answer. Returns 0
 * or -1. */
int raft_codec_write_fetch_answer(struct kafka_writer *w, int16_t version, const struct raft_msg *m,
                                  const struct raft_codec_endpoint *leader);
/* The endpoint a decoded Fetch response (the client's struct
 * fetch_response) gives for node_id in NodeEndpoints: true with out
 * filled, false when it names none (or a bad one). */
bool raft_codec_fetch_endpoint(const void *response, int32_t node_id, struct raft_codec_endpoint *out);

/* Writes the body of response m (a *_RESP message) at version. Returns 0 or -1. */
int raft_codec_write_response(struct kafka_writer *w, int16_t version, const struct raft_msg *m);
/* A response to api_key carrying only error_code, for a refused request. */
int raft_codec_write_error_response(struct kafka_writer *w, int16_t api_key, int16_t version, int16_t error_code);

/* Maps a decoded response (the generated struct for req's API, as the
 * outbound client hands it) to the core's response message to req: src is
 * req->dst, dst req->src, correlation_id req's. Fetch records are copied
 * into out. Returns 0, or -1 with err (a top-level error, a response for
 * another partition, bad record bytes). */
int raft_codec_read_response(const void *response, const struct raft_msg *req, struct raft_msg *out, char *err,
                             size_t errlen);

/* ---- DescribeQuorum ---- */

struct raft_quorum_replica {
    int32_t replica_id;
    int64_t log_end_offset;       /* -1: unknown */
    int64_t last_fetch_timestamp; /* -1: unknown */
    int64_t last_caught_up_timestamp;
};

/* Observers listed in one answer; more are left out. */
#define RAFT_QUORUM_VIEW_MAX_OBSERVERS 32

struct raft_quorum_view {
    int16_t error_code;
    int32_t leader_id;
    int32_t leader_epoch;
    int64_t high_watermark;
    struct raft_quorum_replica voters[RAFT_MAX_VOTERS];
    int n_voters;
    struct raft_quorum_replica observers[RAFT_QUORUM_VIEW_MAX_OBSERVERS];
    int n_observers;
};

int raft_codec_write_describe_quorum(struct kafka_writer *w, int16_t version, const struct raft_quorum_view *view);
/* From a decoded describe_quorum_response. Returns 0 or -1 with err. */
int raft_codec_read_describe_quorum(const void *response, struct raft_quorum_view *out, char *err, size_t errlen);

/* The leader's LeaderChange entry: the core's body at the leader that
 * wrote it, a control batch anywhere else. Not metadata for the listener. */
bool raft_codec_is_leader_change(const struct raft_entry *e);

#endif
