/* What produce and consume share: a topic's partitions and their leaders
 * from Metadata (waited for while a new topic elects its leaders), Kafka's
 * murmur2 partitioner, and ListOffsets to the partitions' leaders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

int64_t cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cli_sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Kafka's Utils.murmur2 (seed 0x9747b28c), which the Java client's and
 * librdkafka's murmur2 partitioners use: (murmur2(key) & 0x7fffffff) % n. */
uint32_t cli_murmur2(const void *data, size_t len)
{
    const uint8_t *p = data;
    const uint32_t m = 0x5bd1e995;
    uint32_t h = 0x9747b28cu ^ (uint32_t)len;
    size_t whole = len / 4;
    for (size_t i = 0; i < whole; i++) {
        const uint8_t *q = p + i * 4;
        uint32_t k = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint8_t *tail = p + whole * 4;
    switch (len % 4) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= tail[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

struct topic_meta_ctx {
    const char *topic;
    bool auto_create;
};

static int build_topic_metadata(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct metadata_request *m = req;
    const struct topic_meta_ctx *tc = ctx;
    /* v0-v3 have no flag: the broker's auto.create.topics.enable decides. */
    m->allow_auto_topic_creation = version <= 3 || tc->auto_create;
    m->topics = kafka_arena_alloc(a, sizeof(*m->topics));
    if (!m->topics)
        return -1;
    metadata_request_metadata_request_topic_init(&m->topics[0]);
    m->topics[0].name = kafka_str_from_cstr(tc->topic);
    m->topics_count = 1;
    return 0;
}

/* Errors a Metadata answer shows while a topic is being created or its
 * leaders elected: asked again until --timeout. */
static bool metadata_settling(int16_t code)
{
    return code == KAFKA_ERR_LEADER_NOT_AVAILABLE || code == KAFKA_ERR_NOT_LEADER_OR_FOLLOWER ||
           code == KAFKA_ERR_REPLICA_NOT_AVAILABLE;
}

/* Copies the answer into t; 1 when a partition still has no leader. */
static int take_metadata(struct cli_conn *c, const struct metadata_response *m, struct cli_topic_info *t)
{
    /* Brokers may have joined or moved since the bootstrap. */
    cli_note_brokers(c, m);
    const struct metadata_response_metadata_response_topic *tp = &m->topics[0];
    int32_t n = tp->partitions_count;
    int32_t *leader = calloc((size_t)(n > 0 ? n : 1), sizeof(*leader));
    if (!leader)
        return -1;
    for (int32_t i = 0; i < n; i++)
        leader[i] = -1;
    int missing = 0;
    for (int32_t i = 0; i < n; i++) {
        const struct metadata_response_metadata_response_partition *p = &tp->partitions[i];
        if (p->partition_index < 0 || p->partition_index >= n)
            continue;
        leader[p->partition_index] = p->leader_id;
    }
    for (int32_t i = 0; i < n; i++)
        missing |= leader[i] < 0;
    free(t->leader);
    t->leader = leader;
    t->partitions = n;
    t->id = tp->topic_id;
    return missing;
}

int cli_topic_lookup(struct cli_conn *c, const char *topic, enum cli_lookup mode, struct cli_topic_info *t)
{
    bool auto_create = mode == CLI_LOOKUP_CREATE;
    if (topic != t->name) /* a refresh passes t's own name */
        snprintf(t->name, sizeof(t->name), "%s", topic);
    struct topic_meta_ctx tc = {topic, auto_create};
    int64_t deadline = cli_now_ms() + c->timeout_ms;
    int64_t backoff = 50;
    for (;;) {
        struct cli_reply r;
        int rc = cli_call_any(c, KAFKA_API_KEY_METADATA, build_topic_metadata, &tc, &r);
        if (rc)
            return rc;
        const struct metadata_response *m = r.response;
        int16_t err = m->topics_count == 1 ? m->topics[0].error_code : KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
        /* An auto-created topic shows as unknown or leaderless at first,
         * and so does a known one on a broker that is still starting. */
        bool settling = metadata_settling(err) ||
                        (mode != CLI_LOOKUP_EXISTING && err == KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
        int missing = 0;
        if (err == KAFKA_ERR_NONE) {
            missing = take_metadata(c, m, t);
            if (missing < 0) {
                cli_reply_free(&r);
                return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
            }
            settling = missing || t->partitions == 0;
        }
        cli_reply_free(&r);
        if (!settling && err == KAFKA_ERR_NONE)
            return 0;
        if (!settling || cli_now_ms() + backoff > deadline) {
            char what[400];
            if (err == KAFKA_ERR_NONE) {
                err = KAFKA_ERR_LEADER_NOT_AVAILABLE;
                snprintf(what, sizeof(what), "a partition of topic '%s' has no leader", topic);
            } else if (err == KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION) {
                snprintf(what, sizeof(what), "topic '%s' does not exist", topic);
            } else {
                snprintf(what, sizeof(what), "no metadata for topic '%s'", topic);
            }
            return cli_kafka_fail(err, (struct kafka_str){NULL, -1}, what,
                                  err == KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION ? "see `cairn topic list`"
                                                                              : "try again or raise --timeout");
        }
        cli_sleep_ms(backoff);
        backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
    }
}

int cli_topic_has_partition(const struct cli_topic_info *t, long long partition)
{
    if (partition < t->partitions)
        return 0;
    char what[400];
    snprintf(what, sizeof(what), "partition %lld of '%s' does not exist (%d partitions)", partition, t->name,
             (int)t->partitions);
    return cli_kafka_fail(KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, (struct kafka_str){NULL, -1}, what,
                          "see `cairn topic describe`");
}

void cli_topic_info_free(struct cli_topic_info *t)
{
    free(t->leader);
    t->leader = NULL;
    t->partitions = 0;
}

/* ---- ListOffsets ---- */

struct list_offsets_ctx {
    const char *topic;
    const int32_t *parts;
    int n;
    int64_t timestamp;
    int8_t isolation;
};

static int build_list_offsets(void *req, int16_t version, struct kafka_arena *a, void *ctx)
{
    struct list_offsets_request *m = req;
    const struct list_offsets_ctx *lc = ctx;
    (void)version;
    m->replica_id = -1;
    m->isolation_level = lc->isolation;
    m->topics = kafka_arena_alloc(a, sizeof(*m->topics));
    struct list_offsets_request_list_offsets_partition *ps = kafka_arena_alloc(a, sizeof(*ps) * (size_t)lc->n);
    if (!m->topics || !ps)
        return -1;
    list_offsets_request_list_offsets_topic_init(&m->topics[0]);
    m->topics[0].name = kafka_str_from_cstr(lc->topic);
    for (int i = 0; i < lc->n; i++) {
        list_offsets_request_list_offsets_partition_init(&ps[i]);
        ps[i].partition_index = lc->parts[i];
        ps[i].timestamp = lc->timestamp;
        ps[i].max_num_offsets = 1; /* v0 */
    }
    m->topics[0].partitions = ps;
    m->topics[0].partitions_count = lc->n;
    m->topics_count = 1;
    return 0;
}

int cli_topic_list_offsets(struct cli_conn *c, const struct cli_topic_info *t, const int32_t *parts, int n,
                           int64_t timestamp, int8_t isolation, int64_t *out)
{
    int32_t *mine = calloc((size_t)(n > 0 ? n : 1), sizeof(*mine));
    int *index = calloc((size_t)(n > 0 ? n : 1), sizeof(*index));
    bool *done = calloc((size_t)(n > 0 ? n : 1), sizeof(*done));
    int rc = 0;
    if (!mine || !index || !done)
        rc = cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    /* One request per leader, with that leader's partitions. */
    for (int i = 0; rc == 0 && i < n; i++) {
        if (done[i])
            continue;
        int32_t leader = t->leader[parts[i]];
        int k = 0;
        for (int j = i; j < n; j++)
            if (!done[j] && t->leader[parts[j]] == leader) {
                mine[k] = parts[j];
                index[k++] = j;
                done[j] = true;
            }
        struct list_offsets_ctx lc = {t->name, mine, k, timestamp, isolation};
        struct cli_reply r;
        rc = cli_call(c, leader, KAFKA_API_KEY_LIST_OFFSETS, build_list_offsets, &lc, &r);
        if (rc)
            break;
        const struct list_offsets_response *lo = r.response;
        for (int j = 0; j < k; j++)
            out[index[j]] = -2; /* not in the answer */
        for (int32_t ti = 0; ti < lo->topics_count && rc == 0; ti++)
            for (int32_t pi = 0; pi < lo->topics[ti].partitions_count && rc == 0; pi++) {
                const struct list_offsets_response_list_offsets_partition_response *p = &lo->topics[ti].partitions[pi];
                int j = 0;
                while (j < k && mine[j] != p->partition_index)
                    j++;
                if (j == k)
                    continue;
                if (p->error_code != KAFKA_ERR_NONE) {
                    char what[400];
                    snprintf(what, sizeof(what), "cannot list offsets of partition %d of '%s'", (int)mine[j], t->name);
                    rc = cli_kafka_fail(p->error_code, (struct kafka_str){NULL, -1}, what, NULL);
                    break;
                }
                out[index[j]] = r.version >= 1 ? p->offset : p->old_style_offsets_count ? p->old_style_offsets[0] : -1;
            }
        for (int j = 0; rc == 0 && j < k; j++)
            if (out[index[j]] == -2) {
                char what[400];
                snprintf(what, sizeof(what), "no offset for partition %d of '%s' in the answer", (int)mine[j], t->name);
                rc = cli_kafka_fail(KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION, (struct kafka_str){NULL, -1}, what, NULL);
            }
        cli_reply_free(&r);
    }
    free(mine);
    free(index);
    free(done);
    return rc;
}
