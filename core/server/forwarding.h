/* Admin requests from a pure broker to the active controller, as Kafka's
 * forwarding (KIP-590): a broker that is no voter wraps a client's
 * CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
 * IncrementalAlterConfigs, CreateAcls, DeleteAcls, AlterClientQuotas,
 * ElectLeaders or AlterPartitionReassignments
 * frame, unchanged, in an Envelope (api 58) with the client's principal
 * and address, and sends it over the controller listener to the quorum's
 * leader. The controller runs the inner request through the same API
 * handler a broker runs, as that principal, and returns the encoded
 * response inside the EnvelopeResponse; the broker hands those bytes to
 * the client as they are. A combined broker,controller node forwards
 * AlterConfigs and IncrementalAlterConfigs only, while another voter
 * leads (a client sends a broker resource's change to that broker).
 *
 * While no leader is known, or when an Envelope gets no answer, the
 * request is held and sent to the next leader known, for up to 15 s.
 * After that, when the controller answers the Envelope with an error, or
 * when this broker has an
 * authorizer plugin (the controller loads none yet), the broker runs the
 * request itself: its store is no controller, so the client is told
 * NOT_CONTROLLER and retries, as it would with Kafka.
 *
 * Threads: broker_forwarding_dispatch runs on the client listener's io
 * threads; answers complete on the outbound client's thread.
 * controller_forwarding_serve runs on the controller's worker thread (it
 * waits for the commit). Start and stop from the main thread. */
#ifndef CAIRN_SERVER_FORWARDING_H
#define CAIRN_SERVER_FORWARDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "net/server.h"

#define FORWARDING_API_ENVELOPE 58

/* True for the API keys a pure broker forwards. */
bool forwarding_api_forwarded(int16_t api_key);

/* ---- the broker's side ---- */

struct broker_forwarding;
struct handler_env;
struct metadata_config_kv;
struct raft_shell_metadata;

/* quorum: tells who leads and where it listens; env: the
 * broker's handlers, for everything not forwarded. voter: this node is a
 * combined broker and controller; it forwards only AlterConfigs and
 * IncrementalAlterConfigs, and only while another voter leads. */
struct server_link; /* server/links.h; outlives the forwarding */
int broker_forwarding_start(int32_t node_id, bool voter, struct raft_shell_metadata *quorum, struct handler_env *env,
                            const struct server_link *link, struct broker_forwarding **out, char *err, size_t errlen);
/* Before the client listeners stop: requests held for a leader are
 * answered locally at once, so the listeners drain quickly. */
void broker_forwarding_quiesce(struct broker_forwarding *f);
void broker_forwarding_stop(struct broker_forwarding *f);
/* net_request_handler of the client listeners (ctx: the forwarding). */
void broker_forwarding_dispatch(struct net_request *req, void *f);
/* metadata_topic_creator (ctx: the forwarding): CreateTopics in an
 * Envelope to the active controller, waited for. NOT_CONTROLLER while
 * none leads. Any thread but the outbound client's. */
int16_t broker_forwarding_create_topic(void *f, const char *name, int32_t num_partitions, int16_t replication_factor,
                                       const struct metadata_config_kv *configs, int32_t config_count, char *err,
                                       size_t errlen);

/* ---- the controller's side ---- */

struct controller_forwarding;
struct metadata_store;
struct plugin_host;

/* plugins: the node's plugin host (its authorizer checks forwarded
 * requests as the Envelope's principal), NULL on a controller-only node. */
int controller_forwarding_start(const struct broker_config *cfg, struct metadata_store *store,
                                struct plugin_host *plugins, struct controller_forwarding **out, char *err,
                                size_t errlen);
void controller_forwarding_stop(struct controller_forwarding *f);
/* Serves one Envelope request (ctx: the forwarding); completes req. */
void controller_forwarding_serve(void *f, struct net_request *req);

#endif
