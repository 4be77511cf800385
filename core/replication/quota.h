/* A replication byte-rate quota (Kafka's ReplicationQuotaManager, as a
 * token bucket): throttled fetches record the bytes they moved, and a
 * fetch asks first whether the quota is exceeded, leaving its throttled
 * partitions out (empty) while it is, so nothing sleeps and partitions
 * that are not throttled go on. The bucket refills at the rate and holds
 * at most REPLICATION_QUOTA_BURST_MS of it; it starts empty, and a fetch
 * may take it below zero (one fetch's bytes), which is paid back before
 * the next throttled one: over a long copy the bytes moved stay within
 * rate x time plus one fetch and the burst.
 *
 * Thread-safety: every function may be called from any thread once
 * replication_quota_init returned. */
#ifndef CAIRN_REPLICATION_QUOTA_H
#define CAIRN_REPLICATION_QUOTA_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define REPLICATION_QUOTA_BURST_MS 300

struct replication_quota {
    pthread_mutex_t lock; /* guards the fields below */
    int64_t rate;         /* bytes/s; INT64_MAX or <= 0: unlimited */
    double tokens;        /* bytes that may still go; below 0: exceeded */
    int64_t last_ns;      /* monotonic time tokens was last refilled */
};

void replication_quota_init(struct replication_quota *q, int64_t rate);
void replication_quota_destroy(struct replication_quota *q);
/* A new rate, effective at once (a dynamic broker config): the debt or
 * credit so far is kept, capped by the new rate's burst. */
void replication_quota_set_rate(struct replication_quota *q, int64_t rate);
bool replication_quota_enabled(struct replication_quota *q);
/* The _at forms take the monotonic time in ns (tests); the others read it. */
bool replication_quota_exceeded_at(struct replication_quota *q, int64_t now_ns);
void replication_quota_record_at(struct replication_quota *q, int64_t bytes, int64_t now_ns);
/* Milliseconds until it is no longer exceeded (0: it is not). */
int64_t replication_quota_wait_ms_at(struct replication_quota *q, int64_t now_ns);
bool replication_quota_exceeded(struct replication_quota *q);
void replication_quota_record(struct replication_quota *q, int64_t bytes);
int64_t replication_quota_wait_ms(struct replication_quota *q);

#endif
