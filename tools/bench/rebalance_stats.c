/* Statistics of the rebalance benchmark, kept free of librdkafka so they
 * can be unit tested. */
#include "rebalance.h"

#include <stdlib.h>

uint64_t rebalance_longest_gap(const uint64_t *times, size_t n, uint64_t from, uint64_t to)
{
    if (to <= from)
        return 0;
    uint64_t start = from, longest = 0;
    for (size_t i = 0; i < n; i++) {
        if (times[i] < from) {
            start = times[i];
            continue;
        }
        if (times[i] > to)
            break;
        if (times[i] - start > longest)
            longest = times[i] - start;
        start = times[i];
    }
    /* Silence up to the end of the window counts too. */
    if (to - start > longest)
        longest = to - start;
    return longest;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rebalance_median(double *values, size_t n)
{
    if (n == 0)
        return 0;
    qsort(values, n, sizeof *values, compare_double);
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double rebalance_max(const double *values, size_t n)
{
    double max = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || values[i] > max)
            max = values[i];
    return max;
}

bool rebalance_assignment_complete(bool *const *owned, size_t members, int partitions)
{
    for (int p = 0; p < partitions; p++) {
        int owners = 0;
        for (size_t m = 0; m < members; m++)
            owners += owned[m][p] ? 1 : 0;
        if (owners != 1)
            return false;
    }
    return true;
}
