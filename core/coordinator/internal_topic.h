/* An internal compacted topic the broker's coordinators keep their state in
 * (__consumer_offsets, __transaction_state): created on first start, the
 * partition logs held here, the partition a coordinator key lives in, and a
 * replay of every held partition in log order. Record layouts and what the
 * records mean stay with the coordinator that owns the topic.
 *
 * The topic is created with cleanup.policy=compact: the log cleaner keeps
 * the latest record of each key and drops tombstones after
 * delete.retention.ms. Time and size retention apply only under a delete
 * policy, so the retention.ms=-1 also set at creation changes nothing while
 * the policy is compact; it stays so that topics created before the cleaner
 * existed and topics created now carry the same configs, and so that an
 * operator adding "delete" to the policy does not lose live state to time.
 *
 * Thread-safety: after internal_topic_open, internal_topic_log_for_key and
 * internal_topic_replay may be called from any thread (the partition logs
 * serialise appends and reads). internal_topic_close runs once, after the
 * last call. */
#ifndef CAIRN_COORDINATOR_INTERNAL_TOPIC_H
#define CAIRN_COORDINATOR_INTERNAL_TOPIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct log_manager;
struct metadata_store;
struct partition_log;
struct record_batch_header;
struct internal_topic;

/* The strings must outlive the topic (string literals in practice). */
struct purgatory;

struct internal_topic_options {
    const char *name;          /* "__consumer_offsets" */
    const char *component;     /* logger component, "group" */
    const char *config_prefix; /* of the topic's broker keys, for messages: "offsets.topic" */
    struct log_manager *logs;
    struct metadata_store *metadata;
    int32_t num_partitions;     /* <= 0 means 50; applies only when the topic is created */
    int16_t replication_factor; /* <= 0 means 3; capped by the live broker count */
    int32_t segment_bytes;      /* <= 0 means 104857600 */
    /* A partition replicated on this node whose log the broker has not
     * created yet is created by internal_topic_open. */
    int32_t node_id;
    /* Woken on every append, so a follower's parked fetch of the partition
     * is answered at once rather than at replica.fetch.wait.max.ms (the
     * coordinator's replicated writes wait for it). NULL: nobody to wake. */
    struct purgatory *fetch_purgatory;
    /* On a quorum of several voters, how many live brokers to wait for
     * (up to 2 s from the first creation, for both topics) before creating the topic with
     * fewer replicas than replication_factor: a first broker starting alone
     * would otherwise leave the topic with one replica for good. 0: no wait
     * (a single node). */
    int32_t expected_brokers;
    /* The topic's min.insync.replicas when this creates it (capped at its
     * replication factor), as Kafka sets transaction.state.log.min.isr on
     * __transaction_state; internal_topic_append_replicated refuses to
     * write below it. <= 0: no such config (the broker default applies). */
    int32_t min_insync_replicas;
};

/* Creates the topic when the metadata image lacks it, then takes a reference
 * to each partition log held here. On failure -1 with the reason in err. */
int internal_topic_open(const struct internal_topic_options *opts, struct internal_topic **out, char *err,
                        size_t errlen);

/* Drops the partition log references. NULL is ignored. */
void internal_topic_close(struct internal_topic *t);

/* The topic's partition count as the metadata image had it at open. */
int32_t internal_topic_partition_count(const struct internal_topic *t);

/* The log of the partition holding key (Kafka's placement, see
 * coordinator_partition.h), or the error a coordinator answers with:
 * NOT_COORDINATOR when no replica of it is here, COORDINATOR_NOT_AVAILABLE
 * when its log is missing or offline (or t or key is NULL). The log is not
 * retained: it lives as long as the topic. */
int16_t internal_topic_log_for_key(struct internal_topic *t, const char *key, struct partition_log **out);

/* How internal_topic_append makes a batch durable before it returns. */
enum internal_topic_flush {
    INTERNAL_TOPIC_FLUSH_ALL,     /* partition_log_flush: records and indexes, recovery point moves */
    INTERNAL_TOPIC_FLUSH_RECORDS, /* partition_log_flush_records: one fdatasync; recovery rebuilds indexes */
    INTERNAL_TOPIC_FLUSH_NONE,    /* not at all: the caller syncs later with partition_log_flush_to(end) */
};

/* Appends one batch to log (from internal_topic_log_for_key) at the log's
 * latest leader epoch and makes it durable as `flush` says.
 * coordinator_origin: partition_log_append_coordinator's rules (transactional
 * batches without a sequence). *end_offset (when not NULL) gets the offset
 * after the batch. Failures are logged naming `what` ("offsets of group
 * g"). Returns NONE, the append's error, or the flush's. */
int16_t internal_topic_append(const struct internal_topic *t, struct partition_log *log, uint8_t *batch, size_t len,
                              bool coordinator_origin, enum internal_topic_flush flush, int64_t *end_offset,
                              const char *what);

/* internal_topic_append (producer rules), then waits up to timeout_ms for
 * the batch to be replicated to the ISR (partition_log_wait_replicated),
 * as Kafka's coordinators write with acks=all: state a coordinator acts on
 * must survive a change of leader. Returns NONE, NOT_ENOUGH_REPLICAS
 * before appending when the partition's ISR is smaller than the topic's
 * min.insync.replicas, the append's error, NOT_LEADER_OR_FOLLOWER (the
 * batch was cut by a truncation) or REQUEST_TIMED_OUT (not replicated in
 * time; it may still be later). */
int16_t internal_topic_append_replicated(const struct internal_topic *t, struct partition_log *log, uint8_t *batch,
                                         size_t len, enum internal_topic_flush flush, int64_t timeout_ms,
                                         const char *what);

/* The log of partition p when this broker holds it (NULL otherwise). Not
 * retained: it lives as long as the topic. */
struct partition_log *internal_topic_partition_log(const struct internal_topic *t, int32_t p);

/* One partition's replay as the callbacks see it; owned by the replaying
 * thread. */
struct internal_topic_replay {
    const struct internal_topic *topic;
    int32_t partition;
    int64_t skipped; /* batches and records skipped in this partition so far */
};

/* Counts an unreadable batch or record; the first few of each partition are
 * logged with offset and reason, the rest only in the partition's total. */
void internal_topic_replay_skip(struct internal_topic_replay *r, int64_t offset, const char *why);

/* A whole batch whose CRC matched and which is not compressed (compressed
 * and CRC-damaged batches are skipped before this); control batches too. */
typedef void (*internal_topic_batch_fn)(void *ctx, struct internal_topic_replay *r, const uint8_t *batch, size_t len,
                                        const struct record_batch_header *h);
/* After a partition's last batch; ok is false when reading it failed (the
 * replay then stops there). */
typedef void (*internal_topic_partition_fn)(void *ctx, struct internal_topic_replay *r, bool ok);

/* Replays each partition held here, in partition order, from its log start
 * to its end: batch_fn for each batch in offset order, then partition_done
 * (may be NULL). Reads up to read_size bytes at a time (a larger single
 * batch is read whole). Returns 0, or -1 with err when a read fails or the
 * batch framing on disk is damaged. */
int internal_topic_replay(struct internal_topic *t, size_t read_size, internal_topic_batch_fn batch_fn,
                          internal_topic_partition_fn partition_done, void *ctx, char *err, size_t errlen);

/* The same for one partition; -1 with err also when it is not held here. */
int internal_topic_replay_partition(struct internal_topic *t, int32_t partition, size_t read_size,
                                    internal_topic_batch_fn batch_fn, internal_topic_partition_fn partition_done,
                                    void *ctx, char *err, size_t errlen);

#endif
