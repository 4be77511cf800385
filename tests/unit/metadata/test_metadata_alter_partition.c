/* AlterPartition at the controller, through the store: the request-level
 * and per-partition errors, and accepted ISRs committed with the partition
 * epoch bumped once per change. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_alter_partition.h"
#include "metadata/metadata_store.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

struct env {
    struct fixture *f;
    struct kafka_uuid topic_id;
    int64_t epochs[4]; /* broker epochs by id */
};

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof *e);
    if (!e || !(e->f = fixture_new("/tmp/cairn-alter-partition-XXXXXX")))
        return -1;
    open_store(e->f);
    char err[256] = "";
    for (int32_t id = 2; id <= 3; id++) {
        struct metadata_endpoint ep = {"PLAINTEXT", "localhost", (uint16_t)(9090 + id), 0};
        if (metadata_register_broker(e->f->store, id, &ep, 1, NULL, NULL, false, &e->epochs[id], err, sizeof err) !=
            KAFKA_ERR_NONE)
            return -1;
    }
    const struct metadata_image *img = metadata_image_acquire(e->f->store);
    e->epochs[1] = metadata_image_broker(img, 1)->epoch;
    metadata_image_release(img);
    int32_t r0[] = {1, 2, 3};
    struct metadata_replica_assignment a = {0, r0, 3};
    if (metadata_create_topic(e->f->store, "t", -1, -1, &a, 1, NULL, 0, false, &e->topic_id, err, sizeof err) !=
        KAFKA_ERR_NONE)
        return -1;
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    int rc = fixture_free(e->f);
    free(e);
    return rc;
}

static struct metadata_isr_change change(struct env *e, const struct metadata_isr_member *isr, int32_t n,
                                         int32_t partition_epoch)
{
    return (struct metadata_isr_change){.topic_name = "t",
                                        .topic_name_len = 1,
                                        .topic_id = e->topic_id,
                                        .partition_index = 0,
                                        .leader_epoch = 0,
                                        .partition_epoch = partition_epoch,
                                        .isr = isr,
                                        .isr_count = n};
}

static int16_t alter(struct env *e, int16_t version, int32_t broker, struct metadata_isr_change *c)
{
    char err[256] = "";
    return metadata_alter_partition(e->f->store, broker, e->epochs[broker], version, c, 1, err, sizeof err);
}

static void test_shrink_and_grow(void **state)
{
    struct env *e = *state;
    struct metadata_isr_member shrunk[] = {{1, -1}, {3, -1}};
    struct metadata_isr_change c = change(e, shrunk, 2, 0);
    assert_int_equal(alter(e, 2, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
    assert_int_equal(c.leader, 1);
    assert_int_equal(c.new_leader_epoch, 0);
    assert_int_equal(c.new_partition_epoch, 1);
    const struct metadata_image *img = metadata_image_acquire(e->f->store);
    const struct metadata_partition *p = metadata_topic_partition(metadata_image_topic_by_name(img, "t", 1), 0);
    assert_int_equal(p->isr_count, 2);
    assert_int_equal(p->isr[1], 3);
    assert_int_equal(p->partition_epoch, 1);
    assert_int_equal(p->leader_epoch, 0);
    int64_t last = img->last_offset;
    metadata_image_release(img);

    /* The same ISR again: nothing written, the current state answered. */
    c = change(e, shrunk, 2, 1);
    assert_int_equal(alter(e, 3, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
    assert_int_equal(c.new_partition_epoch, 1);
    img = metadata_image_acquire(e->f->store);
    assert_int_equal(img->last_offset, last);
    metadata_image_release(img);

    /* Grown back at v3 with broker epochs; a stale one is ineligible. */
    struct metadata_isr_member grown[] = {{1, e->epochs[1]}, {3, e->epochs[3]}, {2, e->epochs[2] + 1}};
    c = change(e, grown, 3, 1);
    assert_int_equal(alter(e, 3, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_INELIGIBLE_REPLICA);
    grown[2].broker_epoch = e->epochs[2];
    c = change(e, grown, 3, 1);
    assert_int_equal(alter(e, 3, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
    assert_int_equal(c.new_partition_epoch, 2);
}

static void test_errors(void **state)
{
    struct env *e = *state;
    struct metadata_isr_member isr[] = {{1, -1}, {2, -1}};
    struct metadata_isr_change c = change(e, isr, 2, 0);
    char err[256] = "";
    assert_int_equal(metadata_alter_partition(e->f->store, 1, e->epochs[1] + 1, 2, &c, 1, err, sizeof err),
                     KAFKA_ERR_STALE_BROKER_EPOCH);
    assert_int_equal(metadata_alter_partition(e->f->store, 7, -1, 2, &c, 1, err, sizeof err),
                     KAFKA_ERR_STALE_BROKER_EPOCH);
    /* Unknown topic: by id from v2, by name before. */
    c = change(e, isr, 2, 0);
    c.topic_id.bytes[0] ^= 0xff;
    assert_int_equal(alter(e, 2, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_UNKNOWN_TOPIC_ID);
    c = change(e, isr, 2, 0);
    c.topic_name = "x";
    assert_int_equal(alter(e, 1, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION);
    /* A recovering leader is never valid here. */
    c = change(e, isr, 2, 0);
    c.leader_recovery_state = 1;
    assert_int_equal(alter(e, 1, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_INVALID_REQUEST);
    /* A member twice, or not a replica. */
    struct metadata_isr_member twice[] = {{1, -1}, {1, -1}};
    c = change(e, twice, 2, 0);
    assert_int_equal(alter(e, 2, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_INVALID_REQUEST);
    /* A fenced member: OPERATION_NOT_ATTEMPTED at v0-1, INELIGIBLE_REPLICA at v2+. */
    assert_int_equal(metadata_set_broker_fenced(e->f->store, 2, e->epochs[2], true, err, sizeof err), KAFKA_ERR_NONE);
    /* (fencing 2 shrank the ISR to {1, 3}: partition epoch 1) */
    c = change(e, isr, 2, 1);
    assert_int_equal(alter(e, 1, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_OPERATION_NOT_ATTEMPTED);
    c = change(e, isr, 2, 1);
    assert_int_equal(alter(e, 2, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_INELIGIBLE_REPLICA);
    /* The stale partition epoch. */
    struct metadata_isr_member ok[] = {{1, -1}};
    c = change(e, ok, 1, 0);
    assert_int_equal(alter(e, 2, 1, &c), KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_INVALID_UPDATE_VERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_shrink_and_grow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
