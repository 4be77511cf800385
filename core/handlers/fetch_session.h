/* Incremental fetch sessions (KIP-227). A client that opens a session sends
 * only the partitions that changed; the broker remembers the rest and
 * answers with only the partitions that have news.
 *
 * Thread-safety: every function may be called from any thread. The cache's
 * mutex guards only its table of sessions (find, add, evict: O(slots) at
 * most); each session has its own mutex for its partitions, so one
 * client's wide session never holds up another client's fetch. Session ids
 * come from the kernel's CSPRNG (getrandom), so a client cannot guess
 * another's id to close or reuse its session. */
#ifndef CAIRN_HANDLERS_FETCH_SESSION_H
#define CAIRN_HANDLERS_FETCH_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/wire.h"

struct fetch_session_cache;

/* One partition of a fetch, from the request or remembered by a session. */
struct fetch_partition_state {
    char topic[256];
    struct kafka_uuid topic_id;
    int32_t partition;
    int64_t fetch_offset;
    int64_t log_start_offset;
    int32_t max_bytes;
    int32_t current_leader_epoch; /* the client's leader epoch (v9+); -1: not checked */
    int32_t last_fetched_epoch;   /* a follower's latest epoch (v12+); -1: none */
    /* What the last response said, so an incremental response can skip
     * partitions with nothing new. -1 before the first response. */
    int64_t last_high_watermark;
    int64_t last_log_start_offset;
};

/* The partitions of a request after applying it to its session. */
struct fetch_plan {
    int16_t error_code; /* NONE, FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH */
    int32_t response_session_id;
    bool incremental;                         /* answer with changed partitions only */
    struct fetch_partition_state *partitions; /* malloc'd copy, owned by the caller */
    int32_t partition_count;
};

struct fetch_session_cache *fetch_session_cache_create(int32_t max_slots);
void fetch_session_cache_destroy(struct fetch_session_cache *cache);

/* Request partitions are added/updated, forgotten ones removed; session_id
 * and epoch follow KIP-227 (0/-1 no session, 0/0 new full session, X/-1
 * close, X/0 close and open anew, X/N>0 incremental). A partition named
 * more than once counts once, the last copy winning in the first one's
 * place, as in Kafka's map of the request: it is read, answered and
 * watched once. */
int fetch_session_apply(struct fetch_session_cache *cache, int32_t session_id, int32_t epoch,
                        const struct fetch_partition_state *updates, int32_t update_count,
                        const struct fetch_partition_state *forgotten, int32_t forgotten_count,
                        struct fetch_plan *plan);

/* After a response: remember what each partition's answer said. */
void fetch_session_record_sent(struct fetch_session_cache *cache, int32_t session_id,
                               const struct fetch_partition_state *sent, int32_t count);

void fetch_plan_free(struct fetch_plan *plan);
int32_t fetch_session_count(struct fetch_session_cache *cache);

#endif
