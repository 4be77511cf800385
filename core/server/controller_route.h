/* How a broker's client reaches the active controller: the controller's
 * address comes from the metadata quorum (its configured voters, or the
 * endpoint the controllers named in their Fetch answers when the broker
 * has only controller.quorum.bootstrap.servers), and the client is told
 * of it once, and again only when it changes (telling it again would close
 * an open connection).
 *
 * Thread-safety: controller_route_reach may be called from any thread. */
#ifndef CAIRN_SERVER_CONTROLLER_ROUTE_H
#define CAIRN_SERVER_CONTROLLER_ROUTE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/listeners.h"
#include "raft/raft.h"

struct net_client;
struct raft_shell_metadata;

struct controller_route {
    pthread_mutex_t mu; /* guards known */
    struct quorum_voter known[RAFT_MAX_VOTERS];
    int n_known;
};

void controller_route_init(struct controller_route *r);
void controller_route_destroy(struct controller_route *r);
/* True when client can send to node_id: the quorum knows where it listens
 * and the client has that address. False when the quorum does not know
 * (the broker has not heard from the controllers yet) or the client
 * refused it. */
bool controller_route_reach(struct controller_route *r, struct net_client *client, struct raft_shell_metadata *quorum,
                            int32_t node_id);

#endif
