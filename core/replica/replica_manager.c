/* Hosted partitions and their replica state, kept in step with metadata
 * images (see replica_manager.h). */
#include "replica/replica_manager.h"

#include <pthread.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "log/partition_log.h"
#include "metadata/metadata_store.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

/* One hosted partition. Its fields change only on the thread applying
 * metadata, under the manager's lock; lookups copy them under the lock. */
struct hosted_partition {
    struct hosted_partition *next; /* hash chain */
    char *topic;
    int32_t partition;
    struct partition_log *log; /* the manager's reference */
    enum replica_role role;
    int32_t leader_id;
    int32_t leader_epoch;
    int32_t partition_epoch;
    int32_t *replicas;
    int32_t replica_count;
    int32_t *isr;
    int32_t isr_count;
    int32_t high_watermark_min_isr; /* replica_partition_info's */
};

struct leadership_listener {
    int id;
    replica_leadership_fn fn;
    void *ctx;
};

struct replica_manager {
    struct log_manager *logs;
    const struct broker_config *config;
    /* config with the image's dynamic broker configs over it; NULL while
     * there are none. Written and read under apply_lock only. */
    struct broker_config *layered;
    int32_t node_id;
    /* Serialises applying metadata with registering a listener, so a new
     * listener hears the state as of its registration, then every change
     * after it, in order. Taken before lock, never inside it. */
    pthread_mutex_t apply_lock;
    pthread_mutex_t lock; /* guards everything below */
    struct hosted_partition **buckets;
    size_t bucket_count; /* a power of two */
    size_t hosted;
    size_t leaders;
    struct leadership_listener *listeners;
    size_t listener_count, listener_cap;
    int next_listener_id;
};

#define INITIAL_BUCKETS 64

int replica_manager_create(const struct replica_manager_options *opts, struct replica_manager **out)
{
    struct replica_manager *rm = calloc(1, sizeof *rm);
    if (!rm || !(rm->buckets = calloc(INITIAL_BUCKETS, sizeof *rm->buckets))) {
        free(rm);
        return -1;
    }
    rm->bucket_count = INITIAL_BUCKETS;
    rm->logs = opts->logs;
    rm->config = opts->config;
    rm->node_id = opts->node_id;
    rm->next_listener_id = 1;
    pthread_mutex_init(&rm->apply_lock, NULL);
    pthread_mutex_init(&rm->lock, NULL);
    *out = rm;
    return 0;
}

static void free_hosted(struct hosted_partition *hp)
{
    if (!hp)
        return;
    if (hp->log)
        partition_log_close(hp->log);
    free(hp->topic);
    free(hp->replicas);
    free(hp->isr);
    free(hp);
}

void replica_manager_destroy(struct replica_manager *rm)
{
    if (!rm)
        return;
    for (size_t i = 0; i < rm->bucket_count; i++) {
        struct hosted_partition *hp = rm->buckets[i];
        while (hp) {
            struct hosted_partition *next = hp->next;
            free_hosted(hp);
            hp = next;
        }
    }
    free(rm->buckets);
    config_free(rm->layered);
    free(rm->listeners);
    pthread_mutex_destroy(&rm->lock);
    pthread_mutex_destroy(&rm->apply_lock);
    free(rm);
}

/* FNV-1a over the name and the partition number. */
static size_t bucket_of(const struct replica_manager *rm, const char *topic, int32_t partition)
{
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *p = (const unsigned char *)topic; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    h = (h ^ (uint32_t)partition) * 1099511628211ull;
    return (size_t)(h & (rm->bucket_count - 1));
}

/* Under lock. The link pointing at the entry (or at the chain's NULL end). */
static struct hosted_partition **find_link(struct replica_manager *rm, const char *topic, int32_t partition)
{
    struct hosted_partition **link = &rm->buckets[bucket_of(rm, topic, partition)];
    while (*link && ((*link)->partition != partition || strcmp((*link)->topic, topic) != 0))
        link = &(*link)->next;
    return link;
}

/* Under lock: double the table when chains grow long; on failure the
 * table stays as it is (longer chains, still correct). */
static void maybe_grow(struct replica_manager *rm)
{
    if (rm->hosted < rm->bucket_count * 2)
        return;
    size_t count = rm->bucket_count * 2;
    struct hosted_partition **grown = calloc(count, sizeof *grown);
    if (!grown)
        return;
    struct hosted_partition **old = rm->buckets;
    size_t old_count = rm->bucket_count;
    rm->buckets = grown;
    rm->bucket_count = count;
    for (size_t i = 0; i < old_count; i++) {
        while (old[i]) {
            struct hosted_partition *hp = old[i];
            old[i] = hp->next;
            size_t b = bucket_of(rm, hp->topic, hp->partition);
            hp->next = grown[b];
            grown[b] = hp;
        }
    }
    free(old);
}

/* Tell every listener; on the applying thread, without the lock. */
static void notify(struct replica_manager *rm, const char *topic, int32_t partition, bool became_leader,
                   int32_t leader_epoch)
{
    pthread_mutex_lock(&rm->lock);
    size_t n = rm->listener_count;
    struct leadership_listener *copy = n ? malloc(n * sizeof *copy) : NULL;
    if (copy)
        memcpy(copy, rm->listeners, n * sizeof *copy);
    pthread_mutex_unlock(&rm->lock);
    if (n && !copy) {
        logger_error("replica", "out of memory telling listeners about %s-%d", topic, partition);
        return;
    }
    for (size_t i = 0; i < n; i++)
        copy[i].fn(copy[i].ctx, topic, partition, became_leader, leader_epoch);
    free(copy);
}

/* Stop hosting topic-partition: listeners hear it is no longer led here
 * while it is still hosted (so they can reach its log: acks=all produces
 * waiting on it answer NOT_LEADER_OR_FOLLOWER now, not at their timeout),
 * then the log goes. Under apply_lock: nothing else changes the table. */
static void unhost(struct replica_manager *rm, const char *topic, int32_t partition)
{
    pthread_mutex_lock(&rm->lock);
    struct hosted_partition *hp = *find_link(rm, topic, partition);
    int32_t epoch = hp ? hp->leader_epoch : -1;
    if (hp) { /* read meanwhile as led by nobody: neither led nor followed here */
        if (hp->role == REPLICA_ROLE_LEADER)
            rm->leaders--;
        hp->role = REPLICA_ROLE_FOLLOWER;
        hp->leader_id = -1;
    }
    pthread_mutex_unlock(&rm->lock);
    if (hp)
        notify(rm, topic, partition, false, epoch);
    pthread_mutex_lock(&rm->lock);
    struct hosted_partition **link = find_link(rm, topic, partition);
    hp = *link;
    if (hp) {
        *link = hp->next;
        rm->hosted--;
        if (hp->role == REPLICA_ROLE_LEADER)
            rm->leaders--;
    }
    pthread_mutex_unlock(&rm->lock);
    free_hosted(hp);
    log_manager_delete(rm->logs, topic, partition);
}

static bool contains(const int32_t *ids, int32_t count, int32_t id)
{
    for (int32_t i = 0; i < count; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Whether appends alone move the high watermark: nobody else leads the
 * partition and no other replica is in sync (so none must catch up). */
static bool high_watermark_tracks_end(const struct metadata_partition *p, int32_t self, int32_t min_isr)
{
    if (p->leader >= 0 && p->leader != self)
        return false;
    if (p->isr_count < min_isr) /* KIP-966: held below the minimum */
        return false;
    for (int32_t i = 0; i < p->isr_count; i++)
        if (p->isr[i] != self)
            return false;
    return true;
}

static int32_t *copy_ids(const int32_t *ids, int32_t count)
{
    int32_t *out = malloc((count > 0 ? (size_t)count : 1) * sizeof *out);
    if (out && count > 0)
        memcpy(out, ids, (size_t)count * sizeof *out);
    return out;
}

/* Record part's state for a hosted partition whose log is log (a new
 * reference, taken over). Returns whether listeners must hear of it: a new
 * partition, or a new leader epoch. */
static bool record_state(struct replica_manager *rm, const char *topic, const struct metadata_partition *part,
                         int32_t high_watermark_min_isr, struct partition_log *log)
{
    int32_t *replicas = copy_ids(part->replicas, part->replica_count);
    int32_t *isr = copy_ids(part->isr, part->isr_count);
    struct hosted_partition *fresh = calloc(1, sizeof *fresh);
    char *name = strdup(topic);
    pthread_mutex_lock(&rm->lock);
    struct hosted_partition **link = find_link(rm, topic, part->partition_index);
    struct hosted_partition *hp = *link;
    bool is_new = hp == NULL;
    if (!replicas || !isr || (is_new && (!fresh || !name))) {
        pthread_mutex_unlock(&rm->lock);
        logger_error("replica", "out of memory recording %s-%d", topic, part->partition_index);
        free(replicas);
        free(isr);
        free(fresh);
        free(name);
        partition_log_close(log);
        return false;
    }
    if (is_new) {
        hp = fresh;
        hp->topic = name;
        hp->partition = part->partition_index;
        hp->log = log;
        hp->leader_epoch = -1;
        hp->next = *link;
        *link = hp;
        rm->hosted++;
        fresh = NULL;
        name = NULL;
    } else {
        if (hp->role == REPLICA_ROLE_LEADER)
            rm->leaders--;
        if (hp->log != log) { /* the same log: the manager keeps one reference */
            partition_log_close(hp->log);
            hp->log = log;
        } else {
            partition_log_close(log);
        }
    }
    bool epoch_changed = hp->leader_epoch != part->leader_epoch;
    hp->role = part->leader == rm->node_id ? REPLICA_ROLE_LEADER : REPLICA_ROLE_FOLLOWER;
    if (hp->role == REPLICA_ROLE_LEADER)
        rm->leaders++;
    hp->leader_id = part->leader;
    hp->leader_epoch = part->leader_epoch;
    hp->partition_epoch = part->partition_epoch;
    free(hp->replicas);
    free(hp->isr);
    hp->replicas = replicas;
    hp->replica_count = part->replica_count;
    hp->isr = isr;
    hp->isr_count = part->isr_count;
    hp->high_watermark_min_isr = high_watermark_min_isr;
    if (is_new)
        maybe_grow(rm);
    pthread_mutex_unlock(&rm->lock);
    free(fresh);
    free(name);
    return is_new || epoch_changed;
}

/* A partition of a created or changed topic: host it (creating its log,
 * applying cfg, taking leadership) or stop hosting it. */
static void apply_partition(struct replica_manager *rm, const struct metadata_topic *t,
                            const struct metadata_partition *part, const struct log_config *cfg,
                            int32_t high_watermark_min_isr)
{
    int32_t p = part->partition_index;
    if (!contains(part->replicas, part->replica_count, rm->node_id)) {
        bool was_hosted = replica_manager_lookup(rm, t->name, p, NULL, NULL);
        if (was_hosted) /* reassigned away from this broker */
            unhost(rm, t->name, p);
        return;
    }
    char err[256] = "";
    struct partition_log *log = NULL;
    if (log_manager_create(rm->logs, t->name, p, t->topic_id.bytes, cfg, &log, err, sizeof err) != KAFKA_ERR_NONE ||
        !log) {
        logger_error("replica", "cannot create the log of %s-%d: %s", t->name, p, err);
        return;
    }
    /* A log that already existed (loaded at start, or a changed topic)
     * still carries the settings it was opened with. */
    if (partition_log_set_config(log, cfg))
        logger_info("replica", "%s-%d: applied the topic's current configs", t->name, p);
    bool leader = part->leader == rm->node_id;
    /* As Kafka on becoming leader: the epoch starts at the log end. */
    if (leader)
        partition_log_assign_leader_epoch(log, part->leader_epoch);
    int32_t min_isr = high_watermark_min_isr < part->replica_count ? high_watermark_min_isr : part->replica_count;
    partition_log_set_high_watermark_tracks_end(log, high_watermark_tracks_end(part, rm->node_id, min_isr));
    if (record_state(rm, t->name, part, min_isr, log))
        notify(rm, t->name, p, leader, part->leader_epoch);
}

/* Under apply_lock: rebuilds rm->layered when this broker's dynamic
 * configs changed; returns true then. A set that does not build (values
 * inconsistent with the static config) is logged and the last good one
 * kept. */
static bool refresh_layered(struct replica_manager *rm, const struct metadata_image *old_image,
                            const struct metadata_image *new_image)
{
    if (!metadata_broker_configs_changed(old_image, new_image, rm->node_id))
        return false;
    struct broker_config *fresh = NULL;
    char err[256] = "";
    if (metadata_broker_config_layered(new_image, rm->config, rm->node_id, NULL, 0, false, &fresh, err, sizeof err) !=
        0) {
        logger_warn("replica", "dynamic broker configs not applied: %s", err);
        return false;
    }
    config_free(rm->layered);
    rm->layered = fresh;
    logger_info("replica", "applied the dynamic broker configs to topic defaults");
    return true;
}

void replica_manager_on_metadata(void *ctx, const struct metadata_image *old_image,
                                 const struct metadata_image *new_image)
{
    struct replica_manager *rm = ctx;
    struct metadata_delta delta;
    if (metadata_delta_compute(old_image, new_image, &delta) != 0) {
        logger_error("replica", "out of memory computing a metadata delta");
        return;
    }
    pthread_mutex_lock(&rm->apply_lock);
    bool defaults_changed = refresh_layered(rm, old_image, new_image);
    /* eligible.leader.replicas.version turned on or off reaches every topic. */
    defaults_changed |= old_image && old_image->elr_version != new_image->elr_version;
    const struct broker_config *config = rm->layered ? rm->layered : rm->config;
    bool elr_on = new_image->elr_version >= 1;
    for (int32_t i = 0; i < delta.deleted_count; i++) {
        const struct metadata_topic *t = delta.deleted[i];
        for (int32_t p = 0; p < t->partition_count; p++)
            if (t->partitions[p].present)
                unhost(rm, t->name, p);
    }
    const struct metadata_topic **lists[2] = {delta.created, delta.changed};
    int32_t counts[2] = {delta.created_count, delta.changed_count};
    for (int l = 0; l < 2; l++) {
        for (int32_t i = 0; i < counts[l]; i++) {
            const struct metadata_topic *t = lists[l][i];
            struct log_config cfg;
            replica_log_config(config, t, &cfg);
            int32_t hw_min_isr = elr_on ? replica_min_insync_replicas(config, t) : 0;
            for (int32_t p = 0; p < t->partition_count; p++)
                if (t->partitions[p].present)
                    apply_partition(rm, t, &t->partitions[p], &cfg, hw_min_isr);
        }
    }
    /* New broker defaults reach every topic, changed or not. */
    for (int32_t i = 0; defaults_changed && old_image && i < new_image->topic_count; i++) {
        const struct metadata_topic *t = new_image->topics[i];
        struct log_config cfg;
        replica_log_config(config, t, &cfg);
        int32_t hw_min_isr = elr_on ? replica_min_insync_replicas(config, t) : 0;
        for (int32_t p = 0; p < t->partition_count; p++)
            if (t->partitions[p].present && replica_manager_lookup(rm, t->name, p, NULL, NULL))
                apply_partition(rm, t, &t->partitions[p], &cfg, hw_min_isr);
    }
    pthread_mutex_unlock(&rm->apply_lock);
    metadata_delta_free(&delta);
}

static void copy_ids_capped(int32_t *dst, const int32_t *src, int32_t count)
{
    int32_t n = count < REPLICA_INFO_MAX_REPLICAS ? count : REPLICA_INFO_MAX_REPLICAS;
    if (n > 0)
        memcpy(dst, src, (size_t)n * sizeof *dst);
}

bool replica_manager_lookup(struct replica_manager *rm, const char *topic, int32_t partition,
                            struct replica_partition_info *out, struct partition_log **log)
{
    pthread_mutex_lock(&rm->lock);
    struct hosted_partition *hp = *find_link(rm, topic, partition);
    if (hp && out) {
        memset(out, 0, sizeof *out);
        out->role = hp->role;
        out->leader_id = hp->leader_id;
        out->leader_epoch = hp->leader_epoch;
        out->partition_epoch = hp->partition_epoch;
        out->replica_count = hp->replica_count;
        out->isr_count = hp->isr_count;
        out->high_watermark_min_isr = hp->high_watermark_min_isr;
        copy_ids_capped(out->replicas, hp->replicas, hp->replica_count);
        copy_ids_capped(out->isr, hp->isr, hp->isr_count);
    }
    if (hp && log) {
        partition_log_retain(hp->log);
        *log = hp->log;
    }
    pthread_mutex_unlock(&rm->lock);
    return hp != NULL;
}

size_t replica_manager_hosted_count(struct replica_manager *rm)
{
    pthread_mutex_lock(&rm->lock);
    size_t n = rm->hosted;
    pthread_mutex_unlock(&rm->lock);
    return n;
}

size_t replica_manager_leader_count(struct replica_manager *rm)
{
    pthread_mutex_lock(&rm->lock);
    size_t n = rm->leaders;
    pthread_mutex_unlock(&rm->lock);
    return n;
}

int64_t replica_manager_update_high_watermark(struct replica_manager *rm, const char *topic, int32_t partition,
                                              int64_t offset)
{
    struct partition_log *log = NULL;
    if (!replica_manager_lookup(rm, topic, partition, NULL, &log))
        return -1;
    int64_t hw = partition_log_update_high_watermark(log, offset);
    partition_log_close(log);
    return hw;
}

/* What a new listener is told of one hosted partition. The topic is the
 * entry's own: under apply_lock no entry comes or goes. */
struct leadership_snapshot {
    const char *topic;
    int32_t partition;
    bool leader;
    int32_t leader_epoch;
};

/* Under apply_lock and lock: the leadership of every hosted partition
 * (free the array; its topics stay valid while apply_lock is held).
 * Returns the count, or -1 when out of memory. */
static ssize_t snapshot_leadership(struct replica_manager *rm, struct leadership_snapshot **out)
{
    struct leadership_snapshot *snap = calloc(rm->hosted ? rm->hosted : 1, sizeof *snap);
    if (!snap)
        return -1;
    size_t n = 0;
    for (size_t b = 0; b < rm->bucket_count; b++) {
        for (struct hosted_partition *hp = rm->buckets[b]; hp; hp = hp->next) {
            snap[n].topic = hp->topic;
            snap[n].partition = hp->partition;
            snap[n].leader = hp->role == REPLICA_ROLE_LEADER;
            snap[n].leader_epoch = hp->leader_epoch;
            n++;
        }
    }
    *out = snap;
    return (ssize_t)n;
}

int replica_manager_add_leadership_listener(struct replica_manager *rm, replica_leadership_fn fn, void *ctx)
{
    pthread_mutex_lock(&rm->apply_lock);
    pthread_mutex_lock(&rm->lock);
    struct leadership_snapshot *snap = NULL;
    ssize_t n = snapshot_leadership(rm, &snap);
    if (n >= 0 && rm->listener_count == rm->listener_cap) {
        size_t cap = rm->listener_cap ? rm->listener_cap * 2 : 4;
        struct leadership_listener *grown = realloc(rm->listeners, cap * sizeof *grown);
        if (grown) {
            rm->listeners = grown;
            rm->listener_cap = cap;
        }
    }
    int id = -1;
    if (n >= 0 && rm->listener_count < rm->listener_cap) {
        id = rm->next_listener_id++;
        rm->listeners[rm->listener_count++] = (struct leadership_listener){id, fn, ctx};
    }
    pthread_mutex_unlock(&rm->lock);
    /* The partitions hosted already, as if they had just appeared. */
    for (ssize_t i = 0; id > 0 && i < n; i++)
        fn(ctx, snap[i].topic, snap[i].partition, snap[i].leader, snap[i].leader_epoch);
    free(snap);
    pthread_mutex_unlock(&rm->apply_lock);
    return id;
}

void replica_manager_remove_leadership_listener(struct replica_manager *rm, int id)
{
    /* Waits out an apply in progress: no call follows the return. */
    pthread_mutex_lock(&rm->apply_lock);
    pthread_mutex_lock(&rm->lock);
    for (size_t i = 0; i < rm->listener_count; i++) {
        if (rm->listeners[i].id == id) {
            memmove(&rm->listeners[i], &rm->listeners[i + 1], (rm->listener_count - i - 1) * sizeof *rm->listeners);
            rm->listener_count--;
            break;
        }
    }
    pthread_mutex_unlock(&rm->lock);
    pthread_mutex_unlock(&rm->apply_lock);
}
