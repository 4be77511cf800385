/* Replication of partition logs between brokers (Kafka's ReplicaFetcherThread
 * and the leader's follower bookkeeping in Partition).
 *
 * Follower side: for every hosted partition this broker follows (per the
 * replica manager's leadership changes), a fetcher thread sends Fetch with
 * replica_id = this node to the leader's first PLAINTEXT endpoint (from the
 * metadata image) through the outbound client, and appends what comes back
 * with LOG_APPEND_REPLICATION, which keeps the leader's offsets, epochs and
 * producer state. Partitions are spread over num.replica.fetchers fetchers
 * per leader. A follower's high watermark is min(leader's, own log end).
 *
 * Leader side: replication_follower_fetched records a follower's log end
 * offset (the fetch offset it asks for) and moves the high watermark to the
 * smallest log end offset over the ISR, the leader's included. With
 * opts.alter_partition the leader also shrinks and grows the ISR (isr.c).
 *
 * Metrics (process-wide registry, core/metrics): on the leader the gauges
 * cairn_replication_under_replicated_partitions, _under_min_isr_partitions
 * and _at_min_isr_partitions (refreshed each second by the ISR thread) and
 * the counters cairn_replication_isr_shrinks_total / _expands_total; on a
 * follower cairn_replication_fetcher_max_lag (messages) and
 * cairn_replication_fetcher_max_lag_ms (time since last caught up).
 *
 * Thread-safety: every function may be called from any thread; the module
 * owns its fetcher threads and one net_client. */
#ifndef CAIRN_REPLICATION_REPLICATION_H
#define CAIRN_REPLICATION_REPLICATION_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct replica_manager;
struct metadata_store;
struct partition_log;
struct replication;

/* Sends AlterPartition for one partition to the active controller and
 * waits for the answer: the new ISR (leader included), at the leader and
 * partition epochs this broker knows. Returns the partition's (or the
 * request's) error; on NONE *new_partition_epoch is the committed epoch. */
/* isr_epochs[i] is member i's broker epoch as its last fetch named it
 * (KIP-903; -1: unknown), so that the controller refuses a member that
 * has restarted since (INELIGIBLE_REPLICA). */
typedef int16_t (*replication_alter_partition_fn)(void *ctx, const char *topic, const uint8_t topic_id[16],
                                                  int32_t partition, int32_t leader_epoch, int32_t partition_epoch,
                                                  const int32_t *isr, const int64_t *isr_epochs, int32_t isr_count,
                                                  int32_t *new_partition_epoch);

struct net_client_config;

struct replication_options {
    struct replica_manager *replicas; /* borrowed; outlives the module */
    struct metadata_store *metadata;  /* borrowed; for leaders' endpoints */
    int32_t node_id;
    int32_t num_fetchers;             /* num.replica.fetchers, per leader */
    int32_t fetch_max_bytes;          /* replica.fetch.max.bytes (per partition) */
    int32_t fetch_response_max_bytes; /* replica.fetch.response.max.bytes */
    int32_t fetch_wait_max_ms;        /* replica.fetch.wait.max.ms */
    int32_t fetch_min_bytes;          /* replica.fetch.min.bytes */
    int64_t fetch_backoff_ms;         /* replica.fetch.backoff.ms */
    int64_t socket_timeout_ms;        /* replica.socket.timeout.ms */
    /* follower.replication.throttled.rate (bytes/s, INT64_MAX: none): what
     * the fetchers append together for the partitions whose topic's
     * follower.replication.throttled.replicas names this broker. */
    int64_t follower_throttled_rate;
    /* leader.replication.throttled.rate (bytes/s, INT64_MAX: none): what
     * Fetch answers of partitions led here send, together, to followers
     * outside the ISR when the topic's leader.replication.throttled.replicas
     * names this broker's replica (the Fetch handler asks and records). */
    int64_t leader_throttled_rate;
    /* Called when a partition's high watermark moved (on the leader after a
     * follower fetch, on a follower after a fetch), so waiting fetches and
     * acks=all produces look again. May be NULL. */
    void (*high_watermark_moved)(void *ctx, struct partition_log *log);
    void *high_watermark_ctx;
    /* ISR changes at the leader (Kafka's Partition.maybeShrinkIsr /
     * maybeExpandIsr): a follower not caught up to the log end for
     * replica_lag_time_max_ms leaves the ISR, one whose log end reaches
     * the high watermark (and the leader epoch's start) rejoins, through
     * alter_partition. NULL: the ISR is left as the metadata has it. */
    replication_alter_partition_fn alter_partition;
    void *alter_partition_ctx;
    /* This broker's registration epoch, -1 while unregistered (NULL: -1):
     * followers name it in Fetch (ReplicaState.ReplicaEpoch, v15+) and a
     * leader in its own ISR entry (KIP-903). Called from any thread. */
    int64_t (*broker_epoch)(void *ctx);
    void *broker_epoch_ctx;
    int64_t replica_lag_time_max_ms; /* replica.lag.time.max.ms */
    /* min.insync.replicas of the broker (read at start), for topics that
     * do not set their own: the under/at-min-ISR gauges. */
    int32_t min_insync_replicas;
    /* The listener of the leaders' endpoints to fetch from (Kafka's
     * inter-broker listener); NULL or empty: the first PLAINTEXT one. */
    const char *listener;
    /* How the fetchers connect: link_apply (NULL: plain TCP) sets the
     * client's transport and SASL from link, which outlives the module;
     * link_strict (TLS or SASL) never falls back to a PLAINTEXT endpoint. */
    void (*link_apply)(const void *link, struct net_client_config *cfg);
    const void *link;
    bool link_strict;
};

/* Whether a follower.replication.throttled.replicas (or leader.*) value
 * names the replica of partition on broker: "*", or a comma-separated list of
 * partition:broker pairs (blanks around each ignored). */
bool replication_throttled_replica(const char *list, int32_t partition, int32_t broker);

/* Starts the outbound client and registers with the replica manager (the
 * partitions followed now start fetching at once). Returns 0, or -1 with
 * err filled. */
int replication_start(const struct replication_options *opts, struct replication **out, char *err, size_t errlen);
/* Stops the fetchers (a fetch in flight is cancelled) and frees. NULL: no-op. */
void replication_stop(struct replication *r);

/* On the leader, for a Fetch from replica_id of topic-partition at
 * fetch_offset: records the follower's log end offset and broker epoch
 * (replica_epoch, -1 before Fetch v15), and moves the high
 * watermark. Returns KAFKA_ERR_NONE, NOT_LEADER_OR_FOLLOWER when this
 * broker does not lead the partition, or UNKNOWN_TOPIC_OR_PARTITION when
 * replica_id is not one of its replicas. */
int16_t replication_follower_fetched(struct replication *r, const char *topic, int32_t partition, int32_t replica_id,
                                     int64_t replica_epoch, int64_t fetch_offset);

/* On the leader, for an acks=all produce about to wait: the in-sync
 * followers of topic-partition that have not fetched it yet in this
 * leader epoch (at most cap, into ids). A follower adds a partition new
 * to it to its next fetch, and its fetch in progress may be parked here
 * for replica.fetch.wait.max.ms on the partitions it already follows:
 * the caller wakes those fetches so the produce does not wait that long. */
int32_t replication_absent_followers(struct replication *r, const char *topic, int32_t partition, int32_t *ids,
                                     int32_t cap);

/* On the leader, what the rack-aware replica selector weighs (KIP-392):
 * follower replica_id's log end offset as of its last fetch in the current
 * leader epoch, and how long ago it was last caught up. False when this
 * broker does not lead the partition or the follower has not fetched in
 * this epoch. */
bool replication_follower_state(struct replication *r, const char *topic, int32_t partition, int32_t replica_id,
                                int64_t *log_end_offset, int64_t *since_caught_up_ms);
/* On the leader, so a follower learns a moved high watermark without
 * waiting for new data (Kafka's DelayedFetch, KIP-392): whether follower
 * replica_id was last sent a high watermark below high_watermark (or none
 * yet in this epoch), and recording what an answer sends it. A follower
 * that has not fetched in this epoch is never behind. */
bool replication_follower_hw_behind(struct replication *r, const char *topic, int32_t partition, int32_t replica_id,
                                    int64_t high_watermark);
void replication_follower_hw_sent(struct replication *r, const char *topic, int32_t partition, int32_t replica_id,
                                  int64_t high_watermark);
/* num.replica.fetchers changed at runtime (a dynamic broker config):
 * every followed partition whose fetcher index changes moves to the
 * fetcher of its new index (started if new) once the fetch in progress
 * on its old one ends. A fetcher past the new count with no partition
 * left stops. Values below 1 count as 1; NULL r: no-op. */
void replication_set_num_fetchers(struct replication *r, int32_t num_fetchers);

/* Both throttle rates changed at runtime (dynamic broker configs),
 * effective from the next fetch. NULL r: no-op. */
void replication_set_throttled_rates(struct replication *r, int64_t leader_rate, int64_t follower_rate);
/* On the leader, for Fetch answers to throttled followers (Kafka's
 * shouldLeaderThrottle): whether leader.replication.throttled.rate is
 * exceeded now (the partition then goes back empty), and the bytes an
 * answer sent for throttled partitions. NULL r: never exceeded. */
bool replication_leader_quota_exceeded(struct replication *r);
void replication_leader_quota_record(struct replication *r, int64_t bytes);
/* Milliseconds until leader.replication.throttled.rate is no longer
 * exceeded (0: it is not), so a follower's fetch parks no longer. */
int64_t replication_leader_quota_wait_ms(struct replication *r);

/* Counters for tests and metrics. */
struct replication_stats {
    uint64_t fetches;        /* follower fetch responses handled */
    uint64_t fetch_errors;   /* failed fetches (network or partition errors) */
    uint64_t appended_bytes; /* bytes appended as follower */
    uint64_t isr_shrinks;    /* AlterPartitions accepted that removed a member */
    uint64_t isr_expands;    /* AlterPartitions accepted that added a member */
};
void replication_stats(struct replication *r, struct replication_stats *out);

#endif
