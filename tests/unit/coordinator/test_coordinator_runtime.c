/* The coordinator runtime on its own, with a coordinator that records the
 * hooks it is given: the order loads and unloads run in, the states and
 * epochs requests see, which notices change nothing, and the errors a
 * partition answers with. The group and transaction coordinators' own
 * tests run the runtime over real logs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "coordinator/coordinator_partition.h"
#include "coordinator/coordinator_runtime.h"
#include "protocol/generated/errors.h"

#define TOPIC "__state"
#define PARTITIONS 3

/* Written by the loader thread only; read after wait_idle. */
struct recording {
    char log[512];
};

static int rec_load(void *coordinator, int32_t partition, int32_t epoch, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct recording *r = coordinator;
    size_t n = strlen(r->log);
    snprintf(r->log + n, sizeof r->log - n, "L%d@%d ", (int)partition, (int)epoch);
    return 0;
}

static void rec_unload(void *coordinator, int32_t partition)
{
    struct recording *r = coordinator;
    size_t n = strlen(r->log);
    snprintf(r->log + n, sizeof r->log - n, "U%d ", (int)partition);
}

static const struct coordinator_shard_ops rec_ops = {.load = rec_load, .unload = rec_unload};

struct fixture {
    struct coordinator_shards *shards;
    struct coordinator_runtime *rt;
    struct recording rec;
};

static int setup(void **state)
{
    static struct fixture f;
    memset(&f, 0, sizeof f);
    f.shards = coordinator_shards_create(PARTITIONS);
    assert_non_null(f.shards);
    assert_int_equal(coordinator_runtime_create(&f.rt), 0);
    assert_int_equal(coordinator_runtime_register(f.rt, TOPIC, f.shards, &rec_ops, &f.rec), 0);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    coordinator_runtime_destroy(f->rt);
    coordinator_shards_free(f->shards);
    return 0;
}

static void idle(struct fixture *f)
{
    char err[128] = "";
    assert_int_equal(coordinator_runtime_wait_idle(f->rt, err, sizeof err), 0);
}

static void test_changes_run_in_order(void **state)
{
    struct fixture *f = *state;
    for (int32_t p = 0; p < PARTITIONS; p++)
        assert_int_equal(coordinator_shards_serving(f->shards, p), KAFKA_ERR_NOT_COORDINATOR);
    coordinator_runtime_on_leadership(f->rt, TOPIC, 0, true, 4);
    coordinator_runtime_on_leadership(f->rt, TOPIC, 1, true, 2);
    coordinator_runtime_on_leadership(f->rt, TOPIC, 0, true, 4);   /* the same term again */
    coordinator_runtime_on_leadership(f->rt, TOPIC, 1, true, 1);   /* an older term */
    coordinator_runtime_on_leadership(f->rt, TOPIC, 2, false, -1); /* not led: nothing to drop */
    coordinator_runtime_on_leadership(f->rt, "other", 0, true, 9);
    coordinator_runtime_on_leadership(f->rt, TOPIC, PARTITIONS, true, 9);
    idle(f);
    assert_string_equal(f->rec.log, "L0@4 L1@2 ");
    assert_int_equal(coordinator_shards_serving(f->shards, 0), KAFKA_ERR_NONE);
    assert_int_equal(coordinator_shards_epoch(f->shards, 0), 4);
    assert_int_equal(coordinator_shards_epoch(f->shards, 1), 2);
    assert_int_equal(coordinator_shards_epoch(f->shards, 2), -1);
    assert_int_equal(coordinator_shards_serving(f->shards, 2), KAFKA_ERR_NOT_COORDINATOR);

    /* A newer term while led reloads; losing leadership unloads. */
    f->rec.log[0] = '\0';
    coordinator_runtime_on_leadership(f->rt, TOPIC, 0, true, 5);
    coordinator_runtime_on_leadership(f->rt, TOPIC, 1, false, -1);
    assert_int_equal(coordinator_shards_epoch(f->shards, 1), -1); /* at once, before the unload runs */
    assert_int_equal(coordinator_shards_serving(f->shards, 1), KAFKA_ERR_NOT_COORDINATOR);
    idle(f);
    assert_string_equal(f->rec.log, "U0 L0@5 U1 ");
    assert_int_equal(coordinator_shards_epoch(f->shards, 0), 5);
    assert_false(coordinator_shards_any_loading(f->shards));
}

static void test_key_placement(void **state)
{
    struct fixture *f = *state;
    const char *key = "some-group";
    int32_t p = coordinator_partition_for(key, strlen(key), PARTITIONS);
    assert_int_equal(coordinator_shards_partition_of(f->shards, key), p);
    assert_int_equal(coordinator_shards_partition_count(f->shards), PARTITIONS);
    coordinator_runtime_on_leadership(f->rt, TOPIC, p, true, 0);
    idle(f);
    assert_int_equal(coordinator_shards_serving_key(f->shards, key), KAFKA_ERR_NONE);
    assert_int_equal(coordinator_shards_state(f->shards, -1), COORDINATOR_SHARD_NOT_LEADER);
    assert_null(coordinator_shards_create(0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_changes_run_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_placement, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
