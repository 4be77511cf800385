/* Topic names shared by the partitions of a fetch: a request's, session's
 * or plan's set holds each (name, id) once, so a partition carries a
 * pointer rather than a 256-byte name.
 *
 * Thread-safety: a set belongs to one owner (a request's thread, a session
 * under its lock, a plan); a topic's reference count is atomic, as a plan
 * may outlive its session on another thread. */
#ifndef CAIRN_HANDLERS_FETCH_TOPIC_H
#define CAIRN_HANDLERS_FETCH_TOPIC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/wire.h"

/* What malloc adds to each block, charged so the session budget tracks RSS. */
#define FETCH_MALLOC_OVERHEAD 16

/* A topic named by a fetch: immutable but for its counts, shared by the
 * partitions of one request, session or plan. refs is atomic because a plan
 * may outlive the session it came from on another thread; uses (partitions
 * of the one session table holding it) is guarded by that session's lock. */
struct fetch_topic {
    atomic_int refs;
    int32_t uses;
    struct kafka_uuid id;
    uint8_t name_len;
    char name[]; /* NUL-terminated; "" for an unknown topic id (v13+) */
};

struct fetch_topic *fetch_topic_new(const char *name, size_t len, const struct kafka_uuid *id);
struct fetch_topic *fetch_topic_ref(struct fetch_topic *t);
void fetch_topic_unref(struct fetch_topic *t);

/* A set of distinct topics: a request's (its handler's thread), a
 * session's (under the session's lock) or a sessionless plan's while its
 * duplicates are merged. */
struct fetch_topic_set {
    struct fetch_topic **slots; /* open addressing; NULL when empty */
    uint32_t mask;              /* capacity - 1; capacity a power of two or 0 */
    int32_t count;
    size_t bytes; /* the topics' own allocations */
    uint64_t seed;
};

/* The set's topic equal to (name, id), or a new one added to it (holding
 * one reference for the set); NULL without memory. */
struct fetch_topic *fetch_topic_set_intern(struct fetch_topic_set *set, const char *name, size_t len,
                                           const struct kafka_uuid *id);
/* The set's topic equal to t, or t itself added with a reference. */
struct fetch_topic *fetch_topic_set_adopt(struct fetch_topic_set *set, struct fetch_topic *t);
/* The set's topic equal to key, or NULL. */
struct fetch_topic *fetch_topic_set_find(const struct fetch_topic_set *set, const struct fetch_topic *key);
/* Drops t (the set's own) from the set, and the set's reference. */
void fetch_topic_set_remove(struct fetch_topic_set *set, struct fetch_topic *t);
void fetch_topic_set_free(struct fetch_topic_set *set);

#endif
