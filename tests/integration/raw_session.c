/* Newest-version request builders and parsers shared by the version tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "raw_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void raw_put_compact_array_len(struct raw_writer *w, int n)
{
    raw_put_uvarint(w, (uint64_t)n + 1);
}

void raw_put_compact_bytes(struct raw_writer *w, const void *p, size_t n)
{
    raw_put_uvarint(w, (uint64_t)n + 1);
    raw_put_bytes(w, p, n);
}

void raw_get_uuid(struct raw_reader *r, uint8_t out[16])
{
    memset(out, 0, 16);
    if (r->len - r->pos < 16) {
        r->overflow = true;
        return;
    }
    memcpy(out, r->data + r->pos, 16);
    raw_skip(r, 16);
}

void raw_session_begin(struct raw_session *s, struct raw_writer *w, int16_t api, int16_t version)
{
    raw_writer_init(w);
    raw_frame_begin_flexible(w, api, version, ++s->correlation, "nv-client");
}

/* Sends the frame in w on the shared connection; r reads the body past the
 * response header. Returns the frame to free. */
uint8_t *raw_session_roundtrip(struct raw_session *s, struct raw_writer *w, struct raw_reader *r, bool flexible_header)
{
    raw_frame_finish(w);
    assert_int_equal(raw_send_all(s->fd, w->data, w->len), 0);
    raw_writer_free(w);
    uint8_t *frame = NULL;
    size_t len = 0;
    if (raw_recv_frame(s->fd, 10000, 8 << 20, &frame, &len) != 0)
        fail_msg("no answer to request %d (the broker closed the connection or timed out)", s->correlation);
    raw_reader_init(r, frame, len);
    assert_int_equal(raw_get_i32(r), s->correlation);
    if (flexible_header)
        raw_skip_tagged_fields(r);
    return frame;
}

void raw_session_finish_read(struct raw_reader *r, uint8_t *frame)
{
    bool overflow = r->overflow;
    size_t pos = r->pos, len = r->len;
    free(frame);
    assert_false(overflow);
    assert_int_equal(pos, len);
}

void raw_expect_one_partition(struct raw_reader *r, int32_t partition)
{
    assert_int_equal(raw_get_i32(r), 1);
    raw_skip_string(r);
    assert_int_equal(raw_get_i32(r), 1);
    assert_int_equal(raw_get_i32(r), partition);
}

/* CreateTopics v7 for one topic; returns its id. */
void raw_create_topic_v7(struct raw_session *s, const char *name, int partitions, uint8_t id[16])
{
    struct raw_writer w;
    raw_session_begin(s, &w, 19, 7);
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, name);
    raw_put_i32(&w, partitions);
    raw_put_i16(&w, 1);
    raw_put_compact_array_len(&w, 0);
    raw_put_compact_array_len(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_i32(&w, 10000);
    raw_put_i8(&w, 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char got[64], text[256];
    raw_get_compact_string(&r, got, sizeof got);
    raw_get_uuid(&r, id);
    int16_t err = raw_get_i16(&r);
    raw_get_compact_string(&r, text, sizeof text);
    raw_get_i32(&r);
    raw_get_i16(&r);
    int64_t configs = (int64_t)raw_get_uvarint(&r) - 1;
    for (int64_t i = 0; i < configs && !r.overflow; i++) {
        raw_get_compact_string(&r, text, sizeof text);
        raw_get_compact_string(&r, text, sizeof text);
        raw_skip(&r, 3); /* read only, source, sensitive */
        raw_skip_tagged_fields(&r);
    }
    raw_skip_tagged_fields(&r);
    raw_skip_tagged_fields(&r);
    raw_session_finish_read(&r, frame);
    assert_int_equal(err, 0);
    assert_string_equal(got, name);
    static const uint8_t zero[16];
    assert_memory_not_equal(id, zero, 16);
}

/* Produce v7 of `count` records to partition 0; a transactional batch when
 * txn_id is set. Returns the partition's error. */
int16_t raw_produce_v7(struct raw_session *s, const char *topic, const char *txn_id, int64_t pid, int16_t epoch,
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
    size_t start = raw_build_record_batch(&batch, RAW_SESSION_BATCH_TS, recs, count);
    if (txn_id)
        raw_make_transactional(batch.data + start, batch.len - start, pid, epoch);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 0, 7, ++s->correlation, "nv-client");
    raw_put_produce_body(&w, txn_id, -1, topic, 0, batch.data, batch.len);
    raw_writer_free(&batch);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, false);
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

/* Fetch v17 of partition 0 of the topic with `id`, from offset 0. */
void raw_fetch_v17(struct raw_session *s, const uint8_t id[16], int8_t isolation, bool directory_tag,
                   struct raw_fetch_answer *a)
{
    struct raw_writer w;
    raw_session_begin(s, &w, 1, 17);
    raw_put_i32(&w, 0);       /* max wait */
    raw_put_i32(&w, 1);       /* min bytes */
    raw_put_i32(&w, 1 << 20); /* max bytes */
    raw_put_i8(&w, isolation);
    raw_put_i32(&w, 0);  /* no session */
    raw_put_i32(&w, -1); /* sessionless */
    raw_put_compact_array_len(&w, 1);
    raw_put_bytes(&w, id, 16);
    raw_put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_i32(&w, -1);
    raw_put_i64(&w, 0);
    raw_put_i32(&w, -1);
    raw_put_i64(&w, -1);
    raw_put_i32(&w, 1 << 20);
    if (directory_tag) {
        /* ReplicaDirectoryId, tag 0 of the partition (KIP-853). */
        static const uint8_t dir_id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        raw_put_uvarint(&w, 1);
        raw_put_uvarint(&w, 0);
        raw_put_uvarint(&w, 16);
        raw_put_bytes(&w, dir_id, 16);
    } else {
        raw_put_uvarint(&w, 0);
    }
    raw_put_uvarint(&w, 0);
    raw_put_compact_array_len(&w, 0); /* forgotten topics */
    raw_put_compact_string(&w, "");
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
    memset(a, 0, sizeof *a);
    raw_get_i32(&r);
    assert_int_equal(raw_get_i16(&r), 0);
    raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    uint8_t got[16];
    raw_get_uuid(&r, got);
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
    if (records_len > r.len - r.pos)
        r.overflow = true;
    /* Walk the v2 batches: length at 8, attributes at 21, count at 57. */
    const uint8_t *p = r.data + r.pos;
    size_t off = 0;
    while (!r.overflow && off + 61 <= records_len) {
        uint32_t blen = (uint32_t)p[off + 8] << 24 | (uint32_t)p[off + 9] << 16 | (uint32_t)p[off + 10] << 8 |
                        p[off + 11];
        if (off + 12 + blen > records_len)
            break;
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
    raw_session_finish_read(&r, frame);
}

/* OffsetFetch v9 of `topic` partition 0 for one group, as member/epoch. */
void raw_offset_fetch_v9(struct raw_session *s, const char *group, const char *member, int32_t epoch, const char *topic,
                         bool require_stable, struct raw_fetched_offset *out)
{
    struct raw_writer w;
    raw_session_begin(s, &w, 9, 9);
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, group);
    raw_put_compact_string(&w, member);
    raw_put_i32(&w, epoch);
    raw_put_compact_array_len(&w, 1);
    raw_put_compact_string(&w, topic);
    raw_put_compact_array_len(&w, 1);
    raw_put_i32(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_uvarint(&w, 0);
    raw_put_i8(&w, require_stable ? 1 : 0);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
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
    raw_session_finish_read(&r, frame);
    assert_string_equal(gid, group);
    assert_string_equal(name, topic);
}

/* FindCoordinator v5 for two keys of one type. */
void raw_find_coordinator_v5(struct raw_session *s, int8_t key_type, const char *k1, const char *k2,
                             struct raw_coordinator_answer out[2])
{
    struct raw_writer w;
    raw_session_begin(s, &w, 10, 5);
    raw_put_i8(&w, key_type);
    raw_put_compact_array_len(&w, 2);
    raw_put_compact_string(&w, k1);
    raw_put_compact_string(&w, k2);
    raw_put_uvarint(&w, 0);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, &w, &r, true);
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
    raw_session_finish_read(&r, frame);
}

int16_t raw_session_commit_roundtrip(struct raw_session *s, struct raw_writer *w, const char *topic)
{
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(s, w, &r, true);
    raw_get_i32(&r); /* throttle */
    assert_int_equal(raw_get_uvarint(&r), 2);
    char name[256];
    raw_get_compact_string(&r, name, sizeof name);
    assert_int_equal(raw_get_uvarint(&r), 2);
    assert_int_equal(raw_get_i32(&r), 0);
    int16_t err = raw_get_i16(&r);
    raw_skip_tagged_fields(&r); /* partition */
    raw_skip_tagged_fields(&r); /* topic */
    raw_skip_tagged_fields(&r); /* answer */
    raw_session_finish_read(&r, frame);
    assert_string_equal(name, topic);
    return err;
}

int raw_broker_fixture_start(struct raw_broker_fixture *f, const char *topic)
{
    memset(f, 0, sizeof *f);
    f->session.fd = -1;
    const char *overrides[] = {"group.initial.rebalance.delay.ms=50", NULL};
    broker_start(&f->broker, overrides);
    f->session.fd = raw_connect(broker_port(&f->broker), 10000);
    if (f->session.fd < 0)
        return -1;
    raw_create_topic_v7(&f->session, topic, 1, f->topic_id);
    return 0;
}

void raw_broker_fixture_stop(struct raw_broker_fixture *f)
{
    if (f->session.fd >= 0)
        close(f->session.fd);
    f->session.fd = -1;
    broker_cleanup(&f->broker);
}

int16_t raw_envelope_create_topic(int port, const char *topic, const char *client_id, uint64_t *response_len)
{
    struct raw_writer inner;
    raw_writer_init(&inner);
    raw_frame_begin_flexible(&inner, 19, 7, 1, client_id);
    raw_put_compact_array_len(&inner, 1);
    raw_put_compact_string(&inner, topic);
    raw_put_i32(&inner, 1);
    raw_put_i16(&inner, -1);
    raw_put_compact_array_len(&inner, 0);
    raw_put_compact_array_len(&inner, 0);
    raw_put_uvarint(&inner, 0);
    raw_put_i32(&inner, 20000);
    raw_put_i8(&inner, 0);
    raw_put_uvarint(&inner, 0);
    raw_frame_finish(&inner);
    /* Kafka's principal serde: version 0, type, name, token flag, no tags. */
    struct raw_writer principal;
    raw_writer_init(&principal);
    raw_put_i16(&principal, 0);
    raw_put_compact_string(&principal, "User");
    raw_put_compact_string(&principal, "admin");
    raw_put_i8(&principal, 0);
    raw_put_uvarint(&principal, 0);
    struct raw_session s = {.fd = raw_connect(port, 10000)};
    assert_true(s.fd >= 0);
    struct raw_writer w;
    raw_session_begin(&s, &w, 58, 0);
    raw_put_compact_bytes(&w, inner.data + 4, inner.len - 4); /* without the size */
    raw_put_compact_bytes(&w, principal.data, principal.len);
    raw_put_compact_bytes(&w, "\x7f\0\0\x01", 4);
    raw_put_uvarint(&w, 0);
    raw_writer_free(&inner);
    raw_writer_free(&principal);
    struct raw_reader r;
    uint8_t *frame = raw_session_roundtrip(&s, &w, &r, true);
    close(s.fd);
    uint64_t len = raw_get_uvarint(&r); /* compact nullable bytes: length + 1 */
    raw_skip(&r, len > 0 ? (size_t)len - 1 : 0);
    int16_t err = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    if (response_len)
        *response_len = len;
    return err;
}
