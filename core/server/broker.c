#include "server/broker.h"
#include "server/broker_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/listeners.h"
#include "config/meta_properties.h"
#include "config/topic_config.h"
#include "coordinator/coordinator_runtime.h"
#include "coordinator/internal_topic.h"
#include "coordinator/purgatory.h"
#include "group/group_coordinator.h"
#include "group/group_log.h"
#include "handlers/fetch_session.h"
#include "handlers/handlers.h"
#include "handlers/sasl.h"
#include "handlers/txn_markers_local.h"
#include "log/log_manager.h"
#include "metadata/metadata_store.h"
#include "metrics/metrics.h"
#include "net/client.h"
#include "net/server.h"
#include "plugin/plugin_host.h"
#include "replica/replica_manager.h"
#include "replication/replication.h"
#include "server/acl_feed.h"
#include "server/quota_feed.h"
#include "server/dynamic_config.h"
#include "server/quorum.h"
#include "server/storage.h"
#include "server/broker_tls.h"
#include "server/broker_lifecycle.h"
#include "server/controller_brokers.h"
#include "server/forwarding.h"
#include "server/links.h"
#include "tls/tls.h"
#include "raft/raft_shell_metadata.h"
#include "tiered/tiered.h"
#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"
#include "util/clock.h"
#include "util/fs_util.h"
#include "util/logger.h"

/* Owned by the main thread; the parts it points to are thread-safe. */

static int validate_topic_config(void *ctx, const char *key, const char *value, char *err, size_t errlen)
{
    (void)ctx;
    return topic_config_validate(key, value, err, errlen);
}

/* How long a quorum broker's start waits for its registration. */
#define BROKER_UNFENCE_WAIT_MS 120000

static int32_t active_controller(void *ctx)
{
    return raft_shell_metadata_leader_id(ctx);
}

/* A pure broker names itself as the controller in Metadata and
 * DescribeCluster, as Kafka's brokers name a live broker: clients send it
 * their admin requests and it forwards them to the active controller
 * (server/forwarding.h). ctx is the broker's node id. */
static int32_t forwarding_controller(void *ctx)
{
    return (int32_t)(intptr_t)ctx;
}

static int start_metadata(struct broker *b, const char *dir, char *err, size_t errlen)
{
    struct listener_spec listeners[NET_MAX_LISTENERS];
    int n = config_parse_listeners(config_advertised_listeners(b->config), listeners, NET_MAX_LISTENERS, err, errlen);
    if (n < 0)
        return -1;
    /* On a quorum node the controller listener is the quorum's, not for clients. */
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (!quorum_enabled(b->config) || !quorum_is_controller_listener(b->config, listeners[i].name))
            listeners[kept++] = listeners[i];
    n = kept;
    struct metadata_endpoint endpoints[NET_MAX_LISTENERS];
    for (int i = 0; i < n; i++) {
        endpoints[i].listener = listeners[i].name;
        endpoints[i].host = listeners[i].host[0] ? listeners[i].host : "localhost";
        endpoints[i].port = (uint16_t)listeners[i].port;
        int protocol = config_security_protocol_id(config_listener_security_protocol(b->config, listeners[i].name));
        endpoints[i].security_protocol = (int16_t)(protocol >= 0 ? protocol : 0);
    }
    struct metadata_store_options opts = {
        .dir = dir,
        .node_id = b->env.node_id,
        .cluster_id = b->cluster_id,
        .endpoints = endpoints,
        .endpoint_count = n,
        .default_num_partitions = b->env.default_num_partitions,
        .default_replication_factor = b->env.default_replication_factor,
        .validate_topic_config = validate_topic_config,
        .snapshot_bytes = config_get_long(b->config, "metadata.log.max.record.bytes.between.snapshots"),
        .snapshot_interval_ms = config_get_long(b->config, "metadata.log.max.snapshot.interval.ms"),
        .rack = config_get_string(b->config, "broker.rack"),
        .unclean_leader_election_enable = config_get_bool(b->config, "unclean.leader.election.enable"),
        .min_insync_replicas = config_get_int(b->config, "min.insync.replicas"),
        .eligible_leader_replicas_enable = config_get_bool(b->config, "eligible.leader.replicas.enable"),
    };
    if (opts.rack && !opts.rack[0])
        opts.rack = NULL;
    char quorum_dir[PATH_MAX] = "";
    if (quorum_enabled(b->config)) {
        /* The controller and the loader run on the quorum's log. */
        if (!(b->quorum_log = raft_shell_metadata_create())) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        opts.log_ops = &raft_shell_metadata_ops;
        opts.log = b->quorum_log;
        if (quorum_metadata_dir(b->config, quorum_dir, sizeof quorum_dir, err, errlen) != 0 ||
            raft_shell_metadata_set_dir(b->quorum_log, quorum_dir, err, errlen) != 0)
            return -1;
        if (quorum_is_voter(b->config)) {
            b->env.active_controller = active_controller;
            b->env.active_controller_ctx = b->quorum_log;
        } else {
            b->env.active_controller = forwarding_controller;
            b->env.active_controller_ctx = (void *)(intptr_t)b->env.node_id;
        }
    }
    if (metadata_store_open(&opts, &b->metadata, err, errlen) != 0)
        return -1;
    if (b->quorum_log) {
        /* Start the quorum, then wait (as Kafka's broker does) until the
         * active controller has this broker registered and unfenced. */
        struct broker_lifecycle_options lopts = {
            .store = b->metadata,
            .node_id = b->env.node_id,
            .endpoints = endpoints,
            .endpoint_count = n,
            .rack = opts.rack,
            .heartbeat_interval_ms = config_get_int(b->config, "broker.heartbeat.interval.ms"),
            .cluster_id = b->cluster_id,
            .quorum = b->quorum_log,
            .link = &b->controller_link,
            .state_dir = quorum_dir[0] ? quorum_dir : NULL,
        };
        /* Only a voter can become the active controller; it also runs the
         * admin requests pure brokers forward to it. */
        if (quorum_is_voter(b->config)) {
            struct controller_rebalance rebalance = quorum_rebalance_settings(b->config);
            if (controller_brokers_start(b->metadata, b->cluster_id,
                                         config_get_int(b->config, "broker.session.timeout.ms"), &rebalance,
                                         &b->controller_brokers, err, errlen) != 0 ||
                controller_forwarding_start(b->config, b->metadata, b->plugins, &b->controller_forwarding, err,
                                            errlen) != 0)
                return -1;
            controller_brokers_set_forwarding(b->controller_brokers, controller_forwarding_serve,
                                              b->controller_forwarding);
        }
        struct quorum_auth auth = {b->metadata, b->plugins};
        if (quorum_start(b->config, b->cluster_id, b->quorum_log, b->controller_brokers, &auth, &b->quorum, err,
                         errlen) != 0)
            return -1;
        lopts.controller = b->controller_brokers;
        if (broker_lifecycle_start(&lopts, &b->lifecycle, err, errlen) != 0)
            return -1;
        metadata_store_set_producer_id_allocator(b->metadata, broker_lifecycle_allocate_producer_ids, b->lifecycle);
        /* A pure broker's admin requests, and the topics it creates itself
         * (internal, auto-created), go to the active controller; a voter's
         * config changes go there while another voter leads. */
        bool voter = quorum_is_voter(b->config);
        b->env.metadata = b->metadata; /* the forwarding reads the image through it */
        if (broker_forwarding_start(b->env.node_id, voter, b->quorum_log, &b->env, &b->controller_link, &b->forwarding,
                                    err, errlen) != 0)
            return -1;
        if (!voter)
            metadata_store_set_topic_creator(b->metadata, broker_forwarding_create_topic, b->forwarding);
        else
            metadata_store_set_own_topic_creator(b->metadata, broker_forwarding_create_topic, b->forwarding);
        int64_t wait_started = clock_mono_ms();
        int waited = broker_lifecycle_wait_unfenced(b->lifecycle, BROKER_UNFENCE_WAIT_MS);
        if (waited == BROKER_LIFECYCLE_STOP_PENDING) {
            snprintf(err, errlen, "stopped by a signal before it was registered and unfenced");
            return -1;
        }
        if (waited != 0) {
            snprintf(err, errlen, "not registered and unfenced by an active controller within %d ms",
                     BROKER_UNFENCE_WAIT_MS);
            return -1;
        }
        logger_info("server", "registered and unfenced after %lld ms", (long long)(clock_mono_ms() - wait_started));
    }
    struct replica_manager_options ropts = {.logs = b->logs, .config = b->config, .node_id = b->env.node_id};
    if (replica_manager_create(&ropts, &b->replicas) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* Follow changes, then bring the hosted partitions in line with the
     * current image. Subscribing first: an image published between the
     * first apply and the subscription was lost before, and a broker
     * restarted while its metadata still streamed in kept following a
     * partition's leader at an old epoch, out of the ISR for good. The
     * listener may apply a newer image before the full apply of an older
     * one: apply again until the image applied is still the current one. */
    b->metadata_subscription = metadata_store_subscribe(b->metadata, replica_manager_on_metadata, b->replicas);
    int64_t apply_started = clock_mono_ms();
    const struct metadata_image *img = metadata_image_acquire(b->metadata);
    for (;;) {
        replica_manager_on_metadata(b->replicas, NULL, img);
        const struct metadata_image *now = metadata_image_acquire(b->metadata);
        bool same = now == img;
        metadata_image_release(img);
        img = now;
        if (same)
            break;
    }
    metadata_image_release(img);
    /* At start-up this is the replica layer's cost per partition, times all of them. */
    logger_info("replica", "hosting %zu partitions (leader of %zu) after %lld ms",
                replica_manager_hosted_count(b->replicas), replica_manager_leader_count(b->replicas),
                (long long)(clock_mono_ms() - apply_started));
    return b->metadata_subscription > 0 ? 0 : -1;
}

static void high_watermark_moved(void *ctx, struct partition_log *log)
{
    struct broker *b = ctx;
    purgatory_notify(b->fetch_purgatory, (uintptr_t)log);
}

/* Fetchers for the partitions this broker follows, once the replica
 * manager knows them. */
static void apply_link(const void *link, struct net_client_config *cc)
{
    server_link_apply(link, cc);
}

static int start_replication(struct broker *b, char *err, size_t errlen)
{
    const struct broker_config *cfg = b->config;
    struct replication_options opts = {
        .replicas = b->replicas,
        .metadata = b->metadata,
        .node_id = b->env.node_id,
        .num_fetchers = config_get_int(cfg, "num.replica.fetchers"),
        .fetch_max_bytes = config_get_int(cfg, "replica.fetch.max.bytes"),
        .fetch_response_max_bytes = config_get_int(cfg, "replica.fetch.response.max.bytes"),
        .fetch_wait_max_ms = config_get_int(cfg, "replica.fetch.wait.max.ms"),
        .fetch_min_bytes = config_get_int(cfg, "replica.fetch.min.bytes"),
        .fetch_backoff_ms = config_get_int(cfg, "replica.fetch.backoff.ms"),
        .socket_timeout_ms = config_get_int(cfg, "replica.socket.timeout.ms"),
        .follower_throttled_rate = config_get_long(cfg, "follower.replication.throttled.rate"),
        .leader_throttled_rate = config_get_long(cfg, "leader.replication.throttled.rate"),
        .high_watermark_moved = high_watermark_moved,
        .high_watermark_ctx = b,
        /* ISR changes need a controller to ask: a quorum. */
        .alter_partition = b->lifecycle ? broker_lifecycle_alter_partition : NULL,
        .alter_partition_ctx = b->lifecycle,
        .broker_epoch = b->lifecycle ? broker_lifecycle_epoch : NULL,
        .broker_epoch_ctx = b->lifecycle,
        .replica_lag_time_max_ms = config_get_long(cfg, "replica.lag.time.max.ms"),
        .min_insync_replicas = config_get_int(cfg, "min.insync.replicas"),
        .listener = b->broker_link.listener,
        .link_apply = apply_link,
        .link = &b->broker_link,
        .link_strict = b->broker_link.protocol != NET_SECURITY_PLAINTEXT,
    };
    int64_t started = clock_mono_ms();
    if (replication_start(&opts, &b->replication, err, errlen) != 0)
        return -1;
    b->env.replication = b->replication;
    logger_info("replication", "started for %zu hosted partitions in %lld ms",
                replica_manager_hosted_count(b->replicas), (long long)(clock_mono_ms() - started));
    return 0;
}

static bool tiered_topic_exists(void *ctx, const uint8_t topic_id[16])
{
    struct broker *b = ctx;
    struct kafka_uuid id;
    memcpy(id.bytes, topic_id, sizeof id.bytes);
    const struct metadata_image *img = metadata_image_acquire(b->metadata);
    bool exists = !img || metadata_image_topic_by_id(img, &id) != NULL; /* unknown: keep the data */
    if (img)
        metadata_image_release(img);
    return exists;
}

/* Leadership as the replica manager records it: only a leader copies and
 * deletes remote segments. */
static enum tiered_role tiered_role(void *ctx, const char *topic, int32_t partition, int32_t *leader_epoch,
                                    int32_t *replica_count)
{
    struct broker *b = ctx;
    struct replica_partition_info info;
    if (!replica_manager_lookup(b->replicas, topic, partition, &info, NULL))
        return TIERED_ROLE_NONE;
    *leader_epoch = info.leader_epoch;
    *replica_count = info.replica_count;
    return info.role == REPLICA_ROLE_LEADER ? TIERED_ROLE_LEADER : TIERED_ROLE_FOLLOWER;
}

static void tiered_read_ready(void *ctx, uintptr_t key)
{
    struct broker *b = ctx;
    purgatory_notify(b->fetch_purgatory, key);
}

/* The remote log manager, once logs, plugins and metadata are up. */
static int start_tiered(struct broker *b, const char *dir, char *err, size_t errlen)
{
    b->env.remote_fetch_max_wait_ms = config_get_int(b->config, "remote.fetch.max.wait.ms");
    if (!config_get_bool(b->config, "remote.log.storage.system.enable"))
        return 0;
    struct tiered_options opts = {
        .logs = b->logs,
        .plugins = b->plugins,
        .state_dir = dir,
        .node_id = b->env.node_id,
        .task_interval_ms = config_get_long(b->config, "remote.log.manager.task.interval.ms"),
        .retry_backoff_ms = config_get_long(b->config, "remote.log.manager.task.retry.backoff.ms"),
        .retry_backoff_max_ms = config_get_long(b->config, "remote.log.manager.task.retry.backoff.max.ms"),
        .retry_jitter = config_get_double(b->config, "remote.log.manager.task.retry.jitter"),
        .copier_threads = config_get_int(b->config, "remote.log.manager.thread.pool.size"),
        .reader_threads = config_get_int(b->config, "remote.log.reader.threads"),
        .read_ahead_segments = config_get_int(b->config, "remote.log.read.ahead.segments"),
        .cache_bytes = config_get_long(b->config, "remote.log.index.file.cache.total.size.bytes"),
        .chunk_bytes = config_get_long(b->config, "remote.log.chunk.size.bytes"),
        .copy_max_bytes_per_second = config_get_long(b->config, "remote.log.manager.copy.max.bytes.per.second"),
        .copy_quota_window_num = config_get_int(b->config, "remote.log.manager.copy.quota.window.num"),
        .copy_quota_window_seconds = config_get_int(b->config, "remote.log.manager.copy.quota.window.size.seconds"),
        .fetch_max_bytes_per_second = config_get_long(b->config, "remote.log.manager.fetch.max.bytes.per.second"),
        .fetch_quota_window_num = config_get_int(b->config, "remote.log.manager.fetch.quota.window.num"),
        .fetch_quota_window_seconds = config_get_int(b->config, "remote.log.manager.fetch.quota.window.size.seconds"),
        .topic_exists = tiered_topic_exists,
        .role = tiered_role,
        .read_ready = tiered_read_ready,
        .ctx = b,
    };
    if (tiered_start(&opts, &b->tiered, err, errlen) != 0)
        return -1;
    b->env.tiered = b->tiered;
    return 0;
}

/* listener.name.<l>.max.connection.creation.rate (the name compared ignoring
 * case, as Kafka writes it in lower case), else *out stays as it is. */
static int listener_creation_rate(const struct broker_config *cfg, const char *listener, int *out, char *err,
                                  size_t errlen)
{
    struct config_kv *kvs = NULL;
    size_t count = 0;
    if (config_keys_with_prefix(cfg, "listener.name.", &kvs, &count) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t llen = strlen(listener);
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        const char *k = kvs[i].key + strlen("listener.name.");
        if (strncasecmp(k, listener, llen) != 0 || strcmp(k + llen, ".max.connection.creation.rate") != 0)
            continue;
        char *end = NULL;
        errno = 0;
        long v = strtol(kvs[i].value, &end, 10);
        if (errno != 0 || end == kvs[i].value || *end != '\0' || v < 0 || v > INT32_MAX) {
            snprintf(err, errlen, "%s: '%s' is not a rate in 0..%d", kvs[i].key, kvs[i].value, INT32_MAX);
            rc = -1;
        } else {
            *out = (int)v;
        }
    }
    free(kvs);
    return rc;
}

/* handler_env.check_broker_config: new ssl.* values must load. */
static int check_dynamic_tls(void *ctx, const struct broker_config *layered, char *err, size_t errlen)
{
    return broker_tls_check(ctx, layered, err, errlen);
}

static int start_network(struct broker *b, char *err, size_t errlen)
{
    struct net_config net;
    net_config_defaults(&net);
    struct listener_spec listeners[NET_MAX_LISTENERS];
    int n = config_parse_listeners(config_get_string(b->config, "listeners"), listeners, NET_MAX_LISTENERS, err,
                                   errlen);
    if (n <= 0) {
        if (n == 0)
            snprintf(err, errlen, "listeners is empty: nothing to serve on");
        return -1;
    }
    /* The quorum serves its controller listener itself. */
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (!b->quorum || !quorum_is_controller_listener(b->config, listeners[i].name))
            listeners[kept++] = listeners[i];
    if (kept == 0) {
        snprintf(err, errlen, "listeners holds only controller listeners: the broker role needs one more");
        return -1;
    }
    n = kept;
    for (int i = 0; i < n; i++) {
        snprintf(net.listeners[i].name, sizeof net.listeners[i].name, "%.31s", listeners[i].name);
        snprintf(net.listeners[i].host, sizeof net.listeners[i].host, "%s", listeners[i].host);
        net.listeners[i].port = listeners[i].port;
        const char *protocol = config_listener_security_protocol(b->config, listeners[i].name);
        int id = config_security_protocol_id(protocol);
        if (id < 0) {
            snprintf(err, errlen, "listener %s has no entry in listener.security.protocol.map", listeners[i].name);
            return -1;
        }
        net.listeners[i].security_protocol = (int16_t)id;
        if (listener_creation_rate(b->config, listeners[i].name, &net.listeners[i].max_connection_creation_rate, err,
                                   errlen) != 0)
            return -1;
        b->tls.plugins = b->plugins;
        if (broker_tls_setup(&b->tls, b->config, i, &net.listeners[i], err, errlen) != 0)
            return -1;
    }
    net.listener_count = n;
    net.num_network_threads = config_get_int(b->config, "num.network.threads");
    net.num_io_threads = config_get_int(b->config, "num.io.threads");
    net.queued_max_requests = config_get_int(b->config, "queued.max.requests");
    net.socket_request_max_bytes = config_get_int(b->config, "socket.request.max.bytes");
    net.sasl_server_max_receive_size = config_get_int(b->config, "sasl.server.max.receive.size");
    /* A client closed for that bound failed to authenticate: audited. */
    net.on_auth_refusal = sasl_audit_net_refusal;
    net.auth_refusal_ctx = &b->env;
    net.connections_max_idle_ms = config_get_long(b->config, "connections.max.idle.ms");
    net.socket_send_buffer_bytes = config_get_int(b->config, "socket.send.buffer.bytes");
    net.socket_receive_buffer_bytes = config_get_int(b->config, "socket.receive.buffer.bytes");
    net.max_connections = config_get_int(b->config, "max.connections");
    net.max_connections_per_ip = config_get_int(b->config, "max.connections.per.ip");
    net.max_connection_creation_rate = config_get_int(b->config, "max.connection.creation.rate");
    net.socket_listen_backlog_size = config_get_int(b->config, "socket.listen.backlog.size");
    net.queued_max_request_bytes = config_get_long(b->config, "queued.max.request.bytes");
    const char *ip_overrides = config_get_string(b->config, "max.connections.per.ip.overrides");
    if (ip_overrides && strlen(ip_overrides) >= sizeof net.max_connections_per_ip_overrides) {
        snprintf(err, errlen, "max.connections.per.ip.overrides is longer than %zu bytes",
                 sizeof net.max_connections_per_ip_overrides - 1);
        return -1;
    }
    snprintf(net.max_connections_per_ip_overrides, sizeof net.max_connections_per_ip_overrides, "%s",
             ip_overrides ? ip_overrides : "");
    /* A quorum node forwards admin requests to the active controller. */
    net_request_handler dispatch = handlers_dispatch;
    void *dispatch_ctx = &b->env;
    if (b->forwarding) {
        dispatch = broker_forwarding_dispatch;
        dispatch_ctx = b->forwarding;
    }
    if (net_server_start(&net, dispatch, dispatch_ctx, &b->net, err, errlen) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        logger_info("server", "listening on %s://%s:%d", listeners[i].name,
                    listeners[i].host[0] ? listeners[i].host : "0.0.0.0", net_server_bound_port(b->net, i));
    return 0;
}

static int start_logs(struct broker *b, const char *const *dirs, size_t dir_count, char *err, size_t errlen)
{
    struct log_manager_config opts;
    log_manager_config_defaults(&opts);
    opts.retention_check_interval_ms = config_get_long(b->config, "log.retention.check.interval.ms");
    opts.flush_scheduler_interval_ms = config_get_long(b->config, "log.flush.scheduler.interval.ms");
    opts.flush_offset_checkpoint_interval_ms = config_get_long(b->config, "log.flush.offset.checkpoint.interval.ms");
    opts.producer_expiration_check_interval_ms = config_get_long(b->config, "producer.id.expiration.check.interval.ms");
    opts.high_watermark_checkpoint_interval_ms = config_get_long(b->config,
                                                                 "replica.high.watermark.checkpoint.interval.ms");
    opts.background_thread = true;
    opts.recovery_threads_per_data_dir = config_get_int(b->config, "num.recovery.threads.per.data.dir");
    opts.cleaner.enable = config_get_bool(b->config, "log.cleaner.enable");
    opts.cleaner.backoff_ms = config_get_long(b->config, "log.cleaner.backoff.ms");
    opts.cleaner.threads = config_get_int(b->config, "log.cleaner.threads");
    opts.cleaner.io_max_bytes_per_second = config_get_double(b->config, "log.cleaner.io.max.bytes.per.second");
    opts.cleaner.dedupe_buffer_bytes = config_get_long(b->config, "log.cleaner.dedupe.buffer.size");
    opts.cleaner.load_factor = config_get_double(b->config, "log.cleaner.io.buffer.load.factor");
    struct log_config defaults;
    replica_log_config(b->config, NULL, &defaults);
    return log_manager_open(dirs, dir_count, &defaults, &opts, &b->logs, err, errlen);
}

int broker_start(struct broker_config *cfg, struct broker **out, char *err, size_t errlen)
{
    int64_t started = clock_mono_ms();
    struct broker *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errlen, "out of memory");
        config_free(cfg);
        return -1;
    }
    b->config = cfg;
    b->env.config = cfg;
    b->env.node_id = config_node_id(cfg);
    b->env.auto_create_topics = config_get_bool(cfg, "auto.create.topics.enable");
    b->env.default_num_partitions = config_get_int(cfg, "num.partitions");
    b->env.default_replication_factor = (int16_t)config_get_int(cfg, "default.replication.factor");
    b->env.fetch_max_bytes = config_get_int(cfg, "fetch.max.bytes");
    b->env.min_insync_replicas = config_get_int(cfg, "min.insync.replicas");
    b->env.txn_verification = config_get_bool(cfg, "transaction.partition.verification.enable");
    const char *selector = config_get_string(cfg, "replica.selector.class");
    b->env.rack_aware_replica_selector = selector && selector[0];

    size_t dir_count = 0;
    const char *const *dirs = config_log_dirs(cfg, &dir_count);
    if (dir_count == 0) {
        snprintf(err, errlen, "log.dirs is empty");
        goto fail;
    }
    /* A node of a quorum starts on formatted storage only (cairnd format). */
    if (quorum_enabled(cfg) && storage_require_formatted(cfg, err, errlen) != 0)
        goto fail;
    for (size_t i = 0; i < dir_count; i++)
        if (fs_mkdir_p(dirs[i], err, errlen) != 0)
            goto fail;
    if (meta_properties_ensure(dirs, dir_count, b->env.node_id, config_get_string(cfg, "cluster.id"), b->cluster_id,
                               err, errlen) != 0)
        goto fail;
    /* Plugins are ready before the first connection, and a plugin that
     * fails stops start-up before logs, metadata or listeners open. */
    if (plugin_host_start(cfg, b->env.node_id, b->cluster_id, &b->plugins, err, errlen) != 0)
        goto fail;
    b->env.plugins = b->plugins;
    if (start_logs(b, dirs, dir_count, err, errlen) != 0)
        goto fail;
    b->env.logs = b->logs;
    if (purgatory_create("fetch", &b->fetch_purgatory) != 0) {
        snprintf(err, errlen, "cannot start the fetch purgatory");
        goto fail;
    }
    b->env.fetch_purgatory = b->fetch_purgatory;
    struct fetch_session_limits fetch_limits = {
        .max_slots = config_get_int(cfg, "max.incremental.fetch.session.cache.slots"),
        .max_bytes = config_get_long(cfg, "max.incremental.fetch.session.cache.bytes"),
        .stale_ms = FETCH_SESSION_STALE_MS,
    };
    b->fetch_sessions = fetch_session_cache_create(&fetch_limits);
    if (!b->fetch_sessions) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    b->env.fetch_sessions = b->fetch_sessions;
    /* The links' TLS contexts and SASL refusals, before any client starts. */
    if (quorum_enabled(cfg) && server_link_open(cfg, SERVER_LINK_CONTROLLER, &b->controller_link, err, errlen) != 0)
        goto fail;
    if (server_link_open(cfg, SERVER_LINK_INTER_BROKER, &b->broker_link, err, errlen) != 0)
        goto fail;
    if (start_metadata(b, dirs[0], err, errlen) != 0)
        goto fail;
    b->env.metadata = b->metadata;
    if (start_replication(b, err, errlen) != 0)
        goto fail;
    if (start_tiered(b, dirs[0], err, errlen) != 0)
        goto fail;
    if (acl_feed_start(b->metadata, b->plugins, &b->acl_feed) != 0 ||
        quota_feed_start(b->metadata, b->plugins, &b->quota_feed) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    const char *metrics_listen = config_get_string(cfg, "metrics.http.listener");
    if (metrics_listen && metrics_listen[0] && metrics_http_start(metrics_listen, &b->metrics_http, err, errlen) != 0)
        goto fail;
    if (broker_start_groups(b, err, errlen) != 0)
        goto fail;
    /* Set before the transaction coordinator loads: loading may write the
     * markers of prepared transactions at once. */
    b->markers = (struct txn_markers_local){
        .logs = b->logs, .fetch_purgatory = b->fetch_purgatory, .groups = b->groups};
    if (broker_start_marker_client(b, err, errlen) != 0)
        goto fail;
    b->env.txn_links = &b->markers;
    if (broker_start_transactions(b, err, errlen) != 0)
        goto fail;
    if (broker_load_coordinators(b, err, errlen) != 0)
        goto fail;
    if (start_network(b, err, errlen) != 0)
        goto fail;
    /* The controller listener's keys change with the others'. */
    b->tls.controller = quorum_tls_listener(b->quorum);
    /* And the node's own links (Kafka reconfigures its fetchers' SSL too). */
    struct server_link *voters = quorum_link(b->quorum);
    if (voters)
        broker_tls_add_link(&b->tls, voters->tls, voters->listener);
    broker_tls_add_link(&b->tls, b->controller_link.tls, b->controller_link.listener);
    broker_tls_add_link(&b->tls, b->broker_link.tls, b->broker_link.listener);
    b->env.check_broker_config = check_dynamic_tls;
    b->env.check_broker_config_ctx = &b->tls;
    if (b->net && dynamic_config_start(b->metadata, cfg, b->env.node_id, b->net, b->replication, b->tiered, &b->tls,
                                       &b->dynamic_config) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    logger_info("server", "cairnd started: node %d, cluster %s, data in %s, %lld ms", b->env.node_id, b->cluster_id,
                dirs[0], (long long)(clock_mono_ms() - started));
    *out = b;
    return 0;
fail:
    broker_stop(b);
    return -1;
}

void broker_stop(struct broker *b)
{
    if (!b)
        return;
    /* Order matters: stop taking requests, let parked fetches answer, then
     * close the data and metadata logs cleanly. */
    /* A coordinator waiting for its followers (which may be stopping too)
     * answers now instead of holding the network layer's drain. */
    log_manager_cancel_replication_waits(b->logs);
    /* Parked fetches (a follower's may wait replica.fetch.wait.max.ms)
     * answer now with what they have. */
    purgatory_expire_all(b->fetch_purgatory);
    /* Parked JoinGroup/SyncGroup requests answer NOT_COORDINATOR now, so
     * the network layer's drain does not wait out rebalance timeouts. */
    group_coordinator_shutdown(b->groups);
    /* No leadership change reaches the runtime, and no load or unload runs
     * past here (one in progress finishes first). */
    if (b->leadership_listener > 0)
        replica_manager_remove_leadership_listener(b->replicas, b->leadership_listener);
    coordinator_runtime_destroy(b->coordinators);
    dynamic_config_stop(b->dynamic_config);
    broker_forwarding_quiesce(b->forwarding);
    if (b->net)
        net_server_stop(b->net, 10000);
    /* Controller operations still waiting for a commit (the lifecycle's,
     * the broker fencer's, forwarded ones) return now: the joins below,
     * and the controller_brokers one after the quorum has stopped and can
     * commit nothing, would otherwise wait out their 10 s each. */
    metadata_store_begin_shutdown(b->metadata);
    /* Forwarded requests still out complete (or answer locally) now. */
    broker_forwarding_stop(b->forwarding);
    b->forwarding = NULL;
    /* No request reaches it any more; its fetchers stop appending. */
    replication_stop(b->replication);
    b->env.replication = NULL;
    /* No request can ask it for producer ids any more. */
    broker_lifecycle_stop(b->lifecycle);
    quorum_stop(b->quorum);
    controller_brokers_stop(b->controller_brokers);
    controller_forwarding_stop(b->controller_forwarding);
    b->controller_forwarding = NULL;
    /* The broker sessions and forwarding threads completed their last
     * controller-listener requests into the stopped server: free it now. */
    quorum_free(b->quorum);
    b->quorum = NULL;
    /* Its thread writes markers, which wake the purgatory and complete
     * group offsets: stop it before either goes. */
    txn_coordinator_destroy(b->txn_coordinator);
    if (b->marker_client)
        net_client_destroy(b->marker_client);
    txn_log_close(b->txn_log);
    /* Remote reads stop waking the purgatory before it goes; expiring
     * fetches still call tiered_read, which answers without waiting. */
    tiered_stop_reads(b->tiered);
    if (b->fetch_purgatory)
        purgatory_destroy(b->fetch_purgatory);
    if (b->net)
        net_server_free(b->net);
    broker_tls_free(&b->tls);
    /* Copies finish before the plugin and the logs go. */
    tiered_stop(b->tiered);
    /* Every request has completed: no table call can still be running. */
    metrics_http_stop(b->metrics_http);
    acl_feed_stop(b->acl_feed);
    quota_feed_stop(b->quota_feed);
    plugin_host_stop(b->plugins);
    group_coordinator_destroy(b->groups);
    if (b->group_log)
        group_log_close(b->group_log);
    coordinator_shards_free(b->group_shards);
    coordinator_shards_free(b->txn_shards);
    if (b->metadata) {
        if (b->metadata_subscription > 0)
            metadata_store_unsubscribe(b->metadata, b->metadata_subscription);
        metadata_store_close(b->metadata);
    }
    raft_shell_metadata_destroy(b->quorum_log);
    replica_manager_destroy(b->replicas);
    if (b->logs)
        log_manager_close(b->logs, true);
    fetch_session_cache_destroy(b->fetch_sessions);
    server_link_close(&b->controller_link);
    server_link_close(&b->broker_link);
    config_free(b->config);
    free(b);
}

int broker_reload_tls(struct broker *b)
{
    if (!b)
        return 0;
    /* The links' contexts live inside their tls_client, which every client
     * they were applied to shares: one swap each covers the fetchers,
     * markers, forwarding, registration and the quorum's link. */
    int failures = broker_tls_reload(&b->tls) + quorum_reload_tls(b->quorum);
    failures += server_link_reload(&b->controller_link) != 0;
    failures += server_link_reload(&b->broker_link) != 0;
    return failures;
}
