/* Segment files: creation, loading, scanning/recovery, appends and the sparse
 * indexes. All file I/O goes through pread/pwrite loops with errors returned
 * as errno values. */
#include "log/log_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/logger.h"

#define LOG_SCAN_HEADER_BUF (64 * 1024)
#define LOG_SCAN_RECOVERY_BUF (1024 * 1024)

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int pwrite_full(int fd, const void *data, size_t len, int64_t pos)
{
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t)pos);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EIO;
        p += n;
        len -= (size_t)n;
        pos += n;
    }
    return 0;
}

static int pread_full(int fd, void *data, size_t len, int64_t pos)
{
    uint8_t *p = data;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)pos);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EIO; /* file shorter than expected */
        p += n;
        len -= (size_t)n;
        pos += n;
    }
    return 0;
}

void log_scanner_init(struct log_scanner *s, int fd, int64_t file_end, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->file_end = file_end;
    s->cap = cap;
}

const uint8_t *log_scanner_get(struct log_scanner *s, int64_t pos, size_t n)
{
    if (pos < 0 || pos > s->file_end || n > (size_t)(s->file_end - pos))
        return NULL;
    if (s->buf && pos >= s->buf_pos && pos + (int64_t)n <= s->buf_pos + (int64_t)s->buf_len)
        return s->buf + (pos - s->buf_pos);
    /* n is bounded by the file size checked above. */
    size_t want = n > s->cap ? n : s->cap;
    if ((int64_t)want > s->file_end - pos)
        want = (size_t)(s->file_end - pos);
    if (!s->buf || want > s->cap) {
        size_t alloc = want > s->cap ? want : s->cap;
        uint8_t *grown = realloc(s->buf, alloc ? alloc : 1);
        if (!grown) {
            s->io_error = true;
            return NULL;
        }
        s->buf = grown;
        s->cap = alloc;
    }
    int rc = pread_full(s->fd, s->buf, want, pos);
    if (rc != 0) {
        s->buf_len = 0;
        s->io_error = true;
        return NULL;
    }
    s->buf_pos = pos;
    s->buf_len = want;
    return s->buf;
}

void log_scanner_free(struct log_scanner *s)
{
    free(s->buf);
    s->buf = NULL;
}

char *log_segment_path(const char *dir, int64_t base_offset, const char *ext)
{
    char *path = NULL;
    if (asprintf(&path, "%s/%020" PRId64 "%s", dir, base_offset, ext) < 0)
        return NULL;
    return path;
}

static int open_ext(const struct log_segment *seg, const char *ext, int flags)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s%s", seg->path, ext) >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(path, flags | O_CLOEXEC, 0644);
}

static struct log_segment *segment_alloc(const char *dir, int64_t base_offset, int64_t now_ms)
{
    struct log_segment *seg = calloc(1, sizeof *seg);
    if (!seg)
        return NULL;
    seg->path = log_segment_path(dir, base_offset, "");
    if (!seg->path) {
        free(seg);
        return NULL;
    }
    seg->base_offset = base_offset;
    seg->next_offset = base_offset;
    seg->max_timestamp = -1;
    seg->offset_of_max_timestamp = -1;
    seg->first_batch_timestamp = -1;
    seg->created_ms = now_ms;
    seg->log_fd = seg->index_fd = seg->time_fd = -1;
    return seg;
}

/* Keep at least half a step reserved past end (the end of the write about to
 * happen), adding whole steps at step-aligned positions: one fallocate per
 * step of data, at most one and a half steps held past the end. Reservation
 * starts once the segment holds a step of data, so partitions that see
 * little traffic hold no blocks beyond their data. A failed fallocate only
 * costs the saving, so it turns reservation off for this segment instead of
 * failing the write. */
static void reserve_ahead(struct log_segment *seg, int64_t end)
{
    if (!seg->reserve_steps || end < LOG_SEGMENT_RESERVE_STEP ||
        end + LOG_SEGMENT_RESERVE_STEP / 2 <= seg->reserved_end || seg->reserved_end >= seg->reserve_limit)
        return;
    /* Start past the block holding the tail: written data keeps its
     * delayed allocation. */
    int64_t from = (seg->size + 4095) & ~(int64_t)4095;
    if (from < seg->reserved_end)
        from = seg->reserved_end;
    int64_t to = (from / LOG_SEGMENT_RESERVE_STEP + 1) * LOG_SEGMENT_RESERVE_STEP;
    while (to < end + LOG_SEGMENT_RESERVE_STEP / 2)
        to += LOG_SEGMENT_RESERVE_STEP;
    if (to > seg->reserve_limit)
        to = seg->reserve_limit;
    if (to <= from)
        return;
    if (fallocate(seg->log_fd, FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(to - from)) != 0) {
        if (errno != EINTR) {
            logger_debug("log", "%s.log: not reserving blocks ahead: %s", seg->path, strerror(errno));
            seg->reserve_steps = false;
        }
        return;
    }
    seg->reserved_end = to;
}

int log_segment_release_reservation(struct log_segment *seg)
{
    seg->reserve_steps = false;
    int64_t reserved = seg->reserved_end;
    seg->reserved_end = 0;
    if (seg->log_fd < 0 || reserved <= seg->size)
        return 0;
    struct stat before, after;
    if (fstat(seg->log_fd, &before) != 0)
        return errno;
    /* ext4 (and most filesystems) free the blocks past EOF on a truncate to
     * the current size; a hole punch past EOF is the fallback where that did
     * not free anything (ext4 itself ignores punches past EOF). */
    if (ftruncate(seg->log_fd, (off_t)seg->size) != 0)
        return errno;
    int rc = fstat(seg->log_fd, &after) != 0 ? errno : 0;
    if (rc == 0 && after.st_blocks >= before.st_blocks && after.st_blocks > 0) {
        int64_t from = (seg->size + 4095) & ~(int64_t)4095;
        if (reserved > from &&
            fallocate(seg->log_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(reserved - from)) !=
                0 &&
            errno != EOPNOTSUPP)
            rc = errno;
    }
    /* The truncate stamps mtime, which stands in for the max timestamp of
     * segments whose batches carry none (retention): keep the last write's. */
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    if (futimens(seg->log_fd, times) != 0 && rc == 0)
        rc = errno;
    return rc;
}

void log_segment_close(struct log_segment *seg, bool remove_files)
{
    if (!seg)
        return;
    int rc = remove_files ? 0 : log_segment_release_reservation(seg);
    if (rc != 0)
        logger_warn("log", "%s.log: cannot release reserved blocks: %s", seg->path, strerror(rc));
    if (seg->log_fd >= 0)
        close(seg->log_fd);
    if (seg->index_fd >= 0)
        close(seg->index_fd);
    if (seg->time_fd >= 0)
        close(seg->time_fd);
    if (remove_files) {
        static const char *const exts[] = {".log", ".index", ".timeindex", ".txnindex"};
        char path[4096];
        for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) {
            snprintf(path, sizeof path, "%s%s", seg->path, exts[i]);
            if (unlink(path) != 0 && errno != ENOENT)
                logger_warn("log", "cannot remove %s: %s", path, strerror(errno));
        }
    }
    free(seg->index);
    free(seg->time_index);
    free(seg->epoch_marks);
    free(seg->path);
    free(seg);
}

static int segment_open_files(struct log_segment *seg, int extra_flags)
{
    seg->log_fd = open_ext(seg, ".log", O_RDWR | O_CREAT | extra_flags);
    if (seg->log_fd < 0)
        return errno;
    seg->index_fd = open_ext(seg, ".index", O_RDWR | O_CREAT | extra_flags);
    if (seg->index_fd < 0)
        return errno;
    seg->time_fd = open_ext(seg, ".timeindex", O_RDWR | O_CREAT | extra_flags);
    if (seg->time_fd < 0)
        return errno;
    return 0;
}

/* Set up block reservation for a segment about to become the active one. */
static int start_reservation(struct log_segment *seg, const struct log_config *cfg)
{
    if (cfg->segment_bytes <= 0)
        return 0;
    if (!cfg->preallocate) {
        seg->reserve_steps = true;
        seg->reserve_limit = cfg->segment_bytes;
        return 0;
    }
    /* Reserve blocks without changing the visible size. */
    if (fallocate(seg->log_fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)cfg->segment_bytes) != 0)
        return errno == EOPNOTSUPP ? 0 : errno;
    seg->reserved_end = cfg->segment_bytes;
    return 0;
}

int log_segment_create(const char *dir, int64_t base_offset, const struct log_config *cfg, int64_t now_ms,
                       struct log_segment **out, char *err, size_t errlen)
{
    struct log_segment *seg = segment_alloc(dir, base_offset, now_ms);
    if (!seg) {
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    /* O_TRUNC: a leftover file at this base offset belongs to data that was
     * truncated away. */
    int rc = segment_open_files(seg, O_TRUNC);
    if (rc == 0)
        rc = start_reservation(seg, cfg);
    if (rc != 0) {
        snprintf(err, errlen, "cannot create segment %s: %s", seg->path, strerror(rc));
        log_segment_close(seg, false);
        return rc;
    }
    *out = seg;
    return 0;
}

static int grow(void **arr, size_t *cap, size_t count, size_t elem)
{
    if (count < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 64;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

static int add_offset_entry(struct log_segment *seg, uint32_t rel, uint32_t pos, bool persist)
{
    int rc = grow((void **)&seg->index, &seg->index_cap, seg->index_count, sizeof *seg->index);
    if (rc != 0)
        return rc;
    if (persist) {
        uint8_t raw[8];
        put32(raw, rel);
        put32(raw + 4, pos);
        rc = pwrite_full(seg->index_fd, raw, sizeof raw, (int64_t)seg->index_count * 8);
        if (rc != 0)
            return rc;
    }
    seg->index[seg->index_count++] = (struct log_offset_entry){rel, pos};
    return 0;
}

static int add_time_entry(struct log_segment *seg, int64_t ts, uint32_t rel, bool persist)
{
    if (seg->time_count > 0 && seg->time_index[seg->time_count - 1].timestamp >= ts)
        return 0;
    int rc = grow((void **)&seg->time_index, &seg->time_cap, seg->time_count, sizeof *seg->time_index);
    if (rc != 0)
        return rc;
    if (persist) {
        uint8_t raw[12];
        put32(raw, (uint32_t)((uint64_t)ts >> 32));
        put32(raw + 4, (uint32_t)ts);
        put32(raw + 8, rel);
        rc = pwrite_full(seg->time_fd, raw, sizeof raw, (int64_t)seg->time_count * 12);
        if (rc != 0)
            return rc;
    }
    seg->time_index[seg->time_count++] = (struct log_time_entry){ts, rel};
    return 0;
}

/* Account one batch at pos: timestamps, next offset, and an index entry when
 * index.interval.bytes have passed since the previous one. */
static int index_batch(struct log_segment *seg, int64_t pos, const struct record_batch_header *h,
                       const struct log_config *cfg, bool persist)
{
    int64_t last = record_batch_last_offset(h);
    if (seg->first_batch_timestamp < 0)
        seg->first_batch_timestamp = h->max_timestamp;
    if (h->max_timestamp > seg->max_timestamp) {
        seg->max_timestamp = h->max_timestamp;
        seg->offset_of_max_timestamp = last;
    }
    if (seg->bytes_since_index > cfg->index_interval_bytes) {
        int rc = add_offset_entry(seg, (uint32_t)(last - seg->base_offset), (uint32_t)pos, persist);
        if (rc == 0 && seg->max_timestamp >= 0)
            rc = add_time_entry(seg, seg->max_timestamp, (uint32_t)(seg->offset_of_max_timestamp - seg->base_offset),
                                persist);
        if (rc != 0)
            return rc;
        seg->bytes_since_index = 0;
    }
    seg->bytes_since_index += (int64_t)record_batch_total_size(h);
    seg->next_offset = last + 1;
    return 0;
}

void log_segment_drop_epoch_marks(struct log_segment *seg)
{
    free(seg->epoch_marks);
    seg->epoch_marks = NULL;
    seg->epoch_mark_count = seg->epoch_mark_cap = 0;
}

/* Note a batch that raises the segment's leader epoch. Returns 0 or ENOMEM. */
static int mark_epoch(struct log_segment *seg, const struct record_batch_header *h)
{
    int32_t epoch = h->partition_leader_epoch;
    if (epoch < 0 || (seg->epoch_mark_count > 0 && epoch <= seg->epoch_marks[seg->epoch_mark_count - 1].epoch))
        return 0;
    if (seg->epoch_mark_count == seg->epoch_mark_cap) {
        /* Usually one epoch per segment: start small. */
        size_t cap = seg->epoch_mark_cap ? seg->epoch_mark_cap * 2 : 2;
        struct log_segment_epoch_mark *grown = realloc(seg->epoch_marks, cap * sizeof *grown);
        if (!grown)
            return ENOMEM;
        seg->epoch_marks = grown;
        seg->epoch_mark_cap = cap;
    }
    seg->epoch_marks[seg->epoch_mark_count++] = (struct log_segment_epoch_mark){epoch, h->base_offset};
    return 0;
}

static void reset_indexes(struct log_segment *seg)
{
    seg->epoch_mark_count = 0;
    seg->index_count = 0;
    seg->time_count = 0;
    seg->bytes_since_index = 0;
    seg->next_offset = seg->base_offset;
    seg->max_timestamp = -1;
    seg->offset_of_max_timestamp = -1;
    seg->first_batch_timestamp = -1;
}

static int write_index_files(struct log_segment *seg)
{
    size_t ilen = seg->index_count * 8, tlen = seg->time_count * 12;
    uint8_t *raw = malloc((ilen > tlen ? ilen : tlen) + 1);
    if (!raw)
        return ENOMEM;
    for (size_t i = 0; i < seg->index_count; i++) {
        put32(raw + i * 8, seg->index[i].rel_offset);
        put32(raw + i * 8 + 4, seg->index[i].position);
    }
    int rc = ftruncate(seg->index_fd, 0) == 0 ? pwrite_full(seg->index_fd, raw, ilen, 0) : errno;
    for (size_t i = 0; rc == 0 && i < seg->time_count; i++) {
        uint64_t ts = (uint64_t)seg->time_index[i].timestamp;
        put32(raw + i * 12, (uint32_t)(ts >> 32));
        put32(raw + i * 12 + 4, (uint32_t)ts);
        put32(raw + i * 12 + 8, seg->time_index[i].rel_offset);
    }
    if (rc == 0)
        rc = ftruncate(seg->time_fd, 0) == 0 ? pwrite_full(seg->time_fd, raw, tlen, 0) : errno;
    free(raw);
    return rc;
}

/* Walk batches from pos to the end of the file. A batch that is torn, has a
 * bad header, goes backwards in offsets or (verify_crc) fails its CRC ends the
 * valid data: the file is cut there. Returns 0 or an errno value. */
static int scan_from(struct log_segment *seg, int64_t pos, bool verify_crc, const struct log_config *cfg,
                     bool *truncated)
{
    struct log_scanner scan;
    log_scanner_init(&scan, seg->log_fd, seg->size, verify_crc ? LOG_SCAN_RECOVERY_BUF : LOG_SCAN_HEADER_BUF);
    int rc = 0;
    while (pos < seg->size) {
        struct record_batch_header h;
        const uint8_t *p = log_scanner_get(&scan, pos, RECORD_BATCH_HEADER_SIZE);
        if (!p)
            break;
        record_batch_parse_header(p, RECORD_BATCH_HEADER_SIZE, &h);
        if (h.magic != RECORD_BATCH_MAGIC || h.batch_length < RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_LOG_OVERHEAD ||
            (int64_t)record_batch_total_size(&h) > seg->size - pos ||
            pos + (int64_t)record_batch_total_size(&h) > INT32_MAX || h.base_offset < seg->next_offset ||
            h.last_offset_delta < 0 || record_batch_last_offset(&h) - seg->base_offset > (int64_t)UINT32_MAX)
            break;
        size_t total = record_batch_total_size(&h);
        if (verify_crc) {
            p = log_scanner_get(&scan, pos, total);
            if (!p || !record_batch_crc_ok(p, total))
                break;
        }
        rc = index_batch(seg, pos, &h, cfg, false);
        if (rc == 0)
            rc = mark_epoch(seg, &h);
        if (rc != 0)
            break;
        pos += (int64_t)total;
    }
    if (scan.io_error && rc == 0)
        rc = EIO;
    log_scanner_free(&scan);
    if (rc != 0)
        return rc;
    if (pos < seg->size) {
        logger_warn("log", "%s.log: truncating %" PRId64 " invalid bytes at position %" PRId64, seg->path,
                    seg->size - pos, pos);
        if (ftruncate(seg->log_fd, (off_t)pos) != 0)
            return errno;
        seg->size = pos;
        *truncated = true;
    }
    return 0;
}

static int rebuild(struct log_segment *seg, bool verify_crc, const struct log_config *cfg, bool *truncated)
{
    reset_indexes(seg);
    int rc = scan_from(seg, 0, verify_crc, cfg, truncated);
    if (rc == 0)
        rc = write_index_files(seg);
    return rc;
}

static int64_t fd_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* Load the index files; false when they are inconsistent with the log. */
static bool load_indexes(struct log_segment *seg)
{
    int64_t ilen = fd_size(seg->index_fd), tlen = fd_size(seg->time_fd);
    if (ilen < 0 || tlen < 0 || ilen % 8 != 0 || tlen % 12 != 0 || ilen > INT32_MAX || tlen > INT32_MAX)
        return false;
    uint8_t *raw = malloc((size_t)(ilen > tlen ? ilen : tlen) + 1);
    if (!raw)
        return false;
    bool ok = pread_full(seg->index_fd, raw, (size_t)ilen, 0) == 0;
    for (int64_t i = 0; ok && i < ilen / 8; i++) {
        uint32_t rel = get32(raw + i * 8), pos = get32(raw + i * 8 + 4);
        if (pos >= seg->size || (seg->index_count > 0 && (rel <= seg->index[seg->index_count - 1].rel_offset ||
                                                          pos <= seg->index[seg->index_count - 1].position)))
            ok = false;
        else
            ok = add_offset_entry(seg, rel, pos, false) == 0;
    }
    ok = ok && pread_full(seg->time_fd, raw, (size_t)tlen, 0) == 0;
    for (int64_t i = 0; ok && i < tlen / 12; i++) {
        int64_t ts = (int64_t)((uint64_t)get32(raw + i * 12) << 32 | get32(raw + i * 12 + 4));
        uint32_t rel = get32(raw + i * 12 + 8);
        if (seg->time_count > 0 && (ts <= seg->time_index[seg->time_count - 1].timestamp ||
                                    rel < seg->time_index[seg->time_count - 1].rel_offset))
            ok = false;
        else
            ok = add_time_entry(seg, ts, rel, false) == 0;
    }
    free(raw);
    if (ok && seg->time_count > 0) {
        seg->max_timestamp = seg->time_index[seg->time_count - 1].timestamp;
        seg->offset_of_max_timestamp = seg->base_offset + seg->time_index[seg->time_count - 1].rel_offset;
    }
    return ok;
}

int log_segment_open(const char *dir, int64_t base_offset, const struct log_config *cfg, bool rebuild_all, bool is_last,
                     int64_t now_ms, struct log_segment **out, bool *truncated, char *err, size_t errlen)
{
    struct log_segment *seg = segment_alloc(dir, base_offset, now_ms);
    if (!seg) {
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    int rc = segment_open_files(seg, 0);
    if (rc == 0) {
        seg->size = fd_size(seg->log_fd);
        if (seg->size < 0)
            rc = errno;
        else if (seg->size > INT32_MAX) {
            /* Positions in the index are 32-bit; cut what cannot be indexed. */
            rc = rebuild(seg, true, cfg, truncated);
        }
    }
    if (rc == 0) {
        if (rebuild_all || !load_indexes(seg)) {
            rc = rebuild(seg, rebuild_all, cfg, truncated);
        } else if (is_last) {
            /* Trust the indexed part; walk the rest to find the log end. */
            int64_t from = 0;
            if (seg->index_count > 0)
                from = seg->index[seg->index_count - 1].position;
            /* The batch at `from` is re-read: clear the state it will set. */
            seg->bytes_since_index = 0;
            int64_t saved_max = seg->max_timestamp, saved_off = seg->offset_of_max_timestamp;
            rc = scan_from(seg, from, false, cfg, truncated);
            if (seg->max_timestamp < saved_max) {
                seg->max_timestamp = saved_max;
                seg->offset_of_max_timestamp = saved_off;
            }
        }
    }
    if (rc == 0 && seg->size > 0) {
        uint8_t raw[RECORD_BATCH_HEADER_SIZE];
        struct record_batch_header h;
        if (pread_full(seg->log_fd, raw, sizeof raw, 0) == 0 && record_batch_parse_header(raw, sizeof raw, &h) == 0)
            seg->first_batch_timestamp = h.max_timestamp;
        if (seg->max_timestamp < 0) {
            struct stat st;
            if (fstat(seg->log_fd, &st) == 0)
                seg->max_timestamp = (int64_t)st.st_mtime * 1000;
        }
    }
    if (rc == 0 && is_last) {
        /* Only a saving: a full disk must not keep the log from opening. */
        int prc = start_reservation(seg, cfg);
        if (prc != 0)
            logger_warn("log", "%s.log: cannot reserve blocks: %s", seg->path, strerror(prc));
    }
    if (rc != 0) {
        snprintf(err, errlen, "cannot open segment %s: %s", seg->path, strerror(rc));
        log_segment_close(seg, false);
        return rc;
    }
    *out = seg;
    return 0;
}

int log_segment_write(struct log_segment *seg, const uint8_t *data, size_t len)
{
    reserve_ahead(seg, seg->size + (int64_t)len);
    int rc = pwrite_full(seg->log_fd, data, len, seg->size);
    if (rc != 0) {
        /* Drop whatever part reached the file so the segment stays whole
         * (this also frees what was reserved past it). */
        if (ftruncate(seg->log_fd, (off_t)seg->size) != 0)
            logger_error("log", "%s.log: cannot undo a failed write: %s", seg->path, strerror(errno));
        seg->reserved_end = 0;
    }
    return rc;
}

int log_segment_commit(struct log_segment *seg, const uint8_t *data, size_t len, const struct log_config *cfg)
{
    struct record_batch_iter it;
    const uint8_t *batch;
    size_t blen;
    int rc = 0;
    record_batch_iter_init(&it, data, len);
    while (record_batch_iter_next(&it, &batch, &blen) == 1) {
        struct record_batch_header h;
        record_batch_parse_header(batch, blen, &h);
        int64_t pos = seg->size + (int64_t)(batch - data);
        int irc = index_batch(seg, pos, &h, cfg, true);
        if (irc != 0 && rc == 0)
            rc = irc;
    }
    seg->size += (int64_t)len;
    return rc;
}

int log_segment_seal(struct log_segment *seg)
{
    int rc = log_segment_release_reservation(seg);
    if (rc != 0) /* Costs disk space only: the records are intact. */
        logger_warn("log", "%s.log: cannot release reserved blocks: %s", seg->path, strerror(rc));
    if (seg->max_timestamp < 0 || seg->offset_of_max_timestamp < 0)
        return 0;
    return add_time_entry(seg, seg->max_timestamp, (uint32_t)(seg->offset_of_max_timestamp - seg->base_offset), true);
}

bool log_segment_index_full(const struct log_segment *seg, const struct log_config *cfg)
{
    return (int64_t)(seg->index_count + 1) * 8 > cfg->segment_index_bytes ||
           (int64_t)(seg->time_count + 1) * 12 > cfg->segment_index_bytes;
}

int64_t log_segment_index_lookup(const struct log_segment *seg, int64_t offset)
{
    int64_t rel = offset - seg->base_offset;
    if (rel < 0 || seg->index_count == 0 || (int64_t)seg->index[0].rel_offset > rel)
        return 0;
    size_t lo = 0, hi = seg->index_count; /* answer in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((int64_t)seg->index[mid].rel_offset <= rel)
            lo = mid;
        else
            hi = mid;
    }
    return seg->index[lo].position;
}

int64_t log_segment_time_lookup(const struct log_segment *seg, int64_t ts)
{
    if (seg->time_count == 0 || seg->time_index[0].timestamp > ts)
        return seg->base_offset;
    size_t lo = 0, hi = seg->time_count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (seg->time_index[mid].timestamp <= ts)
            lo = mid;
        else
            hi = mid;
    }
    return seg->base_offset + seg->time_index[lo].rel_offset;
}

int log_segment_find(const struct log_segment *seg, int64_t offset, struct log_scanner *scan, int64_t *pos_out,
                     struct record_batch_header *hdr)
{
    int64_t pos = log_segment_index_lookup(seg, offset);
    while (pos < seg->size) {
        const uint8_t *p = log_scanner_get(scan, pos, RECORD_BATCH_HEADER_SIZE);
        if (!p)
            return -1;
        record_batch_parse_header(p, RECORD_BATCH_HEADER_SIZE, hdr);
        if (hdr->batch_length < RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_LOG_OVERHEAD)
            return -1;
        if (record_batch_last_offset(hdr) >= offset) {
            *pos_out = pos;
            return 1;
        }
        pos += (int64_t)record_batch_total_size(hdr);
    }
    return 0;
}

int log_segment_truncate_to(struct log_segment *seg, int64_t offset, const struct log_config *cfg)
{
    struct log_scanner scan;
    struct record_batch_header h;
    int64_t pos;
    log_scanner_init(&scan, seg->log_fd, seg->size, LOG_SCAN_HEADER_BUF);
    int found = log_segment_find(seg, offset, &scan, &pos, &h);
    log_scanner_free(&scan);
    if (found < 0)
        return EIO;
    if (found == 0)
        return 0;
    if (ftruncate(seg->log_fd, (off_t)pos) != 0)
        return errno;
    seg->size = pos;
    /* The truncate freed the blocks past pos; the next write reserves again. */
    seg->reserved_end = 0;
    bool truncated = false;
    return rebuild(seg, false, cfg, &truncated);
}

int log_segment_flush_data(struct log_segment *seg)
{
    return fdatasync(seg->log_fd) != 0 ? errno : 0;
}

int log_segment_flush(struct log_segment *seg)
{
    if (fdatasync(seg->log_fd) != 0 || fdatasync(seg->index_fd) != 0 || fdatasync(seg->time_fd) != 0)
        return errno;
    return 0;
}
