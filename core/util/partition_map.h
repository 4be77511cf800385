/* An intrusive hash table keyed by (topic name, partition): the entries
 * embed a partition_map_node, so finding, adding and removing cost no
 * allocation and O(1) on average. The table doubles its buckets as it
 * fills (a failed doubling keeps longer chains, still correct).
 *
 * Thread-safety: none; the owner guards the table with its own lock. */
#ifndef CAIRN_UTIL_PARTITION_MAP_H
#define CAIRN_UTIL_PARTITION_MAP_H

#include <stddef.h>
#include <stdint.h>

/* Embedded in an entry; topic points at the entry's own name and must not
 * change while the node is in a table. */
struct partition_map_node {
    struct partition_map_node *next;
    const char *topic;
    int32_t partition;
    uint64_t hash;
};

struct partition_map {
    struct partition_map_node **buckets;
    size_t bucket_count; /* a power of two */
    size_t count;
};

/* The entry of type holding node as member. */
#define PARTITION_MAP_ENTRY(node, type, member) ((type *)(void *)((char *)(node)-offsetof(type, member)))

/* Returns 0, or -1 when out of memory. */
int partition_map_init(struct partition_map *m);
/* Frees the buckets, not the entries. */
void partition_map_free(struct partition_map *m);
struct partition_map_node *partition_map_find(const struct partition_map *m, const char *topic, int32_t partition);
/* Adds node (topic and partition set, not already in the table). */
void partition_map_add(struct partition_map *m, struct partition_map_node *node);
/* Takes the node of topic-partition out of the table; NULL when absent. */
struct partition_map_node *partition_map_remove(struct partition_map *m, const char *topic, int32_t partition);

/* Walks every node: start with *bucket = 0 and node NULL, then pass the
 * node returned last; NULL at the end. The table must not change during
 * the walk (a table being discarded may have its entries freed once the
 * walk is past them). */
struct partition_map_node *partition_map_next(const struct partition_map *m, size_t *bucket,
                                              const struct partition_map_node *node);

#endif
