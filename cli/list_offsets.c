/* ListOffsets for a set of partitions: one request to each leader. Used by
 * group describe (log end offsets) and group reset-offsets (earliest,
 * latest and by-time offsets). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The queries one broker leads, for one request; main thread only. */
struct leader_queries {
    const struct cli_offset_query *q;
    int n;
    int32_t leader;
    int64_t timestamp;
};

static int build_list_offsets(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct list_offsets_request *m = req;
    const struct leader_queries *lq = ctx;
    if (lq->timestamp >= 0 && version < 1)
        return -1; /* by time needs v1 */
    m->replica_id = -1;
    m->topics = kafka_arena_alloc(a, sizeof(*m->topics) * (size_t)(lq->n ? lq->n : 1));
    if (!m->topics)
        return -1;
    for (int i = 0; i < lq->n; i++) {
        const struct cli_offset_query *q = &lq->q[i];
        if (q->leader != lq->leader)
            continue;
        /* One topic entry per partition keeps this simple; brokers accept repeats. */
        struct list_offsets_request_list_offsets_topic *t = &m->topics[m->topics_count++];
        list_offsets_request_list_offsets_topic_init(t);
        t->name = kafka_str_from_cstr(q->topic);
        t->partitions = kafka_arena_alloc(a, sizeof(*t->partitions));
        if (!t->partitions)
            return -1;
        list_offsets_request_list_offsets_partition_init(&t->partitions[0]);
        t->partitions[0].partition_index = q->partition;
        t->partitions[0].timestamp = lq->timestamp;
        t->partitions[0].max_num_offsets = 1;
        t->partitions_count = 1;
    }
    m->timeout_ms = 30000;
    return 0;
}

static struct cli_offset_query *query_find(struct cli_offset_query *q, int n, struct kafka_str topic, int32_t partition)
{
    size_t len = topic.len > 0 ? (size_t)topic.len : 0;
    for (int i = 0; i < n; i++)
        if (q[i].partition == partition && strlen(q[i].topic) == len && (!len || !memcmp(q[i].topic, topic.data, len)))
            return &q[i];
    return NULL;
}

int cli_list_offsets(struct cli_conn *c, struct cli_offset_query *q, int n, int64_t timestamp)
{
    for (int i = 0; i < n; i++) {
        q[i].offset = -1;
        q[i].error = q[i].leader < 0 ? KAFKA_ERR_LEADER_NOT_AVAILABLE : KAFKA_ERR_NONE;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        int32_t leader = q[i].leader;
        bool seen = leader < 0;
        for (int j = 0; j < i && !seen; j++)
            seen = q[j].leader == leader;
        if (seen)
            continue;
        struct leader_queries lq = {q, n, leader, timestamp};
        struct cli_reply r;
        rc = cli_call(c, leader, KAFKA_API_KEY_LIST_OFFSETS, build_list_offsets, &lq, &r);
        if (rc)
            break;
        const struct list_offsets_response *lo = r.response;
        for (int32_t t = 0; t < lo->topics_count; t++)
            for (int32_t p = 0; p < lo->topics[t].partitions_count; p++) {
                const struct list_offsets_response_list_offsets_partition_response *pr = &lo->topics[t].partitions[p];
                struct cli_offset_query *found = query_find(q, n, lo->topics[t].name, pr->partition_index);
                if (!found)
                    continue;
                found->error = pr->error_code;
                if (pr->error_code == KAFKA_ERR_NONE)
                    found->offset = r.version >= 1                ? pr->offset
                                    : pr->old_style_offsets_count ? pr->old_style_offsets[0]
                                                                  : -1;
            }
        cli_reply_free(&r);
    }
    return rc;
}

int32_t cli_metadata_leader(const struct metadata_response *m, const char *topic, int32_t partition)
{
    for (int32_t t = 0; t < m->topics_count; t++) {
        if (strcmp(cli_str(m->topics[t].name), topic) != 0)
            continue;
        for (int32_t p = 0; p < m->topics[t].partitions_count; p++)
            if (m->topics[t].partitions[p].partition_index == partition)
                return m->topics[t].partitions[p].leader_id;
    }
    return -1;
}
