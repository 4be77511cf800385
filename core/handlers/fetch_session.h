/* Incremental fetch sessions (KIP-227). A client that opens a session sends
 * only the partitions that changed; the broker remembers the rest and
 * answers with only the partitions that have news.
 *
 * Thread-safety: every function may be called from any thread. The cache's
 * mutex guards only its table of sessions and its byte total (find, add,
 * evict: O(slots) at most); each session has its own mutex for its
 * partitions, so one client's wide session never holds up another client's
 * fetch. Session ids come from the kernel's CSPRNG (getrandom), so a client
 * cannot guess another's id to close or reuse its session.
 *
 * Memory: a session's partitions share one topic object per topic, so a
 * cached partition costs 70-110 bytes, and the cache's sessions together
 * stay within a byte budget (max.incremental.fetch.session.cache.bytes). */
#ifndef CAIRN_HANDLERS_FETCH_SESSION_H
#define CAIRN_HANDLERS_FETCH_SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "handlers/fetch_topic.h"
#include "protocol/wire.h"

struct fetch_session_cache;

/* One partition of a fetch, from the request or remembered by a session;
 * owned with the array holding it. topic is borrowed from the request's or
 * session's topic set, or held by the plan. */
struct fetch_partition_state {
    struct fetch_topic *topic;
    int32_t partition;
    int32_t max_bytes;
    int64_t fetch_offset;
    int64_t log_start_offset;
    int32_t current_leader_epoch; /* the client's leader epoch (v9+); -1: not checked */
    int32_t last_fetched_epoch;   /* a follower's latest epoch (v12+); -1: none */
    /* What the last response said, so an incremental response can skip
     * partitions with nothing new. -1 before the first response. */
    int64_t last_high_watermark;
    int64_t last_log_start_offset;
};

/* The partitions of a request after applying it to its session. Owned by
 * its fetch (the handler's thread, then the purgatory's while parked). */
struct fetch_plan {
    int16_t error_code; /* NONE, FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH */
    int32_t response_session_id;
    bool incremental;                         /* answer with changed partitions only */
    struct fetch_partition_state *partitions; /* malloc'd copy, owned by the caller */
    int32_t partition_count;
    struct fetch_topic **topics; /* a reference to each topic the partitions name */
    int32_t topic_count;
};

/* The cache's bounds, fixed at creation. What a new session may evict
 * follows Kafka's FetchSessionCache: a session unused for stale_ms goes
 * first; see fetch_session.c for the rest. */
struct fetch_session_limits {
    int32_t max_slots;
    int64_t max_bytes;
    int64_t stale_ms;
};

/* Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS. */
#define FETCH_SESSION_STALE_MS 120000

struct fetch_session_cache *fetch_session_cache_create(const struct fetch_session_limits *limits);
void fetch_session_cache_destroy(struct fetch_session_cache *cache);

/* Request partitions are added/updated, forgotten ones removed; session_id
 * and epoch follow KIP-227 (0/-1 no session, 0/0 new full session, X/-1
 * close, X/0 close and open anew, X/N>0 incremental). A partition named
 * more than once counts once, the last copy winning in the first one's
 * place, as in Kafka's map of the request: it is read, answered and
 * watched once. privileged: a follower's fetch (Kafka's privileged
 * sessions). A session that would not fit the budget is not created, or
 * an incremental one that outgrows it is closed: either way the plan is a
 * full one with session id 0, which clients answer with full fetches. */
int fetch_session_apply(struct fetch_session_cache *cache, int32_t session_id, int32_t epoch, bool privileged,
                        const struct fetch_partition_state *updates, int32_t update_count,
                        const struct fetch_partition_state *forgotten, int32_t forgotten_count,
                        struct fetch_plan *plan);

/* After a response: remember what each partition's answer said. */
void fetch_session_record_sent(struct fetch_session_cache *cache, int32_t session_id,
                               const struct fetch_partition_state *sent, int32_t count);

void fetch_plan_free(struct fetch_plan *plan);
/* An empty topic set hashing with the cache's random seed (names are the client's). */
void fetch_session_topic_set_init(struct fetch_session_cache *cache, struct fetch_topic_set *set);
int32_t fetch_session_count(struct fetch_session_cache *cache);
/* The bytes the cached sessions are charged for. */
int64_t fetch_session_cache_bytes(struct fetch_session_cache *cache);

#endif
