#include "handlers/fetch_session.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "protocol/generated/errors.h"
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

/* A session. id is fixed; refs and last_used are guarded by the cache's
 * lock; next_epoch and set by the session's own lock, so one client's
 * session work never holds the lock every other fetch needs. */
struct fetch_session {
    int32_t id;
    int refs;           /* the cache's, plus one per fetch using it */
    uint64_t last_used; /* the cache's use counter when last touched */
    pthread_mutex_t lock;
    int32_t next_epoch;
    struct part_set set;
};

/* The lock guards the session table only: finding, adding, evicting. */
struct fetch_session_cache {
    pthread_mutex_t lock;
    struct fetch_session **sessions;
    int32_t count, max_slots;
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

/* Unpredictable bytes from the kernel's CSPRNG. */
static int random_bytes(void *out, size_t len)
{
    uint8_t *p = out;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

struct fetch_session_cache *fetch_session_cache_create(int32_t max_slots)
{
    struct fetch_session_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->max_slots = max_slots > 0 ? max_slots : 1;
    c->sessions = calloc((size_t)c->max_slots, sizeof *c->sessions);
    if (!c->sessions || random_bytes(&c->hash_seed, sizeof c->hash_seed) != 0) {
        free(c->sessions);
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

static void session_free(struct fetch_session *s)
{
    part_set_free(&s->set);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Drops a reference; the caller holds the cache's lock. */
static void session_unref_locked(struct fetch_session *s)
{
    if (--s->refs == 0)
        session_free(s);
}

static void session_unref(struct fetch_session_cache *c, struct fetch_session *s)
{
    pthread_mutex_lock(&c->lock);
    session_unref_locked(s);
    pthread_mutex_unlock(&c->lock);
}

void fetch_session_cache_destroy(struct fetch_session_cache *c)
{
    if (!c)
        return;
    for (int32_t i = 0; i < c->count; i++)
        session_unref_locked(c->sessions[i]);
    free(c->sessions);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static int32_t find_slot(struct fetch_session_cache *c, int32_t id)
{
    for (int32_t i = 0; i < c->count; i++)
        if (c->sessions[i]->id == id)
            return i;
    return -1;
}

/* The session with this id, with a reference for the caller, or NULL. */
static struct fetch_session *session_get(struct fetch_session_cache *c, int32_t id)
{
    pthread_mutex_lock(&c->lock);
    int32_t slot = find_slot(c, id);
    struct fetch_session *s = slot >= 0 ? c->sessions[slot] : NULL;
    if (s) {
        s->refs++;
        s->last_used = ++c->use_counter;
    }
    pthread_mutex_unlock(&c->lock);
    return s;
}

/* Takes a session out of the table; a fetch still using it keeps it alive. */
static void remove_slot_locked(struct fetch_session_cache *c, int32_t slot)
{
    struct fetch_session *s = c->sessions[slot];
    c->sessions[slot] = c->sessions[--c->count];
    session_unref_locked(s);
}

/* Publishes a filled session under a fresh random id, evicting the least
 * recently used one when the cache is full. Returns the id, or 0 when no
 * id could be drawn (the fetch then goes on without a session). */
static int32_t session_publish(struct fetch_session_cache *c, struct fetch_session *s)
{
    pthread_mutex_lock(&c->lock);
    int32_t id = 0;
    for (int tries = 0; tries < 8 && id == 0; tries++) {
        uint32_t r;
        if (random_bytes(&r, sizeof r) != 0)
            break;
        id = (int32_t)(r & 0x7fffffff);
        if (find_slot(c, id) >= 0)
            id = 0;
    }
    if (id != 0) {
        if (c->count == c->max_slots) {
            int32_t oldest = 0;
            for (int32_t i = 1; i < c->count; i++)
                if (c->sessions[i]->last_used < c->sessions[oldest]->last_used)
                    oldest = i;
            remove_slot_locked(c, oldest);
        }
        s->id = id;
        s->refs = 1;
        s->last_used = ++c->use_counter;
        c->sessions[c->count++] = s;
    }
    pthread_mutex_unlock(&c->lock);
    return id;
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

/* An incremental fetch (X/N>0): its updates and forgets go into the session
 * under the session's lock only. */
static int apply_incremental(struct fetch_session_cache *c, int32_t session_id, int32_t epoch,
                             const struct fetch_partition_state *updates, int32_t update_count,
                             const struct fetch_partition_state *forgotten, int32_t forgotten_count,
                             struct fetch_plan *plan)
{
    struct fetch_session *s = session_get(c, session_id);
    if (!s) {
        plan->error_code = KAFKA_ERR_FETCH_SESSION_ID_NOT_FOUND;
        return 0;
    }
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    if (s->next_epoch != epoch) {
        plan->error_code = KAFKA_ERR_INVALID_FETCH_SESSION_EPOCH;
    } else {
        rc = part_set_upsert_all(&s->set, c->hash_seed, updates, update_count);
        for (int32_t i = 0; i < forgotten_count; i++)
            part_set_forget(&s->set, c->hash_seed, &forgotten[i]);
        s->next_epoch = epoch == INT32_MAX ? 1 : epoch + 1;
        plan->incremental = true;
        plan->response_session_id = s->id;
        if (rc == 0)
            rc = copy_plan(plan, s->set.parts, s->set.count);
    }
    pthread_mutex_unlock(&s->lock);
    session_unref(c, s);
    return rc;
}

/* A full fetch opening a session (X/0 or 0/0): the session is filled before
 * it is published, outside every shared lock. */
static int open_session(struct fetch_session_cache *c, const struct fetch_partition_state *updates,
                        int32_t update_count, struct fetch_plan *plan)
{
    struct fetch_session *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    pthread_mutex_init(&s->lock, NULL);
    s->next_epoch = 1;
    if (part_set_upsert_all(&s->set, c->hash_seed, updates, update_count) != 0 ||
        copy_plan(plan, s->set.parts, s->set.count) != 0) {
        session_free(s);
        return -1;
    }
    plan->response_session_id = session_publish(c, s);
    if (plan->response_session_id == 0)
        session_free(s);
    return 0;
}

int fetch_session_apply(struct fetch_session_cache *c, int32_t session_id, int32_t epoch,
                        const struct fetch_partition_state *updates, int32_t update_count,
                        const struct fetch_partition_state *forgotten, int32_t forgotten_count, struct fetch_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (session_id != 0 && epoch > 0)
        return apply_incremental(c, session_id, epoch, updates, update_count, forgotten, forgotten_count, plan);
    /* A full request: any named session ends here. */
    if (session_id != 0) {
        pthread_mutex_lock(&c->lock);
        int32_t slot = find_slot(c, session_id);
        if (slot >= 0)
            remove_slot_locked(c, slot);
        pthread_mutex_unlock(&c->lock);
    }
    if (epoch == 0)
        return open_session(c, updates, update_count, plan);
    return full_plan(c->hash_seed, updates, update_count, plan);
}

void fetch_session_record_sent(struct fetch_session_cache *c, int32_t session_id,
                               const struct fetch_partition_state *sent, int32_t count)
{
    if (session_id == 0)
        return;
    struct fetch_session *s = session_get(c, session_id);
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    for (int32_t i = 0; i < count; i++) {
        int32_t at = part_set_find(&s->set, c->hash_seed, &sent[i]);
        if (at >= 0) {
            s->set.parts[at].last_high_watermark = sent[i].last_high_watermark;
            s->set.parts[at].last_log_start_offset = sent[i].last_log_start_offset;
        }
    }
    pthread_mutex_unlock(&s->lock);
    session_unref(c, s);
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
