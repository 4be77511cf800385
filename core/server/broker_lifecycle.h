/* A broker's membership in a cluster whose metadata runs on a quorum
 * (controller.quorum.voters set): the broker registers with the active
 * controller and stays unfenced while it heartbeats, as KRaft's
 * BrokerLifecycleManager does: BrokerRegistration, then BrokerHeartbeat
 * every broker.heartbeat.interval.ms, to the quorum's leader over the
 * controller listener (net/client.h). On the leader's own node it calls the
 * metadata store directly.
 *
 * Threads: start and stop from the main thread; the lifecycle runs a thread
 * of its own, which calls the metadata store's controller operations. */
#ifndef CAIRN_SERVER_BROKER_LIFECYCLE_H
#define CAIRN_SERVER_BROKER_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "metadata/metadata_image.h"

struct metadata_store;
struct broker_lifecycle;
struct raft_shell_metadata;
struct controller_brokers;

struct server_link;

struct broker_lifecycle_options {
    struct metadata_store *store;
    int32_t node_id;
    const struct metadata_endpoint *endpoints; /* copied */
    int32_t endpoint_count;
    const char *rack;              /* NULL when none; copied */
    int64_t heartbeat_interval_ms; /* broker.heartbeat.interval.ms */
    const char *cluster_id;
    struct raft_shell_metadata *quorum;    /* who leads, and where it listens */
    struct controller_brokers *controller; /* this node's controller side */
    const struct server_link *link;        /* how to reach the controllers; outlives the lifecycle */
    /* Where a clean stop leaves its broker epoch for the next start's
     * PreviousBrokerEpoch (BROKER_LIFECYCLE_EPOCH_FILE); NULL: nowhere. */
    const char *state_dir;
};

/* The broker epoch at the last clean stop, in decimal: read and removed
 * at start, written by broker_lifecycle_stop. */
#define BROKER_LIFECYCLE_EPOCH_FILE "clean-shutdown-broker-epoch"

/* Returns 0, or -1 with err. */
int broker_lifecycle_start(const struct broker_lifecycle_options *opts, struct broker_lifecycle **out, char *err,
                           size_t errlen);
/* Waits up to timeout_ms for this broker to be registered and unfenced in
 * the published image. Returns 0, -1 on timeout, or
 * BROKER_LIFECYCLE_STOP_PENDING once SIGTERM or SIGINT is pending: cairnd
 * blocks them in every thread (main.c), so one sent during start-up waits
 * at process level, and a node kept out of its cluster still stops. */
#define BROKER_LIFECYCLE_STOP_PENDING (-2)
int broker_lifecycle_wait_unfenced(struct broker_lifecycle *lc, int64_t timeout_ms);
void broker_lifecycle_stop(struct broker_lifecycle *lc);

/* metadata_producer_id_allocator (ctx: the lifecycle): a block from this
 * store's controller when it is active, else AllocateProducerIds to the
 * active controller (Kafka's RPC). Any thread. */
int16_t broker_lifecycle_allocate_producer_ids(void *ctx, int64_t *first, char *err, size_t errlen);

/* replication_alter_partition_fn (ctx: the lifecycle): AlterPartition v3
 * for one partition to the active controller (the store directly on its
 * own node), with this broker's epoch and each member's (KIP-903);
 * NOT_CONTROLLER when none is known. Any thread; serialised with the
 * heartbeats. */
int16_t broker_lifecycle_alter_partition(void *ctx, const char *topic, const uint8_t topic_id[16], int32_t partition,
                                         int32_t leader_epoch, int32_t partition_epoch, const int32_t *isr,
                                         const int64_t *isr_epochs, int32_t isr_count, int32_t *new_partition_epoch);
/* This broker's registration epoch, -1 while unregistered (ctx: the
 * lifecycle). Any thread, without waiting for a call in progress. */
int64_t broker_lifecycle_epoch(void *ctx);

#endif
