/* The metadata quorum of a controller process: the Raft shell
 * (raft/raft_shell.h) fed by a network server of its own on the controller
 * listener, built from Kafka's config keys (process.roles,
 * controller.quorum.voters, controller.listener.names,
 * controller.quorum.*.ms).
 *
 * Threads: start and stop from the main thread; the parts run their own. */
#ifndef CAIRN_SERVER_QUORUM_H
#define CAIRN_SERVER_QUORUM_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "server/controller_brokers.h"

struct quorum;

/* The quorum's log and quorum-state live in <metadata.log.dir or first log
 * dir>/__cluster_metadata-0; on a broker,controller node in
 * <that dir>/raft-quorum/__cluster_metadata-0 (the broker's own metadata
 * log holds the other). */
#define QUORUM_BESIDE_BROKER_DIR "raft-quorum"

/* The directory the quorum's store is opened on (its log and snapshots in
 * <dir>/__cluster_metadata-0). Returns 0, or -1 with err. */
int quorum_metadata_dir(const struct broker_config *cfg, char *buf, size_t len, char *err, size_t errlen);

/* True when this node runs a networked quorum: controller.quorum.voters is
 * set (a voter with the controller role, else an observer), or, on a
 * broker, controller.quorum.bootstrap.servers (an observer that learns the
 * leader's endpoint from the controllers' Fetch answers). */
bool quorum_enabled(const struct broker_config *cfg);
/* True when this node votes: the quorum is enabled and process.roles has
 * the controller role. A pure broker (process.roles=broker) observes. */
bool quorum_is_voter(const struct broker_config *cfg);

/* The active controller's preferred-leader rebalance settings
 * (auto.leader.rebalance.enable and the leader.imbalance.* keys). */
struct controller_rebalance quorum_rebalance_settings(const struct broker_config *cfg);
/* True when process.roles is exactly controller (no broker). */
bool quorum_controller_only(const struct broker_config *cfg);
/* True when name is one of controller.listener.names. */
bool quorum_is_controller_listener(const struct broker_config *cfg, const char *name);

struct raft_shell_metadata;

struct controller_brokers;
struct metadata_store;
struct plugin_host;

/* What a SASL controller listener checks credentials against: SCRAM in
 * store's image, other mechanisms in plugins (NULL: none loaded). Both
 * outlive the quorum. */
struct quorum_auth {
    struct metadata_store *store;
    struct plugin_host *plugins;
};

/* Starts the shell and serves the first controller listener. With metadata
 * (its listener registered), committed entries go to it and it is attached
 * to the shell; with brokers, the listener also serves BrokerRegistration
 * and BrokerHeartbeat. A controller listener mapped to SASL_PLAINTEXT or
 * SASL_SSL serves nothing but ApiVersions and the SASL exchange before a
 * connection authenticates (auth), and the quorum's own client
 * authenticates with sasl.mechanism.controller.protocol. Returns 0, or -1
 * with err filled. */
int quorum_start(const struct broker_config *cfg, const char *cluster_id, struct raft_shell_metadata *metadata,
                 struct controller_brokers *brokers, const struct quorum_auth *auth, struct quorum **out, char *err,
                 size_t errlen);
/* Stops serving, then stops the shell; the listener's memory stays until
 * quorum_free, so the controller's threads that serve its requests (broker
 * sessions, forwarded Envelopes) can still complete what they hold. NULL
 * and a second call are fine. */
void quorum_stop(struct quorum *q);
/* Stops if not stopped, then frees: call once every thread that completes
 * the listener's requests has stopped. NULL is fine. */
void quorum_free(struct quorum *q);
/* SIGHUP, on the main thread: re-reads the certificates and keys of an SSL
 * controller listener and of the quorum's own link to the other voters.
 * New connections use them; open ones keep theirs; a part whose files are
 * bad keeps its old ones (logged). Returns the failures. NULL is fine. */
int quorum_reload_tls(struct quorum *q);
/* The SSL controller listener's TLS context holder, or NULL (none, or not
 * SSL). Owned by the quorum: valid until quorum_free. */
struct tls_listener *quorum_tls_listener(struct quorum *q);
/* The quorum's link to the other voters, or NULL. Valid until quorum_free. */
struct server_link *quorum_link(struct quorum *q);

/* A controller-only process (process.roles=controller): data dirs and
 * meta.properties, then the quorum; no client listener, no logs. */
struct controller_process;
int controller_process_start(struct broker_config *cfg, struct controller_process **out, char *err, size_t errlen);
void controller_process_stop(struct controller_process *c);
/* quorum_reload_tls of its quorum (SIGHUP). */
int controller_process_reload_tls(struct controller_process *c);

#endif
