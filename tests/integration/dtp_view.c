/* DescribeTopicPartitions through the outbound client (dtp_view.h). */
#include "dtp_view.h"

#include <stdio.h>
#include <string.h>

#include "protocol/generated/describe_topic_partitions_request.h"
#include "protocol/generated/describe_topic_partitions_response.h"

#define API_DESCRIBE_TOPIC_PARTITIONS 75

struct dtp_ask {
    bool answered;
    struct dtp_view *view;
};

static void copy_name(char *dst, size_t cap, struct kafka_str s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, s.data, n);
    dst[n] = '\0';
}

static int copy_ids(int32_t *dst, const int32_t *src, int32_t n)
{
    int kept = n < DTP_IDS ? (int)n : DTP_IDS;
    for (int i = 0; i < kept; i++)
        dst[i] = src[i];
    return kept;
}

/* Runs on the client's thread: the answer is freed once this returns. */
static void dtp_parse(const struct net_client_result *result, void *arg)
{
    struct dtp_ask *ask = arg;
    const struct describe_topic_partitions_response *m = result->response;
    if (result->status != NET_CLIENT_OK || !m)
        return;
    struct dtp_view *v = ask->view;
    v->topic_count = m->topics_count < DTP_TOPICS ? m->topics_count : DTP_TOPICS;
    for (int t = 0; t < v->topic_count; t++) {
        const struct describe_topic_partitions_response_describe_topic_partitions_response_topic *in = &m->topics[t];
        struct dtp_topic *out = &v->topics[t];
        out->error_code = in->error_code;
        copy_name(out->name, sizeof out->name, in->name);
        out->authorized_operations = in->topic_authorized_operations;
        out->partition_count = in->partitions_count < VIEW_PARTS ? in->partitions_count : VIEW_PARTS;
        for (int i = 0; i < out->partition_count; i++) {
            const struct describe_topic_partitions_response_describe_topic_partitions_response_partition
                *ip = &in->partitions[i];
            struct dtp_partition *op = &out->p[i];
            op->error_code = ip->error_code;
            op->partition_index = ip->partition_index;
            op->leader = ip->leader_id;
            op->leader_epoch = ip->leader_epoch;
            op->replica_count = copy_ids(op->replicas, ip->replica_nodes, ip->replica_nodes_count);
            op->isr_count = copy_ids(op->isr, ip->isr_nodes, ip->isr_nodes_count);
            op->elr_count = copy_ids(op->elr, ip->eligible_leader_replicas, ip->eligible_leader_replicas_count);
            op->last_known_elr_count = copy_ids(op->last_known_elr, ip->last_known_elr, ip->last_known_elr_count);
            op->offline_count = copy_ids(op->offline, ip->offline_replicas, ip->offline_replicas_count);
        }
    }
    v->has_cursor = m->next_cursor != NULL;
    if (m->next_cursor) {
        copy_name(v->cursor_topic, sizeof v->cursor_topic, m->next_cursor->topic_name);
        v->cursor_partition = m->next_cursor->partition_index;
    }
    ask->answered = true;
}

bool describe_topic_partitions(struct net_client *client, int node, const char *const *topics, int32_t limit,
                               const char *cursor_topic, int32_t cursor_partition, struct dtp_view *out)
{
    struct describe_topic_partitions_request_topic_request names[DTP_TOPICS];
    int count = 0;
    for (; topics && topics[count] && count < DTP_TOPICS; count++) {
        describe_topic_partitions_request_topic_request_init(&names[count]);
        names[count].name = kafka_str_from_cstr(topics[count]);
    }
    struct describe_topic_partitions_request_cursor cursor;
    describe_topic_partitions_request_cursor_init(&cursor);
    struct describe_topic_partitions_request req;
    describe_topic_partitions_request_init(&req);
    req.topics = count ? names : NULL;
    req.topics_count = count;
    req.response_partition_limit = limit;
    /* A copy: the cursor may be out's own, which is cleared below. */
    char cursor_name[64];
    if (cursor_topic) {
        snprintf(cursor_name, sizeof cursor_name, "%s", cursor_topic);
        cursor.topic_name = kafka_str_from_cstr(cursor_name);
        cursor.partition_index = cursor_partition;
        req.cursor = &cursor;
    }
    memset(out, 0, sizeof *out);
    struct dtp_ask ask = {.answered = false, .view = out};
    client_call(client, node, API_DESCRIBE_TOPIC_PARTITIONS, 0, &req, 10000, dtp_parse, &ask);
    return ask.answered;
}
