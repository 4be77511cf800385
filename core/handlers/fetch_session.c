#include "handlers/fetch_session.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "metrics/metrics.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"
#include "util/hash.h"

/* Open-addressing index from (topic, partition) to a position in a
 * partition array, so inserting, updating and forgetting N partitions costs
 * O(N). Topics are interned per set, so the key is the topic's address.
 * Linear probing with backward-shift removal; at most half full. */
struct part_index {
    int32_t *slots; /* position in the array, -1 when empty */
    uint32_t mask;  /* capacity - 1; capacity is a power of two or 0 */
    int32_t used;
};

/* A set of partitions in first-seen order with its index and topics: a
 * session's (under the session's lock), or a request's while its duplicates
 * are merged (the handler's thread). */
struct part_set {
    struct fetch_partition_state *parts;
    int32_t count, cap;
    struct part_index index;
    struct fetch_topic_set topics;
};

static uint64_t part_hash(uint64_t seed, const struct fetch_partition_state *p)
{
    uintptr_t addr = (uintptr_t)p->topic;
    return hash_finish(hash_fold_bytes(HASH_FNV_OFFSET ^ seed, &addr, sizeof addr) ^ (uint32_t)p->partition);
}

static uint32_t index_slot(const struct part_index *ix, uint64_t seed, const struct fetch_partition_state *parts,
                           const struct fetch_partition_state *key)
{
    uint32_t i = (uint32_t)part_hash(seed, key) & ix->mask;
    while (ix->slots[i] >= 0 &&
           !(parts[ix->slots[i]].topic == key->topic && parts[ix->slots[i]].partition == key->partition))
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
    fetch_topic_set_free(&s->topics);
    memset(s, 0, sizeof *s);
}

/* What the set's memory costs, as charged against the cache's budget. */
static int64_t part_set_bytes(const struct part_set *s)
{
    size_t b = (size_t)s->cap * sizeof *s->parts + (s->index.mask ? (size_t)s->index.mask + 1 : 0) * sizeof(int32_t) +
               (s->topics.mask ? (size_t)s->topics.mask + 1 : 0) * sizeof(void *) + s->topics.bytes +
               3 * FETCH_MALLOC_OVERHEAD;
    return (int64_t)b;
}

static int32_t part_set_find(const struct part_set *s, uint64_t seed, const struct fetch_partition_state *key)
{
    if (s->count == 0)
        return -1;
    return s->index.slots[index_slot(&s->index, seed, s->parts, key)];
}

/* The set's own topic for key's (added when adding), via a one-entry memo:
 * a request's partitions come in runs of one topic. On the caller's stack. */
struct topic_memo {
    const struct fetch_topic *from;
    struct fetch_topic *to;
};

static struct fetch_topic *set_topic(struct part_set *s, struct topic_memo *memo, struct fetch_topic *key, bool add)
{
    if (memo->from == key && memo->to)
        return memo->to;
    struct fetch_topic *t = add ? fetch_topic_set_adopt(&s->topics, key) : fetch_topic_set_find(&s->topics, key);
    memo->from = key;
    memo->to = t;
    return t;
}

/* Adds u, or updates the partition it names keeping what was last sent
 * (a later copy of a partition in one request wins, in the first's place). */
static int part_set_upsert(struct part_set *s, uint64_t seed, struct topic_memo *memo,
                           const struct fetch_partition_state *u)
{
    struct fetch_partition_state key = *u;
    key.topic = set_topic(s, memo, u->topic, true);
    if (!key.topic)
        return -1;
    if ((uint32_t)(s->index.used + 1) * 2 > (s->index.mask ? s->index.mask + 1 : 0) &&
        index_grow(&s->index, seed, s->parts, s->count) != 0)
        return -1;
    uint32_t slot = index_slot(&s->index, seed, s->parts, &key);
    int32_t at = s->index.slots[slot];
    if (at >= 0) {
        key.last_high_watermark = s->parts[at].last_high_watermark;
        key.last_log_start_offset = s->parts[at].last_log_start_offset;
        s->parts[at] = key;
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
    key.last_high_watermark = -1;
    key.last_log_start_offset = -1;
    s->parts[s->count] = key;
    s->index.slots[slot] = s->count++;
    s->index.used++;
    key.topic->uses++;
    return 0;
}

/* Removes the partition f names; the last one moves into its place. A topic
 * no partition names any more leaves the set. */
static void part_set_forget(struct part_set *s, uint64_t seed, struct topic_memo *memo,
                            const struct fetch_partition_state *f)
{
    if (s->count == 0)
        return;
    struct fetch_partition_state key = *f;
    key.topic = set_topic(s, memo, f->topic, false);
    if (!key.topic)
        return;
    uint32_t slot = index_slot(&s->index, seed, s->parts, &key);
    int32_t at = s->index.slots[slot];
    if (at < 0)
        return;
    index_remove_slot(&s->index, seed, s->parts, slot);
    int32_t last = --s->count;
    if (at != last) {
        s->index.slots[index_slot(&s->index, seed, s->parts, &s->parts[last])] = at;
        s->parts[at] = s->parts[last];
    }
    if (--key.topic->uses == 0) {
        memo->to = NULL;
        fetch_topic_set_remove(&s->topics, key.topic);
    }
}

/* Sizes an empty set for n partitions at once, so filling it from a
 * request never holds an array and its doubled copy together. */
static int part_set_reserve(struct part_set *s, int32_t n)
{
    uint32_t cap = 32;
    while (cap < (uint32_t)n * 2 && cap < (1u << 31))
        cap *= 2;
    s->parts = malloc((size_t)(n ? n : 1) * sizeof *s->parts);
    s->index.slots = malloc((size_t)cap * sizeof *s->index.slots);
    if (!s->parts || !s->index.slots)
        return -1;
    memset(s->index.slots, 0xff, (size_t)cap * sizeof *s->index.slots);
    s->index.mask = cap - 1;
    s->cap = n ? n : 1;
    return 0;
}

static int part_set_upsert_all(struct part_set *s, uint64_t seed, const struct fetch_partition_state *u, int32_t n)
{
    struct topic_memo memo = {0};
    for (int32_t i = 0; i < n; i++)
        if (part_set_upsert(s, seed, &memo, &u[i]) != 0)
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

/* A session. id and privileged are fixed; refs, last_used_ms, in_use,
 * in_table and bytes are guarded by the cache's lock; next_epoch and set
 * by the session's own lock, so one client's session work never holds the
 * lock every other fetch needs. */
struct fetch_session {
    int32_t id;
    bool privileged; /* a follower's (Kafka's privileged sessions) */
    int refs;        /* the cache's, plus one per fetch using it */
    int64_t created_ms, last_used_ms;
    bool in_use;        /* has served an incremental fetch */
    bool in_table;      /* charged to the cache's byte total */
    int64_t bytes;      /* charged for the session and its set */
    int64_t partitions; /* its cached partitions when last charged */
    pthread_mutex_t lock;
    int32_t next_epoch;
    struct part_set set;
};

/* The lock guards the session table and the byte total. */
struct fetch_session_cache {
    pthread_mutex_t lock;
    struct fetch_session **sessions;
    int32_t count;
    struct fetch_session_limits limits;
    int64_t bytes;      /* charged by the sessions in the table */
    int64_t partitions; /* cached by the sessions in the table */
    uint64_t hash_seed; /* keys the partition and topic hashes */
    /* Kafka's FetchSessionCache gauges (NumIncrementalFetchSessions,
     * NumIncrementalFetchPartitionsCached, IncrementalFetchSessionEvictionsPerSec)
     * and the byte total; process-wide, so the broker's one cache owns them. */
    struct metrics_metric *sessions_gauge, *partitions_gauge, *bytes_gauge, *evictions;
};

/* Caller holds the cache's lock. */
static void publish_gauges_locked(struct fetch_session_cache *c)
{
    metrics_set(c->sessions_gauge, c->count);
    metrics_set(c->partitions_gauge, c->partitions);
    metrics_set(c->bytes_gauge, c->bytes);
}

struct fetch_session_cache *fetch_session_cache_create(const struct fetch_session_limits *limits)
{
    struct fetch_session_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->limits = *limits;
    if (c->limits.max_slots < 1)
        c->limits.max_slots = 1;
    c->sessions = calloc((size_t)c->limits.max_slots, sizeof *c->sessions);
    if (!c->sessions || random_bytes(&c->hash_seed, sizeof c->hash_seed) != 0) {
        free(c->sessions);
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->sessions_gauge = metrics_register(METRICS_GAUGE, "cairn_fetch_sessions", NULL,
                                         "Incremental fetch sessions cached (KIP-227)");
    c->partitions_gauge = metrics_register(METRICS_GAUGE, "cairn_fetch_session_partitions_cached", NULL,
                                           "Partitions remembered by the cached fetch sessions");
    c->bytes_gauge = metrics_register(METRICS_GAUGE, "cairn_fetch_session_cache_bytes", NULL,
                                      "Bytes the cached fetch sessions are charged for, against "
                                      "max.incremental.fetch.session.cache.bytes");
    c->evictions = metrics_register(METRICS_COUNTER, "cairn_fetch_session_evictions_total", NULL,
                                    "Fetch sessions evicted to make room for another");
    return c;
}

static struct fetch_session *session_new(const struct fetch_session_cache *c, bool privileged)
{
    struct fetch_session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->lock, NULL);
    s->next_epoch = 1;
    s->privileged = privileged;
    s->set.topics.seed = c->hash_seed;
    return s;
}

static void session_free(struct fetch_session *s)
{
    part_set_free(&s->set);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static int64_t session_bytes(const struct fetch_session *s)
{
    return (int64_t)(sizeof *s + FETCH_MALLOC_OVERHEAD) + part_set_bytes(&s->set);
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
        s->last_used_ms = clock_mono_ms();
    }
    pthread_mutex_unlock(&c->lock);
    return s;
}

/* Takes a session out of the table and its bytes off the total; a fetch
 * still using it keeps it alive. */
static void remove_slot_locked(struct fetch_session_cache *c, int32_t slot)
{
    struct fetch_session *s = c->sessions[slot];
    c->sessions[slot] = c->sessions[--c->count];
    c->bytes -= s->bytes;
    c->partitions -= s->partitions;
    s->in_table = false;
    publish_gauges_locked(c);
    session_unref_locked(s);
}

static void remove_session_locked(struct fetch_session_cache *c, struct fetch_session *s)
{
    for (int32_t i = 0; i < c->count; i++)
        if (c->sessions[i] == s) {
            remove_slot_locked(c, i);
            return;
        }
}

/* A session's worth as Kafka's EvictableKey sees it (privileged, size, id;
 * a newcomer's id is 0, so it loses ties), with one Cairn rank between: a
 * session that has served incremental fetches is worth more than any that
 * has not, so a client opening wide sessions it never uses cannot push out
 * an older consumer session that is in use. Size is in bytes, not
 * partitions, as the budget is. A value, read under the cache's lock. */
struct session_key {
    bool privileged, in_use;
    int64_t bytes;
    int32_t id;
};

static int key_cmp(const struct session_key *a, const struct session_key *b)
{
    if (a->privileged != b->privileged)
        return a->privileged ? 1 : -1;
    if (a->in_use != b->in_use)
        return a->in_use ? 1 : -1;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? 1 : -1;
    return a->id > b->id ? 1 : a->id < b->id ? -1 : 0;
}

static struct session_key key_of(const struct fetch_session *s)
{
    return (struct session_key){s->privileged, s->in_use, s->bytes, s->id};
}

/* An eviction candidate: stale ones first, oldest first; then by key.
 * Built and used under the cache's lock. */
struct victim {
    struct fetch_session *s;
    bool stale;
    struct session_key key;
    int64_t last_used_ms;
};

static int victim_cmp(const void *pa, const void *pb)
{
    const struct victim *a = pa, *b = pb;
    if (a->stale != b->stale)
        return a->stale ? -1 : 1;
    if (a->stale)
        return a->last_used_ms < b->last_used_ms ? -1 : a->last_used_ms > b->last_used_ms;
    return key_cmp(&a->key, &b->key);
}

/* Makes room for a session of key's size in slots and bytes, following
 * Kafka's FetchSessionCacheShard.tryEvict: a stale session (unused for
 * stale_ms) goes first, whoever asks; then the least worth, if worth no
 * more than the newcomer and evictable by it: by anyone when created over
 * stale_ms ago, by a privileged newcomer also when unprivileged. Unlike
 * Kafka, several may go to free the bytes, and none goes unless the room
 * can be made. `keep` is never evicted. Caller holds the lock. */
static bool make_room_locked(struct fetch_session_cache *c, const struct session_key *key, int64_t need,
                             const struct fetch_session *keep, int32_t extra_slots)
{
    const struct fetch_session_limits *l = &c->limits;
    if (c->count + extra_slots <= l->max_slots && c->bytes + need <= l->max_bytes)
        return true;
    if (need > l->max_bytes || c->count == 0)
        return false;
    struct victim *v = malloc((size_t)c->count * sizeof *v);
    if (!v)
        return false;
    int64_t now = clock_mono_ms();
    int32_t n = 0;
    for (int32_t i = 0; i < c->count; i++) {
        struct fetch_session *s = c->sessions[i];
        if (s == keep)
            continue;
        struct victim cand = {s, now - s->last_used_ms > l->stale_ms, key_of(s), s->last_used_ms};
        bool settled = now - s->created_ms > l->stale_ms;
        bool evictable = settled || (key->privileged && !s->privileged);
        if (cand.stale || (evictable && key_cmp(&cand.key, key) <= 0))
            v[n++] = cand;
    }
    qsort(v, (size_t)n, sizeof *v, victim_cmp);
    int32_t take = 0, slots = c->count + extra_slots;
    int64_t bytes = c->bytes + need;
    while (take < n && (slots > l->max_slots || bytes > l->max_bytes)) {
        slots--;
        bytes -= v[take++].s->bytes;
    }
    bool fits = slots <= l->max_slots && bytes <= l->max_bytes;
    for (int32_t i = 0; fits && i < take; i++)
        remove_session_locked(c, v[i].s);
    if (fits)
        metrics_add(c->evictions, take);
    free(v);
    return fits;
}

/* Publishes a filled session under a fresh random id if room can be made.
 * Returns the id, or 0 when it is not cached (no room, or no id could be
 * drawn): the fetch then goes on without a session, as KIP-227 allows. */
static int32_t session_publish(struct fetch_session_cache *c, struct fetch_session *s)
{
    int64_t bytes = session_bytes(s);
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
    struct session_key key = {s->privileged, false, bytes, 0};
    if (id != 0 && make_room_locked(c, &key, bytes, NULL, 1)) {
        s->id = id;
        s->refs = 1;
        s->created_ms = s->last_used_ms = clock_mono_ms();
        s->bytes = bytes;
        s->partitions = s->set.count;
        s->in_table = true;
        c->sessions[c->count++] = s;
        c->bytes += bytes;
        c->partitions += s->partitions;
        publish_gauges_locked(c);
    } else {
        id = 0;
    }
    pthread_mutex_unlock(&c->lock);
    return id;
}

/* The plan gets a copy of the set's partitions (or its array, with take)
 * and a reference to each of its topics, so it outlives the set. */
static int copy_plan(struct fetch_plan *plan, struct part_set *set, bool take)
{
    int32_t n = set->count;
    plan->partition_count = n;
    if (take && set->parts) {
        plan->partitions = set->parts;
        set->parts = NULL;
        n = 0;
    } else {
        plan->partitions = malloc((size_t)(n ? n : 1) * sizeof *set->parts);
    }
    plan->topics = malloc((size_t)(set->topics.count ? set->topics.count : 1) * sizeof *plan->topics);
    if (!plan->partitions || !plan->topics) {
        free(plan->partitions);
        free(plan->topics);
        memset(plan, 0, sizeof *plan);
        return -1;
    }
    if (n > 0)
        memcpy(plan->partitions, set->parts, (size_t)n * sizeof *set->parts);
    plan->topic_count = 0;
    for (uint32_t i = 0; set->topics.slots && i <= set->topics.mask; i++)
        if (set->topics.slots[i])
            plan->topics[plan->topic_count++] = fetch_topic_ref(set->topics.slots[i]);
    return 0;
}

/* The plan of a full request: its partitions with duplicates merged. */
static int full_plan(uint64_t seed, const struct fetch_partition_state *updates, int32_t n, struct fetch_plan *plan)
{
    struct part_set set = {0};
    set.topics.seed = seed;
    int rc = part_set_reserve(&set, n);
    if (rc == 0)
        rc = part_set_upsert_all(&set, seed, updates, n);
    if (rc == 0)
        rc = copy_plan(plan, &set, true);
    part_set_free(&set);
    return rc;
}

/* Charges a session's new size, evicting others if it outgrew the budget;
 * false when it cannot stay (it is then closed). Caller holds s->lock. */
static bool charge_growth(struct fetch_session_cache *c, struct fetch_session *s)
{
    int64_t bytes = session_bytes(s);
    pthread_mutex_lock(&c->lock);
    bool stays = s->in_table;
    if (stays) {
        s->in_use = true;
        struct session_key key = {s->privileged, true, bytes, s->id};
        int64_t delta = bytes - s->bytes;
        stays = delta <= 0 || make_room_locked(c, &key, delta, s, 0);
        if (stays) {
            c->bytes += delta;
            s->bytes = bytes;
            c->partitions += s->set.count - s->partitions;
            s->partitions = s->set.count;
            publish_gauges_locked(c);
        } else {
            remove_session_locked(c, s);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return stays;
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
        struct topic_memo memo = {0};
        for (int32_t i = 0; i < forgotten_count; i++)
            part_set_forget(&s->set, c->hash_seed, &memo, &forgotten[i]);
        s->next_epoch = epoch == INT32_MAX ? 1 : epoch + 1;
        if (rc == 0)
            rc = copy_plan(plan, &s->set, false);
        /* Outgrown the budget: a full answer with session id 0, after
         * which the client fetches in full (Kafka's clients, librdkafka). */
        if (charge_growth(c, s)) {
            plan->incremental = true;
            plan->response_session_id = s->id;
        }
    }
    pthread_mutex_unlock(&s->lock);
    session_unref(c, s);
    return rc;
}

/* A full fetch opening a session (X/0 or 0/0): the session is filled before
 * it is published, outside every shared lock. */
static int open_session(struct fetch_session_cache *c, bool privileged, const struct fetch_partition_state *updates,
                        int32_t update_count, struct fetch_plan *plan)
{
    struct fetch_session *s = session_new(c, privileged);
    if (!s)
        return -1;
    if (part_set_reserve(&s->set, update_count) != 0 ||
        part_set_upsert_all(&s->set, c->hash_seed, updates, update_count) != 0 ||
        copy_plan(plan, &s->set, false) != 0) {
        session_free(s);
        return -1;
    }
    /* Most sessions never grow: give back the array's doubling slack. */
    if (s->set.count > 0 && s->set.count < s->set.cap) {
        struct fetch_partition_state *fit = realloc(s->set.parts, (size_t)s->set.count * sizeof *fit);
        if (fit) {
            s->set.parts = fit;
            s->set.cap = s->set.count;
        }
    }
    plan->response_session_id = session_publish(c, s);
    if (plan->response_session_id == 0)
        session_free(s);
    return 0;
}

int fetch_session_apply(struct fetch_session_cache *c, int32_t session_id, int32_t epoch, bool privileged,
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
        return open_session(c, privileged, updates, update_count, plan);
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
    /* The plan's topics are the session's, unless forgotten since (then
     * no partition matches: their addresses stay the plan's until freed). */
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
    for (int32_t i = 0; i < plan->topic_count; i++)
        fetch_topic_unref(plan->topics[i]);
    free(plan->topics);
    free(plan->partitions);
    plan->topics = NULL;
    plan->topic_count = 0;
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

void fetch_session_topic_set_init(struct fetch_session_cache *c, struct fetch_topic_set *set)
{
    memset(set, 0, sizeof *set);
    set->seed = c->hash_seed;
}

int64_t fetch_session_cache_bytes(struct fetch_session_cache *c)
{
    pthread_mutex_lock(&c->lock);
    int64_t n = c->bytes;
    pthread_mutex_unlock(&c->lock);
    return n;
}
