/* The broker's own parts, shared by the files that start them
 * (broker.c, broker_coordinators.c); not for other modules. */
#ifndef CAIRN_SERVER_BROKER_INTERNAL_H
#define CAIRN_SERVER_BROKER_INTERNAL_H

#include <stddef.h>

#include "handlers/handlers.h"
#include "handlers/txn_markers_local.h"
#include "server/broker_tls.h"
#include "server/links.h"

/* Owned by the main thread: built by broker_start, torn down by
 * broker_stop; the parts it points to document their own threads. */
struct broker {
    struct broker_config *config;
    struct log_manager *logs;
    struct replica_manager *replicas; /* hosted partitions, driven by metadata */
    struct metadata_store *metadata;
    int metadata_subscription;
    struct acl_feed *acl_feed;             /* NULL: no plugin reads ACLs */
    struct quota_feed *quota_feed;         /* NULL: no plugin reads client quotas */
    struct dynamic_config *dynamic_config; /* connection limits and fetcher count changes */
    struct purgatory *fetch_purgatory;
    struct fetch_session_cache *fetch_sessions;
    struct group_coordinator *groups;
    struct group_log *group_log;
    struct net_server *net;
    struct broker_tls tls; /* contexts of the SSL listeners; freed after net */
    /* How this broker's clients reach the controllers and the other
     * brokers; closed after every client is destroyed. */
    struct server_link controller_link, broker_link;
    struct plugin_host *plugins;
    struct metrics_http *metrics_http;
    struct txn_log *txn_log;
    struct txn_coordinator *txn_coordinator;
    struct txn_markers_local markers; /* ctx of the coordinator's marker ops */
    struct net_client *marker_client; /* WriteTxnMarkers to other brokers; freed after the coordinator */
    /* Loads and unloads the partitions of __consumer_offsets and
     * __transaction_state; the shards are freed after the coordinators. */
    struct coordinator_runtime *coordinators;
    int leadership_listener; /* the runtime's registration with the replica manager */
    struct coordinator_shards *group_shards;
    struct coordinator_shards *txn_shards;
    struct handler_env env;
    char cluster_id[64];
    struct quorum *quorum; /* controller.quorum.voters set: the networked quorum, on the controller listener */
    struct raft_shell_metadata *quorum_log;        /* the metadata log over the quorum; freed after the quorum stops */
    struct broker_lifecycle *lifecycle;            /* registration with the active controller (quorum only) */
    struct controller_brokers *controller_brokers; /* the controller's side of it */
    struct broker_forwarding *forwarding;          /* a pure broker's admin requests to the controller */
    struct controller_forwarding *controller_forwarding; /* a voter's side: runs them */
    struct tiered *tiered;                               /* remote.log.storage.system.enable: the remote log manager */
    struct replication *replication;                     /* followers' fetchers and the leaders' follower offsets */
};

/* Each returns 0, or -1 with err filled (broker_coordinators.c). */
/* The coordinator runtime, __consumer_offsets and the group coordinator. */
int broker_start_groups(struct broker *b, char *err, size_t errlen);
/* The client that sends WriteTxnMarkers to other brokers. */
int broker_start_marker_client(struct broker *b, char *err, size_t errlen);
/* __transaction_state and the transaction coordinator. */
int broker_start_transactions(struct broker *b, char *err, size_t errlen);
/* Loads every held partition of both internal topics and waits for it. */
int broker_load_coordinators(struct broker *b, char *err, size_t errlen);

#endif
