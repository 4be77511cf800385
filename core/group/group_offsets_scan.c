/* Helpers that let a pass over a group's committed offsets (OffsetFetch of
 * every partition, expiry, OffsetDelete) stay linear: the topics the
 * members subscribe to as a set, and which entries have a commit still
 * pending, each built once per pass instead of scanned per entry. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "group/group_internal.h"

struct group_topic {
    char *name;
};

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static int topic_set_add(struct group_topic_set *s, const uint8_t *name, size_t len)
{
    char *n = group_strndup_bytes((const char *)name, len);
    if (!n)
        return -1;
    if (group_index_find(&s->index, n)) {
        free(n);
        return 0;
    }
    struct group_topic *t = malloc(sizeof *t);
    if (t)
        t->name = n;
    if (!t || group_index_put(&s->index, t) != 0) {
        free(t);
        free(n);
        return -1;
    }
    return 0;
}

/* Adds the topics of a consumer-protocol subscription (version, [topic],
 * ...); a malformed one adds what it names before the damage. */
static int add_subscription(struct group_topic_set *s, const uint8_t *p, size_t len)
{
    if (len < 6)
        return 0;
    int32_t n = (int32_t)((uint32_t)p[2] << 24 | (uint32_t)p[3] << 16 | (uint32_t)p[4] << 8 | p[5]);
    size_t pos = 6;
    for (int32_t i = 0; i < n; i++) {
        if (pos + 2 > len)
            return 0;
        size_t l = be16(p + pos);
        pos += 2;
        if (l > len - pos)
            return 0;
        if (topic_set_add(s, p + pos, l) != 0)
            return -1;
        pos += l;
    }
    return 0;
}

int group_subscribed_topics(const struct group *g, uint64_t seed, struct group_topic_set *s)
{
    group_index_init(&s->index, offsetof(struct group_topic, name), seed);
    if (!g->protocol)
        return 0;
    for (size_t i = 0; i < g->member_count; i++) {
        const struct group_member_protocol *p = group_member_protocol(g->members[i], g->protocol);
        if (p && add_subscription(s, p->metadata, p->metadata_len) != 0) {
            group_topic_set_free(s);
            return -1;
        }
    }
    return 0;
}

bool group_topic_set_has(const struct group_topic_set *s, const char *topic)
{
    return group_index_find(&s->index, topic) != NULL;
}

void group_topic_set_free(struct group_topic_set *s)
{
    for (size_t i = 0; i < s->index.cap; i++) {
        struct group_topic *t = s->index.slots[i];
        if (t) {
            free(t->name);
            free(t);
        }
    }
    group_index_free(&s->index);
}

static void flag(const struct group *g, const struct group_offset *pending, bool *flags)
{
    const struct group_offset *o = group_offset_table_find(&g->offsets, pending->topic, pending->partition);
    if (o)
        flags[o - g->offsets.items] = true;
}

int group_offsets_pending_flags(const struct group *g, bool with_txn, bool **out)
{
    *out = NULL;
    size_t txn = with_txn ? g->txn_offset_count : 0;
    if (g->offsets.count == 0 || (g->inflight_count == 0 && txn == 0))
        return 0;
    bool *flags = calloc(g->offsets.count, sizeof *flags);
    if (!flags)
        return -1;
    for (size_t i = 0; i < g->inflight_count; i++)
        flag(g, &g->inflight[i], flags);
    for (size_t i = 0; i < txn; i++)
        flag(g, &g->txn_offsets[i].offset, flags);
    *out = flags;
    return 0;
}
