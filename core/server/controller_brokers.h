/* The active controller's side of broker membership (KRaft's
 * BrokerHeartbeatManager): BrokerRegistration and BrokerHeartbeat on the
 * controller listener, and fencing of brokers whose heartbeats stop for
 * broker.session.timeout.ms. Only the node that leads the metadata quorum
 * answers; others say NOT_CONTROLLER.
 *
 * Threads: controller_brokers_handle_request runs on the quorum server's io
 * threads and queues the request for a worker thread of its own (a
 * registration commits through the quorum, whose Fetch requests need those
 * io threads), which also checks sessions. Start and stop from the main
 * thread; stop after the quorum's server. */
#ifndef CAIRN_SERVER_CONTROLLER_BROKERS_H
#define CAIRN_SERVER_CONTROLLER_BROKERS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/server.h"

struct metadata_store;
struct controller_brokers;

/* The automatic preferred-leader rebalance the worker runs while this node
 * is the active controller (auto.leader.rebalance.enable and friends). */
struct controller_rebalance {
    bool enable;
    int64_t interval_ms;
    int32_t percentage;
};

int controller_brokers_start(struct metadata_store *store, const char *cluster_id, int64_t session_timeout_ms,
                             const struct controller_rebalance *rebalance, struct controller_brokers **out, char *err,
                             size_t errlen);
void controller_brokers_stop(struct controller_brokers *cb);

/* net_request_handler for BrokerRegistration, BrokerHeartbeat,
 * AllocateProducerIds and AlterPartition (ctx: cb). */
void controller_brokers_handle_request(struct net_request *req, void *cb);

/* A heartbeat from a broker on the controller's own node. */
void controller_brokers_heard(struct controller_brokers *cb, int32_t node_id);

/* A registration at this controller (the network's BrokerRegistration, and
 * the broker on the controller's own node): metadata_register_broker with
 * what the sessions know of the registered incarnation, so a new one is
 * refused (DUPLICATE_BROKER_REGISTRATION) while the registered one's
 * session is valid. previous_epoch: the broker's epoch before a clean
 * shutdown, -1. Any thread. */
struct metadata_endpoint;
struct kafka_uuid;
int16_t controller_brokers_register(struct controller_brokers *cb, int32_t node_id,
                                    const struct metadata_endpoint *endpoints, int32_t endpoint_count, const char *rack,
                                    const struct kafka_uuid *incarnation_id, int64_t previous_epoch, bool stay_fenced,
                                    int64_t *epoch, char *err, size_t errlen);

#define CONTROLLER_API_BROKER_REGISTRATION 62
#define CONTROLLER_API_BROKER_HEARTBEAT 63
#define CONTROLLER_API_ALLOCATE_PRODUCER_IDS 67
#define CONTROLLER_API_ENVELOPE 58

/* Envelope requests (api 58) are handed to serve(ctx, req) on the worker
 * thread, which completes them; without it they close the connection. Call
 * before the quorum serves. */
void controller_brokers_set_forwarding(struct controller_brokers *cb, void (*serve)(void *ctx, struct net_request *req),
                                       void *ctx);

#endif
