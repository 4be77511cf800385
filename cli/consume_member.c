/* cairn consume --group: the tool as a member of a consumer group, as
 * Kafka's console consumer is.
 *
 * JoinGroup (protocol type "consumer", the "range" assignor) and SyncGroup
 * give the member its partitions; the leader computes every member's share
 * from their subscriptions, in the consumer protocol's Subscription and
 * Assignment encoding, so cairn shares a group with librdkafka and Java
 * members. The tool is single-threaded: heartbeats go between fetches
 * (a fetch waits at most 500 ms, well under heartbeat.interval.ms). On
 * REBALANCE_IN_PROGRESS the positions are committed first, then the member
 * joins again; at exit it commits and sends LeaveGroup so the others take
 * its partitions over without waiting for the session to expire.
 *
 * With group.instance.id (KIP-345) the member is static: every request
 * names the instance, and at exit it sends no LeaveGroup, so a restart
 * within session.timeout.ms takes its old place (and partitions) without
 * a rebalance. A second process with the same id fences the first, which
 * then hears FENCED_INSTANCE_ID and exits. */
#include <stdlib.h>
#include <string.h>

#include "consume.h"

#define RANGE_ASSIGNOR "range"

/* ---- the consumer protocol's bytes ---- */

/* Encodes a Subscription or Assignment (version prefix, then the body) into
 * arena bytes. Returns 0 or -1. */
typedef int (*proto_encode_fn)(const void *m, struct kafka_writer *w, int16_t version);

static int proto_bytes(const void *m, proto_encode_fn encode, struct kafka_arena *ar, struct kafka_bytes *out)
{
    struct kafka_writer w;
    if (kafka_writer_init(&w, 256) < 0)
        return -1;
    kafka_write_int16(&w, 0);
    int rc = encode(m, &w, 0) < 0 || w.failed || kafka_writer_flatten(&w) < 0 ? -1 : 0;
    uint8_t *copy = rc == 0 ? kafka_arena_alloc(ar, w.len ? w.len : 1) : NULL;
    if (copy) {
        memcpy(copy, w.buf, w.len);
        *out = (struct kafka_bytes){copy, (int32_t)w.len};
    }
    kafka_writer_free(&w);
    return copy ? 0 : -1;
}

static int encode_subscription(const void *m, struct kafka_writer *w, int16_t version)
{
    return consumer_protocol_subscription_encode(m, w, version);
}

static int encode_assignment(const void *m, struct kafka_writer *w, int16_t version)
{
    return consumer_protocol_assignment_encode(m, w, version);
}

/* The topics a member's Subscription names (any version: later versions
 * only add fields after the topics). Returns the count, or -1. */
static int32_t subscription_topics(struct kafka_bytes b, struct kafka_arena *ar, struct kafka_str **topics)
{
    if (b.len < 2)
        return -1;
    struct kafka_reader r;
    kafka_reader_init(&r, b.data, (size_t)b.len);
    int16_t version = kafka_read_int16(&r);
    struct consumer_protocol_subscription sub;
    consumer_protocol_subscription_init(&sub);
    if (version < 0)
        return -1;
    /* A decode failing after the topics (a newer version) still names them. */
    if (consumer_protocol_subscription_decode(&sub, &r, version > 3 ? 3 : version, ar) < 0 && sub.topics_count <= 0)
        return -1;
    *topics = sub.topics;
    return sub.topics_count;
}

/* ---- the range assignor (the leader's part) ---- */

struct member_sub {
    struct kafka_str id;
    struct kafka_str key; /* the order the range assignor deals in: instance id, else member id */
    struct kafka_str *topics;
    int32_t ntopics;
    struct consumer_protocol_assignment out;
};

static int by_member_id(const void *x, const void *y)
{
    const struct member_sub *a = x, *b = y;
    int32_t n = a->key.len < b->key.len ? a->key.len : b->key.len;
    int c = n > 0 ? memcmp(a->key.data, b->key.data, (size_t)n) : 0;
    return c ? c : (a->key.len > b->key.len) - (a->key.len < b->key.len);
}

static bool str_eq(struct kafka_str a, struct kafka_str b)
{
    return a.len == b.len && (a.len <= 0 || !memcmp(a.data, b.data, (size_t)a.len));
}

static bool subscribes(const struct member_sub *m, struct kafka_str topic)
{
    for (int32_t i = 0; i < m->ntopics; i++)
        if (str_eq(m->topics[i], topic))
            return true;
    return false;
}

/* A topic's partition count: ours from k->t, others from Metadata (0 when
 * unknown: nobody gets a partition of it). */
static int32_t topic_partitions(struct consumer *k, struct kafka_str topic)
{
    if ((size_t)topic.len == strlen(k->t.name) && !memcmp(topic.data, k->t.name, (size_t)topic.len))
        return k->t.partitions;
    struct cli_topic_info other;
    char name[256];
    snprintf(name, sizeof(name), "%.*s", topic.len > 0 ? (int)topic.len : 0, topic.data ? topic.data : "");
    if (cli_topic_lookup(k->c, name, CLI_LOOKUP_EXISTING, &other) != 0)
        return 0;
    int32_t n = other.partitions;
    cli_topic_info_free(&other);
    return n;
}

/* Kafka's RangeAssignor: per topic, the members subscribing to it in
 * member id order (static members by instance id, so a restart keeps
 * the same partitions) each take a contiguous range, the first (partitions %
 * members) one more. Fills ms[i].out; arrays from ar. Returns 0 or -1. */
static int range_assign(struct consumer *k, struct member_sub *ms, int32_t n, struct kafka_arena *ar)
{
    qsort(ms, (size_t)n, sizeof(*ms), by_member_id);
    for (int32_t i = 0; i < n; i++) {
        consumer_protocol_assignment_init(&ms[i].out);
        ms[i].out.assigned_partitions = kafka_arena_alloc(ar, sizeof(*ms[i].out.assigned_partitions) *
                                                                  (size_t)(ms[i].ntopics > 0 ? ms[i].ntopics : 1));
        if (!ms[i].out.assigned_partitions)
            return -1;
        ms[i].out.user_data = (struct kafka_bytes){NULL, -1};
    }
    for (int32_t i = 0; i < n; i++)
        for (int32_t t = 0; t < ms[i].ntopics; t++) {
            struct kafka_str topic = ms[i].topics[t];
            bool seen = false; /* each topic once, from its first subscriber */
            for (int32_t j = 0; j < i && !seen; j++)
                seen = subscribes(&ms[j], topic);
            for (int32_t u = 0; u < t && !seen; u++)
                seen = str_eq(ms[i].topics[u], topic);
            if (seen)
                continue;
            int32_t parts = topic_partitions(k, topic), members = 0;
            for (int32_t j = i; j < n; j++)
                members += subscribes(&ms[j], topic);
            int32_t each = parts / members, extra = parts % members, next = 0, rank = 0;
            for (int32_t j = i; j < n; j++) {
                if (!subscribes(&ms[j], topic))
                    continue;
                int32_t count = each + (rank < extra ? 1 : 0);
                rank++;
                if (count == 0)
                    continue;
                struct consumer_protocol_assignment_topic_partition
                    *tp = &ms[j].out.assigned_partitions[ms[j].out.assigned_partitions_count++];
                consumer_protocol_assignment_topic_partition_init(tp);
                tp->topic = topic;
                tp->partitions = kafka_arena_alloc(ar, sizeof(int32_t) * (size_t)count);
                if (!tp->partitions)
                    return -1;
                for (int32_t p = 0; p < count; p++)
                    tp->partitions[p] = next++;
                tp->partitions_count = count;
            }
        }
    return 0;
}

/* ---- JoinGroup, SyncGroup, Heartbeat, LeaveGroup ---- */

struct join_ctx {
    struct consumer *k;
    struct kafka_bytes subscription;
    /* SyncGroup: the leader's assignments. */
    struct member_sub *ms;
    int32_t nms;
    struct kafka_bytes *assignments;
    char protocol[64];
    int64_t deadline; /* of the whole join */
};

struct kafka_str cli_consume_instance_id(const struct consumer *k)
{
    return k->a->group_instance_id ? kafka_str_from_cstr(k->a->group_instance_id) : (struct kafka_str){NULL, -1};
}

static int build_join(void *req, int16_t version, struct kafka_arena *ar, void *ctx)
{
    struct join_group_request *m = req;
    struct join_ctx *j = ctx;
    const struct consume_args *a = j->k->a;
    if (a->group_instance_id && version < 5) { /* GroupInstanceId came with v5 */
        j->k->static_unsupported = true;
        return -1;
    }
    m->group_id = kafka_str_from_cstr(a->group);
    m->session_timeout_ms = a->session_timeout_ms;
    m->rebalance_timeout_ms = a->rebalance_timeout_ms;
    m->member_id = kafka_str_from_cstr(j->k->member_id);
    m->group_instance_id = cli_consume_instance_id(j->k);
    m->protocol_type = kafka_str_from_cstr("consumer");
    m->protocols = kafka_arena_alloc(ar, sizeof(*m->protocols));
    if (!m->protocols)
        return -1;
    join_group_request_join_group_request_protocol_init(&m->protocols[0]);
    m->protocols[0].name = kafka_str_from_cstr(RANGE_ASSIGNOR);
    m->protocols[0].metadata = j->subscription;
    m->protocols_count = 1;
    m->reason = (struct kafka_str){NULL, -1};
    return 0;
}

static int build_sync(void *req, int16_t version, struct kafka_arena *ar, void *ctx)
{
    struct sync_group_request *m = req;
    struct join_ctx *j = ctx;
    if (j->k->a->group_instance_id && version < 3)
        return -1;
    m->group_id = kafka_str_from_cstr(j->k->a->group);
    m->generation_id = j->k->generation;
    m->member_id = kafka_str_from_cstr(j->k->member_id);
    m->group_instance_id = cli_consume_instance_id(j->k);
    m->protocol_type = kafka_str_from_cstr("consumer");
    m->protocol_name = kafka_str_from_cstr(j->protocol);
    if (j->nms > 0) {
        m->assignments = kafka_arena_alloc(ar, sizeof(*m->assignments) * (size_t)j->nms);
        if (!m->assignments)
            return -1;
        for (int32_t i = 0; i < j->nms; i++) {
            sync_group_request_sync_group_request_assignment_init(&m->assignments[i]);
            m->assignments[i].member_id = j->ms[i].id;
            m->assignments[i].assignment = j->assignments[i];
        }
        m->assignments_count = j->nms;
    }
    return 0;
}

static int build_heartbeat(void *req, int16_t version, struct kafka_arena *ar, void *ctx)
{
    struct heartbeat_request *m = req;
    const struct consumer *k = ctx;
    (void)ar;
    if (k->a->group_instance_id && version < 3)
        return -1;
    m->group_id = kafka_str_from_cstr(k->a->group);
    m->generation_id = k->generation;
    m->member_id = kafka_str_from_cstr(k->member_id);
    m->group_instance_id = cli_consume_instance_id(k);
    return 0;
}

static int build_leave(void *req, int16_t version, struct kafka_arena *ar, void *ctx)
{
    struct leave_group_request *m = req;
    const struct consumer *k = ctx;
    m->group_id = kafka_str_from_cstr(k->a->group);
    if (version < 3) {
        m->member_id = kafka_str_from_cstr(k->member_id);
        return 0;
    }
    m->members = kafka_arena_alloc(ar, sizeof(*m->members));
    if (!m->members)
        return -1;
    leave_group_request_member_identity_init(&m->members[0]);
    m->members[0].member_id = kafka_str_from_cstr(k->member_id);
    m->members[0].group_instance_id = (struct kafka_str){NULL, -1};
    m->members[0].reason = kafka_str_from_cstr("the consumer is closing");
    m->members_count = 1;
    return 0;
}

/* Network failures of the member's own requests land here instead of
 * being printed (cli_conn.net_err): a member waits for its coordinator to
 * come back, as Kafka's consumers do. Main thread only. */
static char member_net_err[256];

static void quiet(struct consumer *k)
{
    k->c->net_err = member_net_err;
    k->c->net_err_len = sizeof(member_net_err);
}

static void loud(struct consumer *k)
{
    k->c->net_err = NULL;
}

/* FindCoordinator, asked again while no broker answers or the coordinator
 * is still loading, until deadline. Returns 0 or an exit code. */
static int find_coordinator(struct consumer *k, int64_t deadline)
{
    for (;;) {
        quiet(k);
        int rc = cli_coordinator(k->c, k->a->group, &k->coordinator);
        loud(k);
        if (rc != CLI_EXIT_UNREACHABLE)
            return rc;
        if (cli_now_ms() > deadline || cli_consume_stop)
            return cli_fail(CLI_EXIT_UNREACHABLE, "cannot reach the coordinator of group '%s': %s", k->a->group,
                            member_net_err);
        cli_sleep_ms(250);
    }
}

/* Errors after which finding the coordinator again lets the member go on. */
static bool coordinator_moved(int16_t code)
{
    return code == KAFKA_ERR_NOT_COORDINATOR || code == KAFKA_ERR_COORDINATOR_NOT_AVAILABLE ||
           code == KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS;
}

/* Prints why a group request failed; a fenced static member is told why. */
static int group_fail(struct consumer *k, int16_t code, const char *step)
{
    char what[400];
    snprintf(what, sizeof(what), "%s group '%s'", step, k->a->group);
    if (code == KAFKA_ERR_FENCED_INSTANCE_ID) {
        k->member = false; /* the other process holds the partitions: nothing to commit or leave */
        k->member_id[0] = '\0';
    }
    return cli_kafka_fail(code, (struct kafka_str){NULL, -1}, what,
                          code == KAFKA_ERR_FENCED_INSTANCE_ID ? cli_consume_fenced_hint(k) : NULL);
}

/* The leader's part of a join: every member's assignment, encoded. */
static int leader_assign(struct join_ctx *j, const struct join_group_response *jr, struct kafka_arena *ar)
{
    j->nms = jr->members_count;
    j->ms = kafka_arena_alloc(ar, sizeof(*j->ms) * (size_t)(j->nms > 0 ? j->nms : 1));
    j->assignments = kafka_arena_alloc(ar, sizeof(*j->assignments) * (size_t)(j->nms > 0 ? j->nms : 1));
    if (!j->ms || !j->assignments)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    for (int32_t i = 0; i < j->nms; i++) {
        const struct join_group_response_join_group_response_member *jm = &jr->members[i];
        j->ms[i] = (struct member_sub){.id = jm->member_id,
                                       .key = jm->group_instance_id.len >= 0 ? jm->group_instance_id : jm->member_id};
        j->ms[i].ntopics = subscription_topics(jr->members[i].metadata, ar, &j->ms[i].topics);
        if (j->ms[i].ntopics < 0) /* undecodable: that member gets nothing */
            j->ms[i].ntopics = 0;
    }
    if (range_assign(j->k, j->ms, j->nms, ar) < 0)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    for (int32_t i = 0; i < j->nms; i++)
        if (proto_bytes(&j->ms[i].out, encode_assignment, ar, &j->assignments[i]) < 0)
            return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    return 0;
}

/* Takes this member's partitions of our topic from its assignment. */
static void on_assigned(struct kafka_str topic, int32_t partition, void *ctx)
{
    struct consumer *k = ctx;
    if ((size_t)topic.len != strlen(k->t.name) || memcmp(topic.data, k->t.name, (size_t)topic.len) != 0 ||
        partition < 0 || partition >= k->parts_cap || k->nparts >= k->parts_cap || cli_consume_part(k, partition))
        return;
    k->parts[k->nparts++] = (struct part){.id = partition,
                                          .position = -1,
                                          .end = -1,
                                          .committed = -1,
                                          .max_bytes = 1 << 20}; /* max.partition.fetch.bytes */
}

enum { ROUND_DONE = 0, ROUND_AGAIN = -1 };

/* One JoinGroup and SyncGroup. Returns ROUND_DONE (k->parts set),
 * ROUND_AGAIN, or an exit code. */
static int join_round(struct consumer *k, struct join_ctx *j)
{
    struct kafka_arena ar;
    kafka_arena_init(&ar);
    struct cli_reply jr = {0}, sr = {0};
    /* The coordinator answers a JoinGroup once every member has joined. */
    int64_t timeout = k->c->timeout_ms;
    k->c->timeout_ms = (int64_t)k->a->rebalance_timeout_ms + timeout;
    quiet(k);
    int rc = cli_call(k->c, k->coordinator, KAFKA_API_KEY_JOIN_GROUP, build_join, j, &jr);
    loud(k);
    k->c->timeout_ms = timeout;
    if (rc && k->static_unsupported) {
        rc = cli_fail(CLI_EXIT_USAGE,
                      "the coordinator of group '%s' speaks JoinGroup below v5, without static membership "
                      "(KIP-345): leave out --group-instance-id",
                      k->a->group);
        goto out;
    }
    if (rc == CLI_EXIT_UNREACHABLE) /* the coordinator went away: find it again */
    {
        int found = find_coordinator(k, j->deadline);
        rc = found ? found : ROUND_AGAIN;
    }
    if (rc)
        goto out;
    const struct join_group_response *m = jr.response;
    if (m->error_code == KAFKA_ERR_MEMBER_ID_REQUIRED || m->error_code == KAFKA_ERR_NONE)
        snprintf(k->member_id, sizeof(k->member_id), "%s", cli_str(m->member_id));
    if (m->error_code != KAFKA_ERR_NONE) {
        if (m->error_code == KAFKA_ERR_UNKNOWN_MEMBER_ID)
            k->member_id[0] = '\0';
        if (coordinator_moved(m->error_code))
            rc = find_coordinator(k, j->deadline);
        bool again = m->error_code == KAFKA_ERR_MEMBER_ID_REQUIRED || m->error_code == KAFKA_ERR_UNKNOWN_MEMBER_ID ||
                     m->error_code == KAFKA_ERR_REBALANCE_IN_PROGRESS || coordinator_moved(m->error_code);
        rc = rc ? rc : again ? ROUND_AGAIN : group_fail(k, m->error_code, "cannot join");
        goto out;
    }
    k->generation = m->generation_id;
    snprintf(j->protocol, sizeof(j->protocol), "%s", cli_str(m->protocol_name));
    j->nms = 0;
    /* KIP-814: a static leader rejoining a Stable group skips the
     * assignment; the group keeps the one it has. */
    if (!strcmp(cli_str(m->leader), k->member_id) && !m->skip_assignment && (rc = leader_assign(j, m, &ar)) != 0)
        goto out;
    quiet(k);
    rc = cli_call(k->c, k->coordinator, KAFKA_API_KEY_SYNC_GROUP, build_sync, j, &sr);
    loud(k);
    if (rc == CLI_EXIT_UNREACHABLE) {
        int found = find_coordinator(k, j->deadline);
        rc = found ? found : ROUND_AGAIN;
    }
    if (rc)
        goto out;
    const struct sync_group_response *s = sr.response;
    if (s->error_code != KAFKA_ERR_NONE) {
        if (s->error_code == KAFKA_ERR_UNKNOWN_MEMBER_ID)
            k->member_id[0] = '\0';
        if (coordinator_moved(s->error_code))
            rc = find_coordinator(k, j->deadline);
        bool again = s->error_code == KAFKA_ERR_REBALANCE_IN_PROGRESS ||
                     s->error_code == KAFKA_ERR_ILLEGAL_GENERATION || s->error_code == KAFKA_ERR_UNKNOWN_MEMBER_ID ||
                     coordinator_moved(s->error_code);
        rc = rc ? rc : again ? ROUND_AGAIN : group_fail(k, s->error_code, "cannot sync with");
        goto out;
    }
    k->nparts = 0;
    if (cli_assignment_each(s->assignment, on_assigned, k) < 0) {
        rc = cli_fail(CLI_EXIT_KAFKA, "the assignment of group '%s' does not decode (%d bytes)", k->a->group,
                      (int)s->assignment.len);
        goto out;
    }
    k->member = true;
    k->rejoin = false;
    if (k->a->debug_group) {
        char ids[512] = "";
        size_t used = 0;
        for (int i = 0; i < k->nparts && used < sizeof ids; i++)
            used += (size_t)snprintf(ids + used, sizeof ids - used, "%s%d", i ? "," : "", (int)k->parts[i].id);
        fprintf(stderr, "cairn: group '%s': joined generation %d as member %s%s%s, partitions [%s]\n", k->a->group,
                (int)k->generation, k->member_id, k->a->group_instance_id ? " instance " : "",
                k->a->group_instance_id ? k->a->group_instance_id : "", ids);
    }
    rc = ROUND_DONE;
out:
    if (jr.kept)
        cli_reply_free(&jr);
    if (sr.kept)
        cli_reply_free(&sr);
    kafka_arena_free(&ar);
    return rc;
}

int cli_consume_member_join(struct consumer *k)
{
    struct kafka_arena ar;
    kafka_arena_init(&ar);
    /* The coordinator may be away (a broker restarting) or every member
     * slow to rejoin: both within the rebalance timeout. */
    struct join_ctx j = {.k = k, .deadline = cli_now_ms() + k->c->timeout_ms + k->a->rebalance_timeout_ms};
    struct consumer_protocol_subscription sub;
    consumer_protocol_subscription_init(&sub);
    struct kafka_str topic = kafka_str_from_cstr(k->t.name);
    sub.topics = &topic;
    sub.topics_count = 1;
    sub.user_data = (struct kafka_bytes){NULL, -1};
    int rc = proto_bytes(&sub, encode_subscription, &ar, &j.subscription) < 0
                 ? cli_fail(CLI_EXIT_UNREACHABLE, "out of memory")
                 : find_coordinator(k, j.deadline);
    k->member = false;
    k->nparts = 0;
    while (rc == 0 && (rc = join_round(k, &j)) == ROUND_AGAIN) {
        rc = 0;
        if (cli_consume_stop)
            break;
        if (cli_now_ms() > j.deadline) {
            rc = cli_fail(CLI_EXIT_KAFKA, "cannot join group '%s' within %lld ms: it keeps rebalancing", k->a->group,
                          (long long)(k->c->timeout_ms + k->a->rebalance_timeout_ms));
            break;
        }
        cli_sleep_ms(100);
    }
    kafka_arena_free(&ar);
    k->last_heartbeat_ms = k->last_heartbeat_ok_ms = cli_now_ms();
    if (rc == 0 && k->member && k->nparts > 0)
        rc = cli_consume_fetch_committed(k);
    if (rc == 0 && k->member) {
        for (int i = 0; i < k->nparts; i++)
            if (k->parts[i].position < 0 && k->a->start == START_AT)
                k->parts[i].position = k->a->start_value;
        rc = cli_consume_start_positions(k);
    }
    return rc;
}

/* One Heartbeat; sets k->rejoin when the group rebalances. */
static int heartbeat(struct consumer *k)
{
    struct cli_reply r;
    k->last_heartbeat_ms = cli_now_ms();
    quiet(k);
    int rc = cli_call(k->c, k->coordinator, KAFKA_API_KEY_HEARTBEAT, build_heartbeat, k, &r);
    loud(k);
    if (rc == CLI_EXIT_UNREACHABLE) {
        /* Asked again next interval; past the session timeout the group
         * has surely given the partitions away: join again. */
        if (k->last_heartbeat_ms - k->last_heartbeat_ok_ms > k->a->session_timeout_ms) {
            k->member = false;
            k->rejoin = true;
        }
        return 0;
    }
    if (rc)
        return rc;
    int16_t code = ((const struct heartbeat_response *)r.response)->error_code;
    cli_reply_free(&r);
    if (code == KAFKA_ERR_NONE || code == KAFKA_ERR_REBALANCE_IN_PROGRESS)
        k->last_heartbeat_ok_ms = k->last_heartbeat_ms;
    switch (code) {
    case KAFKA_ERR_NONE:
        return 0;
    case KAFKA_ERR_FENCED_INSTANCE_ID:
        return group_fail(k, code, "fenced from");
    case KAFKA_ERR_REBALANCE_IN_PROGRESS:
        k->rejoin = true;
        return 0;
    case KAFKA_ERR_UNKNOWN_MEMBER_ID:
        k->member_id[0] = '\0';
        /* fall through */
    case KAFKA_ERR_ILLEGAL_GENERATION:
        k->member = false; /* the partitions are gone: no commit */
        k->rejoin = true;
        return 0;
    default:
        if (coordinator_moved(code)) { /* the join finds the new one */
            k->rejoin = true;
            return 0;
        }
        return group_fail(k, code, "heartbeat to");
    }
}

/* A commit whose network failure is left for the next one. */
static int commit_or_later(struct consumer *k)
{
    quiet(k);
    int rc = cli_consume_commit(k);
    loud(k);
    return rc == CLI_EXIT_UNREACHABLE ? 0 : rc;
}

int cli_consume_member_poll(struct consumer *k)
{
    int rc = 0;
    if (cli_now_ms() - k->last_heartbeat_ms >= k->a->heartbeat_interval_ms)
        rc = heartbeat(k);
    if (rc == 0 && !k->rejoin && cli_now_ms() - k->last_commit_ms >= k->a->commit_interval_ms)
        rc = commit_or_later(k);
    if (rc == 0 && k->rejoin && !cli_consume_stop) {
        /* Eager rebalance: the positions are committed before the
         * partitions are given up, so the next owner starts there. */
        rc = commit_or_later(k);
        if (rc == 0)
            rc = cli_consume_member_join(k);
    }
    return rc;
}

const char *cli_consume_fenced_hint(const struct consumer *k)
{
    static char hint[400];
    snprintf(hint, sizeof hint,
             "another process joined as group.instance.id '%s' and took this member's place; give each process "
             "its own --group-instance-id",
             k->a->group_instance_id ? k->a->group_instance_id : "");
    return hint;
}

int cli_consume_member_leave(struct consumer *k)
{
    int rc = cli_consume_commit(k);
    /* A static member keeps its place for session.timeout.ms (Kafka's
     * consumer sends no LeaveGroup either): a restart resumes it. */
    if (!k->member_id[0] || k->a->group_instance_id)
        return rc;
    struct cli_reply r;
    int left = cli_call(k->c, k->coordinator, KAFKA_API_KEY_LEAVE_GROUP, build_leave, k, &r);
    if (left == 0) {
        const struct leave_group_response *m = r.response;
        int16_t code = m->error_code;
        for (int32_t i = 0; code == KAFKA_ERR_NONE && i < m->members_count; i++)
            code = m->members[i].error_code;
        /* Already out of the group (session expired) is not a failure. */
        if (code != KAFKA_ERR_NONE && code != KAFKA_ERR_UNKNOWN_MEMBER_ID)
            left = group_fail(k, code, "cannot leave");
        cli_reply_free(&r);
    }
    k->member = false;
    return rc ? rc : left;
}
