#include "raw_kafka.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void raw_writer_init(struct raw_writer *w)
{
    memset(w, 0, sizeof(*w));
}

void raw_writer_free(struct raw_writer *w)
{
    free(w->data);
    memset(w, 0, sizeof(*w));
}

void raw_put_bytes(struct raw_writer *w, const void *bytes, size_t n)
{
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *grown = realloc(w->data, cap);
        if (!grown) {
            /* Test helper: running out of memory is not a condition to test. */
            fprintf(stderr, "raw_put_bytes: out of memory\n");
            exit(1);
        }
        w->data = grown;
        w->cap = cap;
    }
    if (n)
        memcpy(w->data + w->len, bytes, n);
    w->len += n;
}

void raw_put_i8(struct raw_writer *w, int8_t v)
{
    raw_put_bytes(w, &v, 1);
}

void raw_put_i16(struct raw_writer *w, int16_t v)
{
    uint8_t b[2] = {(uint8_t)((uint16_t)v >> 8), (uint8_t)v};
    raw_put_bytes(w, b, 2);
}

void raw_put_i32(struct raw_writer *w, int32_t v)
{
    uint32_t u = (uint32_t)v;
    uint8_t b[4] = {(uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8), (uint8_t)u};
    raw_put_bytes(w, b, 4);
}

void raw_put_i64(struct raw_writer *w, int64_t v)
{
    raw_put_i32(w, (int32_t)((uint64_t)v >> 32));
    raw_put_i32(w, (int32_t)(uint32_t)v);
}

void raw_put_uvarint(struct raw_writer *w, uint64_t v)
{
    while (v >= 0x80) {
        raw_put_i8(w, (int8_t)((v & 0x7f) | 0x80));
        v >>= 7;
    }
    raw_put_i8(w, (int8_t)v);
}

void raw_put_varint(struct raw_writer *w, int64_t v)
{
    raw_put_uvarint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void raw_put_string(struct raw_writer *w, const char *s)
{
    if (!s) {
        raw_put_i16(w, -1);
        return;
    }
    size_t n = strlen(s);
    raw_put_i16(w, (int16_t)n);
    raw_put_bytes(w, s, n);
}

void raw_put_produce_body(struct raw_writer *w, const char *txn_id, int16_t acks, const char *topic, int32_t partition,
                          const void *batch, size_t batch_len)
{
    raw_put_string(w, txn_id);
    raw_put_i16(w, acks);
    raw_put_i32(w, 10000); /* timeout_ms */
    raw_put_i32(w, 1);
    raw_put_string(w, topic);
    raw_put_i32(w, 1);
    raw_put_i32(w, partition);
    raw_put_i32(w, (int32_t)batch_len);
    raw_put_bytes(w, batch, batch_len);
}

void raw_make_transactional(uint8_t *b, size_t len, int64_t pid, int16_t epoch)
{
    b[21] = 0;
    b[22] = 0x10; /* transactional */
    for (int i = 0; i < 8; i++)
        b[43 + i] = (uint8_t)((uint64_t)pid >> (56 - 8 * i));
    b[51] = (uint8_t)((uint16_t)epoch >> 8);
    b[52] = (uint8_t)epoch;
    memset(b + 53, 0, 4); /* first sequence 0 */
    uint32_t crc = raw_crc32c(b + 21, len - 21);
    for (int i = 0; i < 4; i++)
        b[17 + i] = (uint8_t)(crc >> (24 - 8 * i));
}

int raw_produce_txn_record(int port, const char *txn_id, const char *topic, int32_t partition, int64_t pid,
                           int16_t epoch)
{
    struct raw_writer batch;
    raw_writer_init(&batch);
    struct raw_record rec = {NULL, "txn"};
    size_t start = raw_build_record_batch(&batch, 1700000000000LL, &rec, 1);
    raw_make_transactional(batch.data + start, batch.len - start, pid, epoch);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 0, 7, 77, "raw-txn");
    raw_put_produce_body(&w, txn_id, -1, topic, partition, batch.data, batch.len);
    raw_writer_free(&batch);
    uint8_t *frame;
    struct raw_reader r;
    if (raw_exchange(port, &w, 77, false, 15000, &frame, &r) != 0)
        return -1;
    raw_get_i32(&r); /* one topic */
    raw_skip_string(&r);
    raw_get_i32(&r); /* one partition */
    int32_t index = raw_get_i32(&r);
    int16_t err = raw_get_i16(&r);
    bool ok = !r.overflow && index == partition;
    free(frame);
    return ok ? err : -1;
}

void raw_put_compact_string(struct raw_writer *w, const char *s)
{
    if (!s) {
        raw_put_uvarint(w, 0);
        return;
    }
    size_t n = strlen(s);
    raw_put_uvarint(w, n + 1);
    raw_put_bytes(w, s, n);
}

void raw_patch_i32(struct raw_writer *w, size_t pos, int32_t v)
{
    if (pos + 4 > w->len)
        return;
    uint32_t u = (uint32_t)v;
    w->data[pos] = (uint8_t)(u >> 24);
    w->data[pos + 1] = (uint8_t)(u >> 16);
    w->data[pos + 2] = (uint8_t)(u >> 8);
    w->data[pos + 3] = (uint8_t)u;
}

void raw_reader_init(struct raw_reader *r, const uint8_t *data, size_t len)
{
    r->data = data;
    r->len = len;
    r->pos = 0;
    r->overflow = false;
}

static const uint8_t *raw_take(struct raw_reader *r, size_t n)
{
    if (r->overflow || n > r->len - r->pos) {
        r->overflow = true;
        return NULL;
    }
    const uint8_t *p = r->data + r->pos;
    r->pos += n;
    return p;
}

int8_t raw_get_i8(struct raw_reader *r)
{
    const uint8_t *p = raw_take(r, 1);
    return p ? (int8_t)p[0] : 0;
}

int16_t raw_get_i16(struct raw_reader *r)
{
    const uint8_t *p = raw_take(r, 2);
    return p ? (int16_t)(((uint16_t)p[0] << 8) | p[1]) : 0;
}

int32_t raw_get_i32(struct raw_reader *r)
{
    const uint8_t *p = raw_take(r, 4);
    if (!p)
        return 0;
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]);
}

int64_t raw_get_i64(struct raw_reader *r)
{
    uint64_t hi = (uint32_t)raw_get_i32(r);
    uint64_t lo = (uint32_t)raw_get_i32(r);
    return (int64_t)((hi << 32) | lo);
}

uint64_t raw_get_uvarint(struct raw_reader *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        const uint8_t *p = raw_take(r, 1);
        if (!p)
            return 0;
        v |= (uint64_t)(p[0] & 0x7f) << shift;
        if (!(p[0] & 0x80))
            return v;
    }
    r->overflow = true;
    return 0;
}

void raw_skip_string(struct raw_reader *r)
{
    int16_t n = raw_get_i16(r);
    if (n > 0)
        raw_take(r, (size_t)n);
}

void raw_skip(struct raw_reader *r, size_t n)
{
    raw_take(r, n);
}

bool raw_get_compact_string(struct raw_reader *r, char *out, size_t outlen)
{
    uint64_t n = raw_get_uvarint(r);
    if (outlen)
        out[0] = '\0';
    if (n == 0)
        return false;
    const uint8_t *p = raw_take(r, (size_t)(n - 1));
    if (!p || !outlen)
        return p != NULL;
    size_t copy = (size_t)(n - 1) < outlen - 1 ? (size_t)(n - 1) : outlen - 1;
    memcpy(out, p, copy);
    out[copy] = '\0';
    return true;
}

void raw_skip_tagged_fields(struct raw_reader *r)
{
    uint64_t tags = raw_get_uvarint(r);
    for (uint64_t t = 0; t < tags && !r->overflow; t++) {
        raw_get_uvarint(r);
        raw_skip(r, (size_t)raw_get_uvarint(r));
    }
}

uint32_t raw_crc32c(const uint8_t *data, size_t len)
{
    static uint32_t table[256];
    static int ready;
    if (!ready) {
        /* Castagnoli polynomial, reflected. */
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            table[i] = c;
        }
        ready = 1;
    }
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++)
        crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

static void raw_put_record(struct raw_writer *w, int index, const struct raw_record *rec)
{
    struct raw_writer body;
    raw_writer_init(&body);
    raw_put_i8(&body, 0);         /* attributes */
    raw_put_varint(&body, index); /* timestamp delta: 1 ms per record */
    raw_put_varint(&body, index); /* offset delta */
    if (rec->key) {
        raw_put_varint(&body, (int64_t)strlen(rec->key));
        raw_put_bytes(&body, rec->key, strlen(rec->key));
    } else {
        raw_put_varint(&body, -1);
    }
    if (rec->value) {
        raw_put_varint(&body, (int64_t)strlen(rec->value));
        raw_put_bytes(&body, rec->value, strlen(rec->value));
    } else {
        raw_put_varint(&body, -1);
    }
    raw_put_varint(&body, 0); /* no headers */
    raw_put_varint(w, (int64_t)body.len);
    raw_put_bytes(w, body.data, body.len);
    raw_writer_free(&body);
}

size_t raw_build_record_batch(struct raw_writer *w, int64_t base_timestamp, const struct raw_record *records, int count)
{
    size_t start = w->len;
    raw_put_i64(w, 0);  /* base offset, assigned by the broker */
    raw_put_i32(w, 0);  /* batch length, patched below */
    raw_put_i32(w, -1); /* partition leader epoch */
    raw_put_i8(w, 2);   /* magic */
    size_t crc_pos = w->len;
    raw_put_i32(w, 0); /* crc, patched below */
    size_t crc_from = w->len;
    raw_put_i16(w, 0); /* attributes: no compression, create time */
    raw_put_i32(w, count - 1);
    raw_put_i64(w, base_timestamp);
    raw_put_i64(w, base_timestamp + count - 1);
    raw_put_i64(w, -1); /* producer id */
    raw_put_i16(w, -1); /* producer epoch */
    raw_put_i32(w, -1); /* base sequence */
    raw_put_i32(w, count);
    for (int i = 0; i < count; i++)
        raw_put_record(w, i, &records[i]);
    raw_patch_i32(w, start + 8, (int32_t)(w->len - start - 12));
    raw_patch_i32(w, crc_pos, (int32_t)raw_crc32c(w->data + crc_from, w->len - crc_from));
    return start;
}

void raw_frame_begin(struct raw_writer *w, int16_t api_key, int16_t api_version, int32_t correlation_id,
                     const char *client_id)
{
    raw_put_i32(w, 0);
    raw_put_i16(w, api_key);
    raw_put_i16(w, api_version);
    raw_put_i32(w, correlation_id);
    raw_put_string(w, client_id);
}

void raw_frame_begin_flexible(struct raw_writer *w, int16_t api_key, int16_t api_version, int32_t correlation_id,
                              const char *client_id)
{
    raw_frame_begin(w, api_key, api_version, correlation_id, client_id);
    raw_put_uvarint(w, 0);
}

void raw_frame_begin_as(struct raw_writer *w, int16_t api_key, int16_t api_version, bool flexible,
                        int32_t correlation_id, const char *client_id)
{
    if (flexible)
        raw_frame_begin_flexible(w, api_key, api_version, correlation_id, client_id);
    else
        raw_frame_begin(w, api_key, api_version, correlation_id, client_id);
}

void raw_frame_finish(struct raw_writer *w)
{
    raw_patch_i32(w, 0, (int32_t)(w->len - 4));
}

int raw_connect(int port, int timeout_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int raw_send_all(int fd, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int64_t raw_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Returns 0 when n bytes were read, 1 on close/reset, -1 on timeout. */
static int raw_recv_exact(int fd, uint8_t *buf, size_t n, int64_t deadline)
{
    size_t got = 0;
    while (got < n) {
        int64_t left = deadline - raw_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return -1;
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE)))
            return 1;
        if (r < 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

int raw_exchange(int port, struct raw_writer *w, int32_t correlation_id, bool flexible_header, int timeout_ms,
                 uint8_t **frame, struct raw_reader *r)
{
    *frame = NULL;
    raw_frame_finish(w);
    int fd = raw_connect(port, timeout_ms);
    int rc = fd >= 0 && raw_send_all(fd, w->data, w->len) == 0 ? 0 : -1;
    raw_writer_free(w);
    size_t len = 0;
    if (rc == 0)
        rc = raw_recv_frame(fd, timeout_ms, 1 << 20, frame, &len);
    if (fd >= 0)
        close(fd);
    if (rc != 0)
        return rc;
    raw_reader_init(r, *frame, len);
    if (raw_get_i32(r) != correlation_id || r->overflow)
        return -1;
    if (flexible_header)
        raw_skip_tagged_fields(r);
    return 0;
}

int raw_recv_frame(int fd, int timeout_ms, size_t max_len, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    int64_t deadline = raw_now_ms() + timeout_ms;
    uint8_t len_bytes[4];
    int rc = raw_recv_exact(fd, len_bytes, 4, deadline);
    if (rc != 0)
        return rc;
    uint32_t len = ((uint32_t)len_bytes[0] << 24) | ((uint32_t)len_bytes[1] << 16) | ((uint32_t)len_bytes[2] << 8) |
                   len_bytes[3];
    if (len > max_len || len > INT32_MAX)
        return -1;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return -1;
    rc = raw_recv_exact(fd, buf, len, deadline);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    *out_len = len;
    return 0;
}

bool raw_wait_closed(int fd, int timeout_ms)
{
    int64_t deadline = raw_now_ms() + timeout_ms;
    uint8_t sink[4096];
    for (;;) {
        int64_t left = deadline - raw_now_ms();
        if (left <= 0)
            return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return false;
        ssize_t r = recv(fd, sink, sizeof(sink), 0);
        if (r == 0)
            return true;
        if (r < 0 && errno != EINTR && errno != EAGAIN)
            return true;
    }
}

/* A compact array of {name, i16, i16, tagged fields}; `levels` is the
 * finalized layout (max before min). */
static int parse_feature_array(struct raw_reader *r, struct raw_feature_range *out, int cap, bool levels)
{
    int64_t n = (int64_t)raw_get_uvarint(r) - 1;
    if (n < 0 || n > cap) {
        r->overflow = true;
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        if (!raw_get_compact_string(r, out[i].name, sizeof out[i].name))
            return 0;
        int16_t a = raw_get_i16(r), b = raw_get_i16(r);
        out[i].min_version = levels ? b : a;
        out[i].max_version = levels ? a : b;
        raw_skip_tagged_fields(r);
    }
    return (int)n;
}

/* ApiVersions v3+ top-level tagged fields: 0 SupportedFeatures,
 * 1 FinalizedFeaturesEpoch, 2 FinalizedFeatures; others skipped. */
static void parse_feature_tags(struct raw_reader *r, struct raw_api_versions *out)
{
    uint64_t tags = raw_get_uvarint(r);
    for (uint64_t t = 0; t < tags && !r->overflow; t++) {
        uint64_t tag = raw_get_uvarint(r);
        uint64_t size = raw_get_uvarint(r);
        if (tag == 0)
            out->supported_count = parse_feature_array(r, out->supported, 8, false);
        else if (tag == 1)
            out->finalized_epoch = raw_get_i64(r);
        else if (tag == 2)
            out->finalized_count = parse_feature_array(r, out->finalized, 8, true);
        else
            raw_skip(r, (size_t)size);
    }
}

const struct raw_feature_range *raw_feature_find(const struct raw_feature_range *list, int count, const char *name)
{
    for (int i = 0; i < count; i++)
        if (strcmp(list[i].name, name) == 0)
            return &list[i];
    return NULL;
}

int raw_api_versions(int fd, int16_t version, int32_t correlation_id, struct raw_api_versions *out)
{
    memset(out, 0, sizeof(*out));
    struct raw_writer w;
    raw_writer_init(&w);
    if (version >= 3) {
        raw_frame_begin_flexible(&w, 18, version, correlation_id, "cairn-it");
        raw_put_compact_string(&w, "cairn-it");
        raw_put_compact_string(&w, "1.0");
        raw_put_uvarint(&w, 0);
    } else {
        raw_frame_begin(&w, 18, version, correlation_id, "cairn-it");
    }
    raw_frame_finish(&w);
    int rc = raw_send_all(fd, w.data, w.len);
    raw_writer_free(&w);
    if (rc != 0)
        return -1;
    uint8_t *frame;
    size_t frame_len;
    if (raw_recv_frame(fd, 5000, 1 << 20, &frame, &frame_len) != 0)
        return -1;
    struct raw_reader r;
    raw_reader_init(&r, frame, frame_len);
    int32_t got_correlation = raw_get_i32(&r); /* ApiVersions answers with header v0 */
    out->error_code = raw_get_i16(&r);
    /* A version the broker does not know is answered in the v0 layout. */
    bool compact = version >= 3 && out->error_code == 0;
    int64_t count = compact ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
    if (count < 0 || count > 128 || r.overflow) {
        free(frame);
        return -1;
    }
    for (int64_t i = 0; i < count; i++) {
        out->ranges[i].api_key = raw_get_i16(&r);
        out->ranges[i].min_version = raw_get_i16(&r);
        out->ranges[i].max_version = raw_get_i16(&r);
        if (compact)
            raw_skip_tagged_fields(&r);
    }
    out->count = (int)count;
    out->finalized_epoch = -1;
    if (compact) {
        (void)raw_get_i32(&r); /* throttle_time_ms */
        parse_feature_tags(&r, out);
    }
    bool ok = !r.overflow && got_correlation == correlation_id;
    free(frame);
    return ok ? 0 : -1;
}

const struct raw_api_range *raw_api_versions_find(const struct raw_api_versions *v, int16_t api_key)
{
    for (int i = 0; i < v->count; i++)
        if (v->ranges[i].api_key == api_key)
            return &v->ranges[i];
    return NULL;
}

/* GET path from the metrics listener; returns the whole HTTP answer. */
char *raw_http_get(int port, const char *path)
{
    int fd = raw_connect(port, 5000);
    if (fd < 0)
        return NULL;
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    if (!buf || raw_send_all(fd, req, (size_t)n) != 0) {
        free(buf);
        close(fd);
        return NULL;
    }
    for (;;) {
        ssize_t got = recv(fd, buf + len, cap - 1 - len, 0);
        if (got <= 0)
            break;
        len += (size_t)got;
        if (len >= cap - 1)
            break;
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

/* Value of the sample line starting with `series ` in a Prometheus page; -1 if absent. */
long long raw_metric_value(const char *page, const char *series)
{
    size_t n = strlen(series);
    for (const char *line = page; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, series, n) == 0 && line[n] == ' ')
            return atoll(line + n + 1);
    return -1;
}

int raw_incremental_alter_broker(int port, const char *resource, const char *key, int8_t op, const char *value,
                                 char *msg, size_t msglen)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 44, 0, 21, "alter-it");
    raw_put_i32(&w, 1);
    raw_put_i8(&w, 4); /* BROKER */
    raw_put_string(&w, resource);
    raw_put_i32(&w, 1);
    raw_put_string(&w, key);
    raw_put_i8(&w, op);
    raw_put_string(&w, value);
    raw_put_i8(&w, 0); /* validate_only */
    uint8_t *frame = NULL;
    struct raw_reader r;
    msg[0] = '\0';
    if (raw_exchange(port, &w, 21, false, 5000, &frame, &r) != 0) {
        free(frame);
        return -1;
    }
    raw_get_i32(&r); /* throttle */
    int rc = raw_get_i32(&r) == 1 ? 0 : -1;
    int16_t code = raw_get_i16(&r);
    int16_t mlen = raw_get_i16(&r);
    if (mlen > 0 && (size_t)mlen <= r.len - r.pos)
        snprintf(msg, msglen, "%.*s", (int)mlen, (const char *)r.data + r.pos);
    if (r.overflow)
        rc = -1;
    free(frame);
    return rc == 0 ? code : -1;
}

long long raw_fetch_purgatory_waiting(int metrics_port)
{
    char *page = raw_http_get(metrics_port, "/metrics");
    long long v = page ? raw_metric_value(page, "cairn_purgatory_waiting{purgatory=\"fetch\"}") : -1;
    free(page);
    return v;
}

long long raw_wait_fetch_purgatory(int metrics_port, long long want, int timeout_ms)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long took = (now.tv_sec - t0.tv_sec) * 1000LL + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (raw_fetch_purgatory_waiting(metrics_port) == want)
            return took;
        if (took >= timeout_ms)
            return -1;
        usleep(20 * 1000);
    }
}
