/* GSSAPI (Kerberos) on the outbound client's connections, through Cyrus
 * SASL's client: the node's principal comes from the keytab krb5 finds
 * (KRB5_CLIENT_KTNAME, which server/links.c sets from the JAAS keyTab) or
 * its ticket cache; the service principal is <service>/<the host dialled>.
 * No security layer is negotiated (max_ssf 0), as Kafka's listeners offer
 * none. Cyrus's client calls are serialised on one mutex; the first one
 * may ask the KDC for a ticket, on the client's loop thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/client_internal.h"

#ifdef CAIRN_HAVE_CYRUS
#include <sasl/sasl.h>

static pthread_mutex_t cyrus_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t cyrus_once = PTHREAD_ONCE_INIT;
static int cyrus_init_rc = SASL_FAIL;

static void cyrus_init(void)
{
    cyrus_init_rc = sasl_client_init(NULL);
}

/* The authorization id: none (the principal is the Kerberos name). */
static int empty_authzid(void *ctx, int id, const char **result, unsigned *len)
{
    (void)ctx;
    (void)id;
    *result = "";
    if (len)
        *len = 0;
    return SASL_OK;
}

static sasl_callback_t callbacks[] = {
    {SASL_CB_USER, (int (*)(void))(void (*)(void))empty_authzid, NULL},
    {SASL_CB_AUTHNAME, (int (*)(void))(void (*)(void))empty_authzid, NULL},
    {SASL_CB_LIST_END, NULL, NULL},
};

struct client_gssapi {
    sasl_conn_t *conn;
};

int client_gssapi_start(const char *service, const char *host, struct client_gssapi **out, const uint8_t **tok,
                        size_t *len, char *err, size_t errlen)
{
    *out = NULL;
    pthread_once(&cyrus_once, cyrus_init);
    if (cyrus_init_rc != SASL_OK) {
        snprintf(err, errlen, "sasl_client_init: %s", sasl_errstring(cyrus_init_rc, NULL, NULL));
        return -1;
    }
    struct client_gssapi *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_lock(&cyrus_mu);
    int rc = sasl_client_new(service, host, NULL, NULL, callbacks, 0, &g->conn);
    if (rc == SASL_OK) {
        sasl_security_properties_t props = {.min_ssf = 0, .max_ssf = 0, .maxbufsize = 0};
        sasl_setprop(g->conn, SASL_SEC_PROPS, &props);
        const char *data = NULL, *mech = NULL;
        unsigned n = 0;
        rc = sasl_client_start(g->conn, "GSSAPI", NULL, &data, &n, &mech);
        *tok = (const uint8_t *)data;
        *len = n;
    }
    if (rc != SASL_OK && rc != SASL_CONTINUE)
        snprintf(err, errlen, "GSSAPI for %s/%s: %s", service, host,
                 g->conn ? sasl_errdetail(g->conn) : sasl_errstring(rc, NULL, NULL));
    pthread_mutex_unlock(&cyrus_mu);
    if (rc != SASL_OK && rc != SASL_CONTINUE) {
        client_gssapi_free(g);
        return -1;
    }
    *out = g;
    return rc == SASL_OK ? 0 : 1;
}

int client_gssapi_step(struct client_gssapi *g, const uint8_t *in, size_t in_len, const uint8_t **tok, size_t *len,
                       char *err, size_t errlen)
{
    const char *data = NULL;
    unsigned n = 0;
    pthread_mutex_lock(&cyrus_mu);
    int rc = sasl_client_step(g->conn, (const char *)in, (unsigned)in_len, NULL, &data, &n);
    if (rc != SASL_OK && rc != SASL_CONTINUE)
        snprintf(err, errlen, "GSSAPI: %s", sasl_errdetail(g->conn));
    pthread_mutex_unlock(&cyrus_mu);
    *tok = (const uint8_t *)data;
    *len = n;
    return rc == SASL_OK ? 0 : rc == SASL_CONTINUE ? 1 : -1;
}

void client_gssapi_free(struct client_gssapi *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&cyrus_mu);
    sasl_dispose(&g->conn);
    pthread_mutex_unlock(&cyrus_mu);
    free(g);
}

#else

int client_gssapi_start(const char *service, const char *host, struct client_gssapi **out, const uint8_t **tok,
                        size_t *len, char *err, size_t errlen)
{
    (void)service;
    (void)host;
    (void)tok;
    (void)len;
    *out = NULL;
    snprintf(err, errlen, "GSSAPI needs Cyrus SASL (libsasl2), which this build lacks");
    return -1;
}

int client_gssapi_step(struct client_gssapi *g, const uint8_t *in, size_t in_len, const uint8_t **tok, size_t *len,
                       char *err, size_t errlen)
{
    (void)g;
    (void)in;
    (void)in_len;
    (void)tok;
    (void)len;
    snprintf(err, errlen, "GSSAPI needs Cyrus SASL");
    return -1;
}

void client_gssapi_free(struct client_gssapi *g)
{
    (void)g;
}

#endif
