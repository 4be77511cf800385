/* The durable group log over a real log manager and metadata store:
 * topic creation, round trip through close and reopen, placement by group,
 * skipping of corrupt records, flushing, and the errors the store returns. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "coordinator/coordinator_partition.h"
#include "group/group_log.h"
#include "group/group_log_codec.h"
#include "log/log_manager.h"
#include "log/partition_log.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "support/unit_fixture.h"

#define PARTITIONS 5

/* ---- a key -> description map: the state a replay must rebuild ---- */

#define STATE_MAX 64

struct state {
    char keys[STATE_MAX][128];
    char values[STATE_MAX][1024];
    int count;
};

static int state_find(const struct state *s, const char *key)
{
    for (int i = 0; i < s->count; i++)
        if (strcmp(s->keys[i], key) == 0)
            return i;
    return -1;
}

static void state_put(struct state *s, const char *key, const char *value)
{
    int i = state_find(s, key);
    if (i < 0) {
        assert_true(s->count < STATE_MAX);
        i = s->count++;
        snprintf(s->keys[i], sizeof s->keys[i], "%s", key);
    }
    snprintf(s->values[i], sizeof s->values[i], "%s", value);
}

static void state_remove(struct state *s, const char *key)
{
    int i = state_find(s, key);
    if (i < 0)
        return;
    s->count--;
    memcpy(s->keys[i], s->keys[s->count], sizeof s->keys[i]);
    memcpy(s->values[i], s->values[s->count], sizeof s->values[i]);
}

static void assert_same_state(const struct state *want, const struct state *got)
{
    for (int i = 0; i < want->count; i++) {
        int j = state_find(got, want->keys[i]);
        if (j < 0)
            fail_msg("missing after load: %s", want->keys[i]);
        if (strcmp(want->values[i], got->values[j]) != 0)
            fail_msg("%s: want %s, got %s", want->keys[i], want->values[i], got->values[j]);
    }
    assert_int_equal(got->count, want->count);
}

static void offset_key(char *out, size_t len, const char *group, const char *topic, int32_t partition)
{
    snprintf(out, len, "offset/%s/%s/%d", group, topic, (int)partition);
}

static const char *or_null(const char *s)
{
    return s ? s : "<null>";
}

static void describe_offset(char *out, size_t len, const struct group_offset_record *r)
{
    snprintf(out, len, "%s-%d@%lld e%d m=%s ts=%lld exp=%lld", r->topic, (int)r->partition, (long long)r->offset,
             (int)r->leader_epoch, or_null(r->metadata), (long long)r->commit_timestamp,
             (long long)r->expire_timestamp);
}

/* Length and FNV-1a hash: catches any changed byte in long blobs. */
static size_t blob(char *out, size_t len, const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    int w = snprintf(out, len, "%zu:%08x", n, (unsigned)h);
    return w < 0 ? 0 : (size_t)w;
}

static void describe_group(char *out, size_t len, const struct group_snapshot_record *g)
{
    size_t w = (size_t)snprintf(out, len, "%s type=%s gen=%d proto=%s leader=%s ts=%lld", g->group_id,
                                or_null(g->protocol_type), (int)g->generation, or_null(g->protocol), or_null(g->leader),
                                (long long)g->current_state_timestamp);
    for (size_t i = 0; i < g->member_count && w < len; i++) {
        const struct group_member_record *m = &g->members[i];
        w += (size_t)snprintf(out + w, len - w, " [%s inst=%s %s %s rt=%d st=%d sub=", m->member_id,
                              or_null(m->group_instance_id), m->client_id, m->client_host, (int)m->rebalance_timeout_ms,
                              (int)m->session_timeout_ms);
        if (w < len)
            w += blob(out + w, len - w, m->subscription, m->subscription_len);
        if (w < len)
            w += (size_t)snprintf(out + w, len - w, " asg=");
        if (w < len)
            w += blob(out + w, len - w, m->assignment, m->assignment_len);
        if (w < len)
            w += (size_t)snprintf(out + w, len - w, "]");
    }
}

/* What a committed offset looks like after a reload: null metadata is "". */
static void model_offset(struct state *s, const char *group, const struct group_offset_record *r)
{
    char key[128], value[1024];
    offset_key(key, sizeof key, group, r->topic, r->partition);
    struct group_offset_record stored = *r;
    if (!stored.metadata)
        stored.metadata = "";
    if (stored.expire_timestamp >= 0)
        stored.leader_epoch = -1; /* the value version that keeps the expiry has no epoch */
    describe_offset(value, sizeof value, &stored);
    state_put(s, key, value);
}

static void model_group(struct state *s, const struct group_snapshot_record *g)
{
    char key[128], value[1024];
    snprintf(key, sizeof key, "group/%s", g->group_id);
    describe_group(value, sizeof value, g);
    state_put(s, key, value);
}

/* ---- the visitor: the same map built from a replay ---- */

struct loaded {
    struct state state;
    int offset_calls;
    int group_calls;
};

static void visit_offset(void *ctx, const char *group_id, const char *topic, int32_t partition,
                         const struct group_offset_record *record)
{
    struct loaded *l = ctx;
    char key[128], value[1024];
    offset_key(key, sizeof key, group_id, topic, partition);
    l->offset_calls++;
    if (!record) {
        state_remove(&l->state, key);
        return;
    }
    assert_string_equal(record->topic, topic);
    assert_int_equal(record->partition, partition);
    describe_offset(value, sizeof value, record);
    state_put(&l->state, key, value);
}

static void visit_group(void *ctx, const char *group_id, const struct group_snapshot_record *record)
{
    struct loaded *l = ctx;
    char key[128], value[1024];
    snprintf(key, sizeof key, "group/%s", group_id);
    l->group_calls++;
    if (!record) {
        state_remove(&l->state, key);
        return;
    }
    assert_string_equal(record->group_id, group_id);
    describe_group(value, sizeof value, record);
    state_put(&l->state, key, value);
}

static const struct group_load_visitor visitor = {.offset = visit_offset, .group = visit_group};

/* ---- fixture: metadata store + log manager + group log in a temp dir ---- */

/* Only the test's thread touches it. */
struct fixture {
    struct unit_fixture stores;
    struct group_log *gl;
    const struct group_store_ops *ops;
};
_Static_assert(offsetof(struct fixture, stores) == 0, "unit_fixture_setup needs the stores first");

static void open_all(struct fixture *f, int32_t num_partitions, int32_t node_id)
{
    char err[256] = "";
    unit_fixture_open(&f->stores);
    struct group_log_options opts = {
        .logs = f->stores.logs,
        .metadata = f->stores.metadata,
        .num_partitions = num_partitions,
        .replication_factor = 3,
        .segment_bytes = 1 << 20,
        .node_id = node_id,
        .load_buffer_size = 4096, /* small, so loads take several reads */
    };
    if (group_log_open(&opts, &f->gl, err, sizeof err) != 0)
        fail_msg("group log: %s", err);
    f->ops = group_log_store_ops();
}

static void close_all(struct fixture *f)
{
    group_log_close(f->gl);
    f->gl = NULL;
    unit_fixture_close(&f->stores);
}

static int setup(void **state)
{
    return unit_fixture_setup(state, sizeof(struct fixture), "cairn-group-log");
}

static int teardown(void **state)
{
    close_all(*state);
    return unit_fixture_teardown(*state);
}

static struct partition_log *partition_of(struct fixture *f, const char *group)
{
    int32_t p = coordinator_partition_for(group, strlen(group), group_log_partition_count(f->gl));
    struct partition_log *log = log_manager_get(f->stores.logs, GROUP_LOG_TOPIC, p);
    assert_non_null(log);
    return log;
}

/* ---- tests ---- */

static void test_open_creates_compacted_topic(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    assert_int_equal(group_log_partition_count(f->gl), PARTITIONS);
    const struct metadata_image *img = metadata_image_acquire(f->stores.metadata);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, GROUP_LOG_TOPIC, strlen(GROUP_LOG_TOPIC));
    assert_non_null(t);
    assert_true(t->is_internal);
    assert_int_equal(t->partition_count, PARTITIONS);
    /* Replication factor 3 asked, one live broker: capped to 1. */
    assert_int_equal(t->partitions[0].replica_count, 1);
    assert_string_equal(metadata_topic_config(t, "cleanup.policy"), "compact");
    assert_string_equal(metadata_topic_config(t, "segment.bytes"), "1048576");
    /* No compaction yet: time retention must not drop live offsets. */
    assert_string_equal(metadata_topic_config(t, "retention.ms"), "-1");
    metadata_image_release(img);
    for (int32_t p = 0; p < PARTITIONS; p++) {
        struct partition_log *log = log_manager_get(f->stores.logs, GROUP_LOG_TOPIC, p);
        assert_non_null(log);
        partition_log_close(log);
    }

    /* Reopening keeps the topic as created, whatever the option says now. */
    close_all(f);
    open_all(f, PARTITIONS + 3, 1);
    assert_int_equal(group_log_partition_count(f->gl), PARTITIONS);
}

static void test_round_trip_through_reopen(void **state)
{
    struct fixture *f = *state;
    struct state want = {0};
    open_all(f, PARTITIONS, 1);

    const struct group_offset_record g1[] = {
        {.topic = "orders",
         .partition = 0,
         .offset = 10,
         .leader_epoch = 3,
         .metadata = "m1",
         .metadata_len = 2,
         .commit_timestamp = 1700000000000,
         .expire_timestamp = -1},
        {.topic = "orders",
         .partition = 1,
         .offset = 20,
         .leader_epoch = -1,
         .metadata = NULL,
         .commit_timestamp = 1700000000001,
         .expire_timestamp = -1},
        {.topic = "audit",
         .partition = 0,
         .offset = 5,
         .leader_epoch = 0,
         .metadata = "",
         .metadata_len = 0,
         .commit_timestamp = 1700000000002,
         .expire_timestamp = -1},
    };
    assert_int_equal(f->ops->store_offsets(f->gl, "g1", g1, 3), KAFKA_ERR_NONE);
    for (int i = 0; i < 3; i++)
        model_offset(&want, "g1", &g1[i]);

    const struct group_offset_record g2_first = {.topic = "orders",
                                                 .partition = 0,
                                                 .offset = 100,
                                                 .leader_epoch = 1,
                                                 .metadata = "a",
                                                 .metadata_len = 1,
                                                 .commit_timestamp = 1,
                                                 .expire_timestamp = -1};
    const struct group_offset_record g2_later = {.topic = "orders",
                                                 .partition = 0,
                                                 .offset = 150,
                                                 .leader_epoch = 2,
                                                 .metadata = "later",
                                                 .metadata_len = 5,
                                                 .commit_timestamp = 2,
                                                 .expire_timestamp = -1};
    const struct group_offset_record g2_other = {.topic = "audit",
                                                 .partition = 3,
                                                 .offset = 1,
                                                 .leader_epoch = 2,
                                                 .metadata = "x",
                                                 .metadata_len = 1,
                                                 .commit_timestamp = 3,
                                                 .expire_timestamp = -1};
    assert_int_equal(f->ops->store_offsets(f->gl, "g2", &g2_first, 1), KAFKA_ERR_NONE);
    assert_int_equal(f->ops->store_offsets(f->gl, "g2", &g2_later, 1), KAFKA_ERR_NONE);
    assert_int_equal(f->ops->store_offsets(f->gl, "g2", &g2_other, 1), KAFKA_ERR_NONE);

    const struct group_offset_record g3 = {.topic = "orders",
                                           .partition = 2,
                                           .offset = 7,
                                           .leader_epoch = 4,
                                           .metadata = "keep",
                                           .metadata_len = 4,
                                           .commit_timestamp = 50,
                                           .expire_timestamp = 9999};
    assert_int_equal(f->ops->store_offsets(f->gl, "g3", &g3, 1), KAFKA_ERR_NONE);
    model_offset(&want, "g3", &g3);

    const uint8_t sub1[] = {0, 1, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's'};
    const uint8_t asg1[] = {0, 1, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 1, 0, 0, 0, 0};
    struct group_member_record members[] = {
        {.member_id = "c-1-aaaa",
         .group_instance_id = NULL,
         .client_id = "c-1",
         .client_host = "/127.0.0.1",
         .rebalance_timeout_ms = 300000,
         .session_timeout_ms = 45000,
         .subscription = sub1,
         .subscription_len = sizeof sub1,
         .assignment = asg1,
         .assignment_len = sizeof asg1},
        {.member_id = "inst-b-bbbb",
         .group_instance_id = "inst-b",
         .client_id = "c-2",
         .client_host = "/10.0.0.2",
         .rebalance_timeout_ms = 60000,
         .session_timeout_ms = 10000,
         .subscription = sub1,
         .subscription_len = sizeof sub1,
         .assignment = NULL,
         .assignment_len = 0},
    };
    struct group_snapshot_record g1_gen4 = {.group_id = "g1",
                                            .protocol_type = "consumer",
                                            .generation = 4,
                                            .protocol = "range",
                                            .leader = "c-1-aaaa",
                                            .current_state_timestamp = 1700000000100,
                                            .members = members,
                                            .member_count = 2};
    assert_int_equal(f->ops->store_group(f->gl, &g1_gen4), KAFKA_ERR_NONE);
    struct group_snapshot_record g1_gen5 = g1_gen4;
    g1_gen5.generation = 5;
    g1_gen5.leader = "inst-b-bbbb";
    g1_gen5.members = &members[1];
    g1_gen5.member_count = 1;
    assert_int_equal(f->ops->store_group(f->gl, &g1_gen5), KAFKA_ERR_NONE);
    model_group(&want, &g1_gen5);

    struct group_snapshot_record g2_empty = {.group_id = "g2",
                                             .protocol_type = "consumer",
                                             .generation = 2,
                                             .protocol = NULL,
                                             .leader = NULL,
                                             .current_state_timestamp = 7};
    assert_int_equal(f->ops->store_group(f->gl, &g2_empty), KAFKA_ERR_NONE);
    struct group_snapshot_record g4 = {
        .group_id = "g4", .protocol_type = "", .generation = 0, .current_state_timestamp = -1};
    assert_int_equal(f->ops->store_group(f->gl, &g4), KAFKA_ERR_NONE);
    model_group(&want, &g4);
    /* A snapshot bigger than the load buffer (4 KiB here). */
    uint8_t *big = malloc(20000);
    for (int i = 0; i < 20000; i++)
        big[i] = (uint8_t)(i * 7);
    struct group_member_record wide = {.member_id = "w",
                                       .client_id = "c",
                                       .client_host = "h",
                                       .subscription = big,
                                       .subscription_len = 20000,
                                       .assignment = big + 5,
                                       .assignment_len = 9000};
    struct group_snapshot_record g5 = {.group_id = "g5",
                                       .protocol_type = "consumer",
                                       .generation = 1,
                                       .protocol = "cooperative-sticky",
                                       .leader = "w",
                                       .members = &wide,
                                       .member_count = 1};
    assert_int_equal(f->ops->store_group(f->gl, &g5), KAFKA_ERR_NONE);
    model_group(&want, &g5);
    free(big);

    /* OffsetDelete of one of g1's offsets; g2 deleted with its offsets. */
    assert_int_equal(f->ops->delete_offsets(f->gl, "g1", &g1[2], 1), KAFKA_ERR_NONE);
    state_remove(&want, "offset/g1/audit/0");
    const struct group_offset_record g2_all[] = {g2_later, g2_other};
    assert_int_equal(f->ops->delete_group(f->gl, "g2", g2_all, 2), KAFKA_ERR_NONE);
    /* An offset committed again after a deletion comes back. */
    const struct group_offset_record g1_again = {.topic = "audit",
                                                 .partition = 0,
                                                 .offset = 6,
                                                 .leader_epoch = 0,
                                                 .metadata = "back",
                                                 .metadata_len = 4,
                                                 .commit_timestamp = 9,
                                                 .expire_timestamp = -1};
    assert_int_equal(f->ops->store_offsets(f->gl, "g1", &g1_again, 1), KAFKA_ERR_NONE);
    model_offset(&want, "g1", &g1_again);
    /* Many groups spread over the partitions. */
    for (int i = 0; i < 30; i++) {
        char group[32], topic[32];
        snprintf(group, sizeof group, "bulk-%d", i);
        snprintf(topic, sizeof topic, "t%d", i % 4);
        struct group_offset_record r = {.topic = topic,
                                        .partition = i,
                                        .offset = i * 1000,
                                        .leader_epoch = i,
                                        .metadata = i % 2 ? "odd" : NULL,
                                        .metadata_len = i % 2 ? 3 : 0,
                                        .commit_timestamp = i,
                                        .expire_timestamp = -1};
        assert_int_equal(f->ops->store_offsets(f->gl, group, &r, 1), KAFKA_ERR_NONE);
        model_offset(&want, group, &r);
    }

    close_all(f);
    open_all(f, PARTITIONS, 1);
    struct loaded got = {0};
    char err[256] = "";
    assert_int_equal(group_log_load(f->gl, &visitor, &got, err, sizeof err), 0);
    assert_same_state(&want, &got.state);
    /* Everything written was replayed, tombstones included. */
    assert_int_equal(got.offset_calls, 3 + 3 + 1 + 1 + 2 + 1 + 30);
    assert_int_equal(got.group_calls, 2 + 1 + 1 + 1 + 1);
}

/* Reads every record of a partition, checking each key's placement. */
static int count_records_checking_placement(struct fixture *f, int32_t partition)
{
    struct partition_log *log = log_manager_get(f->stores.logs, GROUP_LOG_TOPIC, partition);
    assert_non_null(log);
    struct log_read_result rr;
    assert_int_equal(partition_log_read(log, 0, 1 << 20, INT64_MAX, &rr), KAFKA_ERR_NONE);
    int records = 0;
    if (rr.len > 0) {
        uint8_t *buf = malloc((size_t)rr.len);
        assert_int_equal(pread(rr.fd, buf, (size_t)rr.len, rr.file_pos), rr.len);
        close(rr.fd);
        struct record_batch_iter it;
        record_batch_iter_init(&it, buf, (size_t)rr.len);
        const uint8_t *batch;
        size_t len;
        while (record_batch_iter_next(&it, &batch, &len) == 1) {
            struct record_batch_record_iter ri;
            assert_int_equal(record_batch_records_begin(&ri, batch, len), 0);
            struct record_batch_record rec;
            while (record_batch_records_next(&ri, &rec) == 1) {
                struct kafka_arena arena;
                kafka_arena_init(&arena);
                struct group_log_key key;
                char err[128];
                assert_int_equal(group_log_decode_key(rec.key, (size_t)rec.key_len, &arena, &key, err, sizeof err), 0);
                assert_int_equal(coordinator_partition_for(key.group_id, strlen(key.group_id), PARTITIONS), partition);
                kafka_arena_free(&arena);
                records++;
            }
        }
        free(buf);
    }
    partition_log_close(log);
    return records;
}

static void test_records_land_in_the_group_partition(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    int per_partition[PARTITIONS] = {0};
    for (int i = 0; i < 40; i++) {
        char group[32];
        snprintf(group, sizeof group, "placed-%d", i);
        struct group_offset_record r[2] = {
            {.topic = "t", .partition = 0, .offset = i, .leader_epoch = -1, .expire_timestamp = -1},
            {.topic = "t", .partition = 1, .offset = i, .leader_epoch = -1, .expire_timestamp = -1},
        };
        assert_int_equal(f->ops->store_offsets(f->gl, group, r, 2), KAFKA_ERR_NONE);
        per_partition[coordinator_partition_for(group, strlen(group), PARTITIONS)] += 2;
    }
    int used = 0;
    for (int32_t p = 0; p < PARTITIONS; p++) {
        assert_int_equal(count_records_checking_placement(f, p), per_partition[p]);
        used += per_partition[p] > 0;
    }
    assert_true(used > 1);
}

static void test_multi_partition_commit_is_one_batch(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    struct group_offset_record r[3] = {
        {.topic = "t", .partition = 0, .offset = 1, .leader_epoch = -1, .expire_timestamp = -1},
        {.topic = "t", .partition = 1, .offset = 2, .leader_epoch = -1, .expire_timestamp = -1},
        {.topic = "u", .partition = 0, .offset = 3, .leader_epoch = -1, .expire_timestamp = -1},
    };
    struct partition_log *log = partition_of(f, "atomic");
    assert_int_equal(f->ops->store_offsets(f->gl, "atomic", r, 3), KAFKA_ERR_NONE);
    struct log_read_result rr;
    assert_int_equal(partition_log_read(log, 0, 1 << 20, INT64_MAX, &rr), KAFKA_ERR_NONE);
    uint8_t *buf = malloc((size_t)rr.len);
    assert_int_equal(pread(rr.fd, buf, (size_t)rr.len, rr.file_pos), rr.len);
    close(rr.fd);
    struct record_batch_header h;
    assert_int_equal(record_batch_parse_header(buf, (size_t)rr.len, &h), 0);
    assert_int_equal(h.record_count, 3);
    assert_int_equal(record_batch_total_size(&h), (size_t)rr.len);
    free(buf);
    partition_log_close(log);
}

static void test_store_flushes_before_returning(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    struct partition_log *log = partition_of(f, "durable");
    for (int i = 0; i < 3; i++) {
        struct group_offset_record r = {
            .topic = "t", .partition = 0, .offset = i, .leader_epoch = -1, .expire_timestamp = -1};
        assert_int_equal(f->ops->store_offsets(f->gl, "durable", &r, 1), KAFKA_ERR_NONE);
        assert_int_equal(partition_log_end_offset(log), i + 1);
        assert_int_equal(partition_log_recovery_point(log), partition_log_end_offset(log));
    }
    struct group_snapshot_record g = {.group_id = "durable", .protocol_type = "consumer", .generation = 1};
    assert_int_equal(f->ops->store_group(f->gl, &g), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_recovery_point(log), 4);
    assert_int_equal(f->ops->delete_group(f->gl, "durable", NULL, 0), KAFKA_ERR_NONE);
    assert_int_equal(partition_log_recovery_point(log), 5);
    partition_log_close(log);
}

/* Appends one batch of raw key/value records to the partition of group. */
static void append_raw(struct fixture *f, const char *group, const uint8_t *const *keys, const int32_t *key_lens,
                       const uint8_t *const *values, const int32_t *value_lens, int count, bool compressed)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1000);
    for (int i = 0; i < count; i++)
        assert_int_equal(record_batch_builder_add(&b, 1000, keys[i], key_lens[i], values[i], value_lens[i], NULL, 0),
                         0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    if (compressed) {
        /* Claim gzip: the loader cannot read it and must step over it. */
        batch[RECORD_BATCH_OFFSET_ATTRIBUTES + 1] |= RECORD_BATCH_COMPRESSION_GZIP;
        record_batch_update_crc(batch, len);
    }
    struct partition_log *log = partition_of(f, group);
    struct log_append_result res;
    /* A compacted topic refuses keyless records now; the loader must still
     * step over those an older writer left on disk. */
    struct log_config cfg, lax;
    partition_log_get_config(log, &cfg);
    lax = cfg;
    lax.cleanup_compact = false;
    partition_log_set_config(log, &lax);
    if (compressed) {
        /* Clients' batches are opened and this one would be refused: write
         * it as a follower copies its leader's, unopened. */
        record_batch_set_base_offset(batch, partition_log_end_offset(log));
        assert_int_equal(partition_log_append_as(log, LOG_APPEND_REPLICATION, batch, len, 0, &res), KAFKA_ERR_NONE);
    } else {
        assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
    }
    partition_log_set_config(log, &cfg);
    partition_log_close(log);
    free(batch);
}

static void test_corrupt_records_are_skipped(void **state)
{
    struct fixture *f = *state;
    struct state want = {0};
    open_all(f, PARTITIONS, 1);
    const struct group_offset_record before = {.topic = "t",
                                               .partition = 0,
                                               .offset = 1,
                                               .leader_epoch = 1,
                                               .metadata = "before",
                                               .metadata_len = 6,
                                               .commit_timestamp = 1,
                                               .expire_timestamp = -1};
    assert_int_equal(f->ops->store_offsets(f->gl, "victim", &before, 1), KAFKA_ERR_NONE);
    model_offset(&want, "victim", &before);

    struct kafka_writer good_key;
    assert_int_equal(kafka_writer_init(&good_key, 64), 0);
    assert_int_equal(group_log_encode_offset_key(&good_key, "victim", "t", 0), 0);
    const uint8_t unknown_key[] = {0x00, 0x07, 0x00, 0x06, 'v', 'i', 'c', 't', 'i', 'm'};
    const uint8_t truncated_value[] = {0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0};
    const uint8_t future_value[] = {0x00, 0x2a, 0, 0, 0, 0, 0, 0, 0, 99};
    const uint8_t some_value[] = {0x00, 0x03, 0,    0,    0, 0, 0, 0, 0, 99, 0xff, 0xff,
                                  0xff, 0xff, 0x00, 0x00, 0, 0, 0, 0, 0, 0,  0,    0};
    const uint8_t *keys[] = {unknown_key, good_key.buf, good_key.buf, NULL};
    const int32_t key_lens[] = {sizeof unknown_key, (int32_t)good_key.len, (int32_t)good_key.len, -1};
    const uint8_t *values[] = {some_value, truncated_value, future_value, some_value};
    const int32_t value_lens[] = {sizeof some_value, sizeof truncated_value, sizeof future_value, sizeof some_value};
    append_raw(f, "victim", keys, key_lens, values, value_lens, 4, false);
    /* A readable record in a batch marked compressed is not applied either. */
    append_raw(f, "victim", keys + 3, key_lens + 3, values + 3, value_lens + 3, 1, true);
    const uint8_t *gk[] = {good_key.buf};
    const int32_t gkl[] = {(int32_t)good_key.len};
    const uint8_t *sv[] = {some_value};
    const int32_t svl[] = {sizeof some_value};
    append_raw(f, "victim", gk, gkl, sv, svl, 1, true);

    const struct group_offset_record after = {.topic = "t",
                                              .partition = 1,
                                              .offset = 2,
                                              .leader_epoch = 1,
                                              .metadata = "after",
                                              .metadata_len = 5,
                                              .commit_timestamp = 2,
                                              .expire_timestamp = -1};
    assert_int_equal(f->ops->store_offsets(f->gl, "victim", &after, 1), KAFKA_ERR_NONE);
    model_offset(&want, "victim", &after);
    kafka_writer_free(&good_key);

    struct loaded got = {0};
    char err[256] = "";
    assert_int_equal(group_log_load(f->gl, &visitor, &got, err, sizeof err), 0);
    assert_same_state(&want, &got.state);
    assert_int_equal(got.offset_calls, 2);
}

static void test_store_errors(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    /* Beyond max.message.bytes (1 MiB by default). */
    static char metadata[30000];
    memset(metadata, 'm', sizeof metadata - 1);
    struct group_offset_record many[40];
    for (int i = 0; i < 40; i++)
        many[i] = (struct group_offset_record){.topic = "t",
                                               .partition = i,
                                               .offset = i,
                                               .leader_epoch = -1,
                                               .metadata = metadata,
                                               .metadata_len = strlen(metadata),
                                               .expire_timestamp = -1};
    assert_int_equal(f->ops->store_offsets(f->gl, "big", many, 40), KAFKA_ERR_INVALID_COMMIT_OFFSET_SIZE);
    uint8_t *blob = calloc(1, 2 << 20);
    struct group_member_record m = {
        .member_id = "m", .client_id = "c", .client_host = "h", .subscription = blob, .subscription_len = 2 << 20};
    struct group_snapshot_record g = {
        .group_id = "big", .protocol_type = "consumer", .generation = 1, .members = &m, .member_count = 1};
    assert_int_equal(f->ops->store_group(f->gl, &g), KAFKA_ERR_UNKNOWN_SERVER_ERROR);
    free(blob);
    /* A key that cannot be encoded is refused without writing anything. */
    struct partition_log *log = partition_of(f, "big");
    int64_t end = partition_log_end_offset(log);
    static char topic[40000];
    memset(topic, 't', sizeof topic - 1);
    struct group_offset_record bad = {.topic = topic, .partition = 0, .leader_epoch = -1, .expire_timestamp = -1};
    assert_int_equal(f->ops->store_offsets(f->gl, "big", &bad, 1), KAFKA_ERR_UNKNOWN_SERVER_ERROR);
    assert_int_equal(partition_log_end_offset(log), end);
    partition_log_close(log);
    assert_int_equal(f->ops->store_offsets(f->gl, "big", many, 0), KAFKA_ERR_NONE);
}

#define WRITERS 3
#define COMMITS_PER_WRITER 150

struct writer_arg {
    struct fixture *f;
    int id;
    int failures;
};

/* Commits for groups of its own, several of which share partitions with
 * the other writers' groups. */
static void *commit_loop(void *p)
{
    struct writer_arg *a = p;
    for (int i = 0; i < COMMITS_PER_WRITER; i++) {
        char group[32];
        snprintf(group, sizeof group, "w%d-g%d", a->id, i % 10);
        struct group_offset_record r = {.topic = "t",
                                        .partition = a->id,
                                        .offset = i,
                                        .leader_epoch = -1,
                                        .metadata = "",
                                        .metadata_len = 0,
                                        .commit_timestamp = i,
                                        .expire_timestamp = -1};
        if (a->f->ops->store_offsets(a->f->gl, group, &r, 1) != KAFKA_ERR_NONE)
            a->failures++;
    }
    return NULL;
}

static void test_concurrent_writers(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 1);
    pthread_t threads[WRITERS];
    struct writer_arg args[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        args[i] = (struct writer_arg){.f = f, .id = i};
        assert_int_equal(pthread_create(&threads[i], NULL, commit_loop, &args[i]), 0);
    }
    for (int i = 0; i < WRITERS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(args[i].failures, 0);
    }
    struct state want = {0};
    for (int w = 0; w < WRITERS; w++)
        for (int i = COMMITS_PER_WRITER - 10; i < COMMITS_PER_WRITER; i++) {
            char group[32];
            snprintf(group, sizeof group, "w%d-g%d", w, i % 10);
            struct group_offset_record r = {.topic = "t",
                                            .partition = w,
                                            .offset = i,
                                            .leader_epoch = -1,
                                            .metadata = "",
                                            .metadata_len = 0,
                                            .commit_timestamp = i,
                                            .expire_timestamp = -1};
            model_offset(&want, group, &r);
        }
    struct loaded got = {0};
    char err[256] = "";
    assert_int_equal(group_log_load(f->gl, &visitor, &got, err, sizeof err), 0);
    assert_same_state(&want, &got.state);
    assert_int_equal(got.offset_calls, WRITERS * COMMITS_PER_WRITER);
}

/* A broker holding no replica of the topic is not the coordinator. */
static void test_not_coordinator_without_replica(void **state)
{
    struct fixture *f = *state;
    open_all(f, PARTITIONS, 2); /* replicas are on node 1 only */
    assert_int_equal(log_manager_partition_count(f->stores.logs), 0);
    struct group_offset_record r = {.topic = "t", .partition = 0, .leader_epoch = -1, .expire_timestamp = -1};
    assert_int_equal(f->ops->store_offsets(f->gl, "g", &r, 1), KAFKA_ERR_NOT_COORDINATOR);
    struct group_snapshot_record g = {.group_id = "g", .protocol_type = ""};
    assert_int_equal(f->ops->store_group(f->gl, &g), KAFKA_ERR_NOT_COORDINATOR);
    struct loaded got = {0};
    char err[256];
    assert_int_equal(group_log_load(f->gl, &visitor, &got, err, sizeof err), 0);
    assert_int_equal(got.offset_calls + got.group_calls, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_creates_compacted_topic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip_through_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_records_land_in_the_group_partition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_partition_commit_is_one_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_flushes_before_returning, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_records_are_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_coordinator_without_replica, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
