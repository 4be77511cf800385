#include "server/controller_route.h"

#include <string.h>

#include "net/client.h"
#include "raft/raft_shell_metadata.h"

void controller_route_init(struct controller_route *r)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
}

void controller_route_destroy(struct controller_route *r)
{
    pthread_mutex_destroy(&r->mu);
}

bool controller_route_reach(struct controller_route *r, struct net_client *client, struct raft_shell_metadata *quorum,
                            int32_t node_id)
{
    struct quorum_voter now = {.node_id = node_id};
    if (node_id < 0 || !raft_shell_metadata_node_endpoint(quorum, node_id, now.host, sizeof now.host, &now.port))
        return false;
    pthread_mutex_lock(&r->mu);
    int i = 0;
    while (i < r->n_known && r->known[i].node_id != node_id)
        i++;
    bool same = i < r->n_known && r->known[i].port == now.port && strcmp(r->known[i].host, now.host) == 0;
    bool ok = same || net_client_add_node(client, node_id, now.host, now.port) == 0;
    if (!same && ok) {
        if (i == r->n_known && r->n_known == RAFT_MAX_VOTERS) {
            /* Full: the oldest goes (its node stays in the client). */
            memmove(&r->known[0], &r->known[1], (RAFT_MAX_VOTERS - 1) * sizeof r->known[0]);
            i = RAFT_MAX_VOTERS - 1;
        } else if (i == r->n_known) {
            r->n_known++;
        }
        r->known[i] = now;
    }
    pthread_mutex_unlock(&r->mu);
    return ok;
}
