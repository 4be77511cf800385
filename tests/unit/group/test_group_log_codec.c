/* __consumer_offsets record layouts: bytes derived by hand from Kafka's
 * group-coordinator schemas (int16 version, then the fields big-endian,
 * int16-length strings, int32-length bytes and arrays), and decoding of the
 * versions Cairn does not write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "group/group_log_codec.h"

static void assert_bytes(const struct kafka_writer *w, const uint8_t *want, size_t want_len)
{
    assert_int_equal(w->failed, 0);
    assert_int_equal(w->len, want_len);
    assert_memory_equal(w->buf, want, want_len);
}

static void test_offset_key_bytes(void **state)
{
    (void)state;
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 16), 0);
    assert_int_equal(group_log_encode_offset_key(&w, "grp", "tp", 258), 0);
    const uint8_t want[] = {
        0x00, 0x01,                  /* key version 1 */
        0x00, 0x03, 'g',  'r',  'p', /* group */
        0x00, 0x02, 't',  'p',       /* topic */
        0x00, 0x00, 0x01, 0x02,      /* partition 258 */
    };
    assert_bytes(&w, want, sizeof want);

    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct group_log_key key;
    char err[128];
    assert_int_equal(group_log_decode_key(w.buf, w.len, &arena, &key, err, sizeof err), 0);
    assert_int_equal(key.type, GROUP_LOG_KEY_OFFSET);
    assert_string_equal(key.group_id, "grp");
    assert_string_equal(key.topic, "tp");
    assert_int_equal(key.partition, 258);
    kafka_arena_free(&arena);
    kafka_writer_free(&w);
}

static void test_offset_value_v3_bytes(void **state)
{
    (void)state;
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 16), 0);
    struct group_offset_record rec = {
        .topic = "tp",
        .partition = 0,
        .offset = 0x0102030405060708LL,
        .leader_epoch = 7,
        .metadata = "md",
        .metadata_len = 2,
        .commit_timestamp = 1000,
        .expire_timestamp = -1,
    };
    assert_int_equal(group_log_encode_offset_value(&w, &rec), 0);
    const uint8_t want[] = {
        0x00, 0x03,                                     /* value version 3 */
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* offset */
        0x00, 0x00, 0x00, 0x07,                         /* leaderEpoch */
        0x00, 0x02, 'm',  'd',                          /* metadata */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, /* commitTimestamp */
    };
    assert_bytes(&w, want, sizeof want);

    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct group_offset_record back;
    char err[128];
    assert_int_equal(group_log_decode_offset_value(w.buf, w.len, &arena, &back, err, sizeof err), 0);
    assert_int_equal(back.offset, rec.offset);
    assert_int_equal(back.leader_epoch, 7);
    assert_string_equal(back.metadata, "md");
    assert_int_equal(back.commit_timestamp, 1000);
    assert_int_equal(back.expire_timestamp, -1);
    kafka_arena_free(&arena);
    kafka_writer_free(&w);
}

/* A null metadata is stored as "", and an explicit expiry forces version 1. */
static void test_offset_value_v1_when_expiring(void **state)
{
    (void)state;
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 16), 0);
    struct group_offset_record rec = {
        .topic = "tp",
        .offset = 5,
        .leader_epoch = 9,
        .metadata = NULL,
        .commit_timestamp = 1,
        .expire_timestamp = 2,
    };
    assert_int_equal(group_log_encode_offset_value(&w, &rec), 0);
    const uint8_t want[] = {
        0x00, 0x01,                                     /* value version 1 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, /* offset */
        0x00, 0x00,                                     /* metadata "" */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, /* commitTimestamp */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, /* expireTimestamp */
    };
    assert_bytes(&w, want, sizeof want);

    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct group_offset_record back;
    char err[128];
    assert_int_equal(group_log_decode_offset_value(w.buf, w.len, &arena, &back, err, sizeof err), 0);
    assert_int_equal(back.leader_epoch, -1); /* v1 has none */
    assert_string_equal(back.metadata, "");
    assert_int_equal(back.expire_timestamp, 2);
    kafka_arena_free(&arena);
    kafka_writer_free(&w);
}

static void test_group_key_bytes(void **state)
{
    (void)state;
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 16), 0);
    assert_int_equal(group_log_encode_group_key(&w, "gp"), 0);
    const uint8_t want[] = {0x00, 0x02, 0x00, 0x02, 'g', 'p'};
    assert_bytes(&w, want, sizeof want);

    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct group_log_key key;
    char err[128];
    assert_int_equal(group_log_decode_key(w.buf, w.len, &arena, &key, err, sizeof err), 0);
    assert_int_equal(key.type, GROUP_LOG_KEY_GROUP);
    assert_string_equal(key.group_id, "gp");
    kafka_arena_free(&arena);
    kafka_writer_free(&w);
}

static void test_group_value_v3_bytes(void **state)
{
    (void)state;
    const uint8_t sub[] = {0xaa, 0xbb};
    const uint8_t asg[] = {0xcc};
    struct group_member_record members[2] = {
        {.member_id = "m1",
         .group_instance_id = "i1",
         .client_id = "c",
         .client_host = "/h",
         .rebalance_timeout_ms = 300,
         .session_timeout_ms = 10,
         .subscription = sub,
         .subscription_len = 2,
         .assignment = asg,
         .assignment_len = 1},
        {.member_id = "m2",
         .group_instance_id = NULL,
         .client_id = "",
         .client_host = "h",
         .rebalance_timeout_ms = -1,
         .session_timeout_ms = 0x01020304},
    };
    struct group_snapshot_record g = {
        .group_id = "gp",
        .protocol_type = "consumer",
        .generation = 5,
        .protocol = "range",
        .leader = NULL,
        .current_state_timestamp = 0x10,
        .members = members,
        .member_count = 2,
    };
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 16), 0);
    assert_int_equal(group_log_encode_group_value(&w, &g), 0);
    const uint8_t want[] = {
        0x00, 0x03,                                               /* value version 3 */
        0x00, 0x08, 'c',  'o',  'n',  's',  'u',  'm',  'e', 'r', /* protocolType */
        0x00, 0x00, 0x00, 0x05,                                   /* generation */
        0x00, 0x05, 'r',  'a',  'n',  'g',  'e',                  /* protocol */
        0xff, 0xff,                                               /* leader: null */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,           /* currentStateTimestamp */
        0x00, 0x00, 0x00, 0x02,                                   /* members */
        0x00, 0x02, 'm',  '1',                                    /* memberId */
        0x00, 0x02, 'i',  '1',                                    /* groupInstanceId */
        0x00, 0x01, 'c',                                          /* clientId */
        0x00, 0x02, '/',  'h',                                    /* clientHost */
        0x00, 0x00, 0x01, 0x2c,                                   /* rebalanceTimeout */
        0x00, 0x00, 0x00, 0x0a,                                   /* sessionTimeout */
        0x00, 0x00, 0x00, 0x02, 0xaa, 0xbb,                       /* subscription */
        0x00, 0x00, 0x00, 0x01, 0xcc,                             /* assignment */
        0x00, 0x02, 'm',  '2',                                    /* memberId */
        0xff, 0xff,                                               /* groupInstanceId: null */
        0x00, 0x00,                                               /* clientId */
        0x00, 0x01, 'h',                                          /* clientHost */
        0xff, 0xff, 0xff, 0xff,                                   /* rebalanceTimeout */
        0x01, 0x02, 0x03, 0x04,                                   /* sessionTimeout */
        0x00, 0x00, 0x00, 0x00,                                   /* subscription: empty */
        0x00, 0x00, 0x00, 0x00,                                   /* assignment: empty */
    };
    assert_bytes(&w, want, sizeof want);

    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct group_snapshot_record back;
    char err[128];
    assert_int_equal(group_log_decode_group_value(w.buf, w.len, "gp", &arena, &back, err, sizeof err), 0);
    assert_string_equal(back.group_id, "gp");
    assert_string_equal(back.protocol_type, "consumer");
    assert_int_equal(back.generation, 5);
    assert_string_equal(back.protocol, "range");
    assert_null(back.leader);
    assert_int_equal(back.current_state_timestamp, 0x10);
    assert_int_equal(back.member_count, 2);
    assert_string_equal(back.members[0].group_instance_id, "i1");
    assert_int_equal(back.members[0].subscription_len, 2);
    assert_memory_equal(back.members[0].subscription, sub, 2);
    assert_int_equal(back.members[0].assignment_len, 1);
    assert_null(back.members[1].group_instance_id);
    assert_int_equal(back.members[1].session_timeout_ms, 0x01020304);
    assert_int_equal(back.members[1].subscription_len, 0);
    kafka_arena_free(&arena);
    kafka_writer_free(&w);
}

/* Version 0 (as old Kafka wrote it): no rebalance timeout, no state
 * timestamp, no instance id. */
static void test_group_value_v0_decodes(void **state)
{
    (void)state;
    const uint8_t v0[] = {
        0x00, 0x00,                   /* version 0 */
        0x00, 0x00,                   /* protocolType "" */
        0x00, 0x00, 0x00, 0x01,       /* generation */
        0xff, 0xff,                   /* protocol null */
        0x00, 0x01, 'm',              /* leader */
        0x00, 0x00, 0x00, 0x01,       /* one member */
        0x00, 0x01, 'm',              /* memberId */
        0x00, 0x01, 'c',              /* clientId */
        0x00, 0x01, 'h',              /* clientHost */
        0x00, 0x00, 0x27, 0x10,       /* sessionTimeout 10000 */
        0x00, 0x00, 0x00, 0x00,       /* subscription */
        0x00, 0x00, 0x00, 0x01, 0x07, /* assignment */
    };
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct group_snapshot_record g;
    char err[128];
    assert_int_equal(group_log_decode_group_value(v0, sizeof v0, "g", &arena, &g, err, sizeof err), 0);
    assert_int_equal(g.generation, 1);
    assert_null(g.protocol);
    assert_string_equal(g.leader, "m");
    assert_int_equal(g.current_state_timestamp, -1);
    assert_int_equal(g.member_count, 1);
    assert_int_equal(g.members[0].rebalance_timeout_ms, -1);
    assert_int_equal(g.members[0].session_timeout_ms, 10000);
    assert_int_equal(g.members[0].assignment_len, 1);
    assert_int_equal(g.members[0].assignment[0], 0x07);
    /* Every truncation of it is refused, never read past. */
    for (size_t cut = 0; cut < sizeof v0; cut++)
        assert_int_equal(group_log_decode_group_value(v0, cut, "g", &arena, &g, err, sizeof err), -1);
    kafka_arena_free(&arena);
}

static void test_bad_input_is_refused(void **state)
{
    (void)state;
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct group_log_key key;
    struct group_offset_record off;
    char err[128] = "";
    const uint8_t unknown_key[] = {0x00, 0x09, 0x00, 0x01, 'g'};
    assert_int_equal(group_log_decode_key(unknown_key, sizeof unknown_key, &arena, &key, err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown key version 9"));
    const uint8_t short_key[] = {0x00, 0x01, 0x00, 0x05, 'g'};
    assert_int_equal(group_log_decode_key(short_key, sizeof short_key, &arena, &key, err, sizeof err), -1);
    assert_int_equal(group_log_decode_key(short_key, 1, &arena, &key, err, sizeof err), -1);
    assert_int_equal(group_log_decode_key(NULL, 0, &arena, &key, err, sizeof err), -1);
    const uint8_t future_value[] = {0x00, 0x05, 0, 0, 0, 0, 0, 0, 0, 1};
    assert_int_equal(group_log_decode_offset_value(future_value, sizeof future_value, &arena, &off, err, sizeof err),
                     -1);
    const uint8_t short_value[] = {0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
    assert_int_equal(group_log_decode_offset_value(short_value, sizeof short_value, &arena, &off, err, sizeof err), -1);
    kafka_arena_free(&arena);

    /* A string too long for an int16 length cannot be encoded. */
    static char huge[40000];
    memset(huge, 'x', sizeof huge - 1);
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 16), 0);
    assert_int_equal(group_log_encode_group_key(&w, huge), -1);
    struct group_offset_record rec = {
        .topic = "t", .metadata = huge, .metadata_len = strlen(huge), .expire_timestamp = -1};
    assert_int_equal(group_log_encode_offset_value(&w, &rec), -1);
    kafka_writer_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_key_bytes),
        cmocka_unit_test(test_offset_value_v3_bytes),
        cmocka_unit_test(test_offset_value_v1_when_expiring),
        cmocka_unit_test(test_group_key_bytes),
        cmocka_unit_test(test_group_value_v3_bytes),
        cmocka_unit_test(test_group_value_v0_decodes),
        cmocka_unit_test(test_bad_input_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
