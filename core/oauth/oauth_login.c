/* The links' OAuth client-credentials login; see oauth_login.h. */
#include "oauth/oauth_login.h"

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/logger.h"

#define ANSWER_MAX (1 << 20) /* a token endpoint's answer larger than this is refused */
#define FIELD_MAX 1024

/* Owned by the main thread (start/stop); token, expiry, last_error and
 * attempted are guarded by mu, the rest is read-only while the thread runs. */
struct oauth_login {
    struct oauth_login *next; /* in the registry, under registry_mu */
    int refs;                 /* under registry_mu */
    struct oauth_login_settings s;
    char link[32], url[FIELD_MAX], client_id[FIELD_MAX], client_secret[FIELD_MAX], scope[FIELD_MAX];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* stopping, or the first attempt done */
    bool stopping, attempted;
    char *token;
    int64_t expiry_ms; /* Unix ms */
    char last_error[400];
};

/* The logins running in this process: links with the same settings share
 * one (a combined node opens its controller link twice, for the quorum and
 * for the broker), so one token request serves both. */
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static struct oauth_login *registry;

struct answer {
    char *data;
    size_t len;
    bool too_large;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct answer *a = arg;
    size_t n = size * nmemb;
    if (a->len + n > ANSWER_MAX) {
        a->too_large = true;
        return 0;
    }
    char *grown = realloc(a->data, a->len + n + 1);
    if (!grown)
        return 0;
    a->data = grown;
    memcpy(a->data + a->len, ptr, n);
    a->len += n;
    a->data[a->len] = '\0';
    return n;
}

/* "Basic base64(urlencode(id):urlencode(secret))", as Kafka's
 * HttpAccessTokenRetriever builds it; NULL when out of memory. */
static char *basic_header(CURL *curl, const char *id, const char *secret)
{
    char *eid = curl_easy_escape(curl, id, 0), *esecret = curl_easy_escape(curl, secret, 0);
    char *pair = NULL, *header = NULL;
    size_t plen = eid && esecret ? strlen(eid) + strlen(esecret) + 2 : 0;
    if (plen && (pair = malloc(plen)) && (header = malloc(sizeof "Authorization: Basic " + 4 * plen / 3 + 4))) {
        snprintf(pair, plen, "%s:%s", eid, esecret);
        int n = snprintf(header, sizeof "Authorization: Basic ", "Authorization: Basic ");
        EVP_EncodeBlock((unsigned char *)header + n, (const unsigned char *)pair, (int)strlen(pair));
    }
    if (pair)
        OPENSSL_cleanse(pair, strlen(pair));
    if (esecret)
        OPENSSL_cleanse(esecret, strlen(esecret));
    free(pair);
    curl_free(eid);
    curl_free(esecret);
    return header;
}

/* What a refusal says: the RFC 6749 error and description when the body
 * is such JSON, else the start of the body. */
static void describe_refusal(long status, const struct answer *a, char *err, size_t errlen)
{
    json_t *root = a->data ? json_loads(a->data, 0, NULL) : NULL;
    const char *code = root ? json_string_value(json_object_get(root, "error")) : NULL;
    const char *desc = root ? json_string_value(json_object_get(root, "error_description")) : NULL;
    if (code)
        snprintf(err, errlen, "HTTP %ld: %.100s%s%.200s%s", status, code, desc ? " (" : "", desc ? desc : "",
                 desc ? ")" : "");
    else
        snprintf(err, errlen, "HTTP %ld: %.200s", status, a->data ? a->data : "(no body)");
    json_decref(root);
}

/* The access token and its expiry from a 2xx answer; NULL with err. */
static char *read_token(const struct answer *a, int64_t now_ms, int64_t *expiry_ms, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = a->data ? json_loads(a->data, 0, &jerr) : NULL;
    const char *token = root ? json_string_value(json_object_get(root, "access_token")) : NULL;
    char *copy = NULL;
    if (!root) {
        snprintf(err, errlen, "the answer is not JSON: %.200s", a->data ? a->data : "(no body)");
    } else if (!token || !*token) {
        snprintf(err, errlen, "the answer has no access_token");
    } else if (oauth_token_expiry_ms(token, expiry_ms) != 0) {
        /* Not a JWT with exp: the answer's expires_in, as RFC 6749 sends it. */
        json_t *in = json_object_get(root, "expires_in");
        if (json_is_integer(in) && json_integer_value(in) > 0) {
            *expiry_ms = now_ms + (int64_t)json_integer_value(in) * 1000;
            copy = strdup(token);
        } else {
            snprintf(err, errlen, "the access token is not a JWT with an exp claim and the answer has no expires_in");
        }
    } else if (*expiry_ms <= now_ms) {
        snprintf(err, errlen, "the access token expired already (exp %lld s, now %lld s)",
                 (long long)(*expiry_ms / 1000), (long long)(now_ms / 1000));
    } else {
        copy = strdup(token);
    }
    if (token && !copy && !err[0])
        snprintf(err, errlen, "out of memory");
    json_decref(root);
    return copy;
}

/* One client-credentials request; the token, or NULL with err. */
static char *request_token(struct oauth_login *l, int64_t *expiry_ms, char *err, size_t errlen)
{
    err[0] = '\0';
    CURL *curl = curl_easy_init();
    if (!curl) {
        snprintf(err, errlen, "curl_easy_init failed");
        return NULL;
    }
    char *body = NULL, *auth = basic_header(curl, l->client_id, l->client_secret);
    char *escope = l->scope[0] ? curl_easy_escape(curl, l->scope, 0) : NULL;
    size_t blen = sizeof "grant_type=client_credentials&scope=" + (escope ? strlen(escope) : 0);
    struct curl_slist *headers = NULL, *h = NULL;
    struct answer a = {0};
    char *token = NULL;
    if (auth && (body = malloc(blen)) && (h = curl_slist_append(NULL, auth)) && (headers = h) &&
        (h = curl_slist_append(headers, "Content-Type: application/x-www-form-urlencoded")) &&
        (h = curl_slist_append(headers, "Accept: application/json"))) {
        snprintf(body, blen, "grant_type=client_credentials%s%s", escope ? "&scope=" : "", escope ? escope : "");
        char curl_err[CURL_ERROR_SIZE] = "";
        curl_easy_setopt(curl, CURLOPT_URL, l->url);
        curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)l->s.connect_timeout_ms);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)(l->s.connect_timeout_ms + l->s.read_timeout_ms));
        curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_err);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);
        CURLcode rc = curl_easy_perform(curl);
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK)
            snprintf(err, errlen, "%s",
                     a.too_large   ? "the answer is larger than 1 MiB"
                     : curl_err[0] ? curl_err
                                   : curl_easy_strerror(rc));
        else if (status < 200 || status > 299)
            describe_refusal(status, &a, err, errlen);
        else
            token = read_token(&a, clock_wall_ms(), expiry_ms, err, errlen);
    } else {
        snprintf(err, errlen, "out of memory");
    }
    if (a.data)
        OPENSSL_cleanse(a.data, a.len);
    free(a.data);
    curl_slist_free_all(headers);
    if (auth)
        OPENSSL_cleanse(auth, strlen(auth));
    free(auth);
    free(body);
    curl_free(escope);
    curl_easy_cleanup(curl);
    return token;
}

int64_t oauth_login_refresh_at(const struct oauth_login_settings *s, int64_t start_ms, int64_t expiry_ms,
                               double random01)
{
    int64_t lifetime = expiry_ms - start_ms;
    int64_t at = start_ms +
                 (int64_t)((double)lifetime * (s->refresh_window_factor + s->refresh_window_jitter * random01));
    if (s->refresh_min_period_ms + s->refresh_buffer_ms > lifetime)
        return at;
    if (at > expiry_ms - s->refresh_buffer_ms)
        at = expiry_ms - s->refresh_buffer_ms;
    if (at < start_ms + s->refresh_min_period_ms)
        at = start_ms + s->refresh_min_period_ms;
    return at;
}

/* base64url without padding -> bytes; -1 when malformed. */
static long b64url_decode(const char *in, size_t len, unsigned char *out, size_t cap)
{
    char *std = malloc(len + 4);
    if (!std || (len + 3) / 4 * 3 > cap) {
        free(std);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        std[n++] = in[i] == '-' ? '+' : in[i] == '_' ? '/' : in[i];
    size_t pad = (4 - n % 4) % 4;
    for (size_t i = 0; i < pad; i++)
        std[n++] = '=';
    int got = pad == 3 ? -1 : EVP_DecodeBlock(out, (const unsigned char *)std, (int)n);
    free(std);
    return got < 0 ? -1 : got - (long)pad;
}

int oauth_token_expiry_ms(const char *token, int64_t *expiry_ms)
{
    const char *dot1 = strchr(token, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2 || dot2 - dot1 - 1 > 65536)
        return -1;
    size_t len = (size_t)(dot2 - dot1 - 1);
    unsigned char *payload = malloc(len + 4);
    long n = payload ? b64url_decode(dot1 + 1, len, payload, len + 4) : -1;
    json_t *claims = n > 0 ? json_loadb((const char *)payload, (size_t)n, 0, NULL) : NULL;
    json_t *exp = claims ? json_object_get(claims, "exp") : NULL;
    int rc = -1;
    if (json_is_number(exp) && json_number_value(exp) > 0 && json_number_value(exp) < 1e13) {
        *expiry_ms = (int64_t)(json_number_value(exp) * 1000);
        rc = 0;
    }
    json_decref(claims);
    free(payload);
    return rc;
}

/* Sleeps up to ms or until stopping; true when stopping. Holds mu. */
static bool wait_ms(struct oauth_login *l, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (!l->stopping && pthread_cond_timedwait(&l->cond, &l->mu, &until) == 0)
        ;
    return l->stopping;
}

static void *login_main(void *arg)
{
    struct oauth_login *l = arg;
    uint32_t failures = 0;
    int64_t backoff = l->s.retry_backoff_ms;
    pthread_mutex_lock(&l->mu);
    while (!l->stopping) {
        pthread_mutex_unlock(&l->mu);
        char err[sizeof l->last_error];
        int64_t expiry = 0, start = clock_wall_ms();
        char *token = request_token(l, &expiry, err, sizeof err);
        int64_t wait;
        if (token) {
            /* The jitter spreads the refreshes of many nodes; rand() would be the same in each. */
            uint32_t r = 0;
            if (RAND_bytes((unsigned char *)&r, sizeof r) != 1)
                r = (uint32_t)start;
            int64_t at = oauth_login_refresh_at(&l->s, start, expiry, (double)r / 4294967296.0);
            wait = at > start ? at - start : 0;
            if (wait < l->s.retry_backoff_ms) /* a token about to expire must not make a busy loop */
                wait = l->s.retry_backoff_ms;
            logger_info("oauth", "%s link: got an access token for client %s from %s, valid %lld s, next one in %lld s",
                        l->link, l->client_id, l->url, (long long)((expiry - start) / 1000), (long long)(wait / 1000));
            failures = 0;
            backoff = l->s.retry_backoff_ms;
        } else {
            failures++;
            /* Logged at 1, 2, 4, 8... failures in a row: a wrong secret retried would flood. */
            if ((failures & (failures - 1)) == 0)
                logger_warn("oauth",
                            "%s link: the token endpoint %s did not give client %s an access token: %s (%u failed "
                            "in a row)",
                            l->link, l->url, l->client_id, err, failures);
            wait = backoff;
            backoff = backoff * 2 > l->s.retry_backoff_max_ms ? l->s.retry_backoff_max_ms : backoff * 2;
        }
        pthread_mutex_lock(&l->mu);
        if (token) {
            if (l->token)
                OPENSSL_cleanse(l->token, strlen(l->token));
            free(l->token);
            l->token = token;
            l->expiry_ms = expiry;
            l->last_error[0] = '\0';
        } else {
            snprintf(l->last_error, sizeof l->last_error, "%s", err);
        }
        l->attempted = true;
        pthread_cond_broadcast(&l->cond);
        wait_ms(l, wait);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static struct oauth_login *login_new(const struct oauth_login_settings *s, char *err, size_t errlen)
{
    /* Thread-safe in libcurl 7.84+; called on the main thread anyway. */
    CURLcode crc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (crc != CURLE_OK) {
        snprintf(err, errlen, "curl_global_init: %s", curl_easy_strerror(crc));
        return NULL;
    }
    struct oauth_login *l = calloc(1, sizeof *l);
    if (!l) {
        curl_global_cleanup();
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->s = *s;
    snprintf(l->link, sizeof l->link, "%s", s->link);
    snprintf(l->url, sizeof l->url, "%s", s->token_endpoint_url);
    snprintf(l->client_id, sizeof l->client_id, "%s", s->client_id);
    snprintf(l->client_secret, sizeof l->client_secret, "%s", s->client_secret);
    snprintf(l->scope, sizeof l->scope, "%s", s->scope ? s->scope : "");
    l->s.link = l->link;
    l->s.token_endpoint_url = l->url;
    l->s.client_id = l->client_id;
    l->s.client_secret = l->client_secret;
    l->s.scope = l->scope;
    snprintf(l->last_error, sizeof l->last_error, "no answer from the token endpoint yet");
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&l->mu, NULL);
    if (pthread_create(&l->thread, NULL, login_main, l) != 0) {
        snprintf(err, errlen, "cannot start the OAuth login thread");
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->mu);
        OPENSSL_cleanse(l, sizeof *l);
        free(l);
        curl_global_cleanup();
        return NULL;
    }
    /* A few seconds at most: an endpoint that is down must not hold up the start. */
    int64_t wait = s->connect_timeout_ms + s->read_timeout_ms;
    int64_t deadline = clock_mono_ms() + (wait < 5000 ? wait : 5000);
    pthread_mutex_lock(&l->mu);
    while (!l->attempted && clock_mono_ms() < deadline)
        wait_ms(l, 100);
    pthread_mutex_unlock(&l->mu);
    return l;
}

int oauth_login_token(struct oauth_login *l, char **token, char *err, size_t errlen)
{
    *token = NULL;
    pthread_mutex_lock(&l->mu);
    int64_t now = clock_wall_ms();
    if (l->token && l->expiry_ms > now) {
        *token = strdup(l->token);
        if (!*token)
            snprintf(err, errlen, "out of memory");
    } else if (l->token) {
        snprintf(err, errlen, "the access token from %s expired %lld s ago and no new one came: %s", l->url,
                 (long long)((now - l->expiry_ms) / 1000), l->last_error);
    } else {
        snprintf(err, errlen, "no access token from %s: %s", l->url, l->last_error);
    }
    pthread_mutex_unlock(&l->mu);
    return *token ? 0 : -1;
}

static void login_free(struct oauth_login *l)
{
    pthread_mutex_lock(&l->mu);
    l->stopping = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->mu);
    if (l->token)
        OPENSSL_cleanse(l->token, strlen(l->token));
    free(l->token);
    OPENSSL_cleanse(l, sizeof *l);
    free(l);
    curl_global_cleanup();
}

static bool same_settings(const struct oauth_login_settings *a, const struct oauth_login_settings *b)
{
    return strcmp(a->link, b->link) == 0 && strcmp(a->token_endpoint_url, b->token_endpoint_url) == 0 &&
           strcmp(a->client_id, b->client_id) == 0 && strcmp(a->client_secret, b->client_secret) == 0 &&
           strcmp(a->scope ? a->scope : "", b->scope ? b->scope : "") == 0 &&
           a->refresh_window_factor == b->refresh_window_factor &&
           a->refresh_window_jitter == b->refresh_window_jitter &&
           a->refresh_min_period_ms == b->refresh_min_period_ms && a->refresh_buffer_ms == b->refresh_buffer_ms &&
           a->connect_timeout_ms == b->connect_timeout_ms && a->read_timeout_ms == b->read_timeout_ms &&
           a->retry_backoff_ms == b->retry_backoff_ms && a->retry_backoff_max_ms == b->retry_backoff_max_ms;
}

struct oauth_login *oauth_login_start(const struct oauth_login_settings *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&registry_mu);
    struct oauth_login *l = registry;
    while (l && !same_settings(&l->s, s))
        l = l->next;
    if (!l && (l = login_new(s, err, errlen)) != NULL) {
        l->next = registry;
        registry = l;
    }
    if (l)
        l->refs++;
    pthread_mutex_unlock(&registry_mu);
    return l;
}

void oauth_login_stop(struct oauth_login *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&registry_mu);
    bool last = --l->refs == 0;
    if (last) {
        struct oauth_login **p = &registry;
        while (*p != l)
            p = &(*p)->next;
        *p = l->next;
    }
    pthread_mutex_unlock(&registry_mu);
    if (last)
        login_free(l);
}
