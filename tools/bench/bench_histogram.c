#include "bench_histogram.h"

#include <string.h>

#define LINEAR_LIMIT 128u /* values below this have their own bucket */
#define SUB_BUCKETS (1u << BENCH_HISTOGRAM_SUB_BITS)

void bench_histogram_init(struct bench_histogram *h)
{
    memset(h, 0, sizeof(*h));
}

static unsigned highest_bit(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

size_t bench_histogram_bucket_of(uint64_t value_us)
{
    if (value_us < LINEAR_LIMIT)
        return (size_t)value_us;
    unsigned shift = highest_bit(value_us) - BENCH_HISTOGRAM_SUB_BITS;
    /* (value >> shift) lies in [64, 127]: the position inside the octave. */
    size_t bucket = LINEAR_LIMIT + (size_t)(shift - 1) * SUB_BUCKETS + (size_t)((value_us >> shift) - SUB_BUCKETS);
    if (bucket >= BENCH_HISTOGRAM_BUCKETS)
        bucket = BENCH_HISTOGRAM_BUCKETS - 1;
    return bucket;
}

void bench_histogram_bucket_range(size_t bucket, uint64_t *low, uint64_t *high)
{
    if (bucket < LINEAR_LIMIT) {
        *low = *high = bucket;
        return;
    }
    size_t rel = bucket - LINEAR_LIMIT;
    unsigned shift = (unsigned)(rel / SUB_BUCKETS) + 1;
    uint64_t sub = (uint64_t)(rel % SUB_BUCKETS) + SUB_BUCKETS;
    *low = sub << shift;
    *high = ((sub + 1) << shift) - 1;
}

void bench_histogram_record(struct bench_histogram *h, uint64_t value_us)
{
    h->counts[bench_histogram_bucket_of(value_us)]++;
    h->total++;
    if (value_us > h->max_us)
        h->max_us = value_us;
}

uint64_t bench_histogram_quantile(const struct bench_histogram *h, double quantile)
{
    if (h->total == 0)
        return 0;
    if (quantile < 0.0)
        quantile = 0.0;
    if (quantile > 1.0)
        quantile = 1.0;
    /* Rank of the wanted sample, 1-based, rounded up (nearest-rank method). */
    uint64_t rank = (uint64_t)(quantile * (double)h->total);
    if ((double)rank < quantile * (double)h->total)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < BENCH_HISTOGRAM_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t low, high;
            bench_histogram_bucket_range(i, &low, &high);
            uint64_t mid = low + (high - low) / 2;
            return mid > h->max_us ? h->max_us : mid;
        }
    }
    return h->max_us;
}
