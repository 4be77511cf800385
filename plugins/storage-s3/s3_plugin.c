/* The storage-s3 plugin: the remote-storage table over S3 objects. Each
 * file of a segment is one object,
 *   <key.prefix><topic>-<topic id>/<partition>/<start offset>-<segment id>.<suffix>
 * uploaded with one PUT, or as a multipart upload above
 * multipart.part.size, each request carrying Content-MD5 and the signed
 * x-amz-content-sha256 of its body. */
#include "s3_internal.h"
#include "s3_sigv4.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Objects of a segment: the index types of remote_storage.h, then the log. */
#define S3_OBJECT_LOG 5
#define S3_OBJECT_COUNT 6
#define S3_ALL_OBJECTS ((1u << S3_OBJECT_COUNT) - 1)

/* custom metadata: version, mask of the objects stored, key prefix used. */
#define S3_METADATA_VERSION 1

static const char *const object_suffix[S3_OBJECT_COUNT] = {
    [CAIRN_REMOTE_INDEX_OFFSET] = "index",
    [CAIRN_REMOTE_INDEX_TIMESTAMP] = "timeindex",
    [CAIRN_REMOTE_INDEX_PRODUCER_SNAPSHOT] = "snapshot",
    [CAIRN_REMOTE_INDEX_TRANSACTION] = "txnindex",
    [CAIRN_REMOTE_INDEX_LEADER_EPOCH] = "leader-epoch-checkpoint",
    [S3_OBJECT_LOG] = "log",
};

/* One loaded instance; immutable after init, shared by every calling
 * thread (the client keeps per-thread state itself). */
struct s3_plugin {
    const struct cairn_host *host;
    struct s3_config config;
    struct s3_client client;
};

/* Where a segment's objects are: the prefix and the objects that
 * copy_segment stored, from its custom metadata when there is any. */
struct s3_layout {
    char prefix[512];
    unsigned mask;
};

static void hex16(const uint8_t id[16], char out[33])
{
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
}

static int object_key(const char *prefix, const struct cairn_remote_segment *segment, int object, char *out,
                      size_t outlen)
{
    char topic_id[33], segment_id[33];
    hex16(segment->topic_id, topic_id);
    hex16(segment->segment_id, segment_id);
    int n = snprintf(out, outlen, "%s%s-%s/%" PRId32 "/%020" PRId64 "-%s.%s", prefix,
                     segment->topic ? segment->topic : "", topic_id, segment->partition, segment->start_offset,
                     segment_id, object_suffix[object]);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

static void layout_of(const struct s3_plugin *plugin, const struct cairn_remote_segment *segment,
                      struct s3_layout *layout)
{
    snprintf(layout->prefix, sizeof(layout->prefix), "%s", plugin->config.key_prefix);
    layout->mask = S3_ALL_OBJECTS;
    const uint8_t *meta = segment->custom_metadata;
    size_t len = segment->custom_metadata_len;
    if (!meta || len < 2 || meta[0] != S3_METADATA_VERSION)
        return; /* not ours, or none: every object under the configured prefix */
    layout->mask = meta[1] & S3_ALL_OBJECTS;
    if (len > 2 && len - 2 < sizeof(layout->prefix)) {
        memcpy(layout->prefix, meta + 2, len - 2);
        layout->prefix[len - 2] = '\0';
    }
}

static int read_fully(int fd, uint8_t *buf, size_t len, off_t offset)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, offset + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

static int put_object(struct s3_plugin *plugin, const char *key, const char *query, const uint8_t *body,
                      size_t len, struct s3_response *resp, char *err, size_t errlen)
{
    struct s3_request req = {
        .method = "PUT", .key = key, .query = query, .body = body, .body_len = len, .has_body = true,
        .range_start = -1, .range_end = -1,
    };
    int rc = s3_call(&plugin->client, &req, resp, err, errlen);
    if (rc == CAIRN_OK && plugin->client.metrics.bytes_uploaded)
        plugin->host->metric_add(plugin->client.metrics.bytes_uploaded, (int64_t)len);
    return rc;
}

static int post_xml(struct s3_plugin *plugin, const char *key, const char *query, const char *body,
                    struct s3_response *resp, char *err, size_t errlen)
{
    struct s3_request req = {
        .method = "POST", .key = key, .query = query, .body = (const uint8_t *)body,
        .body_len = body ? strlen(body) : 0, .has_body = true, .range_start = -1, .range_end = -1,
    };
    int rc = s3_call(&plugin->client, &req, resp, err, errlen);
    /* CompleteMultipartUpload can fail after its 200 status line. */
    char code[128];
    if (rc == CAIRN_OK && s3_xml_value(resp->body, "Code", code, sizeof(code)) && strstr(resp->body, "<Error>")) {
        snprintf(err, errlen, "S3 POST %s: %s", key, code);
        rc = strcmp(code, "InternalError") == 0 || strcmp(code, "SlowDown") == 0 ? CAIRN_RETRIABLE : CAIRN_ERROR;
    }
    return rc;
}

static int delete_object(struct s3_plugin *plugin, const char *key, const char *query, bool single_attempt, char *err,
                         size_t errlen)
{
    struct s3_request req = {
        .method = "DELETE", .key = key, .query = query, .range_start = -1, .range_end = -1,
        .single_attempt = single_attempt,
    };
    int rc = s3_call(&plugin->client, &req, NULL, err, errlen);
    return rc == CAIRN_NOT_FOUND ? CAIRN_OK : rc;
}

struct multipart {
    char upload_id[1024];
    char query[3200];
    char (*etags)[128];
    size_t part_count;
};

static int complete_multipart(struct s3_plugin *plugin, const char *key, struct multipart *mp, char *err,
                              size_t errlen)
{
    size_t cap = 128 + mp->part_count * 200;
    char *xml = malloc(cap);
    if (!xml) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    size_t n = (size_t)snprintf(xml, cap, "<CompleteMultipartUpload>");
    for (size_t i = 0; i < mp->part_count; i++)
        n += (size_t)snprintf(xml + n, cap - n, "<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>", i + 1,
                              mp->etags[i]);
    snprintf(xml + n, cap - n, "</CompleteMultipartUpload>");
    struct s3_response resp;
    int rc = post_xml(plugin, key, mp->query, xml, &resp, err, errlen);
    s3_response_free(&resp);
    free(xml);
    return rc;
}

/* CreateMultipartUpload, UploadPart for each part_size slice, then
 * CompleteMultipartUpload; AbortMultipartUpload when any step fails, so no
 * unfinished upload is left to be billed. */
static int upload_multipart(struct s3_plugin *plugin, const char *key, int fd, uint64_t size, uint8_t *buf,
                            char *err, size_t errlen)
{
    uint64_t part_size = plugin->config.part_size;
    struct multipart mp = {.part_count = (size_t)((size + part_size - 1) / part_size)};
    struct s3_response resp;
    int rc = post_xml(plugin, key, "uploads", NULL, &resp, err, errlen);
    if (rc == CAIRN_OK && !s3_xml_value(resp.body, "UploadId", mp.upload_id, sizeof(mp.upload_id))) {
        snprintf(err, errlen, "S3 CreateMultipartUpload %s: no UploadId in the answer", key);
        rc = CAIRN_ERROR;
    }
    s3_response_free(&resp);
    if (rc != CAIRN_OK)
        return rc;
    char encoded_id[3 * sizeof(mp.upload_id)];
    sigv4_uri_encode(mp.upload_id, false, encoded_id, sizeof(encoded_id));
    snprintf(mp.query, sizeof(mp.query), "uploadId=%s", encoded_id);
    mp.etags = calloc(mp.part_count, sizeof(*mp.etags));
    if (!mp.etags) {
        snprintf(err, errlen, "out of memory");
        rc = CAIRN_ERROR;
    }
    for (size_t i = 0; rc == CAIRN_OK && i < mp.part_count; i++) {
        uint64_t offset = (uint64_t)i * part_size;
        size_t len = (size_t)(size - offset < part_size ? size - offset : part_size);
        if (read_fully(fd, buf, len, (off_t)offset) != 0) {
            snprintf(err, errlen, "cannot read part %zu of %s: %s", i + 1, key, strerror(errno));
            rc = CAIRN_ERROR;
            break;
        }
        char query[3300];
        snprintf(query, sizeof(query), "partNumber=%zu&%s", i + 1, mp.query);
        rc = put_object(plugin, key, query, buf, len, &resp, err, errlen);
        if (rc == CAIRN_OK && resp.etag[0] == '\0') {
            snprintf(err, errlen, "S3 UploadPart %zu of %s: no ETag in the answer", i + 1, key);
            rc = CAIRN_ERROR;
        }
        if (rc == CAIRN_OK)
            snprintf(mp.etags[i], sizeof(mp.etags[i]), "%s", resp.etag);
        s3_response_free(&resp);
    }
    if (rc == CAIRN_OK)
        rc = complete_multipart(plugin, key, &mp, err, errlen);
    if (rc != CAIRN_OK) {
        char abort_err[256];
        if (delete_object(plugin, key, mp.query, false, abort_err, sizeof(abort_err)) != CAIRN_OK)
            plugin->host->log(plugin->host->ctx, CAIRN_LOG_WARN, "cannot abort multipart upload of %s: %s", key,
                              abort_err);
    }
    free(mp.etags);
    return rc;
}

static int upload_file(struct s3_plugin *plugin, const char *key, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return CAIRN_ERROR;
    }
    uint64_t size = (uint64_t)st.st_size;
    uint64_t part_size = plugin->config.part_size;
    /* One part in memory at a time: its hashes are computed before it is sent,
     * and a retry resends the same bytes. */
    size_t buf_len = (size_t)(size < part_size ? size : part_size);
    uint8_t *buf = malloc(buf_len ? buf_len : 1);
    int rc;
    if (!buf) {
        snprintf(err, errlen, "out of memory for a %zu byte part", buf_len);
        rc = CAIRN_ERROR;
    } else if (size > part_size) {
        rc = upload_multipart(plugin, key, fd, size, buf, err, errlen);
    } else if (read_fully(fd, buf, buf_len, 0) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        rc = CAIRN_ERROR;
    } else {
        rc = put_object(plugin, key, NULL, buf, buf_len, NULL, err, errlen);
    }
    free(buf);
    close(fd);
    return rc;
}

static int delete_objects(struct s3_plugin *plugin, const struct cairn_remote_segment *segment,
                          const struct s3_layout *layout, bool single_attempt, char *err, size_t errlen)
{
    int first = CAIRN_OK;
    for (int object = 0; object < S3_OBJECT_COUNT; object++) {
        char key[2048], one_err[512];
        if (!(layout->mask & (1u << object)))
            continue;
        if (object_key(layout->prefix, segment, object, key, sizeof(key)) != 0) {
            snprintf(err, errlen, "object key too long for topic %s", segment->topic);
            return CAIRN_INVALID;
        }
        int rc = delete_object(plugin, key, NULL, single_attempt, one_err, sizeof(one_err));
        if (rc != CAIRN_OK && first == CAIRN_OK) {
            first = rc;
            snprintf(err, errlen, "%s", one_err);
        }
        /* An unreachable store fails the other objects' requests the same
         * way, each after its own retry budget: the caller retries the
         * whole delete later (deleting a missing key succeeds). */
        if (rc == CAIRN_RETRIABLE)
            break;
    }
    return first;
}

static bool segment_valid(const struct cairn_remote_segment *segment, char *err, size_t errlen)
{
    if (!segment || segment->struct_size < offsetof(struct cairn_remote_segment, custom_metadata_len) +
                                               sizeof(segment->custom_metadata_len) ||
        !segment->topic || !*segment->topic) {
        snprintf(err, errlen, "segment metadata is missing or too small");
        return false;
    }
    return true;
}

static int s3_copy_segment(void *instance, const struct cairn_remote_segment *segment,
                           const struct cairn_remote_segment_files *files, uint8_t *custom_metadata,
                           size_t *custom_metadata_len, char *err, size_t errlen)
{
    struct s3_plugin *plugin = instance;
    if (!segment_valid(segment, err, errlen))
        return CAIRN_INVALID;
    if (!files || !files->log_path) {
        snprintf(err, errlen, "segment files are missing");
        return CAIRN_INVALID;
    }
    const char *paths[S3_OBJECT_COUNT] = {
        [CAIRN_REMOTE_INDEX_OFFSET] = files->offset_index_path,
        [CAIRN_REMOTE_INDEX_TIMESTAMP] = files->time_index_path,
        [CAIRN_REMOTE_INDEX_PRODUCER_SNAPSHOT] = files->producer_snapshot_path,
        [CAIRN_REMOTE_INDEX_TRANSACTION] = files->txn_index_path,
        [S3_OBJECT_LOG] = files->log_path,
    };
    struct s3_layout layout = {.mask = 0};
    snprintf(layout.prefix, sizeof(layout.prefix), "%s", plugin->config.key_prefix);
    int rc = CAIRN_OK;
    for (int object = 0; rc == CAIRN_OK && object < S3_OBJECT_COUNT; object++) {
        char key[2048];
        bool epoch = object == CAIRN_REMOTE_INDEX_LEADER_EPOCH;
        if (epoch ? !files->leader_epoch_checkpoint : !paths[object])
            continue;
        if (object_key(layout.prefix, segment, object, key, sizeof(key)) != 0) {
            snprintf(err, errlen, "object key too long for topic %s", segment->topic);
            rc = CAIRN_INVALID;
            break;
        }
        layout.mask |= 1u << object; /* before the upload: a failed multipart may leave a part behind */
        if (epoch)
            rc = put_object(plugin, key, NULL, files->leader_epoch_checkpoint, files->leader_epoch_checkpoint_len,
                            NULL, err, errlen);
        else
            rc = upload_file(plugin, key, paths[object], err, errlen);
    }
    if (rc != CAIRN_OK) {
        /* Best effort, one attempt each (the store may be what failed): the
         * broker retries under a new segment id and deletes this one. */
        char cleanup_err[256];
        delete_objects(plugin, segment, &layout, true, cleanup_err, sizeof(cleanup_err));
        return rc;
    }
    size_t prefix_len = strlen(layout.prefix);
    size_t room = custom_metadata_len ? *custom_metadata_len : 0;
    if (custom_metadata && room >= 2) {
        custom_metadata[0] = S3_METADATA_VERSION;
        custom_metadata[1] = (uint8_t)layout.mask;
        size_t used = 2;
        if (room >= 2 + prefix_len) {
            memcpy(custom_metadata + 2, layout.prefix, prefix_len);
            used += prefix_len;
        }
        *custom_metadata_len = used;
    } else if (custom_metadata_len) {
        *custom_metadata_len = 0;
    }
    return CAIRN_OK;
}

/* Counts fetched bytes on their way to the caller's sink. */
struct counting_sink {
    const struct cairn_byte_sink *inner;
    int64_t bytes;
};

static int counting_write(void *ctx, const uint8_t *data, size_t len)
{
    struct counting_sink *c = ctx;
    int rc = c->inner->write(c->inner->ctx, data, len);
    if (rc == CAIRN_OK)
        c->bytes += (int64_t)len;
    return rc;
}

static int get_object(struct s3_plugin *plugin, const struct cairn_remote_segment *segment, int object,
                      int64_t range_start, int64_t range_end, const struct cairn_byte_sink *sink, char *err,
                      size_t errlen)
{
    if (!sink || !sink->write) {
        snprintf(err, errlen, "no sink to fetch into");
        return CAIRN_INVALID;
    }
    struct s3_layout layout;
    layout_of(plugin, segment, &layout);
    if (!(layout.mask & (1u << object))) {
        snprintf(err, errlen, "segment has no %s object", object_suffix[object]);
        return CAIRN_NOT_FOUND;
    }
    char key[2048];
    if (object_key(layout.prefix, segment, object, key, sizeof(key)) != 0) {
        snprintf(err, errlen, "object key too long for topic %s", segment->topic);
        return CAIRN_INVALID;
    }
    struct counting_sink counter = {sink, 0};
    struct cairn_byte_sink counted = {sizeof(counted), &counter, counting_write};
    struct s3_request req = {
        .method = "GET", .key = key, .range_start = range_start, .range_end = range_end, .sink = &counted,
    };
    int rc = s3_call(&plugin->client, &req, NULL, err, errlen);
    if (plugin->client.metrics.bytes_fetched && counter.bytes > 0)
        plugin->host->metric_add(plugin->client.metrics.bytes_fetched, counter.bytes);
    return rc;
}

static int s3_fetch_segment(void *instance, const struct cairn_remote_segment *segment, int64_t start_position,
                            int64_t end_position, const struct cairn_byte_sink *sink, char *err, size_t errlen)
{
    struct s3_plugin *plugin = instance;
    if (!segment_valid(segment, err, errlen))
        return CAIRN_INVALID;
    if (start_position < 0 || (end_position >= 0 && end_position < start_position)) {
        snprintf(err, errlen, "invalid range [%lld, %lld)", (long long)start_position, (long long)end_position);
        return CAIRN_INVALID;
    }
    if (end_position == start_position)
        return CAIRN_OK;
    return get_object(plugin, segment, S3_OBJECT_LOG, start_position, end_position < 0 ? -1 : end_position - 1, sink,
                      err, errlen);
}

static int s3_fetch_index(void *instance, const struct cairn_remote_segment *segment, int32_t index_type,
                          const struct cairn_byte_sink *sink, char *err, size_t errlen)
{
    struct s3_plugin *plugin = instance;
    if (!segment_valid(segment, err, errlen))
        return CAIRN_INVALID;
    if (index_type < 0 || index_type >= S3_OBJECT_LOG) {
        snprintf(err, errlen, "unknown index type %d", (int)index_type);
        return CAIRN_NOT_FOUND;
    }
    return get_object(plugin, segment, index_type, -1, -1, sink, err, errlen);
}

static int s3_delete_segment(void *instance, const struct cairn_remote_segment *segment, char *err, size_t errlen)
{
    struct s3_plugin *plugin = instance;
    if (!segment_valid(segment, err, errlen))
        return CAIRN_INVALID;
    struct s3_layout layout;
    layout_of(plugin, segment, &layout);
    return delete_objects(plugin, segment, &layout, false, err, errlen);
}

static int s3_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    struct s3_plugin *plugin = calloc(1, sizeof(*plugin));
    if (!plugin) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    plugin->host = host;
    if (s3_config_load(host, &plugin->config, err, errlen) != CAIRN_OK ||
        s3_client_init(&plugin->client, &plugin->config, host, err, errlen) != CAIRN_OK) {
        s3_config_free(&plugin->config);
        free(plugin);
        return CAIRN_ERROR;
    }
    struct s3_metrics *m = &plugin->client.metrics;
    m->requests = host->counter(host->ctx, "requests_total", "S3 requests sent, retries included");
    m->retries = host->counter(host->ctx, "retries_total", "S3 requests retried after a transient failure");
    m->errors = host->counter(host->ctx, "errors_total", "S3 calls that failed after their retries");
    m->bytes_uploaded = host->counter(host->ctx, "uploaded_bytes_total", "bytes uploaded to S3");
    m->bytes_fetched = host->counter(host->ctx, "fetched_bytes_total", "bytes fetched from S3");
    host->log(host->ctx, CAIRN_LOG_INFO, "bucket %s at %s://%s%s (%s), region %s, credentials from %s",
              plugin->config.bucket, plugin->config.scheme, plugin->config.host, plugin->config.base_path,
              plugin->config.path_style ? "path-style" : "virtual-hosted-style", plugin->config.region,
              plugin->config.credentials_source);
    *instance = plugin;
    return CAIRN_OK;
}

static void s3_fini(void *instance)
{
    struct s3_plugin *plugin = instance;
    s3_client_free(&plugin->client);
    s3_config_free(&plugin->config);
    free(plugin);
}

#define S3_KEY(var, key_name, key_type, key_default, key_doc)                                                          \
    static const struct cairn_config_key var = {sizeof(struct cairn_config_key), key_name, key_type, key_default,     \
                                                key_doc}

S3_KEY(key_bucket, "bucket", CAIRN_CONFIG_STRING, NULL, "the bucket segments are copied to");
S3_KEY(key_region, "region", CAIRN_CONFIG_STRING, "us-east-1", "the bucket's region, part of every signature");
S3_KEY(key_endpoint, "endpoint", CAIRN_CONFIG_STRING, "",
       "http(s)://host[:port] of an S3-compatible store (MinIO, Ceph RGW, R2, GCS); empty: AWS's for the region");
S3_KEY(key_path_style, "path.style.access", CAIRN_CONFIG_BOOL, "false",
       "true: <endpoint>/<bucket>/<key>; false: <bucket>.<endpoint host>/<key>");
S3_KEY(key_prefix, "key.prefix", CAIRN_CONFIG_STRING, "", "prepended to every object key, e.g. cairn/prod/");
S3_KEY(key_access_key_id, "access.key.id", CAIRN_CONFIG_STRING, "",
       "access key id; empty: AWS_ACCESS_KEY_ID, then the shared credentials file");
S3_KEY(key_secret, "secret.access.key", CAIRN_CONFIG_PASSWORD, "", "secret access key, set with access.key.id");
S3_KEY(key_session_token, "session.token", CAIRN_CONFIG_PASSWORD, "", "session token of temporary credentials");
S3_KEY(key_credentials_file, "credentials.file", CAIRN_CONFIG_STRING, "",
       "shared credentials file; empty: AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials");
S3_KEY(key_profile, "profile", CAIRN_CONFIG_STRING, "", "profile of the credentials file; empty: AWS_PROFILE, else default");
S3_KEY(key_connect_timeout, "connect.timeout.ms", CAIRN_CONFIG_INT, "10000", "TCP and TLS connect timeout");
S3_KEY(key_request_timeout, "request.timeout.ms", CAIRN_CONFIG_INT, "30000",
       "a request that moves no byte for this long fails (and is retried)");
S3_KEY(key_retry_attempts, "retry.max.attempts", CAIRN_CONFIG_INT, "10", "attempts per request, the first included");
S3_KEY(key_retry_backoff, "retry.backoff.ms", CAIRN_CONFIG_INT, "100", "first backoff ceiling; doubles per attempt");
S3_KEY(key_retry_backoff_max, "retry.backoff.max.ms", CAIRN_CONFIG_INT, "10000", "largest backoff ceiling");
S3_KEY(key_retry_total, "retry.total.timeout.ms", CAIRN_CONFIG_INT, "60000",
       "no retry starts after this long; the call then fails as retriable");
S3_KEY(key_part_size, "multipart.part.size", CAIRN_CONFIG_SIZE, "16MiB",
       "files above this size are sent as a multipart upload of parts this large (5MiB..5GiB)");
S3_KEY(key_tls_verify, "tls.verify", CAIRN_CONFIG_BOOL, "true", "verify the endpoint's TLS certificate");
S3_KEY(key_ca_file, "tls.ca.file", CAIRN_CONFIG_STRING, "", "CA bundle for the endpoint; empty: the system's");

static const struct cairn_config_key *const s3_config_keys[] = {
    &key_bucket,          &key_region,          &key_endpoint,        &key_path_style,   &key_prefix,
    &key_access_key_id,   &key_secret,          &key_session_token,   &key_credentials_file, &key_profile,
    &key_connect_timeout, &key_request_timeout, &key_retry_attempts,  &key_retry_backoff, &key_retry_backoff_max,
    &key_retry_total,     &key_part_size,       &key_tls_verify,      &key_ca_file,
};

static const struct cairn_remote_storage_vtable s3_vtable = {
    .struct_size = sizeof(struct cairn_remote_storage_vtable),
    .copy_segment = s3_copy_segment,
    .fetch_segment = s3_fetch_segment,
    .fetch_index = s3_fetch_index,
    .delete_segment = s3_delete_segment,
};

static const struct cairn_plugin_descriptor s3_descriptor = {
    .struct_size = sizeof(struct cairn_plugin_descriptor),
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "storage-s3",
    .version = "1.0.0",
    .description = "tiered storage in S3 or an S3-compatible object store",
    .capabilities = CAIRN_CAP_REMOTE_STORAGE,
    .config_keys = s3_config_keys,
    .config_key_count = sizeof(s3_config_keys) / sizeof(s3_config_keys[0]),
    .init = s3_init,
    .fini = s3_fini,
    .remote_storage = &s3_vtable,
};

CAIRN_PLUGIN_DEFINE(s3_descriptor)
