#include "server/dynamic_config.h"

#include <stdlib.h>

#include "config/config.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "replication/replication.h"
#include "server/broker_tls.h"
#include "tiered/tiered.h"
#include "util/logger.h"

/* Owned by the main thread; the callback only reads it. */
struct dynamic_config {
    struct metadata_store *store;
    const struct broker_config *base;
    int32_t node_id;
    struct net_server *net;
    struct replication *replication; /* NULL: no fetchers to resize */
    struct tiered *tiered;           /* NULL: remote storage is off */
    struct broker_tls *tls;          /* NULL: no TLS listeners to update */
    int subscription;
};

static void apply(struct dynamic_config *dc, const struct metadata_image *img)
{
    struct broker_config *layered = NULL;
    char err[256] = "";
    if (metadata_broker_config_layered(img, dc->base, dc->node_id, NULL, 0, false, &layered, err, sizeof err) != 0) {
        logger_warn("server", "dynamic broker configs not applied: %s", err);
        return;
    }
    /* Kafka's per-listener SSL reconfiguration: a listener whose ssl.*
     * values changed gets a new context (a no-op for the others). */
    if (dc->tls)
        broker_tls_apply(dc->tls, layered);
    int max_total = config_get_int(layered, "max.connections");
    int max_per_ip = config_get_int(layered, "max.connections.per.ip");
    net_server_set_connection_limits(dc->net, max_total, max_per_ip);
    logger_info("server", "connection limits now max.connections=%d max.connections.per.ip=%d", max_total, max_per_ip);
    /* A no-op when unchanged (Kafka resizes its fetcher pool the same way). */
    replication_set_num_fetchers(dc->replication, config_get_int(layered, "num.replica.fetchers"));
    /* Kafka's BrokerConfigHandler: the replication quotas take a new rate at once. */
    int64_t leader_rate = config_get_long(layered, "leader.replication.throttled.rate");
    int64_t follower_rate = config_get_long(layered, "follower.replication.throttled.rate");
    replication_set_throttled_rates(dc->replication, leader_rate, follower_rate);
    logger_info("server",
                "replication throttles now leader.replication.throttled.rate=%lld "
                "follower.replication.throttled.rate=%lld",
                (long long)leader_rate, (long long)follower_rate);
    /* KIP-956's quotas are dynamic in Kafka too (DynamicRemoteLogConfig). */
    tiered_set_quotas(dc->tiered, config_get_long(layered, "remote.log.manager.copy.max.bytes.per.second"),
                      config_get_long(layered, "remote.log.manager.fetch.max.bytes.per.second"));
    config_free(layered);
}

static void on_metadata(void *ctx, const struct metadata_image *old_image, const struct metadata_image *new_image)
{
    struct dynamic_config *dc = ctx;
    if (metadata_broker_configs_changed(old_image, new_image, dc->node_id))
        apply(dc, new_image);
}

int dynamic_config_start(struct metadata_store *store, const struct broker_config *base, int32_t node_id,
                         struct net_server *net, struct replication *replication, struct tiered *tiered,
                         struct broker_tls *tls, struct dynamic_config **out)
{
    struct dynamic_config *dc = calloc(1, sizeof *dc);
    if (!dc)
        return -1;
    *dc = (struct dynamic_config){.store = store,
                                  .base = base,
                                  .node_id = node_id,
                                  .net = net,
                                  .replication = replication,
                                  .tiered = tiered,
                                  .tls = tls};
    const struct metadata_image *img = metadata_image_acquire(store);
    if (metadata_broker_configs_changed(NULL, img, node_id))
        apply(dc, img);
    metadata_image_release(img);
    dc->subscription = metadata_store_subscribe(store, on_metadata, dc);
    if (dc->subscription <= 0) {
        free(dc);
        return -1;
    }
    *out = dc;
    return 0;
}

void dynamic_config_stop(struct dynamic_config *dc)
{
    if (!dc)
        return;
    metadata_store_unsubscribe(dc->store, dc->subscription);
    free(dc);
}
