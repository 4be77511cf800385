/* The loader: the metadata log's listener. It applies committed batches in
 * offset order to a builder, publishes each new immutable image, tells
 * subscribers, and kicks the snapshot writer (metadata_snapshot_writer.c)
 * every snapshot_bytes bytes of records. At open it builds one image from the
 * snapshot and the log's tail and publishes it once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_quota.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store_internal.h"
#include "util/clock.h"
#include "util/logger.h"

#define LOG_COMPONENT "metadata"

/* Applies the records; unknown or inconsistent ones are logged and skipped,
 * as a replay always did. Returns how many applied. */
static int64_t apply_records(struct metadata_builder *b, const struct metadata_log_entry *records, int32_t count,
                             int64_t base_offset, bool from_snapshot)
{
    int64_t applied = 0;
    for (int32_t i = 0; i < count; i++) {
        char why[256] = "";
        enum metadata_apply_result res = metadata_record_apply(b, records[i].value, records[i].len, base_offset + i,
                                                               why, sizeof(why));
        if (res == METADATA_APPLY_OK) {
            applied++;
            continue;
        }
        logger_warn(LOG_COMPONENT, "metadata %s record %s %lld %s: %s", from_snapshot ? "snapshot" : "log",
                    from_snapshot ? "number" : "at offset", (long long)(from_snapshot ? i : base_offset + i),
                    res == METADATA_APPLY_SKIPPED ? "skipped" : "ignored as invalid", why);
    }
    return applied;
}

/* Swaps in the new image (taking over its reference) and notifies
 * subscribers. Caller holds publish_lock. */
static void publish_locked(struct metadata_store *store, struct metadata_image *img)
{
    pthread_mutex_lock(&store->image_lock);
    const struct metadata_image *old = store->current;
    store->current = img;
    pthread_mutex_unlock(&store->image_lock);
    /* Before the subscribers: a commit answered without waiting for them
     * (TimeoutMs 0) wakes here. */
    metadata_store_mark_published(store, img->last_offset, false);
    for (int32_t i = 0; i < store->sub_count; i++)
        store->subs[i].fn(store->subs[i].ctx, old, img);
    metadata_image_release(old);
}

/* ---- snapshots ---- */

static int mark(struct metadata_record_list *out)
{
    return metadata_record_list_mark(out);
}

int metadata_image_to_records(const struct metadata_image *img, struct metadata_record_list *out)
{
    struct kafka_writer *w = &out->w;
    int rc = 0;
    if (img->metadata_version > 0) {
        metadata_record_write_feature_level(w, "metadata.version", img->metadata_version);
        rc |= mark(out);
    }
    if (img->elr_version > 0) {
        metadata_record_write_feature_level(w, METADATA_ELR_FEATURE, img->elr_version);
        rc |= mark(out);
    }
    for (int32_t i = 0; i < img->broker_count; i++) {
        /* The registration carries the epoch and the fenced flags. */
        metadata_record_write_register_broker(w, &img->brokers[i], METADATA_VERSION_LEVEL);
        rc |= mark(out);
    }
    for (int32_t i = 0; i < img->topic_count; i++) {
        const struct metadata_topic *t = img->topics[i];
        metadata_record_write_topic(w, t->name, &t->topic_id);
        rc |= mark(out);
        for (int32_t j = 0; j < t->config_count; j++) {
            metadata_record_write_config(w, METADATA_CONFIG_RESOURCE_TOPIC, t->name, t->configs[j].name,
                                         t->configs[j].value);
            rc |= mark(out);
        }
        for (int32_t j = 0; j < t->partition_count; j++) {
            if (!t->partitions[j].present)
                continue;
            metadata_record_write_partition(w, &t->topic_id, &t->partitions[j]);
            rc |= mark(out);
        }
    }
    for (int32_t i = 0; i < img->broker_config_count; i++) {
        const struct metadata_broker_config *c = &img->broker_configs[i];
        metadata_record_write_config(w, METADATA_CONFIG_RESOURCE_BROKER, c->resource, c->name, c->value);
        rc |= mark(out);
    }
    if (img->next_producer_id > 0) {
        metadata_record_write_producer_ids(w, img->controller_id, -1, img->next_producer_id);
        rc |= mark(out);
    }
    for (int32_t i = 0; i < img->acl_count; i++) {
        metadata_record_write_acl(w, &img->acls[i]);
        rc |= mark(out);
    }
    for (int32_t i = 0; i < img->scram_count; i++) {
        metadata_record_write_scram(w, &img->scrams[i]);
        rc |= mark(out);
    }
    for (int32_t i = 0; i < img->quota_count; i++) {
        const struct metadata_quota *q = &img->quotas[i];
        metadata_record_write_quota(w, &q->entity, q->key, q->value, false);
        rc |= mark(out);
    }
    return rc != 0 || w->failed ? -1 : 0;
}

/* ---- listener ---- */

static int handle_commit(void *ctx, const struct metadata_batch *batch)
{
    struct metadata_store *store = ctx;
    int64_t last = batch->base_offset + batch->count - 1;
    pthread_mutex_lock(&store->publish_lock);
    int rc = 0;
    store->last_epoch = batch->epoch;
    store->last_append_time_ms = batch->append_time_ms;
    store->bytes_since_snapshot += (int64_t)batch->bytes;
    if (store->catch_up) {
        apply_records(store->catch_up, batch->records, batch->count, batch->base_offset, false);
        store->stats.log_records += batch->count;
    } else {
        struct metadata_builder *b = metadata_builder_new(store->current);
        struct metadata_image *img = NULL;
        if (b) {
            apply_records(b, batch->records, batch->count, batch->base_offset, false);
            img = metadata_builder_finish(b, last);
        }
        if (img) {
            publish_locked(store, img);
            /* Kafka's triggers: enough new record bytes, or new records
             * and the interval passed. Only committed batches reach here,
             * so a snapshot never holds an uncommitted record; the writer
             * thread writes it, not this one (the raft thread). */
            if (metadata_snapshot_due(store))
                metadata_snapshot_writer_kick(store);
        } else {
            /* The log has the records; the next open replays them. */
            logger_error(LOG_COMPONENT, "out of memory applying metadata offsets %lld..%lld",
                         (long long)batch->base_offset, (long long)last);
            store->failed_offset = last;
            rc = -1;
        }
    }
    /* A failed batch, or one applied during the replay at open, is not
     * published: its waiters learn of it here. */
    metadata_store_mark_published(store, last, rc != 0);
    store->applied_offset = last;
    pthread_cond_broadcast(&store->applied_cond);
    pthread_mutex_unlock(&store->publish_lock);
    return rc;
}

/* publish_lock held. The cluster id and controller id are this node's, not
 * the log's: they carry over from the published image. */
static int load_snapshot_live(struct metadata_store *store, const struct metadata_snapshot_id *id,
                              const struct metadata_log_entry *records, int32_t count)
{
    struct metadata_builder *b = metadata_builder_new(NULL);
    char err[256];
    if (!b)
        return -1;
    apply_records(b, records, count, id->end_offset - 1, true);
    if (metadata_builder_set_cluster(b, store->current->cluster_id, store->current->controller_id, err, sizeof err) !=
        0) {
        metadata_builder_free(b);
        return -1;
    }
    struct metadata_image *img = metadata_builder_finish(b, id->end_offset - 1);
    if (!img)
        return -1;
    publish_locked(store, img);
    store->applied_offset = id->end_offset - 1;
    store->last_epoch = id->epoch;
    store->bytes_since_snapshot = 0;
    store->last_snapshot_ms = clock_mono_ms();
    store->stats.snapshot_end_offset = id->end_offset;
    store->stats.snapshot_records = count;
    store->stats.log_records = 0;
    pthread_cond_broadcast(&store->applied_cond);
    return 0;
}

static int handle_load_snapshot(void *ctx, const struct metadata_snapshot_id *id,
                                const struct metadata_log_entry *records, int32_t count)
{
    struct metadata_store *store = ctx;
    pthread_mutex_lock(&store->publish_lock);
    if (!store->catch_up && store->current) {
        /* At run time (a replica behind the leader's log start downloaded
         * it): the snapshot's image replaces the published one whole. */
        int rc = load_snapshot_live(store, id, records, count);
        pthread_mutex_unlock(&store->publish_lock);
        return rc;
    }
    /* A snapshot replaces whatever was loaded before it. */
    metadata_builder_free(store->catch_up);
    store->catch_up = metadata_builder_new(NULL);
    int rc = -1;
    if (store->catch_up) {
        apply_records(store->catch_up, records, count, id->end_offset - 1, true);
        store->applied_offset = id->end_offset - 1;
        store->last_epoch = id->epoch;
        store->bytes_since_snapshot = 0;
        store->last_snapshot_ms = clock_mono_ms();
        store->stats.snapshot_end_offset = id->end_offset;
        store->stats.snapshot_records = count;
        store->stats.log_records = 0;
        rc = 0;
    }
    pthread_mutex_unlock(&store->publish_lock);
    return rc;
}

struct metadata_log_listener metadata_loader_listener(struct metadata_store *store)
{
    return (struct metadata_log_listener){
        .ctx = store,
        .handle_commit = handle_commit,
        .handle_load_snapshot = handle_load_snapshot,
    };
}

int metadata_loader_finish_catch_up(struct metadata_store *store, const char *cluster_id, int32_t controller_id,
                                    char *err, size_t errlen)
{
    pthread_mutex_lock(&store->publish_lock);
    struct metadata_builder *b = store->catch_up;
    store->catch_up = NULL;
    int rc = -1;
    if (b && metadata_builder_set_cluster(b, cluster_id, controller_id, err, errlen) != 0) {
        metadata_builder_free(b);
        b = NULL;
    } else if (b) {
        struct metadata_image *img = metadata_builder_finish(b, store->applied_offset);
        if (img) {
            publish_locked(store, img);
            rc = 0;
        } else {
            snprintf(err, errlen, "out of memory");
        }
    } else {
        snprintf(err, errlen, "out of memory");
    }
    pthread_mutex_unlock(&store->publish_lock);
    return rc;
}
