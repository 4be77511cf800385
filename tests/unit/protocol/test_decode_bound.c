/* Decoding a request frame, accepted or rejected, must keep the arena within
 * BOUND_K * frame length + BOUND_C bytes, for every request API and every
 * version in the generated API table. Hostile frames: a valid header, then a
 * valid body cut at every offset and followed by an array count that claims
 * one element per 1..32 remaining bytes (int32 and compact forms) with zero
 * bytes behind it; random bodies; and every truncation of a valid body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "protocol/messages.h"

#include "roundtrip_cases.h"

/* Array counts are refused past what the bytes left (less those the
 * enclosing arrays still need) can hold, so the arena holds at most the
 * densest element's decoded-to-encoded ratio (about 19, OffsetFetch v8's
 * group) per frame byte, plus the arena's own slack (under 2 * used +
 * 64 KiB): see docs/architecture.md "Decoder memory bound". Before that
 * OffsetFetch v8 reached 56. */
#define BOUND_K 32
#define BOUND_C (128 * 1024)

#define SWEEP_FRAME (16 * 1024)
#define BIG_FRAME (1024 * 1024)
#define PAIR_FRAME (16 * 1024)
#define RANDOM_BODIES 8

struct worst {
    double ratio;
    size_t high_water, frame_len;
    const char *api;
    int16_t version;
    size_t offset;
    unsigned divisor;
    bool compact;
};

static struct worst worst_seen;

/* Decodes header and body as the broker does; returns the arena high-water
 * mark. */
static size_t decode_frame(const struct kafka_api_desc *desc, int16_t version, const uint8_t *frame, size_t len)
{
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct kafka_reader r;
    kafka_reader_init(&r, frame, len);
    struct request_header header;
    if (request_header_decode(&header, &r, kafka_request_header_version(desc->api_key, version), &arena) == 0) {
        void *msg = kafka_arena_alloc(&arena, desc->request_size_of);
        assert_non_null(msg);
        (void)desc->request_decode(msg, &r, version, &arena);
    }
    size_t hw = kafka_arena_high_water(&arena);
    kafka_arena_free(&arena);
    return hw;
}

static void check_bound(const struct kafka_api_desc *desc, int16_t version, const uint8_t *frame, size_t len,
                        size_t offset, unsigned divisor, bool compact)
{
    size_t hw = decode_frame(desc, version, frame, len);
    double ratio = (double)hw / (double)len;
    /* Short frames are all constant; the ratio speaks of the full-size ones. */
    if (len >= PAIR_FRAME && ratio > worst_seen.ratio) {
        struct worst w = {ratio, hw, len, desc->name, version, offset, divisor, compact};
        worst_seen = w;
    }
    if (hw > (size_t)BOUND_K * len + BOUND_C)
        fail_msg("%s v%d: %zu arena bytes for a %zu-byte frame (count at body offset %zu, 1 per %u bytes, %s)",
                 desc->name, version, hw, len, offset, divisor, compact ? "compact" : "int32");
}

static size_t encode_header(const struct kafka_api_desc *desc, int16_t version, uint8_t *out, size_t cap)
{
    struct request_header h;
    request_header_init(&h);
    h.request_api_key = desc->api_key;
    h.request_api_version = version;
    h.correlation_id = 7;
    h.client_id = kafka_str_from_cstr("bound");
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 64), 0);
    assert_int_equal(request_header_encode(&h, &w, kafka_request_header_version(desc->api_key, version)), 0);
    assert_true(w.len <= cap);
    size_t n = w.len;
    memcpy(out, w.buf, n);
    kafka_writer_free(&w);
    return n;
}

/* A valid body with content in every array the fill functions reach. */
static size_t encode_valid_body(const struct kafka_api_desc *desc, int16_t version, uint64_t seed,
                                struct kafka_writer *w)
{
    char case_name[96];
    snprintf(case_name, sizeof(case_name), "%sRequest", desc->name);
    const struct roundtrip_case *tc = NULL;
    for (size_t i = 0; i < sizeof(roundtrip_cases) / sizeof(roundtrip_cases[0]); i++)
        if (strcmp(roundtrip_cases[i].name, case_name) == 0)
            tc = &roundtrip_cases[i];
    if (!tc)
        fail_msg("no fill function for %s", case_name);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    void *m = roundtrip_case_fill(tc, version, seed, &arena);
    assert_non_null(m);
    assert_int_equal(tc->encode(m, w, version), 0);
    kafka_arena_free(&arena);
    return w->len;
}

static size_t put_count(uint8_t *p, uint32_t n, bool compact)
{
    if (!compact) {
        p[0] = (uint8_t)(n >> 24);
        p[1] = (uint8_t)(n >> 16);
        p[2] = (uint8_t)(n >> 8);
        p[3] = (uint8_t)n;
        return 4;
    }
    uint32_t v = n + 1;
    size_t i = 0;
    while (v >= 0x80) {
        p[i++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[i++] = (uint8_t)v;
    return i;
}

static const unsigned divisors[] = {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32};

/* Header, body[0, cut), a count claiming (frame_len - used) / divisor
 * elements, zeros up to frame_len. */
static size_t build_hostile(uint8_t *frame, size_t frame_len, size_t head_len, const uint8_t *body, size_t cut,
                            unsigned divisor, bool compact)
{
    if (cut)
        memcpy(frame + head_len, body, cut);
    size_t at = head_len + cut;
    uint8_t count[8];
    size_t guess = frame_len - at - (compact ? 3 : 4);
    size_t clen = put_count(count, (uint32_t)(guess / divisor), compact);
    memcpy(frame + at, count, clen);
    memset(frame + at + clen, 0, frame_len - at - clen);
    return frame_len;
}

static void sweep_version(const struct kafka_api_desc *desc, int16_t version, uint8_t *frame, size_t frame_len)
{
    size_t head_len = encode_header(desc, version, frame, 256);
    bool flexible = desc->flexible_min >= 0 && version >= desc->flexible_min;
    for (uint64_t seed = 1; seed <= 2; seed++) {
        struct kafka_writer w;
        assert_int_equal(kafka_writer_init(&w, 256), 0);
        size_t body_len = encode_valid_body(desc, version, seed * 7919u + (uint64_t)version, &w);
        assert_true(head_len + body_len + 8 < frame_len);
        for (size_t cut = 0; cut <= body_len; cut++) {
            for (int form = 0; form < (flexible ? 2 : 1); form++) {
                for (size_t d = 0; d < sizeof(divisors) / sizeof(divisors[0]); d++) {
                    size_t len = build_hostile(frame, frame_len, head_len, w.buf, cut, divisors[d], form == 1);
                    check_bound(desc, version, frame, len, cut, divisors[d], form == 1);
                }
            }
            /* The truncation itself. */
            if (cut)
                memcpy(frame + head_len, w.buf, cut);
            check_bound(desc, version, frame, head_len + cut, cut, 0, false);
        }
        kafka_writer_free(&w);
    }
    uint64_t state = 0x5eed0000u + (uint64_t)desc->api_key * 131u + (uint64_t)version;
    for (int i = 0; i < RANDOM_BODIES; i++) {
        for (size_t j = head_len; j < frame_len; j++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            frame[j] = (uint8_t)(state >> 56);
        }
        check_bound(desc, version, frame, frame_len, 0, 0, false);
    }
}

static void test_every_request_version_is_bounded(void **state)
{
    (void)state;
    uint8_t *frame = malloc(SWEEP_FRAME);
    assert_non_null(frame);
    int versions = 0;
    for (int i = 0; i < kafka_api_count(); i++) {
        const struct kafka_api_desc *desc = kafka_api_at(i);
        for (int16_t v = desc->min_version; v <= desc->max_version; v++) {
            sweep_version(desc, v, frame, SWEEP_FRAME);
            versions++;
        }
    }
    free(frame);
    assert_true(versions > 300);
    printf("decode bound: %d request versions; worst %.2f arena bytes per frame byte (%zu for %zu): "
           "%s v%d, count at body offset %zu, 1 per %u bytes, %s\n",
           versions, worst_seen.ratio, worst_seen.high_water, worst_seen.frame_len, worst_seen.api, worst_seen.version,
           worst_seen.offset, worst_seen.divisor, worst_seen.compact ? "compact" : "int32");
}

/* The case from the hardening issue: a 1 MiB OffsetFetch v8 whose Groups
 * count claims one group per byte. */
/* A BIG_FRAME buffer holding an OffsetFetch v8 header; *head_len its size. */
static uint8_t *offset_fetch_v8_frame(const struct kafka_api_desc **desc, size_t *head_len)
{
    *desc = kafka_api_lookup(9);
    assert_non_null(*desc);
    uint8_t *frame = malloc(BIG_FRAME);
    assert_non_null(frame);
    *head_len = encode_header(*desc, 8, frame, 256);
    return frame;
}

static void test_offset_fetch_v8_one_group_per_byte(void **state)
{
    (void)state;
    const struct kafka_api_desc *desc;
    size_t head_len;
    uint8_t *frame = offset_fetch_v8_frame(&desc, &head_len);
    /* One group per byte, then one per 3 (the fewest bytes a v8 group takes). */
    for (unsigned per = 1; per <= 3; per += 2) {
        size_t len = build_hostile(frame, BIG_FRAME, head_len, NULL, 0, per, true);
        size_t hw = decode_frame(desc, 8, frame, len);
        printf("OffsetFetch v8, %zu-byte frame, one group per %u bytes: %zu arena bytes\n", len, per, hw);
        assert_true(hw <= (size_t)BOUND_K * len + BOUND_C);
    }
    free(frame);
}

/* Claims at two levels: the body with the count at cut1 (one byte wide when
 * compact, four when not) replaced by a hostile one, then a second hostile
 * count at cut2, zeros behind. Only the latest version of each API, so the
 * quadratic walk stays quick. */
static void test_nested_claims_are_bounded(void **state)
{
    (void)state;
    static const unsigned pair_divisors[] = {1, 3, 4, 8};
    memset(&worst_seen, 0, sizeof(worst_seen));
    const size_t nd = sizeof(pair_divisors) / sizeof(pair_divisors[0]);
    uint8_t *frame = malloc(PAIR_FRAME);
    assert_non_null(frame);
    size_t frames = 0;
    for (int i = 0; i < kafka_api_count(); i++) {
        const struct kafka_api_desc *desc = kafka_api_at(i);
        int16_t v = desc->max_version;
        bool compact = desc->flexible_min >= 0 && v >= desc->flexible_min;
        size_t head_len = encode_header(desc, v, frame, 256);
        struct kafka_writer w;
        assert_int_equal(kafka_writer_init(&w, 256), 0);
        size_t body_len = encode_valid_body(desc, v, 11, &w);
        size_t width = compact ? 1 : 4;
        for (size_t cut1 = 0; cut1 + width <= body_len; cut1++) {
            for (size_t cut2 = cut1 + width; cut2 <= body_len; cut2++) {
                for (size_t d1 = 0; d1 < nd; d1++) {
                    for (size_t d2 = 0; d2 < nd; d2++) {
                        uint8_t *p = frame + head_len;
                        memcpy(p, w.buf, cut1);
                        p += cut1;
                        size_t left = PAIR_FRAME - (size_t)(p - frame);
                        p += put_count(p, (uint32_t)(left / pair_divisors[d1]), compact);
                        memcpy(p, w.buf + cut1 + width, cut2 - cut1 - width);
                        p += cut2 - cut1 - width;
                        left = PAIR_FRAME - (size_t)(p - frame) - 4;
                        p += put_count(p, (uint32_t)(left / pair_divisors[d2]), compact);
                        memset(p, 0, PAIR_FRAME - (size_t)(p - frame));
                        check_bound(desc, v, frame, PAIR_FRAME, cut2, pair_divisors[d2], compact);
                        frames++;
                    }
                }
            }
        }
        kafka_writer_free(&w);
    }
    free(frame);
    printf("nested claims: %zu frames; worst so far %.2f arena bytes per frame byte: %s v%d\n", frames,
           worst_seen.ratio, worst_seen.api, worst_seen.version);
}

/* OffsetFetch v8 with both the Groups count and the first group's Topics
 * count claiming all the bytes behind them. */
static void test_offset_fetch_v8_nested_claims(void **state)
{
    (void)state;
    const struct kafka_api_desc *desc;
    size_t at;
    uint8_t *frame = offset_fetch_v8_frame(&desc, &at);
    at += put_count(frame + at, (uint32_t)((BIG_FRAME - at - 3) / 3), true);
    frame[at++] = 1; /* GroupId "" */
    size_t topics_at = at;
    at += put_count(frame + at, (uint32_t)((BIG_FRAME - at - 3) / 3), true);
    memset(frame + at, 0, BIG_FRAME - at);
    size_t hw = decode_frame(desc, 8, frame, BIG_FRAME);
    /* The same frame with no topics in the first group: the groups alone. */
    memset(frame + topics_at, 0, at - topics_at);
    frame[topics_at] = 1;
    size_t groups_only = decode_frame(desc, 8, frame, BIG_FRAME);
    printf("OffsetFetch v8, %d-byte frame, groups and topics claiming every byte: %zu arena bytes "
           "(groups alone %zu)\n",
           BIG_FRAME, hw, groups_only);
    free(frame);
    /* The topics may not claim the bytes the later groups need. */
    assert_true(hw <= groups_only + BOUND_C);
    assert_true(hw <= (size_t)BOUND_K * BIG_FRAME + BOUND_C);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offset_fetch_v8_one_group_per_byte),
        cmocka_unit_test(test_offset_fetch_v8_nested_claims),
        cmocka_unit_test(test_every_request_version_is_bounded),
        cmocka_unit_test(test_nested_claims_are_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
