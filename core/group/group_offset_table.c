/* Open-addressing index over a dense array of committed offsets. */
#include "group/group_offset_table.h"

#include <stdlib.h>
#include <string.h>

#include "util/hash.h"

static uint64_t offset_key_hash(const char *topic, int32_t partition)
{
    /* FNV-1a over the topic, then the partition mixed in and the bits spread. */
    uint64_t h = hash_fold_bytes(HASH_FNV_OFFSET, topic, strlen(topic));
    h ^= (uint64_t)(uint32_t)partition + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return hash_finish(h);
}

static size_t slot_home(const struct group_offset_table *t, uint64_t hash)
{
    return (size_t)hash & (t->slot_count - 1);
}

/* The slot holding item index idx (which must be indexed). */
static size_t slot_of_index(const struct group_offset_table *t, size_t idx)
{
    size_t s = slot_home(t, t->items[idx].hash);
    while (t->slots[s] != idx + 1)
        s = (s + 1) & (t->slot_count - 1);
    return s;
}

static int rebuild_slots(struct group_offset_table *t, size_t slot_count)
{
    size_t *slots = calloc(slot_count, sizeof *slots);
    if (!slots)
        return -1;
    free(t->slots);
    t->slots = slots;
    t->slot_count = slot_count;
    for (size_t i = 0; i < t->count; i++) {
        size_t s = slot_home(t, t->items[i].hash);
        while (t->slots[s])
            s = (s + 1) & (slot_count - 1);
        t->slots[s] = i + 1;
    }
    return 0;
}

struct group_offset *group_offset_table_find(const struct group_offset_table *t, const char *topic, int32_t partition)
{
    if (t->count == 0)
        return NULL;
    uint64_t h = offset_key_hash(topic, partition);
    for (size_t s = slot_home(t, h); t->slots[s]; s = (s + 1) & (t->slot_count - 1)) {
        struct group_offset *o = &t->items[t->slots[s] - 1];
        if (o->hash == h && o->partition == partition && strcmp(o->topic, topic) == 0)
            return o;
    }
    return NULL;
}

struct group_offset *group_offset_table_add(struct group_offset_table *t, const char *topic, int32_t partition)
{
    struct group_offset *found = group_offset_table_find(t, topic, partition);
    if (found)
        return found;
    if (t->count == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        if (cap > SIZE_MAX / 4 / sizeof(struct group_offset))
            return NULL;
        struct group_offset *items = realloc(t->items, cap * sizeof *items);
        if (!items)
            return NULL;
        t->items = items;
        t->cap = cap;
    }
    /* Keep the load factor at or below one half. */
    if ((t->count + 1) * 2 > t->slot_count) {
        size_t slot_count = t->slot_count ? t->slot_count : 16;
        while ((t->count + 1) * 2 > slot_count)
            slot_count *= 2;
        if (rebuild_slots(t, slot_count) != 0)
            return NULL;
    }
    char *copy = strdup(topic);
    if (!copy)
        return NULL;
    size_t idx = t->count++;
    struct group_offset *o = &t->items[idx];
    *o = (struct group_offset){.topic = copy,
                               .partition = partition,
                               .leader_epoch = -1,
                               .expire_timestamp = -1,
                               .hash = offset_key_hash(topic, partition)};
    size_t s = slot_home(t, o->hash);
    while (t->slots[s])
        s = (s + 1) & (t->slot_count - 1);
    t->slots[s] = idx + 1;
    return o;
}

/* Frees slot s and shifts later entries of the probe run back, so lookups
 * never meet a hole before their entry (no tombstones needed). */
static void slot_delete(struct group_offset_table *t, size_t s)
{
    size_t mask = t->slot_count - 1;
    size_t hole = s;
    for (size_t j = (s + 1) & mask; t->slots[j]; j = (j + 1) & mask) {
        size_t home = slot_home(t, t->items[t->slots[j] - 1].hash);
        /* The entry at j may move to the hole unless its home lies
         * cyclically in (hole, j]. */
        bool home_after_hole = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (home_after_hole)
            continue;
        t->slots[hole] = t->slots[j];
        hole = j;
    }
    t->slots[hole] = 0;
}

void group_offset_table_remove(struct group_offset_table *t, struct group_offset *o)
{
    size_t idx = (size_t)(o - t->items);
    if (idx >= t->count)
        return;
    slot_delete(t, slot_of_index(t, idx));
    free(o->topic);
    free(o->metadata);
    size_t last = t->count - 1;
    if (idx != last) {
        t->slots[slot_of_index(t, last)] = idx + 1;
        t->items[idx] = t->items[last];
    }
    t->count--;
}

void group_offset_table_remove_marked(struct group_offset_table *t)
{
    /* Back to front: the entry moved into a freed place was already
     * visited and is unmarked. */
    for (size_t i = t->count; i-- > 0;)
        if (t->items[i].marked)
            group_offset_table_remove(t, &t->items[i]);
}

void group_offset_table_free(struct group_offset_table *t)
{
    for (size_t i = 0; i < t->count; i++) {
        free(t->items[i].topic);
        free(t->items[i].metadata);
    }
    free(t->items);
    free(t->slots);
    memset(t, 0, sizeof *t);
}
