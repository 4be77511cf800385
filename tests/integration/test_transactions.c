/* Transactions end to end against a real cairnd:
 *  - the coordinator's wire API with raw requests (FindCoordinator for a
 *    transactional id, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
 *    EndTxn, DescribeTransactions, ListTransactions);
 *  - an open transaction survives a broker restart and is then aborted by
 *    the timeout, under a bumped epoch;
 *  - zombie fencing: two librdkafka producers sharing a transactional.id;
 *  - librdkafka transactions over 3 topics x 4 partitions, committed and
 *    aborted, read back by a read_committed consumer through assign(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define API_FIND_COORDINATOR 10
#define API_INIT_PRODUCER_ID 22
#define API_ADD_PARTITIONS_TO_TXN 24
#define API_ADD_OFFSETS_TO_TXN 25
#define API_END_TXN 26
#define API_DESCRIBE_TRANSACTIONS 65
#define API_LIST_TRANSACTIONS 66

#define ERR_NONE 0
#define ERR_UNKNOWN_TOPIC_OR_PARTITION 3
#define ERR_INVALID_PRODUCER_EPOCH 47
#define ERR_INVALID_TXN_STATE 48
#define ERR_INVALID_PRODUCER_ID_MAPPING 49
#define ERR_INVALID_TRANSACTION_TIMEOUT 50
#define ERR_CONCURRENT_TRANSACTIONS 51
#define ERR_OPERATION_NOT_ATTEMPTED 55
#define ERR_TRANSACTIONAL_ID_NOT_FOUND 105

static int32_t next_correlation = 1;

static uint8_t *exchange(int port, struct raw_writer *w, bool flexible_response, struct raw_reader *r)
{
    int fd = raw_connect(port, 10000);
    assert_true(fd >= 0);
    assert_int_equal(raw_send_all(fd, w->data, w->len), 0);
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = raw_recv_frame(fd, 10000, 1 << 20, &frame, &len);
    close(fd);
    if (rc != 0)
        fail_msg("no answer (%s)", rc == 1 ? "connection closed" : "timeout");
    raw_reader_init(r, frame, len);
    (void)raw_get_i32(r); /* correlation id */
    if (flexible_response)
        raw_skip_tagged_fields(r);
    return frame;
}

/* A request with a single error code answer after the throttle time. */
static int16_t exchange_error_only(int port, struct raw_writer *w)
{
    struct raw_reader r;
    uint8_t *frame = exchange(port, w, false, &r);
    (void)raw_get_i32(&r);
    int16_t err = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return err;
}

struct coordinator {
    int16_t error;
    int32_t node_id;
    int32_t port;
};

static struct coordinator find_txn_coordinator(int port, const char *txn_id)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_FIND_COORDINATOR, 1, next_correlation++, "txn-raw");
    raw_put_string(&w, txn_id);
    raw_put_i8(&w, 1); /* transaction */
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, false, &r);
    raw_writer_free(&w);
    struct coordinator c;
    (void)raw_get_i32(&r);
    c.error = raw_get_i16(&r);
    raw_skip_string(&r);
    c.node_id = raw_get_i32(&r);
    raw_skip_string(&r);
    c.port = raw_get_i32(&r);
    assert_false(r.overflow);
    free(frame);
    return c;
}

struct pid_answer {
    int16_t error;
    int64_t producer_id;
    int16_t epoch;
};

/* InitProducerId v1 (non-flexible). */
static struct pid_answer init_producer_id(int port, const char *txn_id, int32_t timeout_ms)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_INIT_PRODUCER_ID, 1, next_correlation++, "txn-raw");
    raw_put_string(&w, txn_id);
    raw_put_i32(&w, timeout_ms);
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, false, &r);
    raw_writer_free(&w);
    struct pid_answer a;
    (void)raw_get_i32(&r);
    a.error = raw_get_i16(&r);
    a.producer_id = raw_get_i64(&r);
    a.epoch = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return a;
}

/* AddPartitionsToTxn v1 for one topic; errors[i] per partition. Returns
 * how many partition results came back. */
static int add_partitions(int port, const char *txn_id, int64_t pid, int16_t epoch, const char *topic,
                          const int32_t *partitions, int count, int16_t *errors)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_ADD_PARTITIONS_TO_TXN, 1, next_correlation++, "txn-raw");
    raw_put_string(&w, txn_id);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, count);
    for (int i = 0; i < count; i++)
        raw_put_i32(&w, partitions[i]);
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, false, &r);
    raw_writer_free(&w);
    (void)raw_get_i32(&r);
    int32_t topics = raw_get_i32(&r);
    int seen = 0;
    for (int32_t t = 0; t < topics && !r.overflow; t++) {
        raw_skip_string(&r);
        int32_t n = raw_get_i32(&r);
        for (int32_t i = 0; i < n && !r.overflow; i++) {
            int32_t partition = raw_get_i32(&r);
            int16_t err = raw_get_i16(&r);
            for (int j = 0; j < count; j++)
                if (partitions[j] == partition)
                    errors[j] = err;
            seen++;
        }
    }
    assert_false(r.overflow);
    free(frame);
    return seen;
}

static int16_t add_offsets(int port, const char *txn_id, int64_t pid, int16_t epoch, const char *group)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_ADD_OFFSETS_TO_TXN, 1, next_correlation++, "txn-raw");
    raw_put_string(&w, txn_id);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_string(&w, group);
    raw_frame_finish(&w);
    int16_t err = exchange_error_only(port, &w);
    raw_writer_free(&w);
    return err;
}

static int16_t end_txn(int port, const char *txn_id, int64_t pid, int16_t epoch, bool commit)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_END_TXN, 1, next_correlation++, "txn-raw");
    raw_put_string(&w, txn_id);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_i8(&w, commit ? 1 : 0);
    raw_frame_finish(&w);
    int16_t err = exchange_error_only(port, &w);
    raw_writer_free(&w);
    return err;
}

struct description {
    int16_t error;
    char state[32];
    int32_t timeout_ms;
    int64_t producer_id;
    int16_t epoch;
    int partitions;   /* total over topics */
    char topics[256]; /* "topic:p,p;topic:p;" */
};

static struct description describe(int port, const char *txn_id)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, API_DESCRIBE_TRANSACTIONS, 0, next_correlation++, "txn-raw");
    raw_put_uvarint(&w, 2); /* one id */
    raw_put_compact_string(&w, txn_id);
    raw_put_uvarint(&w, 0);
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, true, &r);
    raw_writer_free(&w);
    struct description d;
    memset(&d, 0, sizeof d);
    (void)raw_get_i32(&r);
    uint64_t n = raw_get_uvarint(&r);
    assert_int_equal(n, 2);
    d.error = raw_get_i16(&r);
    char id[128];
    raw_get_compact_string(&r, id, sizeof id);
    assert_string_equal(id, txn_id);
    raw_get_compact_string(&r, d.state, sizeof d.state);
    d.timeout_ms = raw_get_i32(&r);
    (void)raw_get_i64(&r); /* start time */
    d.producer_id = raw_get_i64(&r);
    d.epoch = raw_get_i16(&r);
    uint64_t topics = raw_get_uvarint(&r);
    size_t used = 0;
    for (uint64_t t = 1; t < topics && !r.overflow; t++) {
        char topic[64];
        raw_get_compact_string(&r, topic, sizeof topic);
        used += (size_t)snprintf(d.topics + used, sizeof d.topics - used, "%s:", topic);
        uint64_t parts = raw_get_uvarint(&r);
        for (uint64_t p = 1; p < parts && !r.overflow; p++) {
            int32_t partition = raw_get_i32(&r);
            used += (size_t)snprintf(d.topics + used, sizeof d.topics - used, "%s%d", p > 1 ? "," : "", (int)partition);
            d.partitions++;
        }
        used += (size_t)snprintf(d.topics + used, sizeof d.topics - used, ";");
        raw_skip_tagged_fields(&r);
    }
    assert_false(r.overflow);
    free(frame);
    return d;
}

/* ListTransactions v0 with an optional state filter; returns how many
 * listed ids equal want_id (0 or 1) and the count of unknown filters. */
static int list_contains(int port, const char *state_filter, const char *want_id, int *unknown_filters)
{
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_flexible(&w, API_LIST_TRANSACTIONS, 0, next_correlation++, "txn-raw");
    raw_put_uvarint(&w, state_filter ? 2 : 1);
    if (state_filter)
        raw_put_compact_string(&w, state_filter);
    raw_put_uvarint(&w, 1); /* no producer id filters */
    raw_put_uvarint(&w, 0);
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, true, &r);
    raw_writer_free(&w);
    (void)raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), ERR_NONE);
    uint64_t unknown = raw_get_uvarint(&r);
    *unknown_filters = unknown > 0 ? (int)unknown - 1 : 0;
    for (uint64_t i = 1; i < unknown && !r.overflow; i++) {
        char name[64];
        raw_get_compact_string(&r, name, sizeof name);
    }
    uint64_t states = raw_get_uvarint(&r);
    int found = 0;
    for (uint64_t i = 1; i < states && !r.overflow; i++) {
        char id[128], state[32];
        raw_get_compact_string(&r, id, sizeof id);
        (void)raw_get_i64(&r);
        raw_get_compact_string(&r, state, sizeof state);
        raw_skip_tagged_fields(&r);
        if (strcmp(id, want_id) == 0)
            found++;
    }
    assert_false(r.overflow);
    free(frame);
    return found;
}

struct txn_fixture {
    struct test_broker broker;
};

static int setup(void **state)
{
    struct txn_fixture *f = calloc(1, sizeof *f);
    const char *overrides[] = {"transaction.abort.timed.out.transaction.cleanup.interval.ms=300",
                               "transaction.state.log.num.partitions=5", NULL};
    broker_start(&f->broker, overrides);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct txn_fixture *f = *state;
    broker_cleanup(&f->broker);
    free(f);
    return 0;
}

static void test_raw_coordinator_api(void **state)
{
    struct txn_fixture *f = *state;
    struct test_broker *b = &f->broker;
    int port = broker_port(b);
    rk_create_topic(broker_bootstrap(b), "raw-txn", 3, NULL);

    struct coordinator c = find_txn_coordinator(port, "raw-1");
    assert_int_equal(c.error, ERR_NONE);
    assert_int_equal(c.port, port);

    assert_int_equal(init_producer_id(port, "raw-1", 900001).error, ERR_INVALID_TRANSACTION_TIMEOUT);
    struct pid_answer a = init_producer_id(port, "raw-1", 60000);
    assert_int_equal(a.error, ERR_NONE);
    assert_true(a.producer_id >= 0);
    assert_int_equal(a.epoch, 0);
    struct description d = describe(port, "raw-1");
    assert_int_equal(d.error, ERR_NONE);
    assert_string_equal(d.state, "Empty");
    assert_int_equal(d.producer_id, a.producer_id);
    assert_int_equal(d.timeout_ms, 60000);
    assert_int_equal(end_txn(port, "raw-1", a.producer_id, a.epoch, true), ERR_INVALID_TXN_STATE);

    int32_t parts[] = {0, 2};
    int16_t errors[2] = {-1, -1};
    assert_int_equal(add_partitions(port, "raw-1", a.producer_id, a.epoch, "raw-txn", parts, 2, errors), 2);
    assert_int_equal(errors[0], ERR_NONE);
    assert_int_equal(errors[1], ERR_NONE);
    int32_t bad[] = {1, 7};
    assert_int_equal(add_partitions(port, "raw-1", a.producer_id, a.epoch, "raw-txn", bad, 2, errors), 2);
    assert_int_equal(errors[0], ERR_OPERATION_NOT_ATTEMPTED);
    assert_int_equal(errors[1], ERR_UNKNOWN_TOPIC_OR_PARTITION);
    /* v1 answers a stale epoch with INVALID_PRODUCER_EPOCH, an unknown id with the mapping error. */
    assert_int_equal(add_partitions(port, "raw-1", a.producer_id, (int16_t)(a.epoch + 1), "raw-txn", parts, 1, errors),
                     1);
    assert_int_equal(errors[0], ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(add_partitions(port, "raw-none", a.producer_id, a.epoch, "raw-txn", parts, 1, errors), 1);
    assert_int_equal(errors[0], ERR_INVALID_PRODUCER_ID_MAPPING);
    assert_int_equal(add_offsets(port, "raw-1", a.producer_id, a.epoch, "raw-group"), ERR_NONE);

    d = describe(port, "raw-1");
    assert_string_equal(d.state, "Ongoing");
    assert_int_equal(d.partitions, 3);
    assert_non_null(strstr(d.topics, "raw-txn:0,2;"));
    assert_non_null(strstr(d.topics, "__consumer_offsets:"));
    int unknown = -1;
    assert_int_equal(list_contains(port, "Ongoing", "raw-1", &unknown), 1);
    assert_int_equal(unknown, 0);
    assert_int_equal(list_contains(port, "Empty", "raw-1", &unknown), 0);
    assert_int_equal(list_contains(port, "Sleeping", "raw-1", &unknown), 0);
    assert_int_equal(unknown, 1);
    assert_int_equal(list_contains(port, NULL, "raw-1", &unknown), 1);
    assert_int_equal(describe(port, "raw-unknown").error, ERR_TRANSACTIONAL_ID_NOT_FOUND);

    assert_int_equal(end_txn(port, "raw-1", a.producer_id, a.epoch, true), ERR_NONE);
    d = describe(port, "raw-1");
    /* PrepareCommit while markers are pending (or unavailable), then CompleteCommit. */
    assert_true(strcmp(d.state, "PrepareCommit") == 0 || strcmp(d.state, "CompleteCommit") == 0);
    assert_int_equal(end_txn(port, "raw-1", a.producer_id, a.epoch, false), ERR_INVALID_TXN_STATE);
    broker_mark_passed(b);
}

static void test_open_transaction_aborted_after_restart(void **state)
{
    struct txn_fixture *f = *state;
    struct test_broker *b = &f->broker;
    int port = broker_port(b);
    rk_create_topic(broker_bootstrap(b), "restart-txn", 2, NULL);
    struct pid_answer a = init_producer_id(port, "restart-1", 3000);
    assert_int_equal(a.error, ERR_NONE);
    int32_t parts[] = {0, 1};
    int16_t errors[2] = {-1, -1};
    add_partitions(port, "restart-1", a.producer_id, a.epoch, "restart-txn", parts, 2, errors);
    assert_int_equal(errors[0], ERR_NONE);
    assert_int_equal(errors[1], ERR_NONE);

    broker_stop(b);
    broker_restart(b);
    port = broker_port(b);
    struct description d = describe(port, "restart-1");
    assert_int_equal(d.error, ERR_NONE);
    assert_int_equal(d.producer_id, a.producer_id);
    assert_int_equal(d.epoch, a.epoch);
    if (strcmp(d.state, "Ongoing") == 0) {
        assert_int_equal(d.partitions, 2);
        assert_string_equal(d.topics, "restart-txn:0,1;");
    }
    /* The timeout (3 s from the first AddPartitionsToTxn) aborts it, bumping the epoch. */
    long long deadline = harness_now_ms() + 15000;
    while (strcmp(d.state, "Ongoing") == 0 && harness_now_ms() < deadline) {
        usleep(200000);
        d = describe(port, "restart-1");
    }
    assert_true(strcmp(d.state, "PrepareAbort") == 0 || strcmp(d.state, "CompleteAbort") == 0);
    assert_int_equal(d.epoch, a.epoch + 1);
    /* The old producer is fenced. */
    assert_int_equal(end_txn(port, "restart-1", a.producer_id, a.epoch, true), ERR_INVALID_PRODUCER_EPOCH);
    broker_mark_passed(b);
}

static rd_kafka_t *txn_producer(struct test_broker *b, const char *txn_id)
{
    const char *conf[] = {"transactional.id", txn_id, "transaction.timeout.ms", "30000", "linger.ms", "5", NULL};
    return rk_producer_new(broker_bootstrap(b), conf);
}

static void test_zombie_fencing(void **state)
{
    struct txn_fixture *f = *state;
    struct test_broker *b = &f->broker;
    rk_create_topic(broker_bootstrap(b), "zombie-txn", 1, NULL);
    rd_kafka_t *zombie = txn_producer(b, "zombie-id");
    rk_expect_ok(rd_kafka_init_transactions(zombie, 30000), "init_transactions (first)");
    rd_kafka_t *fresh = txn_producer(b, "zombie-id");
    rk_expect_ok(rd_kafka_init_transactions(fresh, 30000), "init_transactions (second)");

    /* The first instance's epoch is stale: registering a partition fails
     * and the producer is fenced for good. */
    rk_expect_ok(rd_kafka_begin_transaction(zombie), "begin_transaction");
    assert_int_equal(rk_produce_blocking(zombie, "zombie-txn", 0, "k", 1, "zombie", 6, 0, NULL, NULL),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_error_t *err = rd_kafka_commit_transaction(zombie, 30000);
    assert_non_null(err);
    bool fenced = rd_kafka_error_is_fatal(err) || rd_kafka_error_code(err) == RD_KAFKA_RESP_ERR__FENCED ||
                  rd_kafka_error_code(err) == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
                  rd_kafka_error_code(err) == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
    if (!fenced)
        fail_msg("zombie commit failed without fencing: %s", rd_kafka_error_string(err));
    rd_kafka_error_destroy(err);
    char reason[256];
    assert_int_not_equal(rd_kafka_fatal_error(zombie, reason, sizeof reason), RD_KAFKA_RESP_ERR_NO_ERROR);

    struct description d = describe(broker_port(b), "zombie-id");
    assert_int_equal(d.error, ERR_NONE);
    assert_string_equal(d.state, "Empty"); /* nothing reached the coordinator from the zombie */
    rk_producer_destroy(zombie);
    rk_producer_destroy(fresh);
    broker_mark_passed(b);
}

/* Set once the partition side (transactional batches, markers, LSO) is
 * wired in: from then on a refused transactional produce fails the test
 * instead of skipping it. */
static const bool partition_side_merged = true;

#define TOPICS 3
#define PARTS 4
static const char *const topic_names[TOPICS] = {"txn-a", "txn-b", "txn-c"};

static void produce_round(rd_kafka_t *rk, const char *prefix, int count)
{
    for (int i = 0; i < count; i++) {
        char value[64];
        int n = snprintf(value, sizeof value, "%s-%d", prefix, i);
        assert_int_equal(rk_produce_blocking(rk, topic_names[i % TOPICS], (i / TOPICS) % PARTS, NULL, 0, value,
                                             (size_t)n, 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
}

/* Reads every partition of the topics with a read_committed consumer
 * through assign() until each reaches its end; counts values per prefix. */
static void read_committed(struct test_broker *b, int *committed, int *aborted, int *later)
{
    const char *conf[] = {"group.id", "txn-reader",        "isolation.level", "read_committed",    "enable.auto.commit",
                          "false",    "auto.offset.reset", "earliest",        "fetch.wait.max.ms", "100",
                          NULL};
    rd_kafka_t *rk = rk_consumer_new(broker_bootstrap(b), conf);
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(TOPICS * PARTS);
    for (int t = 0; t < TOPICS; t++)
        for (int p = 0; p < PARTS; p++)
            rd_kafka_topic_partition_list_add(list, topic_names[t], p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    assert_int_equal(rd_kafka_assign(rk, list), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(list);
    int ended = 0;
    bool at_end[TOPICS][PARTS] = {{false}};
    long long deadline = harness_now_ms() + 30000;
    while (ended < TOPICS * PARTS && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        int t = -1;
        for (int i = 0; m->rkt && i < TOPICS; i++)
            if (strcmp(rd_kafka_topic_name(m->rkt), topic_names[i]) == 0)
                t = i;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (t >= 0 && m->partition >= 0 && m->partition < PARTS && !at_end[t][m->partition]) {
                at_end[t][m->partition] = true;
                ended++;
            }
        } else if (!m->err) {
            const char *v = m->payload;
            if (m->len >= 2 && strncmp(v, "c-", 2) == 0)
                (*committed)++;
            else if (m->len >= 2 && strncmp(v, "a-", 2) == 0)
                (*aborted)++;
            else if (m->len >= 3 && strncmp(v, "c2-", 3) == 0)
                (*later)++;
        }
        rd_kafka_message_destroy(m);
    }
    assert_int_equal(ended, TOPICS * PARTS);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
}

static void test_commit_abort_read_committed(void **state)
{
    struct txn_fixture *f = *state;
    struct test_broker *b = &f->broker;
    for (int t = 0; t < TOPICS; t++)
        rk_create_topic(broker_bootstrap(b), topic_names[t], PARTS, NULL);
    rd_kafka_t *rk = txn_producer(b, "txn-main");
    rk_expect_ok(rd_kafka_init_transactions(rk, 30000), "init_transactions");

    rk_expect_ok(rd_kafka_begin_transaction(rk), "begin (commit)");
    produce_round(rk, "c", 120);
    rd_kafka_error_t *err = rd_kafka_commit_transaction(rk, 30000);
    if (err && !partition_side_merged && strstr(rd_kafka_error_string(err), "ProduceRequest") &&
        strstr(rd_kafka_error_string(err), "transactional operation in an invalid state")) {
        /* Partitions that refuse transactional batches: the coordinator
         * alone cannot carry this case. */
        fprintf(stderr, "[test] skipping: the partitions refuse transactional batches (%s)\n",
                rd_kafka_error_string(err));
        rd_kafka_error_destroy(err);
        rk_producer_destroy(rk);
        broker_mark_passed(b);
        skip();
    }
    rk_expect_ok(err, "commit_transaction");

    rk_expect_ok(rd_kafka_begin_transaction(rk), "begin (abort)");
    produce_round(rk, "a", 60);
    assert_int_equal(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_expect_ok(rd_kafka_abort_transaction(rk, 30000), "abort_transaction");

    rk_expect_ok(rd_kafka_begin_transaction(rk), "begin (second commit)");
    produce_round(rk, "c2", 12);
    rk_expect_ok(rd_kafka_commit_transaction(rk, 30000), "second commit_transaction");
    rk_producer_destroy(rk);

    /* EndTxn answers once PrepareCommit is durable; the markers and
     * CompleteCommit follow from the coordinator's thread. */
    struct description d = describe(broker_port(b), "txn-main");
    for (int i = 0; i < 100 && strcmp(d.state, "CompleteCommit") != 0; i++) {
        usleep(50 * 1000);
        d = describe(broker_port(b), "txn-main");
    }
    assert_string_equal(d.state, "CompleteCommit");

    int committed = 0, aborted = 0, later = 0;
    read_committed(b, &committed, &aborted, &later);
    assert_int_equal(committed, 120);
    assert_int_equal(aborted, 0);
    assert_int_equal(later, 12);
    broker_mark_passed(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_raw_coordinator_api, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_transaction_aborted_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zombie_fencing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_abort_read_committed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
