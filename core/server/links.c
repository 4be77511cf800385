/* The broker's outgoing links; see links.h. */
#include "server/links.h"

#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "config/listeners.h"
#include "net/client.h"
#include "net/server.h"
#include "tls/tls.h"

static const char *link_name(enum server_link_kind kind)
{
    return kind == SERVER_LINK_CONTROLLER ? "controller" : "inter-broker";
}

/* The listener name the link runs on, and the key that named it. */
static const char *link_listener(const struct broker_config *cfg, enum server_link_kind kind, const char **key)
{
    if (kind == SERVER_LINK_CONTROLLER) {
        size_t n = 0;
        const char *const *names = config_get_list(cfg, "controller.listener.names", &n);
        *key = "controller.listener.names";
        return n > 0 ? names[0] : NULL;
    }
    const char *name = config_get_string(cfg, "inter.broker.listener.name");
    if (name && *name) {
        *key = "inter.broker.listener.name";
        return name;
    }
    *key = "security.inter.broker.protocol";
    return config_get_string(cfg, "security.inter.broker.protocol");
}

int server_link_open(const struct broker_config *cfg, enum server_link_kind kind, struct server_link *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *key = NULL;
    const char *listener = link_listener(cfg, kind, &key);
    if (!listener || !*listener) /* no controller listener: a single node, no link */
        return 0;
    snprintf(out->listener, sizeof out->listener, "%s", listener);
    const char *protocol = config_listener_security_protocol(cfg, listener);
    /* security.inter.broker.protocol names a protocol; a listener of that
     * name may be absent from the map. */
    int id = config_security_protocol_id(protocol ? protocol : listener);
    if (id < 0) {
        snprintf(err, errlen, "%s link: listener %s (from %s) has no protocol in listener.security.protocol.map",
                 link_name(kind), listener, key);
        return -1;
    }
    if (id == NET_SECURITY_SASL_PLAINTEXT || id == NET_SECURITY_SASL_SSL) {
        const char *mech_key = kind == SERVER_LINK_CONTROLLER ? "sasl.mechanism.controller.protocol"
                                                              : "sasl.mechanism.inter.broker.protocol";
        snprintf(err, errlen,
                 "%s link: listener %s (from %s) maps to %s, but SASL on the broker's own links is not supported "
                 "(%s=%s): map that listener to SSL or PLAINTEXT in listener.security.protocol.map",
                 link_name(kind), listener, key, protocol ? protocol : listener, mech_key,
                 config_get_string(cfg, mech_key));
        return -1;
    }
    out->protocol = (int16_t)id;
    if (id != NET_SECURITY_SSL)
        return 0;
    struct tls_settings settings;
    if (tls_settings_from_config(cfg, listener, &settings) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = tls_client_create(link_name(kind), &settings, &out->tls, err, errlen);
    tls_settings_clear(&settings);
    return rc;
}

void server_link_apply(const struct server_link *l, struct net_client_config *cc)
{
    if (l && l->tls) {
        cc->transport_ops = &tls_client_transport_ops;
        cc->transport_ctx = l->tls;
    }
}

void server_link_close(struct server_link *l)
{
    tls_client_free(l->tls);
    l->tls = NULL;
}
