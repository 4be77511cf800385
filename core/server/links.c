/* The broker's outgoing links; see links.h. */
#include "server/links.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/listeners.h"
#include "net/client.h"
#include "net/server.h"
#include "sasl/sasl_client.h"
#include "tls/tls.h"
#include "util/logger.h"

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

/* The link's SASL mechanism and the node's own credentials for it, from
 * listener.name.<listener>.<mechanism>.sasl.jaas.config (both names in
 * lower case, as Kafka spells the key). */
static int link_sasl(const struct broker_config *cfg, enum server_link_kind kind, const char *listener,
                     struct server_link *out, char *err, size_t errlen)
{
    const char *mech_key = kind == SERVER_LINK_CONTROLLER ? "sasl.mechanism.controller.protocol"
                                                          : "sasl.mechanism.inter.broker.protocol";
    const char *mech = sasl_client_mechanism_canonical(config_get_string(cfg, mech_key));
    if (!mech) {
        snprintf(err, errlen,
                 "%s link: listener %s is a SASL listener, but %s=%s is not a mechanism the link speaks: set it to "
                 "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
                 link_name(kind), listener, mech_key, config_get_string(cfg, mech_key));
        return -1;
    }
    char jaas_key[160];
    int n = snprintf(jaas_key, sizeof jaas_key, "listener.name.%s.%s.sasl.jaas.config", listener, mech);
    for (int i = 0; i < n && i < (int)sizeof jaas_key; i++)
        jaas_key[i] = (char)tolower((unsigned char)jaas_key[i]);
    struct config_kv *kvs = NULL;
    size_t count = 0;
    const char *jaas = NULL;
    if (config_keys_with_prefix(cfg, jaas_key, &kvs, &count) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < count; i++)
        if (strcmp(kvs[i].key, jaas_key) == 0)
            jaas = kvs[i].value;
    int rc = 0;
    char why[200];
    if (!jaas) {
        snprintf(err, errlen, "%s link: listener %s uses SASL %s (%s), but %s is not set", link_name(kind), listener,
                 mech, mech_key, jaas_key);
        rc = -1;
    } else if (sasl_jaas_parse(jaas, mech, out->sasl_username, sizeof out->sasl_username, out->sasl_password,
                               sizeof out->sasl_password, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", jaas_key, why);
        rc = -1;
    }
    free(kvs);
    snprintf(out->sasl_mechanism, sizeof out->sasl_mechanism, "%s", mech);
    return rc;
}

int server_link_open(const struct broker_config *cfg, enum server_link_kind kind, struct server_link *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
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
    bool sasl = id == NET_SECURITY_SASL_PLAINTEXT || id == NET_SECURITY_SASL_SSL;
    if (sasl && link_sasl(cfg, kind, listener, out, err, errlen) != 0)
        return -1;
    out->protocol = (int16_t)id;
    if (id != NET_SECURITY_SSL && id != NET_SECURITY_SASL_SSL)
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
    if (l && l->sasl_mechanism[0]) {
        snprintf(cc->sasl_mechanism, sizeof cc->sasl_mechanism, "%s", l->sasl_mechanism);
        snprintf(cc->sasl_username, sizeof cc->sasl_username, "%s", l->sasl_username);
        snprintf(cc->sasl_password, sizeof cc->sasl_password, "%s", l->sasl_password);
        snprintf(cc->sasl_link, sizeof cc->sasl_link, "%s",
                 l->kind == SERVER_LINK_CONTROLLER ? "controller" : "inter-broker");
    }
}

int server_link_reload(struct server_link *l)
{
    if (!l->tls)
        return 0;
    char err[1024];
    if (tls_client_reload(l->tls, err, sizeof err) == 0)
        return 0;
    logger_error("server", "TLS reload failed, keeping the previous certificates: %s", err);
    return -1;
}

void server_link_close(struct server_link *l)
{
    tls_client_free(l->tls);
    l->tls = NULL;
    memset(l->sasl_password, 0, sizeof l->sasl_password);
}
