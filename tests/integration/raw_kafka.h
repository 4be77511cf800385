/* Hand-rolled Kafka wire pieces for integration tests that must send
 * exact (and deliberately broken) bytes: a big-endian writer, a bounds
 * checked reader, CRC32C, record batch v2 building and blocking socket I/O.
 * Kept independent of core/protocol so a codec bug cannot hide itself.
 *
 * Thread-safety: every object here is owned by the thread that made it;
 * the functions keep no shared state. */
#ifndef CAIRN_TESTS_RAW_KAFKA_H
#define CAIRN_TESTS_RAW_KAFKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct raw_writer {
    uint8_t *data;
    size_t len;
    size_t cap;
};

void raw_writer_init(struct raw_writer *w);
void raw_writer_free(struct raw_writer *w);
void raw_put_bytes(struct raw_writer *w, const void *bytes, size_t n);
void raw_put_i8(struct raw_writer *w, int8_t v);
void raw_put_i16(struct raw_writer *w, int16_t v);
void raw_put_i32(struct raw_writer *w, int32_t v);
void raw_put_i64(struct raw_writer *w, int64_t v);
void raw_put_varint(struct raw_writer *w, int64_t v); /* zigzag */
void raw_put_uvarint(struct raw_writer *w, uint64_t v);
/* int16 length + bytes; NULL writes -1. */
void raw_put_string(struct raw_writer *w, const char *s);
/* Flexible-version string: uvarint(len + 1) + bytes; NULL writes 0. */
void raw_put_compact_string(struct raw_writer *w, const char *s);
/* Overwrite 4 bytes at pos with a big-endian int32. */
void raw_patch_i32(struct raw_writer *w, size_t pos, int32_t v);
/* The body of a non-flexible Produce request (v3-v8) carrying one batch
 * for one partition, with a 10 s timeout. txn_id NULL: not transactional. */
void raw_put_produce_body(struct raw_writer *w, const char *txn_id, int16_t acks, const char *topic, int32_t partition,
                          const void *batch, size_t batch_len);

/* Makes the batch at batch (len bytes, built by raw_build_record_batch)
 * transactional for pid/epoch with first sequence 0, and fixes its CRC. */
void raw_make_transactional(uint8_t *batch, size_t len, int64_t pid, int16_t epoch);
/* Produce v7 (acks=-1) of one transactional record from pid/epoch to one
 * partition, on a new connection. Returns the partition's error, or -1
 * when no well-formed answer came. */
int raw_produce_txn_record(int port, const char *txn_id, const char *topic, int32_t partition, int64_t pid,
                           int16_t epoch);

struct raw_reader {
    const uint8_t *data;
    size_t len;
    size_t pos;
    bool overflow; /* set once any read ran past the end */
};

void raw_reader_init(struct raw_reader *r, const uint8_t *data, size_t len);
int8_t raw_get_i8(struct raw_reader *r);
int16_t raw_get_i16(struct raw_reader *r);
int32_t raw_get_i32(struct raw_reader *r);
int64_t raw_get_i64(struct raw_reader *r);
uint64_t raw_get_uvarint(struct raw_reader *r);
/* Skips an int16-length string (or null). */
void raw_skip_string(struct raw_reader *r);
void raw_skip(struct raw_reader *r, size_t n);
/* Flexible-version string into out (truncated to outlen - 1); returns
 * false for a null string. */
bool raw_get_compact_string(struct raw_reader *r, char *out, size_t outlen);
/* Skips a tagged-field section. */
void raw_skip_tagged_fields(struct raw_reader *r);

uint32_t raw_crc32c(const uint8_t *data, size_t len);

/* One record for raw_build_record_batch. */
struct raw_record {
    const char *key;   /* NULL for a null key */
    const char *value; /* NULL for a null value */
};

/* Appends a complete magic-2 record batch (uncompressed, no producer id)
 * with a correct CRC to w; returns the batch's start position in w. */
size_t raw_build_record_batch(struct raw_writer *w, int64_t base_timestamp, const struct raw_record *records,
                              int count);

/* Starts a request frame: length placeholder + request header v1
 * (api_key, api_version, correlation_id, client_id). Finish with
 * raw_frame_finish, which fills in the length. */
void raw_frame_begin(struct raw_writer *w, int16_t api_key, int16_t api_version, int32_t correlation_id,
                     const char *client_id);
/* Same with request header v2 (adds an empty tagged-field section). */
void raw_frame_begin_flexible(struct raw_writer *w, int16_t api_key, int16_t api_version, int32_t correlation_id,
                              const char *client_id);
/* raw_frame_begin_flexible when flexible, else raw_frame_begin. */
void raw_frame_begin_as(struct raw_writer *w, int16_t api_key, int16_t api_version, bool flexible,
                        int32_t correlation_id, const char *client_id);
void raw_frame_finish(struct raw_writer *w);

/* Blocking TCP connection to 127.0.0.1:port with a receive timeout;
 * returns the fd or -1. */
int raw_connect(int port, int timeout_ms);
int raw_send_all(int fd, const void *data, size_t len);
/* Reads one length-prefixed response frame (body without the length).
 * Returns 0 on success, 1 if the peer closed/reset the connection,
 * -1 on timeout or a frame above max_len. *out is malloc()ed. */
int raw_recv_frame(int fd, int timeout_ms, size_t max_len, uint8_t **out, size_t *out_len);
/* One request on a new connection: finishes and sends the frame in w (then
 * frees w) and reads the answer into *frame (malloc()ed). On 0, r reads
 * the body past the correlation id, which matched, and past the tagged
 * fields of a flexible response header. Returns 1 if the peer closed, -1 on
 * timeout, a failed connect or send, or another correlation id. */
int raw_exchange(int port, struct raw_writer *w, int32_t correlation_id, bool flexible_header, int timeout_ms,
                 uint8_t **frame, struct raw_reader *r);
/* IncrementalAlterConfigs v0 of one key (op 0 SET, 1 DELETE) on one
 * BROKER resource (a broker id, or "" for the cluster-wide default), on a
 * new connection. Returns the resource's error code with its message in
 * msg, or -1 when no well-formed answer came. */
int raw_incremental_alter_broker(int port, const char *resource, const char *key, int8_t op, const char *value,
                                 char *msg, size_t msglen);
/* Waits until the peer closes or resets the connection, discarding
 * anything it sends. Returns true if it closed within timeout_ms. */
bool raw_wait_closed(int fd, int timeout_ms);

/* Supported version range for one API, from an ApiVersions answer. */
struct raw_api_range {
    int16_t api_key;
    int16_t min_version;
    int16_t max_version;
};

/* A feature range of ApiVersions v3+ (KIP-584): min/max supported
 * versions, or the finalized min/max levels. */
struct raw_feature_range {
    char name[64];
    int16_t min_version;
    int16_t max_version;
};

struct raw_api_versions {
    int16_t error_code;
    int count;
    struct raw_api_range ranges[128];
    /* v3+ tagged fields; counts 0 and epoch -1 when absent. */
    int supported_count;
    struct raw_feature_range supported[8];
    int64_t finalized_epoch;
    int finalized_count;
    struct raw_feature_range finalized[8];
};

/* Sends ApiVersions (the given version, header v1 or v2 as the version
 * needs) and parses the v0-layout part of the answer. Returns 0 on
 * success, -1 on I/O failure or malformed answer. */
int raw_api_versions(int fd, int16_t version, int32_t correlation_id, struct raw_api_versions *out);
/* Looks up a supported or finalized feature by name; NULL if absent. */
const struct raw_feature_range *raw_feature_find(const struct raw_feature_range *list, int count, const char *name);
/* Looks up api_key; returns NULL if absent. */
const struct raw_api_range *raw_api_versions_find(const struct raw_api_versions *v, int16_t api_key);

/* GET path from an HTTP listener on 127.0.0.1 (the metrics endpoint);
 * returns the whole answer, malloc'd, or NULL when it cannot connect. */
char *raw_http_get(int port, const char *path);
/* Value of the sample line starting with `series ` in a Prometheus page;
 * -1 if absent. */
long long raw_metric_value(const char *page, const char *series);
/* cairn_purgatory_waiting{purgatory="fetch"} (parked Fetch requests) from
 * the /metrics listener on port; -1 when the page or the series is missing. */
long long raw_fetch_purgatory_waiting(int metrics_port);
/* Polls that gauge until it equals want; returns the milliseconds it took,
 * or -1 after timeout_ms. */
long long raw_wait_fetch_purgatory(int metrics_port, long long want, int timeout_ms);

#endif
