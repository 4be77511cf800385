/* cairn consume --group: the group's committed offsets read with
 * OffsetFetch and the positions committed with OffsetCommit under the
 * member's generation (consume_member.c joins the group). */
#include <stdio.h>
#include <string.h>

#include "consume.h"

static int build_offset_fetch(void *req, int16_t version, struct kafka_arena *ar, void *ctx)
{
    struct offset_fetch_request *m = req;
    const struct consumer *k = ctx;
    int32_t *ids = kafka_arena_alloc(ar, sizeof(*ids) * (size_t)k->nparts);
    if (!ids)
        return -1;
    for (int i = 0; i < k->nparts; i++)
        ids[i] = k->parts[i].id;
    m->require_stable = true;
    if (version >= 8) {
        m->groups = kafka_arena_alloc(ar, sizeof(*m->groups));
        if (!m->groups || !(m->groups[0].topics = kafka_arena_alloc(ar, sizeof(*m->groups[0].topics))))
            return -1;
        struct offset_fetch_request_offset_fetch_request_group *g = &m->groups[0];
        struct offset_fetch_request_offset_fetch_request_topics *t = g->topics;
        offset_fetch_request_offset_fetch_request_group_init(g);
        g->topics = t;
        offset_fetch_request_offset_fetch_request_topics_init(t);
        g->group_id = kafka_str_from_cstr(k->a->group);
        t->name = kafka_str_from_cstr(k->t.name);
        t->partition_indexes = ids;
        t->partition_indexes_count = k->nparts;
        g->topics_count = 1;
        m->groups_count = 1;
        return 0;
    }
    m->group_id = kafka_str_from_cstr(k->a->group);
    m->topics = kafka_arena_alloc(ar, sizeof(*m->topics));
    if (!m->topics)
        return -1;
    offset_fetch_request_offset_fetch_request_topic_init(&m->topics[0]);
    m->topics[0].name = kafka_str_from_cstr(k->t.name);
    m->topics[0].partition_indexes = ids;
    m->topics[0].partition_indexes_count = k->nparts;
    m->topics_count = 1;
    return 0;
}

static int take_committed(struct consumer *k, int32_t partition, int64_t offset, int16_t error)
{
    struct part *p = cli_consume_part(k, partition);
    if (!p)
        return 0;
    if (error != KAFKA_ERR_NONE) {
        char what[400];
        snprintf(what, sizeof(what), "cannot read group '%s' offset of partition %d", k->a->group, (int)partition);
        return cli_kafka_fail(error, (struct kafka_str){NULL, -1}, what, NULL);
    }
    p->committed = offset;
    if (offset >= 0) /* a member goes on from the group's offset; the start flags apply where none */
        p->position = offset;
    return 0;
}

/* The group's committed offsets (OffsetFetch to its coordinator). */
int cli_consume_fetch_committed(struct consumer *k)
{
    struct cli_reply r; /* the coordinator found by the join */
    int rc = cli_call(k->c, k->coordinator, KAFKA_API_KEY_OFFSET_FETCH, build_offset_fetch, k, &r);
    if (rc)
        return rc;
    const struct offset_fetch_response *m = r.response;
    int16_t err = r.version >= 8   ? (m->groups_count ? m->groups[0].error_code : KAFKA_ERR_NONE)
                  : r.version >= 2 ? m->error_code
                                   : KAFKA_ERR_NONE;
    if (err != KAFKA_ERR_NONE) {
        char what[400];
        snprintf(what, sizeof(what), "cannot read the offsets of group '%s'", k->a->group);
        rc = cli_kafka_fail(err, (struct kafka_str){NULL, -1}, what, NULL);
    } else if (r.version >= 8) {
        for (int32_t g = 0; g < m->groups_count && rc == 0; g++)
            for (int32_t t = 0; t < m->groups[g].topics_count && rc == 0; t++)
                for (int32_t i = 0; i < m->groups[g].topics[t].partitions_count && rc == 0; i++) {
                    const struct offset_fetch_response_offset_fetch_response_partitions
                        *p = &m->groups[g].topics[t].partitions[i];
                    rc = take_committed(k, p->partition_index, p->committed_offset, p->error_code);
                }
    } else {
        for (int32_t t = 0; t < m->topics_count && rc == 0; t++)
            for (int32_t i = 0; i < m->topics[t].partitions_count && rc == 0; i++) {
                const struct offset_fetch_response_offset_fetch_response_partition *p = &m->topics[t].partitions[i];
                rc = take_committed(k, p->partition_index, p->committed_offset, p->error_code);
            }
    }
    cli_reply_free(&r);
    return rc;
}

static int build_offset_commit(void *req, int16_t version, struct kafka_arena *ar, void *ctx)
{
    struct offset_commit_request *m = req;
    const struct consumer *k = ctx;
    if (k->a->group_instance_id && version < 7) /* GroupInstanceId came with v7 */
        return -1;
    m->group_id = kafka_str_from_cstr(k->a->group);
    m->generation_id_or_member_epoch = k->member ? k->generation : -1;
    m->member_id = kafka_str_from_cstr(k->member ? k->member_id : "");
    m->group_instance_id = k->member ? cli_consume_instance_id(k) : (struct kafka_str){NULL, -1};
    m->retention_time_ms = -1;
    m->topics = kafka_arena_alloc(ar, sizeof(*m->topics));
    struct offset_commit_request_offset_commit_request_partition *ps = kafka_arena_alloc(ar, sizeof(*ps) *
                                                                                                 (size_t)k->nparts);
    if (!m->topics || !ps)
        return -1;
    offset_commit_request_offset_commit_request_topic_init(&m->topics[0]);
    m->topics[0].name = kafka_str_from_cstr(k->t.name);
    int32_t n = 0;
    for (int i = 0; i < k->nparts; i++) {
        const struct part *p = &k->parts[i];
        if (p->position == p->committed || p->position < 0)
            continue;
        offset_commit_request_offset_commit_request_partition_init(&ps[n]);
        ps[n].partition_index = p->id;
        ps[n].committed_offset = p->position;
        ps[n].committed_metadata = kafka_str_from_cstr("");
        n++;
    }
    m->topics[0].partitions = ps;
    m->topics[0].partitions_count = n;
    m->topics_count = 1;
    return 0;
}

/* Commit errors after which the member joins again (its partitions may
 * be someone else's, or the coordinator moved) rather than exits. */
static bool member_lost(int16_t code)
{
    switch (code) {
    case KAFKA_ERR_REBALANCE_IN_PROGRESS:
    case KAFKA_ERR_ILLEGAL_GENERATION:
    case KAFKA_ERR_UNKNOWN_MEMBER_ID:
    case KAFKA_ERR_NOT_COORDINATOR:
    case KAFKA_ERR_COORDINATOR_NOT_AVAILABLE:
    case KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS:
        return true;
    default:
        return false;
    }
}

/* Commits every position that moved since the last commit. */
int cli_consume_commit(struct consumer *k)
{
    bool moved = false;
    for (int i = 0; i < k->nparts; i++)
        moved |= k->parts[i].position != k->parts[i].committed && k->parts[i].position >= 0;
    k->last_commit_ms = cli_now_ms();
    if (!k->a->group || !moved || !k->member)
        return 0;
    struct cli_reply r;
    int rc = cli_call(k->c, k->coordinator, KAFKA_API_KEY_OFFSET_COMMIT, build_offset_commit, k, &r);
    if (rc)
        return rc;
    const struct offset_commit_response *m = r.response;
    for (int32_t t = 0; t < m->topics_count && rc == 0; t++)
        for (int32_t i = 0; i < m->topics[t].partitions_count && rc == 0; i++) {
            const struct offset_commit_response_offset_commit_response_partition *pr = &m->topics[t].partitions[i];
            struct part *p = cli_consume_part(k, pr->partition_index);
            if (pr->error_code == KAFKA_ERR_NONE) {
                if (p)
                    p->committed = p->position;
                continue;
            }
            /* The group moved on without this member (a rebalance, the
             * session expired): its partitions are someone else's now;
             * the next owner reads from the last commit. */
            if (k->member && member_lost(pr->error_code)) {
                if (pr->error_code == KAFKA_ERR_UNKNOWN_MEMBER_ID)
                    k->member_id[0] = '\0';
                k->rejoin = true;
                continue;
            }
            char what[400];
            snprintf(what, sizeof(what), "cannot commit group '%s' offset of partition %d", k->a->group,
                     (int)pr->partition_index);
            bool fenced = pr->error_code == KAFKA_ERR_FENCED_INSTANCE_ID;
            if (fenced) { /* another process is this member now: no more commits */
                k->member = false;
                k->member_id[0] = '\0';
            }
            rc = cli_kafka_fail(pr->error_code, (struct kafka_str){NULL, -1}, what,
                                fenced ? cli_consume_fenced_hint(k) : NULL);
        }
    cli_reply_free(&r);
    return rc;
}
