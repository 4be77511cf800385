/* TLS listeners of the broker; see broker_tls.h. */
#include "server/broker_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/plugin_host.h"
#include "tls/tls.h"
#include "util/logger.h"

/* host:port of "1.2.3.4:5" or "[::1]:5" into its parts. */
static void split_peer(const char *peer, char *host, size_t hostlen, uint16_t *port)
{
    const char *colon = strrchr(peer, ':');
    size_t len = colon ? (size_t)(colon - peer) : strlen(peer);
    if (len >= 2 && peer[0] == '[' && peer[len - 1] == ']') {
        peer++;
        len -= 2;
    }
    snprintf(host, hostlen, "%.*s", (int)len, peer);
    *port = colon ? (uint16_t)atoi(colon + 1) : 0;
}

/* The security protocol of the listener named listener_name: a refusal on
 * a SASL_SSL listener is recorded as SASL_SSL, as its requests are. */
static const char *listener_protocol(const struct broker_tls *bt, const char *listener_name)
{
    for (int i = 0; i < NET_MAX_LISTENERS; i++)
        if (bt->listeners[i] && bt->protocols[i] && strcmp(bt->names[i], listener_name) == 0)
            return bt->protocols[i];
    return "SSL";
}

/* A TLS authentication of the client at peer_addr, admitted or refused,
 * as the audit log records it (no request: api_key -1). */
static void audit_tls_authentication(struct broker_tls *bt, const char *listener_name, const char *peer_addr,
                                     const char *type, const char *name, bool success, const char *why)
{
    char host[64];
    struct cairn_principal principal = {sizeof principal, type, name};
    struct cairn_request_info info = {.struct_size = sizeof info,
                                      .principal = &principal,
                                      .client_host = host,
                                      .client_id = "",
                                      .listener_name = listener_name,
                                      .security_protocol = listener_protocol(bt, listener_name),
                                      .api_key = -1,
                                      .api_version = -1};
    split_peer(peer_addr, host, sizeof host, &info.client_port);
    plugin_host_audit_authentication(bt->plugins, &info, "SSL", success, why);
}

/* Runs on a network loop thread once a client certificate is verified. */
static int map_principal(void *ctx, const char *listener_name, const char *peer_addr, const struct cairn_tls_peer *peer,
                         char *type, size_t type_len, char *name, size_t name_len, char *err, size_t errlen)
{
    struct broker_tls *bt = ctx;
    struct cairn_principal_out out;
    int rc = plugin_host_map_tls_principal(bt->plugins, peer, &out, err, errlen);
    if (rc == CAIRN_OK) {
        snprintf(type, type_len, "%s", out.type);
        snprintf(name, name_len, "%s", out.name);
    } else {
        snprintf(type, type_len, "User");
        snprintf(name, name_len, "%s", peer->subject_dn);
    }
    audit_tls_authentication(bt, listener_name, peer_addr, type, name, rc != CAIRN_ERROR,
                             rc == CAIRN_ERROR ? err : NULL);
    return rc == CAIRN_ERROR ? -1 : 0;
}

/* Runs on a network loop thread when a client failed the TLS handshake:
 * an authentication failure of an unknown client in the audit log. */
static void audit_refusal(void *ctx, const char *listener_name, const char *peer_addr, const char *why)
{
    audit_tls_authentication(ctx, listener_name, peer_addr, "User", "ANONYMOUS", false, why);
}

int broker_tls_setup(struct broker_tls *bt, const struct broker_config *cfg, int index, struct net_listener_config *lc,
                     char *err, size_t errlen)
{
    /* SASL_SSL is SASL over this same transport, once SASL is served. */
    if (lc->security_protocol != NET_SECURITY_SSL && lc->security_protocol != NET_SECURITY_SASL_SSL)
        return 0;
    struct tls_settings settings;
    if (tls_settings_from_config(cfg, lc->name, &settings) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = tls_listener_create(lc->name, &settings, map_principal, bt, &bt->listeners[index], err, errlen);
    tls_settings_clear(&settings);
    if (rc != 0)
        return -1;
    tls_listener_set_refusal_hook(bt->listeners[index], audit_refusal, bt);
    snprintf(bt->names[index], sizeof bt->names[index], "%s", lc->name);
    bt->protocols[index] = net_security_protocol_name(lc->security_protocol);
    lc->transport_init = tls_listener_transport_init;
    lc->transport_ctx = bt->listeners[index];
    return 0;
}

int broker_tls_reload(struct broker_tls *bt)
{
    int failures = 0;
    for (int i = 0; i < NET_MAX_LISTENERS; i++) {
        char err[1024];
        if (bt->listeners[i] && tls_listener_reload(bt->listeners[i], err, sizeof err) != 0) {
            logger_error("server", "TLS reload failed, keeping the previous certificates: %s", err);
            failures++;
        }
    }
    return failures;
}

void broker_tls_add_link(struct broker_tls *bt, struct tls_client *client, const char *listener)
{
    if (!client || bt->link_count >= BROKER_TLS_MAX_LINKS)
        return;
    struct broker_tls_link *l = &bt->links[bt->link_count++];
    l->client = client;
    snprintf(l->listener, sizeof l->listener, "%s", listener);
}

/* Checks (apply false) or applies one listener's or link's settings from
 * cfg. 0 or 1, or -1 with err. */
static int one_target(struct tls_listener *listener, struct tls_client *link, const char *name,
                      const struct broker_config *cfg, bool apply, char *err, size_t errlen)
{
    struct tls_settings settings;
    if (tls_settings_from_config(cfg, name, &settings) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc;
    if (listener)
        rc = apply ? tls_listener_update(listener, &settings, err, errlen)
                   : tls_listener_check(listener, &settings, err, errlen);
    else
        rc = apply ? tls_client_update(link, &settings, err, errlen) : tls_client_check(link, &settings, err, errlen);
    tls_settings_clear(&settings);
    return rc;
}

/* Runs one_target over every listener (the broker's, then the quorum's
 * controller listener) and link; a check stops at the first failure. */
static int each_target(struct broker_tls *bt, const struct broker_config *cfg, bool apply, char *err, size_t errlen)
{
    int failures = 0;
    int total = NET_MAX_LISTENERS + 1 + bt->link_count;
    for (int i = 0; i < total; i++) {
        struct tls_listener *listener = NULL;
        struct tls_client *link = NULL;
        const char *name;
        if (i < NET_MAX_LISTENERS) {
            listener = bt->listeners[i];
            name = bt->names[i];
        } else if (i == NET_MAX_LISTENERS) {
            listener = bt->controller;
            name = listener ? tls_listener_name(listener) : "";
        } else {
            link = bt->links[i - NET_MAX_LISTENERS - 1].client;
            name = bt->links[i - NET_MAX_LISTENERS - 1].listener;
        }
        if (!listener && !link)
            continue;
        if (one_target(listener, link, name, cfg, apply, err, errlen) >= 0)
            continue;
        if (!apply)
            return -1;
        logger_error("server", "new TLS settings not applied, keeping the previous ones: %s", err);
        failures++;
    }
    return failures;
}

int broker_tls_check(struct broker_tls *bt, const struct broker_config *cfg, char *err, size_t errlen)
{
    return each_target(bt, cfg, false, err, errlen) == 0 ? 0 : -1;
}

int broker_tls_apply(struct broker_tls *bt, const struct broker_config *cfg)
{
    char err[1024];
    return each_target(bt, cfg, true, err, sizeof err);
}

void broker_tls_free(struct broker_tls *bt)
{
    for (int i = 0; i < NET_MAX_LISTENERS; i++) {
        tls_listener_free(bt->listeners[i]);
        bt->listeners[i] = NULL;
    }
    bt->controller = NULL; /* the quorum's */
    bt->link_count = 0;    /* the broker's and the quorum's */
}
