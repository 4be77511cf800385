/* One read of a partition directory at open: the segments and the cleaner's
 * crash leftovers, so opening lists the directory once. */
#include "log/partition_log_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Base offset of "<20 digits><suffix>", the file naming of log_segment_path. */
static bool parse_base(const char *name, const char *suffix, int64_t *base)
{
    size_t len = strlen(name), slen = strlen(suffix);
    if (len != 20 + slen || strcmp(name + 20, suffix) != 0)
        return false;
    int64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (name[i] - '0');
    }
    *base = v;
    return true;
}

static int push_base(struct partition_dir_offsets *list, int64_t base)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        int64_t *grown = realloc(list->bases, cap * sizeof *grown);
        if (!grown)
            return ENOMEM;
        list->bases = grown;
        list->cap = cap;
    }
    list->bases[list->count++] = base;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void sort_bases(struct partition_dir_offsets *list)
{
    if (list->count > 1)
        qsort(list->bases, list->count, sizeof *list->bases, cmp_i64);
}

int partition_dir_scan(const char *dir, struct partition_dir_scan *out)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d)
        return errno;
    int rc = 0;
    struct dirent *ent;
    /* Only names are collected: the leftovers are acted on after closedir,
     * so no rename or unlink happens while the directory is being read. */
    while (rc == 0 && (ent = readdir(d)) != NULL) {
        int64_t base;
        if (parse_base(ent->d_name, ".log", &base))
            rc = push_base(&out->segments, base);
        else if (parse_base(ent->d_name, ".log.cleaned", &base))
            rc = push_base(&out->cleaned, base);
        else if (parse_base(ent->d_name, ".log.swap", &base))
            rc = push_base(&out->swaps, base);
    }
    closedir(d);
    if (rc != 0) {
        partition_dir_scan_free(out);
        return rc;
    }
    sort_bases(&out->segments);
    sort_bases(&out->cleaned);
    sort_bases(&out->swaps);
    return 0;
}

int partition_dir_scan_add_segment(struct partition_dir_scan *scan, int64_t base)
{
    for (size_t i = 0; i < scan->segments.count; i++)
        if (scan->segments.bases[i] == base)
            return 0;
    int rc = push_base(&scan->segments, base);
    if (rc == 0)
        sort_bases(&scan->segments);
    return rc;
}

void partition_dir_scan_free(struct partition_dir_scan *scan)
{
    free(scan->segments.bases);
    free(scan->cleaned.bases);
    free(scan->swaps.bases);
    memset(scan, 0, sizeof *scan);
}
