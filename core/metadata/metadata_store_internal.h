/* Store internals shared by the store (open, publish) and the controller
 * operations; not part of the public API. */
#ifndef CAIRN_METADATA_METADATA_STORE_INTERNAL_H
#define CAIRN_METADATA_METADATA_STORE_INTERNAL_H
#include <pthread.h>

#include "metadata/metadata_log.h"
#include "metadata/metadata_store.h"
#include "protocol/wire.h"

/* Epoch stamped on metadata batches: the single voter's first term. A Raft
 * layer will supply the real leader epoch. */
#define METADATA_CONTROLLER_EPOCH 1

struct metadata_subscription {
    int id;
    metadata_listener_fn fn;
    void *ctx;
};

/* Thread-safety: write_lock serializes mutations (log appends, publishes,
 * subscription changes); image_lock guards only the current pointer so that
 * acquiring an image never waits for a log fsync. */
struct metadata_store {
    pthread_mutex_t write_lock;
    pthread_mutex_t image_lock;
    const struct metadata_image *current;
    struct metadata_log *log;
    int32_t node_id;
    int32_t default_num_partitions;
    int16_t default_replication_factor;
    metadata_config_validator validate_topic_config;
    void *validate_ctx;
    int64_t producer_id_next;    /* write_lock: this broker's block [next, end) */
    int64_t producer_id_end;
    struct metadata_subscription *subs;
    int32_t sub_count;
    int next_sub_id;
};

/* Encoded record values for one batch; owned by one thread. */
struct metadata_record_list {
    struct kafka_writer w;
    size_t *ends;                /* end offset in w.buf of each record */
    int32_t count;
    int32_t cap;
};

int metadata_record_list_init(struct metadata_record_list *l);
/* Marks the bytes written since the previous mark as one record; -1 on OOM. */
int metadata_record_list_mark(struct metadata_record_list *l);
void metadata_record_list_free(struct metadata_record_list *l);

/* Applies the records to a copy of the current image, appends them as one
 * batch, and publishes the new image. Caller holds write_lock. Returns a
 * Kafka error code (UNKNOWN_SERVER_ERROR with err on a failed append). */
int16_t metadata_store_commit_locked(struct metadata_store *store, struct metadata_record_list *records,
                                     char *err, size_t errlen);

/* Current image without taking a reference; caller holds write_lock (the
 * pointer only changes under it). */
const struct metadata_image *metadata_store_current_locked(struct metadata_store *store);

#endif
