/* Metadata store: replay at open, bootstrap records, commit + publish, listeners. */
#include "metadata/metadata_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/uuid.h"
#include "metadata/metadata_builder.h"
#include "metadata/metadata_election.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store_internal.h"
#include "protocol/generated/errors.h"
#include "util/clock.h"
#include "util/lock_check.h"
#include "util/logger.h"

#define LOG_COMPONENT "metadata"

/* ---- record lists ---- */

int metadata_record_list_init(struct metadata_record_list *l)
{
    memset(l, 0, sizeof(*l));
    return kafka_writer_init(&l->w, 1024);
}

int metadata_record_list_mark(struct metadata_record_list *l)
{
    if (l->w.failed)
        return -1;
    if (l->count == l->cap) {
        int32_t cap = l->cap ? l->cap * 2 : 16;
        size_t *ends = realloc(l->ends, (size_t)cap * sizeof(*ends));
        if (!ends)
            return -1;
        l->ends = ends;
        l->cap = cap;
    }
    l->ends[l->count++] = l->w.len;
    return 0;
}

void metadata_record_list_free(struct metadata_record_list *l)
{
    kafka_writer_free(&l->w);
    free(l->ends);
    memset(l, 0, sizeof(*l));
}

/* ---- images and listeners ---- */

const struct metadata_image *metadata_image_acquire(struct metadata_store *store)
{
    pthread_mutex_lock(&store->image_lock);
    const struct metadata_image *img = metadata_image_retain(store->current);
    pthread_mutex_unlock(&store->image_lock);
    return img;
}

const struct metadata_image *metadata_store_current_locked(struct metadata_store *store)
{
    LOCK_ASSERT_HELD(&store->write_lock);
    return store->locked_image;
}

/* How long a controller operation waits for a new quorum leader to apply
 * its log before it goes ahead (and is refused NOT_CONTROLLER). */
#define CONTROLLER_CATCH_UP_WAIT_MS 3000
/* How long a controller operation waits for its batch to commit. */
#define COMMIT_WAIT_S 10
/* How long an operation without a TimeoutMs of its own (an internal
 * topic's creation) waits for this node to apply its committed batch: the
 * logs of a large topic take a while on a loaded machine. */
#define APPLY_WAIT_S 300

void metadata_controller_lock(struct metadata_store *store)
{
    pthread_mutex_lock(&store->write_lock);
    const struct metadata_log_ops *ops = store->log_ops;
    for (int64_t waited = 0; ops->catching_up && ops->catching_up(store->log) && waited < CONTROLLER_CATCH_UP_WAIT_MS;
         waited += 5) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    store->locked_image = metadata_image_acquire(store);
}

bool metadata_store_sync_locked(struct metadata_store *store)
{
    LOCK_ASSERT_HELD(&store->write_lock);
    if (store->log_ops->leader_epoch(store->log) < 0)
        return false;
    const struct metadata_image *img = metadata_image_acquire(store);
    if (img == store->locked_image) {
        metadata_image_release(img);
        return false;
    }
    metadata_image_release(store->locked_image);
    store->locked_image = img;
    return true;
}

void metadata_controller_unlock(struct metadata_store *store)
{
    metadata_image_release(store->locked_image);
    store->locked_image = NULL;
    pthread_mutex_unlock(&store->write_lock);
}

int metadata_store_subscribe(struct metadata_store *store, metadata_listener_fn fn, void *ctx)
{
    pthread_mutex_lock(&store->publish_lock);
    struct metadata_subscription *subs = realloc(store->subs, (size_t)(store->sub_count + 1) * sizeof(*subs));
    int id = -1;
    if (subs) {
        store->subs = subs;
        id = ++store->next_sub_id;
        subs[store->sub_count++] = (struct metadata_subscription){.id = id, .fn = fn, .ctx = ctx};
    }
    pthread_mutex_unlock(&store->publish_lock);
    return id;
}

void metadata_store_unsubscribe(struct metadata_store *store, int id)
{
    pthread_mutex_lock(&store->publish_lock);
    for (int32_t i = 0; i < store->sub_count; i++) {
        if (store->subs[i].id == id) {
            memmove(&store->subs[i], &store->subs[i + 1], (size_t)(store->sub_count - i - 1) * sizeof(*store->subs));
            store->sub_count--;
            break;
        }
    }
    pthread_mutex_unlock(&store->publish_lock);
}

static int delta_push(const struct metadata_topic ***list, int32_t *count, const struct metadata_topic *t)
{
    const struct metadata_topic **grown = realloc(*list, (size_t)(*count + 1) * sizeof(*grown));
    if (!grown)
        return -1;
    grown[(*count)++] = t;
    *list = grown;
    return 0;
}

int metadata_delta_compute(const struct metadata_image *old_image, const struct metadata_image *new_image,
                           struct metadata_delta *out)
{
    memset(out, 0, sizeof(*out));
    for (int32_t i = 0; new_image && i < new_image->topic_count; i++) {
        const struct metadata_topic *t = new_image->topics[i];
        const struct metadata_topic *before = metadata_image_topic_by_id(old_image, &t->topic_id);
        int rc = 0;
        if (!before)
            rc = delta_push(&out->created, &out->created_count, t);
        else if (before != t)
            rc = delta_push(&out->changed, &out->changed_count, t);
        if (rc != 0)
            goto oom;
    }
    for (int32_t i = 0; old_image && i < old_image->topic_count; i++) {
        const struct metadata_topic *t = old_image->topics[i];
        if (!metadata_image_topic_by_id(new_image, &t->topic_id) &&
            delta_push(&out->deleted, &out->deleted_count, t) != 0)
            goto oom;
    }
    return 0;
oom:
    metadata_delta_free(out);
    return -1;
}

void metadata_delta_free(struct metadata_delta *delta)
{
    free(delta->created);
    free(delta->deleted);
    free(delta->changed);
    memset(delta, 0, sizeof(*delta));
}

/* ---- commit ---- */

/* Entries over the encoded records; NULL on OOM. */
static struct metadata_log_entry *record_entries(const struct metadata_record_list *records)
{
    struct metadata_log_entry *entries = calloc((size_t)records->count, sizeof(*entries));
    size_t start = 0;
    for (int32_t i = 0; entries && i < records->count; i++) {
        entries[i] = (struct metadata_log_entry){records->w.buf + start, records->ends[i] - start};
        start = records->ends[i];
    }
    return entries;
}

/* Applies the records to a scratch copy of the current image: a record the
 * image cannot take never reaches the log. The image itself is untouched. */
static int16_t check_records_apply(struct metadata_store *store, const struct metadata_log_entry *entries,
                                   int32_t count, char *err, size_t errlen)
{
    const struct metadata_image *img = metadata_image_acquire(store);
    struct metadata_builder *b = metadata_builder_new(img);
    metadata_image_release(img);
    if (!b) {
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    int64_t base = store->log_ops->end_offset(store->log);
    int16_t rc = KAFKA_ERR_NONE;
    for (int32_t i = 0; i < count && rc == KAFKA_ERR_NONE; i++) {
        char why[256] = "";
        if (metadata_record_apply(b, entries[i].value, entries[i].len, base + i, why, sizeof(why)) !=
            METADATA_APPLY_OK) {
            snprintf(err, errlen, "internal error applying a metadata record: %s", why);
            logger_error(LOG_COMPONENT, "%s", err);
            rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        }
    }
    metadata_builder_free(b);
    return rc;
}

static struct timespec deadline_in_ms(int64_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += (time_t)(ms / 1000);
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

void metadata_store_mark_published(struct metadata_store *store, int64_t offset, bool failed)
{
    pthread_mutex_lock(&store->image_lock);
    if (offset > store->published_offset)
        store->published_offset = offset;
    if (failed)
        store->published_failed = offset;
    pthread_cond_broadcast(&store->published_cond);
    pthread_mutex_unlock(&store->image_lock);
}

int16_t metadata_store_commit_locked(struct metadata_store *store, struct metadata_record_list *records, char *err,
                                     size_t errlen)
{
    return metadata_store_commit_within_locked(store, records, METADATA_WAIT_APPLIED, err, errlen);
}

int16_t metadata_store_commit_within_locked(struct metadata_store *store, struct metadata_record_list *records,
                                            int32_t timeout_ms, char *err, size_t errlen)
{
    LOCK_ASSERT_HELD(&store->write_lock);
    if (records->w.failed || records->count == 0) {
        snprintf(err, errlen, "could not encode metadata records");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    struct metadata_log_entry *entries = record_entries(records);
    if (!entries) {
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    /* Leadership first: a node that does not lead, or still applies its
     * log, has an image the records were not validated against. */
    int16_t rc = KAFKA_ERR_NONE;
    int64_t last = -1;
    int32_t epoch = store->log_ops->leader_epoch(store->log);
    if (epoch < 0) {
        snprintf(err, errlen, "this node is not the active controller");
        rc = KAFKA_ERR_NOT_CONTROLLER;
    } else {
        rc = check_records_apply(store, entries, records->count, err, errlen);
    }
    int arc = rc == KAFKA_ERR_NONE
                  ? store->log_ops->append(store->log, epoch, entries, records->count, &last, err, errlen)
                  : 0;
    if (arc == METADATA_LOG_NOT_LEADER) {
        rc = KAFKA_ERR_NOT_CONTROLLER;
    } else if (arc != 0) {
        logger_error(LOG_COMPONENT, "metadata log append failed: %s", err);
        rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    free(entries);
    if (rc != KAFKA_ERR_NONE)
        return rc;
    /* Answer only once the loader has applied the commit (read your writes):
     * first the commit and its image, always (the next operation validates
     * against that image, so it must hold this batch; no disk work is left
     * by then), then, unless TimeoutMs is 0, the subscribers, which create
     * the partition logs, up to the TimeoutMs (APPLY_WAIT_S without one).
     * publish_lock is held by the loader while the subscribers run, hence
     * the timed lock. */
    struct timespec bound = deadline_in_ms((int64_t)COMMIT_WAIT_S * 1000);
    bool asked = timeout_ms > 0;
    struct timespec deadline = deadline_in_ms(asked ? (int64_t)timeout_ms : (int64_t)APPLY_WAIT_S * 1000);
    bool timed_out = false, closing = false, failed = false;
    pthread_mutex_lock(&store->image_lock);
    while (store->published_offset < last && !timed_out && !store->published_closing)
        timed_out = pthread_cond_timedwait(&store->published_cond, &store->image_lock, &bound) != 0 &&
                    store->published_offset < last;
    bool published = store->published_offset >= last;
    closing = store->published_closing && !published;
    failed = store->published_failed > last - records->count;
    pthread_mutex_unlock(&store->image_lock);
    if (!timed_out && !closing && timeout_ms != 0) {
        if (pthread_mutex_timedlock(&store->publish_lock, &deadline) != 0) {
            timed_out = true;
        } else {
            while (store->applied_offset < last && !timed_out && !store->closing)
                timed_out = pthread_cond_timedwait(&store->applied_cond, &store->publish_lock, &deadline) != 0 &&
                            store->applied_offset < last;
            closing = store->closing && store->applied_offset < last;
            failed |= store->failed_offset > last - records->count;
            pthread_mutex_unlock(&store->publish_lock);
        }
    }
    /* The next step of the same operation validates against what it wrote. */
    metadata_image_release(store->locked_image);
    store->locked_image = metadata_image_acquire(store);
    if (closing) {
        snprintf(err, errlen, "this node is shutting down");
        return KAFKA_ERR_REQUEST_TIMED_OUT;
    }
    if (timed_out && published) {
        snprintf(err, errlen,
                 "committed, but not applied on this broker within the request's timeout of %d ms; "
                 "it goes on applying it (creating the partitions)",
                 asked ? (int)timeout_ms : APPLY_WAIT_S * 1000);
        return KAFKA_ERR_REQUEST_TIMED_OUT;
    }
    if (timed_out) {
        snprintf(err, errlen, "the metadata quorum did not commit the batch in %d s", COMMIT_WAIT_S);
        return KAFKA_ERR_REQUEST_TIMED_OUT;
    }
    /* The listener wakes this thread before the log counts the batch as
     * delivered: a leader catching up on its own batch is still leading. */
    int32_t now_epoch = store->log_ops->leader_epoch(store->log);
    if (now_epoch != epoch &&
        !(now_epoch < 0 && store->log_ops->catching_up && store->log_ops->catching_up(store->log))) {
        /* Another leader may have written other records at these offsets. */
        snprintf(err, errlen, "the active controller changed while the batch was committed");
        return KAFKA_ERR_NOT_CONTROLLER;
    }
    if (failed) {
        snprintf(err, errlen, "out of memory publishing metadata");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    return KAFKA_ERR_NONE;
}

/* ---- open: load and bootstrap ---- */

static bool endpoints_match(const struct metadata_broker *br, const struct metadata_endpoint *endpoints,
                            int32_t endpoint_count, const char *rack)
{
    if (br->endpoint_count != endpoint_count)
        return false;
    if ((br->rack == NULL) != (rack == NULL) || (br->rack && strcmp(br->rack, rack) != 0))
        return false;
    for (int32_t i = 0; i < br->endpoint_count; i++) {
        const struct metadata_endpoint *x = &br->endpoints[i], *y = &endpoints[i];
        if (strcmp(x->listener, y->listener) != 0 || strcmp(x->host, y->host) != 0 || x->port != y->port ||
            x->security_protocol != y->security_protocol)
            return false;
    }
    return true;
}

/* The feature level on a fresh log, a broker registration when missing or
 * changed, and unfencing. Caller holds the controller lock. */
static int16_t register_broker_locked(struct metadata_store *store, int32_t node_id,
                                      const struct metadata_endpoint *endpoints, int32_t endpoint_count,
                                      const char *rack, const struct metadata_incarnation *incarnation,
                                      bool stay_fenced, int64_t *epoch_out, char *err, size_t errlen)
{
    const struct metadata_image *img = metadata_store_current_locked(store);
    const struct metadata_broker *self = metadata_image_broker(img, node_id);
    bool need_feature = img->metadata_version == 0;
    int16_t elr_level = store->eligible_leader_replicas_enable ? 1 : 0;
    bool need_elr_feature = img->elr_version != elr_level;
    /* A new process is a new incarnation and gets a new epoch, as in Kafka:
     * it may have lost an unflushed tail, so it must not keep the previous
     * one's leaderships or ISR places (KIP-903 tells their fetches apart). */
    bool new_incarnation = self && incarnation &&
                           memcmp(&self->incarnation_id, &incarnation->id, sizeof(incarnation->id)) != 0;
    /* Kafka's ClusterControlManager: the registered process may still be
     * running (the same node.id twice, or a kill -9 whose session has not
     * lapsed); the newcomer waits until its session lapses and fences it,
     * unless it proves a clean shutdown of that very registration. Taking
     * over at once fenced a live-looking epoch and could hand its
     * leaderships to another broker that is really dead. */
    if (new_incarnation && !self->fenced && incarnation->registered_session_valid &&
        incarnation->previous_epoch != self->epoch) {
        snprintf(err, errlen, "broker %d is registered at epoch %lld by another incarnation whose session is valid",
                 node_id, (long long)self->epoch);
        *epoch_out = -1;
        return KAFKA_ERR_DUPLICATE_BROKER_REGISTRATION;
    }
    bool need_register = !self || new_incarnation || !endpoints_match(self, endpoints, endpoint_count, rack);
    bool need_unfence = !stay_fenced && (need_register || self->fenced);
    int64_t epoch = self ? self->epoch : -1;
    if (!need_feature && !need_elr_feature && !need_register && !need_unfence) {
        *epoch_out = epoch;
        return KAFKA_ERR_NONE;
    }
    struct metadata_record_list records;
    if (metadata_record_list_init(&records) != 0) {
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    int64_t next = store->log_ops->end_offset(store->log);
    if (need_feature) {
        metadata_record_write_feature_level(&records.w, "metadata.version", METADATA_VERSION_LEVEL);
        metadata_record_list_mark(&records);
        next++;
    }
    if (need_elr_feature) {
        /* Kafka finalizes it with the storage tool or UpdateFeatures; here
         * the controller's config decides, read by every node from the log. */
        metadata_record_write_feature_level(&records.w, METADATA_ELR_FEATURE, elr_level);
        metadata_record_list_mark(&records);
        next++;
        logger_info(LOG_COMPONENT, "finalizing %s at %d", METADATA_ELR_FEATURE, (int)elr_level);
    }
    if (need_register) {
        /* Kafka's broker epoch is the offset of the registration record. */
        struct metadata_broker br = {
            .node_id = node_id,
            .epoch = next,
            .rack = (char *)rack,
            .endpoints = (struct metadata_endpoint *)endpoints,
            .endpoint_count = endpoint_count,
            .fenced = true,
        };
        if (incarnation)
            br.incarnation_id = incarnation->id;
        else if (uuid_random(br.incarnation_id.bytes) != 0) {
            metadata_record_list_free(&records);
            snprintf(err, errlen, "no randomness for the broker incarnation id");
            return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        }
        metadata_record_write_register_broker(&records.w, &br, METADATA_VERSION_LEVEL);
        metadata_record_list_mark(&records);
        epoch = next;
        logger_info(LOG_COMPONENT, "registering broker %d (epoch %lld)", node_id, (long long)epoch);
    }
    if (need_unfence) {
        metadata_record_write_unfence_broker(&records.w, node_id, epoch);
        metadata_record_list_mark(&records);
    }
    /* A new registration is fenced: a broker back from a crash before its
     * session lapsed loses its leaderships and ISR places here, as a fenced
     * one would (Kafka's unclean shutdown handling). */
    bool was_live = self && !self->fenced;
    struct metadata_unclean_source unclean = {store->node_id, store->unclean_leader_election_enable};
    bool now_live = need_register ? need_unfence : (need_unfence || was_live);
    /* Kafka's unclean shutdown: a new incarnation without proof of a clean
     * stop leaves every ELR (it may lack its unflushed tail). A feature
     * change in this batch counts from the next one. */
    bool unclean_restart = img->elr_version >= 1 && new_incarnation && incarnation->previous_epoch != self->epoch;
    if ((was_live != now_live || unclean_restart) &&
        metadata_election_for_broker(img, node_id, !now_live, unclean_restart, &unclean, store->min_insync_replicas,
                                     &records) < 0) {
        metadata_record_list_free(&records);
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    int16_t rc = metadata_store_commit_locked(store, &records, err, errlen);
    metadata_record_list_free(&records);
    *epoch_out = epoch;
    return rc;
}

int16_t metadata_register_broker(struct metadata_store *store, int32_t node_id,
                                 const struct metadata_endpoint *endpoints, int32_t endpoint_count, const char *rack,
                                 const struct metadata_incarnation *incarnation, bool stay_fenced, int64_t *epoch_out,
                                 char *err, size_t errlen)
{
    metadata_controller_lock(store);
    int16_t rc = register_broker_locked(store, node_id, endpoints, endpoint_count, rack, incarnation, stay_fenced,
                                        epoch_out, err, errlen);
    metadata_controller_unlock(store);
    return rc;
}

int16_t metadata_set_broker_fenced(struct metadata_store *store, int32_t node_id, int64_t epoch, bool fenced, char *err,
                                   size_t errlen)
{
    metadata_controller_lock(store);
    const struct metadata_broker *br = metadata_image_broker(metadata_store_current_locked(store), node_id);
    int16_t rc = KAFKA_ERR_NONE;
    if (!br || (epoch >= 0 && br->epoch != epoch)) {
        snprintf(err, errlen, "broker %d is not registered at epoch %lld", node_id, (long long)epoch);
        rc = KAFKA_ERR_UNKNOWN_MEMBER_ID;
    } else if (br->fenced != fenced) {
        struct metadata_record_list records;
        if (metadata_record_list_init(&records) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        } else {
            if (fenced)
                metadata_record_write_fence_broker(&records.w, node_id, br->epoch);
            else
                metadata_record_write_unfence_broker(&records.w, node_id, br->epoch);
            metadata_record_list_mark(&records);
            /* Leaders move in the same batch, so no image has a fenced leader. */
            struct metadata_unclean_source unclean = {store->node_id, store->unclean_leader_election_enable};
            int32_t moved = metadata_election_for_broker(metadata_store_current_locked(store), node_id, fenced, false,
                                                         &unclean, store->min_insync_replicas, &records);
            logger_info(LOG_COMPONENT, "%s broker %d (epoch %lld), %d partition(s) changed",
                        fenced ? "fencing" : "unfencing", node_id, (long long)br->epoch, (int)moved);
            if (moved < 0) {
                snprintf(err, errlen, "out of memory");
                rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            } else {
                rc = metadata_store_commit_locked(store, &records, err, errlen);
            }
            metadata_record_list_free(&records);
        }
    }
    metadata_controller_unlock(store);
    return rc;
}

bool metadata_store_is_controller(struct metadata_store *store)
{
    return store->log_ops->leader_epoch(store->log) >= 0;
}

bool metadata_store_catching_up(struct metadata_store *store)
{
    return store->log_ops->catching_up && store->log_ops->catching_up(store->log);
}

int metadata_store_open(const struct metadata_store_options *opts, struct metadata_store **out, char *err,
                        size_t errlen)
{
    *out = NULL;
    if (!opts || !opts->dir || opts->node_id < 0 || opts->endpoint_count < 0 ||
        (opts->endpoint_count > 0 && !opts->endpoints)) {
        snprintf(err, errlen, "metadata store: missing directory, node id or endpoints");
        return -1;
    }
    for (int32_t i = 0; i < opts->endpoint_count; i++) {
        if (!opts->endpoints[i].listener || !opts->endpoints[i].host) {
            snprintf(err, errlen, "metadata store: endpoint %d has no listener name or host", (int)i);
            return -1;
        }
    }
    struct metadata_store *store = calloc(1, sizeof(*store));
    if (!store) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&store->write_lock, NULL);
    pthread_mutex_init(&store->publish_lock, NULL);
    pthread_cond_init(&store->applied_cond, NULL);
    pthread_mutex_init(&store->image_lock, NULL);
    pthread_cond_init(&store->published_cond, NULL);
    pthread_mutex_init(&store->snap_mu, NULL);
    pthread_cond_init(&store->snap_cond, NULL);
    store->node_id = opts->node_id;
    store->unclean_leader_election_enable = opts->unclean_leader_election_enable;
    store->min_insync_replicas = opts->min_insync_replicas;
    store->eligible_leader_replicas_enable = opts->eligible_leader_replicas_enable;
    store->default_num_partitions = opts->default_num_partitions > 0 ? opts->default_num_partitions : 1;
    store->default_replication_factor = opts->default_replication_factor > 0 ? opts->default_replication_factor : 1;
    store->validate_topic_config = opts->validate_topic_config;
    store->validate_ctx = opts->validate_ctx;
    store->snapshot_bytes = opts->snapshot_bytes == 0 ? METADATA_SNAPSHOT_BYTES_DEFAULT : opts->snapshot_bytes;
    store->snapshot_interval_ms = opts->snapshot_interval_ms < 0 ? METADATA_SNAPSHOT_INTERVAL_MS_DEFAULT
                                                                 : opts->snapshot_interval_ms;
    store->last_snapshot_ms = clock_mono_ms();
    store->applied_offset = -1;
    store->failed_offset = -1;
    store->published_offset = -1;
    store->published_failed = -1;
    store->stats.snapshot_end_offset = -1;

    int64_t started = clock_mono_ns();
    if (opts->log_ops) {
        store->log_ops = opts->log_ops;
        store->log = opts->log;
    } else {
        if (metadata_log_open(opts->dir, &store->local_log, err, errlen) != 0)
            goto fail;
        store->log_ops = &metadata_local_log_ops;
        store->log = store->local_log;
    }
    if (!(store->catch_up = metadata_builder_new(NULL))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    struct metadata_log_listener listener = metadata_loader_listener(store);
    if (store->log_ops->register_listener(store->log, &listener, err, errlen) != 0 ||
        metadata_loader_finish_catch_up(store, opts->cluster_id, opts->node_id, err, errlen) != 0)
        goto fail;
    if (metadata_snapshot_writer_start(store) != 0) {
        snprintf(err, errlen, "cannot start the metadata snapshot writer");
        goto fail;
    }
    const struct metadata_image *img = store->current;
    if (store->stats.snapshot_end_offset >= 0)
        logger_info(LOG_COMPONENT, "loaded the metadata snapshot at offset %lld (%lld records)",
                    (long long)store->stats.snapshot_end_offset, (long long)store->stats.snapshot_records);
    logger_info(LOG_COMPONENT, "replayed %lld metadata log records: %d topics, %d brokers in %.1f ms",
                (long long)store->stats.log_records, (int)img->topic_count, (int)img->broker_count,
                (double)(clock_mono_ns() - started) / 1e6);

    /* A quorum's brokers register with the active controller instead. */
    int64_t epoch = -1;
    if (!opts->log_ops && metadata_register_broker(store, opts->node_id, opts->endpoints, opts->endpoint_count,
                                                   opts->rack, NULL, false, &epoch, err, errlen) != KAFKA_ERR_NONE)
        goto fail;
    *out = store;
    return 0;
fail:
    metadata_store_close(store);
    return -1;
}

void metadata_store_load_stats(struct metadata_store *store, struct metadata_load_stats *out)
{
    pthread_mutex_lock(&store->publish_lock);
    *out = store->stats;
    pthread_mutex_unlock(&store->publish_lock);
}

void metadata_store_begin_shutdown(struct metadata_store *store)
{
    if (!store)
        return;
    pthread_mutex_lock(&store->publish_lock);
    store->closing = true;
    pthread_cond_broadcast(&store->applied_cond);
    pthread_mutex_unlock(&store->publish_lock);
    pthread_mutex_lock(&store->image_lock);
    store->published_closing = true;
    pthread_cond_broadcast(&store->published_cond);
    pthread_mutex_unlock(&store->image_lock);
}

void metadata_store_close(struct metadata_store *store)
{
    if (!store)
        return;
    /* The single voter's loader thread first: it publishes into the store. */
    metadata_log_stop_delivery(store->local_log);
    metadata_snapshot_writer_stop(store);
    metadata_builder_free(store->catch_up);
    metadata_image_release(store->current);
    metadata_log_close(store->local_log);
    free(store->subs);
    pthread_mutex_destroy(&store->write_lock);
    pthread_mutex_destroy(&store->publish_lock);
    pthread_cond_destroy(&store->applied_cond);
    pthread_cond_destroy(&store->published_cond);
    pthread_mutex_destroy(&store->image_lock);
    pthread_mutex_destroy(&store->snap_mu);
    pthread_cond_destroy(&store->snap_cond);
    free(store);
}
