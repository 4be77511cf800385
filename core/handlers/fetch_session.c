#include "handlers/fetch_session.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/generated/errors.h"
#include "util/clock.h"

struct fetch_session {
    int32_t id;
    int32_t next_epoch;
    int64_t last_used_ms;
    struct fetch_partition_state *parts;
    int32_t count, cap;
};

struct fetch_session_cache {
    pthread_mutex_t lock;
    struct fetch_session *sessions;
    int32_t count, max_slots;
    uint32_t rng;
};

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
    return c;
}

void fetch_session_cache_destroy(struct fetch_session_cache *c)
{
    if (!c)
        return;
    for (int32_t i = 0; i < c->count; i++)
        free(c->sessions[i].parts);
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
    free(s->parts);
    *s = c->sessions[--c->count];
}

static bool same_partition(const struct fetch_partition_state *a, const struct fetch_partition_state *b)
{
    return a->partition == b->partition && strcmp(a->topic, b->topic) == 0;
}

static int upsert(struct fetch_session *s, const struct fetch_partition_state *u)
{
    for (int32_t i = 0; i < s->count; i++) {
        if (same_partition(&s->parts[i], u)) {
            int64_t hw = s->parts[i].last_high_watermark, ls = s->parts[i].last_log_start_offset;
            s->parts[i] = *u;
            s->parts[i].last_high_watermark = hw;
            s->parts[i].last_log_start_offset = ls;
            return 0;
        }
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
    s->count++;
    return 0;
}

static void forget(struct fetch_session *s, const struct fetch_partition_state *f)
{
    for (int32_t i = 0; i < s->count; i++) {
        if (same_partition(&s->parts[i], f)) {
            s->parts[i] = s->parts[--s->count];
            return;
        }
    }
}

/* A new session evicts the least recently used one when the cache is full. */
static struct fetch_session *new_session(struct fetch_session_cache *c)
{
    if (c->count == c->max_slots) {
        struct fetch_session *oldest = &c->sessions[0];
        for (int32_t i = 1; i < c->count; i++)
            if (c->sessions[i].last_used_ms < oldest->last_used_ms)
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
            for (int32_t i = 0; i < update_count && rc == 0; i++)
                rc = upsert(s, &updates[i]);
            for (int32_t i = 0; i < forgotten_count; i++)
                forget(s, &forgotten[i]);
            s->next_epoch = epoch == INT32_MAX ? 1 : epoch + 1;
            s->last_used_ms = clock_mono_ms();
            plan->incremental = true;
            plan->response_session_id = s->id;
            if (rc == 0)
                rc = copy_plan(plan, s->parts, s->count);
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
        s->last_used_ms = clock_mono_ms();
        for (int32_t i = 0; i < update_count && rc == 0; i++)
            rc = upsert(s, &updates[i]);
        plan->response_session_id = s->id;
        if (rc != 0)
            remove_session(c, s);
    }
    pthread_mutex_unlock(&c->lock);
    if (rc == 0)
        rc = copy_plan(plan, updates, update_count);
    return rc;
}

void fetch_session_record_sent(struct fetch_session_cache *c, int32_t session_id,
                               const struct fetch_partition_state *sent, int32_t count)
{
    if (session_id == 0)
        return;
    pthread_mutex_lock(&c->lock);
    struct fetch_session *s = find_session(c, session_id);
    for (int32_t i = 0; s && i < count; i++) {
        for (int32_t j = 0; j < s->count; j++) {
            if (same_partition(&s->parts[j], &sent[i])) {
                s->parts[j].last_high_watermark = sent[i].last_high_watermark;
                s->parts[j].last_log_start_offset = sent[i].last_log_start_offset;
                break;
            }
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
