/* The broker's TLS listeners: one OpenSSL context per SSL listener, the
 * principal of a client certificate through the authentication plugins,
 * a reload of every certificate and key (SIGHUP), and new ssl.* values
 * from dynamic broker configs (checked before they are recorded, applied
 * once they are in the metadata image).
 *
 * Threads: setup, reload and free run on the main thread; check on an io
 * thread, apply on the thread that publishes metadata images. */
#ifndef CAIRN_SERVER_BROKER_TLS_H
#define CAIRN_SERVER_BROKER_TLS_H

#include <stddef.h>

#include "net/server.h"

struct broker_config;
struct plugin_host;
struct tls_client;
struct tls_listener;

#define BROKER_TLS_MAX_LINKS 4 /* quorum, controller, inter-broker */

struct broker_tls {
    struct plugin_host *plugins; /* may be NULL */
    struct tls_listener *listeners[NET_MAX_LISTENERS];
    char names[NET_MAX_LISTENERS][32];        /* the listeners' names, for their ssl.* keys */
    const char *protocols[NET_MAX_LISTENERS]; /* the listeners' security protocols (SSL, SASL_SSL), for the audit */
    struct tls_listener *controller;          /* the quorum's SSL controller listener (not owned), or NULL */
    /* The node's own SSL links (not owned), each with the listener whose
     * ssl.* keys it uses. */
    struct broker_tls_link {
        struct tls_client *client;
        char listener[32];
    } links[BROKER_TLS_MAX_LINKS];
    int link_count;
};

/* Lets dynamic ssl.* changes reach a link (client NULL: a no-op). Before
 * dynamic configs start; the link outlives them. */
void broker_tls_add_link(struct broker_tls *bt, struct tls_client *client, const char *listener);

/* Gives lc its TLS transport when its protocol needs one (SSL, SASL_SSL); a no-op
 * for the others. -1 with err naming the key and OpenSSL's reason. */
int broker_tls_setup(struct broker_tls *bt, const struct broker_config *cfg, int index, struct net_listener_config *lc,
                     char *err, size_t errlen);

/* Re-reads every TLS listener's certificates and keys; a listener whose
 * files are now bad keeps its old ones (logged). Returns the failures. */
int broker_tls_reload(struct broker_tls *bt);

/* Whether every TLS listener's context builds from cfg's ssl.* values
 * (listener.name.<name>.ssl.* first): 0, or -1 with err naming the
 * listener, the key and the reason. Listeners whose values are unchanged
 * are not rebuilt. */
int broker_tls_check(struct broker_tls *bt, const struct broker_config *cfg, char *err, size_t errlen);

/* Gives every TLS listener whose ssl.* values in cfg changed a context built
 * from them: new connections use it, open ones keep theirs, and a later
 * reload re-reads the new files. A listener whose new values fail keeps
 * its context (logged). Returns the failures. */
int broker_tls_apply(struct broker_tls *bt, const struct broker_config *cfg);

/* After the network server is freed. */
void broker_tls_free(struct broker_tls *bt);

#endif
