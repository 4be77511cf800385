/* raft_msg <-> Kafka's quorum RPCs, through real encoded bytes: every
 * request is written and read back; every response is written, decoded by
 * the generated decoder (as the outbound client does) and mapped back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "protocol/generated/all_messages.h"
#include "protocol/generated/api_table.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "raft/raft_codec.h"

#define CLUSTER "MkU3OEVBNTcwNTJENDM2Qg"

struct bytes {
    uint8_t *data;
    size_t len;
};

static struct bytes take(struct kafka_writer *w)
{
    assert_int_equal(kafka_writer_flatten(w), 0);
    assert_false(w->failed);
    struct bytes b = {.len = (size_t)kafka_writer_total_len(w)};
    b.data = malloc(b.len ? b.len : 1);
    memcpy(b.data, w->buf, b.len);
    kafka_writer_free(w);
    return b;
}

static struct bytes request_bytes(const struct raft_msg *m, int16_t version, const char *cluster)
{
    struct kafka_writer w;
    kafka_writer_init(&w, 64);
    assert_int_equal(raft_codec_write_request(&w, version, cluster, m), 0);
    return take(&w);
}

/* Writes m, reads it back; returns read's code. */
static int request_round_trip(const struct raft_msg *m, int16_t version, const char *sent_cluster,
                              const char *local_cluster, struct raft_msg *out)
{
    struct bytes b = request_bytes(m, version, sent_cluster);
    char err[200] = "";
    int rc = raft_codec_read_request(raft_codec_api_key(m->type), version, b.data, b.len, local_cluster, out, err,
                                     sizeof err);
    free(b.data);
    return rc;
}

static void test_vote_request(void **state)
{
    (void)state;
    for (int pre = 0; pre <= 1; pre++) {
        for (int16_t version = 0; version <= 1; version++) {
            struct raft_msg m = {.type = RAFT_MSG_VOTE_REQ, .src = 2, .dst = 3};
            m.u.vote_req = (struct raft_vote_req){.candidate_epoch = 7,
                                                  .candidate_id = 2,
                                                  .last_offset_epoch = 6,
                                                  .last_offset = 1234567890123LL,
                                                  .pre_vote = pre};
            struct raft_msg out;
            assert_int_equal(request_round_trip(&m, version, CLUSTER, CLUSTER, &out), 0);
            assert_int_equal(out.type, RAFT_MSG_VOTE_REQ);
            assert_int_equal(out.src, 2);
            assert_int_equal(out.dst, version >= 1 ? 3 : RAFT_NO_ID);
            assert_int_equal(out.u.vote_req.candidate_epoch, 7);
            assert_int_equal(out.u.vote_req.candidate_id, 2);
            assert_int_equal(out.u.vote_req.last_offset_epoch, 6);
            assert_int_equal(out.u.vote_req.last_offset, 1234567890123LL);
            assert_int_equal(out.u.vote_req.pre_vote, pre);
        }
    }
}

static void test_vote_pre_vote_is_skipped_by_plain_decoder(void **state)
{
    (void)state;
    /* A decoder that knows nothing of the tag (Kafka's) still reads the vote. */
    struct raft_msg m = {.type = RAFT_MSG_VOTE_REQ, .src = 1, .dst = 2};
    m.u.vote_req = (struct raft_vote_req){.candidate_epoch = 3, .candidate_id = 1, .pre_vote = true};
    struct bytes b = request_bytes(&m, 1, CLUSTER);
    struct kafka_reader r;
    kafka_reader_init(&r, b.data, b.len);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct vote_request req;
    vote_request_init(&req);
    assert_int_equal(vote_request_decode(&req, &r, 1, &arena), 0);
    assert_int_equal(kafka_reader_remaining(&r), 0);
    assert_int_equal(req.topics[0].partitions[0].candidate_epoch, 3);
    kafka_arena_free(&arena);
    free(b.data);
}

static void test_epoch_requests(void **state)
{
    (void)state;
    for (int16_t version = 0; version <= 1; version++) {
        struct raft_msg begin = {.type = RAFT_MSG_BEGIN_EPOCH_REQ, .src = 1, .dst = 2};
        begin.u.begin_req = (struct raft_begin_epoch_req){.leader_id = 1, .leader_epoch = 9};
        struct raft_msg out;
        assert_int_equal(request_round_trip(&begin, version, CLUSTER, CLUSTER, &out), 0);
        assert_int_equal(out.type, RAFT_MSG_BEGIN_EPOCH_REQ);
        assert_int_equal(out.src, 1);
        assert_int_equal(out.u.begin_req.leader_id, 1);
        assert_int_equal(out.u.begin_req.leader_epoch, 9);

        struct raft_msg end = {.type = RAFT_MSG_END_EPOCH_REQ, .src = 3, .dst = 2};
        end.u.end_req = (struct raft_end_epoch_req){.leader_id = 3, .leader_epoch = 11};
        assert_int_equal(request_round_trip(&end, version, NULL, CLUSTER, &out), 0);
        assert_int_equal(out.type, RAFT_MSG_END_EPOCH_REQ);
        assert_int_equal(out.src, 3);
        assert_int_equal(out.u.end_req.leader_epoch, 11);
    }
}

static void test_fetch_request(void **state)
{
    (void)state;
    int16_t versions[] = {13, 14, 15, 17};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        struct raft_msg m = {.type = RAFT_MSG_FETCH_REQ, .src = 4, .dst = 1};
        m.u.fetch_req = (struct raft_fetch_req){
            .replica_id = 4, .current_leader_epoch = 5, .fetch_offset = 77, .last_fetched_epoch = 4};
        struct raft_msg out;
        assert_int_equal(request_round_trip(&m, versions[i], CLUSTER, CLUSTER, &out), 0);
        assert_int_equal(out.type, RAFT_MSG_FETCH_REQ);
        assert_int_equal(out.src, 4);
        assert_int_equal(out.u.fetch_req.replica_id, 4);
        assert_int_equal(out.u.fetch_req.current_leader_epoch, 5);
        assert_int_equal(out.u.fetch_req.fetch_offset, 77);
        assert_int_equal(out.u.fetch_req.last_fetched_epoch, 4);
    }
}

static void test_cluster_id_mismatch(void **state)
{
    (void)state;
    struct raft_msg out;
    struct raft_msg vote = {.type = RAFT_MSG_VOTE_REQ, .src = 1, .dst = 2};
    vote.u.vote_req.candidate_id = 1;
    assert_int_equal(request_round_trip(&vote, 1, "AAAAAAAAAAAAAAAAAAAAAA", CLUSTER, &out),
                     KAFKA_ERR_INCONSISTENT_CLUSTER_ID);
    struct raft_msg fetch = {.type = RAFT_MSG_FETCH_REQ, .src = 1, .dst = 2};
    assert_int_equal(request_round_trip(&fetch, 17, "AAAAAAAAAAAAAAAAAAAAAA", CLUSTER, &out),
                     KAFKA_ERR_INCONSISTENT_CLUSTER_ID);
    struct raft_msg begin = {.type = RAFT_MSG_BEGIN_EPOCH_REQ, .src = 1, .dst = 2};
    assert_int_equal(request_round_trip(&begin, 0, "AAAAAAAAAAAAAAAAAAAAAA", CLUSTER, &out),
                     KAFKA_ERR_INCONSISTENT_CLUSTER_ID);
    /* No cluster id sent (null): accepted, as Kafka does. */
    assert_int_equal(request_round_trip(&fetch, 17, NULL, CLUSTER, &out), 0);
}

static void test_fetch_of_another_partition_is_refused(void **state)
{
    (void)state;
    struct fetch_request_fetch_partition part = {.partition = 1, .fetch_offset = 0};
    struct fetch_request_fetch_topic topic = {
        .topic = kafka_str_from_cstr("other"), .partitions = &part, .partitions_count = 1};
    topic.topic_id.bytes[15] = 1;
    struct fetch_request req;
    fetch_request_init(&req);
    req.topics = &topic;
    req.topics_count = 1;
    struct kafka_writer w;
    kafka_writer_init(&w, 64);
    assert_int_equal(fetch_request_encode(&req, &w, 17), 0);
    struct bytes b = take(&w);
    struct raft_msg out;
    char err[200];
    assert_int_equal(raft_codec_read_request(RAFT_API_FETCH, 17, b.data, b.len, CLUSTER, &out, err, sizeof err),
                     KAFKA_ERR_INVALID_REQUEST);
    /* Garbage does not decode. */
    assert_int_equal(raft_codec_read_request(RAFT_API_FETCH, 17, b.data, 5, CLUSTER, &out, err, sizeof err), -1);
    free(b.data);
}

/* Encodes resp_msg as the answer to req at version, decodes it with the
 * generated decoder and maps it back. */
static int response_round_trip(const struct raft_msg *req, const struct raft_msg *resp_msg, int16_t version,
                               int16_t error_only, struct raft_msg *out, char *err, size_t errlen)
{
    int16_t api_key = raft_codec_api_key(req->type);
    struct kafka_writer w;
    kafka_writer_init(&w, 64);
    if (error_only)
        assert_int_equal(raft_codec_write_error_response(&w, api_key, version, error_only), 0);
    else
        assert_int_equal(raft_codec_write_response(&w, version, resp_msg), 0);
    struct bytes b = take(&w);
    const struct kafka_api_desc *desc = kafka_api_lookup(api_key);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    void *decoded = kafka_arena_alloc(&arena, desc->response_size_of);
    desc->response_init(decoded);
    struct kafka_reader r;
    kafka_reader_init(&r, b.data, b.len);
    assert_int_equal(desc->response_decode(decoded, &r, version, &arena), 0);
    assert_int_equal(kafka_reader_remaining(&r), 0);
    int rc = raft_codec_read_response(decoded, req, out, err, errlen);
    kafka_arena_free(&arena);
    free(b.data);
    return rc;
}

static void test_small_responses(void **state)
{
    (void)state;
    char err[200];
    struct raft_msg vote = {.type = RAFT_MSG_VOTE_REQ, .src = 1, .dst = 2, .correlation_id = 42};
    vote.u.vote_req.pre_vote = true;
    struct raft_msg granted = {.type = RAFT_MSG_VOTE_RESP, .src = 2, .dst = 1, .correlation_id = 42};
    granted.u.vote_resp = (struct raft_vote_resp){.leader_id = -1, .leader_epoch = 8, .vote_granted = true};
    struct raft_msg out;
    assert_int_equal(response_round_trip(&vote, &granted, 1, 0, &out, err, sizeof err), 0);
    assert_int_equal(out.type, RAFT_MSG_VOTE_RESP);
    assert_int_equal(out.src, 2);
    assert_int_equal(out.dst, 1);
    assert_int_equal(out.correlation_id, 42);
    assert_true(out.u.vote_resp.vote_granted);
    assert_true(out.u.vote_resp.pre_vote);
    assert_int_equal(out.u.vote_resp.leader_id, -1);
    assert_int_equal(out.u.vote_resp.leader_epoch, 8);

    for (int16_t version = 0; version <= 1; version++) {
        struct raft_msg begin = {.type = RAFT_MSG_BEGIN_EPOCH_REQ, .src = 1, .dst = 3, .correlation_id = 5};
        struct raft_msg ack = {.type = RAFT_MSG_BEGIN_EPOCH_RESP, .src = 3, .dst = 1};
        ack.u.epoch_resp = (struct raft_epoch_resp){
            .error_code = RAFT_ERR_FENCED_LEADER_EPOCH, .leader_id = 2, .leader_epoch = 10};
        assert_int_equal(response_round_trip(&begin, &ack, version, 0, &out, err, sizeof err), 0);
        assert_int_equal(out.type, RAFT_MSG_BEGIN_EPOCH_RESP);
        assert_int_equal(out.u.epoch_resp.error_code, RAFT_ERR_FENCED_LEADER_EPOCH);
        assert_int_equal(out.u.epoch_resp.leader_id, 2);
        assert_int_equal(out.u.epoch_resp.leader_epoch, 10);
        struct raft_msg end = {.type = RAFT_MSG_END_EPOCH_REQ, .src = 1, .dst = 3};
        ack.type = RAFT_MSG_END_EPOCH_RESP;
        assert_int_equal(response_round_trip(&end, &ack, version, 0, &out, err, sizeof err), 0);
        assert_int_equal(out.type, RAFT_MSG_END_EPOCH_RESP);
        assert_int_equal(out.u.epoch_resp.leader_epoch, 10);
    }

    /* A refused request: the top-level error names the cause. */
    assert_int_equal(response_round_trip(&vote, NULL, 1, KAFKA_ERR_INCONSISTENT_CLUSTER_ID, &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "INCONSISTENT_CLUSTER_ID"));
}

/* count records of value[0..len) as one batch, as the shell appends them. */
static void build_batch(const uint8_t *value, size_t len, int count, uint8_t **out, size_t *out_len)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 0);
    for (int i = 0; i < count; i++)
        assert_int_equal(record_batch_builder_add(&b, 0, NULL, -1, value, (int32_t)len, NULL, 0), 0);
    assert_int_equal(record_batch_builder_finish(&b, out, out_len), 0);
    record_batch_builder_free(&b);
}

static bool contains(const uint8_t *hay, size_t hay_len, const uint8_t *needle, size_t len)
{
    for (size_t i = 0; i + len <= hay_len; i++)
        if (memcmp(hay + i, needle, len) == 0)
            return true;
    return false;
}

static void test_fetch_response_records(void **state)
{
    (void)state;
    char err[200];
    struct raft_msg req = {.type = RAFT_MSG_FETCH_REQ, .src = 2, .dst = 1, .correlation_id = 9};
    req.u.fetch_req.fetch_offset = 10;
    uint8_t lc[5] = {RAFT_LEADER_CHANGE_BYTE, 0, 0, 0, 1};
    uint8_t payload[300];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7);
    /* A batch of two records (offsets 11-12) and one of one (13). */
    uint8_t *two, *one;
    size_t two_len, one_len;
    build_batch(payload, sizeof payload, 2, &two, &two_len);
    build_batch(payload, 0, 1, &one, &one_len);
    struct raft_entry entries[3] = {
        {.offset = 10, .epoch = 3, .count = 1, .len = sizeof lc, .data = lc},
        {.offset = 11, .epoch = 3, .count = 2, .len = (uint32_t)two_len, .data = two},
        {.offset = 13, .epoch = 4, .count = 1, .len = (uint32_t)one_len, .data = one},
    };
    struct raft_msg resp = {.type = RAFT_MSG_FETCH_RESP, .src = 1, .dst = 2, .correlation_id = 9};
    resp.u.fetch_resp = (struct raft_fetch_resp){.high_watermark = 11,
                                                 .diverging_epoch = -1,
                                                 .diverging_end_offset = -1,
                                                 .current_leader_id = 1,
                                                 .current_leader_epoch = 4,
                                                 .fetch_offset = 10,
                                                 .records = entries,
                                                 .n_records = 3};
    int16_t versions[] = {13, 17};
    for (size_t v = 0; v < 2; v++) {
        struct raft_msg out;
        assert_int_equal(response_round_trip(&req, &resp, versions[v], 0, &out, err, sizeof err), 0);
        const struct raft_fetch_resp *f = &out.u.fetch_resp;
        assert_int_equal(out.type, RAFT_MSG_FETCH_RESP);
        assert_int_equal(out.correlation_id, 9);
        assert_int_equal(f->high_watermark, 11);
        assert_int_equal(f->diverging_epoch, -1);
        assert_int_equal(f->diverging_end_offset, -1);
        assert_int_equal(f->current_leader_id, 1);
        assert_int_equal(f->current_leader_epoch, 4);
        assert_int_equal(f->fetch_offset, 10);
        assert_int_equal(f->n_records, 3);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(f->records[i].offset, entries[i].offset);
            assert_int_equal(f->records[i].epoch, entries[i].epoch);
            assert_int_equal(f->records[i].count, entries[i].count);
            struct record_batch_header h;
            assert_int_equal(record_batch_parse_header(f->records[i].data, f->records[i].len, &h), 0);
            assert_int_equal(h.base_offset, entries[i].offset);
            assert_int_equal(h.partition_leader_epoch, entries[i].epoch);
        }
        /* The LeaderChange body came back as a control batch, still seen as one. */
        assert_true(raft_codec_is_leader_change(&f->records[0]));
        assert_false(raft_codec_is_leader_change(&f->records[1]));
        /* The records of a batch keep their bytes (past the 61-byte header). */
        assert_true(contains(f->records[1].data, f->records[1].len, payload, sizeof payload));
        raft_msg_clear(&out);
    }

    /* Diverging epoch, no records. */
    struct raft_msg diverge = resp;
    diverge.u.fetch_resp.records = NULL;
    diverge.u.fetch_resp.n_records = 0;
    diverge.u.fetch_resp.diverging_epoch = 2;
    diverge.u.fetch_resp.diverging_end_offset = 8;
    struct raft_msg out;
    assert_int_equal(response_round_trip(&req, &diverge, 17, 0, &out, err, sizeof err), 0);
    assert_int_equal(out.u.fetch_resp.diverging_epoch, 2);
    assert_int_equal(out.u.fetch_resp.diverging_end_offset, 8);
    assert_int_equal(out.u.fetch_resp.n_records, 0);
    assert_true(out.u.fetch_resp.snapshot_end_offset <= 0);

    /* SnapshotId (KIP-630): the fetcher is below the leader's log start. */
    struct raft_msg snap = diverge;
    snap.u.fetch_resp.diverging_epoch = -1;
    snap.u.fetch_resp.diverging_end_offset = -1;
    snap.u.fetch_resp.snapshot_end_offset = 42;
    snap.u.fetch_resp.snapshot_epoch = 3;
    assert_int_equal(response_round_trip(&req, &snap, 17, 0, &out, err, sizeof err), 0);
    assert_int_equal(out.u.fetch_resp.snapshot_end_offset, 42);
    assert_int_equal(out.u.fetch_resp.snapshot_epoch, 3);
    assert_int_equal(out.u.fetch_resp.diverging_end_offset, -1);

    /* Records that do not start where the fetch asked are refused. */
    req.u.fetch_req.fetch_offset = 11;
    assert_int_equal(response_round_trip(&req, &resp, 17, 0, &out, err, sizeof err), -1);
    assert_int_equal(response_round_trip(&req, NULL, 17, KAFKA_ERR_INCONSISTENT_CLUSTER_ID, &out, err, sizeof err), -1);
    assert_non_null(strstr(err, "INCONSISTENT_CLUSTER_ID"));
    free(two);
    free(one);
}

/* A voter's Fetch answer names the leader's endpoint in NodeEndpoints from
 * v17 (KIP-853), only for the leader the answer names; older versions
 * carry none. */
static void test_fetch_answer_node_endpoints(void **state)
{
    (void)state;
    struct raft_msg resp = {.type = RAFT_MSG_FETCH_RESP, .src = 2, .dst = 7};
    resp.u.fetch_resp = (struct raft_fetch_resp){.error_code = KAFKA_ERR_NOT_LEADER_OR_FOLLOWER,
                                                 .high_watermark = -1,
                                                 .diverging_epoch = -1,
                                                 .diverging_end_offset = -1,
                                                 .current_leader_id = 3,
                                                 .current_leader_epoch = 5,
                                                 .snapshot_end_offset = -1,
                                                 .snapshot_epoch = -1};
    struct raft_codec_endpoint leader = {.node_id = 3, .host = "10.0.0.3", .port = 9093};
    struct raft_codec_endpoint other = {.node_id = 1, .host = "10.0.0.1", .port = 9093};
    for (int16_t version = 13; version <= 17; version++) {
        for (int which = 0; which < 2; which++) {
            struct kafka_writer w;
            kafka_writer_init(&w, 64);
            assert_int_equal(raft_codec_write_fetch_answer(&w, version, &resp, which ? &other : &leader), 0);
            struct bytes b = take(&w);
            struct kafka_arena arena;
            kafka_arena_init(&arena);
            struct fetch_response decoded;
            fetch_response_init(&decoded);
            struct kafka_reader r;
            kafka_reader_init(&r, b.data, b.len);
            assert_int_equal(fetch_response_decode(&decoded, &r, version, &arena), 0);
            struct raft_codec_endpoint got;
            bool named = raft_codec_fetch_endpoint(&decoded, 3, &got);
            /* Only the leader's own endpoint goes out, and only from v17. */
            assert_int_equal(named, version >= 17 && which == 0);
            if (named) {
                assert_string_equal(got.host, "10.0.0.3");
                assert_int_equal(got.port, 9093);
                assert_int_equal(got.node_id, 3);
            }
            assert_false(raft_codec_fetch_endpoint(&decoded, 1, &got));
            kafka_arena_free(&arena);
            free(b.data);
        }
    }
}

static void test_describe_quorum(void **state)
{
    (void)state;
    struct raft_quorum_view view = {.leader_id = 2, .leader_epoch = 5, .high_watermark = 99, .n_voters = 3};
    for (int i = 0; i < 3; i++)
        view.voters[i] = (struct raft_quorum_replica){i + 1, 90 + i, 1000 + i, 2000 + i};
    view.observers[0] = (struct raft_quorum_replica){7, 80, 3000, -1};
    view.n_observers = 1;
    for (int16_t version = 0; version <= 2; version++) {
        struct kafka_writer w;
        kafka_writer_init(&w, 64);
        assert_int_equal(raft_codec_write_describe_quorum(&w, version, &view), 0);
        struct bytes b = take(&w);
        struct kafka_arena arena;
        kafka_arena_init(&arena);
        struct describe_quorum_response resp;
        describe_quorum_response_init(&resp);
        struct kafka_reader r;
        kafka_reader_init(&r, b.data, b.len);
        assert_int_equal(describe_quorum_response_decode(&resp, &r, version, &arena), 0);
        struct raft_quorum_view got;
        char err[200];
        assert_int_equal(raft_codec_read_describe_quorum(&resp, &got, err, sizeof err), 0);
        assert_int_equal(got.leader_id, 2);
        assert_int_equal(got.leader_epoch, 5);
        assert_int_equal(got.high_watermark, 99);
        assert_int_equal(got.n_voters, 3);
        assert_int_equal(got.voters[2].replica_id, 3);
        assert_int_equal(got.voters[2].log_end_offset, 92);
        if (version >= 1)
            assert_int_equal(got.voters[2].last_fetch_timestamp, 1002);
        assert_int_equal(got.n_observers, 1);
        assert_int_equal(got.observers[0].replica_id, 7);
        assert_int_equal(got.observers[0].log_end_offset, 80);
        kafka_arena_free(&arena);
        free(b.data);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vote_request),        cmocka_unit_test(test_vote_pre_vote_is_skipped_by_plain_decoder),
        cmocka_unit_test(test_epoch_requests),      cmocka_unit_test(test_fetch_request),
        cmocka_unit_test(test_cluster_id_mismatch), cmocka_unit_test(test_fetch_of_another_partition_is_refused),
        cmocka_unit_test(test_small_responses),     cmocka_unit_test(test_fetch_response_records),
        cmocka_unit_test(test_describe_quorum),     cmocka_unit_test(test_fetch_answer_node_endpoints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
