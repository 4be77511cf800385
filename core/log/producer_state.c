/* Producer state table: an open-addressing hash of producer entries keyed by
 * producer id (linear probing, backward-shift deletion), the sequence and
 * epoch rules, and snapshot files. */
#include "log/producer_state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log_checkpoint.h"
#include "protocol/generated/errors.h"
#include "util/crc32c.h"

#define EMPTY_SLOT (-1)
#define SNAPSHOT_HEADER_SIZE 10 /* version + crc + count */
#define SNAPSHOT_ENTRY_SIZE 46
/* A snapshot larger than this is refused rather than allocated. */
#define SNAPSHOT_MAX_BYTES (256u * 1024 * 1024)

struct producer_state {
    struct producer_entry *slots; /* producer_id EMPTY_SLOT when free */
    size_t cap;                   /* power of two, or 0 */
    size_t count;
};

static uint64_t hash_id(int64_t id)
{
    uint64_t x = (uint64_t)id;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

struct producer_state *producer_state_new(void)
{
    return calloc(1, sizeof(struct producer_state));
}

void producer_state_free(struct producer_state *ps)
{
    if (!ps)
        return;
    free(ps->slots);
    free(ps);
}

void producer_state_clear(struct producer_state *ps)
{
    for (size_t i = 0; i < ps->cap; i++)
        ps->slots[i].producer_id = EMPTY_SLOT;
    ps->count = 0;
}

size_t producer_state_count(const struct producer_state *ps)
{
    return ps->count;
}

static size_t find_slot(const struct producer_state *ps, int64_t id)
{
    size_t mask = ps->cap - 1;
    size_t i = (size_t)hash_id(id) & mask;
    while (ps->slots[i].producer_id != EMPTY_SLOT && ps->slots[i].producer_id != id)
        i = (i + 1) & mask;
    return i;
}

const struct producer_entry *producer_state_get(const struct producer_state *ps, int64_t producer_id)
{
    if (ps->cap == 0 || producer_id < 0)
        return NULL;
    size_t i = find_slot(ps, producer_id);
    return ps->slots[i].producer_id == producer_id ? &ps->slots[i] : NULL;
}

static int grow(struct producer_state *ps)
{
    size_t cap = ps->cap ? ps->cap * 2 : 16;
    struct producer_entry *old = ps->slots;
    size_t old_cap = ps->cap;
    struct producer_entry *slots = malloc(cap * sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < cap; i++)
        slots[i].producer_id = EMPTY_SLOT;
    ps->slots = slots;
    ps->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].producer_id != EMPTY_SLOT)
            ps->slots[find_slot(ps, old[i].producer_id)] = old[i];
    free(old);
    return 0;
}

/* The entry for id, created empty when absent; NULL when out of memory. */
static struct producer_entry *get_or_add(struct producer_state *ps, int64_t id)
{
    if ((ps->count + 1) * 4 > ps->cap * 3 && grow(ps) != 0)
        return NULL;
    size_t i = find_slot(ps, id);
    struct producer_entry *e = &ps->slots[i];
    if (e->producer_id == id)
        return e;
    memset(e, 0, sizeof *e);
    e->producer_id = id;
    e->epoch = -1;
    e->last_timestamp = -1;
    e->coordinator_epoch = -1;
    e->current_txn_first_offset = -1;
    ps->count++;
    return e;
}

static void remove_slot(struct producer_state *ps, size_t i)
{
    size_t mask = ps->cap - 1;
    ps->slots[i].producer_id = EMPTY_SLOT;
    ps->count--;
    /* Backward shift: move later members of the probe run into the hole. */
    for (size_t j = (i + 1) & mask; ps->slots[j].producer_id != EMPTY_SLOT; j = (j + 1) & mask) {
        size_t home = (size_t)hash_id(ps->slots[j].producer_id) & mask;
        bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            ps->slots[i] = ps->slots[j];
            ps->slots[j].producer_id = EMPTY_SLOT;
            i = j;
        }
    }
}

int32_t producer_seq_add(int32_t seq, int32_t delta)
{
    if (seq > INT32_MAX - delta)
        return (int32_t)((int64_t)seq + delta - INT32_MAX - 1);
    return seq + delta;
}

static bool in_sequence(int32_t last_seq, int32_t next_seq)
{
    return (int64_t)next_seq == (int64_t)last_seq + 1 || (next_seq == 0 && last_seq == INT32_MAX);
}

int16_t producer_state_check(const struct producer_state *ps, const struct record_batch_header *h,
                             struct producer_check_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    res->first_offset = res->last_offset = -1;
    const struct producer_entry *e = producer_state_get(ps, h->producer_id);
    int32_t first_seq = h->base_sequence;
    int32_t last_seq = producer_seq_add(first_seq, h->last_offset_delta);
    if (!e || e->epoch < 0) {
        if (first_seq != 0) {
            snprintf(err, errlen, "unknown producer id %" PRId64 " starting at sequence %" PRId32 " (expected 0)",
                     h->producer_id, first_seq);
            return KAFKA_ERR_UNKNOWN_PRODUCER_ID;
        }
        return KAFKA_ERR_NONE;
    }
    if (h->producer_epoch == e->epoch) {
        for (int i = 0; i < e->batch_count; i++) {
            const struct producer_batch_meta *b = &e->batches[i];
            if (b->first_seq == first_seq && b->last_seq == last_seq) {
                res->duplicate = true;
                res->first_offset = b->first_offset;
                res->last_offset = b->last_offset;
                return KAFKA_ERR_NONE;
            }
        }
    }
    if (h->producer_epoch < e->epoch) {
        snprintf(err, errlen, "producer %" PRId64 " epoch %d is older than the current epoch %d", h->producer_id,
                 h->producer_epoch, e->epoch);
        return KAFKA_ERR_INVALID_PRODUCER_EPOCH;
    }
    if (h->producer_epoch > e->epoch) {
        if (first_seq != 0) {
            snprintf(err, errlen, "producer %" PRId64 " starts epoch %d at sequence %" PRId32 " (expected 0)",
                     h->producer_id, h->producer_epoch, first_seq);
            return KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
        }
        return KAFKA_ERR_NONE;
    }
    if (e->batch_count == 0) {
        /* Epoch known but no batch retained (e.g. bumped by a marker later):
         * only the start of a sequence is certain to be in order. */
        if (first_seq != 0) {
            snprintf(err, errlen, "producer %" PRId64 " has no retained batch; sequence %" PRId32, h->producer_id,
                     first_seq);
            return KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
        }
        return KAFKA_ERR_NONE;
    }
    int32_t current_last = e->batches[e->batch_count - 1].last_seq;
    if (!in_sequence(current_last, first_seq)) {
        snprintf(err, errlen, "out of order sequence for producer %" PRId64 ": %" PRId32 " after %" PRId32,
                 h->producer_id, first_seq, current_last);
        return KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
    }
    return KAFKA_ERR_NONE;
}

static void add_batch(struct producer_entry *e, const struct producer_batch_meta *b)
{
    if (e->batch_count == PRODUCER_STATE_CACHED_BATCHES) {
        memmove(e->batches, e->batches + 1, (PRODUCER_STATE_CACHED_BATCHES - 1) * sizeof *e->batches);
        e->batch_count--;
    }
    e->batches[e->batch_count++] = *b;
}

int producer_state_update(struct producer_state *ps, const struct record_batch_header *h, int64_t first_offset,
                          int64_t last_offset)
{
    if (h->producer_id < 0)
        return 0;
    struct producer_entry *e = get_or_add(ps, h->producer_id);
    if (!e)
        return -1;
    if (h->producer_epoch != e->epoch) {
        e->epoch = h->producer_epoch;
        e->batch_count = 0;
    }
    struct producer_batch_meta b = {
        .first_seq = h->base_sequence,
        .last_seq = producer_seq_add(h->base_sequence, h->last_offset_delta),
        .first_offset = first_offset,
        .last_offset = last_offset,
        .timestamp = h->max_timestamp,
    };
    add_batch(e, &b);
    if (h->max_timestamp > e->last_timestamp)
        e->last_timestamp = h->max_timestamp;
    if (record_batch_is_transactional(h) && e->current_txn_first_offset < 0)
        e->current_txn_first_offset = first_offset;
    return 0;
}

int16_t producer_state_check_marker(const struct producer_state *ps, int64_t producer_id, int16_t epoch,
                                    int32_t coordinator_epoch, int64_t *txn_first_offset, char *err, size_t errlen)
{
    *txn_first_offset = -1;
    const struct producer_entry *e = producer_state_get(ps, producer_id);
    if (!e)
        return KAFKA_ERR_NONE;
    if (epoch < e->epoch) {
        snprintf(err, errlen, "marker for producer %" PRId64 " at epoch %d, older than its epoch %d", producer_id,
                 epoch, e->epoch);
        return KAFKA_ERR_INVALID_PRODUCER_EPOCH;
    }
    if (coordinator_epoch < e->coordinator_epoch) {
        snprintf(err, errlen, "marker for producer %" PRId64 " from coordinator epoch %" PRId32 ", older than %" PRId32,
                 producer_id, coordinator_epoch, e->coordinator_epoch);
        return KAFKA_ERR_TRANSACTION_COORDINATOR_FENCED;
    }
    *txn_first_offset = e->current_txn_first_offset;
    return KAFKA_ERR_NONE;
}

int producer_state_end_txn(struct producer_state *ps, int64_t producer_id, int16_t epoch, int32_t coordinator_epoch,
                           int64_t timestamp)
{
    struct producer_entry *e = get_or_add(ps, producer_id);
    if (!e)
        return -1;
    if (epoch != e->epoch) {
        e->epoch = epoch;
        e->batch_count = 0;
    }
    e->coordinator_epoch = coordinator_epoch;
    e->current_txn_first_offset = -1;
    if (timestamp > e->last_timestamp)
        e->last_timestamp = timestamp;
    return 0;
}

int64_t producer_state_first_open_txn(const struct producer_state *ps)
{
    int64_t first = -1;
    for (size_t i = 0; i < ps->cap; i++) {
        const struct producer_entry *e = &ps->slots[i];
        if (e->producer_id != EMPTY_SLOT && e->current_txn_first_offset >= 0 &&
            (first < 0 || e->current_txn_first_offset < first))
            first = e->current_txn_first_offset;
    }
    return first;
}

void producer_state_foreach(const struct producer_state *ps, void (*fn)(void *arg, const struct producer_entry *e),
                            void *arg)
{
    for (size_t i = 0; i < ps->cap; i++)
        if (ps->slots[i].producer_id != EMPTY_SLOT)
            fn(arg, &ps->slots[i]);
}

size_t producer_state_expire(struct producer_state *ps, int64_t now_ms, int64_t expiration_ms)
{
    size_t dropped = 0;
    size_t i = 0;
    while (i < ps->cap) {
        struct producer_entry *e = &ps->slots[i];
        if (e->producer_id != EMPTY_SLOT && e->current_txn_first_offset < 0 &&
            now_ms - e->last_timestamp >= expiration_ms) {
            remove_slot(ps, i);
            dropped++;
            continue; /* a shifted entry may now sit at i */
        }
        i++;
    }
    return dropped;
}

/* ---- snapshots ---- */

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static uint16_t get_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
    return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static uint8_t *put_entry(uint8_t *p, const struct producer_entry *e, const struct producer_batch_meta *b)
{
    put_be64(p, (uint64_t)e->producer_id);
    put_be16(p + 8, (uint16_t)e->epoch);
    put_be32(p + 10, (uint32_t)(b ? b->last_seq : -1));
    put_be64(p + 14, (uint64_t)(b ? b->last_offset : -1));
    put_be32(p + 22, (uint32_t)(b ? (int32_t)(b->last_offset - b->first_offset) : 0));
    put_be64(p + 26, (uint64_t)(b ? b->timestamp : e->last_timestamp));
    put_be32(p + 34, (uint32_t)e->coordinator_epoch);
    put_be64(p + 38, (uint64_t)e->current_txn_first_offset);
    return p + SNAPSHOT_ENTRY_SIZE;
}

static int write_snapshot(const struct producer_state *ps, const char *path, bool sync)
{
    size_t entries = 0;
    for (size_t i = 0; i < ps->cap; i++)
        if (ps->slots[i].producer_id != EMPTY_SLOT)
            entries += ps->slots[i].batch_count > 0 ? (size_t)ps->slots[i].batch_count : 1;
    if (entries > INT32_MAX)
        return EOVERFLOW;
    size_t len = SNAPSHOT_HEADER_SIZE + entries * SNAPSHOT_ENTRY_SIZE;
    uint8_t *buf = malloc(len);
    if (!buf)
        return ENOMEM;
    put_be16(buf, PRODUCER_STATE_SNAPSHOT_VERSION);
    put_be32(buf + 6, (uint32_t)entries);
    uint8_t *p = buf + SNAPSHOT_HEADER_SIZE;
    for (size_t i = 0; i < ps->cap; i++) {
        const struct producer_entry *e = &ps->slots[i];
        if (e->producer_id == EMPTY_SLOT)
            continue;
        if (e->batch_count == 0)
            p = put_entry(p, e, NULL);
        for (int b = 0; b < e->batch_count; b++)
            p = put_entry(p, e, &e->batches[b]);
    }
    put_be32(buf + 2, crc32c(0, buf + 6, len - 6));
    int rc = sync ? log_file_write_atomic(path, (const char *)buf, len)
                  : log_file_write_atomic_unsynced(path, (const char *)buf, len);
    free(buf);
    return rc;
}

int producer_state_write_snapshot(const struct producer_state *ps, const char *path)
{
    return write_snapshot(ps, path, true);
}

int producer_state_write_snapshot_unsynced(const struct producer_state *ps, const char *path)
{
    return write_snapshot(ps, path, false);
}

static int load_entry(struct producer_state *ps, const uint8_t *p)
{
    int64_t id = (int64_t)get_be64(p);
    int16_t epoch = (int16_t)get_be16(p + 8);
    int32_t last_seq = (int32_t)get_be32(p + 10);
    int64_t last_offset = (int64_t)get_be64(p + 14);
    int32_t offset_delta = (int32_t)get_be32(p + 22);
    int64_t timestamp = (int64_t)get_be64(p + 26);
    if (id < 0 || epoch < 0 || offset_delta < 0 || (last_offset >= 0 && last_seq < 0) ||
        (last_offset >= 0 && last_offset < offset_delta))
        return -1;
    struct producer_entry *e = get_or_add(ps, id);
    if (!e)
        return -1;
    if (e->epoch != epoch) {
        e->epoch = epoch;
        e->batch_count = 0;
    }
    int64_t txn_first = (int64_t)get_be64(p + 38);
    if (txn_first < -1)
        return -1;
    e->coordinator_epoch = (int32_t)get_be32(p + 34);
    e->current_txn_first_offset = txn_first;
    if (timestamp > e->last_timestamp)
        e->last_timestamp = timestamp;
    if (last_offset >= 0) {
        /* The batch's first sequence: last - delta, undoing a wrap at INT32_MAX. */
        int64_t first_seq = (int64_t)last_seq - offset_delta;
        if (first_seq < 0)
            first_seq += (int64_t)INT32_MAX + 1;
        struct producer_batch_meta b = {
            .first_seq = (int32_t)first_seq,
            .last_seq = last_seq,
            .first_offset = last_offset - offset_delta,
            .last_offset = last_offset,
            .timestamp = timestamp,
        };
        add_batch(e, &b);
    }
    return 0;
}

int producer_state_read_snapshot(struct producer_state *ps, const char *path)
{
    char *data;
    size_t len;
    producer_state_clear(ps);
    int rc = log_file_read_all(path, SNAPSHOT_MAX_BYTES, &data, &len);
    if (rc != 0)
        return rc == ENOENT ? ENOENT : EINVAL;
    const uint8_t *buf = (const uint8_t *)data;
    rc = EINVAL;
    if (len >= SNAPSHOT_HEADER_SIZE && get_be16(buf) == PRODUCER_STATE_SNAPSHOT_VERSION &&
        get_be32(buf + 2) == crc32c(0, buf + 6, len - 6)) {
        uint32_t count = get_be32(buf + 6);
        if (count <= INT32_MAX && (len - SNAPSHOT_HEADER_SIZE) == (size_t)count * SNAPSHOT_ENTRY_SIZE) {
            rc = 0;
            for (uint32_t i = 0; i < count && rc == 0; i++)
                if (load_entry(ps, buf + SNAPSHOT_HEADER_SIZE + (size_t)i * SNAPSHOT_ENTRY_SIZE) != 0)
                    rc = EINVAL;
        }
    }
    if (rc != 0)
        producer_state_clear(ps);
    free(data);
    return rc;
}
