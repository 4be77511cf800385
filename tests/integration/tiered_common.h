/* The tiered storage tests' broker and records: cairnd with the
 * storage-local plugin of this tree in a fresh remote dir, TOPIC with small
 * segments and one byte of local retention, records that show a shifted
 * byte, ListOffsets v9 raw, and the broker's /metrics. Test thread only. */
#ifndef CAIRN_TESTS_TIERED_COMMON_H
#define CAIRN_TESTS_TIERED_COMMON_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "harness.h"

#define TOPIC "tiered"
#define RECORDS_PER_ROUND 4000

/* Owned by the test's main thread. */
struct tiered_state {
    struct test_broker broker;
    char remote_root[64];
    char remote_dir[700];
    int metrics_port;
    long produced;
    int64_t ts_base; /* non-zero: record i is stamped ts_base + 10 * i */
};

/* Record i's value: varied lengths and content so a shifted or mixed-up
 * byte shows (keys are key-<i>). */
void tiered_record_value(long i, char *out, size_t outlen);

/* rk_consume_each's callback: the message is record *(long *)ctx (offset,
 * key and value), then counts it. */
bool tiered_check_record(const rd_kafka_message_t *msg, void *ctx);

/* Produces count more records (keys key-<i>, values record_value) to
 * partition 0 of TOPIC; every one must be acknowledged. */
void produce_round(struct tiered_state *st, long count);

/* How many files in dir end in suffix (0 when dir is missing). */
int count_files(const char *dir, const char *suffix);

/* The remote folder of the partition: <remote>/tiered-0/<topic id>. */
bool remote_partition_dir(const struct tiered_state *st, char *out, size_t outlen);

/* Waits until the local partition holds at most max_local segments and the
 * remote store at least min_remote. */
void wait_tiered(struct tiered_state *st, int max_local, int min_remote);

/* A consumer from offset 0 reads every record produced, byte for byte. */
void consume_all_from_zero(struct tiered_state *st);

/* ListOffsets v9 for partition 0 and one timestamp spec: the offset, and
 * the partition's error code in *error. */
int64_t list_offset_raw(const struct tiered_state *st, int64_t spec, int16_t *error);

/* The same, failing the test on an error. */
int64_t list_offset_v9(const struct tiered_state *st, int64_t spec);

/* A sample of the broker's /metrics; -1 when not exported. */
int64_t metric_value(const struct tiered_state *st, const char *name);
/* Failed remote operations of every kind: the sum of
 * cairn_remote_errors_total's op="<op>" series (copy, fetch, delete);
 * -1 when a series is missing. */
int64_t remote_errors_total(const struct tiered_state *st, const char *op);

/* cairnd with storage-local in a fresh remote dir, and TOPIC created with
 * small segments and a local retention of one byte. */
void start_tiered(struct tiered_state *st, const char *topic);

/* The same with extra broker overrides (NULL-terminated, later ones win)
 * and the topic's segment.bytes. */
void start_tiered_with(struct tiered_state *st, const char *topic, const char *const *extra, const char *segment_bytes);

/* A day ago, so no retention or timestamp bound gets in the way. */
int64_t day_old_ms(void);

/* start_tiered, then one round of records stamped from a day ago, waited
 * on until at most 2 segments are local and at least 10 remote. */
void start_stamped_round(struct tiered_state *st);

/* cmocka setup and teardown: a fresh tiered_state; the remote dir is
 * removed once the broker passed. */
int tiered_setup(void **state);

int tiered_teardown(void **state);

#endif
