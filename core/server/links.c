/* The broker's outgoing links; see links.h. */
#include "server/links.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/listeners.h"
#include "net/client.h"
#include "net/server.h"
#include "oauth/oauth_login.h"
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

/* The value of jaas_key (listener.name.<listener>.<mechanism>.sasl.jaas.config,
 * built in lower case, as Kafka spells the key) into out; -1 when unset. */
static int link_jaas(const struct broker_config *cfg, const char *listener, const char *mech, char *jaas_key,
                     size_t keylen, char **out)
{
    int n = snprintf(jaas_key, keylen, "listener.name.%s.%s.sasl.jaas.config", listener, mech);
    for (int i = 0; i < n && i < (int)keylen; i++)
        jaas_key[i] = (char)tolower((unsigned char)jaas_key[i]);
    struct config_kv *kvs = NULL;
    size_t count = 0;
    *out = NULL;
    if (config_keys_with_prefix(cfg, jaas_key, &kvs, &count) != 0)
        return -1;
    for (size_t i = 0; i < count; i++)
        if (strcmp(kvs[i].key, jaas_key) == 0)
            *out = strdup(kvs[i].value);
    free(kvs);
    return *out ? 0 : -1;
}

#define JAAS_OAUTH "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"

/* OAUTHBEARER: the client-credentials login the link's connections take
 * their token from (oauth/oauth_login.h). */
static int link_oauth(const struct broker_config *cfg, enum server_link_kind kind, const char *listener,
                      const char *jaas_key, const char *jaas, bool check_only, struct server_link *out, char *err,
                      size_t errlen)
{
    char secret[SASL_JAAS_VALUE_MAX], scope[SASL_JAAS_VALUE_MAX], why[200];
    struct sasl_jaas_option opts[] = {{"clientId", out->sasl_username, sizeof out->sasl_username},
                                      {"clientSecret", secret, sizeof secret},
                                      {"scope", scope, sizeof scope}};
    const char *url = config_get_string(cfg, "sasl.oauthbearer.token.endpoint.url");
    int rc = sasl_jaas_parse_module(jaas, JAAS_OAUTH, opts, 3, why, sizeof why);
    if (rc == -2)
        snprintf(err, errlen, "%s: the login module must be %s for OAUTHBEARER", jaas_key, JAAS_OAUTH);
    else if (rc != 0)
        snprintf(err, errlen, "%s: %s", jaas_key, why);
    else if (!out->sasl_username[0] || !secret[0])
        snprintf(err, errlen, "%s: clientId and clientSecret are both required (the client-credentials grant)",
                 jaas_key);
    else if (!url || !*url)
        snprintf(err, errlen,
                 "%s link: listener %s uses SASL OAUTHBEARER, but sasl.oauthbearer.token.endpoint.url is not set",
                 link_name(kind), listener);
    bool valid = rc == 0 && out->sasl_username[0] && secret[0] && url && *url;
    if (valid && check_only) { /* --check-config: no login thread, no request */
        memset(secret, 0, sizeof secret);
        return 0;
    }
    if (valid) {
        int64_t connect = config_get_long(cfg, "sasl.login.connect.timeout.ms");
        int64_t read = config_get_long(cfg, "sasl.login.read.timeout.ms");
        struct oauth_login_settings s = {
            .link = link_name(kind),
            .token_endpoint_url = url,
            .client_id = out->sasl_username,
            .client_secret = secret,
            .scope = scope,
            .refresh_window_factor = config_get_double(cfg, "sasl.login.refresh.window.factor"),
            .refresh_window_jitter = config_get_double(cfg, "sasl.login.refresh.window.jitter"),
            .refresh_min_period_ms = config_get_long(cfg, "sasl.login.refresh.min.period.seconds") * 1000,
            .refresh_buffer_ms = config_get_long(cfg, "sasl.login.refresh.buffer.seconds") * 1000,
            .connect_timeout_ms = connect > 0 ? connect : 10000,
            .read_timeout_ms = read > 0 ? read : 10000,
            .retry_backoff_ms = config_get_long(cfg, "sasl.login.retry.backoff.ms"),
            .retry_backoff_max_ms = config_get_long(cfg, "sasl.login.retry.backoff.max.ms"),
        };
        out->oauth = oauth_login_start(&s, why, sizeof why);
        if (!out->oauth)
            snprintf(err, errlen, "%s link: %s", link_name(kind), why);
    }
    memset(secret, 0, sizeof secret);
    return out->oauth ? 0 : -1;
}

#define JAAS_KRB5 "com.sun.security.auth.module.Krb5LoginModule"

/* GSSAPI: the node's Kerberos login, Krb5LoginModule's keyTab (handed to
 * krb5 as KRB5_CLIENT_KTNAME, one per process) and principal (its name
 * in log lines; krb5 takes the keytab's), and the service name. */
static int link_kerberos(const struct broker_config *cfg, enum server_link_kind kind, const char *listener,
                         const char *jaas_key, const char *jaas, bool check_only, struct server_link *out, char *err,
                         size_t errlen)
{
    char keytab[SASL_JAAS_VALUE_MAX], service[64], use_keytab[16], store_key[16], use_cache[16], why[200];
    struct sasl_jaas_option opts[] = {{"useKeyTab", use_keytab, sizeof use_keytab},
                                      {"storeKey", store_key, sizeof store_key},
                                      {"keyTab", keytab, sizeof keytab},
                                      {"principal", out->sasl_username, sizeof out->sasl_username},
                                      {"serviceName", service, sizeof service},
                                      {"useTicketCache", use_cache, sizeof use_cache}};
    int rc = sasl_jaas_parse_module(jaas, JAAS_KRB5, opts, 6, why, sizeof why);
    if (rc == -2) {
        snprintf(err, errlen, "%s: the login module must be %s for GSSAPI", jaas_key, JAAS_KRB5);
        return -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", jaas_key, why);
        return -1;
    }
    const char *configured = config_get_string(cfg, "sasl.kerberos.service.name");
    if (!service[0] && configured)
        snprintf(service, sizeof service, "%s", configured);
    if (!service[0]) {
        snprintf(err, errlen,
                 "%s link: listener %s uses SASL GSSAPI, but neither sasl.kerberos.service.name nor serviceName in "
                 "%s is set",
                 link_name(kind), listener, jaas_key);
        return -1;
    }
    if (keytab[0] && !check_only) {
        const char *current = getenv("KRB5_CLIENT_KTNAME");
        if (current && strcmp(current, keytab) != 0 &&
            strcmp(current + (strncmp(current, "FILE:", 5) ? 0 : 5), keytab)) {
            snprintf(err, errlen, "%s: keyTab %s, but this process already uses the client keytab %s", jaas_key, keytab,
                     current);
            return -1;
        }
        if (setenv("KRB5_CLIENT_KTNAME", keytab, 1) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (!out->sasl_username[0])
        snprintf(out->sasl_username, sizeof out->sasl_username, "(krb5's default principal)");
    snprintf(out->kerberos_service, sizeof out->kerberos_service, "%s", service);
    return 0;
}

/* The link's SASL mechanism and the node's own credentials for it, from
 * listener.name.<listener>.<mechanism>.sasl.jaas.config. */
static int link_sasl(const struct broker_config *cfg, enum server_link_kind kind, const char *listener, bool check_only,
                     struct server_link *out, char *err, size_t errlen)
{
    const char *mech_key = kind == SERVER_LINK_CONTROLLER ? "sasl.mechanism.controller.protocol"
                                                          : "sasl.mechanism.inter.broker.protocol";
    const char *configured = config_get_string(cfg, mech_key);
    bool oauth = configured && strcasecmp(configured, "OAUTHBEARER") == 0;
    bool kerberos = configured && strcasecmp(configured, "GSSAPI") == 0;
    const char *mech = oauth ? "OAUTHBEARER" : kerberos ? "GSSAPI" : sasl_client_mechanism_canonical(configured);
    if (!mech) {
        snprintf(err, errlen,
                 "%s link: listener %s is a SASL listener, but %s=%s is not a mechanism the link speaks: set it to "
                 "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI",
                 link_name(kind), listener, mech_key, configured);
        return -1;
    }
    snprintf(out->sasl_mechanism, sizeof out->sasl_mechanism, "%s", mech);
    char jaas_key[160], why[200];
    char *jaas = NULL;
    if (link_jaas(cfg, listener, mech, jaas_key, sizeof jaas_key, &jaas) != 0) {
        snprintf(err, errlen, "%s link: listener %s uses SASL %s (%s), but %s is not set", link_name(kind), listener,
                 mech, mech_key, jaas_key);
        return -1;
    }
    int rc = 0;
    if (oauth) {
        rc = link_oauth(cfg, kind, listener, jaas_key, jaas, check_only, out, err, errlen);
    } else if (kerberos) {
        rc = link_kerberos(cfg, kind, listener, jaas_key, jaas, check_only, out, err, errlen);
    } else if (sasl_jaas_parse(jaas, mech, out->sasl_username, sizeof out->sasl_username, out->sasl_password,
                               sizeof out->sasl_password, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: %s", jaas_key, why);
        rc = -1;
    }
    memset(jaas, 0, strlen(jaas));
    free(jaas);
    return rc;
}

/* net_client_config.sasl_token: the login's current token. */
static int link_token(void *ctx, char **token, char *err, size_t errlen)
{
    return oauth_login_token(ctx, token, err, errlen);
}

/* check_only (--check-config): the same reading of the keys, without the
 * side effects: no token login, no KRB5_CLIENT_KTNAME, no TLS files read. */
static int link_setup(const struct broker_config *cfg, enum server_link_kind kind, bool check_only,
                      struct server_link *out, char *err, size_t errlen)
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
    if (sasl && link_sasl(cfg, kind, listener, check_only, out, err, errlen) != 0)
        return -1;
    out->protocol = (int16_t)id;
    if (check_only || (id != NET_SECURITY_SSL && id != NET_SECURITY_SASL_SSL))
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

int server_link_open(const struct broker_config *cfg, enum server_link_kind kind, struct server_link *out, char *err,
                     size_t errlen)
{
    return link_setup(cfg, kind, false, out, err, errlen);
}

int server_link_check(const struct broker_config *cfg, enum server_link_kind kind, char *mechanism, size_t mechlen,
                      char *err, size_t errlen)
{
    struct server_link l;
    int rc = link_setup(cfg, kind, true, &l, err, errlen);
    snprintf(mechanism, mechlen, "%s", l.sasl_mechanism);
    memset(l.sasl_password, 0, sizeof l.sasl_password);
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
        cc->sasl_token = l->oauth ? link_token : NULL;
        cc->sasl_token_ctx = l->oauth;
        snprintf(cc->sasl_kerberos_service, sizeof cc->sasl_kerberos_service, "%s", l->kerberos_service);
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
    oauth_login_stop(l->oauth);
    l->oauth = NULL;
    memset(l->sasl_password, 0, sizeof l->sasl_password);
}
