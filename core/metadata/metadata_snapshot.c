/* Snapshot files: writing them atomically, finding the newest, reading and
 * checking one, and keeping only the last few. */
#include "metadata/metadata_snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/generated/snapshot_footer_record.h"
#include "protocol/generated/snapshot_header_record.h"
#include "protocol/record_batch.h"
#include "protocol/wire.h"
#include "util/clock.h"
#include "util/fs_util.h"

/* Kafka's ControlRecordType ids for the snapshot's first and last record. */
#define CONTROL_SNAPSHOT_HEADER 3
#define CONTROL_SNAPSHOT_FOOTER 4
/* Records per data batch; small batches keep the reader's memory flat. */
#define SNAPSHOT_BATCH_RECORDS 1000
#define PART_SUFFIX ".part"
/* "%020lld-%010d.checkpoint" */
#define SNAPSHOT_NAME_LEN (20 + 1 + 10 + sizeof(METADATA_SNAPSHOT_SUFFIX) - 1)

int metadata_snapshot_path(char *buf, size_t len, const char *log_dir, const struct metadata_snapshot_id *id)
{
    int n = snprintf(buf, len, "%s/%020" PRId64 "-%010" PRId32 "%s", log_dir, id->end_offset, id->epoch,
                     METADATA_SNAPSHOT_SUFFIX);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Parses a snapshot file name; 0 on a match. */
static int parse_name(const char *name, struct metadata_snapshot_id *out)
{
    if (strlen(name) != SNAPSHOT_NAME_LEN || name[20] != '-' || strcmp(name + 31, METADATA_SNAPSHOT_SUFFIX) != 0)
        return -1;
    for (int i = 0; i < 31; i++)
        if (i != 20 && (name[i] < '0' || name[i] > '9'))
            return -1;
    long long offset = strtoll(name, NULL, 10);
    long long epoch = strtoll(name + 21, NULL, 10);
    if (epoch > INT32_MAX)
        return -1;
    out->end_offset = offset;
    out->epoch = (int32_t)epoch;
    return 0;
}

static int id_cmp(const void *a, const void *b)
{
    const struct metadata_snapshot_id *x = a, *y = b;
    if (x->end_offset != y->end_offset)
        return x->end_offset < y->end_offset ? -1 : 1;
    return x->epoch < y->epoch ? -1 : x->epoch > y->epoch;
}

int metadata_snapshot_list(const char *log_dir, struct metadata_snapshot_id **out, char *err, size_t errlen)
{
    *out = NULL;
    DIR *d = opendir(log_dir);
    if (!d) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot list %s: %s", log_dir, strerror(errno));
        return -1;
    }
    int count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct metadata_snapshot_id id;
        if (parse_name(e->d_name, &id) != 0)
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 8;
            struct metadata_snapshot_id *grown = realloc(*out, (size_t)cap * sizeof(*grown));
            if (!grown) {
                closedir(d);
                free(*out);
                *out = NULL;
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            *out = grown;
        }
        (*out)[count++] = id;
    }
    closedir(d);
    if (count > 1)
        qsort(*out, (size_t)count, sizeof(**out), id_cmp);
    return count;
}

void metadata_snapshot_remove_parts(const char *log_dir)
{
    DIR *d = opendir(log_dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > strlen(PART_SUFFIX) && strcmp(e->d_name + n - strlen(PART_SUFFIX), PART_SUFFIX) == 0 &&
            strstr(e->d_name, METADATA_SNAPSHOT_SUFFIX)) {
            char path[PATH_MAX];
            if ((size_t)snprintf(path, sizeof(path), "%s/%s", log_dir, e->d_name) < sizeof(path))
                unlink(path);
        }
    }
    closedir(d);
}

int metadata_snapshot_latest(const char *log_dir, struct metadata_snapshot_id *out, char *err, size_t errlen)
{
    struct metadata_snapshot_id *ids;
    int n = metadata_snapshot_list(log_dir, &ids, err, errlen);
    if (n > 0)
        *out = ids[n - 1];
    free(ids);
    return n < 0 ? -1 : n > 0;
}

int metadata_snapshot_prune(const char *log_dir, int keep)
{
    char err[256];
    struct metadata_snapshot_id *ids;
    int n = metadata_snapshot_list(log_dir, &ids, err, sizeof(err));
    int deleted = 0;
    for (int i = 0; i < n - keep; i++) {
        char path[PATH_MAX];
        if (metadata_snapshot_path(path, sizeof(path), log_dir, &ids[i]) == 0 && unlink(path) == 0)
            deleted++;
    }
    free(ids);
    return deleted;
}

/* ---- writing ---- */

static int write_all(int fd, const uint8_t *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Finishes one batch at base_offset with the snapshot's epoch and writes it. */
static int flush_batch(int fd, struct record_batch_builder *b, int64_t base_offset, int32_t epoch)
{
    uint8_t *batch;
    size_t len;
    if (record_batch_builder_finish(b, &batch, &len) != 0)
        return -1;
    record_batch_set_base_offset(batch, base_offset);
    record_batch_set_partition_leader_epoch(batch, epoch);
    int rc = write_all(fd, batch, len);
    free(batch);
    return rc;
}

/* One control batch holding one control record (key: version 0, type). */
static int write_control(int fd, int16_t type, const struct kafka_writer *value, int64_t offset, int32_t epoch,
                         int64_t now)
{
    uint8_t key[4] = {0, 0, (uint8_t)((uint16_t)type >> 8), (uint8_t)type};
    struct record_batch_builder b;
    record_batch_builder_init(&b, now);
    b.attributes |= RECORD_BATCH_CONTROL_BIT;
    if (record_batch_builder_add(&b, now, key, sizeof(key), value->buf, (int32_t)value->len, NULL, 0) != 0) {
        record_batch_builder_free(&b);
        return -1;
    }
    return flush_batch(fd, &b, offset, epoch);
}

static int write_body(int fd, const struct metadata_snapshot_id *id, int64_t last_ts,
                      const struct metadata_log_entry *records, int32_t count)
{
    int64_t now = clock_wall_ms();
    struct kafka_writer w;
    if (kafka_writer_init(&w, 64) != 0)
        return -1;
    struct snapshot_header_record header = {.version = 0, .last_contained_log_timestamp = last_ts};
    int rc = snapshot_header_record_encode(&header, &w, 0);
    if (rc == 0)
        rc = write_control(fd, CONTROL_SNAPSHOT_HEADER, &w, 0, id->epoch, now);
    int64_t offset = 1;
    for (int32_t i = 0; rc == 0 && i < count; i += SNAPSHOT_BATCH_RECORDS) {
        struct record_batch_builder b;
        record_batch_builder_init(&b, now);
        int32_t n = count - i < SNAPSHOT_BATCH_RECORDS ? count - i : SNAPSHOT_BATCH_RECORDS;
        for (int32_t j = 0; rc == 0 && j < n; j++)
            rc = record_batch_builder_add(&b, now, NULL, -1, records[i + j].value, (int32_t)records[i + j].len, NULL,
                                          0);
        if (rc != 0) {
            record_batch_builder_free(&b);
            break;
        }
        rc = flush_batch(fd, &b, offset, id->epoch);
        offset += n;
    }
    struct snapshot_footer_record footer = {.version = 0};
    w.len = 0;
    if (rc == 0)
        rc = snapshot_footer_record_encode(&footer, &w, 0);
    if (rc == 0)
        rc = write_control(fd, CONTROL_SNAPSHOT_FOOTER, &w, offset, id->epoch, now);
    kafka_writer_free(&w);
    return rc;
}

int metadata_snapshot_write(const char *log_dir, const struct metadata_snapshot_id *id, int64_t last_timestamp_ms,
                            const struct metadata_log_entry *records, int32_t count, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (metadata_snapshot_path(path, sizeof(path), log_dir, id) != 0 ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s%s", path, PART_SUFFIX) >= sizeof(tmp)) {
        snprintf(err, errlen, "snapshot path too long under %s", log_dir);
        return -1;
    }
    for (int32_t i = 0; i < count; i++) {
        if (records[i].len > INT32_MAX) {
            snprintf(err, errlen, "metadata record too large for a snapshot");
            return -1;
        }
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    int rc = write_body(fd, id, last_timestamp_ms, records, count);
    if (rc != 0)
        snprintf(err, errlen, "cannot write %s: %s", tmp, errno ? strerror(errno) : "out of memory");
    else if ((rc = fsync(fd)) != 0)
        snprintf(err, errlen, "cannot fsync %s: %s", tmp, strerror(errno));
    close(fd);
    if (rc == 0 && (rc = rename(tmp, path)) != 0)
        snprintf(err, errlen, "cannot rename %s: %s", tmp, strerror(errno));
    if (rc != 0) {
        unlink(tmp);
        return -1;
    }
    /* The rename is durable only once the directory is. */
    if ((rc = fs_fsync_dir(log_dir)) != 0) {
        snprintf(err, errlen, "cannot fsync %s: %s", log_dir, strerror(rc));
        return -1;
    }
    return 0;
}

/* ---- reading ---- */

static int read_file(const char *path, uint8_t **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0) {
        close(fd);
        return -1;
    }
    uint8_t *buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
    size_t got = 0;
    while (buf && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (!buf || got < (size_t)st.st_size) {
        free(buf);
        return -1;
    }
    *out = buf;
    *len = got;
    return 0;
}

/* The one control record of a control batch: its type, and its value in *value. */
static int control_record(const uint8_t *batch, size_t len, int16_t *type, struct record_batch_record *value)
{
    struct record_batch_record_iter it;
    if (record_batch_records_begin(&it, batch, len) != 0 || record_batch_records_next(&it, value) != 1)
        return -1;
    if (value->key_len < 4 || !value->key || value->value_len < 0)
        return -1;
    *type = (int16_t)((value->key[2] << 8) | value->key[3]);
    return 0;
}

static int push_record(struct metadata_snapshot_contents *c, int32_t *cap, const uint8_t *value, size_t len)
{
    if (c->count == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        struct metadata_log_entry *grown = realloc(c->records, (size_t)*cap * sizeof(*grown));
        if (!grown)
            return -1;
        c->records = grown;
    }
    c->records[c->count++] = (struct metadata_log_entry){value, len};
    return 0;
}

/* Walks the batches; returns NULL, or what is wrong with the file. */
static const char *parse_snapshot(struct metadata_snapshot_contents *c, size_t len)
{
    struct record_batch_iter it;
    record_batch_iter_init(&it, c->buf, len);
    const uint8_t *batch;
    size_t batch_len, consumed = 0;
    bool header = false, footer = false;
    int32_t cap = 0;
    while (record_batch_iter_next(&it, &batch, &batch_len) == 1) {
        consumed = (size_t)(batch - c->buf) + batch_len;
        struct record_batch_header h;
        if (record_batch_parse_header(batch, batch_len, &h) != 0 || !record_batch_crc_ok(batch, batch_len))
            return "a batch fails its CRC check";
        if (footer)
            return "batches follow the SnapshotFooterRecord";
        if (record_batch_compression(&h) != RECORD_BATCH_COMPRESSION_NONE)
            return "compressed batches are not supported";
        if (record_batch_is_control(&h)) {
            int16_t type;
            struct record_batch_record rec;
            if (control_record(batch, batch_len, &type, &rec) != 0)
                return "a control batch is malformed";
            struct kafka_reader r;
            kafka_reader_init(&r, rec.value, (size_t)rec.value_len);
            if (type == CONTROL_SNAPSHOT_HEADER && !header) {
                struct snapshot_header_record m;
                if (snapshot_header_record_decode(&m, &r, 0, NULL) != 0)
                    return "the SnapshotHeaderRecord is malformed";
                c->last_timestamp_ms = m.last_contained_log_timestamp;
                header = true;
            } else if (type == CONTROL_SNAPSHOT_FOOTER && header) {
                struct snapshot_footer_record m;
                if (snapshot_footer_record_decode(&m, &r, 0, NULL) != 0)
                    return "the SnapshotFooterRecord is malformed";
                footer = true;
            } else {
                return "unexpected control record";
            }
            continue;
        }
        if (!header)
            return "it does not start with a SnapshotHeaderRecord";
        struct record_batch_record_iter ri;
        if (record_batch_records_begin(&ri, batch, batch_len) != 0)
            return "a batch is malformed";
        struct record_batch_record rec;
        int more;
        while ((more = record_batch_records_next(&ri, &rec)) == 1) {
            if (rec.value_len < 0)
                return "a record has no value";
            if (push_record(c, &cap, rec.value, (size_t)rec.value_len) != 0)
                return "out of memory";
        }
        if (more < 0)
            return "a batch's records are malformed";
    }
    if (consumed != len)
        return "it ends in a partial batch";
    if (!header)
        return "it has no SnapshotHeaderRecord";
    if (!footer)
        return "it has no SnapshotFooterRecord";
    return NULL;
}

int metadata_snapshot_read(const char *log_dir, const struct metadata_snapshot_id *id,
                           struct metadata_snapshot_contents *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char path[PATH_MAX];
    if (metadata_snapshot_path(path, sizeof(path), log_dir, id) != 0) {
        snprintf(err, errlen, "snapshot path too long under %s", log_dir);
        return -1;
    }
    size_t len = 0;
    if (read_file(path, &out->buf, &len) != 0) {
        snprintf(err, errlen, "cannot read metadata snapshot %s: %s", path, strerror(errno));
        return -1;
    }
    const char *why = parse_snapshot(out, len);
    if (why) {
        snprintf(err, errlen, "metadata snapshot %s is corrupt: %s (move it aside to start from the log)", path, why);
        metadata_snapshot_contents_free(out);
        return -1;
    }
    return 0;
}

void metadata_snapshot_contents_free(struct metadata_snapshot_contents *c)
{
    free(c->buf);
    free(c->records);
    memset(c, 0, sizeof(*c));
}
