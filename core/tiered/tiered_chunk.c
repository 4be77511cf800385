/* Chunks for the remote read path: ranged reads of a remote segment (the
 * plugin's fetch_segment with [start, end)) checked before use, offset
 * and time indexes, and reads of the batches of a cached chunk. Downloads
 * run on the remote log reader threads only. */
#include "tiered/tiered_chunk.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/clock.h"

struct file_sink {
    FILE *f;
};

static int write_to_file(void *ctx, const uint8_t *data, size_t len)
{
    struct file_sink *s = ctx;
    return fwrite(data, 1, len, s->f) == len ? CAIRN_OK : CAIRN_ERROR;
}

struct memory_sink {
    uint8_t *data;
    size_t len, cap;
};

static int write_to_memory(void *ctx, const uint8_t *data, size_t len)
{
    struct memory_sink *m = ctx;
    if (m->len + len > m->cap) {
        size_t cap = (m->len + len) * 2;
        uint8_t *grown = realloc(m->data, cap);
        if (!grown)
            return CAIRN_ERROR;
        m->data = grown;
        m->cap = cap;
    }
    memcpy(m->data + m->len, data, len);
    m->len += len;
    return CAIRN_OK;
}

/* Every batch of the file: whole, the last one ending at its end, inside
 * the segment's offsets, ascending, CRC intact. Returns NULL or what is
 * wrong; *local when that is this broker's failure (memory, its own file),
 * not the downloaded bytes'. */
static const char *check_batches(int fd, int64_t size, const struct tiered_segment *seg, bool *local)
{
    *local = false;
    int64_t pos = 0, expect_from = seg->start_offset;
    uint8_t *buf = NULL;
    size_t cap = 0;
    const char *bad = NULL;
    while (!bad && pos < size) {
        uint8_t head[RECORD_BATCH_HEADER_SIZE];
        struct record_batch_header h;
        if (size - pos < RECORD_BATCH_HEADER_SIZE || pread(fd, head, sizeof head, pos) != (ssize_t)sizeof head) {
            bad = "truncated batch header";
            break;
        }
        record_batch_parse_header(head, sizeof head, &h);
        size_t total = record_batch_total_size(&h);
        if (h.batch_length < RECORD_BATCH_HEADER_SIZE - 12 || (int64_t)total > size - pos ||
            h.base_offset < expect_from || record_batch_last_offset(&h) > seg->end_offset) {
            bad = "batch framing or offsets outside the segment";
            break;
        }
        if (total > cap) {
            uint8_t *grown = realloc(buf, total);
            if (!grown) {
                bad = "out of memory";
                *local = true;
                break;
            }
            buf = grown;
            cap = total;
        }
        if (pread(fd, buf, total, pos) != (ssize_t)total) {
            bad = "short read";
            *local = true;
        } else if (!record_batch_crc_ok(buf, total))
            bad = "batch CRC mismatch";
        expect_from = record_batch_last_offset(&h) + 1;
        pos += (int64_t)total;
    }
    free(buf);
    return bad;
}

int tiered_chunk_download(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg, int64_t start,
                          int64_t end, const char *path, int *fd, enum tiered_error_kind *kind, char *err,
                          size_t errlen)
{
    *fd = -1;
    *kind = TIERED_ERROR_OTHER;
    struct cairn_remote_segment view;
    tiered_segment_view(t, p, seg, &view);
    char *tmp = NULL;
    FILE *f = asprintf(&tmp, "%s.tmp", path) < 0 ? NULL : fopen(tmp, "wb");
    int rc = -1;
    if (!f) {
        snprintf(err, errlen, "cannot create %s: %s", tmp ? tmp : "a cache file", strerror(errno));
        free(tmp);
        return -1;
    }
    struct file_sink fs = {f};
    struct cairn_byte_sink sink = {sizeof sink, &fs, write_to_file};
    metrics_add(t->metrics.fetch_requests, 1);
    int64_t started_ns = clock_mono_ns();
    int status = t->rsm->fetch_segment(t->rsm_instance, &view, start, end, &sink, err, errlen);
    tiered_observe_fetch(t, TIERED_FETCH_SEGMENT, started_ns);
    if (status != CAIRN_OK)
        *kind = tiered_error_kind_of(status);
    if (fclose(f) != 0 && status == CAIRN_OK) {
        snprintf(err, errlen, "cannot write %s", tmp);
        status = CAIRN_ERROR; /* this broker's disk: kind stays other */
    }
    if (status != CAIRN_OK)
        goto out;
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
        goto out;
    }
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (*fd < 0 || fstat(*fd, &st) != 0) {
        snprintf(err, errlen, "open %s: %s", path, strerror(errno));
        goto out;
    }
    metrics_add(t->metrics.fetch_bytes, st.st_size);
    bool local = false;
    const char *bad = st.st_size != end - start ? "size differs from the copied segment"
                                                : check_batches(*fd, st.st_size, seg, &local);
    if (bad) {
        *kind = local ? TIERED_ERROR_OTHER : TIERED_ERROR_CORRUPT;
        snprintf(err, errlen, "remote segment %" PRId64 "-%" PRId64 " bytes %" PRId64 "-%" PRId64 " are corrupt: %s",
                 seg->start_offset, seg->end_offset, start, end, bad);
        goto out;
    }
    rc = 0;
out:
    if (rc != 0) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        unlink(path);
    }
    unlink(tmp);
    free(tmp);
    return rc;
}

/* The bytes of one of seg's index objects: 0 with *data (malloc'd, maybe
 * NULL when empty), 1 when the store holds none, -1 with err and *kind. */
static int index_bytes(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                       int32_t index_type, uint8_t **data, size_t *len, enum tiered_error_kind *kind, char *err,
                       size_t errlen)
{
    struct cairn_remote_segment view;
    tiered_segment_view(t, p, seg, &view);
    struct memory_sink index = {0};
    struct cairn_byte_sink sink = {sizeof sink, &index, write_to_memory};
    int64_t started_ns = clock_mono_ns();
    int status = t->rsm->fetch_index(t->rsm_instance, &view, index_type, &sink, err, errlen);
    tiered_observe_fetch(t, TIERED_FETCH_INDEX, started_ns);
    if (status != CAIRN_OK) {
        free(index.data);
        *kind = tiered_error_kind_of(status);
        return status == CAIRN_NOT_FOUND ? 1 : -1;
    }
    *data = index.data;
    *len = index.len;
    return 0;
}

static uint32_t get_be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

int tiered_index_download(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                          struct tiered_index_entry **out, size_t *count, enum tiered_error_kind *kind, char *err,
                          size_t errlen)
{
    *kind = TIERED_ERROR_OTHER;
    *out = NULL;
    *count = 0;
    uint8_t *data = NULL;
    size_t len = 0;
    int rc = index_bytes(t, p, seg, CAIRN_REMOTE_INDEX_OFFSET, &data, &len, kind, err, errlen);
    if (rc != 0)
        return rc > 0 ? 0 : -1; /* none: scanned from the start instead, in one chunk */
    size_t n = len / 8;
    struct tiered_index_entry *entries = n ? calloc(n, sizeof *entries) : NULL;
    if (n && !entries) {
        free(data);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        entries[i].rel_offset = get_be32(data + 8 * i);
        entries[i].position = get_be32(data + 8 * i + 4);
    }
    free(data);
    *out = entries;
    *count = n;
    return 0;
}

int tiered_time_index_download(struct tiered *t, struct tiered_partition *p, const struct tiered_segment *seg,
                               struct tiered_time_entry **out, size_t *count, enum tiered_error_kind *kind, char *err,
                               size_t errlen)
{
    *kind = TIERED_ERROR_OTHER;
    *out = NULL;
    *count = 0;
    uint8_t *data = NULL;
    size_t len = 0;
    int rc = index_bytes(t, p, seg, CAIRN_REMOTE_INDEX_TIMESTAMP, &data, &len, kind, err, errlen);
    if (rc != 0)
        return rc > 0 ? 0 : -1; /* none: a search scans from the segment's start */
    size_t n = len / 12;
    struct tiered_time_entry *entries = n ? calloc(n, sizeof *entries) : NULL;
    if (n && !entries) {
        free(data);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t ts = (uint64_t)get_be32(data + 12 * i) << 32 | get_be32(data + 12 * i + 4);
        entries[i].timestamp = (int64_t)ts;
        entries[i].rel_offset = get_be32(data + 12 * i + 8);
    }
    free(data);
    *out = entries;
    *count = n;
    return 0;
}

int16_t tiered_chunk_read(int fd, int64_t chunk_start, int64_t chunk_size, int64_t pos, int64_t offset,
                          int32_t max_bytes, int64_t max_offset, struct log_read_result *out, bool *passed)
{
    *passed = false;
    int64_t end = chunk_start + chunk_size;
    int64_t first = -1, total = 0, next = offset;
    while (pos + RECORD_BATCH_HEADER_SIZE <= end) {
        uint8_t head[RECORD_BATCH_HEADER_SIZE];
        struct record_batch_header h;
        if (pread(fd, head, sizeof head, pos - chunk_start) != (ssize_t)sizeof head)
            return KAFKA_ERR_KAFKA_STORAGE_ERROR;
        record_batch_parse_header(head, sizeof head, &h);
        int64_t size = (int64_t)record_batch_total_size(&h);
        if (first < 0 && record_batch_last_offset(&h) < offset) {
            pos += size;
            continue;
        }
        if (record_batch_last_offset(&h) >= max_offset || (total > 0 && total + size > (int64_t)max_bytes))
            break;
        if (first < 0)
            first = pos;
        total += size;
        pos += size;
        next = record_batch_last_offset(&h) + 1;
    }
    if (first < 0 && pos >= end)
        *passed = true;
    if (total > 0) {
        out->fd = dup(fd);
        if (out->fd < 0)
            return KAFKA_ERR_KAFKA_STORAGE_ERROR;
        out->file_pos = first - chunk_start;
        out->len = total;
        out->next_offset = next;
    }
    return KAFKA_ERR_NONE;
}
