/* Per-partition shard states and the loader thread; see coordinator_runtime.h. */
#include "coordinator/coordinator_runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/coordinator_partition.h"
#include "protocol/generated/errors.h"
#include "util/logger.h"

struct coordinator_shards {
    pthread_mutex_t lock; /* a leaf: nothing else is taken under it */
    int32_t partition_count;
    enum coordinator_shard_state *state;
    int32_t *epoch;
    /* Bumped by every leadership change, so the loader can tell that a load
     * it ran has been overtaken by a later change. */
    uint64_t *generation;
};

struct coordinator_shards *coordinator_shards_create(int32_t partition_count)
{
    if (partition_count <= 0)
        return NULL;
    struct coordinator_shards *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->partition_count = partition_count;
    s->state = calloc((size_t)partition_count, sizeof *s->state);
    s->epoch = malloc((size_t)partition_count * sizeof *s->epoch);
    s->generation = calloc((size_t)partition_count, sizeof *s->generation);
    if (!s->state || !s->epoch || !s->generation) {
        coordinator_shards_free(s);
        return NULL;
    }
    for (int32_t p = 0; p < partition_count; p++) {
        s->state[p] = COORDINATOR_SHARD_NOT_LEADER;
        s->epoch[p] = -1;
    }
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void coordinator_shards_free(struct coordinator_shards *s)
{
    if (!s)
        return;
    if (s->state && s->epoch && s->generation)
        pthread_mutex_destroy(&s->lock);
    free(s->state);
    free(s->epoch);
    free(s->generation);
    free(s);
}

int32_t coordinator_shards_partition_count(const struct coordinator_shards *s)
{
    return s->partition_count;
}

int32_t coordinator_shards_partition_of(const struct coordinator_shards *s, const char *key)
{
    return coordinator_partition_for(key ? key : "", key ? strlen(key) : 0, s->partition_count);
}

enum coordinator_shard_state coordinator_shards_state(struct coordinator_shards *s, int32_t partition)
{
    if (partition < 0 || partition >= s->partition_count)
        return COORDINATOR_SHARD_NOT_LEADER;
    pthread_mutex_lock(&s->lock);
    enum coordinator_shard_state st = s->state[partition];
    pthread_mutex_unlock(&s->lock);
    return st;
}

int16_t coordinator_shards_serving(struct coordinator_shards *s, int32_t partition)
{
    switch (coordinator_shards_state(s, partition)) {
    case COORDINATOR_SHARD_ACTIVE:
        return KAFKA_ERR_NONE;
    case COORDINATOR_SHARD_LOADING:
        return KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS;
    case COORDINATOR_SHARD_NOT_LEADER:
    case COORDINATOR_SHARD_FAILED:
        break;
    }
    return KAFKA_ERR_NOT_COORDINATOR;
}

int16_t coordinator_shards_serving_key(struct coordinator_shards *s, const char *key)
{
    return coordinator_shards_serving(s, coordinator_shards_partition_of(s, key));
}

bool coordinator_shards_any_loading(struct coordinator_shards *s)
{
    bool loading = false;
    pthread_mutex_lock(&s->lock);
    for (int32_t p = 0; p < s->partition_count && !loading; p++)
        loading = s->state[p] == COORDINATOR_SHARD_LOADING;
    pthread_mutex_unlock(&s->lock);
    return loading;
}

int32_t coordinator_shards_epoch(struct coordinator_shards *s, int32_t partition)
{
    if (partition < 0 || partition >= s->partition_count)
        return -1;
    pthread_mutex_lock(&s->lock);
    int32_t epoch = s->epoch[partition];
    pthread_mutex_unlock(&s->lock);
    return epoch;
}

/* ---- the runtime ---- */

struct registration {
    char *topic;
    struct coordinator_shards *shards;
    const struct coordinator_shard_ops *ops;
    void *coordinator;
};

/* One queued change. */
struct shard_event {
    struct registration *reg;
    int32_t partition;
    bool load; /* false: unload */
    int32_t epoch;
    uint64_t generation; /* of a load: the partition's generation when queued */
    struct shard_event *next;
};

/* Thread-safety: lock guards the registrations, the queue and the idle and
 * error fields; the loader thread is the only one calling the hooks. */
struct coordinator_runtime {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* work queued, stop, or the queue drained */
    pthread_t thread;
    bool stopping;
    bool running; /* the loader is inside a hook */
    struct registration *regs;
    size_t reg_count;
    struct shard_event *head, *tail;
    char first_error[512]; /* "" when no load failed since the last wait_idle */
};

static void run_event(struct coordinator_runtime *rt, const struct shard_event *ev)
{
    struct registration *reg = ev->reg;
    struct coordinator_shards *s = reg->shards;
    if (!ev->load) {
        reg->ops->unload(reg->coordinator, ev->partition);
        logger_info("coordinator", "%s-%d unloaded", reg->topic, (int)ev->partition);
        return;
    }
    pthread_mutex_lock(&s->lock);
    bool current = s->generation[ev->partition] == ev->generation;
    pthread_mutex_unlock(&s->lock);
    if (!current)
        return; /* overtaken: the change that did it is queued behind */
    char err[256] = "";
    int rc = reg->ops->load(reg->coordinator, ev->partition, ev->epoch, err, sizeof err);
    if (rc != 0)
        reg->ops->unload(reg->coordinator, ev->partition); /* nothing half-loaded stays */
    pthread_mutex_lock(&s->lock);
    if (s->generation[ev->partition] == ev->generation)
        s->state[ev->partition] = rc == 0 ? COORDINATOR_SHARD_ACTIVE : COORDINATOR_SHARD_FAILED;
    pthread_mutex_unlock(&s->lock);
    if (rc == 0) {
        logger_debug("coordinator", "%s-%d loaded at coordinator epoch %d", reg->topic, (int)ev->partition,
                     (int)ev->epoch);
        return;
    }
    logger_error("coordinator", "cannot load %s-%d: %s", reg->topic, (int)ev->partition, err);
    pthread_mutex_lock(&rt->lock);
    if (!rt->first_error[0])
        snprintf(rt->first_error, sizeof rt->first_error, "cannot load %s-%d: %s", reg->topic, (int)ev->partition, err);
    pthread_mutex_unlock(&rt->lock);
}

static void *loader_main(void *arg)
{
    struct coordinator_runtime *rt = arg;
    pthread_mutex_lock(&rt->lock);
    for (;;) {
        while (!rt->stopping && !rt->head)
            pthread_cond_wait(&rt->cond, &rt->lock);
        if (rt->stopping)
            break;
        struct shard_event *ev = rt->head;
        rt->head = ev->next;
        if (!rt->head)
            rt->tail = NULL;
        rt->running = true;
        pthread_mutex_unlock(&rt->lock);
        run_event(rt, ev);
        free(ev);
        pthread_mutex_lock(&rt->lock);
        rt->running = false;
        pthread_cond_broadcast(&rt->cond);
    }
    pthread_mutex_unlock(&rt->lock);
    return NULL;
}

int coordinator_runtime_create(struct coordinator_runtime **out)
{
    struct coordinator_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return -1;
    pthread_mutex_init(&rt->lock, NULL);
    pthread_cond_init(&rt->cond, NULL);
    if (pthread_create(&rt->thread, NULL, loader_main, rt) != 0) {
        pthread_cond_destroy(&rt->cond);
        pthread_mutex_destroy(&rt->lock);
        free(rt);
        return -1;
    }
    *out = rt;
    return 0;
}

void coordinator_runtime_destroy(struct coordinator_runtime *rt)
{
    if (!rt)
        return;
    pthread_mutex_lock(&rt->lock);
    rt->stopping = true;
    pthread_cond_broadcast(&rt->cond);
    pthread_mutex_unlock(&rt->lock);
    pthread_join(rt->thread, NULL);
    while (rt->head) {
        struct shard_event *ev = rt->head;
        rt->head = ev->next;
        free(ev);
    }
    for (size_t i = 0; i < rt->reg_count; i++)
        free(rt->regs[i].topic);
    free(rt->regs);
    pthread_cond_destroy(&rt->cond);
    pthread_mutex_destroy(&rt->lock);
    free(rt);
}

int coordinator_runtime_register(struct coordinator_runtime *rt, const char *topic, struct coordinator_shards *shards,
                                 const struct coordinator_shard_ops *ops, void *coordinator)
{
    if (!rt || !topic || !shards || !ops || !ops->load || !ops->unload)
        return -1;
    pthread_mutex_lock(&rt->lock);
    int rc = -1;
    /* Fixed size after start-up in practice; events point into regs, so
     * registering is refused once anything is queued. */
    if (rt->head || rt->running)
        goto out;
    struct registration *grown = realloc(rt->regs, (rt->reg_count + 1) * sizeof *grown);
    if (!grown)
        goto out;
    rt->regs = grown;
    char *name = strdup(topic);
    if (!name)
        goto out;
    rt->regs[rt->reg_count++] = (struct registration){
        .topic = name, .shards = shards, .ops = ops, .coordinator = coordinator};
    rc = 0;
out:
    pthread_mutex_unlock(&rt->lock);
    return rc;
}

/* Caller holds rt->lock. */
static void enqueue(struct coordinator_runtime *rt, struct shard_event *ev)
{
    if (rt->tail)
        rt->tail->next = ev;
    else
        rt->head = ev;
    rt->tail = ev;
    pthread_cond_broadcast(&rt->cond);
}

static struct shard_event *new_event(struct registration *reg, int32_t partition, bool load, int32_t epoch,
                                     uint64_t generation)
{
    struct shard_event *ev = calloc(1, sizeof *ev);
    if (ev)
        *ev = (struct shard_event){
            .reg = reg, .partition = partition, .load = load, .epoch = epoch, .generation = generation};
    return ev;
}

void coordinator_runtime_on_leadership(void *ctx, const char *topic, int32_t partition, bool became_leader,
                                       int32_t leader_epoch)
{
    struct coordinator_runtime *rt = ctx;
    if (!rt || !topic)
        return;
    pthread_mutex_lock(&rt->lock);
    struct registration *reg = NULL;
    for (size_t i = 0; i < rt->reg_count && !reg; i++)
        if (strcmp(rt->regs[i].topic, topic) == 0)
            reg = &rt->regs[i];
    if (!reg || partition < 0 || partition >= reg->shards->partition_count || rt->stopping) {
        pthread_mutex_unlock(&rt->lock);
        return;
    }
    struct coordinator_shards *s = reg->shards;
    pthread_mutex_lock(&s->lock);
    enum coordinator_shard_state was = s->state[partition];
    bool led = was == COORDINATOR_SHARD_LOADING || was == COORDINATOR_SHARD_ACTIVE;
    bool drop = false, load = false;
    if (became_leader) {
        /* A repeated notice of the same (or an older) term changes nothing. */
        if (led && leader_epoch <= s->epoch[partition])
            goto unchanged;
        drop = was != COORDINATOR_SHARD_NOT_LEADER;
        load = true;
    } else {
        if (was == COORDINATOR_SHARD_NOT_LEADER)
            goto unchanged;
        drop = true;
    }
    struct shard_event *unload_ev = drop ? new_event(reg, partition, false, -1, 0) : NULL;
    struct shard_event *load_ev = load ? new_event(reg, partition, true, leader_epoch, s->generation[partition] + 1)
                                       : NULL;
    if ((drop && !unload_ev) || (load && !load_ev)) {
        free(unload_ev);
        free(load_ev);
        logger_error("coordinator", "out of memory queueing a leadership change of %s-%d", topic, (int)partition);
        goto unchanged;
    }
    s->generation[partition]++;
    s->state[partition] = load ? COORDINATOR_SHARD_LOADING : COORDINATOR_SHARD_NOT_LEADER;
    s->epoch[partition] = load ? leader_epoch : -1;
    pthread_mutex_unlock(&s->lock);
    if (unload_ev)
        enqueue(rt, unload_ev);
    if (load_ev)
        enqueue(rt, load_ev);
    pthread_mutex_unlock(&rt->lock);
    return;
unchanged:
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_unlock(&rt->lock);
}

int coordinator_runtime_wait_idle(struct coordinator_runtime *rt, char *err, size_t errlen)
{
    pthread_mutex_lock(&rt->lock);
    while (!rt->stopping && (rt->head || rt->running))
        pthread_cond_wait(&rt->cond, &rt->lock);
    int rc = rt->first_error[0] ? -1 : 0;
    if (rc != 0)
        snprintf(err, errlen, "%s", rt->first_error);
    rt->first_error[0] = '\0';
    pthread_mutex_unlock(&rt->lock);
    return rc;
}
