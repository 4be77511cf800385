/* The coordinator's table of transactional ids and the client requests:
 * InitProducerId, AddPartitionsToTxn (and its verification), EndTxn.
 * Background work (markers, timeouts, expiry) is in txn_coordinator_bg.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/coordinator_runtime.h"
#include "protocol/generated/errors.h"
#include "txn/txn_coordinator_internal.h"
#include "util/clock.h"
#include "util/logger.h"

#define DEFAULT_MAX_TIMEOUT_MS 900000
#define DEFAULT_ID_EXPIRATION_MS 604800000LL
/* Kafka treats an epoch this high as used up: the next bump takes a new id. */
#define EPOCH_EXHAUSTED (INT16_MAX - 1)

static const char *const state_names[] = {
    [TXN_STATE_EMPTY] = "Empty",
    [TXN_STATE_ONGOING] = "Ongoing",
    [TXN_STATE_PREPARE_COMMIT] = "PrepareCommit",
    [TXN_STATE_PREPARE_ABORT] = "PrepareAbort",
    [TXN_STATE_COMPLETE_COMMIT] = "CompleteCommit",
    [TXN_STATE_COMPLETE_ABORT] = "CompleteAbort",
    [TXN_STATE_DEAD] = "Dead",
    [TXN_STATE_PREPARE_EPOCH_FENCE] = "PrepareEpochFence",
};

const char *txn_state_name(enum txn_state state)
{
    if ((int)state < 0 || (size_t)state >= sizeof state_names / sizeof state_names[0])
        return "Unknown";
    return state_names[state];
}

int txn_state_from_name(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof state_names / sizeof state_names[0]; i++)
        if (strlen(state_names[i]) == len && memcmp(state_names[i], name, len) == 0)
            return (int)i;
    return -1;
}

int64_t txn_now(struct txn_coordinator *c)
{
    return c->opts.now_ms ? c->opts.now_ms(c->opts.clock_ctx) : clock_wall_ms();
}

int64_t txn_coordinator_now_ms(struct txn_coordinator *c)
{
    return txn_now(c);
}

struct txn_entry *txn_find(struct txn_coordinator *c, const char *id, size_t *at)
{
    size_t lo = 0, hi = c->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(c->entries[mid]->transactional_id, id);
        if (cmp == 0) {
            if (at)
                *at = mid;
            return c->entries[mid];
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (at)
        *at = lo;
    return NULL;
}

static struct txn_entry *txn_insert(struct txn_coordinator *c, const char *id)
{
    size_t at;
    struct txn_entry *e = txn_find(c, id, &at);
    if (e)
        return e;
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        struct txn_entry **grown = realloc(c->entries, cap * sizeof *grown);
        if (!grown)
            return NULL;
        c->entries = grown;
        c->cap = cap;
    }
    e = calloc(1, sizeof *e);
    if (!e || !(e->transactional_id = strdup(id))) {
        free(e);
        return NULL;
    }
    e->producer_id = -1;
    e->last_producer_id = -1;
    e->producer_epoch = -1;
    e->last_producer_epoch = -1;
    e->start_ms = -1;
    e->partition = c->opts.shards ? coordinator_shards_partition_of(c->opts.shards, id) : -1;
    memmove(c->entries + at + 1, c->entries + at, (c->count - at) * sizeof *c->entries);
    c->entries[at] = e;
    c->count++;
    return e;
}

void txn_clear_parts(struct txn_entry *e)
{
    for (size_t i = 0; i < e->part_count; i++)
        free(e->parts[i].topic);
    e->part_count = 0;
}

void txn_entry_free(struct txn_entry *e)
{
    if (!e)
        return;
    txn_clear_parts(e);
    free(e->parts);
    free(e->transactional_id);
    free(e);
}

void txn_remove_at(struct txn_coordinator *c, size_t at)
{
    txn_entry_free(c->entries[at]);
    memmove(c->entries + at, c->entries + at + 1, (c->count - at - 1) * sizeof *c->entries);
    c->count--;
}

int16_t txn_persist(struct txn_coordinator *c, const struct txn_entry *e, int64_t producer_id, int16_t epoch,
                    enum txn_state state, const struct txn_topic_partition *parts, size_t part_count, int64_t start_ms,
                    int64_t now)
{
    int16_t code = txn_check_transition(e, state);
    if (code != KAFKA_ERR_NONE || !c->opts.log)
        return code;
    struct txn_log_record rec = {
        .producer_id = producer_id,
        .previous_producer_id = e->last_producer_id,
        .producer_epoch = epoch,
        .timeout_ms = e->timeout_ms,
        .state = state,
        .partitions = parts,
        .partition_count = part_count,
        .last_update_ms = now,
        .start_ms = start_ms,
    };
    return txn_log_write(c->opts.log, e->transactional_id, &rec);
}

void txn_signal(struct txn_coordinator *c)
{
    c->work_due = true;
    pthread_cond_signal(&c->wake);
}

int16_t txn_fence_and_abort(struct txn_coordinator *c, struct txn_entry *e, int64_t now)
{
    /* An exhausted epoch cannot be bumped; the abort then keeps it and the
     * next InitProducerId moves to a new producer id. */
    int16_t epoch = e->producer_epoch < EPOCH_EXHAUSTED ? (int16_t)(e->producer_epoch + 1) : e->producer_epoch;
    int16_t code = txn_persist(c, e, e->producer_id, epoch, TXN_STATE_PREPARE_ABORT, e->parts, e->part_count,
                               e->start_ms, now);
    if (code != KAFKA_ERR_NONE)
        return code;
    if (epoch != e->producer_epoch)
        e->last_producer_epoch = e->producer_epoch;
    e->producer_epoch = epoch;
    txn_set_state(e, TXN_STATE_PREPARE_ABORT);
    e->last_update_ms = now;
    e->markers_pending = true;
    txn_signal(c);
    return KAFKA_ERR_NONE;
}

int txn_coordinator_create(const struct txn_coordinator_options *opts, struct txn_coordinator **out, char *err,
                           size_t errlen)
{
    *out = NULL;
    if (!opts || !opts->allocate_producer_id) {
        snprintf(err, errlen, "the transaction coordinator needs a producer id allocator");
        return -1;
    }
    struct txn_coordinator *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    c->opts = *opts;
    if (c->opts.max_timeout_ms <= 0)
        c->opts.max_timeout_ms = DEFAULT_MAX_TIMEOUT_MS;
    if (c->opts.id_expiration_ms <= 0)
        c->opts.id_expiration_ms = DEFAULT_ID_EXPIRATION_MS;
    if (c->opts.abort_check_interval_ms <= 0)
        c->opts.abort_check_interval_ms = 10000;
    if (c->opts.expiration_check_interval_ms <= 0)
        c->opts.expiration_check_interval_ms = 3600000;
    pthread_mutex_init(&c->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&c->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&c->marker_done, NULL);
    /* With shards, each partition has its own load state. */
    c->loaded = c->opts.shards != NULL;
    if (c->opts.background_thread && txn_thread_start(c, err, errlen) != 0) {
        txn_coordinator_destroy(c);
        return -1;
    }
    *out = c;
    return 0;
}

void txn_coordinator_destroy(struct txn_coordinator *c)
{
    if (!c)
        return;
    txn_thread_stop(c);
    for (size_t i = 0; i < c->count; i++)
        txn_entry_free(c->entries[i]);
    free(c->entries);
    pthread_cond_destroy(&c->wake);
    pthread_cond_destroy(&c->marker_done);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static int set_parts(struct txn_entry *e, const struct txn_topic_partition *parts, size_t count)
{
    txn_clear_parts(e);
    if (count > e->part_cap) {
        struct txn_topic_partition *grown = realloc(e->parts, count * sizeof *grown);
        if (!grown)
            return -1;
        e->parts = grown;
        e->part_cap = count;
    }
    for (size_t i = 0; i < count; i++) {
        e->parts[i].topic = strdup(parts[i].topic);
        e->parts[i].partition = parts[i].partition;
        if (!e->parts[i].topic) {
            e->part_count = i;
            return -1;
        }
    }
    e->part_count = count;
    return 0;
}

/* Replay visitor: the last record of an id wins; a tombstone removes it. */
static void load_visit(void *ctx, const char *id, const struct txn_log_record *rec)
{
    struct txn_coordinator *c = ctx;
    size_t at;
    struct txn_entry *e = txn_find(c, id, &at);
    if (!rec) {
        if (e)
            txn_remove_at(c, at);
        return;
    }
    if (!e && !(e = txn_insert(c, id))) {
        logger_error("txn", "out of memory loading transactional id %s", id);
        return;
    }
    e->producer_id = rec->producer_id;
    e->last_producer_id = rec->previous_producer_id;
    e->producer_epoch = rec->producer_epoch;
    e->last_producer_epoch = -1;
    e->timeout_ms = rec->timeout_ms;
    e->state = rec->state;
    e->start_ms = rec->start_ms;
    e->last_update_ms = rec->last_update_ms;
    if (set_parts(e, rec->partitions, rec->partition_count) != 0)
        logger_error("txn", "out of memory loading the partitions of transactional id %s", id);
}

/* After a load: drops Dead ids, reopens interrupted fences and queues the
 * markers of prepared transactions, for ids of partition (-1: all).
 * Caller holds the lock. */
static void settle_loaded(struct txn_coordinator *c, int32_t partition, const char *what)
{
    size_t pending = 0, ongoing = 0, count = 0;
    for (size_t i = 0; i < c->count; i++) {
        struct txn_entry *e = c->entries[i];
        if (partition >= 0 && e->partition != partition)
            continue;
        if (e->state == TXN_STATE_DEAD) {
            txn_remove_at(c, i--);
            continue;
        }
        /* Never written by this coordinator; an interrupted fence is an open
         * transaction the timeout will abort. */
        if (e->state == TXN_STATE_PREPARE_EPOCH_FENCE)
            e->state = TXN_STATE_ONGOING;
        if (e->state == TXN_STATE_PREPARE_COMMIT || e->state == TXN_STATE_PREPARE_ABORT) {
            e->markers_pending = true;
            pending++;
        }
        ongoing += e->state == TXN_STATE_ONGOING;
        count++;
    }
    if (pending > 0)
        txn_signal(c);
    /* Per partition, only a partition with ids is worth a line. */
    if (partition < 0 || count > 0)
        logger_info("txn", "loaded %zu transactional id(s) of %s: %zu to complete, %zu open", count, what, pending,
                    ongoing);
}

int txn_coordinator_load(struct txn_coordinator *c, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->lock);
    int rc = c->opts.log ? txn_log_load(c->opts.log, load_visit, c, err, errlen) : 0;
    if (rc == 0) {
        settle_loaded(c, -1, TXN_LOG_TOPIC);
        c->loaded = true;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* ---- per-partition loading (the coordinator runtime's hooks) ---- */

/* The lock is taken per record, so requests on other partitions go on
 * while one partition replays (its own ids answer LOAD_IN_PROGRESS). */
static void load_visit_taking_lock(void *ctx, const char *id, const struct txn_log_record *rec)
{
    struct txn_coordinator *c = ctx;
    pthread_mutex_lock(&c->lock);
    load_visit(c, id, rec);
    pthread_mutex_unlock(&c->lock);
}

static int shard_load(void *coordinator, int32_t partition, int32_t epoch, char *err, size_t errlen)
{
    struct txn_coordinator *c = coordinator;
    if (c->opts.log && txn_log_load_partition(c->opts.log, partition, load_visit_taking_lock, c, err, errlen) != 0)
        return -1;
    char what[64];
    snprintf(what, sizeof what, "%s-%d (coordinator epoch %d)", TXN_LOG_TOPIC, (int)partition, (int)epoch);
    pthread_mutex_lock(&c->lock);
    settle_loaded(c, partition, what);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

static void shard_unload(void *coordinator, int32_t partition)
{
    struct txn_coordinator *c = coordinator;
    pthread_mutex_lock(&c->lock);
    /* A marker write in flight holds its entry: wait for it to return. */
    for (size_t i = 0; i < c->count; i++) {
        if (c->entries[i]->partition == partition && c->entries[i]->markers_in_flight) {
            pthread_cond_wait(&c->marker_done, &c->lock);
            i = (size_t)-1; /* the table may have changed meanwhile: look again */
        }
    }
    size_t dropped = 0;
    for (size_t i = 0; i < c->count; i++) {
        if (c->entries[i]->partition != partition)
            continue;
        txn_remove_at(c, i--);
        dropped++;
    }
    pthread_mutex_unlock(&c->lock);
    if (dropped > 0)
        logger_debug("txn", "dropped %zu transactional id(s) of %s-%d", dropped, TXN_LOG_TOPIC, (int)partition);
}

static const struct coordinator_shard_ops shard_ops = {.load = shard_load, .unload = shard_unload};

const struct coordinator_shard_ops *txn_coordinator_shard_ops(void)
{
    return &shard_ops;
}

bool txn_entry_active(struct txn_coordinator *c, const struct txn_entry *e)
{
    return !c->opts.shards || coordinator_shards_state(c->opts.shards, e->partition) == COORDINATOR_SHARD_ACTIVE;
}

int32_t txn_entry_epoch(struct txn_coordinator *c, const struct txn_entry *e)
{
    return c->opts.shards ? coordinator_shards_epoch(c->opts.shards, e->partition) : c->opts.coordinator_epoch;
}

int32_t txn_coordinator_epoch_for(struct txn_coordinator *c, const char *transactional_id)
{
    if (!c->opts.shards)
        return c->opts.coordinator_epoch;
    return coordinator_shards_epoch(c->opts.shards, coordinator_shards_partition_of(c->opts.shards, transactional_id));
}

int16_t txn_coordinator_ownership(struct txn_coordinator *c, const char *transactional_id)
{
    if (!c)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    pthread_mutex_lock(&c->lock);
    bool loaded = c->loaded;
    pthread_mutex_unlock(&c->lock);
    if (!loaded)
        return KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    int16_t code = c->opts.log ? txn_log_check(c->opts.log, transactional_id) : KAFKA_ERR_NONE;
    /* Loading, or not led here: retry later (or elsewhere). */
    if (code == KAFKA_ERR_NONE && c->opts.shards &&
        coordinator_shards_serving_key(c->opts.shards, transactional_id) != KAFKA_ERR_NONE)
        code = KAFKA_ERR_COORDINATOR_NOT_AVAILABLE;
    return code;
}

/* Checks shared by every request; caller holds the lock. */
int16_t txn_serving(struct txn_coordinator *c, const char *id)
{
    if (!c->loaded)
        return KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    int16_t code = c->opts.shards ? coordinator_shards_serving_key(c->opts.shards, id) : KAFKA_ERR_NONE;
    if (code == KAFKA_ERR_NONE && c->opts.log)
        code = txn_log_check(c->opts.log, id);
    return code;
}

static bool completing(const struct txn_entry *e)
{
    return e->markers_pending || e->markers_in_flight || e->state == TXN_STATE_PREPARE_COMMIT ||
           e->state == TXN_STATE_PREPARE_ABORT || e->state == TXN_STATE_PREPARE_EPOCH_FENCE;
}

/* A new producer id (epoch 0) for the id, remembering the old one. */
static int16_t init_with_new_id(struct txn_coordinator *c, struct txn_entry *e, int32_t timeout_ms, int64_t now)
{
    int64_t id = -1;
    int16_t code = c->opts.allocate_producer_id(c->opts.allocate_ctx, &id);
    if (code != KAFKA_ERR_NONE)
        return code;
    int64_t old_last = e->last_producer_id;
    int32_t old_timeout = e->timeout_ms;
    e->last_producer_id = e->producer_id;
    e->timeout_ms = timeout_ms;
    code = txn_persist(c, e, id, 0, TXN_STATE_EMPTY, NULL, 0, -1, now);
    if (code != KAFKA_ERR_NONE) {
        e->last_producer_id = old_last;
        e->timeout_ms = old_timeout;
        return code;
    }
    e->last_producer_epoch = e->producer_epoch;
    e->producer_id = id;
    e->producer_epoch = 0;
    return KAFKA_ERR_NONE;
}

static int16_t init_existing(struct txn_coordinator *c, struct txn_entry *e, int32_t timeout_ms, int64_t expected_id,
                             int16_t expected_epoch, int64_t now)
{
    if (completing(e))
        return KAFKA_ERR_CONCURRENT_TRANSACTIONS;
    bool retry = false;
    if (expected_id >= 0) {
        bool current = expected_id == e->producer_id && expected_epoch == e->producer_epoch;
        bool previous = (expected_id == e->producer_id || expected_id == e->last_producer_id) &&
                        e->last_producer_epoch >= 0 && expected_epoch == e->last_producer_epoch;
        if (!current && !previous && e->producer_epoch >= 0)
            return KAFKA_ERR_PRODUCER_FENCED;
        /* The previous epoch: a retry of a call that succeeded. */
        retry = !current && previous;
    }
    if (e->state == TXN_STATE_ONGOING) {
        /* Abort the open transaction under a bumped epoch first; the client
         * retries once it completes. */
        int16_t code = txn_fence_and_abort(c, e, now);
        return code != KAFKA_ERR_NONE ? code : KAFKA_ERR_CONCURRENT_TRANSACTIONS;
    }
    if (retry && e->state == TXN_STATE_EMPTY)
        return KAFKA_ERR_NONE;
    if (e->producer_epoch >= EPOCH_EXHAUSTED)
        return init_with_new_id(c, e, timeout_ms, now);
    int16_t epoch = (int16_t)(e->producer_epoch + 1);
    int32_t old_timeout = e->timeout_ms;
    e->timeout_ms = timeout_ms;
    int16_t code = txn_persist(c, e, e->producer_id, epoch, TXN_STATE_EMPTY, NULL, 0, -1, now);
    if (code != KAFKA_ERR_NONE) {
        e->timeout_ms = old_timeout;
        return code;
    }
    e->last_producer_epoch = e->producer_epoch;
    e->producer_epoch = epoch;
    return KAFKA_ERR_NONE;
}

int16_t txn_coordinator_init_producer(struct txn_coordinator *c, const char *transactional_id, int32_t timeout_ms,
                                      int64_t expected_producer_id, int16_t expected_epoch, int64_t *producer_id,
                                      int16_t *producer_epoch)
{
    *producer_id = -1;
    *producer_epoch = -1;
    if (!transactional_id || !transactional_id[0])
        return KAFKA_ERR_INVALID_REQUEST;
    pthread_mutex_lock(&c->lock);
    int16_t code = txn_serving(c, transactional_id);
    if (code == KAFKA_ERR_NONE && (timeout_ms <= 0 || timeout_ms > c->opts.max_timeout_ms))
        code = KAFKA_ERR_INVALID_TRANSACTION_TIMEOUT;
    if (code != KAFKA_ERR_NONE) {
        pthread_mutex_unlock(&c->lock);
        return code;
    }
    int64_t now = txn_now(c);
    size_t at;
    struct txn_entry *e = txn_find(c, transactional_id, &at);
    bool fresh = e == NULL;
    if (fresh && !(e = txn_insert(c, transactional_id))) {
        pthread_mutex_unlock(&c->lock);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    if (fresh) {
        code = init_with_new_id(c, e, timeout_ms, now);
        if (code != KAFKA_ERR_NONE) {
            txn_find(c, transactional_id, &at);
            txn_remove_at(c, at);
            e = NULL;
        }
    } else {
        code = init_existing(c, e, timeout_ms, expected_producer_id, expected_epoch, now);
    }
    if (code == KAFKA_ERR_NONE) {
        txn_set_state(e, TXN_STATE_EMPTY);
        txn_clear_parts(e);
        e->start_ms = -1;
        e->last_update_ms = now;
        *producer_id = e->producer_id;
        *producer_epoch = e->producer_epoch;
        logger_debug("txn", "%s: producer id %" PRId64 " epoch %d", transactional_id, e->producer_id,
                     (int)e->producer_epoch);
    }
    pthread_mutex_unlock(&c->lock);
    return code;
}

/* The entry for a request carrying (id, producer id, epoch), or the error. */
static int16_t entry_for(struct txn_coordinator *c, const char *id, int64_t producer_id, int16_t epoch,
                         struct txn_entry **out)
{
    *out = NULL;
    if (!id || !id[0])
        return KAFKA_ERR_INVALID_REQUEST;
    int16_t code = txn_serving(c, id);
    if (code != KAFKA_ERR_NONE)
        return code;
    struct txn_entry *e = txn_find(c, id, NULL);
    if (!e || e->producer_id != producer_id)
        return KAFKA_ERR_INVALID_PRODUCER_ID_MAPPING;
    if (e->producer_epoch != epoch)
        return KAFKA_ERR_PRODUCER_FENCED;
    *out = e;
    return KAFKA_ERR_NONE;
}

static bool has_part(const struct txn_entry *e, const char *topic, int32_t partition)
{
    for (size_t i = 0; i < e->part_count; i++)
        if (e->parts[i].partition == partition && strcmp(e->parts[i].topic, topic) == 0)
            return true;
    return false;
}

int16_t txn_coordinator_add_partitions(struct txn_coordinator *c, const char *transactional_id, int64_t producer_id,
                                       int16_t producer_epoch, const struct txn_topic_partition *parts, size_t count)
{
    pthread_mutex_lock(&c->lock);
    struct txn_entry *e;
    int16_t code = entry_for(c, transactional_id, producer_id, producer_epoch, &e);
    if (code == KAFKA_ERR_NONE && completing(e))
        code = KAFKA_ERR_CONCURRENT_TRANSACTIONS;
    if (code != KAFKA_ERR_NONE) {
        pthread_mutex_unlock(&c->lock);
        return code;
    }
    if (count == 0) {
        pthread_mutex_unlock(&c->lock);
        return KAFKA_ERR_NONE; /* nothing to add: no transaction starts */
    }
    bool open = e->state == TXN_STATE_ONGOING;
    /* A finished transaction's partitions do not carry into the next one. */
    size_t base = open ? e->part_count : 0;
    struct txn_topic_partition *merged = malloc((base + count + 1) * sizeof *merged);
    if (!merged) {
        pthread_mutex_unlock(&c->lock);
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    if (base > 0)
        memcpy(merged, e->parts, base * sizeof *merged);
    size_t n = base;
    for (size_t i = 0; i < count; i++) {
        bool dup = open && has_part(e, parts[i].topic, parts[i].partition);
        for (size_t j = base; j < n && !dup; j++)
            dup = merged[j].partition == parts[i].partition && strcmp(merged[j].topic, parts[i].topic) == 0;
        if (!dup)
            merged[n++] = parts[i];
    }
    if (open && n == base) {
        free(merged);
        pthread_mutex_unlock(&c->lock);
        return KAFKA_ERR_NONE; /* nothing new: nothing to write */
    }
    int64_t now = txn_now(c);
    int64_t start = open ? e->start_ms : now;
    code = txn_persist(c, e, e->producer_id, e->producer_epoch, TXN_STATE_ONGOING, merged, n, start, now);
    if (code == KAFKA_ERR_NONE) {
        /* set_parts frees the entry's topic strings, which merged borrows:
         * copy the new tail first. */
        struct txn_topic_partition *copy = malloc((n + 1) * sizeof *copy);
        bool ok = copy != NULL;
        for (size_t i = 0; ok && i < n; i++) {
            copy[i].partition = merged[i].partition;
            copy[i].topic = strdup(merged[i].topic);
            if (!copy[i].topic) {
                for (size_t j = 0; j < i; j++)
                    free(copy[j].topic);
                ok = false;
            }
        }
        if (ok) {
            txn_clear_parts(e);
            free(e->parts);
            e->parts = copy;
            e->part_count = e->part_cap = n;
        } else {
            free(copy);
            logger_error("txn", "%s: out of memory recording partitions", transactional_id);
            code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        }
        txn_set_state(e, TXN_STATE_ONGOING);
        e->start_ms = start;
        e->last_update_ms = now;
    }
    free(merged);
    pthread_mutex_unlock(&c->lock);
    return code;
}

int16_t txn_coordinator_verify_partitions(struct txn_coordinator *c, const char *transactional_id, int64_t producer_id,
                                          int16_t producer_epoch, const struct txn_topic_partition *parts, size_t count,
                                          int16_t *part_errors)
{
    pthread_mutex_lock(&c->lock);
    struct txn_entry *e;
    int16_t code = entry_for(c, transactional_id, producer_id, producer_epoch, &e);
    for (size_t i = 0; code == KAFKA_ERR_NONE && i < count; i++)
        part_errors[i] = e->state == TXN_STATE_ONGOING && has_part(e, parts[i].topic, parts[i].partition)
                             ? KAFKA_ERR_NONE
                             : KAFKA_ERR_INVALID_TXN_STATE;
    pthread_mutex_unlock(&c->lock);
    return code;
}

int16_t txn_coordinator_end(struct txn_coordinator *c, const char *transactional_id, int64_t producer_id,
                            int16_t producer_epoch, bool commit)
{
    pthread_mutex_lock(&c->lock);
    struct txn_entry *e;
    int16_t code = entry_for(c, transactional_id, producer_id, producer_epoch, &e);
    if (code != KAFKA_ERR_NONE) {
        pthread_mutex_unlock(&c->lock);
        return code;
    }
    enum txn_state prepare = commit ? TXN_STATE_PREPARE_COMMIT : TXN_STATE_PREPARE_ABORT;
    enum txn_state complete = commit ? TXN_STATE_COMPLETE_COMMIT : TXN_STATE_COMPLETE_ABORT;
    switch (e->state) {
    case TXN_STATE_ONGOING: {
        if (e->markers_in_flight) {
            code = KAFKA_ERR_CONCURRENT_TRANSACTIONS;
            break;
        }
        int64_t now = txn_now(c);
        code = txn_persist(c, e, e->producer_id, e->producer_epoch, prepare, e->parts, e->part_count, e->start_ms, now);
        if (code != KAFKA_ERR_NONE)
            break;
        txn_set_state(e, prepare);
        e->last_update_ms = now;
        e->markers_pending = true;
        txn_signal(c);
        break;
    }
    case TXN_STATE_COMPLETE_COMMIT:
    case TXN_STATE_COMPLETE_ABORT:
        /* A retry of an end that already completed succeeds. */
        code = e->state == complete ? KAFKA_ERR_NONE : KAFKA_ERR_INVALID_TXN_STATE;
        break;
    case TXN_STATE_PREPARE_COMMIT:
    case TXN_STATE_PREPARE_ABORT:
        code = e->state == prepare ? KAFKA_ERR_CONCURRENT_TRANSACTIONS : KAFKA_ERR_INVALID_TXN_STATE;
        break;
    case TXN_STATE_PREPARE_EPOCH_FENCE:
        code = KAFKA_ERR_CONCURRENT_TRANSACTIONS;
        break;
    default:
        code = KAFKA_ERR_INVALID_TXN_STATE;
        break;
    }
    pthread_mutex_unlock(&c->lock);
    return code;
}
