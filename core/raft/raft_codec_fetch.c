/* Fetch as the quorum's replication RPC, and log entries as record batches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/errors.h"
#include "protocol/generated/fetch_request.h"
#include "protocol/generated/fetch_response.h"
#include "protocol/record_batch.h"
#include "raft/raft_codec_internal.h"
#include "raft/raft_store.h"

/* Kafka's Uuid.METADATA_TOPIC_ID: (0, 1). */
static struct kafka_uuid metadata_topic_id(void)
{
    struct kafka_uuid id = {{0}};
    id.bytes[15] = 1;
    return id;
}

static bool is_metadata_topic(struct kafka_str name, struct kafka_uuid id)
{
    struct kafka_uuid want = metadata_topic_id();
    return memcmp(id.bytes, want.bytes, sizeof want.bytes) == 0 || kafka_str_eq_cstr(name, RAFT_CODEC_TOPIC);
}

bool raft_codec_is_leader_change(const struct raft_entry *e)
{
    if (!e->data)
        return false;
    /* The core's own body at the leader that wrote it. */
    if (raft_store_is_leader_change_body(e))
        return true;
    /* Anywhere else (fetched, or read back from disk) it is a control batch. */
    struct record_batch_header h;
    return record_batch_parse_header(e->data, e->len, &h) == 0 && record_batch_is_control(&h);
}

static struct raft_entry *grow_records(struct raft_fetch_resp *fr, int32_t *cap)
{
    if (fr->n_records == *cap) {
        int32_t ncap = *cap ? *cap * 2 : 8;
        struct raft_entry *grown = realloc(fr->records, (size_t)ncap * sizeof *grown);
        if (!grown)
            return NULL;
        fr->records = grown;
        *cap = ncap;
    }
    return &fr->records[fr->n_records];
}

/* One batch -> one entry: its data is the whole batch, as the store keeps
 * it (raft_store.h). */
static int entries_from_batch(struct raft_fetch_resp *fr, int32_t *cap, const uint8_t *batch, size_t len, char *err,
                              size_t errlen)
{
    struct record_batch_header h;
    char why[160];
    if (record_batch_validate(batch, len, -1, &h, why, sizeof why) != KAFKA_ERR_NONE)
        return raft_codec_fail(err, errlen, "Fetch records", why);
    if (h.record_count < 1 || h.last_offset_delta + 1 != h.record_count)
        return raft_codec_fail(err, errlen, "Fetch records", "a batch whose record count does not span its offsets");
    struct raft_entry *e = grow_records(fr, cap);
    uint8_t *copy = e ? malloc(len) : NULL;
    if (!copy)
        return raft_codec_fail(err, errlen, "Fetch records", "out of memory");
    memcpy(copy, batch, len);
    *e = (struct raft_entry){.offset = h.base_offset,
                             .epoch = h.partition_leader_epoch,
                             .count = h.record_count,
                             .len = (uint32_t)len,
                             .data = copy};
    fr->n_records++;
    return 0;
}

static int entries_from_records(struct raft_fetch_resp *fr, const uint8_t *data, size_t len, char *err, size_t errlen)
{
    struct record_batch_iter it;
    record_batch_iter_init(&it, data, len);
    const uint8_t *batch;
    size_t batch_len;
    int32_t cap = 0;
    int rc;
    while ((rc = record_batch_iter_next(&it, &batch, &batch_len)) == 1)
        if (entries_from_batch(fr, &cap, batch, batch_len, err, errlen) != 0)
            return -1;
    /* A cut-off last batch is normal for Kafka's fetch; Cairn never sends
     * one, so it is refused rather than half-read. */
    return rc == 0 ? 0 : raft_codec_fail(err, errlen, "Fetch records", "a truncated record batch");
}

int raft_codec_write_fetch_request(struct kafka_writer *w, int16_t version, const char *cluster_id,
                                   const struct raft_msg *m)
{
    const struct raft_fetch_req *f = &m->u.fetch_req;
    struct fetch_request_fetch_partition part;
    memset(&part, 0, sizeof part);
    part.partition = 0;
    part.current_leader_epoch = f->current_leader_epoch;
    part.fetch_offset = f->fetch_offset;
    part.last_fetched_epoch = f->last_fetched_epoch;
    part.log_start_offset = 0;
    part.partition_max_bytes = f->max_bytes > 0 ? f->max_bytes : RAFT_CODEC_FETCH_MAX_BYTES;
    struct fetch_request_fetch_topic topic;
    memset(&topic, 0, sizeof topic);
    topic.topic = kafka_str_from_cstr(RAFT_CODEC_TOPIC);
    topic.topic_id = metadata_topic_id();
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct fetch_request req;
    fetch_request_init(&req);
    req.cluster_id = raft_codec_cluster_str(cluster_id, true);
    /* ReplicaId moved into ReplicaState in v15 (KIP-903). */
    if (version >= 15)
        req.replica_state.replica_id = f->replica_id;
    else
        req.replica_id = f->replica_id;
    /* The core paces its fetches itself: the leader answers at once. */
    req.max_wait_ms = 0;
    req.min_bytes = 0;
    req.topics = &topic;
    req.topics_count = 1;
    return fetch_request_encode(&req, w, version);
}

int raft_codec_read_fetch_request(int16_t version, struct kafka_reader *r, const char *cluster_id, struct raft_msg *out,
                                  struct kafka_arena *arena, char *err, size_t errlen)
{
    struct fetch_request req;
    fetch_request_init(&req);
    if (fetch_request_decode(&req, r, version, arena) != 0)
        return raft_codec_fail(err, errlen, "Fetch", r->error);
    if (!raft_codec_cluster_ok(req.cluster_id, cluster_id))
        return KAFKA_ERR_INCONSISTENT_CLUSTER_ID;
    if (req.topics_count != 1 || req.topics[0].partitions_count != 1 || req.topics[0].partitions[0].partition != 0 ||
        !is_metadata_topic(req.topics[0].topic, req.topics[0].topic_id))
        return KAFKA_ERR_INVALID_REQUEST;
    const struct fetch_request_fetch_partition *p = &req.topics[0].partitions[0];
    int32_t replica = version >= 15 ? req.replica_state.replica_id : req.replica_id;
    out->type = RAFT_MSG_FETCH_REQ;
    out->src = replica;
    out->dst = RAFT_NO_ID;
    out->u.fetch_req = (struct raft_fetch_req){.replica_id = replica,
                                               .current_leader_epoch = p->current_leader_epoch,
                                               .fetch_offset = p->fetch_offset,
                                               .last_fetched_epoch = p->last_fetched_epoch,
                                               .max_bytes = p->partition_max_bytes};
    /* Kafka bounds a fetch by both; a budget of 0 or less still gets one
     * entry (raft_store_read answers with at least one). */
    if (req.max_bytes > 0 && req.max_bytes < out->u.fetch_req.max_bytes)
        out->u.fetch_req.max_bytes = req.max_bytes;
    return 0;
}

/* The records of a response: the entries' batches back to back. */
static int records_of(const struct raft_fetch_resp *f, uint8_t **out, size_t *out_len)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    for (int32_t i = 0; i < f->n_records; i++) {
        uint8_t *batch;
        size_t batch_len;
        char why[160];
        if (raft_store_entry_batch(&f->records[i], &batch, &batch_len, why, sizeof why) != 0) {
            free(buf);
            return -1;
        }
        uint8_t *grown = realloc(buf, len + batch_len);
        if (!grown) {
            free(batch);
            free(buf);
            return -1;
        }
        buf = grown;
        memcpy(buf + len, batch, batch_len);
        len += batch_len;
        free(batch);
    }
    *out = buf;
    *out_len = len;
    return 0;
}

/* Kafka's node endpoints are for the leader the partition names, from the
 * version (17) that the quorum's observers read them in. */
#define FETCH_NODE_ENDPOINTS_VERSION 17

int raft_codec_write_fetch_response(struct kafka_writer *w, int16_t version, int16_t top_error,
                                    const struct raft_msg *m, const struct raft_codec_endpoint *leader)
{
    struct fetch_response_partition_data part;
    fetch_response_partition_data_init(&part);
    uint8_t *records = NULL;
    size_t records_len = 0;
    if (m) {
        const struct raft_fetch_resp *f = &m->u.fetch_resp;
        if (records_of(f, &records, &records_len) != 0)
            return -1;
        part.partition_index = 0;
        part.error_code = f->error_code;
        part.high_watermark = f->high_watermark;
        part.last_stable_offset = f->high_watermark;
        part.log_start_offset = 0;
        part.diverging_epoch.epoch = f->diverging_epoch;
        part.diverging_epoch.end_offset = f->diverging_end_offset;
        part.current_leader.leader_id = f->current_leader_id;
        part.current_leader.leader_epoch = f->current_leader_epoch;
        if (f->snapshot_end_offset > 0) {
            part.snapshot_id.end_offset = f->snapshot_end_offset;
            part.snapshot_id.epoch = f->snapshot_epoch;
        }
        part.records = kafka_records_from_memory(records, (int32_t)records_len);
    }
    struct fetch_response_fetchable_topic_response topic;
    fetch_response_fetchable_topic_response_init(&topic);
    topic.topic = kafka_str_from_cstr(RAFT_CODEC_TOPIC);
    topic.topic_id = metadata_topic_id();
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct fetch_response resp;
    fetch_response_init(&resp);
    resp.error_code = top_error;
    resp.responses = &topic;
    resp.responses_count = m ? 1 : 0;
    struct fetch_response_node_endpoint endpoint;
    if (m && leader && version >= FETCH_NODE_ENDPOINTS_VERSION && leader->node_id >= 0 &&
        leader->node_id == m->u.fetch_resp.current_leader_id) {
        fetch_response_node_endpoint_init(&endpoint);
        endpoint.node_id = leader->node_id;
        endpoint.host = kafka_str_from_cstr(leader->host);
        endpoint.port = leader->port;
        resp.node_endpoints = &endpoint;
        resp.node_endpoints_count = 1;
    }
    int rc = fetch_response_encode(&resp, w, version);
    /* Records go into the writer by copy unless they live in a file. */
    free(records);
    return rc;
}

int raft_codec_read_fetch_response(const void *response, int64_t fetch_offset, struct raft_msg *out, char *err,
                                   size_t errlen)
{
    const struct fetch_response *resp = response;
    if (resp->error_code)
        return raft_codec_top_error(err, errlen, "Fetch", resp->error_code);
    if (resp->responses_count != 1 || resp->responses[0].partitions_count != 1 ||
        resp->responses[0].partitions[0].partition_index != 0 ||
        !is_metadata_topic(resp->responses[0].topic, resp->responses[0].topic_id))
        return raft_codec_fail(err, errlen, "Fetch", "the answer is not for " RAFT_CODEC_TOPIC "-0");
    const struct fetch_response_partition_data *p = &resp->responses[0].partitions[0];
    out->type = RAFT_MSG_FETCH_RESP;
    struct raft_fetch_resp *f = &out->u.fetch_resp;
    f->error_code = p->error_code;
    f->high_watermark = p->high_watermark;
    f->diverging_epoch = p->diverging_epoch.epoch;
    f->diverging_end_offset = p->diverging_epoch.end_offset;
    f->current_leader_id = p->current_leader.leader_id;
    f->current_leader_epoch = p->current_leader.leader_epoch;
    f->fetch_offset = fetch_offset;
    f->snapshot_end_offset = p->snapshot_id.end_offset;
    f->snapshot_epoch = p->snapshot_id.epoch;
    if (f->snapshot_end_offset < -1 || (f->snapshot_end_offset > 0 && f->snapshot_epoch < 0))
        return raft_codec_fail(err, errlen, "Fetch", "invalid SnapshotId");
    if (p->records.len > 0 && p->records.data &&
        entries_from_records(f, p->records.data, (size_t)p->records.len, err, errlen) != 0) {
        raft_msg_clear(out);
        return -1;
    }
    if (f->n_records > 0 && f->records[0].offset != fetch_offset) {
        raft_msg_clear(out);
        return raft_codec_fail(err, errlen, "Fetch", "records do not start at the fetch offset");
    }
    return 0;
}

int raft_codec_write_fetch_answer(struct kafka_writer *w, int16_t version, const struct raft_msg *m,
                                  const struct raft_codec_endpoint *leader)
{
    if (m->type != RAFT_MSG_FETCH_RESP)
        return -1;
    return raft_codec_write_fetch_response(w, version, 0, m, leader);
}

bool raft_codec_fetch_endpoint(const void *response, int32_t node_id, struct raft_codec_endpoint *out)
{
    const struct fetch_response *resp = response;
    for (int32_t i = 0; node_id >= 0 && i < resp->node_endpoints_count; i++) {
        const struct fetch_response_node_endpoint *e = &resp->node_endpoints[i];
        if (e->node_id != node_id)
            continue;
        /* A host that does not fit, or a port no socket has, names nothing. */
        if (e->port <= 0 || e->port > 65535 || e->host.len <= 0 || (size_t)e->host.len >= sizeof out->host)
            return false;
        out->node_id = node_id;
        memcpy(out->host, e->host.data, (size_t)e->host.len);
        out->host[e->host.len] = '\0';
        out->port = e->port;
        return true;
    }
    return false;
}
