/* A TLS listener's settings and its swappable OpenSSL context. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "tls/tls_internal.h"
#include "util/logger.h"

static const char *const key_names[TLS_KEY_COUNT] = {
    [TLS_KEYSTORE_TYPE] = "ssl.keystore.type",
    [TLS_KEYSTORE_LOCATION] = "ssl.keystore.location",
    [TLS_KEYSTORE_CERTIFICATE_CHAIN] = "ssl.keystore.certificate.chain",
    [TLS_KEYSTORE_KEY] = "ssl.keystore.key",
    [TLS_KEY_PASSWORD] = "ssl.key.password",
    [TLS_TRUSTSTORE_TYPE] = "ssl.truststore.type",
    [TLS_TRUSTSTORE_LOCATION] = "ssl.truststore.location",
    [TLS_TRUSTSTORE_CERTIFICATES] = "ssl.truststore.certificates",
    [TLS_CLIENT_AUTH] = "ssl.client.auth",
    [TLS_ENABLED_PROTOCOLS] = "ssl.enabled.protocols",
    [TLS_CIPHER_SUITES] = "ssl.cipher.suites",
    [TLS_ENDPOINT_IDENTIFICATION] = "ssl.endpoint.identification.algorithm",
    [TLS_CRL_LOCATION] = "ssl.crl.location",
};

const char *tls_key_name(enum tls_key key)
{
    return key < TLS_KEY_COUNT ? key_names[key] : "?";
}

static int settings_put(struct tls_settings *s, enum tls_key key, const char *source, const char *value)
{
    free(s->value[key]);
    free(s->source[key]);
    s->value[key] = value ? strdup(value) : NULL;
    s->source[key] = strdup(source);
    return (value && !s->value[key]) || !s->source[key] ? -1 : 0;
}

int tls_settings_set(struct tls_settings *s, enum tls_key key, const char *value)
{
    return settings_put(s, key, key_names[key], value);
}

void tls_settings_clear(struct tls_settings *s)
{
    for (int i = 0; i < TLS_KEY_COUNT; i++) {
        free(s->value[i]);
        free(s->source[i]);
    }
    memset(s, 0, sizeof *s);
}

int tls_settings_from_config(const struct broker_config *cfg, const char *listener_name, struct tls_settings *s)
{
    memset(s, 0, sizeof *s);
    /* Kafka's per-listener prefix uses the listener name in lower case. */
    char prefix[96];
    int n = snprintf(prefix, sizeof prefix, "listener.name.%s.", listener_name);
    for (int i = 14; i < n; i++)
        prefix[i] = (char)tolower((unsigned char)prefix[i]);
    struct config_kv *overrides = NULL;
    size_t count = 0;
    if (config_keys_with_prefix(cfg, prefix, &overrides, &count) != 0)
        return -1;
    int rc = 0;
    for (int k = 0; k < TLS_KEY_COUNT && rc == 0; k++) {
        const char *value = config_has_value(cfg, key_names[k]) ? config_get_string(cfg, key_names[k]) : NULL;
        const char *source = key_names[k];
        for (size_t i = 0; i < count; i++) {
            if (strcmp(overrides[i].key + strlen(prefix), key_names[k]) == 0) {
                value = overrides[i].value;
                source = overrides[i].key;
            }
        }
        /* Empty means unset, except for endpoint identification, where
         * Kafka's empty value turns the host name check off. */
        if (k == TLS_ENDPOINT_IDENTIFICATION) {
            if (!value)
                value = config_get_string(cfg, key_names[k]);
        } else if (value && !*value) {
            value = NULL;
        }
        rc = settings_put(s, (enum tls_key)k, source, value);
    }
    free(overrides);
    s->handshake_timeout_ms = config_get_long(cfg, "ssl.handshake.timeout.ms");
    if (rc != 0)
        tls_settings_clear(s);
    return rc;
}

int tls_settings_copy(struct tls_settings *dst, const struct tls_settings *src)
{
    memset(dst, 0, sizeof *dst);
    for (int k = 0; k < TLS_KEY_COUNT; k++)
        if (src->source[k] && settings_put(dst, (enum tls_key)k, src->source[k], src->value[k]) != 0) {
            tls_settings_clear(dst);
            return -1;
        }
    dst->handshake_timeout_ms = src->handshake_timeout_ms;
    return 0;
}

int tls_listener_create(const char *listener_name, const struct tls_settings *s, tls_principal_fn map_principal,
                        void *map_ctx, struct tls_listener **out, char *err, size_t errlen)
{
    *out = NULL;
    struct tls_listener *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(l->name, sizeof l->name, "%s", listener_name);
    if (tls_settings_copy(&l->settings, s) != 0) {
        free(l);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    l->handshake_timeout_ms = s->handshake_timeout_ms;
    l->map_principal = map_principal;
    l->map_ctx = map_ctx;
    char why[768];
    l->ctx = tls_context_build(&l->settings, why, sizeof why);
    if (!l->ctx) {
        snprintf(err, errlen, "listener %s: %s", listener_name, why);
        tls_settings_clear(&l->settings);
        free(l);
        return -1;
    }
    pthread_mutex_init(&l->mutex, NULL);
    pthread_mutex_init(&l->rebuild, NULL);
    *out = l;
    return 0;
}

/* Makes fresh the listener's context; the caller holds rebuild. Connections
 * that started on the old one keep their own references to it. */
static void swap_context(struct tls_listener *l, SSL_CTX *fresh)
{
    pthread_mutex_lock(&l->mutex);
    SSL_CTX *old = l->ctx;
    l->ctx = fresh;
    pthread_mutex_unlock(&l->mutex);
    SSL_CTX_free(old);
}

int tls_listener_reload(struct tls_listener *l, char *err, size_t errlen)
{
    char why[768];
    pthread_mutex_lock(&l->rebuild);
    SSL_CTX *fresh = tls_context_build(&l->settings, why, sizeof why);
    if (fresh)
        swap_context(l, fresh);
    pthread_mutex_unlock(&l->rebuild);
    if (!fresh) {
        snprintf(err, errlen, "listener %s: %s", l->name, why);
        return -1;
    }
    logger_info(TLS_LOG, "listener %s: TLS certificates and keys reloaded", l->name);
    return 0;
}

bool tls_settings_equal(const struct tls_settings *a, const struct tls_settings *b)
{
    for (int k = 0; k < TLS_KEY_COUNT; k++) {
        const char *x = a->value[k], *y = b->value[k];
        if ((x == NULL) != (y == NULL) || (x && strcmp(x, y) != 0))
            return false;
    }
    return true;
}

int tls_listener_check(struct tls_listener *l, const struct tls_settings *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&l->rebuild);
    bool unchanged = tls_settings_equal(&l->settings, s);
    pthread_mutex_unlock(&l->rebuild);
    if (unchanged)
        return 0;
    char why[768];
    SSL_CTX *probe = tls_context_build(s, why, sizeof why);
    if (!probe) {
        snprintf(err, errlen, "listener %s: %s", l->name, why);
        return -1;
    }
    SSL_CTX_free(probe);
    return 0;
}

int tls_listener_update(struct tls_listener *l, const struct tls_settings *s, char *err, size_t errlen)
{
    struct tls_settings copy;
    if (tls_settings_copy(&copy, s) != 0) {
        snprintf(err, errlen, "listener %s: out of memory", l->name);
        return -1;
    }
    pthread_mutex_lock(&l->rebuild);
    if (tls_settings_equal(&l->settings, &copy)) {
        pthread_mutex_unlock(&l->rebuild);
        tls_settings_clear(&copy);
        return 0;
    }
    char why[768];
    SSL_CTX *fresh = tls_context_build(&copy, why, sizeof why);
    if (fresh) {
        swap_context(l, fresh);
        /* A later SIGHUP re-reads these files, not the start-up ones. */
        struct tls_settings old = l->settings;
        l->settings = copy;
        copy = old;
    }
    pthread_mutex_unlock(&l->rebuild);
    tls_settings_clear(&copy);
    if (!fresh) {
        snprintf(err, errlen, "listener %s: %s", l->name, why);
        return -1;
    }
    logger_info(TLS_LOG, "listener %s: new TLS settings applied; new connections use them", l->name);
    return 1;
}

const char *tls_listener_name(const struct tls_listener *l)
{
    return l->name;
}

void tls_listener_set_refusal_hook(struct tls_listener *l, tls_refusal_fn fn, void *ctx)
{
    l->on_refusal = fn;
    l->refusal_ctx = ctx;
}

void tls_listener_free(struct tls_listener *l)
{
    if (!l)
        return;
    SSL_CTX_free(l->ctx);
    pthread_mutex_destroy(&l->mutex);
    pthread_mutex_destroy(&l->rebuild);
    tls_settings_clear(&l->settings);
    free(l);
}
