/* Request builders and answer parsers for integration tests that speak the
 * newest flexible versions on one raw connection: CreateTopics v7, Produce
 * v7, Fetch v17, OffsetFetch v9 and FindCoordinator v5, plus the compact
 * encodings raw_kafka.h lacks. Every parser checks the whole answer was
 * read and fails the current cmocka test otherwise, so callers read as
 * scripts. Include <cmocka.h> (with its prerequisites) before this header.
 *
 * Thread-safety: a struct raw_session belongs to the thread that opened
 * it; the functions keep no shared state. */
#ifndef CAIRN_TESTS_RAW_SESSION_H
#define CAIRN_TESTS_RAW_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness.h"
#include "raw_kafka.h"

/* Timestamp of the first record of every batch raw_produce_v7 sends. */
#define RAW_SESSION_BATCH_TS 1700000000000LL

/* One connection and its next correlation id. */
struct raw_session {
    int fd;
    int32_t correlation;
};

void raw_put_compact_array_len(struct raw_writer *w, int n);
void raw_put_compact_bytes(struct raw_writer *w, const void *p, size_t n);
void raw_get_uuid(struct raw_reader *r, uint8_t out[16]);

/* A cairnd (group.initial.rebalance.delay.ms=50) with one single-partition
 * topic and a raw session to it: the group fixture of the raw version
 * tests. Owned by the test thread. */
struct raw_broker_fixture {
    struct test_broker broker;
    struct raw_session session;
    uint8_t topic_id[16];
};

/* Starts the broker, connects and creates `topic`. 0, or -1. */
int raw_broker_fixture_start(struct raw_broker_fixture *f, const char *topic);
/* Closes the session and cleans the broker up. */
void raw_broker_fixture_stop(struct raw_broker_fixture *f);

/* Starts a request with header v2 and the session's next correlation id. */
void raw_session_begin(struct raw_session *s, struct raw_writer *w, int16_t api, int16_t version);
/* Finishes, sends and frees w, then reads the answer; r reads its body past
 * the response header. Returns the frame to free. */
uint8_t *raw_session_roundtrip(struct raw_session *s, struct raw_writer *w, struct raw_reader *r, bool flexible_header);
/* An Envelope (v0) sent on a new connection to the listener at port, as a
 * forwarding broker sends it: a CreateTopics v7 of `topic` (one partition,
 * client id `client_id`) on behalf of User:admin from 127.0.0.1. Returns
 * the Envelope's ErrorCode; *response_len (may be NULL) gets its Response
 * field's compact length (0: null, else length + 1). */
int16_t raw_envelope_create_topic(int port, const char *topic, const char *client_id, uint64_t *response_len);
/* Frees the frame and fails the test unless r read it exactly. */
void raw_session_finish_read(struct raw_reader *r, uint8_t *frame);

/* Reads, in a non-flexible answer, a topic array that must hold one topic
 * with one partition numbered `partition`: the two counts, the topic name
 * and the partition index. r is left at that partition's next field. */
void raw_expect_one_partition(struct raw_reader *r, int32_t partition);

/* Sends a built OffsetCommit (v8+) or TxnOffsetCommit (v3+) of one
 * partition of `topic` and returns that partition's error; both answers have
 * the same layout. */
int16_t raw_session_commit_roundtrip(struct raw_session *s, struct raw_writer *w, const char *topic);

/* CreateTopics v7 of one topic (replication factor 1); returns its id. */
void raw_create_topic_v7(struct raw_session *s, const char *name, int partitions, uint8_t id[16]);

/* Produce v7 of `count` (at most 8) records to partition 0, acks=-1; a
 * transactional batch (first sequence 0) when txn_id is set. Returns the
 * partition's error. */
int16_t raw_produce_v7(struct raw_session *s, const char *topic, const char *txn_id, int64_t pid, int16_t epoch,
                       int count);

struct raw_fetch_answer {
    int16_t error;
    int64_t high_watermark;
    int64_t last_stable_offset;
    int data_records; /* records in non-control batches */
    int control_batches;
};

/* Fetch v17 of partition 0 of the topic with `id`, from offset 0, without a
 * session; directory_tag adds a ReplicaDirectoryId tagged field. */
void raw_fetch_v17(struct raw_session *s, const uint8_t id[16], int8_t isolation, bool directory_tag,
                   struct raw_fetch_answer *a);

struct raw_fetched_offset {
    int16_t group_error;
    int16_t error;
    int64_t offset;
};

/* OffsetFetch v9 of `topic` partition 0 for one group, naming member and
 * epoch (member NULL: none). */
void raw_offset_fetch_v9(struct raw_session *s, const char *group, const char *member, int32_t epoch, const char *topic,
                         bool require_stable, struct raw_fetched_offset *out);

struct raw_coordinator_answer {
    int16_t error;
    int32_t node_id;
    int32_t port;
};

/* FindCoordinator v5 for two keys of one type. */
void raw_find_coordinator_v5(struct raw_session *s, int8_t key_type, const char *k1, const char *k2,
                             struct raw_coordinator_answer out[2]);

#endif
