/* The (topic, partition) hash table: entries found after growing, the
 * same partition number of another topic kept apart, removal, and a walk
 * that visits every entry once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/partition_map.h"

struct entry {
    int value;
    struct partition_map_node node;
    char topic[16];
};

#define COUNT 1000

static struct entry *lookup(struct partition_map *m, const char *topic, int32_t partition)
{
    struct partition_map_node *n = partition_map_find(m, topic, partition);
    return n ? PARTITION_MAP_ENTRY(n, struct entry, node) : NULL;
}

static void test_add_find_remove_walk(void **state)
{
    (void)state;
    struct partition_map m;
    assert_int_equal(partition_map_init(&m), 0);
    struct entry *entries = calloc(2 * COUNT, sizeof *entries);
    assert_non_null(entries);
    /* Two topics with the same partition numbers; the table grows past
     * its first 64 buckets several times. */
    for (int i = 0; i < 2 * COUNT; i++) {
        struct entry *e = &entries[i];
        snprintf(e->topic, sizeof e->topic, "%s", i < COUNT ? "a" : "b");
        e->value = i;
        e->node.topic = e->topic;
        e->node.partition = i % COUNT;
        partition_map_add(&m, &e->node);
    }
    assert_int_equal(m.count, 2 * COUNT);
    assert_true(m.bucket_count > 64);
    for (int i = 0; i < COUNT; i++) {
        assert_int_equal(lookup(&m, "a", i)->value, i);
        assert_int_equal(lookup(&m, "b", i)->value, COUNT + i);
    }
    assert_null(lookup(&m, "a", COUNT));
    assert_null(lookup(&m, "c", 0));

    for (int i = 0; i < COUNT; i += 2)
        assert_ptr_equal(partition_map_remove(&m, "a", i), &entries[i].node);
    assert_null(partition_map_remove(&m, "a", 0));
    assert_int_equal(m.count, 2 * COUNT - COUNT / 2);
    for (int i = 0; i < COUNT; i++) {
        if (i % 2)
            assert_int_equal(lookup(&m, "a", i)->value, i);
        else
            assert_null(lookup(&m, "a", i));
    }

    int *seen = calloc(2 * COUNT, sizeof *seen);
    assert_non_null(seen);
    size_t bucket = 0, walked = 0;
    for (struct partition_map_node *n = partition_map_next(&m, &bucket, NULL); n;
         n = partition_map_next(&m, &bucket, n)) {
        seen[PARTITION_MAP_ENTRY(n, struct entry, node)->value]++;
        walked++;
    }
    assert_int_equal(walked, m.count);
    for (int i = 0; i < 2 * COUNT; i++)
        assert_int_equal(seen[i], i < COUNT && i % 2 == 0 ? 0 : 1);
    free(seen);
    partition_map_free(&m);
    free(entries);
}

static void test_empty_walk(void **state)
{
    (void)state;
    struct partition_map m;
    assert_int_equal(partition_map_init(&m), 0);
    size_t bucket = 0;
    assert_null(partition_map_next(&m, &bucket, NULL));
    assert_null(partition_map_find(&m, "t", 0));
    partition_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_find_remove_walk),
        cmocka_unit_test(test_empty_walk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
