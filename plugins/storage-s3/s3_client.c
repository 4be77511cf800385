/* Signed S3 requests over libcurl: one CURL handle per calling thread, kept
 * between calls so connections are reused; retries with exponential
 * backoff and full jitter on 5xx, 429/SlowDown, RequestTimeout and
 * transport failures, bounded by attempts and by total time. */
#include "s3_internal.h"
#include "s3_sigv4.h"

#include <curl/curl.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Error documents are short; a larger one is cut, not grown without end. */
#define S3_MAX_ERROR_BODY (64 * 1024)
/* Non-sink 2xx bodies (multipart answers) are small XML documents. */
#define S3_MAX_XML_BODY (4 * 1024 * 1024)

/* One attempt's state, on the caller's stack. */
struct s3_transfer {
    const struct s3_request *req;
    CURL *curl;
    struct s3_response *resp;
    int64_t delivered; /* bytes given to the sink, over every attempt */
    int sink_rc;       /* the sink's refusal, which ends the call */
    bool overflow;
    bool resumed; /* sent a Range: only 206 is the answer to it; a 200 would repeat bytes */
    int64_t attempt_bytes; /* body bytes of this attempt given to the sink */
    int64_t expected_bytes; /* from Content-Range or Content-Length; -1 unknown */
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

bool s3_xml_value(const char *xml, const char *tag, char *out, size_t outlen)
{
    char open[64], close[64];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *start = xml ? strstr(xml, open) : NULL;
    if (!start)
        return false;
    start += strlen(open);
    const char *end = strstr(start, close);
    if (!end || outlen == 0)
        return false;
    size_t n = (size_t)(end - start);
    if (n >= outlen)
        n = outlen - 1;
    memcpy(out, start, n);
    out[n] = '\0';
    return true;
}

void s3_response_free(struct s3_response *resp)
{
    if (!resp)
        return;
    free(resp->body);
    resp->body = NULL;
    resp->body_len = 0;
}

static bool append_body(struct s3_response *resp, const char *data, size_t len, size_t limit)
{
    if (resp->body_len + len > limit)
        return false;
    char *grown = realloc(resp->body, resp->body_len + len + 1);
    if (!grown)
        return false;
    memcpy(grown + resp->body_len, data, len);
    resp->body = grown;
    resp->body_len += len;
    resp->body[resp->body_len] = '\0';
    return true;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct s3_transfer *t = arg;
    size_t len = size * nmemb;
    long status = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
    bool success = status >= 200 && status < 300;
    if (success && t->req->sink) {
        if (status != 206 && t->resumed) {
            t->sink_rc = CAIRN_ERROR; /* the store ignored Range; never hand on repeated bytes */
            return 0;
        }
        int rc = t->req->sink->write(t->req->sink->ctx, (const uint8_t *)data, len);
        if (rc != CAIRN_OK) {
            t->sink_rc = rc;
            return 0; /* aborts the transfer */
        }
        t->delivered += (int64_t)len;
        t->attempt_bytes += (int64_t)len;
        return len;
    }
    size_t limit = success ? S3_MAX_XML_BODY : S3_MAX_ERROR_BODY;
    if (!append_body(t->resp, data, len, limit))
        t->overflow = true; /* keep reading; the start of an error document says enough */
    if (success && t->overflow)
        return 0;
    return len;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    struct s3_transfer *t = arg;
    size_t len = size * nmemb;
    char line[256];
    size_t n_line = len < sizeof(line) - 1 ? len : sizeof(line) - 1;
    memcpy(line, data, n_line);
    line[n_line] = '\0';
    long long first, last, total;
    if (strncmp(line, "HTTP/", 5) == 0) {
        t->expected_bytes = -1; /* a new response (after a 1xx) */
    } else if (strncasecmp(line, "Content-Range:", 14) == 0 &&
               sscanf(line + 14, " bytes %lld-%lld/%lld", &first, &last, &total) >= 2) {
        t->expected_bytes = last - first + 1;
    } else if (strncasecmp(line, "Content-Length:", 15) == 0 && t->expected_bytes < 0 &&
               sscanf(line + 15, " %lld", &total) == 1) {
        t->expected_bytes = total;
    }
    if (len > 5 && strncasecmp(data, "ETag:", 5) == 0) {
        const char *v = data + 5;
        size_t n = len - 5;
        while (n > 0 && (*v == ' ' || *v == '\t')) {
            v++;
            n--;
        }
        while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
            n--;
        if (n < sizeof(t->resp->etag)) {
            memcpy(t->resp->etag, v, n);
            t->resp->etag[n] = '\0';
        }
    }
    return len;
}

/* The calling thread's handle, created on first use and listed for fini. */
static CURL *thread_handle(struct s3_client *client)
{
    CURL *curl = pthread_getspecific(client->handle_key);
    if (curl) {
        curl_easy_reset(curl); /* options go; the connection cache stays */
        return curl;
    }
    curl = curl_easy_init();
    if (!curl)
        return NULL;
    pthread_mutex_lock(&client->handles_lock);
    if (client->handle_count == client->handle_cap) {
        size_t cap = client->handle_cap ? client->handle_cap * 2 : 8;
        void **grown = realloc(client->handles, cap * sizeof(*grown));
        if (!grown) {
            pthread_mutex_unlock(&client->handles_lock);
            curl_easy_cleanup(curl);
            return NULL;
        }
        client->handles = grown;
        client->handle_cap = cap;
    }
    client->handles[client->handle_count++] = curl;
    pthread_mutex_unlock(&client->handles_lock);
    pthread_setspecific(client->handle_key, curl);
    return curl;
}

int s3_client_init(struct s3_client *client, const struct s3_config *config, const struct cairn_host *host, char *err,
                   size_t errlen)
{
    memset(client, 0, sizeof(*client));
    client->config = config;
    client->host = host;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "curl_global_init failed");
        return CAIRN_ERROR;
    }
    if (pthread_key_create(&client->handle_key, NULL) != 0) {
        curl_global_cleanup();
        snprintf(err, errlen, "pthread_key_create failed");
        return CAIRN_ERROR;
    }
    pthread_mutex_init(&client->handles_lock, NULL);
    return CAIRN_OK;
}

void s3_client_free(struct s3_client *client)
{
    for (size_t i = 0; i < client->handle_count; i++)
        curl_easy_cleanup(client->handles[i]);
    free(client->handles);
    pthread_key_delete(client->handle_key);
    pthread_mutex_destroy(&client->handles_lock);
    curl_global_cleanup();
    memset(client, 0, sizeof(*client));
}

/* Path (URI-encoded) and Host header of the request's resource. */
static int resource_of(const struct s3_config *config, const char *key, char *path, size_t pathlen, char *host,
                       size_t hostlen)
{
    char encoded[3 * 1024 + 1];
    if (sigv4_uri_encode(key ? key : "", true, encoded, sizeof(encoded)) != 0)
        return -1;
    int n, m;
    if (config->path_style) {
        m = snprintf(host, hostlen, "%s", config->host);
        n = snprintf(path, pathlen, "%s/%s%s%s", config->base_path, config->bucket, key ? "/" : "", encoded);
    } else {
        m = snprintf(host, hostlen, "%s.%s", config->bucket, config->host);
        n = snprintf(path, pathlen, "%s/%s", config->base_path, encoded);
    }
    return n < 0 || (size_t)n >= pathlen || m < 0 || (size_t)m >= hostlen ? -1 : 0;
}

struct header_list {
    struct curl_slist *list;
    bool failed;
};

static void add_header(struct header_list *h, const char *name, const char *value)
{
    char line[8192];
    snprintf(line, sizeof(line), "%s: %s", name, value);
    struct curl_slist *next = curl_slist_append(h->list, line);
    if (!next)
        h->failed = true;
    else
        h->list = next;
}

enum attempt_outcome { ATTEMPT_DONE, ATTEMPT_TRANSIENT };

/* Describes a failed attempt in err; returns the call's status. */
static int classify_http(const struct s3_request *req, struct s3_response *resp, enum attempt_outcome *outcome,
                         char *err, size_t errlen)
{
    char code[128] = "", message[512] = "";
    s3_xml_value(resp->body, "Code", code, sizeof(code));
    s3_xml_value(resp->body, "Message", message, sizeof(message));
    snprintf(err, errlen, "S3 %s %s: HTTP %ld%s%s%s%s", req->method, req->key ? req->key : "(bucket)", resp->status,
             code[0] ? " " : "", code, message[0] ? ": " : "", message);
    long s = resp->status;
    bool transient = s == 500 || s == 502 || s == 503 || s == 504 || s == 429 ||
                     strcmp(code, "SlowDown") == 0 || strcmp(code, "RequestTimeout") == 0 ||
                     strcmp(code, "InternalError") == 0;
    *outcome = transient ? ATTEMPT_TRANSIENT : ATTEMPT_DONE;
    if (transient)
        return CAIRN_RETRIABLE;
    if (s == 404)
        return CAIRN_NOT_FOUND;
    if (s == 416)
        return CAIRN_INVALID;
    return CAIRN_ERROR;
}

static bool transient_curl_error(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

static void count(struct cairn_metric *metric, const struct cairn_host *host, int64_t delta)
{
    if (metric)
        host->metric_add(metric, delta);
}

/* Payload hashes, computed once per call: the body does not change
 * between attempts. */
struct payload {
    char sha256[SIGV4_HEX_SHA256_LEN + 1];
    char md5[25];
};

static int attempt(struct s3_client *client, const struct s3_request *req, const struct payload *payload,
                   struct s3_transfer *t, int64_t budget_ms, enum attempt_outcome *outcome, char *err, size_t errlen)
{
    const struct s3_config *config = client->config;
    *outcome = ATTEMPT_DONE;
    char path[4096], host[512], url[8192], amz_date[17], range[64] = "", authorization[1024];
    if (resource_of(config, req->key, path, sizeof(path), host, sizeof(host)) != 0) {
        snprintf(err, errlen, "S3 key too long: %s", req->key ? req->key : "");
        return CAIRN_INVALID;
    }
    bool has_query = req->query && *req->query;
    snprintf(url, sizeof(url), "%s://%s%s%s%s", config->scheme, host, path, has_query ? "?" : "",
             has_query ? req->query : "");
    sigv4_amz_date(time(NULL), amz_date);
    /* After a broken transfer, ask only for the bytes the sink lacks. */
    int64_t start = req->range_start < 0 ? 0 : req->range_start;
    if (req->range_end >= 0 && start + t->delivered > req->range_end)
        return CAIRN_OK; /* the connection broke after the last byte arrived */
    /* "bytes=0-" asks for nothing a plain GET does not, and S3 answers it
     * with 416 on an empty object: leave it out. */
    if (start + t->delivered > 0 || req->range_end >= 0) {
        if (req->range_end >= 0)
            snprintf(range, sizeof(range), "bytes=%lld-%lld", (long long)(start + t->delivered),
                     (long long)req->range_end);
        else
            snprintf(range, sizeof(range), "bytes=%lld-", (long long)(start + t->delivered));
    }
    t->resumed = range[0] != '\0';
    struct sigv4_header sig_headers[6];
    size_t count = 0;
    sig_headers[count++] = (struct sigv4_header){"host", host};
    sig_headers[count++] = (struct sigv4_header){"x-amz-content-sha256", payload->sha256};
    sig_headers[count++] = (struct sigv4_header){"x-amz-date", amz_date};
    if (req->has_body)
        sig_headers[count++] = (struct sigv4_header){"content-md5", payload->md5};
    if (range[0])
        sig_headers[count++] = (struct sigv4_header){"range", range};
    if (config->session_token)
        sig_headers[count++] = (struct sigv4_header){"x-amz-security-token", config->session_token};
    struct sigv4_request sreq = {req->method, path, req->query, sig_headers, count, payload->sha256};
    struct sigv4_scope scope = {config->access_key_id, config->secret_access_key, config->region, "s3", amz_date};
    if (sigv4_authorization(&sreq, &scope, authorization, sizeof(authorization)) != 0) {
        snprintf(err, errlen, "cannot sign S3 request for %s", req->key ? req->key : "(bucket)");
        return CAIRN_INVALID;
    }
    struct header_list headers = {NULL, false};
    for (size_t i = 0; i < count; i++)
        add_header(&headers, sig_headers[i].name, sig_headers[i].value);
    add_header(&headers, "Authorization", authorization);
    headers.list = curl_slist_append(headers.list, "Expect:"); /* no 100-continue round trip */
    if (req->has_body)
        add_header(&headers, "Content-Type", "application/octet-stream");
    if (headers.failed || !headers.list) {
        curl_slist_free_all(headers.list);
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }

    CURL *curl = t->curl;
    char curl_err[CURL_ERROR_SIZE] = "";
    int64_t connect_ms = config->connect_timeout_ms < budget_ms ? config->connect_timeout_ms : budget_ms;
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect_ms > 0 ? connect_ms : 1));
    /* A stall, not a slow large transfer, is a timeout. */
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, (long)((config->request_timeout_ms + 999) / 1000));
    if (!req->sink)
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)(budget_ms > 0 ? budget_ms : 1));
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, config->tls_verify ? 1L : 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, config->tls_verify ? 2L : 0L);
    if (config->ca_file)
        curl_easy_setopt(curl, CURLOPT_CAINFO, config->ca_file);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, t);
    if (req->has_body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, req->body_len ? (const char *)req->body : "");
    }
    if (strcmp(req->method, "GET") != 0)
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req->method);

    CURLcode rc = curl_easy_perform(curl);
    curl_slist_free_all(headers.list);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &t->resp->status);
    if (t->sink_rc != CAIRN_OK) {
        snprintf(err, errlen, "S3 GET %s: %s", req->key,
                 t->resumed && t->resp->status == 200 ? "the store ignored the Range header"
                                                      : "the reader stopped the transfer");
        return t->sink_rc;
    }
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "S3 %s %s: %s%s%s", req->method, req->key ? req->key : "(bucket)",
                 curl_easy_strerror(rc), curl_err[0] ? ": " : "", curl_err);
        *outcome = transient_curl_error(rc) ? ATTEMPT_TRANSIENT : ATTEMPT_DONE;
        return *outcome == ATTEMPT_TRANSIENT ? CAIRN_RETRIABLE : CAIRN_ERROR;
    }
    bool success = t->resp->status >= 200 && t->resp->status < 300;
    /* A body that ended early but cleanly (a proxy, a chunked answer cut at
     * a chunk boundary) is a broken transfer, never a short object. */
    if (success && req->sink && t->expected_bytes >= 0 && t->attempt_bytes != t->expected_bytes) {
        snprintf(err, errlen, "S3 GET %s: %lld of %lld body bytes arrived", req->key, (long long)t->attempt_bytes,
                 (long long)t->expected_bytes);
        *outcome = ATTEMPT_TRANSIENT;
        return CAIRN_RETRIABLE;
    }
    if (success)
        return CAIRN_OK;
    return classify_http(req, t->resp, outcome, err, errlen);
}

/* Full jitter: uniform in [0, min(cap, base * 2^(attempt-1))]. */
static int64_t backoff_ms(const struct s3_config *config, int64_t attempt)
{
    int64_t ceiling = config->retry_backoff_ms;
    for (int64_t i = 1; i < attempt && ceiling < config->retry_backoff_max_ms; i++)
        ceiling *= 2;
    if (ceiling > config->retry_backoff_max_ms)
        ceiling = config->retry_backoff_max_ms;
    uint32_t r = 0;
    if (RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
        r = (uint32_t)now_ms() * 2654435761u;
    return (int64_t)(r % (uint64_t)(ceiling + 1));
}

int s3_call(struct s3_client *client, const struct s3_request *req, struct s3_response *resp, char *err,
            size_t errlen)
{
    const struct s3_config *config = client->config;
    struct s3_response local;
    if (!resp)
        resp = &local;
    memset(resp, 0, sizeof(*resp));
    struct payload payload;
    sigv4_sha256_hex(req->body ? (const void *)req->body : "", req->body_len, payload.sha256);
    sigv4_md5_base64(req->body ? (const void *)req->body : "", req->body_len, payload.md5);
    struct s3_transfer t = {.req = req, .resp = resp, .sink_rc = CAIRN_OK};
    t.curl = thread_handle(client);
    if (!t.curl) {
        snprintf(err, errlen, "cannot create a curl handle");
        return CAIRN_ERROR;
    }
    int64_t started = now_ms();
    int rc = CAIRN_ERROR;
    for (int64_t n = 1;; n++) {
        s3_response_free(resp);
        resp->status = 0;
        resp->etag[0] = '\0';
        t.overflow = false;
        t.attempt_bytes = 0;
        t.expected_bytes = -1;
        int64_t budget = config->retry_total_timeout_ms - (now_ms() - started);
        enum attempt_outcome outcome;
        count(client->metrics.requests, client->host, 1);
        rc = attempt(client, req, &payload, &t, budget > 0 ? budget : 1, &outcome, err, errlen);
        if (outcome != ATTEMPT_TRANSIENT || req->single_attempt)
            break;
        int64_t delay = backoff_ms(config, n);
        int64_t elapsed = now_ms() - started;
        if (n >= config->retry_max_attempts || elapsed + delay >= config->retry_total_timeout_ms) {
            size_t used = strlen(err);
            snprintf(err + used, errlen - used, " (gave up after %lld attempts in %lld ms)", (long long)n,
                     (long long)elapsed);
            rc = CAIRN_RETRIABLE;
            break;
        }
        count(client->metrics.retries, client->host, 1);
        sleep_ms(delay);
    }
    if (rc != CAIRN_OK && rc != CAIRN_NOT_FOUND)
        count(client->metrics.errors, client->host, 1);
    if (resp == &local)
        s3_response_free(&local);
    return rc;
}
