/* The auth-oauth plugin: SASL/OAUTHBEARER (RFC 7628) with JWTs validated
 * as Kafka's broker-side validator does (KIP-768): a signature by a key of
 * a JWK set read from sasl.oauthbearer.jwks.endpoint.url, exp/nbf/iat with
 * clock skew, audience, issuer, the principal from a claim, scopes.
 *
 * Threads: sasl_* run on the broker's request threads and only read the
 * current key set (under keys_lock, shared). The refresh thread, started
 * in init and joined in fini, fetches the set every refresh.ms, or sooner
 * when a request met an unknown kid, and swaps it in. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cairn/plugin.h"
#include "oauth_internal.h"
#include "oauth_source.h"

/* Kafka's answer to an invalid token (OAuthBearerSaslServer). */
#define OAUTH_INVALID_TOKEN "{\"status\":\"invalid_token\"}"
/* What a client reads on a malformed message, as Kafka's authenticator. */
#define OAUTH_FAILED_MESSAGE                                                                                           \
    "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"
#define OAUTH_FETCH_TIMEOUT_MS 10000

struct oauth {
    const struct cairn_host *host;
    const char *url;
    const char *ca_file; /* "" for the system's CAs */
    int64_t refresh_ms;
    int64_t retry_backoff_max_ms;
    int64_t max_token_bytes;
    struct jwt_policy policy; /* now_s is set per check */

    pthread_rwlock_t keys_lock;
    struct jwks *keys; /* NULL until a fetch succeeded */

    pthread_mutex_t lock; /* guards the fields below */
    pthread_cond_t wake;
    bool stopping;
    bool refresh_wanted;
    int64_t last_fetch_ms; /* monotonic, of the last fetch attempt */
    pthread_t thread;

    struct cairn_metric *accepted, *refused, *refreshes, *refresh_failures;
};

/* One exchange. */
struct oauth_session {
    bool error_sent; /* the invalid_token challenge went out; only %x01 may follow */
    char challenge[128];
};

static int64_t mono_ms(const struct oauth *o)
{
    return o->host->monotonic_ns(o->host->ctx) / 1000000;
}

/* Fetches the set and swaps it in; logs the outcome. */
static void refresh_keys(struct oauth *o)
{
    struct jwks *fresh = NULL;
    char err[512] = "";
    if (oauth_source_fetch(o->url, o->ca_file, OAUTH_FETCH_TIMEOUT_MS, &fresh, err, sizeof err) != 0) {
        o->host->log(o->host->ctx, CAIRN_LOG_WARN, "JWKS refresh failed, keeping the keys held: %s", err);
        if (o->refresh_failures)
            o->host->metric_add(o->refresh_failures, 1);
        return;
    }
    pthread_rwlock_wrlock(&o->keys_lock);
    struct jwks *old = o->keys;
    o->keys = fresh;
    pthread_rwlock_unlock(&o->keys_lock);
    jwks_free(old);
    if (o->refreshes)
        o->host->metric_add(o->refreshes, 1);
    o->host->log(o->host->ctx, CAIRN_LOG_DEBUG, "JWKS from %s: %zu keys", o->url, jwks_count(fresh));
}

static void *refresh_thread(void *arg)
{
    struct oauth *o = arg;
    pthread_mutex_lock(&o->lock);
    while (!o->stopping) {
        pthread_rwlock_rdlock(&o->keys_lock);
        bool have_keys = o->keys != NULL;
        pthread_rwlock_unlock(&o->keys_lock);
        /* Without keys, retry at the backoff rather than the refresh period. */
        int64_t period = have_keys ? o->refresh_ms : o->retry_backoff_max_ms;
        int64_t due = o->last_fetch_ms + period;
        if (o->refresh_wanted && o->last_fetch_ms + o->retry_backoff_max_ms < due)
            due = o->last_fetch_ms + o->retry_backoff_max_ms;
        int64_t now = mono_ms(o);
        if (now < due) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t wait = due - now;
            ts.tv_sec += wait / 1000;
            ts.tv_nsec += (wait % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&o->wake, &o->lock, &ts);
            continue;
        }
        o->refresh_wanted = false;
        o->last_fetch_ms = now;
        pthread_mutex_unlock(&o->lock);
        refresh_keys(o);
        pthread_mutex_lock(&o->lock);
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

/* An unknown kid may be a key the issuer just rotated in: ask the refresh
 * thread for the set, at most once per retry backoff. */
static void want_refresh(struct oauth *o)
{
    pthread_mutex_lock(&o->lock);
    o->refresh_wanted = true;
    pthread_cond_signal(&o->wake);
    pthread_mutex_unlock(&o->lock);
}

static int config_str(const struct cairn_host *host, const char *key, const char **out, char *err, size_t errlen)
{
    char why[256] = "";
    if (host->config_string(host->ctx, key, out, why, sizeof why) != CAIRN_OK) {
        snprintf(err, errlen, "config %s: %s", key, why[0] ? why : "not available");
        return CAIRN_ERROR;
    }
    return CAIRN_OK;
}

static int config_num(const struct cairn_host *host, const char *key, int64_t min, int64_t *out, char *err,
                      size_t errlen)
{
    char why[256] = "";
    if (host->config_int(host->ctx, key, out, why, sizeof why) != CAIRN_OK || *out < min) {
        snprintf(err, errlen, "config %s: %s", key, why[0] ? why : "below its minimum");
        return CAIRN_ERROR;
    }
    return CAIRN_OK;
}

static int read_config(struct oauth *o, char *err, size_t errlen)
{
    const struct cairn_host *h = o->host;
    struct jwt_policy *p = &o->policy;
    if (config_str(h, "sasl.oauthbearer.jwks.endpoint.url", &o->url, err, errlen) != CAIRN_OK ||
        config_num(h, "sasl.oauthbearer.jwks.endpoint.refresh.ms", 1000, &o->refresh_ms, err, errlen) != CAIRN_OK ||
        config_num(h, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", 100, &o->retry_backoff_max_ms, err,
                   errlen) != CAIRN_OK ||
        config_num(h, "sasl.oauthbearer.clock.skew.seconds", 0, &p->clock_skew_s, err, errlen) != CAIRN_OK ||
        config_str(h, "sasl.oauthbearer.expected.audience", &p->expected_audience, err, errlen) != CAIRN_OK ||
        config_str(h, "sasl.oauthbearer.expected.issuer", &p->expected_issuer, err, errlen) != CAIRN_OK ||
        config_str(h, "sasl.oauthbearer.sub.claim.name", &p->sub_claim, err, errlen) != CAIRN_OK ||
        config_str(h, "sasl.oauthbearer.scope.claim.name", &p->scope_claim, err, errlen) != CAIRN_OK ||
        config_str(h, "required.scopes", &p->required_scopes, err, errlen) != CAIRN_OK ||
        config_num(h, "max.token.bytes", 64, &o->max_token_bytes, err, errlen) != CAIRN_OK ||
        config_str(h, "ssl.truststore.location", &o->ca_file, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    char why[300];
    if (oauth_source_check(o->url, why, sizeof why) != 0) {
        snprintf(err, errlen, "config sasl.oauthbearer.jwks.endpoint.url: %s", why);
        return CAIRN_ERROR;
    }
    return CAIRN_OK;
}

static void oauth_free(struct oauth *o)
{
    jwks_free(o->keys);
    pthread_rwlock_destroy(&o->keys_lock);
    pthread_mutex_destroy(&o->lock);
    pthread_cond_destroy(&o->wake);
    free(o);
}

static int oauth_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    struct oauth *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    o->host = host;
    pthread_rwlock_init(&o->keys_lock, NULL);
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->wake, NULL);
    if (read_config(o, err, errlen) != CAIRN_OK || oauth_source_global_init(err, errlen) != 0) {
        oauth_free(o);
        return CAIRN_ERROR;
    }
    /* A file must be right at start; an endpoint may be down for a while
     * (the refresh thread retries), as an identity provider can be. */
    char why[512] = "";
    o->last_fetch_ms = mono_ms(o);
    if (oauth_source_fetch(o->url, o->ca_file, OAUTH_FETCH_TIMEOUT_MS, &o->keys, why, sizeof why) != 0) {
        if (strncmp(o->url, "file://", 7) == 0) {
            snprintf(err, errlen, "sasl.oauthbearer.jwks.endpoint.url: %s", why);
            oauth_source_global_cleanup();
            oauth_free(o);
            return CAIRN_ERROR;
        }
        host->log(host->ctx, CAIRN_LOG_WARN, "no JWKS yet, every token is refused until a fetch succeeds: %s", why);
    }
    o->accepted = host->counter(host->ctx, "accepted_tokens_total", "OAUTHBEARER tokens accepted");
    o->refused = host->counter(host->ctx, "refused_tokens_total", "OAUTHBEARER tokens refused");
    o->refreshes = host->counter(host->ctx, "jwks_refreshes_total", "JWK sets fetched and swapped in");
    o->refresh_failures = host->counter(host->ctx, "jwks_refresh_failures_total", "JWK set fetches that failed");
    if (pthread_create(&o->thread, NULL, refresh_thread, o) != 0) {
        snprintf(err, errlen, "cannot start the JWKS refresh thread");
        oauth_source_global_cleanup();
        oauth_free(o);
        return CAIRN_ERROR;
    }
    host->log(host->ctx, CAIRN_LOG_INFO, "OAUTHBEARER with keys from %s (%zu keys, refreshed every %lld ms)", o->url,
              jwks_count(o->keys), (long long)o->refresh_ms);
    *instance = o;
    return CAIRN_OK;
}

static void oauth_fini(void *instance)
{
    struct oauth *o = instance;
    pthread_mutex_lock(&o->lock);
    o->stopping = true;
    pthread_cond_signal(&o->wake);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->thread, NULL);
    oauth_source_global_cleanup();
    oauth_free(o);
}

static int oauth_start(void *instance, const char *mechanism, const struct cairn_request_info *connection,
                       void **session, char *err, size_t errlen)
{
    (void)instance;
    (void)mechanism;
    (void)connection;
    struct oauth_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    *session = s;
    return CAIRN_OK;
}

/* Checks one token; fills principal and the expiry (ms since the epoch).
 * Returns JWT_CLAIMS_OK, or the failure with its reason in why. */
static enum jwt_claims_result validate(struct oauth *o, const char *token, size_t len, char *principal,
                                       size_t principal_len, int64_t *exp_ms, char *why, size_t whylen)
{
    if ((int64_t)len > o->max_token_bytes) {
        snprintf(why, whylen, "the token has %zu bytes, more than max.token.bytes %lld", len,
                 (long long)o->max_token_bytes);
        return JWT_CLAIMS_INVALID;
    }
    struct jwt t;
    if (jwt_parse(token, len, &t, why, whylen) != 0)
        return JWT_CLAIMS_INVALID;
    enum jwt_claims_result rc = JWT_CLAIMS_INVALID;
    if (!jwt_alg_supported(t.alg)) {
        snprintf(why, whylen, "algorithm '%s' is not accepted (only RS*, PS* and ES*)", t.alg);
        goto out;
    }
    pthread_rwlock_rdlock(&o->keys_lock);
    int vr = jwt_verify_with(&t, o->keys, why, whylen);
    pthread_rwlock_unlock(&o->keys_lock);
    if (vr == 1)
        want_refresh(o);
    if (vr != 0)
        goto out;
    struct jwt_policy p = o->policy;
    int64_t now_ms = o->host->wall_clock_ms(o->host->ctx);
    p.now_s = now_ms / 1000;
    int64_t exp_s = 0;
    rc = jwt_check_claims(&t, &p, principal, principal_len, &exp_s, why, whylen);
    *exp_ms = exp_s * 1000;
out:
    jwt_free(&t);
    return rc;
}

static int oauth_step(void *instance, void *session, const uint8_t *in, size_t in_len, struct cairn_bytes_out *out,
                      struct cairn_principal_out *principal, char *err, size_t errlen)
{
    struct oauth *o = instance;
    struct oauth_session *s = session;
    out->data = NULL;
    out->len = 0;
    if (s->error_sent) {
        /* RFC 7628 3.2.3: the client answers the error challenge with a
         * lone %x01; the exchange then fails with the challenge as message. */
        snprintf(err, errlen, "%s", in_len == 1 && in[0] == 0x01 ? s->challenge : OAUTH_FAILED_MESSAGE);
        return CAIRN_SASL_FAILED;
    }
    struct oauth_client_message msg;
    char why[512] = "";
    if ((int64_t)in_len > o->max_token_bytes + 1024) {
        snprintf(why, sizeof why, "a message of %zu bytes, more than max.token.bytes allows", in_len);
        goto malformed;
    }
    if (oauth_client_message_parse(in, in_len, &msg, why, sizeof why) != 0)
        goto malformed;
    char name[sizeof principal->name];
    int64_t exp_ms = 0;
    enum jwt_claims_result rc = validate(o, msg.token, msg.token_len, name, sizeof name, &exp_ms, why, sizeof why);
    if (rc != JWT_CLAIMS_OK) {
        o->host->log(o->host->ctx, CAIRN_LOG_INFO, "OAUTHBEARER token refused: %s", why);
        if (o->refused)
            o->host->metric_add(o->refused, 1);
        if (rc == JWT_CLAIMS_SCOPE)
            snprintf(s->challenge, sizeof s->challenge, "{\"status\":\"insufficient_scope\", \"scope\":\"%.60s\"}",
                     o->policy.required_scopes);
        else
            snprintf(s->challenge, sizeof s->challenge, "%s", OAUTH_INVALID_TOKEN);
        s->error_sent = true;
        out->data = (const uint8_t *)s->challenge;
        out->len = strlen(s->challenge);
        /* Refused now, with the challenge still owed to the client: the
         * broker audits the refusal at once (why is its reason) rather
         * than when, or if, the client answers with %x01. */
        snprintf(err, errlen, "OAUTHBEARER token refused: %s", why);
        return CAIRN_SASL_FAILED;
    }
    if (msg.authzid_len > 0 && (msg.authzid_len != strlen(name) || memcmp(msg.authzid, name, msg.authzid_len) != 0)) {
        snprintf(err, errlen,
                 "Authentication failed: Client requested an authorization id (%.*s) that is different from the "
                 "token's principal name (%s)",
                 (int)(msg.authzid_len > 200 ? 200 : msg.authzid_len), msg.authzid, name);
        snprintf(principal->type, sizeof principal->type, "User");
        snprintf(principal->name, sizeof principal->name, "%s", name);
        if (o->refused)
            o->host->metric_add(o->refused, 1);
        return CAIRN_SASL_FAILED;
    }
    if (o->accepted)
        o->host->metric_add(o->accepted, 1);
    snprintf(principal->type, sizeof principal->type, "User");
    snprintf(principal->name, sizeof principal->name, "%s", name);
    /* The session ends when the token does (KIP-368); the broker caps it
     * with connections.max.reauth.ms. */
    int64_t left = exp_ms - o->host->wall_clock_ms(o->host->ctx);
    principal->session_lifetime_ms = left > 0 ? left : 1;
    return CAIRN_SASL_DONE;
malformed:
    o->host->log(o->host->ctx, CAIRN_LOG_INFO, "OAUTHBEARER message refused: %s", why);
    if (o->refused)
        o->host->metric_add(o->refused, 1);
    snprintf(err, errlen, "%s", OAUTH_FAILED_MESSAGE);
    return CAIRN_SASL_FAILED;
}

static void oauth_end(void *instance, void *session)
{
    (void)instance;
    free(session);
}

#define OAUTH_KEY(var, key, kind, def, text)                                                                           \
    static const struct cairn_config_key var = {                                                                       \
        .struct_size = sizeof(struct cairn_config_key),                                                                \
        .name = key,                                                                                                   \
        .type = kind,                                                                                                  \
        .default_value = def,                                                                                          \
        .doc = text,                                                                                                   \
    }

OAUTH_KEY(key_url, "sasl.oauthbearer.jwks.endpoint.url", CAIRN_CONFIG_STRING, NULL,
          "The JWK set: a file:// path or an http(s):// URL (Kafka's name; required).");
OAUTH_KEY(key_refresh, "sasl.oauthbearer.jwks.endpoint.refresh.ms", CAIRN_CONFIG_INT, "3600000",
          "How often the JWK set is fetched again.");
OAUTH_KEY(key_backoff, "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", CAIRN_CONFIG_INT, "10000",
          "Least time between fetches asked for by an unknown kid, and the retry period while no set is held.");
OAUTH_KEY(key_skew, "sasl.oauthbearer.clock.skew.seconds", CAIRN_CONFIG_INT, "30",
          "Seconds of clock difference allowed for exp, nbf and iat.");
OAUTH_KEY(key_aud, "sasl.oauthbearer.expected.audience", CAIRN_CONFIG_STRING, "",
          "Comma-separated audiences, one of which the token's aud must name; empty accepts any.");
OAUTH_KEY(key_iss, "sasl.oauthbearer.expected.issuer", CAIRN_CONFIG_STRING, "",
          "The iss the token must have; empty accepts any.");
OAUTH_KEY(key_sub, "sasl.oauthbearer.sub.claim.name", CAIRN_CONFIG_STRING, "sub",
          "The claim that names the principal (User:<value>).");
OAUTH_KEY(key_scope, "sasl.oauthbearer.scope.claim.name", CAIRN_CONFIG_STRING, "scope",
          "The claim that holds the token's scopes (a space-separated string or an array).");
OAUTH_KEY(key_required, "required.scopes", CAIRN_CONFIG_STRING, "",
          "Scopes every token must have (comma- or space-separated); empty requires none.");
OAUTH_KEY(key_max, "max.token.bytes", CAIRN_CONFIG_INT, "65536", "Largest token accepted.");
OAUTH_KEY(key_truststore, "ssl.truststore.location", CAIRN_CONFIG_STRING, "",
          "PEM file of the CA certificates an https:// JWKS endpoint's certificate must chain to; empty trusts the "
          "system's CAs (Kafka's JAAS option for the OAuth HTTPS client).");

static const struct cairn_config_key *const oauth_config_keys[] = {
    &key_url, &key_refresh, &key_backoff,  &key_skew, &key_aud,        &key_iss,
    &key_sub, &key_scope,   &key_required, &key_max,  &key_truststore,
};

static const char *const oauth_mechanisms[] = {"OAUTHBEARER", NULL};

static const struct cairn_authn_vtable oauth_vtable = {
    .struct_size = sizeof(struct cairn_authn_vtable),
    .sasl_mechanisms = oauth_mechanisms,
    .sasl_start = oauth_start,
    .sasl_step = oauth_step,
    .sasl_end = oauth_end,
};

static const struct cairn_plugin_descriptor oauth_descriptor = {
    .struct_size = sizeof(struct cairn_plugin_descriptor),
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "auth-oauth",
    .version = "1.0.0",
    .description = "SASL/OAUTHBEARER with JWTs checked against a JWK set",
    .capabilities = CAIRN_CAP_AUTHENTICATION,
    .config_keys = oauth_config_keys,
    .config_key_count = sizeof(oauth_config_keys) / sizeof(oauth_config_keys[0]),
    .init = oauth_init,
    .fini = oauth_fini,
    .authentication = &oauth_vtable,
};

CAIRN_PLUGIN_DEFINE(oauth_descriptor)
