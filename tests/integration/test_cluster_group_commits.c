/* What the group coordinator holds in memory after a write that failed to
 * replicate. With the followers of the group's __consumer_offsets
 * partition stopped, an OffsetCommit and a TxnOffsetCommit each wait
 * offsets.commit.timeout.ms and are answered COORDINATOR_NOT_AVAILABLE;
 * the coordinator must then answer OffsetFetch as if they had not
 * happened: the previous committed offset, and (require_stable) no pending
 * transactional offset left behind for a later COMMIT marker to apply. Once
 * the followers run again, both kinds of commit take effect as usual. The
 * leader's SyncGroup likewise waits for its group record and fails the
 * generation when that record is not replicated in time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cluster_coordinator_helpers.h"
#include "cluster_harness.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"

#define TOPIC "group-commits"
#define PRODUCER_ID 4242

struct fetch_answer {
    bool answered;
    int16_t error;     /* the partition's */
    int64_t committed; /* -1: none */
};

static void fetch_parse(const struct net_client_result *result, void *arg)
{
    struct fetch_answer *a = arg;
    const struct offset_fetch_response *m = result->response;
    if (result->status != NET_CLIENT_OK || !m || m->error_code != KAFKA_ERR_NONE || m->topics_count != 1 ||
        m->topics[0].partitions_count != 1)
        return;
    a->answered = true;
    a->error = m->topics[0].partitions[0].error_code;
    a->committed = m->topics[0].partitions[0].committed_offset;
}

/* OffsetFetch v7 of partition 0 of TOPIC at node. */
static struct fetch_answer fetch_offset(struct cluster *c, int node, const char *group, bool require_stable)
{
    int32_t partition = 0;
    struct offset_fetch_request_offset_fetch_request_topic t;
    offset_fetch_request_offset_fetch_request_topic_init(&t);
    t.name = kafka_str_from_cstr(TOPIC);
    t.partition_indexes = &partition;
    t.partition_indexes_count = 1;
    struct offset_fetch_request m;
    offset_fetch_request_init(&m);
    m.group_id = kafka_str_from_cstr(group);
    m.topics = &t;
    m.topics_count = 1;
    m.require_stable = require_stable;
    struct fetch_answer a = {0};
    client_call(c->client, node, 9, 7, &m, 20000, fetch_parse, &a);
    return a;
}

static void txn_commit_parse(const struct net_client_result *result, void *arg)
{
    int *code = arg;
    const struct txn_offset_commit_response *m = result->response;
    if (result->status == NET_CLIENT_OK && m && m->topics_count == 1 && m->topics[0].partitions_count == 1)
        *code = m->topics[0].partitions[0].error_code;
}

/* TxnOffsetCommit v2 of partition 0 of TOPIC for PRODUCER_ID (the group
 * coordinator takes the producer as given): its error, -1 when unanswered. */
static int txn_commit_offset(struct cluster *c, int node, const char *group, int64_t offset)
{
    struct txn_offset_commit_request_txn_offset_commit_request_partition part;
    txn_offset_commit_request_txn_offset_commit_request_partition_init(&part);
    part.partition_index = 0;
    part.committed_offset = offset;
    struct txn_offset_commit_request_txn_offset_commit_request_topic t;
    txn_offset_commit_request_txn_offset_commit_request_topic_init(&t);
    t.name = kafka_str_from_cstr(TOPIC);
    t.partitions = &part;
    t.partitions_count = 1;
    struct txn_offset_commit_request m;
    txn_offset_commit_request_init(&m);
    m.transactional_id = kafka_str_from_cstr("group-commits-txn");
    m.group_id = kafka_str_from_cstr(group);
    m.producer_id = PRODUCER_ID;
    m.producer_epoch = 0;
    m.topics = &t;
    m.topics_count = 1;
    int code = -1;
    client_call(c->client, node, 28, 2, &m, 20000, txn_commit_parse, &code);
    return code;
}

/* Retries a commit (plain or transactional) until it succeeds, for up to
 * 60 s: a follower just resumed may take a while to fetch again. */
static void commit_until_ok(struct cluster *c, int node, const char *group, int64_t offset, bool transactional)
{
    long long deadline = harness_now_ms() + 60000;
    int code;
    while ((code = transactional ? txn_commit_offset(c, node, group, offset)
                                 : commit_offset(c, node, group, TOPIC, offset)) != KAFKA_ERR_NONE &&
           harness_now_ms() < deadline)
        usleep(200 * 1000);
    if (code != KAFKA_ERR_NONE)
        fail_msg("%s commit of %lld still answered %d after 60 s", transactional ? "a transactional" : "a plain",
                 (long long)offset, code);
}

static void signal_followers(struct cluster *c, int32_t coordinator, int sig)
{
    for (int n = 1; n <= N; n++)
        if (n != coordinator)
            assert_int_equal(kill(c->nodes[n - 1].pid, sig), 0);
}

struct join_answer {
    int16_t error; /* -1: unanswered */
    int32_t generation;
    char member_id[128];
    char leader[128];
};

static void join_parse(const struct net_client_result *result, void *arg)
{
    struct join_answer *a = arg;
    const struct join_group_response *m = result->response;
    if (result->status != NET_CLIENT_OK || !m)
        return;
    a->error = m->error_code;
    a->generation = m->generation_id;
    snprintf(a->member_id, sizeof a->member_id, "%.*s", m->member_id.len > 0 ? (int)m->member_id.len : 0,
             m->member_id.data ? m->member_id.data : "");
    snprintf(a->leader, sizeof a->leader, "%.*s", m->leader.len > 0 ? (int)m->leader.len : 0,
             m->leader.data ? m->leader.data : "");
}

/* JoinGroup v3 (no MEMBER_ID_REQUIRED round) of a one-member group. */
static struct join_answer join_group(struct cluster *c, int node, const char *group, const char *member_id)
{
    struct join_group_request_join_group_request_protocol proto;
    join_group_request_join_group_request_protocol_init(&proto);
    proto.name = kafka_str_from_cstr("range");
    proto.metadata = (struct kafka_bytes){.data = (const uint8_t *)"sub", .len = 3};
    struct join_group_request m;
    join_group_request_init(&m);
    m.group_id = kafka_str_from_cstr(group);
    m.session_timeout_ms = 30000;
    m.rebalance_timeout_ms = 30000;
    m.member_id = kafka_str_from_cstr(member_id);
    m.protocol_type = kafka_str_from_cstr("consumer");
    m.protocols = &proto;
    m.protocols_count = 1;
    struct join_answer a = {.error = -1};
    client_call(c->client, node, 11, 3, &m, 20000, join_parse, &a);
    return a;
}

struct sync_answer {
    int16_t error; /* -1: unanswered */
    char assignment[32];
};

static void sync_parse(const struct net_client_result *result, void *arg)
{
    struct sync_answer *a = arg;
    const struct sync_group_response *m = result->response;
    if (result->status != NET_CLIENT_OK || !m)
        return;
    a->error = m->error_code;
    snprintf(a->assignment, sizeof a->assignment, "%.*s", m->assignment.len > 0 ? (int)m->assignment.len : 0,
             m->assignment.data ? (const char *)m->assignment.data : "");
}

/* SyncGroup v2 of the leader, assigning itself `assignment`. */
static struct sync_answer sync_group(struct cluster *c, int node, const char *group, const struct join_answer *j,
                                     const char *assignment)
{
    struct sync_group_request_sync_group_request_assignment a;
    sync_group_request_sync_group_request_assignment_init(&a);
    a.member_id = kafka_str_from_cstr(j->member_id);
    a.assignment = (struct kafka_bytes){.data = (const uint8_t *)assignment, .len = (int32_t)strlen(assignment)};
    struct sync_group_request m;
    sync_group_request_init(&m);
    m.group_id = kafka_str_from_cstr(group);
    m.generation_id = j->generation;
    m.member_id = kafka_str_from_cstr(j->member_id);
    m.assignments = &a;
    m.assignments_count = 1;
    struct sync_answer s = {.error = -1};
    client_call(c->client, node, 14, 2, &m, 20000, sync_parse, &s);
    return s;
}

/* Joins (as member_id, "" for a new member) until answered NONE, for up
 * to 60 s. */
static struct join_answer join_until_ok(struct cluster *c, int node, const char *group, const char *member_id)
{
    long long deadline = harness_now_ms() + 60000;
    struct join_answer j;
    while ((j = join_group(c, node, group, member_id)).error != KAFKA_ERR_NONE && harness_now_ms() < deadline)
        usleep(200 * 1000);
    if (j.error != KAFKA_ERR_NONE)
        fail_msg("JoinGroup still answered %d after 60 s", j.error);
    assert_string_equal(j.leader, j.member_id);
    return j;
}

/* The followers are stopped only around the two failing commits and the
 * fetches that check them; every assertion comes after SIGCONT. */
static void test_failed_commits_leave_memory_unchanged(void **state)
{
    (void)state;
    static const char *const extra[] = {"offsets.commit.timeout.ms=2000", "group.initial.rebalance.delay.ms=0", NULL};
    const char *group = "unreplicated-commit";
    struct cluster c;
    int32_t controller = -1, coordinator = -1;
    start_with_replicas(&c, extra, 0, group, 2, &controller, &coordinator);
    assert_int_equal(create_topic(&c, controller, TOPIC, 1), KAFKA_ERR_NONE);
    wait_view(&c, coordinator, ALL, TOPIC, 1, 20000);
    wait_full_isr(&c, "__consumer_offsets", group, coordinator);
    commit_until_ok(&c, coordinator, group, 5, false);
    struct fetch_answer before = fetch_offset(&c, coordinator, group, false);
    assert_true(before.answered);
    assert_int_equal(before.committed, 5);

    signal_followers(&c, coordinator, SIGSTOP);
    long long start = harness_now_ms();
    int plain = commit_offset(&c, coordinator, group, TOPIC, 7);
    long long took = harness_now_ms() - start;
    struct fetch_answer after_plain = fetch_offset(&c, coordinator, group, false);
    int txn = txn_commit_offset(&c, coordinator, group, 9);
    struct fetch_answer after_txn = fetch_offset(&c, coordinator, group, true);
    signal_followers(&c, coordinator, SIGCONT);

    if (plain != KAFKA_ERR_COORDINATOR_NOT_AVAILABLE)
        fail_msg("a commit with the followers stopped was answered %d after %lld ms", plain, took);
    assert_true(took >= 1900);
    assert_true(after_plain.answered);
    if (after_plain.committed != 5)
        fail_msg("after a commit of 7 answered COORDINATOR_NOT_AVAILABLE, OffsetFetch gave %lld, not 5",
                 (long long)after_plain.committed);
    assert_int_equal(txn, KAFKA_ERR_COORDINATOR_NOT_AVAILABLE);
    assert_true(after_txn.answered);
    /* A pending transactional offset would answer UNSTABLE_OFFSET_COMMIT. */
    if (after_txn.error != KAFKA_ERR_NONE)
        fail_msg("after a failed TxnOffsetCommit, a require_stable OffsetFetch answered %d", after_txn.error);
    assert_int_equal(after_txn.committed, 5);

    /* The followers back: each kind of commit takes effect again. */
    commit_until_ok(&c, coordinator, group, 8, false);
    struct fetch_answer later = fetch_offset(&c, coordinator, group, false);
    assert_true(later.answered);
    assert_int_equal(later.committed, 8);
    commit_until_ok(&c, coordinator, group, 10, true);
    struct fetch_answer pending = fetch_offset(&c, coordinator, group, true);
    assert_true(pending.answered);
    assert_int_equal(pending.error, KAFKA_ERR_UNSTABLE_OFFSET_COMMIT);
    struct fetch_answer unstable_ok = fetch_offset(&c, coordinator, group, false);
    assert_int_equal(unstable_ok.committed, 8);

    /* SyncGroup of the leader: answered only once the group record with
     * the assignment is replicated (Kafka's storeGroup), so with the
     * followers stopped it fails after offsets.commit.timeout.ms. */
    char sync_group_id[64];
    for (int i = 0;; i++) { /* a new group in the same partition */
        snprintf(sync_group_id, sizeof sync_group_id, "unreplicated-sync-%d", i);
        if (kafka_partition_for(sync_group_id, 3) == kafka_partition_for(group, 3))
            break;
    }
    wait_full_isr(&c, "__consumer_offsets", sync_group_id, coordinator);
    struct join_answer j = join_until_ok(&c, coordinator, sync_group_id, "");
    signal_followers(&c, coordinator, SIGSTOP);
    start = harness_now_ms();
    struct sync_answer failed = sync_group(&c, coordinator, sync_group_id, &j, "first");
    took = harness_now_ms() - start;
    signal_followers(&c, coordinator, SIGCONT);
    if (failed.error != KAFKA_ERR_COORDINATOR_NOT_AVAILABLE)
        fail_msg("SyncGroup with the followers stopped was answered %d after %lld ms, not "
                 "COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms",
                 failed.error, took);
    assert_true(took >= 1900);
    /* The generation failed: the member rejoins and the next one completes. */
    long long deadline = harness_now_ms() + 60000;
    struct sync_answer ok = {.error = -1};
    while (harness_now_ms() < deadline) {
        j = join_until_ok(&c, coordinator, sync_group_id, j.member_id);
        ok = sync_group(&c, coordinator, sync_group_id, &j, "second");
        if (ok.error == KAFKA_ERR_NONE)
            break;
        usleep(200 * 1000);
    }
    assert_int_equal(ok.error, KAFKA_ERR_NONE);
    assert_string_equal(ok.assignment, "second");
    cluster_stop(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failed_commits_leave_memory_unchanged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
