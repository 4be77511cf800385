#include "replication/quota.h"

#include "util/clock.h"

static bool unlimited(int64_t rate)
{
    return rate <= 0 || rate == INT64_MAX;
}

void replication_quota_init(struct replication_quota *q, int64_t rate)
{
    pthread_mutex_init(&q->lock, NULL);
    q->rate = rate;
    q->tokens = 0;
    q->last_ns = clock_mono_ns();
}

void replication_quota_destroy(struct replication_quota *q)
{
    pthread_mutex_destroy(&q->lock);
}

/* Under the lock. */
static void refill(struct replication_quota *q, int64_t now_ns)
{
    if (now_ns > q->last_ns && !unlimited(q->rate)) {
        double burst = (double)q->rate * REPLICATION_QUOTA_BURST_MS / 1000.0;
        q->tokens += (double)(now_ns - q->last_ns) * (double)q->rate / 1e9;
        if (q->tokens > burst)
            q->tokens = burst;
    }
    if (now_ns > q->last_ns)
        q->last_ns = now_ns;
}

void replication_quota_set_rate(struct replication_quota *q, int64_t rate)
{
    pthread_mutex_lock(&q->lock);
    refill(q, clock_mono_ns());
    q->rate = rate;
    if (unlimited(rate)) {
        q->tokens = 0; /* a later limit starts from nothing owed */
    } else {
        double burst = (double)rate * REPLICATION_QUOTA_BURST_MS / 1000.0;
        if (q->tokens > burst)
            q->tokens = burst;
    }
    pthread_mutex_unlock(&q->lock);
}

bool replication_quota_enabled(struct replication_quota *q)
{
    pthread_mutex_lock(&q->lock);
    bool on = !unlimited(q->rate);
    pthread_mutex_unlock(&q->lock);
    return on;
}

bool replication_quota_exceeded_at(struct replication_quota *q, int64_t now_ns)
{
    pthread_mutex_lock(&q->lock);
    refill(q, now_ns);
    bool exceeded = !unlimited(q->rate) && q->tokens < 0;
    pthread_mutex_unlock(&q->lock);
    return exceeded;
}

void replication_quota_record_at(struct replication_quota *q, int64_t bytes, int64_t now_ns)
{
    if (bytes <= 0)
        return;
    pthread_mutex_lock(&q->lock);
    refill(q, now_ns);
    if (!unlimited(q->rate))
        q->tokens -= (double)bytes;
    pthread_mutex_unlock(&q->lock);
}

int64_t replication_quota_wait_ms_at(struct replication_quota *q, int64_t now_ns)
{
    pthread_mutex_lock(&q->lock);
    refill(q, now_ns);
    int64_t ms = 0;
    if (!unlimited(q->rate) && q->tokens < 0)
        ms = (int64_t)(-q->tokens * 1000.0 / (double)q->rate) + 1;
    pthread_mutex_unlock(&q->lock);
    return ms;
}

bool replication_quota_exceeded(struct replication_quota *q)
{
    return replication_quota_exceeded_at(q, clock_mono_ns());
}

void replication_quota_record(struct replication_quota *q, int64_t bytes)
{
    replication_quota_record_at(q, bytes, clock_mono_ns());
}

int64_t replication_quota_wait_ms(struct replication_quota *q)
{
    return replication_quota_wait_ms_at(q, clock_mono_ns());
}
