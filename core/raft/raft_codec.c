/* Vote, BeginQuorumEpoch, EndQuorumEpoch and DescribeQuorum; Fetch is in
 * raft_codec_fetch.c. */
#include "raft/raft_codec.h"
#include "raft/raft_codec_internal.h"

#include <stdio.h>
#include <string.h>

#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

int16_t raft_codec_api_key(enum raft_msg_type type)
{
    switch (type) {
    case RAFT_MSG_VOTE_REQ:
    case RAFT_MSG_VOTE_RESP:
        return RAFT_API_VOTE;
    case RAFT_MSG_BEGIN_EPOCH_REQ:
    case RAFT_MSG_BEGIN_EPOCH_RESP:
        return RAFT_API_BEGIN_QUORUM_EPOCH;
    case RAFT_MSG_END_EPOCH_REQ:
    case RAFT_MSG_END_EPOCH_RESP:
        return RAFT_API_END_QUORUM_EPOCH;
    case RAFT_MSG_FETCH_REQ:
    case RAFT_MSG_FETCH_RESP:
        return RAFT_API_FETCH;
    }
    return -1;
}

bool raft_codec_is_request(enum raft_msg_type type)
{
    return type == RAFT_MSG_VOTE_REQ || type == RAFT_MSG_BEGIN_EPOCH_REQ || type == RAFT_MSG_END_EPOCH_REQ ||
           type == RAFT_MSG_FETCH_REQ;
}

bool raft_codec_served(int16_t api_key, int16_t *min_version, int16_t *max_version)
{
    /* Fetch from v13: the quorum's partition is named by topic id, and the
     * KRaft fields (ClusterId, LastFetchedEpoch, DivergingEpoch,
     * CurrentLeader) are all there. */
    static const struct {
        int16_t key, min, max;
    } served[] = {
        {RAFT_API_FETCH, 13, 17},
        {RAFT_API_VOTE, 0, 1},
        {RAFT_API_BEGIN_QUORUM_EPOCH, 0, 1},
        {RAFT_API_END_QUORUM_EPOCH, 0, 1},
        {RAFT_API_DESCRIBE_QUORUM, 0, 2},
        {RAFT_API_FETCH_SNAPSHOT, 0, 1},
    };
    for (size_t i = 0; i < sizeof served / sizeof served[0]; i++) {
        if (served[i].key == api_key) {
            *min_version = served[i].min;
            *max_version = served[i].max;
            return true;
        }
    }
    return false;
}

struct kafka_str raft_codec_cluster_str(const char *cluster_id, bool nullable)
{
    if (cluster_id)
        return kafka_str_from_cstr(cluster_id);
    return nullable ? (struct kafka_str){NULL, -1} : kafka_str_from_cstr("");
}

bool raft_codec_cluster_ok(struct kafka_str got, const char *cluster_id)
{
    /* Kafka accepts a request without a cluster id (older senders). */
    if (!cluster_id || got.len < 0 || !got.data)
        return true;
    return kafka_str_eq_cstr(got, cluster_id);
}

bool raft_codec_topic_ok(struct kafka_str topic, int32_t n_partitions, int32_t partition)
{
    return kafka_str_eq_cstr(topic, RAFT_CODEC_TOPIC) && n_partitions == 1 && partition == 0;
}

/* The request is for this cluster and for __cluster_metadata-0 only. */
#define CHECK_ONE_PARTITION(req, cluster_id)                                                                           \
    do {                                                                                                               \
        if (!raft_codec_cluster_ok((req).cluster_id, cluster_id))                                                      \
            return KAFKA_ERR_INCONSISTENT_CLUSTER_ID;                                                                  \
        if ((req).topics_count != 1 ||                                                                                 \
            !raft_codec_topic_ok((req).topics[0].topic_name, (req).topics[0].partitions_count,                         \
                                 (req).topics[0].partitions_count ? (req).topics[0].partitions[0].partition_index      \
                                                                  : -1))                                               \
            return KAFKA_ERR_INVALID_REQUEST;                                                                          \
    } while (0)

/* ---- Vote: the pre-vote flag as a top-level tagged field ---- */

static int write_vote_request(struct kafka_writer *w, int16_t version, const char *cluster_id, const struct raft_msg *m)
{
    const struct raft_vote_req *v = &m->u.vote_req;
    struct vote_request_partition_data part;
    vote_request_partition_data_init(&part);
    part.candidate_epoch = v->candidate_epoch;
    part.candidate_id = v->candidate_id;
    part.last_offset_epoch = v->last_offset_epoch;
    part.last_offset = v->last_offset;
    struct vote_request_topic_data topic;
    vote_request_topic_data_init(&topic);
    topic.topic_name = kafka_str_from_cstr(RAFT_CODEC_TOPIC);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct vote_request req;
    vote_request_init(&req);
    req.cluster_id = raft_codec_cluster_str(cluster_id, false);
    req.voter_id = m->dst;
    req.topics = &topic;
    req.topics_count = 1;
    if (!v->pre_vote)
        return vote_request_encode(&req, w, version);
    /* The generated encoder ends with an empty tagged-field section (one
     * zero byte); write the body into a scratch writer and replace it. */
    struct kafka_writer body;
    if (kafka_writer_init(&body, vote_request_size(&req, version)) != 0)
        return -1;
    if (vote_request_encode(&req, &body, version) != 0 || kafka_writer_flatten(&body) != 0 ||
        kafka_writer_total_len(&body) < 1) {
        kafka_writer_free(&body);
        return -1;
    }
    kafka_write_raw(w, body.buf, (size_t)kafka_writer_total_len(&body) - 1);
    kafka_writer_free(&body);
    kafka_write_uvarint(w, 1);
    kafka_write_uvarint(w, RAFT_CODEC_PREVOTE_TAG);
    kafka_write_uvarint(w, 1);
    kafka_write_bool(w, true);
    return w->failed ? -1 : 0;
}

/* The top-level tagged fields start at the last byte the generated size
 * counts for the decoded message (its own empty section). */
static bool read_pre_vote(const uint8_t *body, size_t len, size_t tags_at)
{
    if (tags_at >= len)
        return false;
    struct kafka_reader r;
    kafka_reader_init(&r, body + tags_at, len - tags_at);
    uint32_t n = kafka_read_uvarint(&r);
    for (uint32_t i = 0; i < n && !r.failed; i++) {
        uint32_t tag = kafka_read_uvarint(&r);
        uint32_t size = kafka_read_uvarint(&r);
        if (tag == RAFT_CODEC_PREVOTE_TAG && size == 1)
            return kafka_read_bool(&r) && !r.failed;
        kafka_reader_skip(&r, size);
    }
    return false;
}

static int read_vote_request(int16_t version, const uint8_t *body, size_t len, const char *cluster_id,
                             struct raft_msg *out, struct kafka_arena *arena, char *err, size_t errlen)
{
    struct vote_request req;
    vote_request_init(&req);
    struct kafka_reader r;
    kafka_reader_init(&r, body, len);
    if (vote_request_decode(&req, &r, version, arena) != 0)
        return raft_codec_fail(err, errlen, "Vote", r.error);
    CHECK_ONE_PARTITION(req, cluster_id);
    const struct vote_request_partition_data *p = &req.topics[0].partitions[0];
    out->type = RAFT_MSG_VOTE_REQ;
    out->src = p->candidate_id;
    out->dst = version >= 1 ? req.voter_id : RAFT_NO_ID;
    out->u.vote_req = (struct raft_vote_req){
        .candidate_epoch = p->candidate_epoch,
        .candidate_id = p->candidate_id,
        .last_offset_epoch = p->last_offset_epoch,
        .last_offset = p->last_offset,
        .pre_vote = read_pre_vote(body, len, vote_request_size(&req, version) - 1),
    };
    return 0;
}

/* ---- BeginQuorumEpoch, EndQuorumEpoch ---- */

static int write_begin_request(struct kafka_writer *w, int16_t version, const char *cluster_id,
                               const struct raft_msg *m)
{
    struct begin_quorum_epoch_request_partition_data part;
    begin_quorum_epoch_request_partition_data_init(&part);
    part.leader_id = m->u.begin_req.leader_id;
    part.leader_epoch = m->u.begin_req.leader_epoch;
    struct begin_quorum_epoch_request_topic_data topic;
    begin_quorum_epoch_request_topic_data_init(&topic);
    topic.topic_name = kafka_str_from_cstr(RAFT_CODEC_TOPIC);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct begin_quorum_epoch_request req;
    begin_quorum_epoch_request_init(&req);
    req.cluster_id = raft_codec_cluster_str(cluster_id, true);
    req.voter_id = m->dst;
    req.topics = &topic;
    req.topics_count = 1;
    return begin_quorum_epoch_request_encode(&req, w, version);
}

static int read_begin_request(int16_t version, struct kafka_reader *r, const char *cluster_id, struct raft_msg *out,
                              struct kafka_arena *arena, char *err, size_t errlen)
{
    struct begin_quorum_epoch_request req;
    begin_quorum_epoch_request_init(&req);
    if (begin_quorum_epoch_request_decode(&req, r, version, arena) != 0)
        return raft_codec_fail(err, errlen, "BeginQuorumEpoch", r->error);
    CHECK_ONE_PARTITION(req, cluster_id);
    const struct begin_quorum_epoch_request_partition_data *p = &req.topics[0].partitions[0];
    out->type = RAFT_MSG_BEGIN_EPOCH_REQ;
    out->src = p->leader_id;
    out->dst = version >= 1 ? req.voter_id : RAFT_NO_ID;
    out->u.begin_req = (struct raft_begin_epoch_req){.leader_id = p->leader_id, .leader_epoch = p->leader_epoch};
    return 0;
}

static int write_end_request(struct kafka_writer *w, int16_t version, const char *cluster_id, const struct raft_msg *m)
{
    struct end_quorum_epoch_request_partition_data part;
    end_quorum_epoch_request_partition_data_init(&part);
    part.leader_id = m->u.end_req.leader_id;
    part.leader_epoch = m->u.end_req.leader_epoch;
    struct end_quorum_epoch_request_topic_data topic;
    end_quorum_epoch_request_topic_data_init(&topic);
    topic.topic_name = kafka_str_from_cstr(RAFT_CODEC_TOPIC);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct end_quorum_epoch_request req;
    end_quorum_epoch_request_init(&req);
    req.cluster_id = raft_codec_cluster_str(cluster_id, true);
    req.topics = &topic;
    req.topics_count = 1;
    return end_quorum_epoch_request_encode(&req, w, version);
}

static int read_end_request(int16_t version, struct kafka_reader *r, const char *cluster_id, struct raft_msg *out,
                            struct kafka_arena *arena, char *err, size_t errlen)
{
    struct end_quorum_epoch_request req;
    end_quorum_epoch_request_init(&req);
    if (end_quorum_epoch_request_decode(&req, r, version, arena) != 0)
        return raft_codec_fail(err, errlen, "EndQuorumEpoch", r->error);
    CHECK_ONE_PARTITION(req, cluster_id);
    const struct end_quorum_epoch_request_partition_data *p = &req.topics[0].partitions[0];
    out->type = RAFT_MSG_END_EPOCH_REQ;
    out->src = p->leader_id;
    out->dst = RAFT_NO_ID;
    out->u.end_req = (struct raft_end_epoch_req){.leader_id = p->leader_id, .leader_epoch = p->leader_epoch};
    return 0;
}

int raft_codec_write_request(struct kafka_writer *w, int16_t version, const char *cluster_id, const struct raft_msg *m)
{
    switch (m->type) {
    case RAFT_MSG_VOTE_REQ:
        return write_vote_request(w, version, cluster_id, m);
    case RAFT_MSG_BEGIN_EPOCH_REQ:
        return write_begin_request(w, version, cluster_id, m);
    case RAFT_MSG_END_EPOCH_REQ:
        return write_end_request(w, version, cluster_id, m);
    case RAFT_MSG_FETCH_REQ:
        return raft_codec_write_fetch_request(w, version, cluster_id, m);
    default:
        return -1;
    }
}

int raft_codec_read_request(int16_t api_key, int16_t version, const uint8_t *body, size_t len, const char *cluster_id,
                            struct raft_msg *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct kafka_reader r;
    kafka_reader_init(&r, body, len);
    int rc;
    switch (api_key) {
    case RAFT_API_VOTE:
        rc = read_vote_request(version, body, len, cluster_id, out, &arena, err, errlen);
        break;
    case RAFT_API_BEGIN_QUORUM_EPOCH:
        rc = read_begin_request(version, &r, cluster_id, out, &arena, err, errlen);
        break;
    case RAFT_API_END_QUORUM_EPOCH:
        rc = read_end_request(version, &r, cluster_id, out, &arena, err, errlen);
        break;
    case RAFT_API_FETCH:
        rc = raft_codec_read_fetch_request(version, &r, cluster_id, out, &arena, err, errlen);
        break;
    default:
        snprintf(err, errlen, "API key %d is not a quorum request", api_key);
        rc = -1;
    }
    kafka_arena_free(&arena);
    return rc;
}

/* ---- responses ---- */

/* The three small responses share one shape: error, leader id, epoch,
 * plus a vote's grant. */
struct small_resp {
    int16_t error_code;
    int32_t leader_id;
    int32_t leader_epoch;
    bool vote_granted;
};

/* The three are the same message under three names. */
#define WRITE_SMALL_RESPONSE(prefix, w, version, top_error, s, extra)                                                  \
    do {                                                                                                               \
        struct prefix##_partition_data part;                                                                           \
        prefix##_partition_data_init(&part);                                                                           \
        part.error_code = (s)->error_code;                                                                             \
        part.leader_id = (s)->leader_id;                                                                               \
        part.leader_epoch = (s)->leader_epoch;                                                                         \
        extra;                                                                                                         \
        struct prefix##_topic_data t;                                                                                  \
        prefix##_topic_data_init(&t);                                                                                  \
        t.topic_name = kafka_str_from_cstr(RAFT_CODEC_TOPIC);                                                          \
        t.partitions = &part;                                                                                          \
        t.partitions_count = 1;                                                                                        \
        struct prefix resp;                                                                                            \
        prefix##_init(&resp);                                                                                          \
        resp.error_code = (top_error);                                                                                 \
        resp.topics = &t;                                                                                              \
        resp.topics_count = (top_error) ? 0 : 1;                                                                       \
        return prefix##_encode(&resp, w, version);                                                                     \
    } while (0)

static int write_small_response(struct kafka_writer *w, int16_t api_key, int16_t version, int16_t top_error,
                                const struct small_resp *s)
{
    switch (api_key) {
    case RAFT_API_VOTE:
        WRITE_SMALL_RESPONSE(vote_response, w, version, top_error, s, part.vote_granted = s->vote_granted);
    case RAFT_API_BEGIN_QUORUM_EPOCH:
        WRITE_SMALL_RESPONSE(begin_quorum_epoch_response, w, version, top_error, s, (void)0);
    case RAFT_API_END_QUORUM_EPOCH:
        WRITE_SMALL_RESPONSE(end_quorum_epoch_response, w, version, top_error, s, (void)0);
    default:
        return -1;
    }
}

int raft_codec_write_response(struct kafka_writer *w, int16_t version, const struct raft_msg *m)
{
    struct small_resp s = {0};
    switch (m->type) {
    case RAFT_MSG_VOTE_RESP:
        s = (struct small_resp){m->u.vote_resp.error_code, m->u.vote_resp.leader_id, m->u.vote_resp.leader_epoch,
                                m->u.vote_resp.vote_granted};
        return write_small_response(w, RAFT_API_VOTE, version, 0, &s);
    case RAFT_MSG_BEGIN_EPOCH_RESP:
    case RAFT_MSG_END_EPOCH_RESP:
        s = (struct small_resp){m->u.epoch_resp.error_code, m->u.epoch_resp.leader_id, m->u.epoch_resp.leader_epoch,
                                false};
        return write_small_response(w, raft_codec_api_key(m->type), version, 0, &s);
    case RAFT_MSG_FETCH_RESP:
        return raft_codec_write_fetch_response(w, version, 0, m, NULL);
    default:
        return -1;
    }
}

int raft_codec_write_error_response(struct kafka_writer *w, int16_t api_key, int16_t version, int16_t error_code)
{
    if (api_key == RAFT_API_FETCH)
        return raft_codec_write_fetch_response(w, version, error_code, NULL, NULL);
    if (api_key == RAFT_API_DESCRIBE_QUORUM) {
        struct raft_quorum_view view = {.error_code = error_code, .leader_id = -1, .leader_epoch = -1};
        return raft_codec_write_describe_quorum(w, version, &view);
    }
    struct small_resp s = {.error_code = error_code, .leader_id = -1, .leader_epoch = -1};
    return write_small_response(w, api_key, version, error_code, &s);
}

int raft_codec_fail(char *err, size_t errlen, const char *what, const char *why)
{
    snprintf(err, errlen, "%s: %s", what, why && why[0] ? why : "malformed");
    return -1;
}

/* Checks the one-partition shape of a small response and copies it. */
#define SMALL_RESPONSE_TAKE(resp, name, s, err, errlen)                                                                \
    do {                                                                                                               \
        if ((resp)->error_code)                                                                                        \
            return raft_codec_top_error(err, errlen, name, (resp)->error_code);                                        \
        if ((resp)->topics_count != 1 || (resp)->topics[0].partitions_count != 1 ||                                    \
            !kafka_str_eq_cstr((resp)->topics[0].topic_name, RAFT_CODEC_TOPIC))                                        \
            return raft_codec_fail(err, errlen, name, "the answer is not for " RAFT_CODEC_TOPIC "-0");                 \
        (s)->error_code = (resp)->topics[0].partitions[0].error_code;                                                  \
        (s)->leader_id = (resp)->topics[0].partitions[0].leader_id;                                                    \
        (s)->leader_epoch = (resp)->topics[0].partitions[0].leader_epoch;                                              \
    } while (0)

int raft_codec_top_error(char *err, size_t errlen, const char *what, int16_t code)
{
    const char *name = kafka_error_name(code);
    snprintf(err, errlen, "%s answered %s (%d)", what, name ? name : "an error", code);
    return -1;
}

int raft_codec_read_response(const void *response, const struct raft_msg *req, struct raft_msg *out, char *err,
                             size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->src = req->dst;
    out->dst = req->src;
    out->correlation_id = req->correlation_id;
    struct small_resp s = {0};
    switch (req->type) {
    case RAFT_MSG_VOTE_REQ: {
        const struct vote_response *resp = response;
        SMALL_RESPONSE_TAKE(resp, "Vote", &s, err, errlen);
        out->type = RAFT_MSG_VOTE_RESP;
        out->u.vote_resp = (struct raft_vote_resp){.error_code = s.error_code,
                                                   .leader_id = s.leader_id,
                                                   .leader_epoch = s.leader_epoch,
                                                   .vote_granted = resp->topics[0].partitions[0].vote_granted,
                                                   .pre_vote = req->u.vote_req.pre_vote};
        return 0;
    }
    case RAFT_MSG_BEGIN_EPOCH_REQ: {
        const struct begin_quorum_epoch_response *resp = response;
        SMALL_RESPONSE_TAKE(resp, "BeginQuorumEpoch", &s, err, errlen);
        out->type = RAFT_MSG_BEGIN_EPOCH_RESP;
        break;
    }
    case RAFT_MSG_END_EPOCH_REQ: {
        const struct end_quorum_epoch_response *resp = response;
        SMALL_RESPONSE_TAKE(resp, "EndQuorumEpoch", &s, err, errlen);
        out->type = RAFT_MSG_END_EPOCH_RESP;
        break;
    }
    case RAFT_MSG_FETCH_REQ:
        return raft_codec_read_fetch_response(response, req->u.fetch_req.fetch_offset, out, err, errlen);
    default:
        return raft_codec_fail(err, errlen, "response", "not the answer to a quorum request");
    }
    out->u.epoch_resp = (struct raft_epoch_resp){s.error_code, s.leader_id, s.leader_epoch};
    return 0;
}

/* ---- DescribeQuorum ---- */

static void replica_states_of(const struct raft_quorum_replica *in, int n,
                              struct describe_quorum_response_replica_state *out)
{
    for (int i = 0; i < n; i++) {
        describe_quorum_response_replica_state_init(&out[i]);
        out[i].replica_id = in[i].replica_id;
        out[i].log_end_offset = in[i].log_end_offset;
        out[i].last_fetch_timestamp = in[i].last_fetch_timestamp;
        out[i].last_caught_up_timestamp = in[i].last_caught_up_timestamp;
    }
}

static int replicas_from(const struct describe_quorum_response_replica_state *in, int32_t n,
                         struct raft_quorum_replica *out, int cap)
{
    int got = 0;
    for (int32_t i = 0; i < n && got < cap; i++)
        out[got++] = (struct raft_quorum_replica){in[i].replica_id, in[i].log_end_offset, in[i].last_fetch_timestamp,
                                                  in[i].last_caught_up_timestamp};
    return got;
}

int raft_codec_write_describe_quorum(struct kafka_writer *w, int16_t version, const struct raft_quorum_view *view)
{
    struct describe_quorum_response_replica_state voters[RAFT_MAX_VOTERS];
    struct describe_quorum_response_replica_state observers[RAFT_QUORUM_VIEW_MAX_OBSERVERS];
    int n_voters = view->n_voters < RAFT_MAX_VOTERS ? view->n_voters : RAFT_MAX_VOTERS;
    int n_observers = view->n_observers < RAFT_QUORUM_VIEW_MAX_OBSERVERS ? view->n_observers
                                                                         : RAFT_QUORUM_VIEW_MAX_OBSERVERS;
    replica_states_of(view->voters, n_voters, voters);
    replica_states_of(view->observers, n_observers, observers);
    struct describe_quorum_response_partition_data part;
    describe_quorum_response_partition_data_init(&part);
    part.error_code = view->error_code;
    part.leader_id = view->leader_id;
    part.leader_epoch = view->leader_epoch;
    part.high_watermark = view->high_watermark;
    part.current_voters = voters;
    part.current_voters_count = n_voters;
    part.observers = observers;
    part.observers_count = n_observers;
    struct describe_quorum_response_topic_data topic;
    describe_quorum_response_topic_data_init(&topic);
    topic.topic_name = kafka_str_from_cstr(RAFT_CODEC_TOPIC);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct describe_quorum_response resp;
    describe_quorum_response_init(&resp);
    resp.topics = &topic;
    resp.topics_count = 1;
    return describe_quorum_response_encode(&resp, w, version);
}

int raft_codec_read_describe_quorum(const void *response, struct raft_quorum_view *out, char *err, size_t errlen)
{
    const struct describe_quorum_response *resp = response;
    memset(out, 0, sizeof *out);
    if (resp->error_code)
        return raft_codec_top_error(err, errlen, "DescribeQuorum", resp->error_code);
    if (resp->topics_count != 1 || resp->topics[0].partitions_count != 1)
        return raft_codec_fail(err, errlen, "DescribeQuorum", "the answer is not for " RAFT_CODEC_TOPIC "-0");
    const struct describe_quorum_response_partition_data *p = &resp->topics[0].partitions[0];
    out->error_code = p->error_code;
    out->leader_id = p->leader_id;
    out->leader_epoch = p->leader_epoch;
    out->high_watermark = p->high_watermark;
    out->n_voters = replicas_from(p->current_voters, p->current_voters_count, out->voters, RAFT_MAX_VOTERS);
    out->n_observers = replicas_from(p->observers, p->observers_count, out->observers, RAFT_QUORUM_VIEW_MAX_OBSERVERS);
    return 0;
}
