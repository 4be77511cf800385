/* The broker's TLS listeners: one OpenSSL context per SSL listener, the
 * principal of a client certificate through the authentication plugins,
 * and a reload of every certificate and key (SIGHUP).
 *
 * Threads: setup, reload and free run on the main thread. */
#ifndef CAIRN_SERVER_BROKER_TLS_H
#define CAIRN_SERVER_BROKER_TLS_H

#include <stddef.h>

#include "net/server.h"

struct broker_config;
struct plugin_host;
struct tls_listener;

struct broker_tls {
    struct plugin_host *plugins; /* may be NULL */
    struct tls_listener *listeners[NET_MAX_LISTENERS];
};

/* Gives lc its TLS transport when its protocol needs one (SSL, SASL_SSL); a no-op
 * for the others. -1 with err naming the key and OpenSSL's reason. */
int broker_tls_setup(struct broker_tls *bt, const struct broker_config *cfg, int index, struct net_listener_config *lc,
                     char *err, size_t errlen);

/* Re-reads every TLS listener's certificates and keys; a listener whose
 * files are now bad keeps its old ones (logged). Returns the failures. */
int broker_tls_reload(struct broker_tls *bt);

/* After the network server is freed. */
void broker_tls_free(struct broker_tls *bt);

#endif
