/* The committed offsets of one group, keyed by (topic, partition).
 *
 * Entries live in a dense array (cheap to iterate and to snapshot) with an
 * open-addressing index beside it, so a lookup costs O(1) whatever the
 * number of partitions a group commits. Removing an entry moves the last
 * one into its place: pointers returned by find/add stay valid only until
 * the next add or remove.
 *
 * Thread-safety: none of its own; the owning group's coordinator lock
 * guards it. */
#ifndef CAIRN_GROUP_GROUP_OFFSET_TABLE_H
#define CAIRN_GROUP_GROUP_OFFSET_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct group_offset {
    char *topic;
    int32_t partition;
    int64_t offset;
    int32_t leader_epoch;
    char *metadata; /* NULL: null; NUL-terminated past metadata_len, may hold NUL bytes */
    size_t metadata_len;
    int64_t commit_timestamp;
    int64_t expire_timestamp; /* -1: by retention */
    /* Order of the write in the group log (group_coordinator.write_seq):
     * a committed transaction replaces only older commits (Kafka's rule). */
    uint64_t write_seq;
    uint64_t hash; /* of (topic, partition), cached for the index */
    bool marked;   /* scratch flag for batch removal under the lock */
};

struct group_offset_table {
    struct group_offset *items;
    size_t count, cap;
    /* Linear probing; a slot holds an item index + 1, 0 when free. The
     * slot count is a power of two kept at least twice the item count. */
    size_t *slots;
    size_t slot_count;
};

/* NULL when absent. */
struct group_offset *group_offset_table_find(const struct group_offset_table *t, const char *topic, int32_t partition);
/* The entry for (topic, partition), created zeroed (topic copied,
 * expire_timestamp -1) when absent; NULL when out of memory. */
struct group_offset *group_offset_table_add(struct group_offset_table *t, const char *topic, int32_t partition);
/* Frees the entry's strings and drops it; the last entry takes its place. */
void group_offset_table_remove(struct group_offset_table *t, struct group_offset *o);
/* Drops every marked entry. */
void group_offset_table_remove_marked(struct group_offset_table *t);
void group_offset_table_free(struct group_offset_table *t);

#endif
