/* The Raft log on disk: __cluster_metadata-0 as Kafka record batches in the
 * partition log's segments, one batch per raft_entry (see raft_store.h). */
#include "raft/raft_store.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/log_manager.h"
#include "log/partition_log.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/leader_change_message.h"
#include "protocol/record_batch.h"
#include "util/clock.h"
#include "util/fs_util.h"

#define RAFT_STORE_MAX_BATCH_BYTES (64 * 1024 * 1024)
#define RECOVER_READ_BYTES (1024 * 1024)
/* Kafka's ControlRecordType.LEADER_CHANGE. */
#define CONTROL_TYPE_LEADER_CHANGE 2

struct raft_store {
    struct partition_log *log;
};

int raft_store_open(const char *parent_dir, struct raft_store **out, char *err, size_t errlen)
{
    *out = NULL;
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", parent_dir, LOG_MANAGER_METADATA_DIR) >= sizeof path) {
        snprintf(err, errlen, "raft log path too long under %s", parent_dir);
        return -1;
    }
    if (fs_mkdir_p(path, err, errlen) != 0)
        return -1;
    struct raft_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.max_message_bytes = RAFT_STORE_MAX_BATCH_BYTES;
    /* Full recovery: the unsynced tail of a crash must go, batch-whole. */
    if (partition_log_open(path, &cfg, true, &s->log, err, errlen) != 0) {
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

void raft_store_set_segments(struct raft_store *s, int64_t segment_bytes, int64_t segment_ms)
{
    struct log_config cfg;
    partition_log_get_config(s->log, &cfg);
    if (segment_bytes > 0)
        cfg.segment_bytes = segment_bytes;
    if (segment_ms > 0)
        cfg.segment_ms = segment_ms;
    (void)partition_log_set_config(s->log, &cfg);
}

void raft_store_close(struct raft_store *s)
{
    if (!s)
        return;
    partition_log_close(s->log);
    free(s);
}

int64_t raft_store_end_offset(struct raft_store *s)
{
    return partition_log_end_offset(s->log);
}

void raft_store_entries_free(struct raft_entry *entries, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        free(entries[i].data);
    free(entries);
}

/* True for the core's LeaderChange body (raft.h): a batch never starts
 * with that byte (it would be a negative base offset). */
bool raft_store_is_leader_change_body(const struct raft_entry *e)
{
    return e->count == 1 && e->data && e->len >= 5 && e->len <= RAFT_LEADER_CHANGE_MAX_LEN && (e->len - 5) % 4 == 0 &&
           e->data[0] == RAFT_LEADER_CHANGE_BYTE;
}

/* Kafka's LeaderChangeMessage v0 as the control record's value: the leader
 * and the voters of its epoch (GrantingVoters left empty). */
static int leader_change_batch(const struct raft_entry *e, uint8_t **out, size_t *out_len)
{
    struct leader_change_message_voter voters[RAFT_MAX_VOTERS];
    struct leader_change_message m;
    leader_change_message_init(&m);
    memcpy(&m.leader_id, e->data + 1, sizeof m.leader_id);
    m.voters_count = (int32_t)((e->len - 5) / 4);
    for (int32_t i = 0; i < m.voters_count; i++) {
        leader_change_message_voter_init(&voters[i]);
        memcpy(&voters[i].voter_id, e->data + 5 + 4 * i, sizeof voters[i].voter_id);
    }
    m.voters = voters;
    struct kafka_writer w;
    if (kafka_writer_init(&w, 64) != 0)
        return -1;
    if (leader_change_message_encode(&m, &w, 0) != 0 || w.failed) {
        kafka_writer_free(&w);
        return -1;
    }
    uint8_t key[4] = {0, 0, 0, CONTROL_TYPE_LEADER_CHANGE};
    int64_t now = clock_wall_ms();
    struct record_batch_builder b;
    record_batch_builder_init(&b, now);
    b.attributes = RECORD_BATCH_CONTROL_BIT;
    int rc = record_batch_builder_add(&b, now, key, sizeof key, w.buf, (int32_t)w.len, NULL, 0);
    if (rc == 0)
        rc = record_batch_builder_finish(&b, out, out_len);
    record_batch_builder_free(&b);
    kafka_writer_free(&w);
    return rc;
}

int raft_store_entry_batch(const struct raft_entry *e, uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
    *out = NULL;
    if (raft_store_is_leader_change_body(e)) {
        if (leader_change_batch(e, out, out_len) != 0) {
            snprintf(err, errlen, "out of memory building the LeaderChange batch at offset %lld", (long long)e->offset);
            return -1;
        }
    } else {
        struct record_batch_header h;
        if (record_batch_parse_header(e->data, e->len, &h) != 0 || record_batch_total_size(&h) != e->len ||
            record_batch_last_offset(&h) - h.base_offset + 1 != e->count) {
            snprintf(err, errlen, "the entry at offset %lld is not one record batch of %d records",
                     (long long)e->offset, e->count);
            return -1;
        }
        *out = malloc(e->len);
        if (!*out) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memcpy(*out, e->data, e->len);
        *out_len = e->len;
    }
    record_batch_set_base_offset(*out, e->offset);
    record_batch_set_partition_leader_epoch(*out, e->epoch);
    return 0;
}

int raft_store_append(struct raft_store *s, const struct raft_entry *e, char *err, size_t errlen)
{
    int64_t end = partition_log_end_offset(s->log);
    if (e->offset != end) {
        snprintf(err, errlen, "raft log append at offset %lld, but the log ends at %lld", (long long)e->offset,
                 (long long)end);
        return -1;
    }
    uint8_t *batch;
    size_t len;
    if (raft_store_entry_batch(e, &batch, &len, err, errlen) != 0)
        return -1;
    struct log_append_result res;
    memset(&res, 0, sizeof res);
    int16_t code = partition_log_append_as(s->log, LOG_APPEND_REPLICATION, batch, len, e->epoch, &res);
    free(batch);
    if (code != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "raft log append at offset %lld failed (error %d): %s", (long long)e->offset, (int)code,
                 res.error_message);
        return -1;
    }
    return 0;
}

int raft_store_truncate(struct raft_store *s, int64_t offset, char *err, size_t errlen)
{
    int16_t code = partition_log_truncate_to(s->log, offset);
    if (code != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "raft log truncation to offset %lld failed (error %d)", (long long)offset, (int)code);
        return -1;
    }
    return 0;
}

int raft_store_flush(struct raft_store *s, int64_t offset, int64_t *flushed_out, char *err, size_t errlen)
{
    int64_t end = partition_log_end_offset(s->log);
    if (offset > end)
        offset = end;
    int16_t code = partition_log_flush_to(s->log, offset);
    if (code != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "raft log fsync up to offset %lld failed (error %d)", (long long)offset, (int)code);
        return -1;
    }
    /* What the sync covered, which may be more than asked for. */
    int64_t durable = partition_log_recovery_point(s->log);
    end = partition_log_end_offset(s->log);
    *flushed_out = durable < end ? durable : end;
    return 0;
}

/* Entries being collected by a read. */
struct entry_list {
    struct raft_entry *v;
    int64_t n, cap;
    int64_t bytes;
};

static int list_push(struct entry_list *l, const uint8_t *batch, size_t len, const struct record_batch_header *h)
{
    if (l->n == l->cap) {
        int64_t cap = l->cap ? l->cap * 2 : 64;
        struct raft_entry *grown = realloc(l->v, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        l->v = grown;
        l->cap = cap;
    }
    uint8_t *copy = malloc(len);
    if (!copy)
        return -1;
    memcpy(copy, batch, len);
    l->v[l->n++] = (struct raft_entry){.offset = h->base_offset,
                                       .epoch = h->partition_leader_epoch,
                                       .count = (int32_t)(record_batch_last_offset(h) - h->base_offset + 1),
                                       .len = (uint32_t)len,
                                       .data = copy};
    l->bytes += (int64_t)len;
    return 0;
}

static int read_region(const struct log_read_result *rd, uint8_t **buf, size_t *cap)
{
    if ((size_t)rd->len > *cap) {
        uint8_t *grown = realloc(*buf, (size_t)rd->len);
        if (!grown)
            return -1;
        *buf = grown;
        *cap = (size_t)rd->len;
    }
    size_t got = 0;
    while (got < (size_t)rd->len) {
        ssize_t n = pread(rd->fd, *buf + got, (size_t)rd->len - got, rd->file_pos + (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += (size_t)n;
    }
    return 0;
}

/* Collects whole batches from offset until the log end or max_bytes (at
 * least one batch). The log is contiguous: a gap or an offset inside a
 * batch is an error. */
static int collect(struct raft_store *s, int64_t offset, int64_t max_bytes, struct entry_list *l, char *err,
                   size_t errlen)
{
    int64_t end = partition_log_end_offset(s->log);
    uint8_t *buf = NULL;
    size_t cap = 0;
    int result = 0;
    bool full = false;
    while (result == 0 && !full && offset < end) {
        int64_t before = offset;
        struct log_read_result rd;
        int16_t code = partition_log_read(s->log, offset, RECOVER_READ_BYTES, INT64_MAX, &rd);
        if (code != KAFKA_ERR_NONE || rd.len <= 0) {
            if (code == KAFKA_ERR_NONE && rd.fd >= 0)
                close(rd.fd);
            snprintf(err, errlen, "reading the raft log at offset %lld failed (error %d)", (long long)offset,
                     (int)code);
            result = -1;
            break;
        }
        int rc = read_region(&rd, &buf, &cap);
        close(rd.fd);
        if (rc != 0) {
            snprintf(err, errlen, "reading the raft log at offset %lld failed", (long long)offset);
            result = -1;
            break;
        }
        struct record_batch_iter it;
        record_batch_iter_init(&it, buf, (size_t)rd.len);
        const uint8_t *batch;
        size_t len;
        while (record_batch_iter_next(&it, &batch, &len) == 1) {
            struct record_batch_header h;
            if (record_batch_parse_header(batch, len, &h) != 0)
                break;
            if (record_batch_last_offset(&h) < offset)
                continue; /* a read may begin at an earlier batch */
            if (h.base_offset != offset) {
                snprintf(err, errlen, "raft log offset %lld is not where a batch starts (batch at %lld)",
                         (long long)offset, (long long)h.base_offset);
                result = -1;
                break;
            }
            if (l->n > 0 && l->bytes + (int64_t)len > max_bytes) {
                full = true;
                break;
            }
            if (list_push(l, batch, len, &h) != 0) {
                snprintf(err, errlen, "out of memory reading the raft log");
                result = -1;
                break;
            }
            offset = record_batch_last_offset(&h) + 1;
        }
        if (result == 0 && !full && offset == before) {
            snprintf(err, errlen, "raft log makes no progress at offset %lld", (long long)offset);
            result = -1;
        }
    }
    free(buf);
    return result;
}

int raft_store_read(struct raft_store *s, int64_t offset, int32_t max_bytes, struct raft_entry **entries_out,
                    int64_t *n_out, char *err, size_t errlen)
{
    *entries_out = NULL;
    *n_out = 0;
    if (offset < 0 || offset > partition_log_end_offset(s->log)) {
        snprintf(err, errlen, "raft log offset %lld is out of range (log end %lld)", (long long)offset,
                 (long long)partition_log_end_offset(s->log));
        return -1;
    }
    struct entry_list l = {0};
    if (collect(s, offset, max_bytes, &l, err, errlen) != 0) {
        raft_store_entries_free(l.v, l.n);
        return -1;
    }
    *entries_out = l.v;
    *n_out = l.n;
    return 0;
}

int raft_store_recover(struct raft_store *s, struct raft_entry **entries_out, int64_t *n_out, char *err, size_t errlen)
{
    return raft_store_read(s, partition_log_start_offset(s->log), INT32_MAX, entries_out, n_out, err, errlen);
}

int64_t raft_store_start_offset(struct raft_store *s)
{
    return partition_log_start_offset(s->log);
}

int raft_store_delete_before(struct raft_store *s, int64_t offset, char *err, size_t errlen)
{
    int16_t code = partition_log_delete_records_before(s->log, offset);
    if (code != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "moving the raft log start to %lld failed (error %d)", (long long)offset, (int)code);
        return -1;
    }
    return 0;
}

int raft_store_start_at(struct raft_store *s, int64_t offset, char *err, size_t errlen)
{
    int16_t code = partition_log_truncate_fully_and_start_at(s->log, offset);
    if (code != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "restarting the raft log at %lld failed (error %d)", (long long)offset, (int)code);
        return -1;
    }
    return 0;
}
