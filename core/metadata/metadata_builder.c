/* Builder: base image + changes -> new image, copying topics only when they change. */
#include "metadata/metadata_builder.h"
#include "metadata/metadata_image_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Partition ids beyond this are treated as corrupt input rather than allocated. */
#define METADATA_MAX_PARTITIONS 1000000

struct metadata_builder {
    struct metadata_image *img; /* topics unsorted while building; sorted in finish */
    bool *owned;                /* owned[i]: img->topics[i] is private to this builder */
    int32_t topic_cap;
    int32_t last_hit; /* cache: records of a batch usually touch the same topic */
    bool dirty_index;
};

static char *dup_n(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (out) {
        memcpy(out, s, n);
        out[n] = '\0';
    }
    return out;
}

static char *dup_opt(const char *s)
{
    return s ? dup_n(s, strlen(s)) : NULL;
}

static int32_t *dup_ints(const int32_t *v, int32_t n)
{
    if (n <= 0)
        return NULL;
    int32_t *out = malloc((size_t)n * sizeof(*out));
    if (out)
        memcpy(out, v, (size_t)n * sizeof(*out));
    return out;
}

static int fail(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
    return -1;
}

static int broker_copy(struct metadata_broker *dst, const struct metadata_broker *src)
{
    *dst = *src;
    dst->rack = NULL;
    dst->endpoints = NULL;
    dst->endpoint_count = 0;
    if (src->rack && !(dst->rack = dup_opt(src->rack)))
        return -1;
    if (src->endpoint_count > 0) {
        dst->endpoints = calloc((size_t)src->endpoint_count, sizeof(*dst->endpoints));
        if (!dst->endpoints)
            return -1;
        for (int32_t i = 0; i < src->endpoint_count; i++) {
            dst->endpoint_count = i + 1;
            struct metadata_endpoint *e = &dst->endpoints[i];
            *e = src->endpoints[i];
            e->listener = dup_opt(src->endpoints[i].listener);
            e->host = dup_opt(src->endpoints[i].host);
            if (!e->listener || !e->host)
                return -1;
        }
    }
    return 0;
}

static int partition_copy(struct metadata_partition *dst, const struct metadata_partition *src)
{
    *dst = *src;
    dst->replicas = dup_ints(src->replicas, src->replica_count);
    dst->isr = dup_ints(src->isr, src->isr_count);
    dst->adding = dup_ints(src->adding, src->adding_count);
    dst->removing = dup_ints(src->removing, src->removing_count);
    dst->elr = dup_ints(src->elr, src->elr_count);
    dst->last_known_elr = dup_ints(src->last_known_elr, src->last_known_elr_count);
    if ((src->replica_count > 0 && !dst->replicas) || (src->isr_count > 0 && !dst->isr) ||
        (src->adding_count > 0 && !dst->adding) || (src->removing_count > 0 && !dst->removing) ||
        (src->elr_count > 0 && !dst->elr) || (src->last_known_elr_count > 0 && !dst->last_known_elr))
        return -1;
    return 0;
}

static struct metadata_topic *topic_copy(const struct metadata_topic *src)
{
    struct metadata_topic *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    atomic_init(&t->refcount, 1);
    t->topic_id = src->topic_id;
    t->is_internal = src->is_internal;
    if (!(t->name = dup_opt(src->name)))
        goto oom;
    if (src->partition_count > 0) {
        t->partitions = calloc((size_t)src->partition_count, sizeof(*t->partitions));
        if (!t->partitions)
            goto oom;
        for (int32_t i = 0; i < src->partition_count; i++) {
            t->partition_count = i + 1;
            if (partition_copy(&t->partitions[i], &src->partitions[i]) != 0)
                goto oom;
        }
    }
    if (src->config_count > 0) {
        t->configs = calloc((size_t)src->config_count, sizeof(*t->configs));
        if (!t->configs)
            goto oom;
        for (int32_t i = 0; i < src->config_count; i++) {
            t->config_count = i + 1;
            t->configs[i].name = dup_opt(src->configs[i].name);
            t->configs[i].value = dup_opt(src->configs[i].value);
            if (!t->configs[i].name || !t->configs[i].value)
                goto oom;
        }
    }
    return t;
oom:
    metadata_topic_free(t);
    return NULL;
}

struct metadata_builder *metadata_builder_new(const struct metadata_image *base)
{
    struct metadata_builder *b = calloc(1, sizeof(*b));
    struct metadata_image *img = calloc(1, sizeof(*img));
    if (!b || !img) {
        free(b);
        free(img);
        return NULL;
    }
    b->img = img;
    b->dirty_index = true;
    atomic_init(&img->refcount, 1);
    img->last_offset = -1;
    img->controller_id = -1;
    if (!base)
        return b;
    img->last_offset = base->last_offset;
    img->controller_id = base->controller_id;
    img->metadata_version = base->metadata_version;
    img->elr_version = base->elr_version;
    img->next_producer_id = base->next_producer_id;
    if (base->cluster_id && !(img->cluster_id = dup_opt(base->cluster_id)))
        goto oom;
    if (base->broker_count > 0) {
        if (!(img->brokers = calloc((size_t)base->broker_count, sizeof(*img->brokers))))
            goto oom;
        for (int32_t i = 0; i < base->broker_count; i++) {
            img->broker_count = i + 1;
            if (broker_copy(&img->brokers[i], &base->brokers[i]) != 0)
                goto oom;
        }
    }
    if (base->broker_config_count > 0) {
        img->broker_configs = calloc((size_t)base->broker_config_count, sizeof(*img->broker_configs));
        if (!img->broker_configs)
            goto oom;
        for (int32_t i = 0; i < base->broker_config_count; i++) {
            img->broker_config_count = i + 1;
            struct metadata_broker_config *c = &img->broker_configs[i];
            c->resource = dup_opt(base->broker_configs[i].resource);
            c->name = dup_opt(base->broker_configs[i].name);
            c->value = dup_opt(base->broker_configs[i].value);
            if (!c->resource || !c->name || !c->value)
                goto oom;
        }
    }
    if (metadata_acls_copy(img, base) != 0 || metadata_scrams_copy(img, base) != 0 ||
        metadata_quotas_copy(img, base) != 0)
        goto oom;
    int32_t cap = base->topic_count > 16 ? base->topic_count + base->topic_count / 4 : 16;
    img->topics = malloc((size_t)cap * sizeof(*img->topics));
    b->owned = calloc((size_t)cap, sizeof(*b->owned));
    if (!img->topics || !b->owned)
        goto oom;
    b->topic_cap = cap;
    for (int32_t i = 0; i < base->topic_count; i++) {
        struct metadata_topic *t = base->topics[i];
        atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
        img->topics[i] = t;
    }
    img->topic_count = base->topic_count;
    return b;
oom:
    metadata_builder_free(b);
    return NULL;
}

void metadata_builder_free(struct metadata_builder *b)
{
    if (!b)
        return;
    metadata_image_free(b->img);
    free(b->owned);
    free(b);
}

struct metadata_image *metadata_builder_image_mut(struct metadata_builder *b)
{
    return b->img;
}

const struct metadata_image *metadata_builder_peek(struct metadata_builder *b)
{
    if (b->dirty_index && metadata_image_index(b->img) == 0)
        b->dirty_index = false;
    return b->img;
}

int metadata_builder_set_cluster(struct metadata_builder *b, const char *cluster_id, int32_t controller_id, char *err,
                                 size_t errlen)
{
    if (cluster_id) {
        char *copy = dup_opt(cluster_id);
        if (!copy)
            return fail(err, errlen, "out of memory");
        free(b->img->cluster_id);
        b->img->cluster_id = copy;
    }
    b->img->controller_id = controller_id;
    return 0;
}

int metadata_builder_set_next_producer_id(struct metadata_builder *b, int64_t next_producer_id, char *err,
                                          size_t errlen)
{
    /* Blocks only move forward, so an id is never handed out twice. */
    if (next_producer_id < b->img->next_producer_id) {
        snprintf(err, errlen, "producer id block moves backwards (%lld < %lld)", (long long)next_producer_id,
                 (long long)b->img->next_producer_id);
        return -1;
    }
    b->img->next_producer_id = next_producer_id;
    return 0;
}

int metadata_builder_set_feature(struct metadata_builder *b, const char *name, size_t name_len, int16_t level,
                                 char *err, size_t errlen)
{
    static const char metadata_version[] = "metadata.version";
    if (name_len == sizeof(metadata_version) - 1 && memcmp(name, metadata_version, name_len) == 0) {
        b->img->metadata_version = level;
        return 0;
    }
    static const char elr_version[] = METADATA_ELR_FEATURE;
    if (name_len == sizeof(elr_version) - 1 && memcmp(name, elr_version, name_len) == 0) {
        b->img->elr_version = level;
        return 0;
    }
    (void)err;
    (void)errlen;
    return 0; /* other features (kraft.version, group.version, ...) are not tracked yet */
}

/* ---- brokers ---- */

static int32_t broker_slot(const struct metadata_image *img, int32_t node_id, bool *found)
{
    int32_t lo = 0, hi = img->broker_count;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (img->brokers[mid].node_id < node_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < img->broker_count && img->brokers[lo].node_id == node_id;
    return lo;
}

int metadata_builder_register_broker(struct metadata_builder *b, const struct metadata_broker *broker, char *err,
                                     size_t errlen)
{
    struct metadata_image *img = b->img;
    struct metadata_broker copy;
    if (broker_copy(&copy, broker) != 0) {
        metadata_broker_clear(&copy);
        return fail(err, errlen, "out of memory");
    }
    bool found;
    int32_t at = broker_slot(img, broker->node_id, &found);
    if (found) {
        metadata_broker_clear(&img->brokers[at]);
        img->brokers[at] = copy;
        return 0;
    }
    struct metadata_broker *grown = realloc(img->brokers, (size_t)(img->broker_count + 1) * sizeof(*grown));
    if (!grown) {
        metadata_broker_clear(&copy);
        return fail(err, errlen, "out of memory");
    }
    img->brokers = grown;
    memmove(&grown[at + 1], &grown[at], (size_t)(img->broker_count - at) * sizeof(*grown));
    grown[at] = copy;
    img->broker_count++;
    return 0;
}

int metadata_builder_unregister_broker(struct metadata_builder *b, int32_t node_id, char *err, size_t errlen)
{
    struct metadata_image *img = b->img;
    bool found;
    int32_t at = broker_slot(img, node_id, &found);
    if (!found)
        return fail(err, errlen, "unregistering an unknown broker");
    metadata_broker_clear(&img->brokers[at]);
    memmove(&img->brokers[at], &img->brokers[at + 1], (size_t)(img->broker_count - at - 1) * sizeof(*img->brokers));
    img->broker_count--;
    return 0;
}

int metadata_builder_change_broker(struct metadata_builder *b, int32_t node_id, int64_t epoch, int fenced,
                                   int in_controlled_shutdown, char *err, size_t errlen)
{
    bool found;
    int32_t at = broker_slot(b->img, node_id, &found);
    if (!found)
        return fail(err, errlen, "change for an unknown broker");
    struct metadata_broker *br = &b->img->brokers[at];
    if (br->epoch != epoch)
        return fail(err, errlen, "change for a stale broker epoch");
    if (fenced >= 0)
        br->fenced = fenced != 0;
    if (in_controlled_shutdown >= 0)
        br->in_controlled_shutdown = in_controlled_shutdown != 0;
    return 0;
}

/* ---- topics ---- */

static int32_t topic_find_id(struct metadata_builder *b, const struct kafka_uuid *id)
{
    struct metadata_image *img = b->img;
    if (b->last_hit >= 0 && b->last_hit < img->topic_count &&
        memcmp(&img->topics[b->last_hit]->topic_id, id, sizeof(*id)) == 0)
        return b->last_hit;
    for (int32_t i = img->topic_count - 1; i >= 0; i--) {
        if (memcmp(&img->topics[i]->topic_id, id, sizeof(*id)) == 0) {
            b->last_hit = i;
            return i;
        }
    }
    return -1;
}

static int32_t topic_find_name(struct metadata_builder *b, const char *name, size_t len)
{
    struct metadata_image *img = b->img;
    for (int32_t i = img->topic_count - 1; i >= 0; i--) {
        const char *n = img->topics[i]->name;
        if (strncmp(n, name, len) == 0 && n[len] == '\0')
            return i;
    }
    return -1;
}

/* Copy-on-write: the topic at index i becomes private to the builder. */
static struct metadata_topic *topic_mut(struct metadata_builder *b, int32_t i)
{
    if (b->owned[i])
        return b->img->topics[i];
    struct metadata_topic *copy = topic_copy(b->img->topics[i]);
    if (!copy)
        return NULL;
    metadata_topic_release(b->img->topics[i]);
    b->img->topics[i] = copy;
    b->owned[i] = true;
    return copy;
}

static bool name_is_internal(const char *name)
{
    return strcmp(name, "__consumer_offsets") == 0 || strcmp(name, "__transaction_state") == 0;
}

int metadata_builder_add_topic(struct metadata_builder *b, const char *name, size_t name_len,
                               const struct kafka_uuid *id, char *err, size_t errlen)
{
    struct metadata_image *img = b->img;
    if (name_len == 0 || memchr(name, '\0', name_len))
        return fail(err, errlen, "topic record with an invalid name");
    if (topic_find_name(b, name, name_len) >= 0)
        return fail(err, errlen, "topic record for a name that already exists");
    if (topic_find_id(b, id) >= 0)
        return fail(err, errlen, "topic record for an id that already exists");
    if (img->topic_count == b->topic_cap) {
        int32_t cap = b->topic_cap ? b->topic_cap * 2 : 16;
        struct metadata_topic **topics = realloc(img->topics, (size_t)cap * sizeof(*topics));
        if (!topics)
            return fail(err, errlen, "out of memory");
        img->topics = topics;
        bool *owned = realloc(b->owned, (size_t)cap * sizeof(*owned));
        if (!owned)
            return fail(err, errlen, "out of memory");
        b->owned = owned;
        b->topic_cap = cap;
    }
    struct metadata_topic *t = calloc(1, sizeof(*t));
    if (!t || !(t->name = dup_n(name, name_len))) {
        free(t);
        return fail(err, errlen, "out of memory");
    }
    atomic_init(&t->refcount, 1);
    t->topic_id = *id;
    t->is_internal = name_is_internal(t->name);
    img->topics[img->topic_count] = t;
    b->owned[img->topic_count] = true;
    b->last_hit = img->topic_count;
    img->topic_count++;
    b->dirty_index = true;
    return 0;
}

int metadata_builder_remove_topic(struct metadata_builder *b, const struct kafka_uuid *id, char *err, size_t errlen)
{
    struct metadata_image *img = b->img;
    int32_t i = topic_find_id(b, id);
    if (i < 0)
        return fail(err, errlen, "remove of an unknown topic id");
    metadata_topic_release(img->topics[i]);
    /* Order does not matter until finish sorts. */
    img->topics[i] = img->topics[img->topic_count - 1];
    b->owned[i] = b->owned[img->topic_count - 1];
    img->topic_count--;
    b->last_hit = -1;
    b->dirty_index = true;
    return 0;
}

static struct metadata_partition *partition_slot(struct metadata_topic *t, int32_t index)
{
    if (index >= t->partition_count) {
        struct metadata_partition *grown = realloc(t->partitions, (size_t)(index + 1) * sizeof(*grown));
        if (!grown)
            return NULL;
        memset(&grown[t->partition_count], 0, (size_t)(index + 1 - t->partition_count) * sizeof(*grown));
        for (int32_t i = t->partition_count; i <= index; i++) {
            grown[i].partition_index = i;
            grown[i].leader = -1;
        }
        t->partitions = grown;
        t->partition_count = index + 1;
    }
    return &t->partitions[index];
}

int metadata_builder_set_partition(struct metadata_builder *b, const struct kafka_uuid *topic_id,
                                   const struct metadata_partition *p, char *err, size_t errlen)
{
    if (p->partition_index < 0 || p->partition_index >= METADATA_MAX_PARTITIONS)
        return fail(err, errlen, "partition record with an invalid partition id");
    int32_t i = topic_find_id(b, topic_id);
    if (i < 0)
        return fail(err, errlen, "partition record for an unknown topic id");
    struct metadata_topic *t = topic_mut(b, i);
    struct metadata_partition copy;
    if (!t || partition_copy(&copy, p) != 0) {
        if (t)
            metadata_partition_clear(&copy);
        return fail(err, errlen, "out of memory");
    }
    struct metadata_partition *slot = partition_slot(t, p->partition_index);
    if (!slot) {
        metadata_partition_clear(&copy);
        return fail(err, errlen, "out of memory");
    }
    metadata_partition_clear(slot);
    *slot = copy;
    slot->present = true;
    return 0;
}

int metadata_builder_change_partition(struct metadata_builder *b, const struct kafka_uuid *topic_id,
                                      const struct metadata_partition_change *c, char *err, size_t errlen)
{
    int32_t i = topic_find_id(b, topic_id);
    if (i < 0)
        return fail(err, errlen, "partition change for an unknown topic id");
    if (!metadata_topic_partition(b->img->topics[i], c->partition_index))
        return fail(err, errlen, "partition change for an unknown partition");
    struct metadata_topic *t = topic_mut(b, i);
    if (!t)
        return fail(err, errlen, "out of memory");
    struct metadata_partition *p = &t->partitions[c->partition_index];
    int32_t *isr = NULL, *replicas = NULL, *adding = NULL, *removing = NULL, *elr = NULL, *last_known = NULL;
    if ((c->isr && c->isr_count > 0 && !(isr = dup_ints(c->isr, c->isr_count))) ||
        (c->replicas && c->replica_count > 0 && !(replicas = dup_ints(c->replicas, c->replica_count))) ||
        (c->adding && c->adding_count > 0 && !(adding = dup_ints(c->adding, c->adding_count))) ||
        (c->removing && c->removing_count > 0 && !(removing = dup_ints(c->removing, c->removing_count))) ||
        (c->elr && c->elr_count > 0 && !(elr = dup_ints(c->elr, c->elr_count))) ||
        (c->last_known_elr && c->last_known_elr_count > 0 &&
         !(last_known = dup_ints(c->last_known_elr, c->last_known_elr_count)))) {
        free(isr);
        free(replicas);
        free(adding);
        free(removing);
        free(elr);
        return fail(err, errlen, "out of memory");
    }
    if (c->elr) {
        free(p->elr);
        p->elr = elr;
        p->elr_count = c->elr_count;
    }
    if (c->last_known_elr) {
        free(p->last_known_elr);
        p->last_known_elr = last_known;
        p->last_known_elr_count = c->last_known_elr_count;
    }
    if (c->adding) {
        free(p->adding);
        p->adding = adding;
        p->adding_count = c->adding_count;
    }
    if (c->removing) {
        free(p->removing);
        p->removing = removing;
        p->removing_count = c->removing_count;
    }
    if (c->isr) {
        free(p->isr);
        p->isr = isr;
        p->isr_count = c->isr_count;
    }
    if (c->replicas) {
        free(p->replicas);
        p->replicas = replicas;
        p->replica_count = c->replica_count;
    }
    /* As Kafka's PartitionRegistration.merge: a record naming a leader
     * (even the current one) bumps the leader epoch; every change bumps
     * the partition epoch. */
    if (c->leader != -2) {
        p->leader = c->leader;
        p->leader_epoch++;
    }
    p->partition_epoch++;
    return 0;
}

/* ---- configs ---- */

/* Inserts, replaces or (value NULL) deletes name in a sorted entry list. */
static int config_list_set(struct metadata_config_entry **list, int32_t *count, const char *name, size_t name_len,
                           const char *value, int32_t value_len)
{
    int32_t at = 0;
    int cmp = 1;
    for (; at < *count; at++) {
        cmp = strncmp((*list)[at].name, name, name_len);
        if (cmp == 0 && (*list)[at].name[name_len] != '\0')
            cmp = 1;
        if (cmp >= 0)
            break;
    }
    bool found = at < *count && cmp == 0;
    if (!value) {
        if (found) {
            free((*list)[at].name);
            free((*list)[at].value);
            memmove(&(*list)[at], &(*list)[at + 1], (size_t)(*count - at - 1) * sizeof(**list));
            (*count)--;
        }
        return 0;
    }
    char *v = dup_n(value, (size_t)value_len);
    if (!v)
        return -1;
    if (found) {
        free((*list)[at].value);
        (*list)[at].value = v;
        return 0;
    }
    char *n = dup_n(name, name_len);
    struct metadata_config_entry *grown = n ? realloc(*list, (size_t)(*count + 1) * sizeof(*grown)) : NULL;
    if (!grown) {
        free(n);
        free(v);
        return -1;
    }
    memmove(&grown[at + 1], &grown[at], (size_t)(*count - at) * sizeof(*grown));
    grown[at].name = n;
    grown[at].value = v;
    *list = grown;
    (*count)++;
    return 0;
}

static int broker_config_set(struct metadata_image *img, const char *resource, size_t resource_len, const char *name,
                             size_t name_len, const char *value, int32_t value_len)
{
    int32_t at = 0;
    int cmp = 1;
    for (; at < img->broker_config_count; at++) {
        const struct metadata_broker_config *c = &img->broker_configs[at];
        cmp = strncmp(c->resource, resource, resource_len);
        if (cmp == 0 && c->resource[resource_len] != '\0')
            cmp = 1;
        if (cmp == 0) {
            cmp = strncmp(c->name, name, name_len);
            if (cmp == 0 && c->name[name_len] != '\0')
                cmp = 1;
        }
        if (cmp >= 0)
            break;
    }
    bool found = at < img->broker_config_count && cmp == 0;
    struct metadata_broker_config *list = img->broker_configs;
    if (!value) {
        if (found) {
            free(list[at].resource);
            free(list[at].name);
            free(list[at].value);
            memmove(&list[at], &list[at + 1], (size_t)(img->broker_config_count - at - 1) * sizeof(*list));
            img->broker_config_count--;
        }
        return 0;
    }
    char *v = dup_n(value, (size_t)value_len);
    if (!v)
        return -1;
    if (found) {
        free(list[at].value);
        list[at].value = v;
        return 0;
    }
    char *r = dup_n(resource, resource_len);
    char *n = dup_n(name, name_len);
    struct metadata_broker_config *grown = r && n
                                               ? realloc(list, (size_t)(img->broker_config_count + 1) * sizeof(*grown))
                                               : NULL;
    if (!grown) {
        free(r);
        free(n);
        free(v);
        return -1;
    }
    memmove(&grown[at + 1], &grown[at], (size_t)(img->broker_config_count - at) * sizeof(*grown));
    grown[at] = (struct metadata_broker_config){.resource = r, .name = n, .value = v};
    img->broker_configs = grown;
    img->broker_config_count++;
    return 0;
}

int metadata_builder_set_config(struct metadata_builder *b, int8_t resource_type, const char *resource,
                                size_t resource_len, const char *name, size_t name_len, const char *value,
                                int32_t value_len, char *err, size_t errlen)
{
    if (name_len == 0 || memchr(name, '\0', name_len) || memchr(resource, '\0', resource_len) ||
        (value && (value_len < 0 || memchr(value, '\0', (size_t)value_len))))
        return fail(err, errlen, "config record with an invalid name or value");
    if (resource_type == METADATA_CONFIG_RESOURCE_BROKER) {
        if (broker_config_set(b->img, resource, resource_len, name, name_len, value, value_len) != 0)
            return fail(err, errlen, "out of memory");
        return 0;
    }
    if (resource_type != METADATA_CONFIG_RESOURCE_TOPIC)
        return fail(err, errlen, "config record for an unsupported resource type");
    int32_t i = topic_find_name(b, resource, resource_len);
    if (i < 0)
        return fail(err, errlen, "config record for an unknown topic");
    struct metadata_topic *t = topic_mut(b, i);
    if (!t || config_list_set(&t->configs, &t->config_count, name, name_len, value, value_len) != 0)
        return fail(err, errlen, "out of memory");
    return 0;
}

static int topic_name_cmp(const void *a, const void *b)
{
    const struct metadata_topic *x = *(const struct metadata_topic *const *)a;
    const struct metadata_topic *y = *(const struct metadata_topic *const *)b;
    return strcmp(x->name, y->name);
}

struct metadata_image *metadata_builder_finish(struct metadata_builder *b, int64_t last_offset)
{
    struct metadata_image *img = b->img;
    if (img->topic_count > 1)
        qsort(img->topics, (size_t)img->topic_count, sizeof(*img->topics), topic_name_cmp);
    if (last_offset >= 0)
        img->last_offset = last_offset;
    if (metadata_image_index(img) != 0) {
        metadata_builder_free(b);
        return NULL;
    }
    b->img = NULL;
    free(b->owned);
    free(b);
    return img;
}
