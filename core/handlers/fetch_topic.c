/* Topics shared by the partitions of a fetch request, session or plan. */
#include "handlers/fetch_topic.h"

#include <stdlib.h>
#include <string.h>

#include "util/hash.h"

struct fetch_topic *fetch_topic_new(const char *name, size_t len, const struct kafka_uuid *id)
{
    if (len > 255)
        len = 255;
    struct fetch_topic *t = malloc(sizeof *t + len + 1);
    if (!t)
        return NULL;
    atomic_init(&t->refs, 1);
    t->uses = 0;
    t->id = *id;
    t->name_len = (uint8_t)len;
    memcpy(t->name, name, len);
    t->name[len] = '\0';
    return t;
}

struct fetch_topic *fetch_topic_ref(struct fetch_topic *t)
{
    atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void fetch_topic_unref(struct fetch_topic *t)
{
    if (t && atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1)
        free(t);
}

static size_t topic_bytes(const struct fetch_topic *t)
{
    return sizeof *t + t->name_len + 1 + FETCH_MALLOC_OVERHEAD;
}

static uint64_t topic_hash(uint64_t seed, const char *name, size_t len, const struct kafka_uuid *id)
{
    uint64_t h = hash_fold_bytes(HASH_FNV_OFFSET ^ seed, name, len);
    return hash_finish(hash_fold_bytes(h, id, sizeof *id));
}

static bool topic_is(const struct fetch_topic *t, const char *name, size_t len, const struct kafka_uuid *id)
{
    return t->name_len == len && memcmp(t->name, name, len) == 0 && memcmp(&t->id, id, sizeof *id) == 0;
}

/* The slot holding (name, id), or the empty slot where it would go. */
static uint32_t topic_slot(const struct fetch_topic_set *s, const char *name, size_t len, const struct kafka_uuid *id)
{
    uint32_t i = (uint32_t)topic_hash(s->seed, name, len, id) & s->mask;
    while (s->slots[i] && !topic_is(s->slots[i], name, len, id))
        i = (i + 1) & s->mask;
    return i;
}

struct fetch_topic *fetch_topic_set_find(const struct fetch_topic_set *s, const struct fetch_topic *key)
{
    if (s->count == 0)
        return NULL;
    return s->slots[topic_slot(s, key->name, key->name_len, &key->id)];
}

static int topic_set_grow(struct fetch_topic_set *s)
{
    uint32_t cap = s->mask ? (s->mask + 1) * 2 : 8;
    struct fetch_topic **old = s->slots;
    uint32_t old_cap = s->mask ? s->mask + 1 : 0;
    s->slots = calloc(cap, sizeof *s->slots);
    if (!s->slots) {
        s->slots = old;
        return -1;
    }
    s->mask = cap - 1;
    for (uint32_t i = 0; i < old_cap; i++)
        if (old[i])
            s->slots[topic_slot(s, old[i]->name, old[i]->name_len, &old[i]->id)] = old[i];
    free(old);
    return 0;
}

/* The set's topic equal to key's, or key itself added with a reference
 * (adopt) or a new copy of it. */
static struct fetch_topic *topic_set_add(struct fetch_topic_set *s, const char *name, size_t len,
                                         const struct kafka_uuid *id, struct fetch_topic *adopt)
{
    if (len > 255)
        len = 255;
    if ((uint32_t)(s->count + 1) * 2 > (s->mask ? s->mask + 1 : 0) && topic_set_grow(s) != 0)
        return NULL;
    uint32_t slot = topic_slot(s, name, len, id);
    if (s->slots[slot])
        return s->slots[slot];
    struct fetch_topic *t = adopt ? fetch_topic_ref(adopt) : fetch_topic_new(name, len, id);
    if (!t)
        return NULL;
    s->slots[slot] = t;
    s->count++;
    s->bytes += topic_bytes(t);
    return t;
}

struct fetch_topic *fetch_topic_set_intern(struct fetch_topic_set *s, const char *name, size_t len,
                                           const struct kafka_uuid *id)
{
    return topic_set_add(s, name, len, id, NULL);
}

struct fetch_topic *fetch_topic_set_adopt(struct fetch_topic_set *s, struct fetch_topic *t)
{
    return topic_set_add(s, t->name, t->name_len, &t->id, t);
}

/* Drops t from the set (backward-shift removal) and the set's reference. */
void fetch_topic_set_remove(struct fetch_topic_set *s, struct fetch_topic *t)
{
    uint32_t hole = topic_slot(s, t->name, t->name_len, &t->id);
    if (s->slots[hole] != t)
        return;
    for (uint32_t j = hole;;) {
        j = (j + 1) & s->mask;
        struct fetch_topic *m = s->slots[j];
        if (!m)
            break;
        uint32_t home = (uint32_t)topic_hash(s->seed, m->name, m->name_len, &m->id) & s->mask;
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            s->slots[hole] = m;
            hole = j;
        }
    }
    s->slots[hole] = NULL;
    s->count--;
    s->bytes -= topic_bytes(t);
    fetch_topic_unref(t);
}

void fetch_topic_set_free(struct fetch_topic_set *s)
{
    for (uint32_t i = 0; s->slots && i <= s->mask; i++)
        fetch_topic_unref(s->slots[i]);
    free(s->slots);
    uint64_t seed = s->seed;
    memset(s, 0, sizeof *s);
    s->seed = seed;
}
