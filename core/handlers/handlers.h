/* Request handling: decode a request frame, run the API handler, encode and
 * send the response. Runs on the network layer's io threads.
 *
 * The path of one request (dispatch.c): header -> version check -> body
 * decode -> handler -> response encode -> net_request_complete. Around the
 * handler, pipeline.c counts request metrics and, with a quota plugin
 * loaded, measures io time and sets the response's throttle. Authorization
 * and audit are not stages around it: each handler authorizes per resource
 * (handler_authorize_*, as Kafka does) and the admin handlers emit audit
 * events (handler_audit_admin). The principal is the connection's, set by
 * net/ (User:ANONYMOUS unless the connection authenticated). */
#ifndef CAIRN_HANDLERS_HANDLERS_H
#define CAIRN_HANDLERS_HANDLERS_H

#include <stdbool.h>
#include <stdint.h>

#include "cairn/types.h"
#include "protocol/messages.h"

struct net_request;
struct broker_config;
struct log_manager;
struct metadata_store;
struct purgatory;
struct fetch_session_cache;
struct plugin_host;
struct metrics_metric;
struct handler_authz_memo;
struct group_coordinator;
struct txn_markers_local;
struct txn_coordinator;
struct replication;

/* Everything a handler reaches. Built by the server before the first
 * request and read-only afterwards; the pointed-to parts are thread-safe. */
struct handler_env {
    const struct broker_config *config;
    struct log_manager *logs;
    struct metadata_store *metadata;
    struct purgatory *fetch_purgatory;
    struct fetch_session_cache *fetch_sessions;
    struct plugin_host *plugins; /* NULL when no plugin is loaded */
    struct group_coordinator *groups;
    struct txn_coordinator *txn_coordinator; /* NULL: this broker coordinates no transactions */
    struct tiered *tiered;                   /* NULL: remote.log.storage.system.enable is off */
    struct replication *replication;         /* followers' fetches; NULL: none are served */
    int64_t remote_fetch_max_wait_ms;        /* remote.fetch.max.wait.ms */
    int32_t node_id;
    /* Broker defaults read once at start. */
    bool auto_create_topics;
    int32_t default_num_partitions;
    int16_t default_replication_factor;
    int32_t fetch_max_bytes;
    int32_t min_insync_replicas;
    bool rack_aware_replica_selector; /* replica.selector.class is Kafka's RackAwareReplicaSelector */
    bool txn_verification;            /* transaction.partition.verification.enable */
    /* The outbound client Produce asks other brokers' transaction
     * coordinators through (the marker sender's); NULL: none. */
    const struct txn_markers_local *txn_links;
    /* The active controller's id for Metadata and DescribeCluster (a
     * metadata quorum's leader); NULL: the image's controller id. */
    int32_t (*active_controller)(void *ctx);
    void *active_controller_ctx;
    /* Checks what a change of this broker's dynamic configs would run with
     * (layered: the whole config after it) before it is recorded, e.g. that
     * new TLS keystores load. 0, or -1 with err naming the key; NULL: no check. */
    int (*check_broker_config)(void *ctx, const struct broker_config *layered, char *err, size_t errlen);
    void *check_broker_config_ctx;
};

/* One request in progress. Allocated per request; owned by the io thread
 * handling it, or by a delayed operation once the handler defers it. */
struct request_context {
    struct handler_env *env;
    struct net_request *net;
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
    char client_id[256];
    struct kafka_arena arena; /* request and response memory */
    void *request;
    void *response;
    const struct kafka_api_desc *desc;
    /* Pipeline state: the principal and request description handed to
     * plugins (filled only when plugins are loaded), and io-thread time spent
     * on the request so far, for REQUEST quotas. */
    struct cairn_principal principal;
    struct cairn_request_info info;
    char client_host[64];
    int64_t io_ns;
    int64_t started_ns;
    struct handler_authz_memo *authz_memo; /* decisions already made for this request */
    int32_t mutation_throttle_ms;          /* KIP-599 throttle found by the handler (handler_mutation_quota) */
    bool close_after_response;             /* close the connection once the response is sent (SASL failures) */
};

enum handler_result {
    HANDLER_RESPOND,     /* response filled: send it */
    HANDLER_DEFERRED,    /* a delayed operation will call request_context_respond */
    HANDLER_NO_RESPONSE, /* send nothing (Produce with acks=0) */
    HANDLER_CLOSE,       /* close the connection (protocol violation) */
};

typedef enum handler_result (*api_handler_fn)(struct request_context *ctx, void *request, void *response);

struct api_handler_entry {
    int16_t api_key;
    int16_t min_version;
    int16_t max_version;
    api_handler_fn handler;
};

/* The table of APIs this broker serves, sorted by api key. */
const struct api_handler_entry *handlers_table(int *count);
const struct api_handler_entry *handlers_find(int16_t api_key);

/* net_request_handler: the entry point for every request frame. ctx is the handler_env. */
void handlers_dispatch(struct net_request *req, void *env);

/* Encodes ctx->response, sends it and frees ctx. For deferred requests. */
void request_context_respond(struct request_context *ctx);
/* Frees ctx without answering (the connection is closed). */
void request_context_abandon(struct request_context *ctx, bool close_connection);

/* Per-API handlers. */
enum handler_result handle_api_versions(struct request_context *, void *, void *);
enum handler_result handle_sasl_handshake(struct request_context *, void *, void *);
enum handler_result handle_sasl_authenticate(struct request_context *, void *, void *);
enum handler_result handle_describe_user_scram_credentials(struct request_context *, void *, void *);
enum handler_result handle_alter_user_scram_credentials(struct request_context *, void *, void *);
enum handler_result handle_metadata(struct request_context *, void *, void *);
enum handler_result handle_produce(struct request_context *, void *, void *);
enum handler_result handle_fetch(struct request_context *, void *, void *);
enum handler_result handle_list_offsets(struct request_context *, void *, void *);
enum handler_result handle_offset_for_leader_epoch(struct request_context *, void *, void *);
enum handler_result handle_create_topics(struct request_context *, void *, void *);
enum handler_result handle_delete_topics(struct request_context *, void *, void *);
enum handler_result handle_create_partitions(struct request_context *, void *, void *);
enum handler_result handle_describe_configs(struct request_context *, void *, void *);
enum handler_result handle_alter_configs(struct request_context *, void *, void *);
enum handler_result handle_incremental_alter_configs(struct request_context *, void *, void *);
enum handler_result handle_describe_cluster(struct request_context *, void *, void *);
enum handler_result handle_find_coordinator(struct request_context *, void *, void *);
enum handler_result handle_init_producer_id(struct request_context *, void *, void *);
enum handler_result handle_offset_commit(struct request_context *, void *, void *);
enum handler_result handle_offset_fetch(struct request_context *, void *, void *);
enum handler_result handle_txn_offset_commit(struct request_context *, void *, void *);
enum handler_result handle_join_group(struct request_context *, void *, void *);
enum handler_result handle_heartbeat(struct request_context *, void *, void *);
enum handler_result handle_leave_group(struct request_context *, void *, void *);
enum handler_result handle_sync_group(struct request_context *, void *, void *);
enum handler_result handle_describe_groups(struct request_context *, void *, void *);
enum handler_result handle_list_groups(struct request_context *, void *, void *);
enum handler_result handle_delete_groups(struct request_context *, void *, void *);
enum handler_result handle_offset_delete(struct request_context *, void *, void *);
enum handler_result handle_write_txn_markers(struct request_context *, void *, void *);
enum handler_result handle_describe_producers(struct request_context *, void *, void *);
enum handler_result handle_elect_leaders(struct request_context *, void *, void *);
enum handler_result handle_alter_partition_reassignments(struct request_context *, void *, void *);
enum handler_result handle_list_partition_reassignments(struct request_context *, void *, void *);
enum handler_result handle_add_partitions_to_txn(struct request_context *, void *, void *);
enum handler_result handle_add_offsets_to_txn(struct request_context *, void *, void *);
enum handler_result handle_end_txn(struct request_context *, void *, void *);
enum handler_result handle_describe_transactions(struct request_context *, void *, void *);
enum handler_result handle_list_transactions(struct request_context *, void *, void *);
enum handler_result handle_describe_acls(struct request_context *, void *, void *);
enum handler_result handle_create_acls(struct request_context *, void *, void *);
enum handler_result handle_delete_acls(struct request_context *, void *, void *);
enum handler_result handle_describe_client_quotas(struct request_context *, void *, void *);
enum handler_result handle_alter_client_quotas(struct request_context *, void *, void *);
enum handler_result handle_delete_records(struct request_context *, void *, void *);
enum handler_result handle_describe_log_dirs(struct request_context *, void *, void *);
enum handler_result handle_describe_topic_partitions(struct request_context *, void *, void *);

#endif
