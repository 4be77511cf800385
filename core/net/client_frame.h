/* Outbound client framing: request frames, response headers, the size-
 * prefixed frame reader and version choice. Pure functions over buffers,
 * no sockets, so they are unit-tested on their own.
 *
 * Thread-safety: none needed; every object belongs to one connection and
 * so to the client's loop thread. */
#ifndef CAIRN_NET_CLIENT_FRAME_H
#define CAIRN_NET_CLIENT_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/generated/api_table.h"
#include "protocol/wire.h"

/* Body encoder: either desc->request_encode(body) or a caller's function. */
typedef int (*client_body_encode_fn)(struct kafka_writer *w, int16_t version, void *ctx);

/* Initialises w with one complete request frame (size prefix, header v1 or
 * v2 as the API version asks, body). body_ctx is handed to encode, or, when
 * encode is NULL, is the request struct for desc->request_encode. File-
 * backed records are read into memory (the client writes buffers only).
 * Returns 0 (the caller frees w), or -1 with w already freed. */
int client_frame_encode_request(struct kafka_writer *w, const struct kafka_api_desc *desc, int16_t version,
                                int32_t correlation_id, const char *client_id, client_body_encode_fn encode,
                                const void *body_ctx);

/* Reads the response header of a frame (without its size prefix) for the
 * given API version and checks the correlation id. Returns the offset of
 * the body, or -1 with err filled. */
long client_frame_response_body(const uint8_t *frame, size_t len, int16_t api_key, int16_t version,
                                int32_t expected_correlation_id, char *err, size_t errlen);

/* Incremental reader of size-prefixed frames: ask where the next bytes go
 * (client_frame_reader_space), read into it, report the count
 * (client_frame_reader_advance). The frame buffer is malloc'd and handed
 * over with client_frame_reader_take. */
struct client_frame_reader {
    int64_t max_frame;
    uint8_t size_buf[4];
    size_t size_got;
    uint8_t *frame;
    size_t frame_len, frame_got;
};

void client_frame_reader_init(struct client_frame_reader *r, int64_t max_frame);
/* Where to read next and how much at most (never 0). NULL on allocation failure. */
uint8_t *client_frame_reader_space(struct client_frame_reader *r, size_t *len);
/* 1: a frame is complete; 0: need more; -1: a size above max_frame or
 * negative (err filled; the connection must close). */
int client_frame_reader_advance(struct client_frame_reader *r, size_t n, char *err, size_t errlen);
/* Hands over the completed frame (caller frees) and resets for the next. */
uint8_t *client_frame_reader_take(struct client_frame_reader *r, size_t *len);
void client_frame_reader_free(struct client_frame_reader *r);

/* Version to send: pinned when >= 0 (must lie in both ranges), else the
 * highest both the codecs and the broker know. -1 when none. */
int16_t client_pick_version(const struct kafka_api_desc *desc, int16_t broker_min, int16_t broker_max, int16_t pinned);

/* Reconnect delay after `failures` consecutive failures (1 = first):
 * min(base * 2^(failures-1), max) times a jitter factor in [0.8, 1.2]
 * taken from jitter_unit in [0, 1), capped at max (Kafka's
 * ExponentialBackoff with jitter 0.2). */
int64_t client_backoff_ms(int64_t base_ms, int64_t max_ms, uint32_t failures, double jitter_unit);

/* After an ApiVersions response with UNSUPPORTED_VERSION to a request at
 * sent_version: the version to retry with (the broker's own ApiVersions
 * max when it lists one, capped at sent_version - 1; else 0), or -1 when
 * there is nothing lower to try. */
int16_t client_api_versions_retry(int16_t sent_version, int16_t broker_api_versions_max);

#endif
