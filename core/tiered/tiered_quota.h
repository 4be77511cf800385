/* A byte-rate quota measured as Kafka's RLMQuotaManager measures it: a
 * Rate over `samples` windows of `window_ms` (SampledStat), which is
 * exceeded once the rate is above the bound. Unlike a token bucket, the
 * rate over a young history is divided by at least (samples - 1) windows,
 * so the first bytes count against a full span, as in Kafka.
 *
 * Thread-safety: every function may be called from any thread once
 * tiered_quota_init returned. */
#ifndef CAIRN_TIERED_TIERED_QUOTA_H
#define CAIRN_TIERED_TIERED_QUOTA_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define TIERED_QUOTA_SAMPLES_MAX 128 /* remote.log.manager.*.quota.window.num's upper bound */

struct tiered_quota {
    pthread_mutex_t lock; /* guards the fields below */
    int64_t bound;        /* bytes/s; INT64_MAX or <= 0: unlimited */
    int32_t samples;
    int64_t window_ms;
    int64_t sample_start_ms[TIERED_QUOTA_SAMPLES_MAX]; /* -1: never used */
    int64_t sample_bytes[TIERED_QUOTA_SAMPLES_MAX];
    int32_t current; /* the sample now being filled */
};

void tiered_quota_init(struct tiered_quota *q, int64_t bound, int32_t samples, int64_t window_ms);
void tiered_quota_destroy(struct tiered_quota *q);
/* A new bound, effective at once (a dynamic broker config); history kept. */
void tiered_quota_set_bound(struct tiered_quota *q, int64_t bound);
/* The _at forms take the monotonic time in ms (tests); the others read it. */
void tiered_quota_record_at(struct tiered_quota *q, int64_t bytes, int64_t now_ms);
/* Bytes per second over the kept samples. */
double tiered_quota_rate_at(struct tiered_quota *q, int64_t now_ms);
/* Milliseconds to wait before the rate is back within the bound (0: it
 * is): Kafka's QuotaUtils.boundedThrottleTime, (rate - bound) / bound
 * times the measured span, at most the whole span of samples. */
int64_t tiered_quota_throttle_ms_at(struct tiered_quota *q, int64_t now_ms);
void tiered_quota_record(struct tiered_quota *q, int64_t bytes);
int64_t tiered_quota_throttle_ms(struct tiered_quota *q);
bool tiered_quota_exceeded(struct tiered_quota *q);

#endif
