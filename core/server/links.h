/* The broker's own outgoing links and how they connect: the controller
 * link (quorum, registration and heartbeats, forwarding) runs on the
 * listener named first in controller.listener.names, the inter-broker link
 * (replica fetchers, transaction markers) on inter.broker.listener.name, or
 * the listener named after security.inter.broker.protocol. Each speaks its
 * listener's protocol from listener.security.protocol.map: PLAINTEXT, or
 * SSL with the broker's ssl.* keys (listener.name.<name>.ssl.* first), and
 * for SASL_PLAINTEXT / SASL_SSL authentication with
 * sasl.mechanism.controller.protocol / sasl.mechanism.inter.broker.protocol
 * and the node's credentials in
 * listener.name.<listener>.<mechanism>.sasl.jaas.config; for OAUTHBEARER
 * those are the clientId and clientSecret of a client-credentials login at
 * sasl.oauthbearer.token.endpoint.url, which the link owns and runs from
 * open to close (oauth/oauth_login.h).
 *
 * Threads: open/close/reload on the main thread; a link is read-only in
 * between (server_link_reload swaps its TLS context inside the tls_client,
 * see tls/tls.h) and outlives every client it was applied to. */
#ifndef CAIRN_SERVER_LINKS_H
#define CAIRN_SERVER_LINKS_H

#include <stddef.h>
#include <stdint.h>

struct broker_config;
struct net_client_config;
struct oauth_login;
struct tls_client;

enum server_link_kind { SERVER_LINK_CONTROLLER, SERVER_LINK_INTER_BROKER };

struct server_link {
    enum server_link_kind kind;
    char listener[32];
    int16_t protocol;       /* NET_SECURITY_* of the listener */
    struct tls_client *tls; /* set for SSL and SASL_SSL */
    /* Set for SASL_PLAINTEXT and SASL_SSL. */
    char sasl_mechanism[32];
    char sasl_username[256], sasl_password[256]; /* OAUTHBEARER: the clientId, no password */
    struct oauth_login *oauth;                   /* set for OAUTHBEARER */
    char kerberos_service[64];                   /* GSSAPI: the service principal's first part */
};

/* 0, or -1 with err naming the key at fault (a SASL mechanism the link
 * does not speak, missing or bad credentials, a bad or missing truststore). */
int server_link_open(const struct broker_config *cfg, enum server_link_kind kind, struct server_link *out, char *err,
                     size_t errlen);
/* --check-config: the same reading of the link's keys as server_link_open
 * (mechanism, JAAS entry, token endpoint set) with none of its effects:
 * no token login, no KRB5_CLIENT_KTNAME, no TLS file read. mechanism gets
 * the link's SASL mechanism, "" without SASL. 0, or -1 with err. */
int server_link_check(const struct broker_config *cfg, enum server_link_kind kind, char *mechanism, size_t mechlen,
                      char *err, size_t errlen);
/* Makes a client use the link's transport and SASL credentials. */
void server_link_apply(const struct server_link *l, struct net_client_config *cc);
/* Re-reads the link's keystore and truststore (SIGHUP): new connections
 * use them, established ones keep theirs. A no-op without TLS. On failure
 * the old ones stay, logged with the link, the key and the file. 0 or -1. */
int server_link_reload(struct server_link *l);
/* After every client it was applied to is destroyed. */
void server_link_close(struct server_link *l);

#endif
