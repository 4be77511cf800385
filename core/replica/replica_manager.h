/* The partitions this broker hosts and their replica state: for each, its
 * log, role (leader or follower), leader id and epoch, partition epoch,
 * replicas and ISR. Driven by metadata images: the broker subscribes
 * replica_manager_on_metadata to the metadata store, and each published
 * image creates the logs of newly hosted partitions, deletes those of
 * deleted topics (or of partitions moved away), applies topic configs and
 * records leadership (Kafka's ReplicaManager.applyDelta).
 *
 * The high watermark lives in the partition log; this layer decides who
 * moves it. A leader whose ISR is itself alone lets the log track its end
 * (every append is at once "replicated"); any other partition holds it,
 * and replication (core/replication: the follower fetchers, the leader's
 * ISR bookkeeping) moves it.
 *
 * Thread-safety: every function may be called from any thread. Metadata
 * changes are applied one at a time (the store calls its listeners under
 * its mutation lock); lookups take an internal mutex briefly and never wait
 * for disk. Leadership listeners run on the thread applying the change (or
 * registering the listener), after the partition's log exists, without
 * the mutex lookups take. */
#ifndef CAIRN_REPLICA_REPLICA_MANAGER_H
#define CAIRN_REPLICA_REPLICA_MANAGER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/log_config.h"
#include "log/log_manager.h"
#include "metadata/metadata_image.h"

struct broker_config;
struct replica_manager;

/* The effective log settings of a topic (NULL: the broker's defaults): its
 * dynamic configs over the broker's. An invalid topic config is logged and
 * the broker's defaults used. */
void replica_log_config(const struct broker_config *config, const struct metadata_topic *topic, struct log_config *out);
/* min.insync.replicas of topic (its config over the broker's). */
int32_t replica_min_insync_replicas(const struct broker_config *config, const struct metadata_topic *topic);

struct replica_manager_options {
    struct log_manager *logs;           /* borrowed; outlives the manager */
    const struct broker_config *config; /* borrowed; broker defaults for topic configs */
    int32_t node_id;
};

/* Returns 0, or -1 when out of memory. */
int replica_manager_create(const struct replica_manager_options *opts, struct replica_manager **out);
/* Drops the manager's log references; the logs stay in the log manager. */
void replica_manager_destroy(struct replica_manager *rm);

/* Bring the hosted partitions from old_image to new_image (old_image NULL:
 * from nothing, as at start-up). Has metadata_listener_fn's signature, so
 * the broker subscribes it with the manager as ctx. */
void replica_manager_on_metadata(void *ctx, const struct metadata_image *old_image,
                                 const struct metadata_image *new_image);

enum replica_role {
    REPLICA_ROLE_LEADER,
    REPLICA_ROLE_FOLLOWER,
};

/* Replica lists longer than this are cut in a lookup (counts stay whole). */
#define REPLICA_INFO_MAX_REPLICAS 32

/* A copy of one hosted partition's state. */
struct replica_partition_info {
    enum replica_role role;
    int32_t leader_id; /* -1 when the partition has no leader */
    int32_t leader_epoch;
    int32_t partition_epoch;
    int32_t replica_count;
    int32_t isr_count;
    /* KIP-966's rule with eligible.leader.replicas.version on: the high
     * watermark moves only while the ISR has at least this many members
     * (min.insync.replicas capped at the replica count); 0: no such rule. */
    int32_t high_watermark_min_isr;
    int32_t replicas[REPLICA_INFO_MAX_REPLICAS];
    int32_t isr[REPLICA_INFO_MAX_REPLICAS];
};

/* The state of topic-partition when this broker hosts it: true with *out
 * filled (out may be NULL) and, when log is not NULL, a new reference to
 * its log in *log (release with partition_log_close). False when not hosted. */
bool replica_manager_lookup(struct replica_manager *rm, const char *topic, int32_t partition,
                            struct replica_partition_info *out, struct partition_log **log);
/* How many partitions this broker hosts / leads. */
size_t replica_manager_hosted_count(struct replica_manager *rm);
size_t replica_manager_leader_count(struct replica_manager *rm);

/* Where replication plugs in: move a hosted partition's high watermark
 * (never backward, at most the log end). Ignored while the partition's log
 * tracks its end (leader with ISR = {self}). Returns the high watermark
 * after the call, or -1 when the partition is not hosted. */
int64_t replica_manager_update_high_watermark(struct replica_manager *rm, const char *topic, int32_t partition,
                                              int64_t offset);

/* Told when this broker becomes leader of a hosted partition (became_leader
 * true) or stops leading it: becomes follower, or the partition goes away
 * (false). Called once per hosted partition as it is first seen (for a
 * listener added later: at registration, for the partitions hosted then),
 * and again whenever its leader epoch changes; the log exists at the call.
 * The coordinator runtime loads and unloads __consumer_offsets and
 * __transaction_state partitions here. Calls are serialised. A listener
 * must not add or remove listeners nor call metadata store mutations (it
 * may run under the store's lock); lookups are fine. */
typedef void (*replica_leadership_fn)(void *ctx, const char *topic, int32_t partition, bool became_leader,
                                      int32_t leader_epoch);
/* Returns a listener id (> 0), or -1 when out of memory. Before returning,
 * calls fn for every partition hosted now, on the caller's thread. */
int replica_manager_add_leadership_listener(struct replica_manager *rm, replica_leadership_fn fn, void *ctx);
/* No call to the listener follows the return. */
void replica_manager_remove_leadership_listener(struct replica_manager *rm, int id);

#endif
