/* Partition reassignment through the store: the records a start writes
 * (replicas target-first, adding, removing, partition epoch + 1), their
 * survival over a reopen (replay and snapshot), the completion when
 * AlterPartition brings every adding replica into the ISR (a removed
 * leader replaced at a new leader epoch), an immediate completion when
 * nothing is added, a cancel, Kafka's errors, the leader-epoch bump
 * when a replica leaves the set, and KIP-860's kept replication factor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_alter_partition.h"
#include "metadata/metadata_reassign.h"
#include "metadata/metadata_store.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

static int setup(void **state)
{
    struct fixture *f = fixture_new("/tmp/cairn-reassign-XXXXXX");
    if (!f)
        return -1;
    open_store(f);
    char err[256] = "";
    for (int32_t id = 2; id <= 4; id++) {
        struct metadata_endpoint ep = {"PLAINTEXT", "localhost", (uint16_t)(9090 + id), 0};
        int64_t epoch = -1;
        if (metadata_register_broker(f->store, id, &ep, 1, NULL, NULL, false, &epoch, err, sizeof err) !=
            KAFKA_ERR_NONE)
            fail_msg("register %d: %s", (int)id, err);
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    return fixture_free(*state);
}

/* A partition's state, arrays copied. */
struct state {
    int32_t leader, leader_epoch, partition_epoch;
    int32_t replicas[8], isr[8], adding[8], removing[8];
    int32_t rn, in, an, mn;
};

static struct state get(struct metadata_store *store, const char *topic)
{
    const struct metadata_image *img = metadata_image_acquire(store);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, topic, strlen(topic));
    assert_non_null(t);
    const struct metadata_partition *p = metadata_topic_partition(t, 0);
    assert_non_null(p);
    struct state s = {.leader = p->leader, .leader_epoch = p->leader_epoch, .partition_epoch = p->partition_epoch};
    s.rn = p->replica_count;
    s.in = p->isr_count;
    s.an = p->adding_count;
    s.mn = p->removing_count;
    memcpy(s.replicas, p->replicas, (size_t)s.rn * sizeof(int32_t));
    memcpy(s.isr, p->isr, (size_t)s.in * sizeof(int32_t));
    if (s.an)
        memcpy(s.adding, p->adding, (size_t)s.an * sizeof(int32_t));
    if (s.mn)
        memcpy(s.removing, p->removing, (size_t)s.mn * sizeof(int32_t));
    metadata_image_release(img);
    return s;
}

static void expect_ids(const int32_t *got, int32_t n, const int32_t *want, int32_t wn)
{
    assert_int_equal(n, wn);
    for (int32_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}
#define EXPECT_IDS(got, n, ...)                                                                                        \
    expect_ids(got, n, (const int32_t[]){__VA_ARGS__}, (int32_t)(sizeof((int32_t[]){__VA_ARGS__}) / sizeof(int32_t)))

static void create(struct metadata_store *store, const char *name, int32_t *replicas, int32_t n)
{
    struct metadata_replica_assignment a = {0, replicas, n};
    char err[256] = "";
    assert_int_equal(metadata_create_topic(store, name, -1, -1, &a, 1, NULL, 0, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
}

/* One partition's reassignment (replicas NULL: cancel), refused when keep
 * and the replica count changes (KIP-860); its error. */
static int16_t reassign_rf(struct metadata_store *store, const char *topic, int32_t partition, const int32_t *replicas,
                           int32_t n, bool keep)
{
    struct metadata_reassignment it = {.topic = topic,
                                       .topic_len = strlen(topic),
                                       .partition_index = partition,
                                       .replicas = replicas,
                                       .replica_count = n,
                                       .keep_replication_factor = keep};
    char err[256] = "";
    assert_int_equal(metadata_alter_reassignments(store, &it, 1, err, sizeof err), KAFKA_ERR_NONE);
    if (it.error_code == KAFKA_ERR_INVALID_REPLICATION_FACTOR)
        assert_non_null(strstr(it.error_message, "The replication factor is changed from"));
    return it.error_code;
}

static int16_t reassign(struct metadata_store *store, const char *topic, int32_t partition, const int32_t *replicas,
                        int32_t n)
{
    return reassign_rf(store, topic, partition, replicas, n, false);
}

/* The leader's AlterPartition to isr; returns the answer. */
static struct metadata_isr_change alter_isr(struct metadata_store *store, const char *topic, const int32_t *ids,
                                            int32_t n)
{
    struct state s = get(store, topic);
    const struct metadata_image *img = metadata_image_acquire(store);
    struct kafka_uuid id = metadata_image_topic_by_name(img, topic, strlen(topic))->topic_id;
    int64_t epoch = metadata_image_broker(img, s.leader)->epoch;
    metadata_image_release(img);
    struct metadata_isr_member isr[8];
    for (int32_t i = 0; i < n; i++)
        isr[i] = (struct metadata_isr_member){ids[i], -1};
    struct metadata_isr_change c = {.topic_id = id,
                                    .partition_index = 0,
                                    .leader_epoch = s.leader_epoch,
                                    .partition_epoch = s.partition_epoch,
                                    .isr = isr,
                                    .isr_count = n};
    char err[256] = "";
    assert_int_equal(metadata_alter_partition(store, s.leader, epoch, 2, &c, 1, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
    return c;
}

static void test_reassignment_completes(void **state)
{
    struct fixture *f = *state;
    create(f->store, "t", (int32_t[]){1, 2, 3}, 3);
    struct state before = get(f->store, "t");
    assert_int_equal(before.leader, 1);
    assert_int_equal(reassign(f->store, "t", 0, (int32_t[]){2, 3, 4}, 3), KAFKA_ERR_NONE);
    struct state s = get(f->store, "t");
    EXPECT_IDS(s.replicas, s.rn, 2, 3, 4, 1);
    EXPECT_IDS(s.adding, s.an, 4);
    EXPECT_IDS(s.removing, s.mn, 1);
    EXPECT_IDS(s.isr, s.in, 1, 2, 3);
    assert_int_equal(s.leader, 1);
    assert_int_equal(s.leader_epoch, before.leader_epoch);
    assert_int_equal(s.partition_epoch, before.partition_epoch + 1);

    /* Replay (and the snapshot) keep the reassignment. */
    close_store(f);
    open_store(f);
    struct state again = get(f->store, "t");
    EXPECT_IDS(again.replicas, again.rn, 2, 3, 4, 1);
    EXPECT_IDS(again.adding, again.an, 4);
    EXPECT_IDS(again.removing, again.mn, 1);

    /* Retargeting counts from the original replicas. */
    assert_int_equal(reassign(f->store, "t", 0, (int32_t[]){2, 3, 4}, 3), KAFKA_ERR_NONE);
    s = get(f->store, "t");
    EXPECT_IDS(s.replicas, s.rn, 2, 3, 4, 1);
    EXPECT_IDS(s.adding, s.an, 4);

    /* Not every adding replica in sync yet: nothing completes. */
    alter_isr(f->store, "t", (int32_t[]){1, 2}, 2);
    s = get(f->store, "t");
    assert_int_equal(s.an, 1);
    /* Broker 4 joins: the reassignment completes in the same record and
     * the removed leader hands over to the target's first in-sync replica. */
    struct metadata_isr_change c = alter_isr(f->store, "t", (int32_t[]){1, 2, 4}, 3);
    s = get(f->store, "t");
    EXPECT_IDS(s.replicas, s.rn, 2, 3, 4);
    EXPECT_IDS(s.isr, s.in, 2, 4);
    assert_int_equal(s.an, 0);
    assert_int_equal(s.mn, 0);
    assert_int_equal(s.leader, 2);
    assert_int_equal(s.leader_epoch, before.leader_epoch + 1);
    assert_int_equal(c.leader, 2);
    assert_int_equal(c.new_leader_epoch, s.leader_epoch);
    assert_int_equal(c.new_partition_epoch, s.partition_epoch);
    close_store(f);
    open_store(f);
    again = get(f->store, "t");
    EXPECT_IDS(again.replicas, again.rn, 2, 3, 4);
    assert_int_equal(again.an + again.mn, 0);
}

static void test_removal_only_completes_at_once(void **state)
{
    struct fixture *f = *state;
    create(f->store, "r", (int32_t[]){1, 2, 3}, 3);
    struct state before = get(f->store, "r");
    assert_int_equal(reassign(f->store, "r", 0, (int32_t[]){3, 2}, 2), KAFKA_ERR_NONE);
    struct state s = get(f->store, "r");
    EXPECT_IDS(s.replicas, s.rn, 3, 2);
    EXPECT_IDS(s.isr, s.in, 2, 3);
    assert_int_equal(s.an + s.mn, 0);
    assert_int_equal(s.leader, 3); /* the first of the target in sync */
    assert_int_equal(s.partition_epoch, before.partition_epoch + 1);
    /* The same assignment again writes nothing. */
    assert_int_equal(reassign(f->store, "r", 0, (int32_t[]){3, 2}, 2), KAFKA_ERR_NONE);
    assert_int_equal(get(f->store, "r").partition_epoch, s.partition_epoch);
}

static void test_cancel_and_errors(void **state)
{
    struct fixture *f = *state;
    create(f->store, "c", (int32_t[]){1, 2, 3}, 3);
    assert_int_equal(reassign(f->store, "c", 0, NULL, 0), KAFKA_ERR_NO_REASSIGNMENT_IN_PROGRESS);
    assert_int_equal(reassign(f->store, "nope", 0, (int32_t[]){1}, 1), KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(reassign(f->store, "c", 3, (int32_t[]){1}, 1), KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(reassign(f->store, "c", 0, (int32_t[]){1}, 0), KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT);
    assert_int_equal(reassign(f->store, "c", 0, (int32_t[]){1, 2, 1}, 3), KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT);
    assert_int_equal(reassign(f->store, "c", 0, (int32_t[]){1, 2, 9}, 3), KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT);
    assert_int_equal(reassign(f->store, "c", 0, (int32_t[]){1, -1}, 2), KAFKA_ERR_INVALID_REPLICA_ASSIGNMENT);
    struct state before = get(f->store, "c");
    assert_int_equal(before.partition_epoch, get(f->store, "c").partition_epoch); /* errors wrote nothing */

    /* A move to {4, 2} waits for broker 4; cancelled, it is undone. */
    assert_int_equal(reassign(f->store, "c", 0, (int32_t[]){4, 2}, 2), KAFKA_ERR_NONE);
    struct state s = get(f->store, "c");
    EXPECT_IDS(s.replicas, s.rn, 4, 2, 1, 3);
    EXPECT_IDS(s.adding, s.an, 4);
    EXPECT_IDS(s.removing, s.mn, 1, 3);
    assert_int_equal(reassign(f->store, "c", 0, NULL, 0), KAFKA_ERR_NONE);
    s = get(f->store, "c");
    EXPECT_IDS(s.replicas, s.rn, 2, 1, 3); /* as Kafka: the original replicas, target order first */
    EXPECT_IDS(s.isr, s.in, 1, 2, 3);
    assert_int_equal(s.an + s.mn, 0);
    assert_int_equal(s.leader, 1);
    assert_int_equal(s.leader_epoch, before.leader_epoch + 1); /* broker 4 dropped: fenced */
    assert_int_equal(reassign(f->store, "c", 0, NULL, 0), KAFKA_ERR_NO_REASSIGNMENT_IN_PROGRESS);
}

/* Kafka's PartitionChangeBuilder: a replica leaving the replica set bumps
 * the leader epoch even when the leader stays, so the removed replica's
 * fetches at the old epoch are fenced; a set that only grows does not. */
static void test_removed_replica_bumps_leader_epoch(void **state)
{
    struct fixture *f = *state;
    /* Move 3 -> 4 under leader 1: the start only adds, the completion removes. */
    create(f->store, "e", (int32_t[]){1, 2, 3}, 3);
    struct state before = get(f->store, "e");
    assert_int_equal(reassign(f->store, "e", 0, (int32_t[]){1, 2, 4}, 3), KAFKA_ERR_NONE);
    struct state s = get(f->store, "e");
    assert_int_equal(s.leader_epoch, before.leader_epoch);
    struct metadata_isr_change c = alter_isr(f->store, "e", (int32_t[]){1, 2, 3, 4}, 4);
    s = get(f->store, "e");
    EXPECT_IDS(s.replicas, s.rn, 1, 2, 4);
    assert_int_equal(s.leader, 1);
    assert_int_equal(s.leader_epoch, before.leader_epoch + 1);
    assert_int_equal(s.partition_epoch, before.partition_epoch + 2);
    /* The leader learns the bumped epoch in the AlterPartition answer. */
    assert_int_equal(c.leader, 1);
    assert_int_equal(c.new_leader_epoch, s.leader_epoch);
    /* Replayed, the record bumps it again to the same value. */
    close_store(f);
    open_store(f);
    assert_int_equal(get(f->store, "e").leader_epoch, before.leader_epoch + 1);

    /* Removal only, completing at once, leader kept. */
    create(f->store, "h", (int32_t[]){1, 2, 3}, 3);
    before = get(f->store, "h");
    assert_int_equal(reassign(f->store, "h", 0, (int32_t[]){1, 2}, 2), KAFKA_ERR_NONE);
    s = get(f->store, "h");
    EXPECT_IDS(s.replicas, s.rn, 1, 2);
    assert_int_equal(s.leader, 1);
    assert_int_equal(s.leader_epoch, before.leader_epoch + 1);

    /* Growth only: no bump at the start or the completion. */
    create(f->store, "g", (int32_t[]){1, 2}, 2);
    before = get(f->store, "g");
    assert_int_equal(reassign(f->store, "g", 0, (int32_t[]){1, 2, 3}, 3), KAFKA_ERR_NONE);
    c = alter_isr(f->store, "g", (int32_t[]){1, 2, 3}, 3);
    s = get(f->store, "g");
    EXPECT_IDS(s.replicas, s.rn, 1, 2, 3);
    assert_int_equal(s.an + s.mn, 0);
    assert_int_equal(s.leader, 1);
    assert_int_equal(s.leader_epoch, before.leader_epoch);
    assert_int_equal(c.new_leader_epoch, before.leader_epoch);
}

/* KIP-860: with AllowReplicationFactorChange false a target must be as
 * long as the replica set the partition is headed for; nothing is written
 * for a refusal, and a cancel is never refused. */
static void test_replication_factor_kept(void **state)
{
    struct fixture *f = *state;
    create(f->store, "k", (int32_t[]){1, 2, 3}, 3);
    struct state before = get(f->store, "k");
    assert_int_equal(reassign_rf(f->store, "k", 0, (int32_t[]){2, 3}, 2, true), KAFKA_ERR_INVALID_REPLICATION_FACTOR);
    assert_int_equal(reassign_rf(f->store, "k", 0, (int32_t[]){1, 2, 3, 4}, 4, true),
                     KAFKA_ERR_INVALID_REPLICATION_FACTOR);
    assert_int_equal(get(f->store, "k").partition_epoch, before.partition_epoch);
    /* Same count, other brokers: under way as {2, 3, 4} with 1 removing. */
    assert_int_equal(reassign_rf(f->store, "k", 0, (int32_t[]){2, 3, 4}, 3, true), KAFKA_ERR_NONE);
    struct state s = get(f->store, "k");
    EXPECT_IDS(s.replicas, s.rn, 2, 3, 4, 1);
    /* Counted against where it is headed (3), not its 4 replicas now. */
    assert_int_equal(reassign_rf(f->store, "k", 0, (int32_t[]){2, 3, 4, 1}, 4, true),
                     KAFKA_ERR_INVALID_REPLICATION_FACTOR);
    assert_int_equal(reassign_rf(f->store, "k", 0, (int32_t[]){3, 4, 2}, 3, true), KAFKA_ERR_NONE);
    assert_int_equal(reassign_rf(f->store, "k", 0, NULL, 0, true), KAFKA_ERR_NONE);
    /* Allowed, the same shrink goes through. */
    assert_int_equal(reassign_rf(f->store, "k", 0, (int32_t[]){2, 3}, 2, false), KAFKA_ERR_NONE);
    s = get(f->store, "k");
    EXPECT_IDS(s.replicas, s.rn, 2, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reassignment_completes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removal_only_completes_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_removed_replica_bumps_leader_epoch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replication_factor_kept, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
