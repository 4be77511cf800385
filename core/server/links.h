/* The broker's own outgoing links and how they connect: the controller
 * link (quorum, registration and heartbeats, forwarding) runs on the
 * listener named first in controller.listener.names, the inter-broker link
 * (replica fetchers, transaction markers) on inter.broker.listener.name, or
 * the listener named after security.inter.broker.protocol. Each speaks its
 * listener's protocol from listener.security.protocol.map: PLAINTEXT, or
 * SSL with the broker's ssl.* keys (listener.name.<name>.ssl.* first).
 * SASL on these links is refused at start-up.
 *
 * Threads: open/close on the main thread; a link is read-only in between
 * and outlives every client it was applied to. */
#ifndef CAIRN_SERVER_LINKS_H
#define CAIRN_SERVER_LINKS_H

#include <stddef.h>
#include <stdint.h>

struct broker_config;
struct net_client_config;
struct tls_client;

enum server_link_kind { SERVER_LINK_CONTROLLER, SERVER_LINK_INTER_BROKER };

struct server_link {
    char listener[32];
    int16_t protocol;       /* NET_SECURITY_PLAINTEXT or NET_SECURITY_SSL */
    struct tls_client *tls; /* set for SSL */
};

/* 0, or -1 with err naming the key at fault (a SASL protocol, a bad or
 * missing truststore). */
int server_link_open(const struct broker_config *cfg, enum server_link_kind kind, struct server_link *out, char *err,
                     size_t errlen);
/* Makes a client use the link's transport (nothing to do for PLAINTEXT). */
void server_link_apply(const struct server_link *l, struct net_client_config *cc);
/* After every client it was applied to is destroyed. */
void server_link_close(struct server_link *l);

#endif
