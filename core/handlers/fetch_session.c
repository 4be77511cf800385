#include "handlers/fetch_session.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/errors.h"
#include "util/clock.h"
#include "util/hash.h"

/* Open-addressing index from (topic, topic id, partition) to a position in
 * a partition array, so inserting, updating and forgetting N partitions
 * costs O(N) rather than a scan per partition. Linear probing with
 * backward-shift removal; at most half full. */
struct part_index {
    int32_t *slots; /* position in the array, -1 when empty */
    uint32_t mask;  /* capacity - 1; capacity is a power of two or 0 */
    int32_t used;
};

/* A set of partitions in first-seen order with its index: a session's, or
 * a request's while its duplicates are merged. */
struct part_set {
    struct fetch_partition_state *parts;
    int32_t count, cap;
    struct part_index index;
};

struct fetch_session {
    int32_t id;
    int32_t next_epoch;
    uint64_t last_used; /* the cache's use counter when last touched */
    struct part_set set;
};

struct fetch_session_cache {
    pthread_mutex_t lock;
    struct fetch_session *sessions;
    int32_t count, max_slots;
    uint32_t rng;
    uint64_t use_counter;
    uint64_t hash_seed; /* keys the partition index hash */
};

static uint64_t part_hash(uint64_t seed, const struct fetch_partition_state *p)
{
    /* Seeded per cache, so a client cannot pick partition keys that share a slot. */
    uint64_t h = hash_fold_bytes(HASH_FNV_OFFSET ^ seed, p->topic, strlen(p->topic));
    h = hash_fold_bytes(h, &p->topic_id, sizeof p->topic_id);
    return hash_finish(h ^ (uint32_t)p->partition);
}

static bool same_partition(const struct fetch_partition_state *a, const struct fetch_partition_state *b)
{
    return a->partition == b->partition && memcmp(&a->topic_id, &b->topic_id, sizeof a->topic_id) == 0 &&
           strcmp(a->topic, b->topic) == 0;
}

/* The slot holding key, or the empty slot where it would go. */
static uint32_t index_slot(const struct part_index *ix, uint64_t seed, const struct fetch_partition_state *parts,
                           const struct fetch_partition_state *key)
{
    uint32_t i = (uint32_t)part_hash(seed, key) & ix->mask;
    while (ix->slots[i] >= 0 && !same_partition(&parts[ix->slots[i]], key))
        i = (i + 1) & ix->mask;
    return i;
}

static int index_grow(struct part_index *ix, uint64_t seed, const struct fetch_partition_state *parts, int32_t count)
{
    uint32_t cap = ix->mask ? (ix->mask + 1) * 2 : 32;
    int32_t *slots = malloc((size_t)cap * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, (size_t)cap * sizeof *slots);
    free(ix->slots);
    ix->slots = slots;
    ix->mask = cap - 1;
    for (int32_t i = 0; i < count; i++)
        ix->slots[index_slot(ix, seed, parts, &parts[i])] = i;
    ix->used = count;
    return 0;
}

static void index_remove_slot(struct part_index *ix, uint64_t seed, const struct fetch_partition_state *parts,
                              uint32_t hole)
{
    uint32_t j = hole;
    for (;;) {
        j = (j + 1) & ix->mask;
        if (ix->slots[j] < 0)
            break;
        uint32_t home = (uint32_t)part_hash(seed, &parts[ix->slots[j]]) & ix->mask;
        /* Move j into the hole unless its home lies cyclically in (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            ix->slots[hole] = ix->slots[j];
            hole = j;
        }
    }
    ix->slots[hole] = -1;
    ix->used--;
}

static void part_set_free(struct part_set *s)
{
    free(s->parts);
    free(s->index.slots);
    memset(s, 0, sizeof *s);
}

static int32_t part_set_find(const struct part_set *s, uint64_t seed, const struct fetch_partition_state *key)
{
    if (s->count == 0)
        return -1;
    return s->index.slots[index_slot(&s->index, seed, s->parts, key)];
}

/* Adds u, or updates the partition it names keeping what was last sent
 * (a later copy of a partition in one request wins, in the first's place). */
static int part_set_upsert(struct part_set *s, uint64_t seed, const struct fetch_partition_state *u)
{
    if ((uint32_t)(s->index.used + 1) * 2 > (s->index.mask ? s->index.mask + 1 : 0) &&
        index_grow(&s->index, seed, s->parts, s->count) != 0)
        return -1;
    uint32_t slot = index_slot(&s->index, seed, s->parts, u);
    int32_t at = s->index.slots[slot];
    if (at >= 0) {
        int64_t hw = s->parts[at].last_high_watermark, ls = s->parts[at].last_log_start_offset;
        s->parts[at] = *u;
        s->parts[at].last_high_watermark = hw;
        s->parts[at].last_log_start_offset = ls;
        return 0;
    }
    if (s->count == s->cap) {
        int32_t cap = s->cap ? s->cap * 2 : 16;
        struct fetch_partition_state *p = realloc(s->parts, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        s->parts = p;
        s->cap = cap;
    }
    s->parts[s->count] = *u;
    s->parts[s->count].last_high_watermark = -1;
    s->parts[s->count].last_log_start_offset = -1;
    s->index.slots[slot] = s->count++;
    s->index.used++;
    return 0;
}

/* Removes the partition f names; the last one moves into its place. */
static void part_set_forget(struct part_set *s, uint64_t seed, const struct fetch_partition_state *f)
{
    if (s->count == 0)
        return;
    uint32_t slot = index_slot(&s->index, seed, s->parts, f);
    int32_t at = s->index.slots[slot];
    if (at < 0)
        return;
    index_remove_slot(&s->index, seed, s->parts, slot);
    int32_t last = --s->count;
    if (at != last) {
        s->index.slots[index_slot(&s->index, seed, s->parts, &s->parts[last])] = at;
        s->parts[at] = s->parts[last];
    }
}

static int part_set_upsert_all(struct part_set *s, uint64_t seed, const struct fetch_partition_state *u, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (part_set_upsert(s, seed, &u[i]) != 0)
            return -1;
    return 0;
}

struct fetch_session_cache *fetch_session_cache_create(int32_t max_slots)
{
    struct fetch_session_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->max_slots = max_slots > 0 ? max_slots : 1;
    c->sessions = calloc((size_t)c->max_slots, sizeof *c->sessions);
    if (!c->sessions) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->rng = (uint32_t)clock_mono_ns() | 1;
    c->hash_seed = (uint64_t)clock_mono_ns() * 0x9E3779B97F4A7C15ull;
    return c;
}

void fetch_session_cache_destroy(struct fetch_session_cache *c)
{
    if (!c)
        return;
    for (int32_t i = 0; i < c->count; i++)
        part_set_free(&c->sessions[i].set);
    free(c->sessions);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static struct fetch_session *find_session(struct fetch_session_cache *c, int32_t id)
{
    for (int32_t i = 0; i < c->count; i++)
        if (c->sessions[i].id == id)
            return &c->sessions[i];
    return NULL;
}

static void remove_session(struct fetch_session_cache *c, struct fetch_session *s)
{
    part_set_free(&s->set);
    *s = c->sessions[--c->count];
}

/* A new session evicts the least recently used one when the cache is full. */
static struct fetch_session *new_session(struct fetch_session_cache *c)
{
    if (c->count == c->max_slots) {
        struct fetch_session *oldest = &c->sessions[0];
        for (int32_t i = 1; i < c->count; i++)
            if (c->sessions[i].last_used < oldest->last_used)
                oldest = &c->sessions[i];
        remove_session(c, oldest);
    }
    struct fetch_session *s = &c->sessions[c->count++];
    memset(s, 0, sizeof *s);
    do {
        c->rng ^= c->rng << 13;
        c->rng ^= c->rng >> 17;
        c->rng ^= c->rng << 5;
        s->id = (int32_t)(c->rng & 0x7fffffff);
    } while (s->id == 0 || find_session(c, s->id) != s);
    s->next_epoch = 1;
    return s;
}

static int copy_plan(struct fetch_plan *plan, const struct fetch_partition_state *parts, int32_t n)
{
    plan->partition_count = n;
    plan->partitions = NULL;
    if (n == 0)
        return 0;
    plan->partitions = malloc((size_t)n * sizeof *parts);
    if (!plan->partitions)
        return -1;
    memcpy(plan->partitions, parts, (size_t)n * sizeof *parts);
    return 0;
}

/* The plan of a full request: its partitions with duplicates merged. */
static int full_plan(uint64_t seed, const struct fetch_partition_state *updates, int32_t n, struct fetch_plan *plan)
{
    struct part_set set = {0};
    int rc = part_set_upsert_all(&set, seed, updates, n);
    if (rc == 0) {
        /* The set's array becomes the plan's. */
        plan->partitions = set.parts;
        plan->partition_count = set.count;
        set.parts = NULL;
    }
    part_set_free(&set);
    return rc;
}

int fetch_session_apply(struct fetch_session_cache *c, int32_t session_id, int32_t epoch,
                        const struct fetch_partition_state *updates, int32_t update_count,
                        const struct fetch_partition_state *forgotten, int32_t forgotten_count, struct fetch_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    if (session_id != 0 && epoch > 0) {
        struct fetch_session *s = find_session(c, session_id);
        if (!s) {
            plan->error_code = KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND;
        } else if (s->next_epoch != epoch) {
            plan->error_code = KAFKA_ERR_INVALID_FETCH_SESSION_EPOCH;
        } else {
            rc = part_set_upsert_all(&s->set, c->hash_seed, updates, update_count);
            for (int32_t i = 0; i < forgotten_count; i++)
                part_set_forget(&s->set, c->hash_seed, &forgotten[i]);
            s->next_epoch = epoch == INT32_MAX ? 1 : epoch + 1;
            s->last_used = ++c->use_counter;
            plan->incremental = true;
            plan->response_session_id = s->id;
            if (rc == 0)
                rc = copy_plan(plan, s->set.parts, s->set.count);
        }
        pthread_mutex_unlock(&c->lock);
        return rc;
    }
    /* A full request: any named session ends here. */
    if (session_id != 0) {
        struct fetch_session *s = find_session(c, session_id);
        if (s)
            remove_session(c, s);
    }
    if (epoch == 0) {
        struct fetch_session *s = new_session(c);
        s->last_used = ++c->use_counter;
        rc = part_set_upsert_all(&s->set, c->hash_seed, updates, update_count);
        plan->response_session_id = s->id;
        if (rc == 0)
            rc = copy_plan(plan, s->set.parts, s->set.count);
        else
            remove_session(c, s);
        pthread_mutex_unlock(&c->lock);
        return rc;
    }
    pthread_mutex_unlock(&c->lock);
    return full_plan(c->hash_seed, updates, update_count, plan);
}

void fetch_session_record_sent(struct fetch_session_cache *c, int32_t session_id,
                               const struct fetch_partition_state *sent, int32_t count)
{
    if (session_id == 0)
        return;
    pthread_mutex_lock(&c->lock);
    struct fetch_session *s = find_session(c, session_id);
    for (int32_t i = 0; s && i < count; i++) {
        int32_t at = part_set_find(&s->set, c->hash_seed, &sent[i]);
        if (at >= 0) {
            s->set.parts[at].last_high_watermark = sent[i].last_high_watermark;
            s->set.parts[at].last_log_start_offset = sent[i].last_log_start_offset;
        }
    }
    pthread_mutex_unlock(&c->lock);
}

void fetch_plan_free(struct fetch_plan *plan)
{
    free(plan->partitions);
    plan->partitions = NULL;
    plan->partition_count = 0;
}

int32_t fetch_session_count(struct fetch_session_cache *c)
{
    pthread_mutex_lock(&c->lock);
    int32_t n = c->count;
    pthread_mutex_unlock(&c->lock);
    return n;
}
