/* Drives the group coordinator through its C API with a fake clock, for the
 * unit tests of tests/unit/group/: join, sync and advance, and boxes that
 * capture the answers. Each test file gets its own copy of the clock. */
#ifndef CAIRN_TESTS_GROUP_TEST_DRIVER_H
#define CAIRN_TESTS_GROUP_TEST_DRIVER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_coordinator.h"
#include "protocol/generated/errors.h"

__attribute__((unused)) static int64_t fake_now;
static inline int64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

/* A captured JoinGroup answer. */
struct join_box {
    bool done;
    int16_t error;
    int32_t generation;
    char member_id[256];
    char leader[256];
    char protocol[64];
    size_t member_count;
    bool skip_assignment;
};

static inline void join_cb(void *arg, const struct group_join_result *r)
{
    struct join_box *b = arg;
    assert_false(b->done); /* exactly one answer per request */
    b->done = true;
    b->error = r->error_code;
    b->generation = r->generation_id;
    snprintf(b->member_id, sizeof b->member_id, "%s", r->member_id ? r->member_id : "");
    snprintf(b->leader, sizeof b->leader, "%s", r->leader ? r->leader : "");
    snprintf(b->protocol, sizeof b->protocol, "%s", r->protocol_name ? r->protocol_name : "");
    b->member_count = r->member_count;
    b->skip_assignment = r->skip_assignment;
}

struct sync_box {
    bool done;
    int16_t error;
    char assignment[64];
};

static inline void sync_cb(void *arg, const struct group_sync_result *r)
{
    struct sync_box *b = arg;
    assert_false(b->done);
    b->done = true;
    b->error = r->error_code;
    size_t n = r->assignment_len < sizeof b->assignment - 1 ? r->assignment_len : sizeof b->assignment - 1;
    if (n)
        memcpy(b->assignment, r->assignment, n);
    b->assignment[n] = '\0';
}

static inline struct group_coordinator *make_gc(int32_t initial_delay)
{
    struct group_coordinator_options o;
    group_coordinator_options_defaults(&o);
    o.manual_time = true;
    o.now_ms = fake_clock;
    o.initial_rebalance_delay_ms = initial_delay;
    fake_now = 1000000;
    struct group_coordinator *gc;
    assert_int_equal(group_coordinator_create(&o, &gc), 0);
    return gc;
}

__attribute__((unused)) static const struct group_protocol range_proto[] = {{"range", (const uint8_t *)"sub-A", 5}};
__attribute__((unused)) static const struct group_protocol rr_range[] = {{"roundrobin", (const uint8_t *)"r", 1},
                                                                         {"range", (const uint8_t *)"x", 1}};

__attribute__((unused)) static int16_t join_version = 9; /* JoinGroup version the helpers below speak */

static inline void join(struct group_coordinator *gc, const char *member, const char *instance,
                        const struct group_protocol *protos, size_t n, struct join_box *box)
{
    memset(box, 0, sizeof *box);
    struct group_join_params p = {
        .group_id = "g",
        .member_id = member,
        .group_instance_id = instance,
        .client_id = "c",
        .client_host = "/127.0.0.1",
        .protocol_type = "consumer",
        .protocols = protos,
        .protocol_count = n,
        .session_timeout_ms = 10000,
        .rebalance_timeout_ms = 30000,
        .require_known_member_id = instance == NULL,
        .supports_skip_assignment = join_version >= 9,
    };
    group_coordinator_join(gc, &p, join_cb, box);
}

static inline void do_sync(struct group_coordinator *gc, const char *member, int32_t gen,
                           const struct group_assignment *a, size_t n, struct sync_box *box)
{
    memset(box, 0, sizeof *box);
    struct group_sync_params p = {
        .group_id = "g", .generation_id = gen, .member_id = member, .assignments = a, .assignment_count = n};
    group_coordinator_sync(gc, &p, sync_cb, box);
}

static inline void advance(struct group_coordinator *gc, int64_t ms)
{
    fake_now += ms;
    group_coordinator_tick(gc);
}

/* Joins one dynamic member through MEMBER_ID_REQUIRED; returns its id in box. */
static inline void join_dynamic(struct group_coordinator *gc, struct join_box *box)
{
    join(gc, "", NULL, range_proto, 1, box);
    assert_true(box->done);
    assert_int_equal(box->error, KAFKA_ERR_MEMBER_ID_REQUIRED);
    char id[256];
    snprintf(id, sizeof id, "%s", box->member_id);
    assert_true(strlen(id) > 2);
    join(gc, id, NULL, range_proto, 1, box);
}

#endif
