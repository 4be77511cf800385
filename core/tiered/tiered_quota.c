#include "tiered/tiered_quota.h"

#include "util/clock.h"

static bool unlimited(int64_t bound)
{
    return bound <= 0 || bound == INT64_MAX;
}

void tiered_quota_init(struct tiered_quota *q, int64_t bound, int32_t samples, int64_t window_ms)
{
    pthread_mutex_init(&q->lock, NULL);
    q->bound = bound;
    q->samples = samples < 1 ? 1 : samples > TIERED_QUOTA_SAMPLES_MAX ? TIERED_QUOTA_SAMPLES_MAX : samples;
    q->window_ms = window_ms < 1 ? 1 : window_ms;
    for (int32_t i = 0; i < TIERED_QUOTA_SAMPLES_MAX; i++) {
        q->sample_start_ms[i] = -1;
        q->sample_bytes[i] = 0;
    }
    q->current = 0;
}

void tiered_quota_destroy(struct tiered_quota *q)
{
    pthread_mutex_destroy(&q->lock);
}

void tiered_quota_set_bound(struct tiered_quota *q, int64_t bound)
{
    pthread_mutex_lock(&q->lock);
    q->bound = bound;
    pthread_mutex_unlock(&q->lock);
}

/* SampledStat.purgeObsoleteSamples: samples that ended more than the whole
 * span ago count for nothing. Under the lock. */
static void purge(struct tiered_quota *q, int64_t now_ms)
{
    int64_t span = (int64_t)q->samples * q->window_ms;
    for (int32_t i = 0; i < q->samples; i++) {
        if (q->sample_start_ms[i] >= 0 && now_ms - q->sample_start_ms[i] >= span) {
            q->sample_start_ms[i] = -1;
            q->sample_bytes[i] = 0;
        }
    }
}

void tiered_quota_record_at(struct tiered_quota *q, int64_t bytes, int64_t now_ms)
{
    pthread_mutex_lock(&q->lock);
    purge(q, now_ms);
    int32_t cur = q->current;
    if (q->sample_start_ms[cur] < 0) {
        q->sample_start_ms[cur] = now_ms;
    } else if (now_ms - q->sample_start_ms[cur] >= q->window_ms) {
        /* SampledStat.advance: the next sample starts now. */
        cur = (cur + 1) % q->samples;
        q->current = cur;
        q->sample_start_ms[cur] = now_ms;
        q->sample_bytes[cur] = 0;
    }
    q->sample_bytes[cur] += bytes;
    pthread_mutex_unlock(&q->lock);
}

/* Rate.measure: the bytes of the kept samples over the time since the
 * oldest began, counted as at least (samples - 1) whole windows. Under the
 * lock; *span_ms gets that divisor. */
static double rate_locked(struct tiered_quota *q, int64_t now_ms, int64_t *span_ms)
{
    purge(q, now_ms);
    int64_t total = 0, oldest = now_ms;
    for (int32_t i = 0; i < q->samples; i++) {
        if (q->sample_start_ms[i] < 0)
            continue;
        total += q->sample_bytes[i];
        if (q->sample_start_ms[i] < oldest)
            oldest = q->sample_start_ms[i];
    }
    int64_t elapsed = now_ms - oldest;
    int64_t full = elapsed / q->window_ms;
    if (full < q->samples - 1)
        elapsed += (q->samples - 1 - full) * q->window_ms;
    if (elapsed < 1)
        elapsed = 1;
    *span_ms = elapsed;
    return (double)total * 1000.0 / (double)elapsed;
}

double tiered_quota_rate_at(struct tiered_quota *q, int64_t now_ms)
{
    pthread_mutex_lock(&q->lock);
    int64_t span_ms;
    double rate = rate_locked(q, now_ms, &span_ms);
    pthread_mutex_unlock(&q->lock);
    return rate;
}

int64_t tiered_quota_throttle_ms_at(struct tiered_quota *q, int64_t now_ms)
{
    pthread_mutex_lock(&q->lock);
    int64_t ms = 0;
    if (!unlimited(q->bound)) {
        int64_t span_ms;
        double rate = rate_locked(q, now_ms, &span_ms);
        double bound = (double)q->bound;
        if (rate > bound) {
            double wait = (rate - bound) / bound * (double)span_ms;
            double most = (double)q->samples * (double)q->window_ms;
            ms = (int64_t)(wait < most ? wait : most) + 1;
        }
    }
    pthread_mutex_unlock(&q->lock);
    return ms;
}

void tiered_quota_record(struct tiered_quota *q, int64_t bytes)
{
    tiered_quota_record_at(q, bytes, clock_mono_ms());
}

int64_t tiered_quota_throttle_ms(struct tiered_quota *q)
{
    return tiered_quota_throttle_ms_at(q, clock_mono_ms());
}

bool tiered_quota_exceeded(struct tiered_quota *q)
{
    return tiered_quota_throttle_ms(q) > 0;
}
