/* The networked Raft node: the pure core (raft.h) driven by a thread of its
 * own. That thread runs a libuv loop with a timer that ticks the core;
 * requests that arrive on the controller listener are decoded on the
 * network layer's io thread and handed over; the core's messages to other
 * voters go out through the outbound client (net/client.h), whose answers
 * come back the same way. After every input the core's outputs are drained
 * and applied in order: sends, log writes, truncations and quorum-state
 * writes through the store ops, then the flush and persist reports back to
 * the core.
 *
 * Threads: raft_shell_start starts the raft thread and the client's thread.
 * raft_shell_handle_request runs on the network layer's io threads.
 * Listener callbacks run on the raft thread. raft_shell_status may be
 * called from any thread. start/stop from one controlling thread.
 *
 * Ownership: the shell owns the core node, the client and the store once
 * started (also when start fails). */
#ifndef CAIRN_RAFT_RAFT_SHELL_H
#define CAIRN_RAFT_RAFT_SHELL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/server.h"
#include "raft/raft.h"
#include "raft/raft_shell_store.h"

struct raft_shell;

struct raft_shell_voter {
    int32_t id;
    char host[256];
    int port;
};

/* Called on the raft thread. */
struct raft_shell_listener {
    void *ctx;
    /* Entries below high_watermark are committed (raft_shell_entry reads them). */
    void (*on_high_watermark)(void *ctx, struct raft_shell *shell, int64_t high_watermark);
    void (*on_role)(void *ctx, enum raft_role role, int32_t epoch, int32_t leader_id);
    /* A snapshot downloaded from the leader is in snapshot_dir: load it
     * (it replaces the image; commits go on after end_offset). Returns 0,
     * or -1 with err (unreadable: the download is thrown away). */
    int (*on_snapshot)(void *ctx, struct raft_shell *shell, int64_t end_offset, int32_t epoch, char *err,
                       size_t errlen);
};

/* Plain data; copied by raft_shell_start. */
/* Room for the controller's own APIs on its listener (registration,
 * heartbeat, producer ids, AlterPartition, Envelope, ...). */
#define RAFT_SHELL_MAX_OTHER_APIS 8
#define RAFT_SHELL_MAX_FRONT_APIS 4

struct net_client_config;

struct raft_shell_config {
    int32_t node_id;
    /* The voters (controller.quorum.voters). An observer given only
     * controller.quorum.bootstrap.servers lists those endpoints here under
     * Kafka's negative ids (-2, -3, ...): it asks them who leads and learns
     * the leader's endpoint from their Fetch answers (NodeEndpoints). */
    struct raft_shell_voter voters[RAFT_MAX_VOTERS];
    int n_voters;
    char cluster_id[64];
    int64_t election_timeout_ms;     /* controller.quorum.election.timeout.ms */
    int64_t fetch_timeout_ms;        /* controller.quorum.fetch.timeout.ms */
    int64_t election_backoff_max_ms; /* controller.quorum.election.backoff.max.ms */
    int64_t request_timeout_ms;      /* controller.quorum.request.timeout.ms */
    int64_t retry_backoff_ms;        /* controller.quorum.retry.backoff.ms */
    int64_t tick_ms;                 /* how often the core's clock advances; default 10 */
    /* Where this node's snapshot files are (the quorum log's
     * __cluster_metadata-0): FetchSnapshot serves them. Empty: none. */
    char snapshot_dir[PATH_MAX];
    /* Cleaning behind snapshots: the log start moves up to the newest
     * snapshot once the log holds more than retention_bytes
     * (metadata.max.retention.bytes) or its oldest batch is older than
     * retention_ms (metadata.max.retention.ms); -1: no limit. */
    int64_t retention_bytes;
    int64_t retention_ms;
    int32_t snapshot_chunk_bytes; /* a FetchSnapshot request's MaxBytes */
    const struct raft_shell_store_ops *store_ops;
    void *store; /* taken over by raft_shell_start */
    struct raft_shell_listener listener;
    /* Other APIs served on the controller listener (the controller's
     * BrokerRegistration and BrokerHeartbeat): requests with these keys go
     * to other_handler on the io thread, and ApiVersions lists them with
     * the codecs' version ranges. */
    int16_t other_api_keys[RAFT_SHELL_MAX_OTHER_APIS];
    int n_other_api_keys;
    net_request_handler other_handler;
    void *other_ctx;
    /* APIs a front handler answers before requests reach
     * raft_shell_handle_request (SaslHandshake and SaslAuthenticate on a
     * SASL controller listener): ApiVersions lists them with these ranges. */
    struct raft_shell_api {
        int16_t api_key, min_version, max_version;
    } front_apis[RAFT_SHELL_MAX_FRONT_APIS];
    int n_front_apis;
    /* Sets how the quorum's client connects to the other voters (its
     * transport, SASL credentials; see net/client.h); NULL: plain TCP. The
     * context outlives the shell. */
    void (*client_setup)(const void *ctx, struct net_client_config *cc);
    const void *client_setup_ctx;
};

/* Kafka's defaults; node_id, voters, cluster_id and the store are the caller's. */
void raft_shell_config_defaults(struct raft_shell_config *cfg);

/* Loads what the store holds, creates the core and starts the threads.
 * Returns 0, or -1 with err filled (the store is closed then). */
int raft_shell_start(const struct raft_shell_config *cfg, struct raft_shell **out, char *err, size_t errlen);

/* Stops the threads, completes requests still waiting for the core (their
 * connections are closed), closes the store and frees the shell. Stop the
 * network server that feeds raft_shell_handle_request first. */
void raft_shell_stop(struct raft_shell *shell);

/* net_request_handler of the controller listener (ctx: the shell): serves
 * ApiVersions, and Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and
 * DescribeQuorum through the core, FetchSnapshot from the snapshot files
 * (at the leader); any other request closes the connection. */
void raft_shell_handle_request(struct net_request *req, void *shell);

struct raft_shell_status {
    enum raft_role role;
    int32_t epoch;
    int32_t leader_id;
    int64_t high_watermark;
    int64_t end_offset;
    int64_t log_start; /* the end of the snapshot the log follows; 0: a whole log */
};

void raft_shell_status(struct raft_shell *shell, struct raft_shell_status *out);

/* Where node_id's controller listener is: its entry in the voters, or
 * what a Fetch answer named (NodeEndpoints). Any thread. Returns true with
 * host (of hostlen bytes) and *port filled; false when unknown. */
bool raft_shell_node_endpoint(struct raft_shell *shell, int32_t node_id, char *host, size_t hostlen, int *port);

/* One record handed to raft_shell_append. */
struct raft_shell_record {
    const void *data;
    uint32_t len;
};

/* Appends records at the leader, from any thread but the raft thread, in
 * one step of the core (nothing interleaves); waits for the raft thread to
 * take them. They become one entry: one record batch of count records.
 * *epoch_out gets the leader epoch, *last_offset_out the last record's
 * offset. Returns 0, RAFT_ERR_NOT_LEADER when this node does not lead (or
 * no longer does at `epoch` when epoch >= 0), or -1 when the shell is
 * stopping or out of memory. */
int raft_shell_append(struct raft_shell *shell, int32_t epoch, const struct raft_shell_record *records, int32_t count,
                      int32_t *epoch_out, int64_t *last_offset_out);

/* From any thread but the raft thread: a snapshot file was written (and
 * made durable), so the raft thread checks retention and may clean the log
 * behind it now rather than at its next periodic check. Does not wait. */
void raft_shell_snapshot_written(struct raft_shell *shell);

/* The log entry at offset, or NULL. Only on the raft thread (from the
 * listener's callbacks); valid until the callback returns. */
const struct raft_entry *raft_shell_entry(struct raft_shell *shell, int64_t offset);

#endif
