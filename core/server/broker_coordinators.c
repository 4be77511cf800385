/* The broker's coordinators: the group coordinator over __consumer_offsets,
 * the transaction coordinator over __transaction_state and its marker
 * sender, and the load of both topics' partitions before the listeners
 * open. Main thread, at start. */
#include "server/broker_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "coordinator/coordinator_runtime.h"
#include "coordinator/internal_topic.h"
#include "group/group_coordinator.h"
#include "group/group_log.h"
#include "metadata/metadata_store.h"
#include "net/client.h"
#include "protocol/generated/errors.h"
#include "config/listeners.h"
#include "replica/replica_manager.h"
#include "server/quorum.h"
#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"
#include "util/clock.h"
#include "util/logger.h"

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

/* Partitions of a transaction led by other brokers get their markers
 * through this client (connections open on first use). */
int broker_start_marker_client(struct broker *b, char *err, size_t errlen)
{
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    snprintf(cfg.client_id, sizeof cfg.client_id, "broker-%d-txn-coordinator", (int)b->env.node_id);
    server_link_apply(&b->broker_link, &cfg);
    if (net_client_create(&cfg, &b->marker_client, err, errlen) != 0)
        return -1;
    b->markers.metadata = b->metadata;
    b->markers.client = b->marker_client;
    b->markers.node_id = b->env.node_id;
    b->markers.listener = b->broker_link.listener;
    b->markers.link_is_tls = b->broker_link.protocol != NET_SECURITY_PLAINTEXT;
    b->markers.request_timeout_ms = 5000;
    return 0;
}

/* How many live brokers an internal topic waits for before it is created
 * with fewer replicas than configured: the voters of a quorum of several
 * (the brokers a cluster is likely to start with); 0 on a single node. */
static int32_t expected_brokers(const struct broker *b)
{
    if (!quorum_enabled(b->config))
        return 0;
    struct quorum_voter voters[16];
    char err[128];
    int n = config_parse_quorum_voters(config_get_string(b->config, "controller.quorum.voters"), voters, 16, err,
                                       sizeof err);
    /* A broker with bootstrap servers: as many as it lists. */
    if (n == 0)
        n = config_parse_quorum_bootstrap_servers(config_get_string(b->config, "controller.quorum.bootstrap.servers"),
                                                  voters, 16, err, sizeof err);
    return n > 1 ? n : 0;
}

/* Opens __transaction_state and creates the transaction coordinator, whose
 * markers go to the partition leaders (txn_markers_local);
 * load_coordinators loads its partitions. */
int broker_start_transactions(struct broker *b, char *err, size_t errlen)
{
    struct txn_log_options lopts = {
        .logs = b->logs,
        .metadata = b->metadata,
        .num_partitions = config_get_int(b->config, "transaction.state.log.num.partitions"),
        .replication_factor = (int16_t)config_get_int(b->config, "transaction.state.log.replication.factor"),
        .min_insync_replicas = config_get_int(b->config, "transaction.state.log.min.isr"),
        .segment_bytes = config_get_int(b->config, "transaction.state.log.segment.bytes"),
        .node_id = b->env.node_id,
        .load_buffer_size = config_get_int(b->config, "transaction.state.log.load.buffer.size"),
        .fetch_purgatory = b->fetch_purgatory,
        .expected_brokers = expected_brokers(b),
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
        .abort_check_interval_ms = config_get_int(b->config,
                                                  "transaction.abort.timed.out.transaction.cleanup.interval.ms"),
        .expiration_check_interval_ms = config_get_int(b->config,
                                                       "transaction.remove.expired.transaction.cleanup.interval.ms"),
        .background_thread = true,
    };
    b->txn_shards = coordinator_shards_create(txn_log_partition_count(b->txn_log));
    if (!b->txn_shards) {
        snprintf(err, errlen, "cannot track the partitions of %s", TXN_LOG_TOPIC);
        return -1;
    }
    copts.shards = b->txn_shards;
    if (txn_coordinator_create(&copts, &b->txn_coordinator, err, errlen) != 0)
        return -1;
    if (coordinator_runtime_register(b->coordinators, TXN_LOG_TOPIC, b->txn_shards, txn_coordinator_shard_ops(),
                                     b->txn_coordinator) != 0) {
        snprintf(err, errlen, "cannot register the transaction coordinator");
        return -1;
    }
    b->env.txn_coordinator = b->txn_coordinator;
    return 0;
}

/* This broker leads every partition of the internal topics it holds (one
 * node), at the leader epoch of the metadata image. */
static void lead_held_partitions(struct broker *b, const char *name, struct internal_topic *t)
{
    const struct metadata_image *img = metadata_image_acquire(b->metadata);
    const struct metadata_topic *topic = metadata_image_topic_by_name(img, name, strlen(name));
    for (int32_t p = 0; p < internal_topic_partition_count(t); p++) {
        if (!internal_topic_partition_log(t, p))
            continue;
        const struct metadata_partition *part = topic ? metadata_topic_partition(topic, p) : NULL;
        int32_t epoch = part && part->present && part->leader_epoch >= 0 ? part->leader_epoch : 0;
        coordinator_runtime_on_leadership(b->coordinators, name, p, true, epoch);
    }
    metadata_image_release(img);
}

/* Loads the group and transaction state of every held partition, groups
 * first (transaction markers written at load complete group offsets), and
 * waits for it, so the listeners open on loaded coordinators, then hands
 * later leadership changes to the runtime through the replica layer. */
int broker_load_coordinators(struct broker *b, char *err, size_t errlen)
{
    int64_t started = clock_mono_ms();
    lead_held_partitions(b, GROUP_LOG_TOPIC, group_log_topic(b->group_log));
    lead_held_partitions(b, TXN_LOG_TOPIC, txn_log_topic(b->txn_log));
    if (coordinator_runtime_wait_idle(b->coordinators, err, errlen) != 0)
        return -1;
    logger_info("server", "loaded %s and %s in %lld ms", GROUP_LOG_TOPIC, TXN_LOG_TOPIC,
                (long long)(clock_mono_ms() - started));
    /* From here the replica layer tells the runtime of leadership changes;
     * registering repeats the current leaders, which the runtime ignores. */
    b->leadership_listener = replica_manager_add_leadership_listener(b->replicas, coordinator_runtime_on_leadership,
                                                                     b->coordinators);
    if (b->leadership_listener < 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Starts the coordinator runtime, opens __consumer_offsets and creates the
 * group coordinator; broker_load_coordinators loads its partitions. */
int broker_start_groups(struct broker *b, char *err, size_t errlen)
{
    if (coordinator_runtime_create(&b->coordinators) != 0) {
        snprintf(err, errlen, "cannot start the coordinator runtime");
        return -1;
    }
    struct group_coordinator_options opts;
    group_coordinator_options_defaults(&opts);
    opts.min_session_timeout_ms = config_get_int(b->config, "group.min.session.timeout.ms");
    opts.max_session_timeout_ms = config_get_int(b->config, "group.max.session.timeout.ms");
    opts.initial_rebalance_delay_ms = config_get_int(b->config, "group.initial.rebalance.delay.ms");
    opts.max_group_size = config_get_int(b->config, "group.max.size");
    opts.max_pending_members_per_group = config_get_int(b->config, "group.max.pending.members");
    opts.max_pending_members = config_get_int(b->config, "group.coordinator.max.pending.members");
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
        .commit_timeout_ms = config_get_int(b->config, "offsets.commit.timeout.ms"),
        .fetch_purgatory = b->fetch_purgatory,
        .expected_brokers = expected_brokers(b),
    };
    char log_err[256];
    if (group_log_open(&log_opts, &b->group_log, log_err, sizeof log_err) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", GROUP_LOG_TOPIC, log_err);
        return -1;
    }
    opts.ops = group_log_store_ops();
    opts.store = b->group_log;
    opts.offsets_topic_partitions = group_log_partition_count(b->group_log);
    b->group_shards = coordinator_shards_create(opts.offsets_topic_partitions);
    opts.shards = b->group_shards;
    if (!b->group_shards || group_coordinator_create(&opts, &b->groups) != 0 ||
        coordinator_runtime_register(b->coordinators, GROUP_LOG_TOPIC, b->group_shards, group_coordinator_shard_ops(),
                                     b->groups) != 0) {
        snprintf(err, errlen, "cannot start the group coordinator");
        return -1;
    }
    b->env.groups = b->groups;
    return 0;
}
