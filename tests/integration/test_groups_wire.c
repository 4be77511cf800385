/* The group APIs at their newest (flexible) versions, byte by byte, as
 * newer clients (the Java client, kafka-python, franz-go) send them: one
 * member runs a whole generation (JoinGroup v9 with KIP-394, SyncGroup v5,
 * Heartbeat v4), commits (OffsetCommit v8), reads back through OffsetFetch
 * v8 with two groups, is described (DescribeGroups v5), leaves
 * (LeaveGroup v5) and the group is deleted (DeleteGroups v2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Owned by the test's main thread. */
struct wire_state {
    struct test_broker broker;
    int fd;
    int32_t correlation;
};

static void put_compact_bytes(struct raw_writer *w, const void *p, size_t n)
{
    raw_put_uvarint(w, (uint64_t)n + 1);
    raw_put_bytes(w, p, n);
}

static void put_compact_array_len(struct raw_writer *w, int n)
{
    raw_put_uvarint(w, (uint64_t)n + 1);
}

/* Compact bytes into out (NUL-terminated, truncated); returns the length. */
static size_t get_compact_bytes(struct raw_reader *r, char *out, size_t outlen)
{
    uint64_t n = raw_get_uvarint(r);
    out[0] = '\0';
    if (n == 0 || r->overflow)
        return 0;
    size_t len = (size_t)(n - 1);
    if (len > r->len - r->pos) {
        r->overflow = true;
        return 0;
    }
    size_t copy = len < outlen - 1 ? len : outlen - 1;
    memcpy(out, r->data + r->pos, copy);
    out[copy] = '\0';
    raw_skip(r, len);
    return len;
}

/* Sends the frame in w and returns the response body after the flexible
 * response header (correlation id checked, tagged fields skipped). */
static uint8_t *wire_roundtrip(struct wire_state *st, struct raw_writer *w, struct raw_reader *r, bool flexible_header)
{
    raw_frame_finish(w);
    assert_int_equal(raw_send_all(st->fd, w->data, w->len), 0);
    raw_writer_free(w);
    uint8_t *frame;
    size_t len;
    assert_int_equal(raw_recv_frame(st->fd, 10000, 1 << 20, &frame, &len), 0);
    raw_reader_init(r, frame, len);
    assert_int_equal(raw_get_i32(r), st->correlation);
    if (flexible_header)
        raw_skip_tagged_fields(r);
    return frame;
}

static void begin(struct wire_state *st, struct raw_writer *w, int16_t api, int16_t version)
{
    raw_writer_init(w);
    raw_frame_begin_flexible(w, api, version, ++st->correlation, "wire-client");
}

struct join_answer {
    int16_t error;
    int32_t generation;
    char protocol_type[32];
    char protocol_name[32];
    char leader[256];
    bool skip_assignment;
    char member_id[256];
    int members;
    char first_metadata[64];
};

static void join_v9(struct wire_state *st, const char *member_id, struct join_answer *a)
{
    struct raw_writer w;
    begin(st, &w, 11, 9);
    raw_put_compact_string(&w, "wire-g");
    raw_put_i32(&w, 10000);
    raw_put_i32(&w, 10000);
    raw_put_compact_string(&w, member_id);
    raw_put_compact_string(&w, NULL); /* no instance id */
    raw_put_compact_string(&w, "consumer");
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, "range");
    put_compact_bytes(&w, "SUB", 3);
    raw_put_uvarint(&w, 0);
    raw_put_compact_string(&w, "testing"); /* reason */
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = wire_roundtrip(st, &w, &r, true);
    memset(a, 0, sizeof *a);
    raw_get_i32(&r); /* throttle */
    a->error = raw_get_i16(&r);
    a->generation = raw_get_i32(&r);
    raw_get_compact_string(&r, a->protocol_type, sizeof a->protocol_type);
    raw_get_compact_string(&r, a->protocol_name, sizeof a->protocol_name);
    raw_get_compact_string(&r, a->leader, sizeof a->leader);
    a->skip_assignment = raw_get_i8(&r) != 0;
    raw_get_compact_string(&r, a->member_id, sizeof a->member_id);
    a->members = (int)raw_get_uvarint(&r) - 1;
    for (int i = 0; i < a->members; i++) {
        char id[256], inst[64], meta[64];
        raw_get_compact_string(&r, id, sizeof id);
        raw_get_compact_string(&r, inst, sizeof inst);
        get_compact_bytes(&r, meta, sizeof meta);
        raw_skip_tagged_fields(&r);
        if (i == 0)
            snprintf(a->first_metadata, sizeof a->first_metadata, "%s", meta);
    }
    raw_skip_tagged_fields(&r);
    assert_false(r.overflow);
    assert_int_equal(r.pos, r.len);
    free(frame);
}

static void test_generation_at_newest_versions(void **state)
{
    struct wire_state *st = *state;
    rk_create_topic(broker_bootstrap(&st->broker), "wire-t", 2, NULL);

    /* KIP-394: the first join only hands out a member id. */
    struct join_answer a;
    join_v9(st, "", &a);
    assert_int_equal(a.error, 79 /* MEMBER_ID_REQUIRED */);
    assert_true(strncmp(a.member_id, "wire-client-", 12) == 0);
    char member[256];
    snprintf(member, sizeof member, "%s", a.member_id);
    join_v9(st, member, &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(a.generation, 1);
    assert_string_equal(a.protocol_type, "consumer");
    assert_string_equal(a.protocol_name, "range");
    assert_string_equal(a.leader, member);
    assert_string_equal(a.member_id, member);
    assert_false(a.skip_assignment);
    assert_int_equal(a.members, 1);
    assert_string_equal(a.first_metadata, "SUB");

    /* SyncGroup v5 from the leader. */
    struct raw_writer w;
    begin(st, &w, 14, 5);
    raw_put_compact_string(&w, "wire-g");
    raw_put_i32(&w, 1);
    raw_put_compact_string(&w, member);
    raw_put_compact_string(&w, NULL);
    raw_put_compact_string(&w, "consumer");
    raw_put_compact_string(&w, "range");
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, member);
    put_compact_bytes(&w, "ASSIGNED", 8);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = wire_roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), 0);
    char s1[64], s2[64], assignment[64];
    raw_get_compact_string(&r, s1, sizeof s1);
    raw_get_compact_string(&r, s2, sizeof s2);
    get_compact_bytes(&r, assignment, sizeof assignment);
    raw_skip_tagged_fields(&r);
    assert_false(r.overflow);
    assert_string_equal(s1, "consumer");
    assert_string_equal(s2, "range");
    assert_string_equal(assignment, "ASSIGNED");
    free(frame);

    /* Heartbeat v4. */
    begin(st, &w, 12, 4);
    raw_put_compact_string(&w, "wire-g");
    raw_put_i32(&w, 1);
    raw_put_compact_string(&w, member);
    raw_put_compact_string(&w, NULL);
    raw_put_uvarint(&w, 0);
    frame = wire_roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), 0);
    free(frame);

    /* OffsetCommit v8: partition 0 with epoch and metadata; partition 7 does not exist. */
    begin(st, &w, 8, 8);
    raw_put_compact_string(&w, "wire-g");
    raw_put_i32(&w, 1);
    raw_put_compact_string(&w, member);
    raw_put_compact_string(&w, NULL);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, "wire-t");
    put_compact_array_len(&w, 2);
    raw_put_i32(&w, 0);
    raw_put_i64(&w, 42);
    raw_put_i32(&w, 3);
    raw_put_compact_string(&w, "meta");
    raw_put_uvarint(&w, 0);
    raw_put_i32(&w, 7);
    raw_put_i64(&w, 1);
    raw_put_i32(&w, -1);
    raw_put_compact_string(&w, NULL);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    frame = wire_roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char name[64];
    raw_get_compact_string(&r, name, sizeof name);
    assert_string_equal(name, "wire-t");
    assert_int_equal(raw_get_uvarint(&r), 3);
    assert_int_equal(raw_get_i32(&r), 0);
    assert_int_equal(raw_get_i16(&r), 0);
    raw_skip_tagged_fields(&r);
    assert_int_equal(raw_get_i32(&r), 7);
    assert_int_equal(raw_get_i16(&r), 3 /* UNKNOWN_TOPIC_OR_PARTITION */);
    assert_false(r.overflow);
    free(frame);

    /* OffsetFetch v8: all of wire-g's offsets, and a listed partition of a group nobody knows. */
    begin(st, &w, 9, 8);
    put_compact_array_len(&w, 2);
    raw_put_compact_string(&w, "wire-g");
    raw_put_uvarint(&w, 0); /* null topics: everything */
    raw_put_uvarint(&w, 0);
    raw_put_compact_string(&w, "wire-unknown");
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, "wire-t");
    put_compact_array_len(&w, 1);
    raw_put_i32(&w, 1);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_i8(&w, 0); /* require_stable */
    raw_put_uvarint(&w, 0);
    frame = wire_roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 3);
    int64_t offsets[2] = {0, 0};
    int32_t epochs[2] = {0, 0};
    char metas[2][32];
    for (int g = 0; g < 2; g++) {
        char gid[64];
        raw_get_compact_string(&r, gid, sizeof gid);
        assert_string_equal(gid, g == 0 ? "wire-g" : "wire-unknown");
        assert_int_equal(raw_get_uvarint(&r), 2); /* one topic */
        raw_get_compact_string(&r, name, sizeof name);
        assert_string_equal(name, "wire-t");
        assert_int_equal(raw_get_uvarint(&r), 2); /* one partition */
        assert_int_equal(raw_get_i32(&r), g == 0 ? 0 : 1);
        offsets[g] = raw_get_i64(&r);
        epochs[g] = raw_get_i32(&r);
        raw_get_compact_string(&r, metas[g], sizeof metas[g]);
        assert_int_equal(raw_get_i16(&r), 0);
        raw_skip_tagged_fields(&r);
        raw_skip_tagged_fields(&r);
        assert_int_equal(raw_get_i16(&r), 0);
        raw_skip_tagged_fields(&r);
    }
    assert_false(r.overflow);
    free(frame);
    assert_int_equal(offsets[0], 42);
    assert_int_equal(epochs[0], 3);
    assert_string_equal(metas[0], "meta");
    assert_int_equal(offsets[1], -1);
    assert_int_equal(epochs[1], -1);

    /* DescribeGroups v5. */
    begin(st, &w, 15, 5);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, "wire-g");
    raw_put_i8(&w, 0);
    raw_put_uvarint(&w, 0);
    frame = wire_roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i16(&r), 0);
    char gid[64], gstate[64], ptype[64], pdata[64];
    raw_get_compact_string(&r, gid, sizeof gid);
    raw_get_compact_string(&r, gstate, sizeof gstate);
    raw_get_compact_string(&r, ptype, sizeof ptype);
    raw_get_compact_string(&r, pdata, sizeof pdata);
    assert_string_equal(gstate, "Stable");
    assert_string_equal(ptype, "consumer");
    assert_string_equal(pdata, "range");
    assert_int_equal(raw_get_uvarint(&r), 2);
    char mid[256], inst[64], cid[64], host[64], meta[64], asg[64];
    raw_get_compact_string(&r, mid, sizeof mid);
    bool has_instance = raw_get_compact_string(&r, inst, sizeof inst);
    raw_get_compact_string(&r, cid, sizeof cid);
    raw_get_compact_string(&r, host, sizeof host);
    get_compact_bytes(&r, meta, sizeof meta);
    get_compact_bytes(&r, asg, sizeof asg);
    assert_false(r.overflow);
    free(frame);
    assert_string_equal(mid, member);
    assert_false(has_instance);
    assert_string_equal(cid, "wire-client");
    assert_string_equal(host, "/127.0.0.1");
    assert_string_equal(meta, "SUB");
    assert_string_equal(asg, "ASSIGNED");

    /* LeaveGroup v5, then DeleteGroups v2 of the now empty group. */
    begin(st, &w, 13, 5);
    raw_put_compact_string(&w, "wire-g");
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, member);
    raw_put_compact_string(&w, NULL);
    raw_put_compact_string(&w, "done");
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    frame = wire_roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), 0);
    assert_int_equal(raw_get_uvarint(&r), 2);
    raw_get_compact_string(&r, mid, sizeof mid);
    assert_string_equal(mid, member);
    raw_get_compact_string(&r, inst, sizeof inst);
    assert_int_equal(raw_get_i16(&r), 0);
    assert_false(r.overflow);
    free(frame);

    begin(st, &w, 42, 2);
    put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, "wire-g");
    raw_put_uvarint(&w, 0);
    frame = wire_roundtrip(st, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    raw_get_compact_string(&r, gid, sizeof gid);
    assert_string_equal(gid, "wire-g");
    assert_int_equal(raw_get_i16(&r), 0);
    assert_false(r.overflow);
    free(frame);
    broker_mark_passed(&st->broker);
}

static int wire_setup(void **state)
{
    static struct wire_state st;
    memset(&st, 0, sizeof st);
    *state = &st;
    const char *overrides[] = {"group.initial.rebalance.delay.ms=100", NULL};
    broker_start(&st.broker, overrides);
    st.fd = raw_connect(broker_port(&st.broker), 10000);
    return st.fd >= 0 ? 0 : -1;
}

static int wire_teardown(void **state)
{
    struct wire_state *st = *state;
    if (st->fd >= 0)
        close(st->fd);
    broker_cleanup(&st->broker);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generation_at_newest_versions),
    };
    return cmocka_run_group_tests(tests, wire_setup, wire_teardown);
}
