/* storage-s3: tiered storage in S3 or any S3-compatible store.
 *
 * s3_config.c reads the plugin config and the credential chain,
 * s3_client.c signs and sends requests through libcurl with retries,
 * s3_plugin.c maps the remote-storage table onto objects. */
#ifndef CAIRN_S3_INTERNAL_H
#define CAIRN_S3_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cairn/plugin.h"

/* Immutable after s3_config_load; owned by the plugin instance. */
struct s3_config {
    char *bucket;
    char *region;
    char *scheme;    /* "http" or "https" */
    char *host;      /* host[:port] of the endpoint, without the bucket */
    char *base_path; /* path of the endpoint ("" or "/base"), without a trailing '/' */
    bool path_style;
    char *key_prefix;
    char *access_key_id;
    char *secret_access_key;
    char *session_token; /* NULL when not using temporary credentials */
    const char *credentials_source; /* "config", "environment" or the file path; for the log */
    int64_t connect_timeout_ms;
    int64_t request_timeout_ms; /* a request that moves no byte for this long fails */
    int64_t retry_max_attempts;
    int64_t retry_backoff_ms;
    int64_t retry_backoff_max_ms;
    int64_t retry_total_timeout_ms;
    uint64_t part_size;
    bool tls_verify;
    char *ca_file; /* NULL: the system's CA store */
};

int s3_config_load(const struct cairn_host *host, struct s3_config *config, char *err, size_t errlen);
void s3_config_free(struct s3_config *config);
/* Reads aws_access_key_id, aws_secret_access_key and aws_session_token of
 * [profile] from an AWS shared credentials file. CAIRN_NOT_FOUND when the
 * file or profile does not exist. */
int s3_credentials_file_read(const char *path, const char *profile, struct s3_config *config, char *err,
                             size_t errlen);

struct s3_metrics {
    struct cairn_metric *requests;
    struct cairn_metric *retries;
    struct cairn_metric *errors;
    struct cairn_metric *bytes_uploaded;
    struct cairn_metric *bytes_fetched;
};

/* Shared by every thread: config and metrics are read-only; each thread
 * gets its own CURL handle (kept for connection reuse) through handle_key,
 * and every handle is listed under handles_lock so fini can free them. */
struct s3_client {
    const struct s3_config *config;
    const struct cairn_host *host;
    struct s3_metrics metrics;
    pthread_key_t handle_key;
    pthread_mutex_t handles_lock;
    void **handles;
    size_t handle_count;
    size_t handle_cap;
};

struct s3_request {
    const char *method;
    const char *key;   /* object key, not encoded; NULL for the bucket itself */
    const char *query; /* URI-encoded, "" or NULL for none */
    const uint8_t *body;
    size_t body_len;
    bool has_body; /* PUT/POST: hash body and send Content-MD5 */
    /* Ranged GET: bytes [range_start, range_end], range_end < 0 for "to the
     * end"; range_start < 0 (or 0 with range_end < 0) for no Range header. */
    int64_t range_start;
    int64_t range_end;
    /* A 2xx body goes here as it arrives (resumed after a retry); NULL
     * keeps it in s3_response.body. */
    const struct cairn_byte_sink *sink;
    bool single_attempt; /* best-effort cleanup: never retried */
};

struct s3_response {
    long status;
    char *body; /* malloc'ed, NUL-terminated; the error document for non-2xx */
    size_t body_len;
    char etag[128];
};

int s3_client_init(struct s3_client *client, const struct s3_config *config, const struct cairn_host *host, char *err,
                   size_t errlen);
void s3_client_free(struct s3_client *client);
/* Sends req, retrying transient failures with exponential backoff and full
 * jitter within the configured bounds: no attempt starts after
 * retry.total.timeout.ms, and a request without a sink (its body bounded
 * by the part size) is cut at that deadline too; a streaming GET is only
 * cut when it stalls for request.timeout.ms. Returns CAIRN_OK for a 2xx,
 * CAIRN_NOT_FOUND for 404, CAIRN_RETRIABLE when transient failures outlasted
 * the retry budget, CAIRN_ERROR otherwise (err says why, with S3's error
 * code). resp (may be NULL) is filled in every case; free with
 * s3_response_free. */
int s3_call(struct s3_client *client, const struct s3_request *req, struct s3_response *resp, char *err,
            size_t errlen);
void s3_response_free(struct s3_response *resp);
/* The text of <tag>...</tag> in an XML document, or false. */
bool s3_xml_value(const char *xml, const char *tag, char *out, size_t outlen);

#endif
