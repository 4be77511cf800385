/* Creation, partition logs, key placement and replay of an internal
 * compacted topic; see internal_topic.h. */
#include "coordinator/internal_topic.h"

#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coordinator/coordinator_partition.h"
#include "coordinator/purgatory.h"
#include "log/log_manager.h"
#include "util/clock.h"
#include "log/partition_log.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"
#include "util/logger.h"

#define DEFAULT_NUM_PARTITIONS 50
#define DEFAULT_REPLICATION_FACTOR 3
#define DEFAULT_SEGMENT_BYTES 104857600
/* Skip warnings per partition before only a count is kept. */
#define REPLAY_WARN_LIMIT 10

/* Immutable after internal_topic_open returns, so any thread may read it;
 * the partition logs it references are themselves thread-safe. */
struct internal_topic {
    const char *name;
    const char *component;
    int32_t partition_count;
    /* One reference per partition this broker holds a replica of; NULL when
     * not replicated here or its log could not be opened. */
    struct partition_log **partitions;
    bool *replicated_here;
    struct purgatory *fetch_purgatory; /* not owned */
    struct metadata_store *metadata;   /* not owned; for the ISR check */
};

/* Creates the topic when the image lacks it. Returns 0 or -1 with err. */
static int ensure_topic_once(const struct internal_topic_options *opts, int32_t num_partitions, int32_t segment_bytes,
                             bool may_wait, int16_t *code, char *err, size_t errlen)
{
    *code = KAFKA_ERR_NONE;
    const struct metadata_image *img = metadata_image_acquire(opts->metadata);
    bool exists = metadata_image_topic_by_name(img, opts->name, strlen(opts->name)) != NULL;
    int32_t live = metadata_image_live_broker_count(img);
    metadata_image_release(img);
    if (exists)
        return 0;
    if (live < 1) {
        snprintf(err, errlen, "no live broker to place %s on", opts->name);
        *code = KAFKA_ERR_NOT_CONTROLLER;
        return -1;
    }
    int16_t rf = opts->replication_factor > 0 ? opts->replication_factor : DEFAULT_REPLICATION_FACTOR;
    int32_t want = opts->expected_brokers < rf ? opts->expected_brokers : rf;
    if (may_wait && live < want) {
        snprintf(err, errlen, "%d of %d brokers live", (int)live, (int)want);
        *code = KAFKA_ERR_NOT_ENOUGH_REPLICAS;
        return -1;
    }
    if (rf > live) {
        /* Kafka would wait for more brokers; a small cluster should work out of the box. */
        logger_info(opts->component,
                    "%s.replication.factor is %d but %d broker(s) are live: creating %s with replication factor %d",
                    opts->config_prefix, (int)rf, (int)live, opts->name, (int)live);
        rf = (int16_t)live;
    }
    char segment[24];
    snprintf(segment, sizeof segment, "%" PRId32, segment_bytes);
    char min_isr[24];
    int32_t min_isr_value = opts->min_insync_replicas < rf ? opts->min_insync_replicas : rf;
    snprintf(min_isr, sizeof min_isr, "%" PRId32, min_isr_value);
    const struct metadata_config_kv configs[] = {
        {"cleanup.policy", "compact"},
        {"segment.bytes", segment},
        {"retention.ms", "-1"},
        {"min.insync.replicas", min_isr}, /* last: left out when not set */
    };
    int32_t config_count = (int32_t)(sizeof configs / sizeof configs[0]) - (min_isr_value > 0 ? 0 : 1);
    char why[256] = "";
    int16_t rc = metadata_create_own_topic(opts->metadata, opts->name, num_partitions, rf, configs, config_count, why,
                                           sizeof why);
    if (rc == KAFKA_ERR_TOPIC_ALREADY_EXISTS)
        return 0; /* created meanwhile by another caller */
    if (rc != KAFKA_ERR_NONE) {
        /* Another broker's creation may have committed between the check
         * and this one (the controller then refuses a second TopicRecord):
         * the topic is there, which is all this needed. */
        img = metadata_image_acquire(opts->metadata);
        exists = metadata_image_topic_by_name(img, opts->name, strlen(opts->name)) != NULL;
        metadata_image_release(img);
        if (exists)
            return 0;
    }
    if (rc != KAFKA_ERR_NONE) {
        snprintf(err, errlen, "cannot create %s: %s (error %d)", opts->name, why, (int)rc);
        *code = rc;
        return -1;
    }
    logger_info(opts->component, "created %s with %d partitions, replication factor %d", opts->name,
                (int)num_partitions, (int)rf);
    return 0;
}

/* On a quorum broker only the active controller can create the topic: the
 * others wait for it to appear in their image. */
#define ENSURE_TOPIC_WAIT_MS 60000
/* One bound for the process, shared by both internal topics, so a
 * cluster with fewer brokers than voters starts at most this much later. */
#define INTERNAL_TOPIC_BROKER_WAIT_MS 2000
static _Atomic int64_t broker_wait_deadline_ms;

static int ensure_topic(const struct internal_topic_options *opts, int32_t num_partitions, int32_t segment_bytes,
                        char *err, size_t errlen)
{
    int16_t code = KAFKA_ERR_NONE;
    for (int64_t waited = 0;; waited += 100) {
        int64_t now = clock_mono_ms(), unset = 0;
        atomic_compare_exchange_strong(&broker_wait_deadline_ms, &unset, now + INTERNAL_TOPIC_BROKER_WAIT_MS);
        bool may_wait = now < atomic_load(&broker_wait_deadline_ms);
        int rc = ensure_topic_once(opts, num_partitions, segment_bytes, may_wait, &code, err, errlen);
        if (rc == 0 || (code != KAFKA_ERR_NOT_CONTROLLER && code != KAFKA_ERR_NOT_ENOUGH_REPLICAS) ||
            waited >= ENSURE_TOPIC_WAIT_MS)
            return rc;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Takes a reference to each partition log held here, creating the logs the
 * broker has not created yet. */
static int open_partitions(struct internal_topic *t, const struct internal_topic_options *opts, int32_t num_partitions,
                           int32_t segment_bytes, char *err, size_t errlen)
{
    const struct metadata_image *img = metadata_image_acquire(opts->metadata);
    const struct metadata_topic *topic = metadata_image_topic_by_name(img, t->name, strlen(t->name));
    if (!topic || topic->partition_count <= 0) {
        metadata_image_release(img);
        snprintf(err, errlen, "%s is missing from the metadata image or has no partitions", t->name);
        return -1;
    }
    if (topic->partition_count != num_partitions)
        logger_warn(t->component, "%s has %d partitions; %s.num.partitions=%d applies only when it is created", t->name,
                    (int)topic->partition_count, opts->config_prefix, (int)num_partitions);
    t->partition_count = topic->partition_count;
    t->partitions = calloc((size_t)t->partition_count, sizeof *t->partitions);
    t->replicated_here = calloc((size_t)t->partition_count, sizeof *t->replicated_here);
    if (!t->partitions || !t->replicated_here) {
        metadata_image_release(img);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = segment_bytes;
    cfg.retention_ms = -1;
    cfg.cleanup_compact = true;
    cfg.cleanup_delete = false;
    for (int32_t p = 0; p < t->partition_count; p++) {
        struct partition_log *log = log_manager_get(opts->logs, t->name, p);
        bool here = log != NULL;
        const struct metadata_partition *part = metadata_topic_partition(topic, p);
        for (int32_t r = 0; part && part->present && r < part->replica_count; r++)
            here |= part->replicas[r] == opts->node_id;
        if (!log && here) {
            char why[256] = "";
            if (log_manager_create(opts->logs, t->name, p, topic->topic_id.bytes, &cfg, &log, why, sizeof why) !=
                KAFKA_ERR_NONE) {
                logger_error(t->component, "cannot create the log of %s-%d: %s", t->name, (int)p, why);
                log = NULL;
            }
        }
        t->partitions[p] = log;
        t->replicated_here[p] = here;
    }
    metadata_image_release(img);
    return 0;
}

int internal_topic_open(const struct internal_topic_options *opts, struct internal_topic **out, char *err,
                        size_t errlen)
{
    *out = NULL;
    if (!opts || !opts->name || !opts->component || !opts->config_prefix || !opts->logs || !opts->metadata) {
        snprintf(err, errlen, "an internal topic needs a name, a log manager and a metadata store");
        return -1;
    }
    int32_t num_partitions = opts->num_partitions > 0 ? opts->num_partitions : DEFAULT_NUM_PARTITIONS;
    int32_t segment_bytes = opts->segment_bytes > 0 ? opts->segment_bytes : DEFAULT_SEGMENT_BYTES;
    struct internal_topic *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    t->name = opts->name;
    t->component = opts->component;
    t->fetch_purgatory = opts->fetch_purgatory;
    t->metadata = opts->metadata;
    if (ensure_topic(opts, num_partitions, segment_bytes, err, errlen) != 0 ||
        open_partitions(t, opts, num_partitions, segment_bytes, err, errlen) != 0) {
        internal_topic_close(t);
        return -1;
    }
    *out = t;
    return 0;
}

void internal_topic_close(struct internal_topic *t)
{
    if (!t)
        return;
    for (int32_t p = 0; t->partitions && p < t->partition_count; p++)
        if (t->partitions[p])
            partition_log_close(t->partitions[p]);
    free(t->partitions);
    free(t->replicated_here);
    free(t);
}

int32_t internal_topic_partition_count(const struct internal_topic *t)
{
    return t ? t->partition_count : 0;
}

int16_t internal_topic_log_for_key(struct internal_topic *t, const char *key, struct partition_log **out)
{
    *out = NULL;
    if (!t || !key || t->partition_count <= 0)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    int32_t p = coordinator_partition_for(key, strlen(key), t->partition_count);
    if (!t->replicated_here[p])
        return KAFKA_ERR_NOT_COORDINATOR;
    if (!t->partitions[p] || partition_log_is_offline(t->partitions[p]))
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    *out = t->partitions[p];
    return KAFKA_ERR_NONE;
}

struct partition_log *internal_topic_partition_log(const struct internal_topic *t, int32_t p)
{
    return t && p >= 0 && p < t->partition_count ? t->partitions[p] : NULL;
}

static int16_t append_at(const struct internal_topic *t, struct partition_log *log, int32_t epoch, uint8_t *batch,
                         size_t len, bool coordinator_origin, enum internal_topic_flush flush, int64_t *end_offset,
                         const char *what)
{
    struct log_append_result res;
    memset(&res, 0, sizeof res);
    int16_t code = coordinator_origin ? partition_log_append_coordinator(log, batch, len, epoch, &res)
                                      : partition_log_append(log, batch, len, epoch, &res);
    if (code != KAFKA_ERR_NONE) {
        logger_warn(t->component, "cannot write %s to %s: error %d %s", what, partition_log_dir(log), (int)code,
                    res.error_message);
        return code;
    }
    if (end_offset)
        *end_offset = res.last_offset + 1;
    if (t->fetch_purgatory)
        purgatory_notify(t->fetch_purgatory, (uintptr_t)log);
    if (flush == INTERNAL_TOPIC_FLUSH_NONE)
        return KAFKA_ERR_NONE;
    code = flush == INTERNAL_TOPIC_FLUSH_RECORDS ? partition_log_flush_records(log) : partition_log_flush(log);
    if (code != KAFKA_ERR_NONE)
        logger_error(t->component, "cannot flush %s in %s: error %d", what, partition_log_dir(log), (int)code);
    return code;
}

int16_t internal_topic_append(const struct internal_topic *t, struct partition_log *log, uint8_t *batch, size_t len,
                              bool coordinator_origin, enum internal_topic_flush flush, int64_t *end_offset,
                              const char *what)
{
    int32_t epoch = partition_log_latest_epoch(log);
    return append_at(t, log, epoch < 0 ? 0 : epoch, batch, len, coordinator_origin, flush, end_offset, what);
}

/* NOT_ENOUGH_REPLICAS when the ISR of log's partition is below the topic's
 * min.insync.replicas, as an acks=all produce is refused before its append
 * (Kafka's coordinators then answer COORDINATOR_NOT_AVAILABLE). */
static int16_t check_min_insync(const struct internal_topic *t, const struct partition_log *log, const char *what)
{
    int32_t index = -1;
    for (int32_t i = 0; i < t->partition_count; i++)
        if (t->partitions[i] == log)
            index = i;
    if (index < 0 || !t->metadata)
        return KAFKA_ERR_NONE;
    int16_t code = KAFKA_ERR_NONE;
    const struct metadata_image *img = metadata_image_acquire(t->metadata);
    const struct metadata_topic *topic = metadata_image_topic_by_name(img, t->name, strlen(t->name));
    const struct metadata_partition *p = topic ? metadata_topic_partition(topic, index) : NULL;
    const char *v = topic ? metadata_topic_config(topic, "min.insync.replicas") : NULL;
    char *end = NULL;
    long min_isr = v ? strtol(v, &end, 10) : 0;
    if (p && v && end && *end == '\0' && p->isr_count < min_isr) {
        logger_warn(t->component, "%s: %s-%d has %d in-sync replica(s), below min.insync.replicas %ld: not written",
                    what, t->name, (int)index, (int)p->isr_count, min_isr);
        code = KAFKA_ERR_NOT_ENOUGH_REPLICAS;
    }
    metadata_image_release(img);
    return code;
}

int16_t internal_topic_append_replicated(const struct internal_topic *t, struct partition_log *log, uint8_t *batch,
                                         size_t len, enum internal_topic_flush flush, int64_t timeout_ms,
                                         const char *what)
{
    int16_t refused = check_min_insync(t, log, what);
    if (refused != KAFKA_ERR_NONE)
        return refused;
    int32_t epoch = partition_log_latest_epoch(log);
    if (epoch < 0)
        epoch = 0;
    int64_t end = -1;
    int16_t code = append_at(t, log, epoch, batch, len, false, flush, &end, what);
    if (code != KAFKA_ERR_NONE)
        return code;
    code = partition_log_wait_replicated(log, epoch, end, timeout_ms);
    if (code != KAFKA_ERR_NONE)
        logger_warn(t->component, "%s in %s (epoch %d, up to offset %" PRId64 ") not replicated: %s", what,
                    partition_log_dir(log), (int)epoch, end, kafka_error_name(code));
    return code;
}

void internal_topic_replay_skip(struct internal_topic_replay *r, int64_t offset, const char *why)
{
    r->skipped++;
    if (r->skipped <= REPLAY_WARN_LIMIT)
        logger_warn(r->topic->component, "%s-%d offset %" PRId64 ": skipping record: %s", r->topic->name,
                    (int)r->partition, offset, why);
}

static int read_fully(int fd, uint8_t *buf, size_t len, int64_t pos)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, (off_t)(pos + (int64_t)done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        done += (size_t)n;
    }
    return 0;
}

/* Hands one batch of the region to batch_fn unless it cannot be read. */
static void replay_batch(struct internal_topic_replay *r, const uint8_t *batch, size_t len,
                         const struct record_batch_header *h, internal_topic_batch_fn batch_fn, void *ctx)
{
    if (!record_batch_crc_ok(batch, len)) {
        internal_topic_replay_skip(r, h->base_offset, "batch CRC mismatch");
        return;
    }
    if (record_batch_compression(h) != RECORD_BATCH_COMPRESSION_NONE) {
        internal_topic_replay_skip(r, h->base_offset, "compressed batch");
        return;
    }
    batch_fn(ctx, r, batch, len, h);
}

static int replay_partition(struct internal_topic_replay *r, struct partition_log *log, uint8_t **buf, size_t *cap,
                            size_t read_size, internal_topic_batch_fn batch_fn, void *ctx, char *err, size_t errlen)
{
    const char *dir = partition_log_dir(log);
    int64_t offset = partition_log_start_offset(log);
    int64_t end = partition_log_end_offset(log);
    while (offset < end) {
        struct log_read_result rr;
        int16_t code = partition_log_read(log, offset, (int32_t)(read_size > INT32_MAX ? INT32_MAX : read_size), end,
                                          &rr);
        if (code == KAFKA_ERR_OFFSET_OUT_OF_RANGE && partition_log_start_offset(log) > offset) {
            offset = partition_log_start_offset(log); /* retention moved the start meanwhile */
            continue;
        }
        if (code != KAFKA_ERR_NONE) {
            snprintf(err, errlen, "cannot read %s at offset %" PRId64 ": error %d", dir, offset, (int)code);
            return -1;
        }
        if (rr.len <= 0)
            break;
        if ((uint64_t)rr.len > (uint64_t)INT32_MAX) {
            close(rr.fd);
            snprintf(err, errlen, "%s: read of %" PRId64 " bytes at offset %" PRId64 " is too large", dir, rr.len,
                     offset);
            return -1;
        }
        if ((size_t)rr.len > *cap) {
            /* A single batch larger than the buffer: the log returns it whole. */
            uint8_t *grown = realloc(*buf, (size_t)rr.len);
            if (!grown) {
                close(rr.fd);
                snprintf(err, errlen, "out of memory reading %s", dir);
                return -1;
            }
            *buf = grown;
            *cap = (size_t)rr.len;
        }
        int rc = read_fully(rr.fd, *buf, (size_t)rr.len, rr.file_pos);
        close(rr.fd);
        if (rc != 0) {
            snprintf(err, errlen, "cannot read %s at offset %" PRId64 ": %s", dir, offset, strerror(rc));
            return -1;
        }
        int64_t before = offset;
        struct record_batch_iter it;
        record_batch_iter_init(&it, *buf, (size_t)rr.len);
        const uint8_t *batch;
        size_t batch_len;
        while ((rc = record_batch_iter_next(&it, &batch, &batch_len)) == 1) {
            struct record_batch_header h;
            if (record_batch_parse_header(batch, batch_len, &h) != 0 || h.magic != RECORD_BATCH_MAGIC) {
                rc = -1;
                break;
            }
            if (record_batch_last_offset(&h) < offset)
                continue; /* the region may start before the offset wanted */
            replay_batch(r, batch, batch_len, &h, batch_fn, ctx);
            offset = record_batch_last_offset(&h) + 1;
        }
        if (rc < 0) {
            /* The log hands out whole batches, so this is damage on disk past
             * which batch boundaries are unknown. */
            snprintf(err, errlen, "%s: malformed batch framing after offset %" PRId64, dir, offset);
            return -1;
        }
        if (offset <= before) {
            logger_warn(r->topic->component, "%s: no progress reading at offset %" PRId64 "; stopping its load", dir,
                        offset);
            break;
        }
    }
    return 0;
}

/* Replays partition p with the caller's buffer; see internal_topic_replay. */
static int replay_one(struct internal_topic *t, int32_t p, uint8_t **buf, size_t *cap, size_t read_size,
                      internal_topic_batch_fn batch_fn, internal_topic_partition_fn partition_done, void *ctx,
                      char *err, size_t errlen)
{
    struct internal_topic_replay r = {.topic = t, .partition = p};
    int rc = replay_partition(&r, t->partitions[p], buf, cap, read_size, batch_fn, ctx, err, errlen);
    if (r.skipped > 0)
        logger_warn(t->component, "%s-%d: skipped %" PRId64 " unreadable record(s) or batch(es)", t->name, (int)p,
                    r.skipped);
    if (partition_done)
        partition_done(ctx, &r, rc == 0);
    return rc;
}

/* One partition (p >= 0) or all held here (p < 0). */
static int replay(struct internal_topic *t, int32_t only, size_t read_size, internal_topic_batch_fn batch_fn,
                  internal_topic_partition_fn partition_done, void *ctx, char *err, size_t errlen)
{
    if (!t || !batch_fn || read_size == 0) {
        snprintf(err, errlen, "a replay needs a topic, a batch callback and a read size");
        return -1;
    }
    if (only >= t->partition_count || (only >= 0 && !t->partitions[only])) {
        snprintf(err, errlen, "%s-%d is not held here", t->name, (int)only);
        return -1;
    }
    size_t cap = read_size;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "out of memory for the %zu-byte load buffer", cap);
        return -1;
    }
    int rc = 0;
    for (int32_t p = only >= 0 ? only : 0; p < t->partition_count && rc == 0; p++) {
        if (t->partitions[p])
            rc = replay_one(t, p, &buf, &cap, read_size, batch_fn, partition_done, ctx, err, errlen);
        if (only >= 0)
            break;
    }
    free(buf);
    return rc;
}

int internal_topic_replay(struct internal_topic *t, size_t read_size, internal_topic_batch_fn batch_fn,
                          internal_topic_partition_fn partition_done, void *ctx, char *err, size_t errlen)
{
    return replay(t, -1, read_size, batch_fn, partition_done, ctx, err, errlen);
}

int internal_topic_replay_partition(struct internal_topic *t, int32_t partition, size_t read_size,
                                    internal_topic_batch_fn batch_fn, internal_topic_partition_fn partition_done,
                                    void *ctx, char *err, size_t errlen)
{
    if (partition < 0) {
        snprintf(err, errlen, "no partition %d", (int)partition);
        return -1;
    }
    return replay(t, partition, read_size, batch_fn, partition_done, ctx, err, errlen);
}
