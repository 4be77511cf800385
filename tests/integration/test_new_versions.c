/* The newest request versions Cairn serves, byte by byte, as current Java
 * clients send them: ApiVersions advertises them, Fetch v17 returns
 * records, ListOffsets v9/v10 (latest tiered -5, TimeoutMs), OffsetCommit
 * v9 and OffsetFetch v9 on classic groups (simple, unknown and with a live
 * member),
 * ListGroups v5 type filters, FindCoordinator v5, and one transaction
 * driven through InitProducerId v5, AddPartitionsToTxn v5, AddOffsetsToTxn
 * v4, TxnOffsetCommit v4 and EndTxn v4 whose records and offsets become
 * visible to read_committed readers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERR_NONE 0
#define ERR_ILLEGAL_GENERATION 22
#define ERR_UNKNOWN_MEMBER_ID 25
#define ERR_UNSUPPORTED_VERSION 35
#define ERR_GROUP_ID_NOT_FOUND 69
#define ERR_MEMBER_ID_REQUIRED 79
#define ERR_UNSTABLE_OFFSET_COMMIT 88

#define TOPIC "nv-t"
#define TXN_TOPIC "nv-txn-t"
#define BASE_TS 1700000000000LL

/* Owned by the test's main thread. */
struct nv_state {
    struct test_broker broker;
    int fd;
    int32_t correlation;
    uint8_t topic_id[16];
    uint8_t txn_topic_id[16];
};

static void put_compact_array_len(struct raw_writer *w, int n) { raw_put_uvarint(w, (uint64_t)n + 1); }

static void put_compact_bytes(struct raw_writer *w, const void *p, size_t n)
{
    raw_put_uvarint(w, (uint64_t)n + 1);
    raw_put_bytes(w, p, n);
}

static void get_uuid(struct raw_reader *r, uint8_t out[16])
{
    memset(out, 0, 16);
    if (r->len - r->pos < 16) {
        r->overflow = true;
        return;
    }
    memcpy(out, r->data + r->pos, 16);
    raw_skip(r, 16);
}

static void begin(struct nv_state *st, struct raw_writer *w, int16_t api, int16_t version)
{
    raw_writer_init(w);
    raw_frame_begin_flexible(w, api, version, ++st->correlation, "nv-client");
}

/* Sends the frame in w on the shared connection; r reads the body past the
 * response header. Returns the frame to free. */
static uint8_t *roundtrip(struct nv_state *st, struct raw_writer *w, struct raw_reader *r, bool flexible_header)
{
    raw_frame_finish(w);
    assert_int_equal(raw_send_all(st->fd, w->data, w->len), 0);
    raw_writer_free(w);
    uint8_t *frame = NULL;
    size_t len = 0;
    if (raw_recv_frame(st->fd, 10000, 8 << 20, &frame, &len) != 0)
        fail_msg("no answer to request %d (the broker closed the connection or timed out)", st->correlation);
    raw_reader_init(r, frame, len);
    assert_int_equal(raw_get_i32(r), st->correlation);
    if (flexible_header) raw_skip_tagged_fields(r);
    return frame;
}

static void finish_read(struct raw_reader *r, uint8_t *frame)
{
    bool overflow = r->overflow;
    size_t pos = r->pos, len = r->len;
    free(frame);
    assert_false(overflow);
    assert_int_equal(pos, len);
}

/* CreateTopics v7 for one topic; returns its id. */
static void create_topic(struct nv_state *st, const char *name, int partitions, uint8_t id[16])
{
    struct raw_writer w;
    begin(st, &w, 19, 7);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, name);
    raw_put_i32(&w, partitions);
    raw_put_i16(&w, 1);
    put_compact_array_len(&w, 0);
    put_compact_array_len(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_i32(&w, 10000);
    raw_put_i8(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char got[64], s[256];
    raw_get_compact_string(&r, got, sizeof got);
    get_uuid(&r, id);
    int16_t err = raw_get_i16(&r);
    raw_get_compact_string(&r, s, sizeof s);
    raw_get_i32(&r);
    raw_get_i16(&r);
    int64_t configs = (int64_t)raw_get_uvarint(&r) - 1;
    for (int64_t i = 0; i < configs && !r.overflow; i++) {
        raw_get_compact_string(&r, s, sizeof s);
        raw_get_compact_string(&r, s, sizeof s);
        raw_skip(&r, 3); /* read only, source, sensitive */
        raw_skip_tagged_fields(&r);
    }
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    finish_read(&r, frame);
    assert_int_equal(err, ERR_NONE);
    assert_string_equal(got, name);
    static const uint8_t zero[16];
    assert_memory_not_equal(id, zero, 16);
}

/* Produce v7 of `count` records to partition 0; a transactional batch when
 * txn_id is set. Returns the partition's error. */
static int16_t produce(struct nv_state *st, const char *topic, const char *txn_id, int64_t pid, int16_t epoch,
                       int count)
{
    struct raw_writer batch;
    raw_writer_init(&batch);
    struct raw_record recs[8];
    char values[8][32];
    assert_true(count <= 8);
    for (int i = 0; i < count; i++) {
        snprintf(values[i], sizeof values[i], "v%d", i);
        recs[i] = (struct raw_record){NULL, values[i]};
    }
    size_t start = raw_build_record_batch(&batch, BASE_TS, recs, count);
    if (txn_id) {
        uint8_t *b = batch.data + start;
        b[21] = 0;
        b[22] = 0x10; /* transactional */
        for (int i = 0; i < 8; i++) b[43 + i] = (uint8_t)((uint64_t)pid >> (56 - 8 * i));
        b[51] = (uint8_t)((uint16_t)epoch >> 8);
        b[52] = (uint8_t)epoch;
        memset(b + 53, 0, 4); /* first sequence 0 */
        uint32_t crc = raw_crc32c(b + 21, batch.len - start - 21);
        for (int i = 0; i < 4; i++) b[17 + i] = (uint8_t)(crc >> (24 - 8 * i));
    }
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 0, 7, ++st->correlation, "nv-client");
    raw_put_string(&w, txn_id);
    raw_put_i16(&w, -1);
    raw_put_i32(&w, 10000);
    raw_put_i32(&w, 1);
    raw_put_string(&w, topic);
    raw_put_i32(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i32(&w, (int32_t)batch.len);
    raw_put_bytes(&w, batch.data, batch.len);
    raw_writer_free(&batch);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, false);
    assert_int_equal(raw_get_i32(&r), 1);
    raw_skip_string(&r);
    assert_int_equal(raw_get_i32(&r), 1);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t err = raw_get_i16(&r);
    bool overflow = r.overflow;
    free(frame);
    assert_false(overflow);
    return err;
}

struct fetch_answer {
    int16_t error;
    int64_t high_watermark;
    int64_t last_stable_offset;
    int data_records;    /* records in non-control batches */
    int control_batches;
};

/* Fetch v17 of partition 0 of the topic with `id`, from offset 0. */
static void fetch_v17(struct nv_state *st, const uint8_t id[16], int8_t isolation, struct fetch_answer *a)
{
    struct raw_writer w;
    begin(st, &w, 1, 17);
    raw_put_i32(&w, 0);       /* max wait */
    raw_put_i32(&w, 1);       /* min bytes */
    raw_put_i32(&w, 1 << 20); /* max bytes */
    raw_put_i8(&w, isolation);
    raw_put_i32(&w, 0);  /* no session */
    raw_put_i32(&w, -1); /* sessionless */
    put_compact_array_len(&w, 1);
    raw_put_bytes(&w, id, 16);
    put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i32(&w, -1);
    raw_put_i64(&w, 0);
    raw_put_i32(&w, -1);
    raw_put_i64(&w, -1);
    raw_put_i32(&w, 1 << 20);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    put_compact_array_len(&w, 0); /* forgotten topics */
    raw_put_compact_string(&w, "");
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    memset(a, 0, sizeof *a);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), ERR_NONE);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    uint8_t got[16];
    get_uuid(&r, got);
    assert_memory_equal(got, id, 16);
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i32(&r), 0);
    a->error = raw_get_i16(&r);
    a->high_watermark = raw_get_i64(&r);
    a->last_stable_offset = raw_get_i64(&r);
    raw_get_i64(&r);
    int64_t aborted = (int64_t)raw_get_uvarint(&r) - 1;
    for (int64_t i = 0; i < aborted && !r.overflow; i++) {
        raw_skip(&r, 16);
        raw_skip_tagged_fields(&r);
    }
    raw_get_i32(&r);
    uint64_t n = raw_get_uvarint(&r);
    size_t records_len = n > 0 ? (size_t)(n - 1) : 0;
    if (records_len > r.len - r.pos) r.overflow = true;
    /* Walk the v2 batches: length at 8, attributes at 21, count at 57. */
    const uint8_t *p = r.data + r.pos;
    size_t off = 0;
    while (!r.overflow && off + 61 <= records_len) {
        uint32_t blen = (uint32_t)p[off + 8] << 24 | (uint32_t)p[off + 9] << 16 | (uint32_t)p[off + 10] << 8 | p[off + 11];
        if (off + 12 + blen > records_len) break;
        if (p[off + 22] & 0x20)
            a->control_batches++;
        else
            a->data_records += (int)((uint32_t)p[off + 57] << 24 | (uint32_t)p[off + 58] << 16 |
                                     (uint32_t)p[off + 59] << 8 | p[off + 60]);
        off += 12 + blen;
    }
    raw_skip(&r, records_len);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    finish_read(&r, frame);
}

static void test_api_versions_advertise_new_maxima(void **state)
{
    struct nv_state *st = *state;
    struct raw_api_versions v;
    assert_int_equal(raw_api_versions(st->fd, 3, ++st->correlation, &v), 0);
    assert_int_equal(v.error_code, ERR_NONE);
    static const int16_t want[][2] = {{1, 17}, {2, 10}, {8, 9},  {9, 9},  {10, 5}, {16, 5},
                                      {22, 5}, {24, 5}, {25, 4}, {26, 4}, {28, 4}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct raw_api_range *range = raw_api_versions_find(&v, want[i][0]);
        if (!range) fail_msg("api %d not advertised", want[i][0]);
        if (range->max_version != want[i][1])
            fail_msg("api %d: max version %d, expected %d", want[i][0], range->max_version, want[i][1]);
    }
}

static void test_fetch_v17_returns_records(void **state)
{
    struct nv_state *st = *state;
    struct fetch_answer a;
    fetch_v17(st, st->topic_id, 0, &a);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.high_watermark, 3);
    assert_int_equal(a.data_records, 3);
    assert_int_equal(a.control_batches, 0);
}

struct offsets_answer {
    int16_t error;
    int64_t timestamp;
    int64_t offset;
    int32_t leader_epoch;
};

/* ListOffsets (v1+ layout) for partition 0 of TOPIC. */
static void list_offsets(struct nv_state *st, int16_t version, int64_t timestamp, struct offsets_answer *a)
{
    bool flexible = version >= 6;
    struct raw_writer w;
    raw_writer_init(&w);
    if (flexible)
        raw_frame_begin_flexible(&w, 2, version, ++st->correlation, "nv-client");
    else
        raw_frame_begin(&w, 2, version, ++st->correlation, "nv-client");
    raw_put_i32(&w, -1);
    raw_put_i8(&w, 0);
    if (flexible) {
        put_compact_array_len(&w, 1);
        raw_put_compact_string(&w, TOPIC);
        put_compact_array_len(&w, 1);
    } else {
        raw_put_i32(&w, 1);
        raw_put_string(&w, TOPIC);
        raw_put_i32(&w, 1);
    }
    raw_put_i32(&w, 0);
    raw_put_i32(&w, -1);
    raw_put_i64(&w, timestamp);
    if (flexible) {
        raw_put_uvarint(&w, 0);
        raw_put_uvarint(&w, 0);
        if (version >= 10) raw_put_i32(&w, 5000);
        raw_put_uvarint(&w, 0);
    }
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, flexible);
    raw_get_i32(&r);
    char name[64];
    if (flexible) {
        assert_int_equal(raw_get_uvarint(&r), 2);
        raw_get_compact_string(&r, name, sizeof name);
        assert_int_equal(raw_get_uvarint(&r), 2);
    } else {
        assert_int_equal(raw_get_i32(&r), 1);
        raw_skip_string(&r);
        assert_int_equal(raw_get_i32(&r), 1);
    }
    assert_int_equal(raw_get_i32(&r), 0);
    a->error = raw_get_i16(&r);
    a->timestamp = raw_get_i64(&r);
    a->offset = raw_get_i64(&r);
    a->leader_epoch = version >= 4 ? raw_get_i32(&r) : -1;
    if (flexible) {
        raw_skip_tagged_fields(&r);
        raw_skip_tagged_fields(&r);
        raw_skip_tagged_fields(&r);
    }
    finish_read(&r, frame);
}

static void test_list_offsets_v9_v10(void **state)
{
    struct nv_state *st = *state;
    struct offsets_answer a;
    /* -5 (latest tiered) with nothing tiered: offset -1, timestamp -1, epoch -1. */
    list_offsets(st, 9, -5, &a);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.offset, -1);
    assert_int_equal(a.timestamp, -1);
    assert_int_equal(a.leader_epoch, -1);
    list_offsets(st, 10, -5, &a);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.offset, -1);

    /* Below v9, -5 is as unknown as -6 is everywhere. */
    list_offsets(st, 8, -5, &a);
    assert_int_equal(a.error, ERR_UNSUPPORTED_VERSION);
    assert_int_equal(a.offset, -1);
    list_offsets(st, 10, -6, &a);
    assert_int_equal(a.error, ERR_UNSUPPORTED_VERSION);
    list_offsets(st, 6, -3, &a);
    assert_int_equal(a.error, ERR_UNSUPPORTED_VERSION);

    /* v10 with TimeoutMs: latest, earliest and by timestamp. */
    list_offsets(st, 10, -1, &a);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.offset, 3);
    assert_true(a.leader_epoch >= 0);
    list_offsets(st, 10, -2, &a);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.offset, 0);
    list_offsets(st, 10, BASE_TS, &a);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.offset, 0);
    assert_int_equal(a.timestamp, BASE_TS);
    list_offsets(st, 8, -4, &a);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.offset, 0);
}

/* OffsetCommit (v8 or v9, same layout) of one offset for TOPIC partition 0;
 * returns its error. */
static int16_t offset_commit_at(struct nv_state *st, int16_t version, const char *group, int32_t generation,
                                const char *member, int64_t offset)
{
    struct raw_writer w;
    begin(st, &w, 8, version);
    raw_put_compact_string(&w, group);
    raw_put_i32(&w, generation);
    raw_put_compact_string(&w, member);
    raw_put_compact_string(&w, NULL);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, TOPIC);
    put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i64(&w, offset);
    raw_put_i32(&w, -1);
    raw_put_compact_string(&w, "m");
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char name[64];
    raw_get_compact_string(&r, name, sizeof name);
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t err = raw_get_i16(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    finish_read(&r, frame);
    assert_string_equal(name, TOPIC);
    return err;
}

static int16_t offset_commit_v9(struct nv_state *st, const char *group, int32_t generation, const char *member,
                                int64_t offset)
{
    return offset_commit_at(st, 9, group, generation, member, offset);
}

struct fetched_offset {
    int16_t group_error;
    int16_t error;
    int64_t offset;
};

/* OffsetFetch v9 of `topic` partition 0 for one group, as member/epoch. */
static void offset_fetch_v9(struct nv_state *st, const char *group, const char *member, int32_t epoch,
                            const char *topic, bool require_stable, struct fetched_offset *out)
{
    struct raw_writer w;
    begin(st, &w, 9, 9);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, group);
    raw_put_compact_string(&w, member);
    raw_put_i32(&w, epoch);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, topic);
    put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_i8(&w, require_stable ? 1 : 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char gid[64], name[64], meta[32];
    raw_get_compact_string(&r, gid, sizeof gid);
    assert_int_equal(raw_get_uvarint(&r), 2);
    raw_get_compact_string(&r, name, sizeof name);
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i32(&r), 0);
    out->offset = raw_get_i64(&r);
    raw_get_i32(&r);
    raw_get_compact_string(&r, meta, sizeof meta);
    out->error = raw_get_i16(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    out->group_error = raw_get_i16(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    finish_read(&r, frame);
    assert_string_equal(gid, group);
    assert_string_equal(name, topic);
}

/* ListGroups v5 with the given types filter; returns whether `group` was
 * listed and copies its state and type. */
static bool list_groups_v5(struct nv_state *st, const char *const *types, int ntypes, const char *group,
                           char state_out[32], char type_out[32])
{
    struct raw_writer w;
    begin(st, &w, 16, 5);
    put_compact_array_len(&w, 0);
    put_compact_array_len(&w, ntypes);
    for (int i = 0; i < ntypes; i++) raw_put_compact_string(&w, types[i]);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    int16_t err = raw_get_i16(&r);
    int64_t n = (int64_t)raw_get_uvarint(&r) - 1;
    bool found = false;
    for (int64_t i = 0; i < n && !r.overflow; i++) {
        char gid[64], ptype[32], gstate[32], gtype[32];
        raw_get_compact_string(&r, gid, sizeof gid);
        raw_get_compact_string(&r, ptype, sizeof ptype);
        raw_get_compact_string(&r, gstate, sizeof gstate);
        raw_get_compact_string(&r, gtype, sizeof gtype);
        raw_skip_tagged_fields(&r);
        if (strcmp(gid, group) == 0) {
            found = true;
            snprintf(state_out, 32, "%s", gstate);
            snprintf(type_out, 32, "%s", gtype);
        }
    }
    raw_skip_tagged_fields(&r);
    finish_read(&r, frame);
    assert_int_equal(err, ERR_NONE);
    return found;
}

static void test_simple_group_offsets_and_list_groups(void **state)
{
    struct nv_state *st = *state;
    /* A commit outside group management (generation -1, no member). */
    assert_int_equal(offset_commit_v9(st, "nv-simple", -1, "", 2), ERR_NONE);
    struct fetched_offset f;
    /* Admin clients and classic consumers: null member id, epoch -1. */
    offset_fetch_v9(st, "nv-simple", NULL, -1, TOPIC, false, &f);
    assert_int_equal(f.group_error, ERR_NONE);
    assert_int_equal(f.error, ERR_NONE);
    assert_int_equal(f.offset, 2);
    /* Member id and epoch are not checked for a classic group. */
    offset_fetch_v9(st, "nv-simple", "not-a-member", 12, TOPIC, false, &f);
    assert_int_equal(f.group_error, ERR_NONE);
    assert_int_equal(f.offset, 2);

    /* A member commit to a group nobody created: GROUP_ID_NOT_FOUND from
     * v9, ILLEGAL_GENERATION before; neither creates the group. */
    assert_int_equal(offset_commit_v9(st, "nv-nobody", 3, "ghost", 5), ERR_GROUP_ID_NOT_FOUND);
    assert_int_equal(offset_commit_at(st, 8, "nv-nobody", 3, "ghost", 5), ERR_ILLEGAL_GENERATION);
    offset_fetch_v9(st, "nv-nobody", NULL, -1, TOPIC, false, &f);
    assert_int_equal(f.group_error, ERR_NONE);
    assert_int_equal(f.offset, -1);

    char gstate[32] = "", gtype[32] = "";
    assert_false(list_groups_v5(st, NULL, 0, "nv-nobody", gstate, gtype));
    const char *classic[] = {"classic"};
    assert_true(list_groups_v5(st, classic, 1, "nv-simple", gstate, gtype));
    assert_string_equal(gstate, "Empty");
    assert_string_equal(gtype, "classic");
    const char *upper[] = {"CLASSIC"};
    assert_true(list_groups_v5(st, upper, 1, "nv-simple", gstate, gtype));
    const char *consumer[] = {"consumer"};
    assert_false(list_groups_v5(st, consumer, 1, "nv-simple", gstate, gtype));
    const char *share_and_unknown[] = {"share", "bogus"};
    assert_false(list_groups_v5(st, share_and_unknown, 2, "nv-simple", gstate, gtype));
    const char *both[] = {"consumer", "Classic"};
    assert_true(list_groups_v5(st, both, 2, "nv-simple", gstate, gtype));
    gtype[0] = '\0';
    assert_true(list_groups_v5(st, NULL, 0, "nv-simple", gstate, gtype));
    assert_string_equal(gtype, "classic");
}

/* JoinGroup v9 for "nv-live"; returns the error, fills member and generation. */
static int16_t join_v9(struct nv_state *st, const char *member_in, char member_out[256], int32_t *generation)
{
    struct raw_writer w;
    begin(st, &w, 11, 9);
    raw_put_compact_string(&w, "nv-live");
    raw_put_i32(&w, 10000);
    raw_put_i32(&w, 10000);
    raw_put_compact_string(&w, member_in);
    raw_put_compact_string(&w, NULL);
    raw_put_compact_string(&w, "consumer");
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, "range");
    put_compact_bytes(&w, "SUB", 3);
    raw_put_uvarint(&w, 0);
    raw_put_compact_string(&w, NULL);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    int16_t err = raw_get_i16(&r);
    *generation = raw_get_i32(&r);
    char s[256];
    raw_get_compact_string(&r, s, sizeof s);
    raw_get_compact_string(&r, s, sizeof s);
    raw_get_compact_string(&r, s, sizeof s);
    raw_get_i8(&r);
    raw_get_compact_string(&r, member_out, 256);
    bool overflow = r.overflow;
    free(frame); /* the member list is not needed */
    assert_false(overflow);
    return err;
}

static void test_live_member_offsets_v9(void **state)
{
    struct nv_state *st = *state;
    char member[256];
    int32_t generation;
    assert_int_equal(join_v9(st, "", member, &generation), ERR_MEMBER_ID_REQUIRED);
    char joined[256];
    snprintf(joined, sizeof joined, "%s", member);
    assert_int_equal(join_v9(st, joined, member, &generation), ERR_NONE);
    assert_string_equal(member, joined);
    assert_true(generation >= 1);

    struct raw_writer w;
    begin(st, &w, 14, 5);
    raw_put_compact_string(&w, "nv-live");
    raw_put_i32(&w, generation);
    raw_put_compact_string(&w, member);
    raw_put_compact_string(&w, NULL);
    raw_put_compact_string(&w, "consumer");
    raw_put_compact_string(&w, "range");
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, member);
    put_compact_bytes(&w, "A", 1);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    int16_t sync_error = raw_get_i16(&r);
    free(frame);
    assert_int_equal(sync_error, ERR_NONE);

    /* The classic generation checks hold at v9. */
    assert_int_equal(offset_commit_v9(st, "nv-live", generation, member, 1), ERR_NONE);
    assert_int_equal(offset_commit_v9(st, "nv-live", generation + 1, member, 9), ERR_ILLEGAL_GENERATION);
    assert_int_equal(offset_commit_v9(st, "nv-live", generation, "nv-stranger", 9), ERR_UNKNOWN_MEMBER_ID);
    assert_int_equal(offset_commit_v9(st, "nv-live", -1, "", 9), ERR_UNKNOWN_MEMBER_ID);

    struct fetched_offset f;
    offset_fetch_v9(st, "nv-live", member, generation, TOPIC, true, &f);
    assert_int_equal(f.group_error, ERR_NONE);
    assert_int_equal(f.error, ERR_NONE);
    assert_int_equal(f.offset, 1);
    /* A classic group answers whatever member and epoch the fetch names,
     * as Kafka's coordinator does (no UNKNOWN_MEMBER_ID, no
     * STALE_MEMBER_EPOCH). */
    offset_fetch_v9(st, "nv-live", member, generation + 5, TOPIC, false, &f);
    assert_int_equal(f.group_error, ERR_NONE);
    assert_int_equal(f.offset, 1);
    offset_fetch_v9(st, "nv-live", NULL, -1, TOPIC, false, &f);
    assert_int_equal(f.group_error, ERR_NONE);
    assert_int_equal(f.offset, 1);

    char gstate[32] = "", gtype[32] = "";
    const char *classic[] = {"classic"};
    assert_true(list_groups_v5(st, classic, 1, "nv-live", gstate, gtype));
    assert_string_equal(gstate, "Stable");
    assert_string_equal(gtype, "classic");
}

struct coordinator_answer {
    int16_t error;
    int32_t node_id;
    int32_t port;
};

/* FindCoordinator v5 for two keys of one type. */
static void find_coordinator_v5(struct nv_state *st, int8_t key_type, const char *k1, const char *k2,
                                struct coordinator_answer out[2])
{
    struct raw_writer w;
    begin(st, &w, 10, 5);
    raw_put_i8(&w, key_type);
    put_compact_array_len(&w, 2);
    raw_put_compact_string(&w, k1);
    raw_put_compact_string(&w, k2);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 3);
    for (int i = 0; i < 2; i++) {
        char key[64], host[64], msg[128];
        raw_get_compact_string(&r, key, sizeof key);
        out[i].node_id = raw_get_i32(&r);
        raw_get_compact_string(&r, host, sizeof host);
        out[i].port = raw_get_i32(&r);
        out[i].error = raw_get_i16(&r);
        raw_get_compact_string(&r, msg, sizeof msg);
        raw_skip_tagged_fields(&r);
        assert_string_equal(key, i == 0 ? k1 : k2);
    }
    raw_skip_tagged_fields(&r);
    finish_read(&r, frame);
}

static void test_find_coordinator_v5(void **state)
{
    struct nv_state *st = *state;
    struct coordinator_answer a[2];
    find_coordinator_v5(st, 0, "nv-g1", "nv-g2", a);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(a[i].error, ERR_NONE);
        assert_int_equal(a[i].node_id, 1);
        assert_int_equal(a[i].port, broker_port(&st->broker));
    }
}

/* One request whose answer is throttle time + error code (AddOffsetsToTxn,
 * EndTxn): returns the error. */
static int16_t error_only_answer(struct nv_state *st, struct raw_writer *w)
{
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, w, &r, true);
    raw_get_i32(&r);
    int16_t err = raw_get_i16(&r);
    raw_skip_tagged_fields(&r);
    finish_read(&r, frame);
    return err;
}

static void init_producer_id_v5(struct nv_state *st, const char *txn_id, int64_t *pid, int16_t *epoch)
{
    int16_t err = -1;
    long long deadline = harness_now_ms() + 15000;
    do {
        struct raw_writer w;
        begin(st, &w, 22, 5);
        raw_put_compact_string(&w, txn_id);
        raw_put_i32(&w, 60000);
        raw_put_i64(&w, -1);
        raw_put_i16(&w, -1);
        raw_put_uvarint(&w, 0);
        struct raw_reader r;
        uint8_t *frame = roundtrip(st, &w, &r, true);
        raw_get_i32(&r);
        err = raw_get_i16(&r);
        *pid = raw_get_i64(&r);
        *epoch = raw_get_i16(&r);
        raw_skip_tagged_fields(&r);
        finish_read(&r, frame);
        if (err != ERR_NONE) usleep(200 * 1000); /* the coordinator may still be loading */
    } while (err != ERR_NONE && harness_now_ms() < deadline);
    assert_int_equal(err, ERR_NONE);
    assert_true(*pid >= 0 && *epoch >= 0);
}

static int16_t add_partitions_v5(struct nv_state *st, const char *txn_id, int64_t pid, int16_t epoch)
{
    struct raw_writer w;
    begin(st, &w, 24, 5);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, txn_id);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_i8(&w, 0); /* not verify-only: add */
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, TXN_TOPIC);
    put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), ERR_NONE);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char s[64];
    raw_get_compact_string(&r, s, sizeof s);
    assert_string_equal(s, txn_id);
    assert_int_equal(raw_get_uvarint(&r), 2);
    raw_get_compact_string(&r, s, sizeof s);
    assert_string_equal(s, TXN_TOPIC);
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t err = raw_get_i16(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    finish_read(&r, frame);
    return err;
}

static int16_t txn_offset_commit_v4(struct nv_state *st, const char *txn_id, const char *group, int64_t pid,
                                    int16_t epoch, int64_t offset)
{
    struct raw_writer w;
    begin(st, &w, 28, 4);
    raw_put_compact_string(&w, txn_id);
    raw_put_compact_string(&w, group);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_i32(&w, -1);
    raw_put_compact_string(&w, "");
    raw_put_compact_string(&w, NULL);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, TXN_TOPIC);
    put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i64(&w, offset);
    raw_put_i32(&w, -1);
    raw_put_compact_string(&w, NULL);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char s[64];
    raw_get_compact_string(&r, s, sizeof s);
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t err = raw_get_i16(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    finish_read(&r, frame);
    assert_string_equal(s, TXN_TOPIC);
    return err;
}

static void test_transaction_at_new_versions(void **state)
{
    struct nv_state *st = *state;
    const char *txn_id = "nv-txn";
    const char *group = "nv-txn-group";
    struct coordinator_answer c[2];
    long long deadline = harness_now_ms() + 15000;
    do {
        find_coordinator_v5(st, 1, txn_id, "nv-other-txn", c);
        if (c[0].error != ERR_NONE) usleep(200 * 1000);
    } while (c[0].error != ERR_NONE && harness_now_ms() < deadline);
    assert_int_equal(c[0].error, ERR_NONE);
    assert_int_equal(c[0].node_id, 1);

    int64_t pid;
    int16_t epoch;
    init_producer_id_v5(st, txn_id, &pid, &epoch);
    assert_int_equal(add_partitions_v5(st, txn_id, pid, epoch), ERR_NONE);
    assert_int_equal(produce(st, TXN_TOPIC, txn_id, pid, epoch, 4), ERR_NONE);

    struct raw_writer w;
    begin(st, &w, 25, 4);
    raw_put_compact_string(&w, txn_id);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_compact_string(&w, group);
    raw_put_uvarint(&w, 0);
    assert_int_equal(error_only_answer(st, &w), ERR_NONE);
    assert_int_equal(txn_offset_commit_v4(st, txn_id, group, pid, epoch, 4), ERR_NONE);

    /* Open transaction: read_committed sees none of it, stable offsets wait. */
    struct fetch_answer f;
    fetch_v17(st, st->txn_topic_id, 1, &f);
    assert_int_equal(f.error, ERR_NONE);
    assert_int_equal(f.data_records, 0);
    assert_int_equal(f.last_stable_offset, 0);
    struct fetched_offset o;
    offset_fetch_v9(st, group, NULL, -1, TXN_TOPIC, true, &o);
    assert_int_equal(o.error, ERR_UNSTABLE_OFFSET_COMMIT);

    begin(st, &w, 26, 4);
    raw_put_compact_string(&w, txn_id);
    raw_put_i64(&w, pid);
    raw_put_i16(&w, epoch);
    raw_put_i8(&w, 1); /* commit */
    raw_put_uvarint(&w, 0);
    assert_int_equal(error_only_answer(st, &w), ERR_NONE);

    /* The markers follow the EndTxn answer. */
    deadline = harness_now_ms() + 15000;
    do {
        fetch_v17(st, st->txn_topic_id, 1, &f);
        if (f.data_records == 0) usleep(100 * 1000);
    } while (f.data_records == 0 && harness_now_ms() < deadline);
    assert_int_equal(f.error, ERR_NONE);
    assert_int_equal(f.data_records, 4);
    assert_int_equal(f.control_batches, 1);
    assert_int_equal(f.last_stable_offset, 5);
    do {
        offset_fetch_v9(st, group, NULL, -1, TXN_TOPIC, true, &o);
        if (o.error != ERR_NONE) usleep(100 * 1000);
    } while (o.error != ERR_NONE && harness_now_ms() < deadline);
    assert_int_equal(o.error, ERR_NONE);
    assert_int_equal(o.offset, 4);
    /* A clean exit (status 0) also catches sanitizer reports at shutdown. */
    broker_stop(&st->broker);
    broker_mark_passed(&st->broker);
}

static int nv_setup(void **state)
{
    static struct nv_state st;
    memset(&st, 0, sizeof st);
    *state = &st;
    const char *overrides[] = {"group.initial.rebalance.delay.ms=50", NULL};
    broker_start(&st.broker, overrides);
    st.fd = raw_connect(broker_port(&st.broker), 10000);
    if (st.fd < 0) return -1;
    create_topic(&st, TOPIC, 1, st.topic_id);
    create_topic(&st, TXN_TOPIC, 1, st.txn_topic_id);
    /* Leadership may take a moment after creation. */
    int16_t err = -1;
    long long deadline = harness_now_ms() + 10000;
    while ((err = produce(&st, TOPIC, NULL, -1, -1, 3)) != ERR_NONE && harness_now_ms() < deadline)
        usleep(100 * 1000);
    return err == ERR_NONE ? 0 : -1;
}

static int nv_teardown(void **state)
{
    struct nv_state *st = *state;
    if (st->fd >= 0) close(st->fd);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_versions_advertise_new_maxima),
        cmocka_unit_test(test_fetch_v17_returns_records),
        cmocka_unit_test(test_list_offsets_v9_v10),
        cmocka_unit_test(test_simple_group_offsets_and_list_groups),
        cmocka_unit_test(test_live_member_offsets_v9),
        cmocka_unit_test(test_find_coordinator_v5),
        cmocka_unit_test(test_transaction_at_new_versions),
    };
    return cmocka_run_group_tests(tests, nv_setup, nv_teardown);
}
