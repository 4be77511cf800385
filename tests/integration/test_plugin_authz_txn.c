/* Authorization denials of the group member, offset delete, producer id and
 * transaction APIs with the test authorizer. Its deny lists apply only to
 * requests with client id INTRUDER (plugin.test_authz.deny.client.id), so
 * a FRIEND client first builds real state (a group generation, producer
 * ids, ongoing transactions) and the intruder then sends requests that
 * would succeed but for the denied resource. The friend repeats some of
 * them afterwards to show the input was valid. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#define INTRUDER "intruder"
#define FRIEND "friend"
#define OPEN_TOPIC "t-open"
#define SECRET_TOPIC "t-secret"
#define OPEN_GROUP "g-open"
#define SECRET_GROUP "g-secret"
#define OPEN_TXN "tx-open"
#define SECRET_TXN "tx-secret"

#define API_PRODUCE 0
#define API_OFFSET_COMMIT 8
#define API_JOIN_GROUP 11
#define API_HEARTBEAT 12
#define API_LEAVE_GROUP 13
#define API_SYNC_GROUP 14
#define API_INIT_PRODUCER_ID 22
#define API_ADD_PARTITIONS_TO_TXN 24
#define API_ADD_OFFSETS_TO_TXN 25
#define API_END_TXN 26
#define API_TXN_OFFSET_COMMIT 28
#define API_OFFSET_DELETE 47
#define API_DESCRIBE_PRODUCERS 61
#define API_DESCRIBE_TRANSACTIONS 65
#define API_LIST_TRANSACTIONS 66

#define ERR_NONE 0
#define ERR_TOPIC_AUTHORIZATION_FAILED 29
#define ERR_GROUP_AUTHORIZATION_FAILED 30
#define ERR_CLUSTER_AUTHORIZATION_FAILED 31
#define ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED 53
#define ERR_OPERATION_NOT_ATTEMPTED 55

#define BATCH_ATTR_TRANSACTIONAL 0x10

static int32_t correlation;

static void start_broker(struct test_broker *b)
{
    memset(b, 0, sizeof *b);
    const char *ov[] = {"plugin.path=" TEST_PLUGIN_DIR,
                        "plugins=test_authz",
                        "plugin.test_authz.deny.client.id=" INTRUDER,
                        "plugin.test_authz.deny.topics=" SECRET_TOPIC,
                        "plugin.test_authz.deny.groups=" SECRET_GROUP,
                        "plugin.test_authz.deny.transactional.ids=" SECRET_TXN,
                        "plugin.test_authz.deny.cluster=1",
                        "group.initial.rebalance.delay.ms=0",
                        "offsets.topic.num.partitions=3",
                        "transaction.state.log.num.partitions=3",
                        NULL};
    broker_start(b, ov);
}

static void stop_broker(struct test_broker *b)
{
    broker_stop(b);
    broker_mark_passed(b);
    broker_cleanup(b);
}

static void begin(struct raw_writer *w, int16_t api, int16_t version, const char *client, bool flexible)
{
    raw_writer_init(w);
    raw_frame_begin_as(w, api, version, flexible, ++correlation, client);
}

/* Finishes and sends w (then frees it) and returns the response frame,
 * with r placed after the response header; the caller frees the frame. */
static uint8_t *exchange(struct test_broker *b, struct raw_writer *w, bool flexible, struct raw_reader *r)
{
    uint8_t *frame = NULL;
    int rc = raw_exchange(broker_port(b), w, correlation, flexible, 15000, &frame, r);
    if (rc != 0)
        fail_msg("no answer (%s)", rc == 1 ? "connection closed" : "timeout or wrong correlation id");
    return frame;
}

/* For answers that are [throttle_time_ms] error_code and nothing we need. */
static int16_t exchange_error(struct test_broker *b, struct raw_writer *w, bool has_throttle)
{
    struct raw_reader r;
    uint8_t *frame = exchange(b, w, false, &r);
    if (has_throttle)
        raw_get_i32(&r);
    int16_t error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

static void skip_bytes(struct raw_reader *r)
{
    int32_t n = raw_get_i32(r);
    if (n > 0)
        raw_skip(r, (size_t)n);
}

static void get_string(struct raw_reader *r, char *out, size_t outlen)
{
    int16_t n = raw_get_i16(r);
    out[0] = '\0';
    if (n <= 0 || r->overflow)
        return;
    if ((size_t)n > r->len - r->pos) {
        r->overflow = true;
        return;
    }
    size_t copy = (size_t)n < outlen - 1 ? (size_t)n : outlen - 1;
    memcpy(out, r->data + r->pos, copy);
    out[copy] = '\0';
    raw_skip(r, (size_t)n);
}

/* One partition of a request; error receives its answer. */
struct part {
    const char *topic;
    int32_t partition;
    int16_t error;
};

/* Reads a non-flexible [topic [partition error_code]] answer into parts
 * (matched by topic and partition); every part must be answered. */
static void read_partition_errors(struct raw_reader *r, struct part *parts, int n)
{
    for (int i = 0; i < n; i++)
        parts[i].error = -1;
    int32_t topics = raw_get_i32(r);
    for (int32_t t = 0; t < topics && !r->overflow; t++) {
        char topic[64];
        get_string(r, topic, sizeof topic);
        int32_t np = raw_get_i32(r);
        for (int32_t p = 0; p < np && !r->overflow; p++) {
            int32_t partition = raw_get_i32(r);
            int16_t error = raw_get_i16(r);
            for (int i = 0; i < n; i++)
                if (strcmp(parts[i].topic, topic) == 0 && parts[i].partition == partition)
                    parts[i].error = error;
        }
    }
    assert_false(r->overflow);
    for (int i = 0; i < n; i++)
        assert_int_not_equal(parts[i].error, -1);
}

/* ---- producer ids and transactions ---- */

struct producer {
    int16_t error;
    int64_t id;
    int16_t epoch;
};

/* InitProducerId v1; txn_id NULL asks for an idempotent producer id. */
static struct producer init_producer_id(struct test_broker *b, const char *client, const char *txn_id)
{
    struct raw_writer w;
    begin(&w, API_INIT_PRODUCER_ID, 1, client, false);
    raw_put_string(&w, txn_id);
    raw_put_i32(&w, 60000);
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, false, &r);
    raw_get_i32(&r);
    struct producer p = {.error = raw_get_i16(&r)};
    p.id = raw_get_i64(&r);
    p.epoch = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return p;
}

/* AddPartitionsToTxn v1, one topic entry per part. */
static void add_partitions(struct test_broker *b, const char *client, const char *txn_id, const struct producer *p,
                           struct part *parts, int n)
{
    struct raw_writer w;
    begin(&w, API_ADD_PARTITIONS_TO_TXN, 1, client, false);
    raw_put_string(&w, txn_id);
    raw_put_i64(&w, p->id);
    raw_put_i16(&w, p->epoch);
    raw_put_i32(&w, n);
    for (int i = 0; i < n; i++) {
        raw_put_string(&w, parts[i].topic);
        raw_put_i32(&w, 1);
        raw_put_i32(&w, parts[i].partition);
    }
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, false, &r);
    raw_get_i32(&r);
    read_partition_errors(&r, parts, n);
    free(frame);
}

static int16_t add_offsets(struct test_broker *b, const char *client, const char *txn_id, const struct producer *p,
                           const char *group)
{
    struct raw_writer w;
    begin(&w, API_ADD_OFFSETS_TO_TXN, 1, client, false);
    raw_put_string(&w, txn_id);
    raw_put_i64(&w, p->id);
    raw_put_i16(&w, p->epoch);
    raw_put_string(&w, group);
    return exchange_error(b, &w, true);
}

static int16_t end_txn(struct test_broker *b, const char *client, const char *txn_id, const struct producer *p,
                       bool commit)
{
    struct raw_writer w;
    begin(&w, API_END_TXN, 1, client, false);
    raw_put_string(&w, txn_id);
    raw_put_i64(&w, p->id);
    raw_put_i16(&w, p->epoch);
    raw_put_i8(&w, commit ? 1 : 0);
    return exchange_error(b, &w, true);
}

/* TxnOffsetCommit v0 of offset 1 for each part. */
static void txn_offset_commit(struct test_broker *b, const char *client, const char *txn_id, const char *group,
                              const struct producer *p, struct part *parts, int n)
{
    struct raw_writer w;
    begin(&w, API_TXN_OFFSET_COMMIT, 0, client, false);
    raw_put_string(&w, txn_id);
    raw_put_string(&w, group);
    raw_put_i64(&w, p->id);
    raw_put_i16(&w, p->epoch);
    raw_put_i32(&w, n);
    for (int i = 0; i < n; i++) {
        raw_put_string(&w, parts[i].topic);
        raw_put_i32(&w, 1);
        raw_put_i32(&w, parts[i].partition);
        raw_put_i64(&w, 1);
        raw_put_string(&w, NULL);
    }
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, false, &r);
    raw_get_i32(&r);
    read_partition_errors(&r, parts, n);
    free(frame);
}

static void put_be(uint8_t *at, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        at[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

/* Produce v3 of one transactional record (sequence 0) to partition 0 of
 * topic; returns the partition's error. */
static int16_t produce_transactional(struct test_broker *b, const char *client, const char *txn_id,
                                     const struct producer *p, const char *topic)
{
    struct raw_writer batch;
    raw_writer_init(&batch);
    const struct raw_record rec = {NULL, "transactional"};
    size_t start = raw_build_record_batch(&batch, 1700000000000LL, &rec, 1);
    uint8_t *at = batch.data + start;
    put_be(at + 21, BATCH_ATTR_TRANSACTIONAL, 2);
    put_be(at + 43, (uint64_t)p->id, 8);
    put_be(at + 51, (uint16_t)p->epoch, 2);
    put_be(at + 53, 0, 4);
    put_be(at + 17, raw_crc32c(at + 21, batch.len - start - 21), 4);

    struct raw_writer w;
    begin(&w, API_PRODUCE, 3, client, false);
    raw_put_produce_body(&w, txn_id, -1, topic, 0, batch.data, batch.len);
    raw_writer_free(&batch);
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, false, &r);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return error;
}

/* One transaction as DescribeTransactions answers it. */
struct description {
    int16_t error;
    char txn_id[64];
    char topics[256]; /* "topic;topic;" */
};

/* DescribeTransactions v0 for two ids. */
static void describe_transactions(struct test_broker *b, const char *client, const char *id0, const char *id1,
                                  struct description out[2])
{
    struct raw_writer w;
    begin(&w, API_DESCRIBE_TRANSACTIONS, 0, client, true);
    raw_put_uvarint(&w, 3);
    raw_put_compact_string(&w, id0);
    raw_put_compact_string(&w, id1);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, true, &r);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 3);
    memset(out, 0, 2 * sizeof *out);
    for (int i = 0; i < 2 && !r.overflow; i++) {
        out[i].error = raw_get_i16(&r);
        char state[32];
        raw_get_compact_string(&r, out[i].txn_id, sizeof out[i].txn_id);
        raw_get_compact_string(&r, state, sizeof state);
        raw_get_i32(&r);
        raw_get_i64(&r);
        raw_get_i64(&r);
        raw_get_i16(&r);
        uint64_t topics = raw_get_uvarint(&r);
        size_t used = 0;
        for (uint64_t t = 1; t < topics && !r.overflow; t++) {
            char topic[64];
            raw_get_compact_string(&r, topic, sizeof topic);
            used += (size_t)snprintf(out[i].topics + used, sizeof out[i].topics - used, "%s;", topic);
            uint64_t parts = raw_get_uvarint(&r);
            for (uint64_t p = 1; p < parts && !r.overflow; p++)
                raw_get_i32(&r);
            raw_skip_tagged_fields(&r);
        }
        raw_skip_tagged_fields(&r);
    }
    assert_false(r.overflow);
    free(frame);
    assert_string_equal(out[0].txn_id, id0);
    assert_string_equal(out[1].txn_id, id1);
}

/* ListTransactions v0 without filters: whether each id is listed. */
static void list_transactions(struct test_broker *b, const char *client, bool *saw_open, bool *saw_secret)
{
    struct raw_writer w;
    begin(&w, API_LIST_TRANSACTIONS, 0, client, true);
    raw_put_uvarint(&w, 1);
    raw_put_uvarint(&w, 1);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, true, &r);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), ERR_NONE);
    uint64_t unknown = raw_get_uvarint(&r);
    assert_true(unknown <= 1);
    uint64_t states = raw_get_uvarint(&r);
    *saw_open = *saw_secret = false;
    for (uint64_t i = 1; i < states && !r.overflow; i++) {
        char id[64], state[32];
        raw_get_compact_string(&r, id, sizeof id);
        raw_get_i64(&r);
        raw_get_compact_string(&r, state, sizeof state);
        raw_skip_tagged_fields(&r);
        *saw_open |= strcmp(id, OPEN_TXN) == 0;
        *saw_secret |= strcmp(id, SECRET_TXN) == 0;
    }
    assert_false(r.overflow);
    free(frame);
}

/* DescribeProducers v0, partition 0 of each part's topic. */
static void describe_producers(struct test_broker *b, const char *client, struct part *parts, int n)
{
    struct raw_writer w;
    begin(&w, API_DESCRIBE_PRODUCERS, 0, client, true);
    raw_put_uvarint(&w, (uint64_t)n + 1);
    for (int i = 0; i < n; i++) {
        raw_put_compact_string(&w, parts[i].topic);
        raw_put_uvarint(&w, 2);
        raw_put_i32(&w, parts[i].partition);
        raw_put_uvarint(&w, 0);
    }
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, true, &r);
    raw_get_i32(&r);
    for (int i = 0; i < n; i++)
        parts[i].error = -1;
    uint64_t topics = raw_get_uvarint(&r);
    for (uint64_t t = 1; t < topics && !r.overflow; t++) {
        char topic[64];
        raw_get_compact_string(&r, topic, sizeof topic);
        uint64_t np = raw_get_uvarint(&r);
        for (uint64_t p = 1; p < np && !r.overflow; p++) {
            int32_t partition = raw_get_i32(&r);
            int16_t error = raw_get_i16(&r);
            char message[128];
            raw_get_compact_string(&r, message, sizeof message);
            uint64_t producers = raw_get_uvarint(&r);
            for (uint64_t k = 1; k < producers && !r.overflow; k++) {
                raw_skip(&r, 8 + 4 + 4 + 8 + 4 + 8);
                raw_skip_tagged_fields(&r);
            }
            raw_skip_tagged_fields(&r);
            for (int i = 0; i < n; i++)
                if (strcmp(parts[i].topic, topic) == 0 && parts[i].partition == partition)
                    parts[i].error = error;
        }
        raw_skip_tagged_fields(&r);
    }
    assert_false(r.overflow);
    free(frame);
    for (int i = 0; i < n; i++)
        assert_int_not_equal(parts[i].error, -1);
}

/* ---- group members and offsets ---- */

struct membership {
    int32_t generation;
    char member_id[128];
};

/* JoinGroup v1 as a new member, then SyncGroup v0 as the leader: the
 * group is Stable with this one member. */
static struct membership join_and_sync(struct test_broker *b, const char *client, const char *group)
{
    struct raw_writer w;
    begin(&w, API_JOIN_GROUP, 1, client, false);
    raw_put_string(&w, group);
    raw_put_i32(&w, 30000);
    raw_put_i32(&w, 30000);
    raw_put_string(&w, "");
    raw_put_string(&w, "consumer");
    raw_put_i32(&w, 1);
    raw_put_string(&w, "range");
    raw_put_i32(&w, 2 + 4 + 2 + (int32_t)strlen(OPEN_TOPIC) + 4); /* subscription v0 */
    raw_put_i16(&w, 0);
    raw_put_i32(&w, 1);
    raw_put_string(&w, OPEN_TOPIC);
    raw_put_i32(&w, -1);
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, false, &r);
    assert_int_equal(raw_get_i16(&r), ERR_NONE);
    struct membership m;
    m.generation = raw_get_i32(&r);
    raw_skip_string(&r); /* protocol */
    char leader[128];
    get_string(&r, leader, sizeof leader);
    get_string(&r, m.member_id, sizeof m.member_id);
    assert_false(r.overflow);
    free(frame);
    assert_string_equal(leader, m.member_id);

    begin(&w, API_SYNC_GROUP, 0, client, false);
    raw_put_string(&w, group);
    raw_put_i32(&w, m.generation);
    raw_put_string(&w, m.member_id);
    raw_put_i32(&w, 1);
    raw_put_string(&w, m.member_id);
    raw_put_i32(&w, 0);
    frame = exchange(b, &w, false, &r);
    assert_int_equal(raw_get_i16(&r), ERR_NONE);
    skip_bytes(&r);
    assert_false(r.overflow);
    free(frame);
    return m;
}

/* SyncGroup v0 of a follower-less leader again: its error code. */
static int16_t sync_group(struct test_broker *b, const char *client, const char *group, const struct membership *m)
{
    struct raw_writer w;
    begin(&w, API_SYNC_GROUP, 0, client, false);
    raw_put_string(&w, group);
    raw_put_i32(&w, m->generation);
    raw_put_string(&w, m->member_id);
    raw_put_i32(&w, 0);
    return exchange_error(b, &w, false);
}

static int16_t heartbeat(struct test_broker *b, const char *client, const char *group, const struct membership *m)
{
    struct raw_writer w;
    begin(&w, API_HEARTBEAT, 0, client, false);
    raw_put_string(&w, group);
    raw_put_i32(&w, m->generation);
    raw_put_string(&w, m->member_id);
    return exchange_error(b, &w, false);
}

static int16_t leave_group(struct test_broker *b, const char *client, const char *group, const struct membership *m)
{
    struct raw_writer w;
    begin(&w, API_LEAVE_GROUP, 0, client, false);
    raw_put_string(&w, group);
    raw_put_string(&w, m->member_id);
    return exchange_error(b, &w, false);
}

/* OffsetCommit v2 of offset 1 for each part, outside any generation. */
static void commit_offsets(struct test_broker *b, const char *group, struct part *parts, int n)
{
    struct raw_writer w;
    begin(&w, API_OFFSET_COMMIT, 2, FRIEND, false);
    raw_put_string(&w, group);
    raw_put_i32(&w, -1);
    raw_put_string(&w, "");
    raw_put_i64(&w, -1);
    raw_put_i32(&w, n);
    for (int i = 0; i < n; i++) {
        raw_put_string(&w, parts[i].topic);
        raw_put_i32(&w, 1);
        raw_put_i32(&w, parts[i].partition);
        raw_put_i64(&w, 1);
        raw_put_string(&w, NULL);
    }
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, false, &r);
    read_partition_errors(&r, parts, n);
    free(frame);
    for (int i = 0; i < n; i++)
        assert_int_equal(parts[i].error, ERR_NONE);
}

/* OffsetDelete v0: the top-level error; parts receive theirs. */
static int16_t offset_delete(struct test_broker *b, const char *client, const char *group, struct part *parts, int n)
{
    struct raw_writer w;
    begin(&w, API_OFFSET_DELETE, 0, client, false);
    raw_put_string(&w, group);
    raw_put_i32(&w, n);
    for (int i = 0; i < n; i++) {
        raw_put_string(&w, parts[i].topic);
        raw_put_i32(&w, 1);
        raw_put_i32(&w, parts[i].partition);
    }
    struct raw_reader r;
    uint8_t *frame = exchange(b, &w, false, &r);
    int16_t error = raw_get_i16(&r);
    raw_get_i32(&r);
    if (error == ERR_NONE)
        read_partition_errors(&r, parts, n);
    assert_false(r.overflow);
    free(frame);
    return error;
}

/* ---- tests ---- */

/* Without a transactional id, InitProducerId needs IDEMPOTENT_WRITE on the
 * cluster or WRITE on some existing topic. */
static void test_idempotent_init_producer_id(void **state)
{
    (void)state;
    struct test_broker b;
    start_broker(&b);
    assert_int_equal(init_producer_id(&b, INTRUDER, NULL).error, ERR_CLUSTER_AUTHORIZATION_FAILED);
    struct producer friend_pid = init_producer_id(&b, FRIEND, NULL);
    assert_int_equal(friend_pid.error, ERR_NONE);
    assert_true(friend_pid.id >= 0);
    /* A topic the intruder may not write does not help... */
    rk_create_topic(broker_bootstrap(&b), SECRET_TOPIC, 1, NULL);
    struct producer denied = init_producer_id(&b, INTRUDER, NULL);
    assert_int_equal(denied.error, ERR_CLUSTER_AUTHORIZATION_FAILED);
    assert_int_equal(denied.id, -1);
    /* ...one it may write does. */
    rk_create_topic(broker_bootstrap(&b), OPEN_TOPIC, 1, NULL);
    struct producer allowed = init_producer_id(&b, INTRUDER, NULL);
    assert_int_equal(allowed.error, ERR_NONE);
    assert_true(allowed.id >= 0 && allowed.id != friend_pid.id);
    stop_broker(&b);
}

static void test_group_member_and_offset_delete_denials(void **state)
{
    (void)state;
    struct test_broker b;
    start_broker(&b);
    rk_create_topic(broker_bootstrap(&b), OPEN_TOPIC, 1, NULL);
    rk_create_topic(broker_bootstrap(&b), SECRET_TOPIC, 1, NULL);
    struct part secret_group_parts[] = {{OPEN_TOPIC, 0, 0}};
    commit_offsets(&b, SECRET_GROUP, secret_group_parts, 1);
    struct part open_group_parts[] = {{SECRET_TOPIC, 0, 0}, {OPEN_TOPIC, 0, 0}};
    commit_offsets(&b, OPEN_GROUP, open_group_parts, 2);

    struct membership m = join_and_sync(&b, FRIEND, SECRET_GROUP);
    assert_int_equal(heartbeat(&b, INTRUDER, SECRET_GROUP, &m), ERR_GROUP_AUTHORIZATION_FAILED);
    assert_int_equal(heartbeat(&b, FRIEND, SECRET_GROUP, &m), ERR_NONE);
    assert_int_equal(sync_group(&b, INTRUDER, SECRET_GROUP, &m), ERR_GROUP_AUTHORIZATION_FAILED);
    assert_int_equal(sync_group(&b, FRIEND, SECRET_GROUP, &m), ERR_NONE);
    assert_int_equal(leave_group(&b, INTRUDER, SECRET_GROUP, &m), ERR_GROUP_AUTHORIZATION_FAILED);
    /* The member is still there. */
    assert_int_equal(heartbeat(&b, FRIEND, SECRET_GROUP, &m), ERR_NONE);
    assert_int_equal(leave_group(&b, FRIEND, SECRET_GROUP, &m), ERR_NONE);

    /* The group is empty now, so only authorization stops the delete. */
    assert_int_equal(offset_delete(&b, INTRUDER, SECRET_GROUP, secret_group_parts, 1), ERR_GROUP_AUTHORIZATION_FAILED);
    assert_int_equal(offset_delete(&b, FRIEND, SECRET_GROUP, secret_group_parts, 1), ERR_NONE);
    assert_int_equal(secret_group_parts[0].error, ERR_NONE);

    assert_int_equal(offset_delete(&b, INTRUDER, OPEN_GROUP, open_group_parts, 2), ERR_NONE);
    assert_int_equal(open_group_parts[0].error, ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(open_group_parts[1].error, ERR_NONE);
    struct part secret_offset[] = {{SECRET_TOPIC, 0, 0}};
    assert_int_equal(offset_delete(&b, FRIEND, OPEN_GROUP, secret_offset, 1), ERR_NONE);
    assert_int_equal(secret_offset[0].error, ERR_NONE);
    stop_broker(&b);
}

static void test_transaction_denials(void **state)
{
    (void)state;
    struct test_broker b;
    start_broker(&b);
    rk_create_topic(broker_bootstrap(&b), OPEN_TOPIC, 2, NULL);
    rk_create_topic(broker_bootstrap(&b), SECRET_TOPIC, 1, NULL);

    /* The friend opens a transaction under each id. */
    struct producer secret = init_producer_id(&b, FRIEND, SECRET_TXN);
    struct producer open = init_producer_id(&b, FRIEND, OPEN_TXN);
    assert_int_equal(secret.error, ERR_NONE);
    assert_int_equal(open.error, ERR_NONE);
    struct part secret_txn_parts[] = {{OPEN_TOPIC, 0, 0}};
    add_partitions(&b, FRIEND, SECRET_TXN, &secret, secret_txn_parts, 1);
    assert_int_equal(secret_txn_parts[0].error, ERR_NONE);
    struct part open_txn_parts[] = {{OPEN_TOPIC, 0, 0}, {SECRET_TOPIC, 0, 0}};
    add_partitions(&b, FRIEND, OPEN_TXN, &open, open_txn_parts, 2);
    assert_int_equal(open_txn_parts[0].error, ERR_NONE);
    assert_int_equal(open_txn_parts[1].error, ERR_NONE);
    assert_int_equal(add_offsets(&b, FRIEND, SECRET_TXN, &secret, OPEN_GROUP), ERR_NONE);
    assert_int_equal(add_offsets(&b, FRIEND, OPEN_TXN, &open, OPEN_GROUP), ERR_NONE);
    assert_int_equal(add_offsets(&b, FRIEND, OPEN_TXN, &open, SECRET_GROUP), ERR_NONE);

    /* AddPartitionsToTxn: the id fails every partition; a denied topic
     * fails its own and leaves the rest not attempted. */
    struct part more[] = {{OPEN_TOPIC, 1, 0}};
    add_partitions(&b, INTRUDER, SECRET_TXN, &secret, more, 1);
    assert_int_equal(more[0].error, ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    struct part mixed[] = {{SECRET_TOPIC, 0, 0}, {OPEN_TOPIC, 1, 0}};
    add_partitions(&b, INTRUDER, OPEN_TXN, &open, mixed, 2);
    assert_int_equal(mixed[0].error, ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(mixed[1].error, ERR_OPERATION_NOT_ATTEMPTED);

    assert_int_equal(add_offsets(&b, INTRUDER, SECRET_TXN, &secret, OPEN_GROUP),
                     ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    assert_int_equal(add_offsets(&b, INTRUDER, OPEN_TXN, &open, SECRET_GROUP), ERR_GROUP_AUTHORIZATION_FAILED);

    /* TxnOffsetCommit: id, then group, then topic. */
    struct part offsets[] = {{OPEN_TOPIC, 0, 0}};
    txn_offset_commit(&b, INTRUDER, SECRET_TXN, OPEN_GROUP, &secret, offsets, 1);
    assert_int_equal(offsets[0].error, ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    txn_offset_commit(&b, INTRUDER, OPEN_TXN, SECRET_GROUP, &open, offsets, 1);
    assert_int_equal(offsets[0].error, ERR_GROUP_AUTHORIZATION_FAILED);
    struct part offsets_mixed[] = {{SECRET_TOPIC, 0, 0}, {OPEN_TOPIC, 0, 0}};
    txn_offset_commit(&b, INTRUDER, OPEN_TXN, OPEN_GROUP, &open, offsets_mixed, 2);
    assert_int_equal(offsets_mixed[0].error, ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(offsets_mixed[1].error, ERR_NONE);
    txn_offset_commit(&b, FRIEND, SECRET_TXN, OPEN_GROUP, &secret, offsets, 1);
    assert_int_equal(offsets[0].error, ERR_NONE);

    assert_int_equal(produce_transactional(&b, INTRUDER, SECRET_TXN, &secret, OPEN_TOPIC),
                     ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    assert_int_equal(produce_transactional(&b, FRIEND, SECRET_TXN, &secret, OPEN_TOPIC), ERR_NONE);

    /* DescribeTransactions: the denied id fails; the other hides the
     * partitions of the topic the intruder may not describe. */
    struct description d[2];
    describe_transactions(&b, INTRUDER, SECRET_TXN, OPEN_TXN, d);
    assert_int_equal(d[0].error, ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    assert_int_equal(d[1].error, ERR_NONE);
    assert_non_null(strstr(d[1].topics, OPEN_TOPIC ";"));
    assert_null(strstr(d[1].topics, SECRET_TOPIC));
    describe_transactions(&b, FRIEND, SECRET_TXN, OPEN_TXN, d);
    assert_int_equal(d[0].error, ERR_NONE);
    assert_non_null(strstr(d[1].topics, SECRET_TOPIC ";"));

    bool saw_open, saw_secret;
    list_transactions(&b, INTRUDER, &saw_open, &saw_secret);
    assert_true(saw_open);
    assert_false(saw_secret);
    list_transactions(&b, FRIEND, &saw_open, &saw_secret);
    assert_true(saw_open);
    assert_true(saw_secret);

    struct part producers[] = {{SECRET_TOPIC, 0, 0}, {OPEN_TOPIC, 0, 0}};
    describe_producers(&b, INTRUDER, producers, 2);
    assert_int_equal(producers[0].error, ERR_TOPIC_AUTHORIZATION_FAILED);
    assert_int_equal(producers[1].error, ERR_NONE);
    describe_producers(&b, FRIEND, producers, 2);
    assert_int_equal(producers[0].error, ERR_NONE);

    /* EndTxn: denied for the intruder while the transaction is open. */
    assert_int_equal(end_txn(&b, INTRUDER, SECRET_TXN, &secret, false), ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
    assert_int_equal(end_txn(&b, FRIEND, SECRET_TXN, &secret, true), ERR_NONE);
    assert_int_equal(end_txn(&b, FRIEND, OPEN_TXN, &open, false), ERR_NONE);
    stop_broker(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idempotent_init_producer_id),
        cmocka_unit_test(test_group_member_and_offset_delete_denials),
        cmocka_unit_test(test_transaction_denials),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
