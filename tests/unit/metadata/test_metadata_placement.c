/* Replica placement for new partitions (metadata_place_replicas): with
 * broker.rack on every broker a partition's replicas go to distinct racks
 * while racks remain, leaders and replicas stay balanced, and a broker
 * without a rack leaves placement rack-unaware. Every start and shift
 * draw is tried, since the controller draws them at random. The store's
 * CreateTopics places by the racks its brokers registered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_placement.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

#define MAX_OUT 1024

static int distinct_racks(const int32_t *replicas, int16_t rf, const int32_t *brokers, const char *const *racks,
                          int32_t n)
{
    const char *seen[16];
    int count = 0;
    for (int16_t j = 0; j < rf; j++) {
        const char *rack = NULL;
        for (int32_t i = 0; i < n; i++)
            if (brokers[i] == replicas[j])
                rack = racks[i];
        assert_non_null(rack);
        bool known = false;
        for (int k = 0; k < count && !known; k++)
            known = strcmp(seen[k], rack) == 0;
        if (!known)
            seen[count++] = rack;
    }
    return count;
}

static void assert_distinct_brokers(const int32_t *replicas, int16_t rf, const int32_t *brokers, int32_t n)
{
    for (int16_t j = 0; j < rf; j++) {
        bool listed = false;
        for (int32_t i = 0; i < n; i++)
            listed = listed || brokers[i] == replicas[j];
        assert_true(listed);
        for (int16_t k = 0; k < j; k++)
            assert_int_not_equal(replicas[j], replicas[k]);
    }
}

/* Six brokers, two per rack, racks listed out of order: RF 3 puts every
 * partition on the three racks; each broker leads and holds its share. */
static void test_replicas_on_distinct_racks(void **state)
{
    (void)state;
    const int32_t brokers[] = {1, 2, 3, 4, 5, 6};
    const char *const racks[] = {"r2", "r1", "r3", "r1", "r2", "r3"};
    int32_t out[MAX_OUT];
    for (uint32_t start = 0; start < 6; start++) {
        for (uint32_t shift = 0; shift < 6; shift++) {
            assert_int_equal(metadata_place_replicas(brokers, racks, 6, 0, 60, 3, start, shift, out), 0);
            int leads[7] = {0}, holds[7] = {0};
            for (int p = 0; p < 60; p++) {
                const int32_t *r = &out[p * 3];
                assert_distinct_brokers(r, 3, brokers, 6);
                if (distinct_racks(r, 3, brokers, racks, 6) != 3)
                    fail_msg("start %u shift %u: partition %d on %d, %d, %d shares a rack", start, shift, p, r[0], r[1],
                             r[2]);
                leads[r[0]]++;
                for (int j = 0; j < 3; j++)
                    holds[r[j]]++;
            }
            for (int b = 1; b <= 6; b++) {
                assert_int_equal(leads[b], 10);
                assert_int_equal(holds[b], 30);
            }
        }
    }
}

/* More replicas than racks: each rack is used once before any twice, and
 * partitions added later (CreatePartitions) follow the same rule. */
static void test_more_replicas_than_racks(void **state)
{
    (void)state;
    const int32_t brokers[] = {1, 2, 3, 4, 5};
    const char *const racks[] = {"a", "a", "b", "b", "a"};
    int32_t out[MAX_OUT];
    for (uint32_t draw = 0; draw < 25; draw++) {
        assert_int_equal(metadata_place_replicas(brokers, racks, 5, 7, 20, 3, draw / 5, draw % 5, out), 0);
        for (int p = 0; p < 20; p++) {
            assert_distinct_brokers(&out[p * 3], 3, brokers, 5);
            assert_int_equal(distinct_racks(&out[p * 3], 3, brokers, racks, 5), 2);
            /* The first two replicas (the leader and the first follower)
             * are already on both racks. */
            assert_int_equal(distinct_racks(&out[p * 3], 2, brokers, racks, 5), 2);
        }
    }
}

/* A broker without broker.rack: rack-unaware, Kafka's plain walk (broker
 * ids in order from the start, the follower one step past the leader for
 * shift 0), still distinct brokers and balanced leaders. */
static void test_a_broker_without_rack_places_unaware(void **state)
{
    (void)state;
    const int32_t brokers[] = {1, 2, 3, 4};
    const char *const racks[] = {"a", "a", NULL, "b"};
    int32_t out[MAX_OUT];
    assert_int_equal(metadata_place_replicas(brokers, racks, 4, 0, 4, 2, 0, 0, out), 0);
    const int32_t want[] = {1, 2, 2, 3, 3, 4, 4, 1};
    for (int i = 0; i < 8; i++)
        assert_int_equal(out[i], want[i]);
    assert_int_equal(metadata_place_replicas(brokers, NULL, 4, 0, 4, 2, 0, 0, out), 0);
    for (int i = 0; i < 8; i++)
        assert_int_equal(out[i], want[i]);
}

/* One broker, one replica, with or without a rack. */
static void test_single_broker(void **state)
{
    (void)state;
    const int32_t brokers[] = {7};
    const char *const racks[] = {"a"};
    int32_t out[4];
    assert_int_equal(metadata_place_replicas(brokers, racks, 1, 0, 3, 1, 5, 9, out), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(out[i], 7);
}

/* The controller's CreateTopics: broker 1 in rack-a, brokers 2 and 3 in
 * rack-b; with RF 2 every partition has one replica in each rack, so each
 * holds broker 1. Rack-unaware, about a third of them would be {2, 3}. */
static void test_store_places_by_registered_racks(void **state)
{
    (void)state;
    struct fixture *f = fixture_new("/tmp/cairn-placement-XXXXXX");
    assert_non_null(f);
    f->opts.rack = "rack-a";
    open_store(f);
    char err[256] = "";
    for (int32_t id = 2; id <= 3; id++) {
        struct metadata_endpoint ep = {"PLAINTEXT", "localhost", 9092 + id, 0};
        int64_t epoch = -1;
        assert_int_equal(metadata_register_broker(f->store, id, &ep, 1, "rack-b", NULL, true, &epoch, err, sizeof err),
                         KAFKA_ERR_NONE);
        assert_int_equal(metadata_set_broker_fenced(f->store, id, epoch, false, err, sizeof err), KAFKA_ERR_NONE);
    }
    for (int t = 0; t < 4; t++) {
        char name[32];
        snprintf(name, sizeof name, "racked-%d", t);
        if (metadata_create_topic(f->store, name, 12, 2, NULL, 0, NULL, 0, false, NULL, err, sizeof err) !=
            KAFKA_ERR_NONE)
            fail_msg("create %s: %s", name, err);
        const struct metadata_image *img = metadata_image_acquire(f->store);
        const struct metadata_topic *topic = metadata_image_topic_by_name(img, name, strlen(name));
        assert_non_null(topic);
        assert_int_equal(topic->partition_count, 12);
        for (int32_t p = 0; p < topic->partition_count; p++) {
            const struct metadata_partition *part = &topic->partitions[p];
            assert_int_equal(part->replica_count, 2);
            if (part->replicas[0] != 1 && part->replicas[1] != 1)
                fail_msg("%s-%d on %d and %d: both in rack-b", name, p, part->replicas[0], part->replicas[1]);
        }
        metadata_image_release(img);
    }
    assert_int_equal(fixture_free(f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replicas_on_distinct_racks),           cmocka_unit_test(test_more_replicas_than_racks),
        cmocka_unit_test(test_a_broker_without_rack_places_unaware), cmocka_unit_test(test_single_broker),
        cmocka_unit_test(test_store_places_by_registered_racks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
