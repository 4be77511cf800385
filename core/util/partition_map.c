#include "util/partition_map.h"

#include <stdlib.h>
#include <string.h>

#include "util/hash.h"

#define INITIAL_BUCKETS 64

static uint64_t key_hash(const char *topic, int32_t partition)
{
    uint64_t h = hash_fold_bytes(HASH_FNV_OFFSET, topic, strlen(topic));
    return hash_finish(hash_fold_bytes(h, &partition, sizeof partition));
}

int partition_map_init(struct partition_map *m)
{
    m->count = 0;
    m->buckets = calloc(INITIAL_BUCKETS, sizeof *m->buckets);
    m->bucket_count = m->buckets ? INITIAL_BUCKETS : 0;
    return m->buckets ? 0 : -1;
}

void partition_map_free(struct partition_map *m)
{
    free(m->buckets);
    m->buckets = NULL;
    m->bucket_count = 0;
    m->count = 0;
}

static struct partition_map_node **find_link(const struct partition_map *m, const char *topic, int32_t partition,
                                             uint64_t hash)
{
    struct partition_map_node **link = &m->buckets[hash & (m->bucket_count - 1)];
    while (*link && ((*link)->hash != hash || (*link)->partition != partition || strcmp((*link)->topic, topic) != 0))
        link = &(*link)->next;
    return link;
}

struct partition_map_node *partition_map_find(const struct partition_map *m, const char *topic, int32_t partition)
{
    return *find_link(m, topic, partition, key_hash(topic, partition));
}

/* Doubles the buckets once chains average two entries. */
static void maybe_grow(struct partition_map *m)
{
    if (m->count < m->bucket_count * 2)
        return;
    size_t count = m->bucket_count * 2;
    struct partition_map_node **grown = calloc(count, sizeof *grown);
    if (!grown)
        return;
    for (size_t i = 0; i < m->bucket_count; i++) {
        while (m->buckets[i]) {
            struct partition_map_node *n = m->buckets[i];
            m->buckets[i] = n->next;
            n->next = grown[n->hash & (count - 1)];
            grown[n->hash & (count - 1)] = n;
        }
    }
    free(m->buckets);
    m->buckets = grown;
    m->bucket_count = count;
}

void partition_map_add(struct partition_map *m, struct partition_map_node *node)
{
    maybe_grow(m);
    node->hash = key_hash(node->topic, node->partition);
    struct partition_map_node **head = &m->buckets[node->hash & (m->bucket_count - 1)];
    node->next = *head;
    *head = node;
    m->count++;
}

struct partition_map_node *partition_map_remove(struct partition_map *m, const char *topic, int32_t partition)
{
    struct partition_map_node **link = find_link(m, topic, partition, key_hash(topic, partition));
    struct partition_map_node *n = *link;
    if (n) {
        *link = n->next;
        n->next = NULL;
        m->count--;
    }
    return n;
}

struct partition_map_node *partition_map_next(const struct partition_map *m, size_t *bucket,
                                              const struct partition_map_node *node)
{
    if (node && node->next)
        return node->next;
    for (size_t b = node ? *bucket + 1 : *bucket; b < m->bucket_count; b++) {
        if (m->buckets[b]) {
            *bucket = b;
            return m->buckets[b];
        }
    }
    *bucket = m->bucket_count;
    return NULL;
}
