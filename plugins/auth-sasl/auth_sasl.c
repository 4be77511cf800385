/* The auth-sasl plugin: SASL PLAIN and GSSAPI (Kerberos) served by Cyrus
 * SASL (libsasl2). PLAIN passwords are checked against Cyrus's own stores:
 * a sasldb file (pwcheck_method=auxprop, auxprop_plugin=sasldb) or
 * saslauthd (LDAP, PAM), chosen in plugin.auth-sasl.*. GSSAPI tickets are
 * checked with the broker's keytab by Cyrus's gssapi module (MIT krb5); the
 * Kerberos name becomes a Kafka user by sasl.kerberos.principal.to.local.rules
 * (DEFAULT).
 *
 * Threads: every Cyrus call is made under one mutex, since libsasl2's
 * default mutex hooks do not lock; a PLAIN check against sasldb and a
 * GSSAPI accept against a keytab are short. */
#include <errno.h>
#include <pthread.h>
#include <sasl/sasl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/plugin.h"

/* Kafka's answer to a failed PLAIN authentication. */
#define AUTH_SASL_FAILED_MESSAGE "Authentication failed: Invalid username or password"
/* The client's message for a refused GSSAPI exchange; Cyrus's detail (the
 * krb5 reason) is appended, as Kafka passes the GSSException's text. */
#define AUTH_SASL_GSSAPI_FAILED "Authentication failed during GSSAPI (Kerberos) authentication"

struct auth_sasl {
    const struct cairn_host *host;
    const char *service;
    const char *realm;
    /* Cyrus options, answered through the getopt callback. */
    const char *pwcheck_method;
    const char *auxprop_plugin;
    const char *sasldb_path;
    const char *saslauthd_path;
    /* GSSAPI: the host of the service principal <service>/<host>@REALM
     * (Cyrus's serverFQDN; NULL: the machine's name). */
    const char *kerberos_host;
    sasl_callback_t callbacks[2];
    struct cairn_metric *failures;
};

struct auth_sasl_session {
    sasl_conn_t *conn;
    char mechanism[32];
    bool started;
};

/* Cyrus initialises once per process; the plugin is loaded once. */
static pthread_mutex_t auth_sasl_lock = PTHREAD_MUTEX_INITIALIZER;
static bool auth_sasl_cyrus_ready;

static int auth_sasl_getopt(void *context, const char *plugin_name, const char *option, const char **result,
                            unsigned *len)
{
    (void)plugin_name;
    const struct auth_sasl *p = context;
    const char *value = NULL;
    if (strcmp(option, "pwcheck_method") == 0)
        value = p->pwcheck_method;
    else if (strcmp(option, "auxprop_plugin") == 0)
        value = p->auxprop_plugin;
    else if (strcmp(option, "sasldb_path") == 0)
        value = p->sasldb_path;
    else if (strcmp(option, "saslauthd_path") == 0 && p->saslauthd_path[0])
        value = p->saslauthd_path;
    else if (strcmp(option, "mech_list") == 0)
        value = "PLAIN GSSAPI";
    if (!value)
        return SASL_FAIL;
    *result = value;
    if (len)
        *len = (unsigned)strlen(value);
    return SASL_OK;
}

static int auth_sasl_string(const struct cairn_host *host, const char *key, const char **out, char *err, size_t errlen)
{
    char why[256] = "";
    if (host->config_string(host->ctx, key, out, why, sizeof why) != CAIRN_OK) {
        snprintf(err, errlen, "config %s: %s", key, why[0] ? why : "not available");
        return CAIRN_ERROR;
    }
    return CAIRN_OK;
}

/* The GSSAPI keys checked at start: the keytab reaches MIT krb5 through
 * KRB5_KTNAME (Cyrus has no keytab option for MIT), set while cairnd is
 * still starting; only the DEFAULT mapping rule is served. */
static int auth_sasl_kerberos_setup(const struct cairn_host *host, char *err, size_t errlen)
{
    const char *keytab = NULL, *rules = NULL;
    if (auth_sasl_string(host, "keytab", &keytab, err, errlen) != CAIRN_OK ||
        auth_sasl_string(host, "principal_to_local_rules", &rules, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    if (strcmp(rules, "DEFAULT") != 0) {
        snprintf(err, errlen, "principal_to_local_rules: only DEFAULT is supported, not '%s'", rules);
        return CAIRN_ERROR;
    }
    if (keytab[0]) {
        if (access(keytab, R_OK) != 0) {
            snprintf(err, errlen, "keytab %s: %s", keytab, strerror(errno));
            return CAIRN_ERROR;
        }
        char value[4200];
        snprintf(value, sizeof value, "FILE:%s", keytab);
        if (setenv("KRB5_KTNAME", value, 1) != 0) {
            snprintf(err, errlen, "setenv KRB5_KTNAME: %s", strerror(errno));
            return CAIRN_ERROR;
        }
    }
    return CAIRN_OK;
}

/* Kafka's DEFAULT rule: a name of the default realm maps to its first
 * component (kafka-client -> kafka-client, kafka/host -> kafka). Cyrus has
 * already dropped the realm when it is krb5's default realm, so a name
 * still holding '@' is of another realm, which DEFAULT does not map.
 * Returns false when no rule applies. */
static bool auth_sasl_kerberos_short_name(const char *name, char *out, size_t outlen)
{
    if (strchr(name, '@') || !name[0] || name[0] == '/')
        return false;
    size_t n = strcspn(name, "/");
    snprintf(out, outlen, "%.*s", (int)n, name);
    return true;
}

/* Cyrus names a user with its realm; the principal is the bare name when
 * that realm is the configured one (as a sasldb user). */
static void auth_sasl_user_principal(const struct auth_sasl *p, const char *name, size_t n, char *out, size_t outlen)
{
    size_t rlen = strlen(p->realm);
    if (rlen > 0 && n > rlen + 1 && name[n - rlen - 1] == '@' && memcmp(name + n - rlen, p->realm, rlen) == 0)
        n -= rlen + 1;
    snprintf(out, outlen, "%.*s", (int)n, name);
}

/* The user a refused PLAIN message (authzid NUL authcid NUL password,
 * RFC 4616) claimed to be: its authcid, the name whose password was
 * checked. False when the message has no well-formed authcid. */
static bool auth_sasl_plain_claimed(const struct auth_sasl *p, const uint8_t *in, size_t in_len, char *out,
                                    size_t outlen)
{
    const uint8_t *first = memchr(in, '\0', in_len);
    if (!first)
        return false;
    const uint8_t *authcid = first + 1;
    const uint8_t *second = memchr(authcid, '\0', in_len - (size_t)(authcid - in));
    size_t n = second ? (size_t)(second - authcid) : 0;
    if (n == 0 || n >= outlen)
        return false;
    auth_sasl_user_principal(p, (const char *)authcid, n, out, outlen);
    return true;
}

static int auth_sasl_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    struct auth_sasl *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    p->host = host;
    if (auth_sasl_string(host, "service", &p->service, err, errlen) != CAIRN_OK ||
        auth_sasl_string(host, "realm", &p->realm, err, errlen) != CAIRN_OK ||
        auth_sasl_string(host, "pwcheck_method", &p->pwcheck_method, err, errlen) != CAIRN_OK ||
        auth_sasl_string(host, "auxprop_plugin", &p->auxprop_plugin, err, errlen) != CAIRN_OK ||
        auth_sasl_string(host, "sasldb_path", &p->sasldb_path, err, errlen) != CAIRN_OK ||
        auth_sasl_string(host, "saslauthd_path", &p->saslauthd_path, err, errlen) != CAIRN_OK ||
        auth_sasl_string(host, "kerberos_host", &p->kerberos_host, err, errlen) != CAIRN_OK ||
        auth_sasl_kerberos_setup(host, err, errlen) != CAIRN_OK) {
        free(p);
        return CAIRN_ERROR;
    }
    p->callbacks[0] = (sasl_callback_t){SASL_CB_GETOPT, (int (*)(void))(void (*)(void))auth_sasl_getopt, p};
    p->callbacks[1] = (sasl_callback_t){SASL_CB_LIST_END, NULL, NULL};
    pthread_mutex_lock(&auth_sasl_lock);
    int rc = auth_sasl_cyrus_ready ? SASL_OK : sasl_server_init(p->callbacks, "cairn");
    auth_sasl_cyrus_ready = rc == SASL_OK;
    pthread_mutex_unlock(&auth_sasl_lock);
    if (rc != SASL_OK) {
        snprintf(err, errlen, "sasl_server_init: %s", sasl_errstring(rc, NULL, NULL));
        free(p);
        return CAIRN_ERROR;
    }
    p->failures = host->counter(host->ctx, "failed_authentications_total",
                                "PLAIN and GSSAPI authentications Cyrus refused");
    host->log(
        host->ctx, CAIRN_LOG_INFO,
        "Cyrus SASL serves PLAIN (pwcheck_method=%s, auxprop_plugin=%s, sasldb=%s) and GSSAPI (service %s, host %s)",
        p->pwcheck_method, p->auxprop_plugin, p->sasldb_path, p->service,
        p->kerberos_host[0] ? p->kerberos_host : "(host name)");
    /* Cyrus loads its mechanisms as modules: say so now if GSSAPI's is
     * missing, rather than at each client's failed exchange. */
    bool gssapi_module = false;
    pthread_mutex_lock(&auth_sasl_lock);
    const char **mechs = sasl_global_listmech();
    for (size_t i = 0; mechs && mechs[i]; i++)
        gssapi_module = gssapi_module || strcmp(mechs[i], "GSSAPI") == 0;
    pthread_mutex_unlock(&auth_sasl_lock);
    if (!gssapi_module)
        host->log(host->ctx, CAIRN_LOG_WARN,
                  "Cyrus SASL has no GSSAPI module (Debian: libsasl2-modules-gssapi-mit): GSSAPI logins will fail");
    *instance = p;
    return CAIRN_OK;
}

static void auth_sasl_fini(void *instance)
{
    /* sasl_server_done would tear down Cyrus for the whole process; a
     * plugin is finalised only as cairnd exits, so leave it. */
    free(instance);
}

static int auth_sasl_start(void *instance, const char *mechanism, const struct cairn_request_info *connection,
                           void **session, char *err, size_t errlen)
{
    (void)connection;
    struct auth_sasl *p = instance;
    struct auth_sasl_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    snprintf(s->mechanism, sizeof s->mechanism, "%s", mechanism);
    pthread_mutex_lock(&auth_sasl_lock);
    int rc = sasl_server_new(p->service, p->kerberos_host[0] ? p->kerberos_host : NULL, p->realm[0] ? p->realm : NULL,
                             NULL, NULL, p->callbacks, 0, &s->conn);
    if (rc == SASL_OK) {
        /* Kafka has no SASL security layer after authentication: GSSAPI
         * must settle on "no layer", so offer no integrity or privacy. */
        sasl_security_properties_t props = {.min_ssf = 0, .max_ssf = 0, .maxbufsize = 0};
        rc = sasl_setprop(s->conn, SASL_SEC_PROPS, &props);
        if (rc != SASL_OK)
            sasl_dispose(&s->conn);
    }
    pthread_mutex_unlock(&auth_sasl_lock);
    if (rc != SASL_OK) {
        snprintf(err, errlen, "sasl_server_new: %s", sasl_errstring(rc, NULL, NULL));
        free(s);
        return CAIRN_ERROR;
    }
    *session = s;
    return CAIRN_OK;
}

static int auth_sasl_step(void *instance, void *session, const uint8_t *in, size_t in_len, struct cairn_bytes_out *out,
                          struct cairn_principal_out *principal, char *err, size_t errlen)
{
    struct auth_sasl *p = instance;
    struct auth_sasl_session *s = session;
    if (in_len > 65536) {
        snprintf(err, errlen, AUTH_SASL_FAILED_MESSAGE);
        return CAIRN_SASL_FAILED;
    }
    const char *token = NULL;
    unsigned token_len = 0;
    pthread_mutex_lock(&auth_sasl_lock);
    int rc = s->started
                 ? sasl_server_step(s->conn, (const char *)in, (unsigned)in_len, &token, &token_len)
                 : sasl_server_start(s->conn, s->mechanism, (const char *)in, (unsigned)in_len, &token, &token_len);
    s->started = true;
    const void *user = NULL;
    char detail[256] = "";
    bool gssapi = strcmp(s->mechanism, "GSSAPI") == 0;
    /* GSSAPI: the principal is the Kerberos name (the authentication id),
     * not whatever authorization id the client asked for. */
    if (rc == SASL_OK && (sasl_getprop(s->conn, gssapi ? SASL_AUTHUSER : SASL_USERNAME, &user) != SASL_OK || !user))
        rc = SASL_FAIL;
    if (rc == SASL_OK && gssapi) {
        if (!auth_sasl_kerberos_short_name(user, principal->name, sizeof principal->name)) {
            snprintf(detail, sizeof detail, "no principal.to.local rule applies to %.200s", (const char *)user);
            snprintf(principal->name, sizeof principal->name, "%s", (const char *)user);
            rc = SASL_NOAUTHZ;
        }
    } else if (rc == SASL_OK) {
        auth_sasl_user_principal(p, user, strlen(user), principal->name, sizeof principal->name);
    } else if (rc != SASL_CONTINUE) {
        snprintf(detail, sizeof detail, "%s", sasl_errdetail(s->conn));
        /* GSSAPI: the Kerberos name, when Cyrus got as far as learning it
         * (a good ticket whose authorization id the proxy policy refused),
         * as the user DEFAULT makes of it, or whole when no rule applies.
         * A ticket Cyrus could not accept names nobody: left empty. */
        if (gssapi && sasl_getprop(s->conn, SASL_AUTHUSER, &user) == SASL_OK && user &&
            !auth_sasl_kerberos_short_name(user, principal->name, sizeof principal->name))
            snprintf(principal->name, sizeof principal->name, "%s", (const char *)user);
    }
    pthread_mutex_unlock(&auth_sasl_lock);
    /* A refused client is audited as the user it claimed to be. */
    if (rc != SASL_OK && rc != SASL_CONTINUE && !gssapi)
        auth_sasl_plain_claimed(p, in, in_len, principal->name, sizeof principal->name);
    if (rc != SASL_OK && rc != SASL_CONTINUE && principal->name[0])
        snprintf(principal->type, sizeof principal->type, "User");

    if (rc == SASL_OK || rc == SASL_CONTINUE) {
        /* Cyrus keeps the token until the next call on this connection. */
        out->data = (const uint8_t *)token;
        out->len = token ? token_len : 0;
        if (rc == SASL_CONTINUE)
            return CAIRN_SASL_CONTINUE;
        snprintf(principal->type, sizeof principal->type, "User");
        principal->session_lifetime_ms = 0;
        return CAIRN_SASL_DONE;
    }
    p->host->log(p->host->ctx, CAIRN_LOG_INFO, "Cyrus refused %s: %s", s->mechanism, detail);
    if (p->failures)
        p->host->metric_add(p->failures, 1);
    if (gssapi)
        snprintf(err, errlen, "%s: %s", AUTH_SASL_GSSAPI_FAILED, detail[0] ? detail : sasl_errstring(rc, NULL, NULL));
    else
        snprintf(err, errlen, "%s", AUTH_SASL_FAILED_MESSAGE);
    return CAIRN_SASL_FAILED;
}

static void auth_sasl_end(void *instance, void *session)
{
    (void)instance;
    struct auth_sasl_session *s = session;
    if (!s)
        return;
    pthread_mutex_lock(&auth_sasl_lock);
    sasl_dispose(&s->conn);
    pthread_mutex_unlock(&auth_sasl_lock);
    free(s);
}

#define AUTH_SASL_KEY(var, key, def, text)                                                                             \
    static const struct cairn_config_key var = {                                                                       \
        .struct_size = sizeof(struct cairn_config_key),                                                                \
        .name = key,                                                                                                   \
        .type = CAIRN_CONFIG_STRING,                                                                                   \
        .default_value = def,                                                                                          \
        .doc = text,                                                                                                   \
    }

AUTH_SASL_KEY(auth_sasl_key_service, "service", "kafka", "SASL service name passed to Cyrus.");
AUTH_SASL_KEY(auth_sasl_key_realm, "realm", "", "Cyrus user realm; empty uses the host's.");
AUTH_SASL_KEY(auth_sasl_key_pwcheck, "pwcheck_method", "auxprop",
              "Cyrus pwcheck_method: auxprop (a sasldb file) or saslauthd (LDAP, PAM through saslauthd).");
AUTH_SASL_KEY(auth_sasl_key_auxprop, "auxprop_plugin", "sasldb", "Cyrus auxprop_plugin for pwcheck_method=auxprop.");
AUTH_SASL_KEY(auth_sasl_key_sasldb, "sasldb_path", "/etc/sasldb2", "The sasldb file (made with saslpasswd2 -f).");
AUTH_SASL_KEY(auth_sasl_key_saslauthd, "saslauthd_path", "",
              "The saslauthd socket directory's mux path; empty uses Cyrus's default.");
AUTH_SASL_KEY(auth_sasl_key_keytab, "keytab", "",
              "GSSAPI: the keytab holding the broker's service key (sets KRB5_KTNAME); empty uses krb5's default.");
AUTH_SASL_KEY(auth_sasl_key_kerberos_host, "kerberos_host", "",
              "GSSAPI: the host part of the service principal <service>/<host>@REALM; empty uses the host name.");
AUTH_SASL_KEY(
    auth_sasl_key_rules, "principal_to_local_rules", "DEFAULT",
    "GSSAPI: Kafka's sasl.kerberos.principal.to.local.rules; DEFAULT maps name[/host]@default-realm to name.");

static const struct cairn_config_key *const auth_sasl_config_keys[] = {
    &auth_sasl_key_service, &auth_sasl_key_realm,         &auth_sasl_key_pwcheck,
    &auth_sasl_key_auxprop, &auth_sasl_key_sasldb,        &auth_sasl_key_saslauthd,
    &auth_sasl_key_keytab,  &auth_sasl_key_kerberos_host, &auth_sasl_key_rules,
};

static const char *const auth_sasl_mechanisms[] = {"PLAIN", "GSSAPI", NULL};

static const struct cairn_authn_vtable auth_sasl_vtable = {
    .struct_size = sizeof(struct cairn_authn_vtable),
    .sasl_mechanisms = auth_sasl_mechanisms,
    .sasl_start = auth_sasl_start,
    .sasl_step = auth_sasl_step,
    .sasl_end = auth_sasl_end,
};

static const struct cairn_plugin_descriptor auth_sasl_descriptor = {
    .struct_size = sizeof(struct cairn_plugin_descriptor),
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "auth-sasl",
    .version = "1.0.0",
    .description = "SASL PLAIN (sasldb, saslauthd) and GSSAPI (Kerberos) through Cyrus SASL",
    .capabilities = CAIRN_CAP_AUTHENTICATION,
    .config_keys = auth_sasl_config_keys,
    .config_key_count = sizeof(auth_sasl_config_keys) / sizeof(auth_sasl_config_keys[0]),
    .init = auth_sasl_init,
    .fini = auth_sasl_fini,
    .authentication = &auth_sasl_vtable,
};

CAIRN_PLUGIN_DEFINE(auth_sasl_descriptor)
