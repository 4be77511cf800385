/* Dynamic broker configs the server applies itself: the TLS listeners'
 * ssl.* keys (listener.name.<name>.ssl.* first), max.connections and
 * max.connections.per.ip, set on the running net server, and
 * num.replica.fetchers, which resizes the replica fetchers, the replication
 * throttles and the remote copy and fetch quotas, whenever this
 * broker's dynamic configs change in the metadata image. (Topic defaults
 * are applied by the replica manager, which resolves topic configs.)
 *
 * Thread-safety: start and stop run on the main thread (start once the
 * listeners are up, stop before they close); changes are applied on the
 * thread that publishes a metadata image. */
#ifndef CAIRN_SERVER_DYNAMIC_CONFIG_H
#define CAIRN_SERVER_DYNAMIC_CONFIG_H
#include <stdint.h>

struct broker_config;
struct broker_tls;
struct metadata_store;
struct net_server;
struct replication;
struct tiered;
struct dynamic_config;

/* Applies the current image's values, then follows changes. replication,
 * tiered and tls may be NULL. Returns 0, or -1 on allocation failure. */
int dynamic_config_start(struct metadata_store *store, const struct broker_config *base, int32_t node_id,
                         struct net_server *net, struct replication *replication, struct tiered *tiered,
                         struct broker_tls *tls, struct dynamic_config **out);
void dynamic_config_stop(struct dynamic_config *dc);

#endif
