/* The snapshot writer: one thread per store that writes snapshots of the
 * published image, so the thread that delivers commits (the quorum's raft
 * thread) never encodes or fsyncs a large image with the publish lock
 * held, and keeps answering fetches and heartbeats meanwhile.
 *
 * The loader only kicks it. The writer takes the published image
 * (immutable, retained for the write) and its snapshot id under the
 * publish lock, then encodes and writes it with no lock held. At most one
 * snapshot is in progress: commits meanwhile add to the bytes since the
 * snapshot, and the writer checks the triggers again once it is done.
 * The time trigger (metadata.log.max.snapshot.interval.ms) is checked on
 * the writer's own clock too, so new records are snapshotted once the
 * interval has passed even when nothing is committed after them. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "metadata/metadata_store_internal.h"
#include "util/clock.h"
#include "util/logger.h"

#define LOG_COMPONENT "metadata"
/* Longest sleep between checks of the time trigger. */
#define INTERVAL_CHECK_MS 1000

bool metadata_snapshot_due(const struct metadata_store *store)
{
    if (store->snapshot_bytes > 0 && store->bytes_since_snapshot >= store->snapshot_bytes)
        return true;
    return store->snapshot_interval_ms > 0 && store->bytes_since_snapshot > 0 &&
           clock_mono_ms() - store->last_snapshot_ms >= store->snapshot_interval_ms;
}

void metadata_snapshot_writer_kick(struct metadata_store *store)
{
    pthread_mutex_lock(&store->snap_mu);
    store->snap_kicked = true;
    pthread_cond_broadcast(&store->snap_cond);
    pthread_mutex_unlock(&store->snap_mu);
}

/* Encodes img and hands it to the log; returns 0, or -1 with err. */
static int write_image(struct metadata_store *store, const struct metadata_image *img,
                       const struct metadata_snapshot_id *id, int64_t last_timestamp_ms, int32_t *count, char *err,
                       size_t errlen)
{
    struct metadata_record_list records;
    struct metadata_log_entry *entries = NULL;
    int rc = -1;
    snprintf(err, errlen, "out of memory");
    if (metadata_record_list_init(&records) != 0)
        return -1;
    if (metadata_image_to_records(img, &records) == 0 &&
        (entries = calloc(records.count > 0 ? (size_t)records.count : 1, sizeof(*entries)))) {
        size_t start = 0;
        for (int32_t i = 0; i < records.count; i++) {
            entries[i] = (struct metadata_log_entry){records.w.buf + start, records.ends[i] - start};
            start = records.ends[i];
        }
        *count = records.count;
        rc = store->log_ops->create_snapshot(store->log, id, last_timestamp_ms, entries, records.count, err, errlen);
    }
    free(entries);
    metadata_record_list_free(&records);
    return rc;
}

/* Writes one snapshot when a trigger says so; returns true when it did
 * (or tried and failed), false when none was due. */
static bool snapshot_once(struct metadata_store *store)
{
    pthread_mutex_lock(&store->publish_lock);
    if (store->catch_up || !store->current || !metadata_snapshot_due(store)) {
        pthread_mutex_unlock(&store->publish_lock);
        return false;
    }
    const struct metadata_image *img = metadata_image_retain(store->current);
    struct metadata_snapshot_id id = {.end_offset = img->last_offset + 1, .epoch = store->last_epoch};
    int64_t last_timestamp_ms = store->last_append_time_ms;
    /* A failed snapshot is retried after as many bytes (or as long) again,
     * not at once. */
    store->bytes_since_snapshot = 0;
    store->last_snapshot_ms = clock_mono_ms();
    pthread_mutex_unlock(&store->publish_lock);

    pthread_mutex_lock(&store->snap_mu);
    while (store->snap_test_hold && !store->snap_stop) {
        store->snap_test_held = true;
        pthread_cond_broadcast(&store->snap_cond);
        pthread_cond_wait(&store->snap_cond, &store->snap_mu);
    }
    store->snap_test_held = false;
    pthread_mutex_unlock(&store->snap_mu);
    char err[512] = "";
    int32_t count = 0;
    int rc = write_image(store, img, &id, last_timestamp_ms, &count, err, sizeof(err));
    metadata_image_release(img);
    if (rc != 0) {
        logger_error(LOG_COMPONENT, "metadata snapshot at offset %lld failed: %s", (long long)id.end_offset, err);
        return true;
    }
    pthread_mutex_lock(&store->publish_lock);
    store->stats.snapshots_written++;
    pthread_mutex_unlock(&store->publish_lock);
    logger_info(LOG_COMPONENT, "wrote metadata snapshot at offset %lld, epoch %d (%d records)",
                (long long)id.end_offset, (int)id.epoch, (int)count);
    return true;
}

static void *writer_main(void *arg)
{
    struct metadata_store *store = arg;
    pthread_mutex_lock(&store->snap_mu);
    while (!store->snap_stop) {
        if (!store->snap_kicked && store->snapshot_interval_ms <= 0) {
            pthread_cond_wait(&store->snap_cond, &store->snap_mu); /* only kicks matter */
            continue;
        }
        if (!store->snap_kicked) {
            /* Woken by a kick, or in time to see the interval pass. */
            int64_t wait_ms = store->snapshot_interval_ms > 0 && store->snapshot_interval_ms < INTERVAL_CHECK_MS
                                  ? store->snapshot_interval_ms
                                  : INTERVAL_CHECK_MS;
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += wait_ms / 1000;
            deadline.tv_nsec += (wait_ms % 1000) * 1000000;
            if (deadline.tv_nsec >= 1000000000) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&store->snap_cond, &store->snap_mu, &deadline);
            if (store->snap_stop)
                break;
        }
        store->snap_kicked = false;
        store->snap_busy = true;
        pthread_mutex_unlock(&store->snap_mu);
        /* Commits during a write may have made another one due. */
        bool stop = false;
        while (!stop && snapshot_once(store)) {
            pthread_mutex_lock(&store->snap_mu);
            stop = store->snap_stop;
            pthread_mutex_unlock(&store->snap_mu);
        }
        pthread_mutex_lock(&store->snap_mu);
        store->snap_busy = false;
        pthread_cond_broadcast(&store->snap_cond);
    }
    pthread_mutex_unlock(&store->snap_mu);
    return NULL;
}

int metadata_snapshot_writer_start(struct metadata_store *store)
{
    if (pthread_create(&store->snap_thread, NULL, writer_main, store) != 0)
        return -1;
    store->snap_started = true;
    return 0;
}

void metadata_snapshot_writer_stop(struct metadata_store *store)
{
    if (!store->snap_started)
        return;
    pthread_mutex_lock(&store->snap_mu);
    store->snap_stop = true;
    pthread_cond_broadcast(&store->snap_cond);
    pthread_mutex_unlock(&store->snap_mu);
    /* A snapshot in progress finishes (its file is complete or absent). */
    pthread_join(store->snap_thread, NULL);
    store->snap_started = false;
}

void metadata_snapshot_writer_flush(struct metadata_store *store)
{
    pthread_mutex_lock(&store->snap_mu);
    while (store->snap_started && !store->snap_stop && (store->snap_kicked || store->snap_busy))
        pthread_cond_wait(&store->snap_cond, &store->snap_mu);
    pthread_mutex_unlock(&store->snap_mu);
}
