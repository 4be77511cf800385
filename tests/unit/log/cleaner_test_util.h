/* Fixture of the cleaner tests: one partition log in a temporary directory,
 * a compacted-topic config with small segments and the cleaner options,
 * plus the single-record writes (KEYS keys overwritten WRITES times) and
 * the record reader the plain-batch cleaner tests check compaction with,
 * and the file counters and read_committed reader of the transaction,
 * recovery and merge tests.
 * Include from one test file each (it defines that file's g_dir). */
#ifndef CAIRN_TEST_CLEANER_TEST_UTIL_H
#define CAIRN_TEST_CLEANER_TEST_UTIL_H

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/log_cleaner.h"
#include "log/txn_index.h"
#include "log_test_util.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"

static char *g_dir;

static inline int setup(void **state)
{
    (void)state;
    g_dir = test_make_dir();
    return g_dir ? 0 : -1;
}

static inline int teardown(void **state)
{
    (void)state;
    test_remove_tree(g_dir);
    free(g_dir);
    return 0;
}

static inline struct partition_log *open_log(const struct log_config *cfg)
{
    struct partition_log *log = NULL;
    char err[256] = "";
    if (partition_log_open(g_dir, cfg, false, &log, err, sizeof err) != KAFKA_ERR_NONE)
        fail_msg("open: %s", err);
    return log;
}

/* cleanup.policy=compact, 1 KiB segments, cleanable from 10 % dirty. */
/* Closes log, removes the producer snapshots and reopens it, so the
 * producer state is rebuilt from the log alone. */
static inline struct partition_log *reopen_without_snapshots(struct partition_log *log, const struct log_config *cfg)
{
    partition_log_close(log);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -f %s/*.snapshot", g_dir);
    assert_int_equal(system(cmd), 0);
    return open_log(cfg);
}

/* The log's first stored batch (caller frees) and its header. */
static inline uint8_t *read_first_batch(struct partition_log *log, struct record_batch_header *h)
{
    struct log_read_result r;
    assert_int_equal(partition_log_read(log, 0, 1, INT64_MAX, &r), KAFKA_ERR_NONE);
    uint8_t *buf = test_read_region(&r);
    assert_non_null(buf);
    assert_int_equal(record_batch_parse_header(buf, (size_t)r.len, h), 0);
    return buf;
}

static inline void compact_config(struct log_config *cfg)
{
    log_config_defaults(cfg);
    cfg->segment_bytes = 1024;
    cfg->cleanup_compact = true;
    cfg->cleanup_delete = false;
    cfg->min_cleanable_dirty_ratio = 0.1;
}

/* Calls fn for every batch from the log start to its end, read as a fetch
 * reads them, each with its CRC checked (not validated: a cleaned batch
 * holds fewer records than its offset span, as in Kafka). */
static inline void for_each_batch(struct partition_log *log, void (*fn)(void *arg, const uint8_t *batch, size_t len),
                                  void *arg)
{
    int64_t offset = partition_log_start_offset(log);
    while (offset < partition_log_end_offset(log)) {
        struct log_read_result r;
        assert_int_equal(partition_log_read(log, offset, 1 << 20, INT64_MAX, &r), KAFKA_ERR_NONE);
        if (r.len == 0)
            break;
        uint8_t *buf = test_read_region(&r);
        assert_non_null(buf);
        struct record_batch_iter it;
        const uint8_t *batch;
        size_t blen;
        record_batch_iter_init(&it, buf, (size_t)r.len);
        while (record_batch_iter_next(&it, &batch, &blen) == 1) {
            assert_true(record_batch_crc_ok(batch, blen));
            fn(arg, batch, blen);
        }
        free(buf);
        assert_true(r.next_offset > offset);
        offset = r.next_offset;
    }
}

/* Base offset of the active segment: the greatest base offset among the
 * segment files. */
static inline int64_t active_base(struct partition_log *log)
{
    int64_t best = -1;
    for (int64_t off = partition_log_end_offset(log); off >= 0 && best < 0; off--) {
        char path[600];
        snprintf(path, sizeof path, "%s/%020lld.log", g_dir, (long long)off);
        if (access(path, F_OK) == 0)
            best = off;
    }
    return best;
}

static const struct log_clean_options default_opts = {
    .dedupe_buffer_bytes = 1 << 20,
    .load_factor = 0.9,
};

/* ---- single-record writes and reading them back ---- */

#define KEYS 5
#define WRITES 200

static int g_control_batches; /* counted by read_all */

struct rec {
    int64_t offset;
    char key[32];
    char value[32];
    bool tombstone;
};

static inline uint8_t *one_record_batch(const char *key, const char *value, size_t *len)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, clock_wall_ms());
    record_batch_builder_add(&b, clock_wall_ms(), key, (int32_t)strlen(key), value, value ? (int32_t)strlen(value) : -1,
                             NULL, 0);
    uint8_t *out = NULL;
    assert_int_equal(record_batch_builder_finish(&b, &out, len), 0);
    return out;
}

static inline int64_t put(struct partition_log *log, const char *key, const char *value)
{
    size_t len;
    uint8_t *b = one_record_batch(key, value, &len);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, b, len, 0, &res), KAFKA_ERR_NONE);
    free(b);
    return res.base_offset;
}

struct read_all_ctx {
    struct rec *out;
    size_t n, cap;
};

static inline void collect_records(void *arg, const uint8_t *batch, size_t blen)
{
    struct read_all_ctx *c = arg;
    struct record_batch_header bh;
    record_batch_parse_header(batch, blen, &bh);
    if (record_batch_is_control(&bh)) {
        g_control_batches++;
        return;
    }
    struct record_batch_record_iter ri;
    struct record_batch_record rec;
    assert_int_equal(record_batch_records_begin(&ri, batch, blen), 0);
    int rc;
    while ((rc = record_batch_records_next(&ri, &rec)) == 1) {
        assert_true(c->n < c->cap);
        struct rec *o = &c->out[c->n++];
        o->offset = rec.offset;
        snprintf(o->key, sizeof o->key, "%.*s", rec.key_len, (const char *)rec.key);
        o->tombstone = rec.value_len < 0;
        snprintf(o->value, sizeof o->value, "%.*s", rec.value_len < 0 ? 0 : rec.value_len, (const char *)rec.value);
    }
    assert_int_equal(rc, 0);
}

/* Every record from the log start, in order. Returns the count. */
static inline size_t read_all(struct partition_log *log, struct rec *out, size_t cap)
{
    struct read_all_ctx c = {out, 0, cap};
    for_each_batch(log, collect_records, &c);
    return c.n;
}

/* Overwrite KEYS keys WRITES times; returns the active segment's base. */
static inline int64_t write_overwrites(struct partition_log *log)
{
    char key[16], value[32];
    for (int i = 0; i < WRITES; i++) {
        snprintf(key, sizeof key, "k%d", i % KEYS);
        snprintf(value, sizeof value, "v%d", i);
        put(log, key, value);
    }
    return partition_log_end_offset(log);
}

/* Records below the active segment hold each key at most once, the last
 * record per key is its latest value and offsets only grow. */
static inline void check_compacted(const struct rec *recs, size_t n, int64_t active_base)
{
    int per_key[KEYS] = {0};
    char last[KEYS][32] = {{0}};
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            assert_true(recs[i].offset > recs[i - 1].offset);
        int k = atoi(recs[i].key + 1);
        assert_true(k >= 0 && k < KEYS);
        if (recs[i].offset < active_base)
            per_key[k]++;
        snprintf(last[k], sizeof last[k], "%s", recs[i].value);
    }
    for (int k = 0; k < KEYS; k++) {
        assert_true(per_key[k] <= 1);
        char want[32];
        snprintf(want, sizeof want, "v%d", WRITES - KEYS + k);
        assert_string_equal(last[k], want);
    }
}

/* One transactional record of producer pid (epoch 0, sequence seq). */
static inline int64_t put_txn(struct partition_log *log, int64_t pid, int32_t seq, const char *key, const char *value)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, clock_wall_ms());
    b.producer_id = pid;
    b.producer_epoch = 0;
    b.base_sequence = seq;
    b.attributes = RECORD_BATCH_TRANSACTIONAL_BIT;
    record_batch_builder_add(&b, clock_wall_ms(), key, (int32_t)strlen(key), value, (int32_t)strlen(value), NULL, 0);
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    struct log_append_result res;
    assert_int_equal(partition_log_append(log, batch, len, 0, &res), KAFKA_ERR_NONE);
    free(batch);
    return res.base_offset;
}

/* Records of key (with value, unless NULL) among recs[0..n). */
static inline size_t count_key(const struct rec *recs, size_t n, const char *key, const char *value)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += strcmp(recs[i].key, key) == 0 && (!value || strcmp(recs[i].value, value) == 0);
    return c;
}

/* ---- files, transactions and a read_committed reader ---- */

/* Files of the test dir whose names end with suffix. */
static inline size_t count_files(const char *suffix)
{
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    size_t n = 0, slen = strlen(suffix);
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len > slen && strcmp(ent->d_name + len - slen, suffix) == 0)
            n++;
    }
    closedir(d);
    return n;
}

/* Entries of all .txnindex files of the log. */
static inline size_t txnindex_file_entries(void)
{
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    size_t entries = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        if (len < 9 || strcmp(de->d_name + len - 9, ".txnindex") != 0)
            continue;
        char path[600];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", g_dir, de->d_name);
        assert_int_equal(stat(path, &st), 0);
        entries += (size_t)st.st_size / TXN_INDEX_ENTRY_SIZE;
    }
    closedir(d);
    return entries;
}

/* ---- a read_committed consumer, as clients apply the aborted list ---- */

struct aborted_list {
    int64_t producer_id[64];
    int64_t first_offset[64];
    bool consumed[64];
    size_t n;
};

static inline void collect_aborted(void *arg, int64_t producer_id, int64_t first_offset)
{
    struct aborted_list *a = arg;
    assert_true(a->n < 64);
    a->producer_id[a->n] = producer_id;
    a->first_offset[a->n++] = first_offset;
}

struct committed_read {
    struct aborted_list aborted;
    int64_t skipping[64]; /* producers inside an aborted transaction */
    size_t skipping_count;
    struct read_all_ctx records;
};

static inline bool is_skipping(const struct committed_read *c, int64_t pid)
{
    for (size_t i = 0; i < c->skipping_count; i++)
        if (c->skipping[i] == pid)
            return true;
    return false;
}

/* As Kafka clients read: a transactional batch of a producer with an
 * unconsumed aborted entry starting at or before it opens an aborted
 * transaction, whose batches are not delivered; an ABORT marker consumes
 * its producer's entries up to it and closes the transaction. */
static inline void read_committed_batch(void *arg, const uint8_t *batch, size_t len)
{
    struct committed_read *c = arg;
    struct record_batch_header h;
    record_batch_parse_header(batch, len, &h);
    bool control = record_batch_is_control(&h);
    if (!record_batch_is_transactional(&h)) {
        collect_records(&c->records, batch, len);
        return;
    }
    for (size_t i = 0; i < c->aborted.n; i++)
        if (!c->aborted.consumed[i] && c->aborted.producer_id[i] == h.producer_id &&
            c->aborted.first_offset[i] <= h.base_offset) {
            c->aborted.consumed[i] = true;
            if (!control && !is_skipping(c, h.producer_id))
                c->skipping[c->skipping_count++] = h.producer_id;
        }
    if (control) {
        for (size_t i = 0; i < c->skipping_count; i++)
            if (c->skipping[i] == h.producer_id)
                c->skipping[i--] = c->skipping[--c->skipping_count];
        return;
    }
    if (!is_skipping(c, h.producer_id))
        collect_records(&c->records, batch, len);
}

/* What a read_committed consumer reading from the log start gets. */
static inline size_t read_committed(struct partition_log *log, struct rec *out, size_t cap)
{
    struct committed_read *c = calloc(1, sizeof *c);
    assert_non_null(c);
    partition_log_aborted_txns(log, partition_log_start_offset(log), INT64_MAX, collect_aborted, &c->aborted);
    c->records = (struct read_all_ctx){out, 0, cap};
    for_each_batch(log, read_committed_batch, c);
    size_t n = c->records.n;
    free(c);
    return n;
}

static inline int64_t marker(struct partition_log *log, int64_t pid, bool commit)
{
    int64_t offset = -1;
    assert_int_equal(partition_log_append_txn_marker(log, pid, 0, 0, commit, 0, &offset), KAFKA_ERR_NONE);
    return offset;
}

#endif
