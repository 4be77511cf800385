/* A token bucket per usage bucket: the throttle that bounds bursts.
 *
 * Kafka's sampled rate (quota_rate_*) measures usage over up to
 * quota.window.num samples and counts a young measure as at least
 * quota.window.num - 1 windows, so after idle, and each time the sample
 * holding a burst expires, a client may send that many windows' worth of
 * quota at once. The bucket instead credits the quota continuously and
 * holds at most one window's worth, so what passes in any window stays
 * near the quota while the long-run rate is the same. */
#include "quota_internal.h"

#include <math.h>

int32_t quota_bucket_record(struct quota_token_bucket *bucket, const struct quota_window_config *config, double value,
                            double limit, int64_t now_ms)
{
    if (!(limit > 0))
        return 0;
    double capacity = limit * (double)config->window_ms / 1000.0;
    /* The debt a client may run up is what the longest throttle repays, as
     * the sampled rate forgets usage older than its whole window. */
    double max_throttle_ms = (double)config->samples * (double)config->window_ms;
    double max_debt = limit * max_throttle_ms / 1000.0;
    if (!bucket->started) {
        bucket->tokens = capacity;
        bucket->last_ms = now_ms;
        bucket->started = true;
    }
    if (now_ms > bucket->last_ms) {
        bucket->tokens += limit * (double)(now_ms - bucket->last_ms) / 1000.0;
        bucket->last_ms = now_ms;
    }
    /* A limit lowered at run time shrinks the bucket at once. */
    if (bucket->tokens > capacity)
        bucket->tokens = capacity;
    bucket->tokens -= value;
    if (bucket->tokens < -max_debt)
        bucket->tokens = -max_debt;
    if (!(bucket->tokens < 0))
        return 0;
    /* Kafka's throttle time: how long until the client is back within its
     * quota, here until the debt is repaid. */
    double throttle = -bucket->tokens / limit * 1000.0;
    if (throttle > max_throttle_ms)
        throttle = max_throttle_ms;
    if (throttle > INT32_MAX)
        throttle = INT32_MAX;
    return (int32_t)llround(throttle);
}
