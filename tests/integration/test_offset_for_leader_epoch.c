/* OffsetForLeaderEpoch (API 23) against a real cairnd, byte by byte at
 * v0-v4: the current epoch ends at the log end, a newer epoch is
 * undefined, current_leader_epoch is fenced as Kafka does, unknown topics
 * and partitions are named, an empty partition's epoch starts when its
 * leader does, and the leader epoch cache survives a clean
 * stop, a kill -9 and the loss of its leader-epoch-checkpoint file. With
 * the test authorizer, CLUSTER_ACTION or DESCRIBE decide as in Kafka. A
 * librdkafka consumer still reads everything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_session.h"
#include "rk_helpers.h"
#include "../common/test_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERR_NONE 0
#define ERR_UNKNOWN_TOPIC_OR_PARTITION 3
#define ERR_TOPIC_AUTHORIZATION_FAILED 29
#define ERR_FENCED_LEADER_EPOCH 74
#define ERR_UNKNOWN_LEADER_EPOCH 75

#define TOPIC "ofle-t"
#define OTHER_TOPIC "ofle-u"
#define API_OFFSET_FOR_LEADER_EPOCH 23

/* Owned by the test's main thread. */
struct ofle_state {
    struct test_broker broker;
    struct raw_session session;
    uint8_t topic_id[16];
    int64_t log_end; /* records produced to TOPIC partition 0 */
};

/* One partition asked about; each goes in its own topic entry. */
struct ofle_query {
    const char *topic;
    int32_t partition;
    int32_t current_leader_epoch; /* sent from v2 */
    int32_t leader_epoch;
};

struct ofle_answer {
    char topic[64];
    int16_t error;
    int32_t partition;
    int32_t leader_epoch; /* -1 before v1, which does not carry it */
    int64_t end_offset;
};

static void get_string(struct raw_reader *r, char *out, size_t outlen)
{
    int16_t n = raw_get_i16(r);
    out[0] = '\0';
    if (n < 0)
        return;
    if ((size_t)n > r->len - r->pos) {
        r->overflow = true;
        return;
    }
    snprintf(out, outlen, "%.*s", (int)n, (const char *)r->data + r->pos);
    raw_skip(r, (size_t)n);
}

/* OffsetForLeaderEpoch at `version` for n queries; one answer each, in the
 * answer's order. */
static void offset_for_leader_epoch(struct raw_session *s, int16_t version, int32_t replica_id,
                                    const struct ofle_query *q, int n, struct ofle_answer *out)
{
    bool flexible = version >= 4;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_as(&w, API_OFFSET_FOR_LEADER_EPOCH, version, flexible, ++s->correlation, "ofle-client");
    if (version >= 3)
        raw_put_i32(&w, replica_id);
    if (flexible)
        raw_put_compact_array_len(&w, n);
    else
        raw_put_i32(&w, n);
    for (int i = 0; i < n; i++) {
        if (flexible) {
            raw_put_compact_string(&w, q[i].topic);
            raw_put_compact_array_len(&w, 1);
        } else {
            raw_put_string(&w, q[i].topic);
            raw_put_i32(&w, 1);
        }
        raw_put_i32(&w, q[i].partition);
        if (version >= 2)
            raw_put_i32(&w, q[i].current_leader_epoch);
        raw_put_i32(&w, q[i].leader_epoch);
        if (flexible) {
            raw_put_uvarint(&w, 0);
            raw_put_uvarint(&w, 0);
        }
    }
    if (flexible)
        raw_put_uvarint(&w, 0);

    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, flexible);
    if (version >= 2)
        assert_int_equal(raw_get_i32(&r), 0);
    int64_t topics = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
    assert_int_equal(topics, n);
    for (int i = 0; i < n && !r.overflow; i++) {
        if (flexible)
            raw_get_compact_string(&r, out[i].topic, sizeof out[i].topic);
        else
            get_string(&r, out[i].topic, sizeof out[i].topic);
        int64_t parts = flexible ? (int64_t)raw_get_uvarint(&r) - 1 : raw_get_i32(&r);
        assert_int_equal(parts, 1);
        out[i].error = raw_get_i16(&r);
        out[i].partition = raw_get_i32(&r);
        out[i].leader_epoch = version >= 1 ? raw_get_i32(&r) : -1;
        out[i].end_offset = raw_get_i64(&r);
        if (flexible) {
            raw_skip_tagged_fields(&r);
            raw_skip_tagged_fields(&r);
        }
    }
    if (flexible)
        raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
}

/* One query; fails the test unless the answer names it back. */
static void ask(struct raw_session *s, int16_t version, const struct ofle_query *q, struct ofle_answer *a)
{
    offset_for_leader_epoch(s, version, -1, q, 1, a);
    assert_string_equal(a->topic, q->topic);
    assert_int_equal(a->partition, q->partition);
}

static void expect_answer(struct raw_session *s, int16_t version, const struct ofle_query *q, int16_t error,
                          int32_t epoch, int64_t end_offset)
{
    struct ofle_answer a;
    ask(s, version, q, &a);
    /* v0 answers carry no epoch. */
    int32_t want_epoch = version >= 1 ? epoch : -1;
    if (a.error != error || a.leader_epoch != want_epoch || a.end_offset != end_offset)
        fail_msg("v%d %s-%d epoch %d (current %d): error %d epoch %d end %lld; expected %d, %d, %lld", version,
                 q->topic, q->partition, q->leader_epoch, q->current_leader_epoch, a.error, a.leader_epoch,
                 (long long)a.end_offset, error, want_epoch, (long long)end_offset);
}

static void produce(struct ofle_state *st, int count)
{
    int16_t err = -1;
    long long deadline = harness_now_ms() + 10000;
    /* Leadership may take a moment after creation or a restart. */
    while ((err = raw_produce_v7(&st->session, TOPIC, NULL, -1, -1, count)) != ERR_NONE && harness_now_ms() < deadline)
        usleep(100 * 1000);
    assert_int_equal(err, ERR_NONE);
    st->log_end += count;
}

static void reconnect(struct ofle_state *st)
{
    if (st->session.fd >= 0)
        close(st->session.fd);
    st->session.fd = raw_connect(broker_port(&st->broker), 10000);
    assert_true(st->session.fd >= 0);
}

/* The answer for the current epoch (0: Cairn starts every partition at
 * leader epoch 0) at every version, waiting for the log to be served. */
static void expect_current_epoch_everywhere(struct ofle_state *st)
{
    const struct ofle_query q = {TOPIC, 0, 0, 0};
    struct ofle_answer a;
    long long deadline = harness_now_ms() + 10000;
    do {
        ask(&st->session, 4, &q, &a);
    } while (a.error != ERR_NONE && harness_now_ms() < deadline && usleep(100 * 1000) == 0);
    for (int16_t v = 0; v <= 4; v++)
        expect_answer(&st->session, v, &q, ERR_NONE, 0, st->log_end);
}

static char *read_checkpoint(const struct ofle_state *st)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/" TOPIC "-0/leader-epoch-checkpoint", st->broker.data_dir);
    return test_read_file(path, NULL);
}

static void expect_checkpoint(const struct ofle_state *st, const char *want)
{
    char *text = read_checkpoint(st);
    if (!text)
        fail_msg("no leader-epoch-checkpoint in %s/" TOPIC "-0", st->broker.data_dir);
    if (strcmp(text, want) != 0)
        fail_msg("leader-epoch-checkpoint is \"%s\", expected \"%s\"", text, want);
    free(text);
}

static void test_api_versions_advertise_it(void **state)
{
    struct ofle_state *st = *state;
    struct raw_api_versions v;
    assert_int_equal(raw_api_versions(st->session.fd, 3, ++st->session.correlation, &v), 0);
    const struct raw_api_range *range = raw_api_versions_find(&v, API_OFFSET_FOR_LEADER_EPOCH);
    assert_non_null(range);
    assert_int_equal(range->min_version, 0);
    assert_int_equal(range->max_version, 4);
}

static void test_current_epoch_ends_at_log_end(void **state)
{
    struct ofle_state *st = *state;
    expect_current_epoch_everywhere(st);
    expect_checkpoint(st, "0\n1\n0 0\n");
    /* The end moves with appends; followers (replica_id >= 0) and
     * consumers get the same answer. */
    produce(st, 2);
    const struct ofle_query q = {TOPIC, 0, -1, 0};
    for (int32_t replica = -2; replica <= 1; replica++) {
        struct ofle_answer a;
        offset_for_leader_epoch(&st->session, 3, replica, &q, 1, &a);
        assert_int_equal(a.error, ERR_NONE);
        assert_int_equal(a.leader_epoch, 0);
        assert_int_equal(a.end_offset, st->log_end);
    }
}

static void test_unknown_epochs_and_fencing(void **state)
{
    struct ofle_state *st = *state;
    for (int16_t v = 0; v <= 4; v++) {
        /* An epoch newer than any the log has seen: undefined. */
        const struct ofle_query newer = {TOPIC, 0, -1, 1};
        expect_answer(&st->session, v, &newer, ERR_NONE, -1, -1);
        /* UNDEFINED_EPOCH asked: undefined too. */
        const struct ofle_query undefined = {TOPIC, 0, -1, -1};
        expect_answer(&st->session, v, &undefined, ERR_NONE, -1, -1);
    }
    for (int16_t v = 2; v <= 4; v++) {
        /* The client knows a newer leader epoch than the broker. */
        const struct ofle_query ahead = {TOPIC, 0, 1, 0};
        expect_answer(&st->session, v, &ahead, ERR_UNKNOWN_LEADER_EPOCH, -1, -1);
        /* Any current epoch but -1 is compared (Kafka's rule): one below
         * the partition's is fenced. */
        const struct ofle_query behind = {TOPIC, 0, -2, 0};
        expect_answer(&st->session, v, &behind, ERR_FENCED_LEADER_EPOCH, -1, -1);
    }
    /* Before v2 the current epoch is not sent, so nothing is fenced. */
    const struct ofle_query ignored = {TOPIC, 0, 1, 0};
    expect_answer(&st->session, 1, &ignored, ERR_NONE, 0, st->log_end);
}

static void test_unknown_topics_and_partitions(void **state)
{
    struct ofle_state *st = *state;
    const struct ofle_query q[] = {
        {"ofle-missing", 0, -1, 0},
        {TOPIC, 7, -1, 0},
        {OTHER_TOPIC, 0, -1, 0},
        {TOPIC, 0, -1, 0},
    };
    for (int16_t v = 0; v <= 4; v += 4) {
        struct ofle_answer a[4];
        offset_for_leader_epoch(&st->session, v, -1, q, 4, a);
        for (int i = 0; i < 4; i++) {
            assert_string_equal(a[i].topic, q[i].topic);
            assert_int_equal(a[i].partition, q[i].partition);
        }
        assert_int_equal(a[0].error, ERR_UNKNOWN_TOPIC_OR_PARTITION);
        assert_int_equal(a[0].end_offset, -1);
        assert_int_equal(a[1].error, ERR_UNKNOWN_TOPIC_OR_PARTITION);
        /* A topic nothing was written to: its leader's epoch started at
         * the empty log's end when this broker became leader. */
        assert_int_equal(a[2].error, ERR_NONE);
        assert_int_equal(a[2].leader_epoch, v >= 1 ? 0 : -1);
        assert_int_equal(a[2].end_offset, 0);
        assert_int_equal(a[3].error, ERR_NONE);
        assert_int_equal(a[3].end_offset, st->log_end);
    }
}

static void test_cache_survives_restarts(void **state)
{
    struct ofle_state *st = *state;
    broker_stop(&st->broker);
    expect_checkpoint(st, "0\n1\n0 0\n");
    broker_restart(&st->broker);
    reconnect(st);
    expect_current_epoch_everywhere(st);

    produce(st, 3);
    broker_kill9(&st->broker);
    expect_checkpoint(st, "0\n1\n0 0\n");
    broker_restart(&st->broker);
    reconnect(st);
    expect_current_epoch_everywhere(st);

    /* A lost file is rebuilt from the batches when the log loads: after a
     * clean stop that is its first use, here the epoch query. */
    broker_stop(&st->broker);
    char path[1024];
    snprintf(path, sizeof path, "%s/" TOPIC "-0/leader-epoch-checkpoint", st->broker.data_dir);
    assert_int_equal(unlink(path), 0);
    broker_restart(&st->broker);
    reconnect(st);
    expect_current_epoch_everywhere(st);
    expect_checkpoint(st, "0\n1\n0 0\n");

    /* After a kill -9 every log is recovered at start-up, so the file is
     * back before anything asks. */
    broker_kill9(&st->broker);
    assert_int_equal(unlink(path), 0);
    broker_restart(&st->broker);
    reconnect(st);
    expect_checkpoint(st, "0\n1\n0 0\n");
    expect_current_epoch_everywhere(st);
}

/* Kafka's rule: CLUSTER_ACTION covers every topic; without it each topic
 * needs DESCRIBE, and refused topics come after the allowed ones. */
static void authz_broker_answers(bool deny_cluster, int16_t hidden_error, bool hidden_first)
{
    struct test_broker b;
    memset(&b, 0, sizeof b);
    const char *ov[] = {"plugin.path=" TEST_PLUGIN_DIR, "plugins=test_authz",
                        "plugin.test_authz.deny.topics=ofle-hidden",
                        deny_cluster ? "plugin.test_authz.deny.cluster=1" : "plugin.test_authz.deny.cluster=0", NULL};
    broker_start(&b, ov);
    struct raw_session s = {raw_connect(broker_port(&b), 10000), 0};
    assert_true(s.fd >= 0);
    uint8_t id[16];
    raw_create_topic_v7(&s, TOPIC, 1, id);
    const struct ofle_query q[] = {{"ofle-hidden", 0, -1, 0}, {TOPIC, 0, -1, 0}};
    struct ofle_answer a[2];
    const struct ofle_answer *hidden = &a[hidden_first ? 0 : 1], *open = &a[hidden_first ? 1 : 0];
    long long deadline = harness_now_ms() + 10000;
    do {
        offset_for_leader_epoch(&s, 4, -1, q, 2, a);
        /* Leadership may take a moment after creation. */
    } while (strcmp(open->topic, TOPIC) == 0 && open->error != ERR_NONE && harness_now_ms() < deadline &&
             usleep(100 * 1000) == 0);
    assert_string_equal(hidden->topic, "ofle-hidden");
    assert_int_equal(hidden->error, hidden_error);
    assert_int_equal(hidden->end_offset, -1);
    assert_string_equal(open->topic, TOPIC);
    assert_int_equal(open->error, ERR_NONE);
    assert_int_equal(open->leader_epoch, 0);
    assert_int_equal(open->end_offset, 0);
    close(s.fd);
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void test_authorization(void **state)
{
    (void)state;
    /* No CLUSTER_ACTION: the hidden topic is refused and listed last. */
    authz_broker_answers(true, ERR_TOPIC_AUTHORIZATION_FAILED, false);
    /* CLUSTER_ACTION (a follower's right) answers for every topic. */
    authz_broker_answers(false, ERR_UNKNOWN_TOPIC_OR_PARTITION, true);
}

static void test_librdkafka_consumer_reads_all(void **state)
{
    struct ofle_state *st = *state;
    long want = (long)st->log_end;
    struct rk_record_set set = {0};
    long got = rk_consume_all(broker_bootstrap(&st->broker), TOPIC, 1, &want, 20000, &set);
    rk_record_set_free(&set);
    assert_int_equal(got, want);
    /* A clean exit (status 0) also catches sanitizer reports at shutdown. */
    broker_stop(&st->broker);
    broker_mark_passed(&st->broker);
}

static int ofle_setup(void **state)
{
    static struct ofle_state st;
    memset(&st, 0, sizeof st);
    st.session.fd = -1;
    *state = &st;
    broker_start(&st.broker, NULL);
    st.session.fd = raw_connect(broker_port(&st.broker), 10000);
    if (st.session.fd < 0)
        return -1;
    uint8_t other_id[16];
    raw_create_topic_v7(&st.session, TOPIC, 1, st.topic_id);
    raw_create_topic_v7(&st.session, OTHER_TOPIC, 1, other_id);
    produce(&st, 3);
    produce(&st, 1);
    return 0;
}

static int ofle_teardown(void **state)
{
    struct ofle_state *st = *state;
    if (st->session.fd >= 0)
        close(st->session.fd);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_versions_advertise_it),     cmocka_unit_test(test_current_epoch_ends_at_log_end),
        cmocka_unit_test(test_unknown_epochs_and_fencing),    cmocka_unit_test(test_unknown_topics_and_partitions),
        cmocka_unit_test(test_cache_survives_restarts),       cmocka_unit_test(test_authorization),
        cmocka_unit_test(test_librdkafka_consumer_reads_all),
    };
    return cmocka_run_group_tests(tests, ofle_setup, ofle_teardown);
}
