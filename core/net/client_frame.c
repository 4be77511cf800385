#include "net/client_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/request_header.h"
#include "protocol/generated/response_header.h"

int client_frame_encode_request(struct kafka_writer *w, const struct kafka_api_desc *desc, int16_t version,
                                int32_t correlation_id, const char *client_id, client_body_encode_fn encode,
                                const void *body_ctx)
{
    if (kafka_writer_init(w, 256) != 0)
        return -1;
    size_t size_at = kafka_writer_reserve(w, 4);
    struct request_header h;
    request_header_init(&h);
    h.request_api_key = desc->api_key;
    h.request_api_version = version;
    h.correlation_id = correlation_id;
    h.client_id = kafka_str_from_cstr(client_id);
    int rc = request_header_encode(&h, w, kafka_request_header_version(desc->api_key, version));
    if (rc == 0)
        rc = encode ? encode(w, version, (void *)body_ctx) : desc->request_encode(body_ctx, w, version);
    /* The client writes plain buffers, so file regions are read in now. */
    if (rc == 0 && w->splice_count > 0)
        rc = kafka_writer_flatten(w);
    if (rc != 0 || w->failed || w->len - 4 > INT32_MAX) {
        kafka_writer_free(w);
        return -1;
    }
    kafka_writer_patch_int32(w, size_at, (int32_t)(w->len - 4));
    return 0;
}

long client_frame_response_body(const uint8_t *frame, size_t len, int16_t api_key, int16_t version,
                                int32_t expected_correlation_id, char *err, size_t errlen)
{
    int16_t header_version = kafka_response_header_version(api_key, version);
    if (header_version < 0) {
        snprintf(err, errlen, "unknown api key %d", api_key);
        return -1;
    }
    struct kafka_reader r;
    kafka_reader_init(&r, frame, len);
    struct response_header h;
    if (response_header_decode(&h, &r, header_version, NULL) != 0) {
        snprintf(err, errlen, "malformed response header: %s", r.error);
        return -1;
    }
    if (h.correlation_id != expected_correlation_id) {
        snprintf(err, errlen, "response correlation id %d, expected %d", h.correlation_id, expected_correlation_id);
        return -1;
    }
    return (long)r.pos;
}

void client_frame_reader_init(struct client_frame_reader *r, int64_t max_frame)
{
    memset(r, 0, sizeof *r);
    r->max_frame = max_frame;
}

uint8_t *client_frame_reader_space(struct client_frame_reader *r, size_t *len)
{
    if (r->size_got < 4) {
        *len = 4 - r->size_got;
        return r->size_buf + r->size_got;
    }
    *len = r->frame_len - r->frame_got;
    return r->frame + r->frame_got;
}

int client_frame_reader_advance(struct client_frame_reader *r, size_t n, char *err, size_t errlen)
{
    if (r->size_got < 4) {
        r->size_got += n;
        if (r->size_got < 4)
            return 0;
        int32_t size = (int32_t)((uint32_t)r->size_buf[0] << 24 | (uint32_t)r->size_buf[1] << 16 |
                                 (uint32_t)r->size_buf[2] << 8 | (uint32_t)r->size_buf[3]);
        /* Checked before allocating: a peer cannot make us reserve more. */
        if (size < 4 || size > r->max_frame) {
            snprintf(err, errlen, "response size %d outside [4, %lld]", size, (long long)r->max_frame);
            return -1;
        }
        r->frame = malloc((size_t)size);
        if (!r->frame) {
            snprintf(err, errlen, "out of memory for a %d-byte response", size);
            return -1;
        }
        r->frame_len = (size_t)size;
        r->frame_got = 0;
        return 0;
    }
    r->frame_got += n;
    return r->frame_got == r->frame_len ? 1 : 0;
}

uint8_t *client_frame_reader_take(struct client_frame_reader *r, size_t *len)
{
    uint8_t *f = r->frame;
    *len = r->frame_len;
    r->frame = NULL;
    r->frame_len = r->frame_got = 0;
    r->size_got = 0;
    return f;
}

void client_frame_reader_free(struct client_frame_reader *r)
{
    free(r->frame);
    r->frame = NULL;
    r->frame_len = r->frame_got = r->size_got = 0;
}

int16_t client_pick_version(const struct kafka_api_desc *desc, int16_t broker_min, int16_t broker_max, int16_t pinned)
{
    int16_t lo = desc->min_version > broker_min ? desc->min_version : broker_min;
    int16_t hi = desc->max_version < broker_max ? desc->max_version : broker_max;
    if (pinned >= 0)
        return pinned >= lo && pinned <= hi ? pinned : -1;
    return hi >= lo ? hi : -1;
}

int64_t client_backoff_ms(int64_t base_ms, int64_t max_ms, uint32_t failures, double jitter_unit)
{
    if (base_ms <= 0)
        return 0;
    double d = (double)base_ms;
    for (uint32_t i = 1; i < failures && d < (double)max_ms; i++)
        d *= 2;
    if (d > (double)max_ms)
        d = (double)max_ms;
    /* Kafka's ExponentialBackoff jitter of 0.2 spreads nodes that lost a
     * peer at the same moment. */
    d *= 0.8 + 0.4 * jitter_unit;
    return d > (double)max_ms ? max_ms : (int64_t)d;
}

int16_t client_api_versions_retry(int16_t sent_version, int16_t broker_api_versions_max)
{
    if (sent_version <= 0)
        return -1;
    if (broker_api_versions_max >= 0 && broker_api_versions_max < sent_version)
        return broker_api_versions_max;
    return 0;
}
