/* Swapping a cleaner pass's output in, and finishing an interrupted swap at
 * start-up. The order of file operations is what makes a crash at any
 * point recoverable; docs/architecture.md (Log compaction) spells it out
 * and both halves below follow it. */
#include "log/partition_log_clean_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fs_util.h"
#include "util/logger.h"

/* The files one segment owns besides its .log. */
static const char *const segment_side_exts[] = {".index", ".timeindex", ".txnindex"};

static int rename_ext(const char *dir, int64_t base, const char *from, const char *to)
{
    char *a = log_segment_path(dir, base, from), *b = log_segment_path(dir, base, to);
    int rc = (a && b) ? (rename(a, b) == 0 ? 0 : errno) : ENOMEM;
    free(a);
    free(b);
    return rc;
}

static void unlink_ext(const char *dir, int64_t base, const char *ext)
{
    char *path = log_segment_path(dir, base, ext);
    if (path && unlink(path) != 0 && errno != ENOENT)
        logger_warn("log", "cannot remove %s: %s", path, strerror(errno));
    free(path);
}

void clean_remove_output(const char *dir, const struct clean_plan *plan, const char *ext)
{
    for (size_t g = 0; g < plan->group_count; g++)
        if (plan->groups[g].rewritten)
            unlink_ext(dir, plan->segs[plan->groups[g].first].base, ext);
}

/* Index of the live segment that cs captured, or SIZE_MAX when it is gone. */
static size_t find_live(const struct partition_log *log, const struct clean_segment *cs)
{
    for (size_t j = 0; j + 1 < log->segment_count; j++)
        if (log->segments[j] == cs->seg && log->segments[j]->base_offset == cs->base)
            return j;
    return SIZE_MAX;
}

/* The members of g are still live and consecutive. */
static bool group_live(const struct partition_log *log, const struct clean_plan *plan, const struct clean_group *g)
{
    size_t j0 = find_live(log, &plan->segs[g->first]);
    if (j0 == SIZE_MAX)
        return false;
    for (size_t k = 1; k < g->count; k++)
        if (find_live(log, &plan->segs[g->first + k]) != j0 + k)
            return false;
    return true;
}

static int cmp_txn_entry(const void *a, const void *b)
{
    const struct txn_index_entry *x = a, *y = b;
    if (x->last_offset != y->last_offset)
        return (x->last_offset > y->last_offset) - (x->last_offset < y->last_offset);
    return (x->producer_id > y->producer_id) - (x->producer_id < y->producer_id);
}

/* Give <base>.txnindex the union of its entries and those of the segments
 * members[0..n): a merged segment answers for its members' markers. The
 * union is idempotent (an entry already there is not added twice), so a
 * restart may redo it. Durable on return. Returns 0 or an errno value. */
static int merge_txn_indexes(const char *dir, int64_t base, const int64_t *members, size_t n)
{
    struct txn_index all = {0};
    char *path = log_segment_path(dir, base, ".txnindex");
    int rc = path ? txn_index_load_file(&all, path) : ENOMEM;
    size_t own = all.count;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *member = log_segment_path(dir, members[i], ".txnindex");
        struct txn_index part = {0};
        rc = member ? txn_index_load_file(&part, member) : ENOMEM;
        for (size_t k = 0; k < part.count && rc == 0; k++) {
            /* Appended unsorted on purpose: sorted and deduplicated below. */
            if (all.count == all.cap) {
                size_t cap = all.cap ? all.cap * 2 : 8;
                struct txn_index_entry *grown = realloc(all.entries, cap * sizeof *grown);
                if (!grown) {
                    rc = ENOMEM;
                    break;
                }
                all.entries = grown;
                all.cap = cap;
            }
            all.entries[all.count++] = part.entries[k];
        }
        txn_index_free(&part);
        free(member);
    }
    if (rc == 0 && all.count > own) {
        qsort(all.entries, all.count, sizeof *all.entries, cmp_txn_entry);
        size_t kept = 0;
        for (size_t i = 0; i < all.count; i++)
            if (kept == 0 || cmp_txn_entry(&all.entries[kept - 1], &all.entries[i]) != 0)
                all.entries[kept++] = all.entries[i];
        if (kept > own)
            rc = txn_index_write_file(path, all.entries, kept);
    }
    txn_index_free(&all);
    free(path);
    return rc;
}

/* The .log goes last: a crash part way leaves a .log that start-up finds
 * inside the swap's offsets and removes, never side files without it. */
static void unlink_segment_files(const char *dir, int64_t base)
{
    for (size_t e = 0; e < sizeof segment_side_exts / sizeof *segment_side_exts; e++)
        unlink_ext(dir, base, segment_side_exts[e]);
    unlink_ext(dir, base, ".log");
}

/* Members of g after the first: their entries move to the group's
 * .txnindex, then their files go (the open fds keep the old inodes
 * readable until the in-memory swap). */
static int retire_members(const char *dir, const struct clean_plan *plan, const struct clean_group *g)
{
    if (g->count < 2)
        return 0;
    int64_t *bases = calloc(g->count - 1, sizeof *bases);
    if (!bases)
        return ENOMEM;
    for (size_t k = 1; k < g->count; k++)
        bases[k - 1] = plan->segs[g->first + k].base;
    int rc = merge_txn_indexes(dir, plan->segs[g->first].base, bases, g->count - 1);
    for (size_t k = 0; rc == 0 && k + 1 < g->count; k++)
        unlink_segment_files(dir, bases[k]);
    free(bases);
    return rc;
}

/* Replace the members of g in the segment list by its reopened file. */
static int install_group(struct partition_log *log, struct clean_plan *plan, const struct clean_group *g,
                         int64_t now_ms)
{
    struct clean_segment *first = &plan->segs[g->first];
    struct clean_segment *last = &plan->segs[g->first + g->count - 1];
    size_t j = find_live(log, first);
    struct log_segment *fresh;
    bool truncated = false;
    char err[256];
    int rc = log_segment_open(log->dir, first->base, &log->cfg, true, false, now_ms, &fresh, &truncated, err,
                              sizeof err);
    if (rc != 0) {
        logger_error("log", "%s", err);
        return rc;
    }
    fresh->next_offset = last->seg->next_offset;
    if (log_segment_flush(fresh) != 0)
        logger_warn("log", "%s: cannot sync the indexes of cleaned segment %" PRId64, log->dir, first->base);
    pthread_rwlock_wrlock(&log->lock);
    log->segments[j] = fresh;
    memmove(&log->segments[j + 1], &log->segments[j + g->count],
            (log->segment_count - j - g->count) * sizeof *log->segments);
    log->segment_count -= g->count - 1;
    pthread_rwlock_unlock(&log->lock);
    /* The paths now name the new files or nothing: close the old fds only. */
    for (size_t k = 0; k < g->count; k++)
        log_segment_close(plan->segs[g->first + k].seg, false);
    first->seg = fresh;
    return 0;
}

int clean_swap_in(struct partition_log *log, struct clean_plan *plan, const struct clean_txn *txn, int64_t now_ms,
                  enum log_clean_stop stop_after)
{
    if (atomic_load(&log->offline) || atomic_load(&log->deleted) || log->truncations != plan->truncations)
        return ESTALE;
    /* The copier claimed a segment of the pass meanwhile: its copy reads the
     * files as they are, so they stay. */
    int64_t tier_floor = partition_log_tier_floor(log);
    for (size_t g = 0; g < plan->group_count; g++)
        if (plan->groups[g].rewritten &&
            (!group_live(log, plan, &plan->groups[g]) || plan->segs[plan->groups[g].first].base < tier_floor))
            return ESTALE;
    if (stop_after == LOG_CLEAN_STOP_AFTER_CLEANED)
        return 0;
    /* Entries of dropped ABORT markers go before any marker does: an entry
     * without its marker would make read_committed skip the producer's
     * later batches, a marker without an entry (its data is gone) is
     * harmless. */
    int rc = txn->gone.count > 0 ? partition_log_forget_aborted_locked(log, txn->gone.entries, txn->gone.count) : 0;
    if (rc != 0)
        return rc;
    /* The commit point of each group. Oldest first: after a crash the
     * completed swaps form a prefix, so a tombstone is never gone while
     * older records of its key remain. */
    size_t renamed = 0; /* groups up to here may have a .swap file */
    for (; rc == 0 && renamed < plan->group_count; renamed++)
        if (plan->groups[renamed].rewritten)
            rc = rename_ext(log->dir, plan->segs[plan->groups[renamed].first].base, ".log.cleaned", ".log.swap");
    if (rc == 0)
        rc = fs_fsync_dir(log->dir);
    if (rc != 0) {
        for (size_t g = 0; g < renamed; g++)
            if (plan->groups[g].rewritten)
                unlink_ext(log->dir, plan->segs[plan->groups[g].first].base, ".log.swap");
        return rc;
    }
    if (stop_after == LOG_CLEAN_STOP_AFTER_SWAP)
        return 0;
    for (size_t g = 0; rc == 0 && g < plan->group_count; g++)
        if (plan->groups[g].rewritten)
            rc = retire_members(log->dir, plan, &plan->groups[g]);
    /* The members must be gone for good before a .swap becomes a .log:
     * otherwise a power cut could leave both, with the same offsets. */
    if (rc == 0)
        rc = fs_fsync_dir(log->dir);
    if (rc == 0 && stop_after == LOG_CLEAN_STOP_AFTER_MEMBERS)
        return 0;
    for (size_t g = 0; rc == 0 && g < plan->group_count; g++) {
        int64_t base = plan->segs[plan->groups[g].first].base;
        if (!plan->groups[g].rewritten)
            continue;
        /* Stale indexes must not outlive their .log; a crash before the
         * rebuild below leaves none, which readers treat as "scan". */
        unlink_ext(log->dir, base, ".index");
        unlink_ext(log->dir, base, ".timeindex");
        rc = rename_ext(log->dir, base, ".log.swap", ".log");
    }
    if (rc == 0)
        rc = fs_fsync_dir(log->dir);
    /* Newest first keeps the live indexes of older groups valid. */
    for (size_t g = plan->group_count; rc == 0 && g-- > 0;)
        if (plan->groups[g].rewritten)
            rc = install_group(log, plan, &plan->groups[g], now_ms);
    /* Segments cleaned down to nothing go (their files and open fds), so a
     * compacted log does not pile up empty segments. The first stays: it
     * anchors the log start offset. */
    for (size_t g = plan->group_count; rc == 0 && g-- > 0;) {
        const struct clean_group *grp = &plan->groups[g];
        size_t j = grp->rewritten && grp->new_size == 0 ? find_live(log, &plan->segs[grp->first]) : SIZE_MAX;
        /* Nor one after a segment below the tier floor: that one's end is
         * what its remote copy says. */
        if (j == SIZE_MAX || j == 0 || log->segments[j - 1]->base_offset < tier_floor)
            continue;
        struct log_segment *gone = log->segments[j];
        pthread_rwlock_wrlock(&log->lock);
        log->segments[j - 1]->next_offset = gone->next_offset;
        memmove(&log->segments[j], &log->segments[j + 1], (log->segment_count - j - 1) * sizeof *log->segments);
        log->segment_count--;
        pthread_rwlock_unlock(&log->lock);
        log_segment_close(gone, true);
    }
    if (rc != 0)
        partition_log_mark_offline(log, "swapping in a cleaned segment", rc);
    return rc;
}

/* ---- start-up ---- */

/* Last offset of the batches of the file at path, -1 when it holds none.
 * The file was synced whole before it became a .swap, so a walk that stops
 * early only means the bytes after are not batches. Returns 0 or errno. */
static int swap_last_offset(const char *path, int64_t *last)
{
    *last = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    off_t end = lseek(fd, 0, SEEK_END);
    if (end < 0) {
        int rc = errno;
        close(fd);
        return rc;
    }
    struct log_scanner scan;
    log_scanner_init(&scan, fd, end, 64 * 1024);
    int64_t pos = 0;
    const uint8_t *p;
    while ((p = log_scanner_get(&scan, pos, RECORD_BATCH_HEADER_SIZE)) != NULL) {
        struct record_batch_header h;
        if (record_batch_parse_header(p, RECORD_BATCH_HEADER_SIZE, &h) != 0 ||
            h.batch_length < RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_LOG_OVERHEAD ||
            (int64_t)record_batch_total_size(&h) > end - pos)
            break;
        *last = record_batch_last_offset(&h);
        pos += (int64_t)record_batch_total_size(&h);
    }
    int rc = scan.io_error ? EIO : 0;
    log_scanner_free(&scan);
    close(fd);
    return rc;
}

/* A .swap at base replaces every segment whose base lies inside its
 * offsets: finish retiring those (entries first, then files). */
static int recover_swap_members(const char *dir, struct partition_dir_scan *scan, int64_t base, char *err,
                                size_t errlen)
{
    char *path = log_segment_path(dir, base, ".log.swap");
    int64_t last = -1;
    int rc = path ? swap_last_offset(path, &last) : ENOMEM;
    if (rc != 0)
        snprintf(err, errlen, "cannot read %s: %s", path ? path : dir, strerror(rc));
    free(path);
    size_t from = 0, to = 0;
    while (rc == 0 && from < scan->segments.count && scan->segments.bases[from] <= base)
        from++;
    to = from;
    while (rc == 0 && to < scan->segments.count && scan->segments.bases[to] <= last)
        to++;
    if (rc != 0 || to == from)
        return rc;
    logger_info("log", "%s: removing %zu segments merged into %020" PRId64 ".log.swap", dir, to - from, base);
    if ((rc = merge_txn_indexes(dir, base, scan->segments.bases + from, to - from)) != 0) {
        snprintf(err, errlen, "cannot merge the transaction indexes into %s/%020" PRId64 ".txnindex: %s", dir, base,
                 strerror(rc));
        return rc;
    }
    for (size_t i = from; i < to; i++)
        unlink_segment_files(dir, scan->segments.bases[i]);
    memmove(scan->segments.bases + from, scan->segments.bases + to,
            (scan->segments.count - to) * sizeof *scan->segments.bases);
    scan->segments.count -= to - from;
    if ((rc = fs_fsync_dir(dir)) != 0)
        snprintf(err, errlen, "cannot sync %s: %s", dir, strerror(rc));
    return rc;
}

int partition_log_clean_recover_files(const char *dir, struct partition_dir_scan *scan, const struct log_config *cfg,
                                      int64_t now_ms, char *err, size_t errlen)
{
    for (size_t i = 0; i < scan->cleaned.count; i++) {
        logger_info("log", "%s: removing unfinished cleaner output %020" PRId64 ".log.cleaned", dir,
                    scan->cleaned.bases[i]);
        unlink_ext(dir, scan->cleaned.bases[i], ".log.cleaned");
    }
    int completed = 0, rc = 0;
    for (size_t i = 0; rc == 0 && i < scan->swaps.count; i++) {
        int64_t base = scan->swaps.bases[i];
        rc = recover_swap_members(dir, scan, base, err, errlen);
        if (rc != 0)
            break;
        /* Durable and complete before it was renamed: finish the swap.
         * The old indexes describe the old file; opening the segment
         * rebuilds them. */
        logger_info("log", "%s: completing the swap of cleaned segment %020" PRId64 ".log.swap", dir, base);
        unlink_ext(dir, base, ".index");
        unlink_ext(dir, base, ".timeindex");
        rc = rename_ext(dir, base, ".log.swap", ".log");
        struct log_segment *seg;
        bool truncated = false;
        if (rc != 0)
            snprintf(err, errlen, "cannot complete %s/%020" PRId64 ".log.swap: %s", dir, base, strerror(rc));
        else if ((rc = log_segment_open(dir, base, cfg, true, false, now_ms, &seg, &truncated, err, errlen)) == 0)
            log_segment_close(seg, false);
        if (rc == 0 && (rc = partition_dir_scan_add_segment(scan, base)) != 0)
            snprintf(err, errlen, "out of memory listing %s", dir);
        if (rc == 0)
            completed++;
    }
    if (rc == 0 && completed > 0 && (rc = fs_fsync_dir(dir)) != 0)
        snprintf(err, errlen, "cannot sync %s: %s", dir, strerror(rc));
    return rc == 0 ? completed : -1;
}
