/* librdkafka helpers for integration tests: client construction, topic
 * creation through the admin API, deterministic produce, and reading a
 * whole topic back. Functions that cannot continue fail the current
 * cmocka test; include <cmocka.h> first.
 *
 * Thread-safety: an rk_record_set is owned by one thread; the client
 * handles are librdkafka's (thread-safe). */
#ifndef CAIRN_TESTS_RK_HELPERS_H
#define CAIRN_TESTS_RK_HELPERS_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* conf is a NULL-terminated list of key, value, key, value, ... (may be NULL). */
rd_kafka_t *rk_producer_new(const char *bootstrap, const char *const *conf);
/* Legacy (group-less) consumer; partitions are started explicitly. */
rd_kafka_t *rk_consumer_new(const char *bootstrap, const char *const *conf);

/* Runs one CreateTopics through rd_kafka_CreateTopics and returns the
 * topic's result code; errstr receives the broker's message. configs is
 * a NULL-terminated key, value list. */
rd_kafka_resp_err_t rk_create_topic_result(rd_kafka_t *rk, const char *topic, int partitions, int replication_factor,
                                           const char *const *configs, bool validate_only, char *errstr, size_t errlen);
/* Creates a topic (replication factor 1) and waits until its metadata
 * shows every partition with a leader; fails the test otherwise. */
void rk_create_topic(const char *bootstrap, const char *topic, int partitions, const char *const *configs);
/* Waits until metadata lists `topic` with `partitions` led partitions. */
bool rk_wait_topic(rd_kafka_t *rk, const char *topic, int partitions, int timeout_ms);

/* One record as read back. */
struct rk_record {
    int32_t partition;
    int64_t offset;
    int64_t timestamp;
    rd_kafka_timestamp_type_t timestamp_type;
    char *key;
    size_t key_len;
    char *value;
    size_t value_len;
    int header_count;
    char *header_names[4];
    char *header_values[4];
    size_t header_lens[4];
};

struct rk_record_set {
    struct rk_record *records;
    size_t count;
    size_t cap;
};

void rk_record_set_free(struct rk_record_set *set);

/* Called for each consumed message; return false to fail the read. */
typedef bool (*rk_message_fn)(const rd_kafka_message_t *msg, void *ctx);

/* Reads `topic` partitions [0, partitions) from the beginning until each
 * partition reports end-of-partition at or beyond want[p] messages (want
 * may be NULL: then end-of-partition alone ends it), calling fn for every
 * message. Returns the total message count, or -1 on timeout/fn failure
 * (a description goes to stderr). */
long rk_consume_each(const char *bootstrap, const char *topic, int partitions, const long *want, int timeout_ms,
                     rk_message_fn fn, void *ctx);
/* Same, collecting copies of every record into set. */
long rk_consume_all(const char *bootstrap, const char *topic, int partitions, const long *want, int timeout_ms,
                    struct rk_record_set *set);

/* Delivery statistics for a producer made by rk_producer_new. */
struct rk_delivery_stats {
    long delivered;
    long failed;
    rd_kafka_resp_err_t first_error;
    char first_error_text[256];
};
/* The stats live in the handle's opaque; valid until rd_kafka_destroy. */
struct rk_delivery_stats *rk_producer_stats(rd_kafka_t *rk);
void rk_producer_destroy(rd_kafka_t *rk);

/* Optional per-message outcome: pass its address as msg_opaque to
 * rk_produce_blocking and the delivery callback fills it in. */
struct rk_delivery_slot {
    int32_t partition;
    int64_t offset;
    rd_kafka_resp_err_t err;
    bool done;
};

/* The next event of `type` on an admin result queue (others are dropped);
 * fails the test after timeout_ms. Destroy it with rd_kafka_event_destroy. */
rd_kafka_event_t *rk_admin_result(rd_kafka_queue_t *q, rd_kafka_event_type_t type, int timeout_ms);

/* Fails the test with `what` and librdkafka's message when err is set
 * (and destroys it); nothing when err is NULL. */
void rk_expect_ok(rd_kafka_error_t *err, const char *what);

/* One record "v" to partition 0 of topic through rk (a producer made by
 * rk_producer_new), flushed: the delivery error (__TIMED_OUT without one). */
rd_kafka_resp_err_t rk_produce_one_delivered(rd_kafka_t *rk, const char *topic);

/* Produces one message, waiting (polling) while the local queue is full.
 * Returns librdkafka's error for the enqueue. */
rd_kafka_resp_err_t rk_produce_blocking(rd_kafka_t *rk, const char *topic, int32_t partition, const void *key,
                                        size_t key_len, const void *value, size_t value_len, int64_t timestamp,
                                        rd_kafka_headers_t *headers, void *msg_opaque);

/* rd_kafka_DeleteRecords of partition 0; returns its error, *low the
 * low watermark it reports. */
rd_kafka_resp_err_t rk_delete_records(rd_kafka_t *rk, const char *topic, int64_t before, int64_t *low);

#endif
