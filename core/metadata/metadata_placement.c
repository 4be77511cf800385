/* Replica placement for new partitions: see metadata_placement.h. */
#include "metadata/metadata_placement.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The follower after `k` tries for a partition led at `first`. */
static int32_t replica_index(int32_t first, int32_t second_shift, int32_t k, int32_t n)
{
    int32_t step = 1 + (int32_t)(((int64_t)second_shift + k) % (n - 1));
    return (first + step) % n;
}

static void place_unaware(const int32_t *brokers, int32_t n, int32_t first_partition, int32_t count, int16_t rf,
                          uint32_t start_draw, uint32_t shift_draw, int32_t *out)
{
    int32_t start = (int32_t)(start_draw % (uint32_t)n);
    int32_t shift = (int32_t)(shift_draw % (uint32_t)n);
    for (int32_t i = 0; i < count; i++) {
        int32_t p = first_partition + i;
        if (p > 0 && p % n == 0)
            shift++;
        int32_t first = (int32_t)(((int64_t)p + start) % n);
        int32_t *replicas = &out[(size_t)i * (size_t)rf];
        replicas[0] = brokers[first];
        for (int32_t j = 0; j < rf - 1; j++)
            replicas[j + 1] = brokers[replica_index(first, shift, j, n)];
    }
}

static int compare_racks(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Kafka's getRackAlternatedBrokerList: racks in name order, one broker of
 * each in turn (each rack's in id order), until all are taken. Fills
 * arranged/arranged_rack (n each) and returns the number of racks, -1 on OOM. */
static int32_t rack_alternated(const int32_t *brokers, const char *const *racks, int32_t n, int32_t *arranged,
                               const char **arranged_rack)
{
    const char **names = malloc((size_t)n * sizeof(*names));
    int32_t *next = calloc((size_t)n, sizeof(*next)); /* per rack: index of its next broker */
    if (!names || !next) {
        free(names);
        free(next);
        return -1;
    }
    int32_t n_racks = 0;
    for (int32_t i = 0; i < n; i++) {
        bool seen = false;
        for (int32_t r = 0; r < n_racks && !seen; r++)
            seen = strcmp(names[r], racks[i]) == 0;
        if (!seen)
            names[n_racks++] = racks[i];
    }
    qsort(names, (size_t)n_racks, sizeof(*names), compare_racks);
    int32_t taken = 0;
    while (taken < n) {
        for (int32_t r = 0; r < n_racks; r++) {
            /* This rack's next broker at or after next[r] in id order. */
            int32_t i = next[r];
            while (i < n && strcmp(racks[i], names[r]) != 0)
                i++;
            if (i == n)
                continue;
            arranged[taken] = brokers[i];
            arranged_rack[taken] = racks[i];
            taken++;
            next[r] = i + 1;
        }
    }
    free(names);
    free(next);
    return n_racks;
}

static bool contains_id(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static bool contains_rack(const char *const *r, int32_t n, const char *rack)
{
    for (int32_t i = 0; i < n; i++)
        if (strcmp(r[i], rack) == 0)
            return true;
    return false;
}

static int place_rack_aware(const int32_t *brokers, const char *const *racks, int32_t n, int32_t first_partition,
                            int32_t count, int16_t rf, uint32_t start_draw, uint32_t shift_draw, int32_t *out)
{
    int32_t *arranged = malloc((size_t)n * sizeof(*arranged));
    const char **arranged_rack = malloc((size_t)n * sizeof(*arranged_rack));
    const char **used_racks = malloc((size_t)rf * sizeof(*used_racks));
    int32_t n_racks = arranged && arranged_rack && used_racks
                          ? rack_alternated(brokers, racks, n, arranged, arranged_rack)
                          : -1;
    if (n_racks < 0) {
        free(arranged);
        free(arranged_rack);
        free(used_racks);
        return -1;
    }
    int32_t start = (int32_t)(start_draw % (uint32_t)n);
    int32_t shift = (int32_t)(shift_draw % (uint32_t)n);
    for (int32_t i = 0; i < count; i++) {
        int32_t p = first_partition + i;
        if (p > 0 && p % n == 0)
            shift++;
        int32_t first = (int32_t)(((int64_t)p + start) % n);
        int32_t *replicas = &out[(size_t)i * (size_t)rf];
        replicas[0] = arranged[first];
        used_racks[0] = arranged_rack[first];
        int32_t placed = 1, n_used_racks = 1;
        /* A follower goes to a rack without a replica while there is one,
         * and never to a broker that has one; every other broker is tried
         * within n - 1 steps, so 2n bounds the walk. */
        for (int32_t k = 0; placed < rf && k < 2 * n; k++) {
            int32_t idx = replica_index(first, (int32_t)(((int64_t)shift * n_racks) % (n - 1)), k, n);
            bool rack_free = !contains_rack(used_racks, n_used_racks, arranged_rack[idx]);
            if ((rack_free || n_used_racks == n_racks) && !contains_id(replicas, placed, arranged[idx])) {
                replicas[placed++] = arranged[idx];
                if (rack_free)
                    used_racks[n_used_racks++] = arranged_rack[idx];
            }
        }
        /* Not reached with rf <= n; kept so that no slot stays unset. */
        for (int32_t j = 0; placed < rf && j < n; j++)
            if (!contains_id(replicas, placed, arranged[j]))
                replicas[placed++] = arranged[j];
    }
    free(arranged);
    free(arranged_rack);
    free(used_racks);
    return 0;
}

int metadata_place_replicas(const int32_t *brokers, const char *const *racks, int32_t n, int32_t first_partition,
                            int32_t count, int16_t rf, uint32_t start, uint32_t shift, int32_t *out)
{
    bool every_rack = racks != NULL && n > 1;
    for (int32_t i = 0; every_rack && i < n; i++)
        every_rack = racks[i] != NULL;
    if (!every_rack) {
        place_unaware(brokers, n, first_partition, count, rf, start, shift, out);
        return 0;
    }
    return place_rack_aware(brokers, racks, n, first_partition, count, rf, start, shift, out);
}
