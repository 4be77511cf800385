/* Leader election on fencing and unfencing: the rules one partition follows
 * (metadata_elect_partition), and the store writing them in the fencing
 * batch, where the loader bumps the leader and partition epochs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_election.h"
#include "metadata/metadata_store.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

/* ---- one partition ---- */

struct live_set {
    unsigned mask; /* bit i: broker i is live */
};

static bool live(void *ctx, int32_t id)
{
    const struct live_set *l = ctx;
    return id >= 0 && id < 32 && (l->mask & (1u << id));
}

static struct metadata_partition partition(int32_t *replicas, int32_t rc, int32_t *isr, int32_t ic, int32_t leader)
{
    return (struct metadata_partition){.present = true,
                                       .partition_index = 4,
                                       .leader = leader,
                                       .replicas = replicas,
                                       .replica_count = rc,
                                       .isr = isr,
                                       .isr_count = ic};
}

static void assert_ids(const int32_t *got, int32_t n, const int32_t *want, int32_t wn)
{
    assert_int_equal(n, wn);
    for (int32_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}

/* The fenced leader leaves the ISR; the first live ISR member in replica
 * order (not ISR order) leads. */
static void test_fenced_leader_replaced_in_replica_order(void **state)
{
    (void)state;
    int32_t replicas[] = {1, 3, 2}, isr[] = {1, 2, 3}, buf[8];
    struct metadata_partition p = partition(replicas, 3, isr, 3, 1);
    struct live_set l = {(1u << 2) | (1u << 3)};
    struct metadata_partition_change c;
    assert_true(metadata_elect_partition(&p, 1, live, &l, false, &c, buf));
    assert_int_equal(c.partition_index, 4);
    assert_int_equal(c.leader, 3);
    assert_non_null(c.isr);
    assert_ids(c.isr, c.isr_count, (int32_t[]){2, 3}, 2);
}

/* A fenced follower leaves the ISR; the leader stays (-2: unchanged). */
static void test_fenced_follower_leaves_isr(void **state)
{
    (void)state;
    int32_t replicas[] = {1, 2, 3}, isr[] = {1, 2, 3}, buf[8];
    struct metadata_partition p = partition(replicas, 3, isr, 3, 1);
    struct live_set l = {(1u << 1) | (1u << 3)};
    struct metadata_partition_change c;
    assert_true(metadata_elect_partition(&p, 2, live, &l, false, &c, buf));
    assert_int_equal(c.leader, -2);
    assert_ids(c.isr, c.isr_count, (int32_t[]){1, 3}, 2);
}

/* The last ISR member stays in it when fenced; the partition is offline. */
static void test_last_isr_member_kept_and_offline(void **state)
{
    (void)state;
    int32_t replicas[] = {1, 2, 3}, isr[] = {2}, buf[8];
    struct metadata_partition p = partition(replicas, 3, isr, 1, 2);
    struct live_set l = {(1u << 1) | (1u << 3)};
    struct metadata_partition_change c;
    assert_true(metadata_elect_partition(&p, 2, live, &l, false, &c, buf));
    assert_int_equal(c.leader, -1);
    assert_null(c.isr); /* unchanged: still {2} */
}

/* Unclean election lets a live replica outside the ISR lead, alone in the ISR. */
static void test_unclean_elects_outside_isr(void **state)
{
    (void)state;
    int32_t replicas[] = {1, 2, 3}, isr[] = {2}, buf[8];
    struct metadata_partition p = partition(replicas, 3, isr, 1, 2);
    struct live_set l = {(1u << 3)};
    struct metadata_partition_change c;
    assert_true(metadata_elect_partition(&p, 2, live, &l, true, &c, buf));
    assert_int_equal(c.leader, 3);
    assert_ids(c.isr, c.isr_count, (int32_t[]){3}, 1);
    /* With nothing live, even unclean election leaves it offline. */
    l.mask = 0;
    assert_true(metadata_elect_partition(&p, 2, live, &l, true, &c, buf));
    assert_int_equal(c.leader, -1);
    assert_null(c.isr);
}

/* Unfencing: an offline partition gets back its ISR member as leader; a
 * replica outside the ISR does not lead unless unclean election is on; a
 * partition whose leader is live does not change. */
static void test_unfence_brings_isr_member_back(void **state)
{
    (void)state;
    int32_t replicas[] = {1, 2, 3}, isr[] = {2}, buf[8];
    struct metadata_partition p = partition(replicas, 3, isr, 1, -1);
    struct metadata_partition_change c;
    struct live_set only1 = {(1u << 1)};
    assert_false(metadata_elect_partition(&p, -1, live, &only1, false, &c, buf));
    struct live_set with2 = {(1u << 1) | (1u << 2)};
    assert_true(metadata_elect_partition(&p, -1, live, &with2, false, &c, buf));
    assert_int_equal(c.leader, 2);
    assert_null(c.isr);
    p.leader = 2;
    assert_false(metadata_elect_partition(&p, -1, live, &with2, false, &c, buf));
}

/* ---- through the store: the fencing batch and the loader ---- */

static int setup(void **state)
{
    struct fixture *f = fixture_new("/tmp/cairn-election-XXXXXX");
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

static const struct metadata_partition *part_of(const struct metadata_image *img, const char *topic, int32_t i)
{
    const struct metadata_topic *t = metadata_image_topic_by_name(img, topic, strlen(topic));
    assert_non_null(t);
    const struct metadata_partition *p = metadata_topic_partition(t, i);
    assert_non_null(p);
    return p;
}

static int64_t broker_epoch(struct metadata_store *store, int32_t id)
{
    const struct metadata_image *img = metadata_image_acquire(store);
    int64_t e = metadata_image_broker(img, id)->epoch;
    metadata_image_release(img);
    return e;
}

static void set_fenced(struct metadata_store *store, int32_t id, bool fenced)
{
    char err[256] = "";
    assert_int_equal(metadata_set_broker_fenced(store, id, broker_epoch(store, id), fenced, err, sizeof err),
                     KAFKA_ERR_NONE);
}

static void test_store_moves_leaders_on_fence_and_unfence(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    int32_t r0[] = {2, 3, 1};
    struct metadata_replica_assignment a = {0, r0, 3};
    assert_int_equal(metadata_create_topic(f->store, "t", -1, -1, &a, 1, NULL, 0, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    const struct metadata_partition *p = part_of(img, "t", 0);
    assert_int_equal(p->leader, 2);
    int32_t le = p->leader_epoch, pe = p->partition_epoch;
    int64_t before = img->last_offset;
    metadata_image_release(img);

    /* Fencing the leader: one batch (fence + change), new leader 3 from the ISR. */
    set_fenced(f->store, 2, true);
    img = metadata_image_acquire(f->store);
    p = part_of(img, "t", 0);
    assert_int_equal(img->last_offset, before + 2);
    assert_int_equal(p->leader, 3);
    assert_int_equal(p->leader_epoch, le + 1);
    assert_int_equal(p->partition_epoch, pe + 1);
    assert_ids(p->isr, p->isr_count, (int32_t[]){3, 1}, 2);
    metadata_image_release(img);

    /* Unfenced, 2 does not rejoin the ISR by itself (AlterPartition's job). */
    set_fenced(f->store, 2, false);
    img = metadata_image_acquire(f->store);
    p = part_of(img, "t", 0);
    assert_int_equal(p->leader, 3);
    assert_int_equal(p->leader_epoch, le + 1);
    assert_ids(p->isr, p->isr_count, (int32_t[]){3, 1}, 2);
    metadata_image_release(img);

    /* 3 and then 1 fenced: offline with 1 kept as the last ISR member. */
    set_fenced(f->store, 3, true);
    set_fenced(f->store, 1, true);
    img = metadata_image_acquire(f->store);
    p = part_of(img, "t", 0);
    assert_int_equal(p->leader, -1);
    assert_int_equal(p->leader_epoch, le + 3);
    assert_int_equal(p->partition_epoch, pe + 3);
    assert_ids(p->isr, p->isr_count, (int32_t[]){1}, 1);
    metadata_image_release(img);

    /* 2 is live but not in the ISR: still offline (unclean election off). */
    img = metadata_image_acquire(f->store);
    assert_false(metadata_image_broker(img, 2)->fenced);
    metadata_image_release(img);
    set_fenced(f->store, 3, false);
    img = metadata_image_acquire(f->store);
    assert_int_equal(part_of(img, "t", 0)->leader, -1);
    metadata_image_release(img);

    /* 1, the ISR member, unfenced: it leads again. */
    set_fenced(f->store, 1, false);
    img = metadata_image_acquire(f->store);
    p = part_of(img, "t", 0);
    assert_int_equal(p->leader, 1);
    assert_int_equal(p->leader_epoch, le + 4);
    metadata_image_release(img);

    /* The replay after reopen rebuilds the same partition. */
    metadata_store_close(f->store);
    f->store = NULL;
    open_store(f);
    img = metadata_image_acquire(f->store);
    p = part_of(img, "t", 0);
    assert_int_equal(p->leader, 1);
    assert_int_equal(p->leader_epoch, le + 4);
    assert_ids(p->isr, p->isr_count, (int32_t[]){1}, 1);
    metadata_image_release(img);
}

/* unclean.leader.election.enable=true on the topic: the fenced last ISR
 * member's partition goes to a live replica outside the ISR. */
static void test_store_unclean_topic_config(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    int32_t r0[] = {2, 3};
    struct metadata_replica_assignment a = {0, r0, 2};
    struct metadata_config_kv kv = {METADATA_UNCLEAN_ELECTION_KEY, "true"};
    assert_int_equal(metadata_create_topic(f->store, "u", -1, -1, &a, 1, &kv, 1, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
    set_fenced(f->store, 3, true);  /* ISR {2} */
    set_fenced(f->store, 2, true);  /* offline: 2 kept */
    set_fenced(f->store, 3, false); /* 3 live, not in the ISR: unclean lets it lead */
    const struct metadata_image *img = metadata_image_acquire(f->store);
    const struct metadata_partition *p = part_of(img, "u", 0);
    assert_int_equal(p->leader, 3);
    assert_ids(p->isr, p->isr_count, (int32_t[]){3}, 1);
    assert_true(metadata_unclean_election_enabled(img, metadata_image_topic_by_name(img, "u", 1),
                                                  &(struct metadata_unclean_source){1, false}));
    metadata_image_release(img);
}

/* The node's static unclean.leader.election.enable is the last resort: a
 * topic config of false still wins over it. */
static void test_store_unclean_static_default(void **state)
{
    struct fixture *f = *state;
    metadata_store_close(f->store);
    f->store = NULL;
    f->opts.unclean_leader_election_enable = true;
    open_store(f);
    char err[256] = "";
    int32_t r0[] = {2, 3};
    struct metadata_replica_assignment a = {0, r0, 2};
    struct metadata_config_kv off = {METADATA_UNCLEAN_ELECTION_KEY, "false"};
    assert_int_equal(metadata_create_topic(f->store, "on", -1, -1, &a, 1, NULL, 0, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_int_equal(metadata_create_topic(f->store, "off", -1, -1, &a, 1, &off, 1, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
    set_fenced(f->store, 3, true);
    set_fenced(f->store, 2, true);
    set_fenced(f->store, 3, false);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_int_equal(part_of(img, "on", 0)->leader, 3);
    assert_int_equal(part_of(img, "off", 0)->leader, -1);
    metadata_image_release(img);
}

/* The dynamic values: the controller node's own ("1" here) before the
 * cluster-wide default (""), as Kafka reads them. */
static void test_store_unclean_dynamic_values(void **state)
{
    struct fixture *f = *state;
    char err[256] = "";
    int32_t r0[] = {2, 3};
    struct metadata_replica_assignment a = {0, r0, 2};
    assert_int_equal(metadata_create_topic(f->store, "d", -1, -1, &a, 1, NULL, 0, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
    struct metadata_config_kv on = {METADATA_UNCLEAN_ELECTION_KEY, "true"};
    struct metadata_config_kv off = {METADATA_UNCLEAN_ELECTION_KEY, "false"};
    struct metadata_config_kv unset = {METADATA_UNCLEAN_ELECTION_KEY, NULL};
    assert_int_equal(metadata_alter_broker_configs(f->store, "", &on, 1, false, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(metadata_alter_broker_configs(f->store, "1", &off, 1, false, err, sizeof err), KAFKA_ERR_NONE);
    set_fenced(f->store, 3, true);
    set_fenced(f->store, 2, true);
    set_fenced(f->store, 3, false); /* the node's false wins: still offline */
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_int_equal(part_of(img, "d", 0)->leader, -1);
    metadata_image_release(img);
    assert_int_equal(metadata_alter_broker_configs(f->store, "1", &unset, 1, false, err, sizeof err), KAFKA_ERR_NONE);
    set_fenced(f->store, 3, true);
    set_fenced(f->store, 3, false); /* now the cluster default's true */
    img = metadata_image_acquire(f->store);
    assert_int_equal(part_of(img, "d", 0)->leader, 3);
    metadata_image_release(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fenced_leader_replaced_in_replica_order),
        cmocka_unit_test(test_fenced_follower_leaves_isr),
        cmocka_unit_test(test_last_isr_member_kept_and_offline),
        cmocka_unit_test(test_unclean_elects_outside_isr),
        cmocka_unit_test(test_unfence_brings_isr_member_back),
        cmocka_unit_test_setup_teardown(test_store_moves_leaders_on_fence_and_unfence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_unclean_topic_config, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_unclean_static_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_unclean_dynamic_values, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
