/* Store internals shared by the store (open, publish) and the controller
 * operations; not part of the public API. */
#ifndef CAIRN_METADATA_METADATA_STORE_INTERNAL_H
#define CAIRN_METADATA_METADATA_STORE_INTERNAL_H
#include <pthread.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_log.h"
#include "metadata/metadata_store.h"
#include "protocol/wire.h"

struct metadata_subscription {
    int id;
    metadata_listener_fn fn;
    void *ctx;
};

/* Thread-safety: write_lock serializes controller operations (validate,
 * append, wait for the commit); publish_lock serializes the loader (apply,
 * publish, subscribers, snapshots) and guards the loader fields and the
 * subscriptions; image_lock guards only the current pointer so that
 * acquiring an image never waits for a log fsync. Lock order: write_lock,
 * then publish_lock, then image_lock. */
struct metadata_store {
    pthread_mutex_t write_lock;
    pthread_mutex_t publish_lock;
    pthread_cond_t applied_cond; /* signalled when applied_offset moves */
    pthread_mutex_t image_lock;
    const struct metadata_image *current;
    /* image_lock: the last committed offset whose image is current (or
     * whose batch failed to apply), set before the subscribers run, so a
     * commit can be answered without waiting for them (a TimeoutMs). */
    int64_t published_offset;
    int64_t published_failed;      /* the last such offset whose batch failed, -1 */
    pthread_cond_t published_cond; /* published_offset moved, or published_closing set */
    bool published_closing;
    const struct metadata_log_ops *log_ops;
    void *log;                                 /* the ops' context */
    struct metadata_log *local_log;            /* the single voter's log, closed with the store */
    const struct metadata_image *locked_image; /* write_lock: the controller's retained image */
    /* loader state (publish_lock) */
    struct metadata_builder *catch_up; /* replay at open: one builder, published once */
    int64_t applied_offset;            /* last committed offset handed to the loader */
    int64_t failed_offset;             /* last offset whose batch could not be applied, -1 */
    int32_t last_epoch;                /* epoch of the last applied batch */
    int64_t last_append_time_ms;
    int64_t snapshot_bytes; /* metadata.log.max.record.bytes.between.snapshots; <= 0: never */
    int64_t bytes_since_snapshot;
    int64_t snapshot_interval_ms; /* metadata.log.max.snapshot.interval.ms; <= 0: never */
    int64_t last_snapshot_ms;     /* monotonic: the last snapshot written or loaded, or the open */
    struct metadata_load_stats stats;
    bool closing; /* publish_lock: commit waits end at once (shutdown) */
    /* The snapshot writer's thread (metadata_snapshot_writer.c); snap_mu
     * guards the flags. Lock order: publish_lock, then snap_mu. */
    pthread_mutex_t snap_mu;
    pthread_cond_t snap_cond; /* a kick, the stop, or the writer going idle */
    pthread_t snap_thread;
    bool snap_started;
    bool snap_kicked; /* a trigger fired since the writer last looked */
    bool snap_busy;   /* checking or writing */
    bool snap_stop;
    /* Tests: while hold is set the writer waits, image taken, before
     * writing it (held says it is waiting), as a slow disk would. */
    bool snap_test_hold;
    bool snap_test_held;
    int32_t node_id;
    int32_t default_num_partitions;
    int16_t default_replication_factor;
    bool unclean_leader_election_enable;  /* static config: the election's default */
    int32_t min_insync_replicas;          /* static config: the ELR's minimum's default */
    bool eligible_leader_replicas_enable; /* finalizes eligible.leader.replicas.version */
    metadata_config_validator validate_topic_config;
    void *validate_ctx;
    int64_t producer_id_next; /* write_lock: this broker's block [next, end) */
    int64_t producer_id_end;
    metadata_producer_id_allocator allocate_ids; /* NULL: this store's controller */
    void *allocate_ids_ctx;
    metadata_topic_creator create_topic; /* NULL: this store's controller */
    void *create_topic_ctx;
    metadata_topic_creator create_own_topic; /* a voter's: its internal and auto-created topics */
    void *create_own_topic_ctx;
    struct metadata_subscription *subs;
    int32_t sub_count;
    int next_sub_id;
};

/* Encoded record values for one batch; owned by one thread. */
struct metadata_record_list {
    struct kafka_writer w;
    size_t *ends; /* end offset in w.buf of each record */
    int32_t count;
    int32_t cap;
};

int metadata_record_list_init(struct metadata_record_list *l);
/* Marks the bytes written since the previous mark as one record; -1 on OOM. */
int metadata_record_list_mark(struct metadata_record_list *l);
void metadata_record_list_free(struct metadata_record_list *l);

/* The controller's hand-off: checks that the records apply to the current
 * image (on a scratch builder, leaving the image alone), appends them as one
 * batch at the log's leader epoch, and waits until the loader has applied
 * the commit, so the caller sees its own write. Caller holds write_lock.
 * Returns a Kafka error code (UNKNOWN_SERVER_ERROR with err on failure). */
int16_t metadata_store_commit_locked(struct metadata_store *store, struct metadata_record_list *records, char *err,
                                     size_t errlen);

/* metadata_store_commit_locked with a client's TimeoutMs: 0 answers once
 * the batch is committed and its image published, before the subscribers
 * (the replica manager creating the partition logs) have run; > 0 waits
 * for them as well, up to timeout_ms, then answers REQUEST_TIMED_OUT (the
 * batch stays committed: Kafka's behaviour); METADATA_WAIT_APPLIED is
 * metadata_store_commit_locked's wait. */
int16_t metadata_store_commit_within_locked(struct metadata_store *store, struct metadata_record_list *records,
                                            int32_t timeout_ms, char *err, size_t errlen);

/* The loader's side of the above: offset's batch is committed and its image
 * current (failed: it could not be applied). Takes image_lock. */
void metadata_store_mark_published(struct metadata_store *store, int64_t offset, bool failed);

/* Under write_lock: when this node leads and its image holds its whole
 * log, makes that image the one operations validate against (the one the
 * lock took may predate entries a new quorum leader applied after it).
 * Returns true when the image changed, so what was validated must be
 * validated again. */
bool metadata_store_sync_locked(struct metadata_store *store);

/* The two halves of metadata_create_topic, apart: validate and encode the
 * batch (the image is not touched), then commit it. Each takes write_lock. */
int16_t metadata_controller_prepare_create_topic(struct metadata_store *store, const char *name, int32_t num_partitions,
                                                 int16_t replication_factor, struct metadata_record_list *records,
                                                 char *err, size_t errlen);
int16_t metadata_controller_submit(struct metadata_store *store, struct metadata_record_list *records, char *err,
                                   size_t errlen);

/* ---- loader (metadata_loader.c) ---- */

/* The listener the store registers with its log; ctx is the store. */
struct metadata_log_listener metadata_loader_listener(struct metadata_store *store);
/* Ends the catch-up of open: publishes the image built so far with the
 * cluster id and controller id. Returns 0, or -1 with err. */
int metadata_loader_finish_catch_up(struct metadata_store *store, const char *cluster_id, int32_t controller_id,
                                    char *err, size_t errlen);
/* Records that rebuild img (a snapshot's data records), appended to out.
 * Returns 0, or -1 on allocation failure. */
int metadata_image_to_records(const struct metadata_image *img, struct metadata_record_list *out);

/* ---- snapshot writer (metadata_snapshot_writer.c) ---- */

/* Kafka's triggers (KIP-630, KIP-876): snapshot_bytes of new records, or
 * new records and snapshot_interval_ms since the last snapshot. Caller
 * holds publish_lock. */
bool metadata_snapshot_due(const struct metadata_store *store);
/* Wakes the writer to check the triggers; any thread. */
void metadata_snapshot_writer_kick(struct metadata_store *store);
/* Starts the writer once the store has published its first image;
 * returns 0 or -1. */
int metadata_snapshot_writer_start(struct metadata_store *store);
/* Lets a snapshot in progress finish and joins the thread. */
void metadata_snapshot_writer_stop(struct metadata_store *store);
/* Waits until the writer has acted on every kick so far (tests). */
void metadata_snapshot_writer_flush(struct metadata_store *store);

/* The controller's lock: takes write_lock, waits (a bounded time) until the
 * log can be written (a new quorum leader first applies what its log holds),
 * and retains the current image for metadata_store_current_locked. */
void metadata_controller_lock(struct metadata_store *store);
void metadata_controller_unlock(struct metadata_store *store);

/* The image the controller validates against, retained at
 * metadata_controller_lock (refreshed after each commit); caller holds
 * write_lock. A quorum delivers commits on its own thread, so the
 * controller never reads store->current unreferenced. */
const struct metadata_image *metadata_store_current_locked(struct metadata_store *store);

#endif
