#include "server/broker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "config/listeners.h"
#include "config/meta_properties.h"
#include "config/topic_config.h"
#include "group/group_coordinator.h"
#include "group/group_log.h"
#include "handlers/fetch_session.h"
#include "handlers/handlers.h"
#include "handlers/purgatory.h"
#include "handlers/txn_markers_local.h"
#include "log/log_manager.h"
#include "metadata/metadata_store.h"
#include "metrics/metrics.h"
#include "net/server.h"
#include "plugin/plugin_host.h"
#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"
#include "util/clock.h"
#include "util/logger.h"

/* Owned by the main thread; the parts it points to are thread-safe. */
struct broker {
    struct broker_config *config;
    struct log_manager *logs;
    struct metadata_store *metadata;
    int metadata_subscription;
    struct purgatory *fetch_purgatory;
    struct fetch_session_cache *fetch_sessions;
    struct group_coordinator *groups;
    struct group_log *group_log;
    struct net_server *net;
    struct plugin_host *plugins;
    struct metrics_http *metrics_http;
    struct txn_log *txn_log;
    struct txn_coordinator *txn_coordinator;
    struct txn_markers_local markers; /* ctx of the coordinator's marker ops */
    struct handler_env env;
    char cluster_id[64];
};

static int make_dirs(const char *path, char *err, size_t errlen)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        snprintf(err, errlen, "log directory path too long: %s", path);
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create log directory %s: %s", buf, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create log directory %s: %s", buf, strerror(errno));
        return -1;
    }
    return 0;
}

/* The effective log settings of a topic (NULL: the broker's defaults): its
 * dynamic configs over the broker's. */
static void broker_log_defaults(struct broker *b, const struct metadata_topic *topic, struct log_config *out)
{
    struct config_kv overrides[64] = {{0}};
    int32_t n = 0;
    for (int32_t i = 0; topic && i < topic->config_count && n < 64; i++) {
        overrides[n].key = topic->configs[i].name;
        overrides[n].value = topic->configs[i].value;
        n++;
    }
    struct topic_config_values v;
    char err[256];
    if (topic_config_resolve(b->config, overrides, (size_t)n, &v, err, sizeof err) != 0) {
        logger_warn("server", "topic %s has an invalid config (%s); using broker defaults for it",
                    topic ? topic->name : "(defaults)", err);
        topic_config_resolve(b->config, NULL, 0, &v, err, sizeof err);
    }
    log_config_defaults(out);
    out->segment_bytes = v.segment_bytes;
    out->segment_ms = v.segment_ms;
    out->retention_ms = v.retention_ms;
    out->retention_bytes = v.retention_bytes;
    out->index_interval_bytes = v.index_interval_bytes;
    out->segment_index_bytes = v.segment_index_bytes;
    out->flush_messages = v.flush_messages;
    out->flush_ms = v.flush_ms;
    out->max_message_bytes = v.max_message_bytes;
    out->producer_id_expiration_ms = config_get_long(b->config, "producer.id.expiration.ms");
    out->preallocate = v.preallocate;
    out->cleanup_delete = v.cleanup_delete;
    out->cleanup_compact = v.cleanup_compact;
    out->delete_retention_ms = v.delete_retention_ms;
    out->min_compaction_lag_ms = v.min_compaction_lag_ms;
    out->max_compaction_lag_ms = v.max_compaction_lag_ms;
    out->min_cleanable_dirty_ratio = v.min_cleanable_dirty_ratio;
    out->message_timestamp_type = v.message_timestamp_type == TOPIC_TIMESTAMP_LOG_APPEND_TIME
                                      ? LOG_TIMESTAMP_LOG_APPEND_TIME
                                      : LOG_TIMESTAMP_CREATE_TIME;
}

/* Creates the logs of partitions this broker now hosts, deletes those of
 * deleted topics, applies config changes. Runs under the store's lock. */
static void sync_partition_logs(struct broker *b, const struct metadata_image *old_image,
                                const struct metadata_image *new_image)
{
    struct metadata_delta delta;
    if (metadata_delta_compute(old_image, new_image, &delta) != 0) {
        logger_error("server", "out of memory computing a metadata delta");
        return;
    }
    for (int32_t i = 0; i < delta.deleted_count; i++) {
        const struct metadata_topic *t = delta.deleted[i];
        for (int32_t p = 0; p < t->partition_count; p++) {
            if (!t->partitions[p].present) continue;
            log_manager_delete(b->logs, t->name, p);
        }
    }
    const struct metadata_topic **lists[2] = {delta.created, delta.changed};
    int32_t counts[2] = {delta.created_count, delta.changed_count};
    for (int l = 0; l < 2; l++) {
        for (int32_t i = 0; i < counts[l]; i++) {
            const struct metadata_topic *t = lists[l][i];
            struct log_config cfg;
            broker_log_defaults(b, t, &cfg);
            for (int32_t p = 0; p < t->partition_count; p++) {
                const struct metadata_partition *part = &t->partitions[p];
                if (!part->present) continue;
                bool hosted = false;
                for (int32_t r = 0; r < part->replica_count; r++) hosted |= part->replicas[r] == b->env.node_id;
                if (!hosted) continue;
                char err[256] = "";
                struct partition_log *log = NULL;
                if (log_manager_create(b->logs, t->name, p, t->topic_id.bytes, &cfg, &log, err, sizeof err) !=
                    KAFKA_ERR_NONE) {
                    logger_error("server", "cannot create the log of %s-%d: %s", t->name, p, err);
                    continue;
                }
                /* A log that already existed (loaded at start, or a changed
                 * topic) still carries the settings it was opened with. */
                if (log && partition_log_set_config(log, &cfg))
                    logger_info("server", "%s-%d: applied the topic's current configs", t->name, p);
                /* As Kafka on becoming leader: the epoch starts at the log end. */
                if (log && part->leader == b->env.node_id) partition_log_assign_leader_epoch(log, part->leader_epoch);
                if (log) partition_log_close(log);
            }
        }
    }
    metadata_delta_free(&delta);
}

static void on_metadata_change(void *ctx, const struct metadata_image *old_image,
                               const struct metadata_image *new_image)
{
    sync_partition_logs(ctx, old_image, new_image);
}

static int validate_topic_config(void *ctx, const char *key, const char *value, char *err, size_t errlen)
{
    (void)ctx;
    return topic_config_validate(key, value, err, errlen);
}

static int start_metadata(struct broker *b, const char *dir, char *err, size_t errlen)
{
    struct listener_spec listeners[NET_MAX_LISTENERS];
    int n = config_parse_listeners(config_advertised_listeners(b->config), listeners, NET_MAX_LISTENERS, err,
                                   errlen);
    if (n < 0) return -1;
    struct metadata_endpoint endpoints[NET_MAX_LISTENERS];
    for (int i = 0; i < n; i++) {
        endpoints[i].listener = listeners[i].name;
        endpoints[i].host = listeners[i].host[0] ? listeners[i].host : "localhost";
        endpoints[i].port = (uint16_t)listeners[i].port;
        endpoints[i].security_protocol = 0;
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
    };
    if (metadata_store_open(&opts, &b->metadata, err, errlen) != 0) return -1;
    /* Bring the logs in line with the replayed image, then follow changes. */
    const struct metadata_image *img = metadata_image_acquire(b->metadata);
    sync_partition_logs(b, NULL, img);
    metadata_image_release(img);
    b->metadata_subscription = metadata_store_subscribe(b->metadata, on_metadata_change, b);
    return b->metadata_subscription > 0 ? 0 : -1;
}

static int16_t allocate_producer_id(void *ctx, int64_t *id)
{
    struct broker *b = ctx;
    char err[256] = "";
    int16_t code = metadata_next_producer_id(b->metadata, id, err, sizeof err);
    if (code != KAFKA_ERR_NONE) {
        logger_error("server", "cannot allocate a producer id: %s", err);
        return KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS; /* retriable for the client */
    }
    return KAFKA_ERR_NONE;
}

/* Opens __transaction_state and loads the transaction coordinator. Marker
 * ops stay NULL until the partition side is wired: transactions then stop in
 * PrepareCommit/PrepareAbort. */
static int start_transactions(struct broker *b, char *err, size_t errlen)
{
    struct txn_log_options lopts = {
        .logs = b->logs,
        .metadata = b->metadata,
        .num_partitions = config_get_int(b->config, "transaction.state.log.num.partitions"),
        .replication_factor = (int16_t)config_get_int(b->config, "transaction.state.log.replication.factor"),
        .segment_bytes = config_get_int(b->config, "transaction.state.log.segment.bytes"),
        .node_id = b->env.node_id,
        .load_buffer_size = config_get_int(b->config, "transaction.state.log.load.buffer.size"),
    };
    if (txn_log_open(&lopts, &b->txn_log, err, errlen) != 0)
        return -1;
    struct txn_coordinator_options copts = {
        .log = b->txn_log,
        .markers = txn_markers_local_ops(),
        .markers_ctx = &b->markers,
        .allocate_producer_id = allocate_producer_id,
        .allocate_ctx = b,
        .max_timeout_ms = config_get_int(b->config, "transaction.max.timeout.ms"),
        .id_expiration_ms = config_get_int(b->config, "transactional.id.expiration.ms"),
        .abort_check_interval_ms =
            config_get_int(b->config, "transaction.abort.timed.out.transaction.cleanup.interval.ms"),
        .expiration_check_interval_ms =
            config_get_int(b->config, "transaction.remove.expired.transaction.cleanup.interval.ms"),
        .background_thread = true,
    };
    if (txn_coordinator_create(&copts, &b->txn_coordinator, err, errlen) != 0 ||
        txn_coordinator_load(b->txn_coordinator, err, errlen) != 0)
        return -1;
    b->env.txn_coordinator = b->txn_coordinator;
    return 0;
}

static int start_network(struct broker *b, char *err, size_t errlen)
{
    struct net_config net;
    net_config_defaults(&net);
    struct listener_spec listeners[NET_MAX_LISTENERS];
    int n = config_parse_listeners(config_get_string(b->config, "listeners"), listeners, NET_MAX_LISTENERS, err,
                                   errlen);
    if (n <= 0) {
        if (n == 0) snprintf(err, errlen, "listeners is empty: nothing to serve on");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        snprintf(net.listeners[i].name, sizeof net.listeners[i].name, "%.31s", listeners[i].name);
        snprintf(net.listeners[i].host, sizeof net.listeners[i].host, "%s", listeners[i].host);
        net.listeners[i].port = listeners[i].port;
    }
    net.listener_count = n;
    net.num_network_threads = config_get_int(b->config, "num.network.threads");
    net.num_io_threads = config_get_int(b->config, "num.io.threads");
    net.queued_max_requests = config_get_int(b->config, "queued.max.requests");
    net.socket_request_max_bytes = config_get_int(b->config, "socket.request.max.bytes");
    net.connections_max_idle_ms = config_get_long(b->config, "connections.max.idle.ms");
    net.socket_send_buffer_bytes = config_get_int(b->config, "socket.send.buffer.bytes");
    net.socket_receive_buffer_bytes = config_get_int(b->config, "socket.receive.buffer.bytes");
    if (net_server_start(&net, handlers_dispatch, &b->env, &b->net, err, errlen) != 0) return -1;
    for (int i = 0; i < n; i++)
        logger_info("server", "listening on %s://%s:%d", listeners[i].name,
                    listeners[i].host[0] ? listeners[i].host : "0.0.0.0", net_server_bound_port(b->net, i));
    return 0;
}

/* Groups are kept in memory only until the durable group log is wired in
 * (pass its store ops here and replay it through the load visitor). */
static int start_groups(struct broker *b, char *err, size_t errlen)
{
    struct group_coordinator_options opts;
    group_coordinator_options_defaults(&opts);
    opts.min_session_timeout_ms = config_get_int(b->config, "group.min.session.timeout.ms");
    opts.max_session_timeout_ms = config_get_int(b->config, "group.max.session.timeout.ms");
    opts.initial_rebalance_delay_ms = config_get_int(b->config, "group.initial.rebalance.delay.ms");
    opts.max_group_size = config_get_int(b->config, "group.max.size");
    opts.offset_metadata_max_bytes = config_get_int(b->config, "offset.metadata.max.bytes");
    opts.offsets_retention_ms = (int64_t)config_get_int(b->config, "offsets.retention.minutes") * 60000;
    opts.offsets_retention_check_interval_ms = config_get_long(b->config, "offsets.retention.check.interval.ms");
    struct group_log_options log_opts = {
        .logs = b->logs,
        .metadata = b->metadata,
        .num_partitions = config_get_int(b->config, "offsets.topic.num.partitions"),
        .replication_factor = (int16_t)config_get_int(b->config, "offsets.topic.replication.factor"),
        .segment_bytes = config_get_int(b->config, "offsets.topic.segment.bytes"),
        .node_id = b->env.node_id,
        .load_buffer_size = config_get_int(b->config, "offsets.load.buffer.size"),
    };
    char log_err[256];
    if (group_log_open(&log_opts, &b->group_log, log_err, sizeof log_err) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", GROUP_LOG_TOPIC, log_err);
        return -1;
    }
    opts.ops = group_log_store_ops();
    opts.store = b->group_log;
    opts.offsets_topic_partitions = group_log_partition_count(b->group_log);
    opts.start_loading = true;
    if (group_coordinator_create(&opts, &b->groups) != 0) {
        snprintf(err, errlen, "cannot start the group coordinator");
        return -1;
    }
    /* Loaded before the listeners open, so no client sees a half-loaded group. */
    int64_t load_started = clock_mono_ms();
    if (group_log_load(b->group_log, group_coordinator_load_visitor(), b->groups, log_err, sizeof log_err) != 0) {
        snprintf(err, errlen, "cannot load %s: %s", GROUP_LOG_TOPIC, log_err);
        return -1;
    }
    group_coordinator_set_loaded(b->groups);
    logger_info("server", "loaded groups and offsets from %s in %lld ms", GROUP_LOG_TOPIC,
                (long long)(clock_mono_ms() - load_started));
    b->env.groups = b->groups;
    return 0;
}

static int start_logs(struct broker *b, const char *const *dirs, size_t dir_count, char *err, size_t errlen)
{
    struct log_manager_config opts;
    log_manager_config_defaults(&opts);
    opts.retention_check_interval_ms = config_get_long(b->config, "log.retention.check.interval.ms");
    opts.flush_scheduler_interval_ms = config_get_long(b->config, "log.flush.scheduler.interval.ms");
    opts.flush_offset_checkpoint_interval_ms = config_get_long(b->config, "log.flush.offset.checkpoint.interval.ms");
    opts.producer_expiration_check_interval_ms =
        config_get_long(b->config, "producer.id.expiration.check.interval.ms");
    opts.background_thread = true;
    opts.recovery_threads_per_data_dir = config_get_int(b->config, "num.recovery.threads.per.data.dir");
    opts.cleaner.enable = config_get_bool(b->config, "log.cleaner.enable");
    opts.cleaner.backoff_ms = config_get_long(b->config, "log.cleaner.backoff.ms");
    opts.cleaner.threads = config_get_int(b->config, "log.cleaner.threads");
    opts.cleaner.io_max_bytes_per_second =
        config_get_double(b->config, "log.cleaner.io.max.bytes.per.second");
    opts.cleaner.dedupe_buffer_bytes = config_get_long(b->config, "log.cleaner.dedupe.buffer.size");
    opts.cleaner.load_factor = config_get_double(b->config, "log.cleaner.io.buffer.load.factor");
    struct log_config defaults;
    broker_log_defaults(b, NULL, &defaults);
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

    size_t dir_count = 0;
    const char *const *dirs = config_log_dirs(cfg, &dir_count);
    if (dir_count == 0) {
        snprintf(err, errlen, "log.dirs is empty");
        goto fail;
    }
    for (size_t i = 0; i < dir_count; i++)
        if (make_dirs(dirs[i], err, errlen) != 0) goto fail;
    if (meta_properties_ensure(dirs, dir_count, b->env.node_id, config_get_string(cfg, "cluster.id"),
                               b->cluster_id, err, errlen) != 0)
        goto fail;
    /* Plugins are ready before the first connection, and a plugin that
     * fails stops start-up before logs, metadata or listeners open. */
    if (plugin_host_start(cfg, b->env.node_id, b->cluster_id, &b->plugins, err, errlen) != 0) goto fail;
    b->env.plugins = b->plugins;
    if (start_logs(b, dirs, dir_count, err, errlen) != 0) goto fail;
    b->env.logs = b->logs;
    if (purgatory_create("fetch", &b->fetch_purgatory) != 0) {
        snprintf(err, errlen, "cannot start the fetch purgatory");
        goto fail;
    }
    b->env.fetch_purgatory = b->fetch_purgatory;
    b->fetch_sessions = fetch_session_cache_create(config_get_int(cfg, "max.incremental.fetch.session.cache.slots"));
    if (!b->fetch_sessions) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    b->env.fetch_sessions = b->fetch_sessions;
    if (start_metadata(b, dirs[0], err, errlen) != 0) goto fail;
    b->env.metadata = b->metadata;
    const char *metrics_listen = config_get_string(cfg, "metrics.http.listener");
    if (metrics_listen && metrics_listen[0] &&
        metrics_http_start(metrics_listen, &b->metrics_http, err, errlen) != 0)
        goto fail;
    if (start_groups(b, err, errlen) != 0) goto fail;
    /* Set before the transaction coordinator loads: loading may write the
     * markers of prepared transactions at once. */
    b->markers = (struct txn_markers_local){.logs = b->logs, .fetch_purgatory = b->fetch_purgatory, .groups = b->groups};
    if (start_transactions(b, err, errlen) != 0) goto fail;
    if (start_network(b, err, errlen) != 0) goto fail;
    logger_info("server", "cairnd started: node %d, cluster %s, data in %s, %lld ms", b->env.node_id,
                b->cluster_id, dirs[0], (long long)(clock_mono_ms() - started));
    *out = b;
    return 0;
fail:
    broker_stop(b);
    return -1;
}

void broker_stop(struct broker *b)
{
    if (!b) return;
    /* Order matters: stop taking requests, let parked fetches answer, then
     * close the data and metadata logs cleanly. */
    /* Parked JoinGroup/SyncGroup requests answer NOT_COORDINATOR now, so
     * the network layer's drain does not wait out rebalance timeouts. */
    group_coordinator_shutdown(b->groups);
    if (b->net) net_server_stop(b->net, 10000);
    /* Its thread writes markers, which wake the purgatory and complete
     * group offsets: stop it before either goes. */
    txn_coordinator_destroy(b->txn_coordinator);
    txn_log_close(b->txn_log);
    if (b->fetch_purgatory) purgatory_destroy(b->fetch_purgatory);
    if (b->net) net_server_free(b->net);
    /* Every request has completed: no table call can still be running. */
    metrics_http_stop(b->metrics_http);
    plugin_host_stop(b->plugins);
    group_coordinator_destroy(b->groups);
    if (b->group_log) group_log_close(b->group_log);
    if (b->metadata) {
        if (b->metadata_subscription > 0) metadata_store_unsubscribe(b->metadata, b->metadata_subscription);
        metadata_store_close(b->metadata);
    }
    if (b->logs) log_manager_close(b->logs, true);
    fetch_session_cache_destroy(b->fetch_sessions);
    config_free(b->config);
    free(b);
}
