/* ElectLeaders and the automatic rebalance through the store: Kafka's
 * per-partition results for PREFERRED and UNCLEAN, the null list reporting
 * all but ELECTION_NOT_NEEDED, the epochs the loader gives the new
 * leaders, and the per-broker imbalance percentage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_alter_partition.h"
#include "metadata/metadata_elect_leaders.h"
#include "metadata/metadata_store.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

static int setup(void **state)
{
    struct fixture *f = fixture_new("/tmp/cairn-elect-XXXXXX");
    if (!f)
        return -1;
    open_store(f);
    char err[256] = "";
    for (int32_t id = 2; id <= 3; id++) {
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

static struct metadata_partition part(struct metadata_store *store, const char *topic, int32_t i)
{
    const struct metadata_image *img = metadata_image_acquire(store);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, topic, strlen(topic));
    assert_non_null(t);
    const struct metadata_partition *p = metadata_topic_partition(t, i);
    assert_non_null(p);
    struct metadata_partition copy = *p; /* scalars only: the arrays go with the image */
    copy.replicas = NULL;
    copy.isr = NULL;
    metadata_image_release(img);
    return copy;
}

static void set_fenced(struct metadata_store *store, int32_t id, bool fenced)
{
    const struct metadata_image *img = metadata_image_acquire(store);
    int64_t epoch = metadata_image_broker(img, id)->epoch;
    metadata_image_release(img);
    char err[256] = "";
    assert_int_equal(metadata_set_broker_fenced(store, id, epoch, fenced, err, sizeof err), KAFKA_ERR_NONE);
}

static void create(struct metadata_store *store, const char *name, int32_t partitions, int32_t *replicas, int32_t n)
{
    struct metadata_replica_assignment a[8];
    for (int32_t i = 0; i < partitions; i++)
        a[i] = (struct metadata_replica_assignment){i, replicas, n};
    char err[256] = "";
    assert_int_equal(metadata_create_topic(store, name, -1, -1, a, partitions, NULL, 0, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
}

/* The leader puts the ISR back to all three brokers (AlterPartition v2). */
static void grow_isr(struct metadata_store *store, const char *topic, int32_t i)
{
    struct metadata_partition p = part(store, topic, i);
    const struct metadata_image *img = metadata_image_acquire(store);
    struct kafka_uuid id = metadata_image_topic_by_name(img, topic, strlen(topic))->topic_id;
    int64_t leader_epoch_b = metadata_image_broker(img, p.leader)->epoch;
    metadata_image_release(img);
    struct metadata_isr_member isr[] = {{1, -1}, {2, -1}, {3, -1}};
    struct metadata_isr_change c = {.topic_id = id,
                                    .partition_index = i,
                                    .leader_epoch = p.leader_epoch,
                                    .partition_epoch = p.partition_epoch,
                                    .isr = isr,
                                    .isr_count = 3};
    char err[256] = "";
    assert_int_equal(metadata_alter_partition(store, p.leader, leader_epoch_b, 2, &c, 1, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
}

static int16_t elect(struct metadata_store *store, int8_t type, const char *topic, int32_t i)
{
    struct metadata_election_target t = {topic, strlen(topic), i, -1};
    char err[256] = "";
    assert_int_equal(metadata_elect_leaders(store, type, &t, 1, NULL, NULL, err, sizeof err), KAFKA_ERR_NONE);
    return t.error_code;
}

static void test_preferred(void **state)
{
    struct fixture *f = *state;
    create(f->store, "t", 1, (int32_t[]){2, 3, 1}, 3);
    assert_int_equal(elect(f->store, METADATA_ELECTION_PREFERRED, "t", 0), KAFKA_ERR_ELECTION_NOT_NEEDED);
    set_fenced(f->store, 2, true); /* 3 leads, 2 leaves the ISR */
    assert_int_equal(part(f->store, "t", 0).leader, 3);
    assert_int_equal(elect(f->store, METADATA_ELECTION_PREFERRED, "t", 0), KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE);
    set_fenced(f->store, 2, false); /* live, still out of the ISR */
    assert_int_equal(elect(f->store, METADATA_ELECTION_PREFERRED, "t", 0), KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE);
    grow_isr(f->store, "t", 0);
    struct metadata_partition before = part(f->store, "t", 0);
    assert_int_equal(elect(f->store, METADATA_ELECTION_PREFERRED, "t", 0), KAFKA_ERR_NONE);
    struct metadata_partition after = part(f->store, "t", 0);
    assert_int_equal(after.leader, 2);
    assert_int_equal(after.leader_epoch, before.leader_epoch + 1);
    assert_int_equal(after.partition_epoch, before.partition_epoch + 1);
    assert_int_equal(elect(f->store, METADATA_ELECTION_PREFERRED, "t", 0), KAFKA_ERR_ELECTION_NOT_NEEDED);
    assert_int_equal(elect(f->store, METADATA_ELECTION_UNCLEAN, "t", 0), KAFKA_ERR_ELECTION_NOT_NEEDED);
    assert_int_equal(elect(f->store, METADATA_ELECTION_PREFERRED, "t", 5), KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    assert_int_equal(elect(f->store, METADATA_ELECTION_PREFERRED, "nope", 0), KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    struct metadata_election_target t = {"t", 1, 0, -1};
    char err[256] = "";
    assert_int_equal(metadata_elect_leaders(f->store, 7, &t, 1, NULL, NULL, err, sizeof err),
                     KAFKA_ERR_INVALID_REQUEST);
}

struct reported {
    int n;
    char topic[8][16];
    int16_t error[8];
};

static void report(void *ctx, const char *topic, int32_t partition, int16_t error_code)
{
    (void)partition;
    struct reported *r = ctx;
    if (r->n < 8) {
        snprintf(r->topic[r->n], sizeof r->topic[0], "%s", topic);
        r->error[r->n++] = error_code;
    }
}

static void test_unclean_and_all(void **state)
{
    struct fixture *f = *state;
    create(f->store, "u", 1, (int32_t[]){2, 3}, 2);
    create(f->store, "v", 1, (int32_t[]){2}, 1);
    set_fenced(f->store, 3, true);  /* u: ISR {2} */
    set_fenced(f->store, 2, true);  /* u and v offline, 2 kept in their ISR */
    set_fenced(f->store, 3, false); /* 3 live outside u's ISR: no clean leader */
    assert_int_equal(part(f->store, "u", 0).leader, -1);
    int64_t imbalanced = -1, offline = -1;
    const struct metadata_image *img = metadata_image_acquire(f->store);
    metadata_leader_balance_counts(img, &imbalanced, &offline);
    metadata_image_release(img);
    assert_int_equal(offline, 2);
    assert_int_equal(imbalanced, 2);

    /* The null list: both reported (PREFERRED cannot help either). */
    struct reported r = {0};
    char err[256] = "";
    assert_int_equal(
        metadata_elect_leaders(f->store, METADATA_ELECTION_PREFERRED, NULL, 0, report, &r, err, sizeof err),
        KAFKA_ERR_NONE);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.error[0], KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE);
    assert_int_equal(r.error[1], KAFKA_ERR_PREFERRED_LEADER_NOT_AVAILABLE);

    assert_int_equal(elect(f->store, METADATA_ELECTION_UNCLEAN, "v", 0), KAFKA_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE);
    struct metadata_partition before = part(f->store, "u", 0);
    assert_int_equal(elect(f->store, METADATA_ELECTION_UNCLEAN, "u", 0), KAFKA_ERR_NONE);
    struct metadata_partition after = part(f->store, "u", 0);
    assert_int_equal(after.leader, 3);
    assert_int_equal(after.isr_count, 1);
    assert_int_equal(after.leader_epoch, before.leader_epoch + 1);
    assert_int_equal(elect(f->store, METADATA_ELECTION_UNCLEAN, "u", 0), KAFKA_ERR_ELECTION_NOT_NEEDED);

    /* UNCLEAN over every partition: only v, which still cannot lead. */
    memset(&r, 0, sizeof r);
    assert_int_equal(metadata_elect_leaders(f->store, METADATA_ELECTION_UNCLEAN, NULL, 0, report, &r, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.topic[0], "v");
    assert_int_equal(r.error[0], KAFKA_ERR_ELIGIBLE_LEADERS_NOT_AVAILABLE);
}

/* Broker 2 prefers r-0..3; fenced and back, it leads none. The rebalance
 * moves only partitions whose ISR has it, and only while its share of
 * preferred-but-not-led partitions is above the percentage. */
static void test_rebalance_percentage(void **state)
{
    struct fixture *f = *state;
    create(f->store, "r", 4, (int32_t[]){2, 3, 1}, 3);
    set_fenced(f->store, 2, true);
    set_fenced(f->store, 2, false);
    char err[256] = "";
    assert_int_equal(metadata_rebalance_leaders(f->store, 10, err, sizeof err), 0); /* 2 is in no ISR */
    grow_isr(f->store, "r", 0);
    assert_int_equal(metadata_rebalance_leaders(f->store, 10, err, sizeof err), 1); /* 4/4 > 10% */
    assert_int_equal(part(f->store, "r", 0).leader, 2);
    grow_isr(f->store, "r", 1);
    assert_int_equal(metadata_rebalance_leaders(f->store, 75, err, sizeof err), 0); /* 3/4 is not above 75% */
    assert_int_equal(part(f->store, "r", 1).leader, 3);
    assert_int_equal(metadata_rebalance_leaders(f->store, 74, err, sizeof err), 1);
    assert_int_equal(part(f->store, "r", 1).leader, 2);
    int64_t imbalanced = -1, offline = -1;
    const struct metadata_image *img = metadata_image_acquire(f->store);
    metadata_leader_balance_counts(img, &imbalanced, &offline);
    metadata_image_release(img);
    assert_int_equal(imbalanced, 2);
    assert_int_equal(offline, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_preferred, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unclean_and_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rebalance_percentage, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
