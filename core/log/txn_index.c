/* Aborted-transaction list and .txnindex files. */
#include "log/txn_index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/log_checkpoint.h"

/* A .txnindex larger than this is refused rather than read. */
#define TXN_INDEX_MAX_FILE_BYTES (64u * 1024 * 1024)

void txn_index_free(struct txn_index *idx)
{
    free(idx->entries);
    idx->entries = NULL;
    idx->count = idx->cap = 0;
}

int txn_index_add(struct txn_index *idx, const struct txn_index_entry *e)
{
    if (idx->count == idx->cap) {
        size_t cap = idx->cap ? idx->cap * 2 : 16;
        struct txn_index_entry *grown = realloc(idx->entries, cap * sizeof *grown);
        if (!grown)
            return ENOMEM;
        idx->entries = grown;
        idx->cap = cap;
    }
    idx->entries[idx->count++] = *e;
    return 0;
}

void txn_index_truncate(struct txn_index *idx, int64_t offset)
{
    while (idx->count > 0 && idx->entries[idx->count - 1].last_offset >= offset)
        idx->count--;
}

void txn_index_drop_before(struct txn_index *idx, int64_t offset)
{
    size_t keep = 0;
    while (keep < idx->count && idx->entries[keep].last_offset < offset)
        keep++;
    if (keep == 0)
        return;
    memmove(idx->entries, idx->entries + keep, (idx->count - keep) * sizeof *idx->entries);
    idx->count -= keep;
}

size_t txn_index_collect(const struct txn_index *idx, int64_t fetch_offset, int64_t upper_bound,
                         void (*fn)(void *arg, const struct txn_index_entry *e), void *arg)
{
    /* Binary search for the first marker at or after the fetch offset. */
    size_t lo = 0, hi = idx->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (idx->entries[mid].last_offset < fetch_offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t matched = 0;
    for (size_t i = lo; i < idx->count; i++) {
        const struct txn_index_entry *e = &idx->entries[i];
        if (e->first_offset < upper_bound) {
            if (fn)
                fn(arg, e);
            matched++;
        }
        /* Every transaction open at this marker started at or after its
         * LSO, so no later entry can start below the bound. */
        if (e->last_stable_offset >= upper_bound)
            break;
    }
    return matched;
}

static void put_be64(uint8_t *p, int64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
}

static int64_t get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return (int64_t)v;
}

void txn_index_encode(uint8_t out[TXN_INDEX_ENTRY_SIZE], const struct txn_index_entry *e)
{
    out[0] = 0;
    out[1] = TXN_INDEX_VERSION;
    put_be64(out + 2, e->producer_id);
    put_be64(out + 10, e->first_offset);
    put_be64(out + 18, e->last_offset);
    put_be64(out + 26, e->last_stable_offset);
}

int txn_index_decode(const uint8_t in[TXN_INDEX_ENTRY_SIZE], struct txn_index_entry *e)
{
    if (in[0] != 0 || in[1] != TXN_INDEX_VERSION)
        return -1;
    e->producer_id = get_be64(in + 2);
    e->first_offset = get_be64(in + 10);
    e->last_offset = get_be64(in + 18);
    e->last_stable_offset = get_be64(in + 26);
    return 0;
}

int txn_index_load_file(struct txn_index *idx, const char *path)
{
    char *data;
    size_t len;
    int rc = log_file_read_all(path, TXN_INDEX_MAX_FILE_BYTES, &data, &len);
    if (rc == ENOENT)
        return 0;
    if (rc != 0)
        return rc;
    for (size_t pos = 0; pos + TXN_INDEX_ENTRY_SIZE <= len && rc == 0; pos += TXN_INDEX_ENTRY_SIZE) {
        struct txn_index_entry e;
        if (txn_index_decode((const uint8_t *)data + pos, &e) != 0 || e.first_offset < 0 ||
            e.last_offset < e.first_offset ||
            (idx->count > 0 && e.last_offset < idx->entries[idx->count - 1].last_offset))
            break;
        rc = txn_index_add(idx, &e);
    }
    free(data);
    return rc;
}

int txn_index_append_file(const char *path, const struct txn_index_entry *e)
{
    uint8_t buf[TXN_INDEX_ENTRY_SIZE];
    txn_index_encode(buf, e);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno;
    int rc = 0;
    size_t done = 0;
    while (done < sizeof buf && rc == 0) {
        ssize_t n = write(fd, buf + done, sizeof buf - done);
        if (n < 0 && errno != EINTR)
            rc = errno;
        else if (n > 0)
            done += (size_t)n;
    }
    if (rc == 0 && fdatasync(fd) != 0)
        rc = errno;
    close(fd);
    return rc;
}

int txn_index_write_file(const char *path, const struct txn_index_entry *entries, size_t n)
{
    if (n == 0)
        return unlink(path) == 0 || errno == ENOENT ? 0 : errno;
    if (n > SIZE_MAX / TXN_INDEX_ENTRY_SIZE)
        return EOVERFLOW;
    uint8_t *buf = malloc(n * TXN_INDEX_ENTRY_SIZE);
    if (!buf)
        return ENOMEM;
    for (size_t i = 0; i < n; i++)
        txn_index_encode(buf + i * TXN_INDEX_ENTRY_SIZE, &entries[i]);
    int rc = log_file_write_atomic(path, (const char *)buf, n * TXN_INDEX_ENTRY_SIZE);
    free(buf);
    return rc;
}
