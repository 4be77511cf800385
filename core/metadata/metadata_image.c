/* Immutable metadata image: lookups, reference counting and freeing. */
#include "metadata/metadata_image.h"
#include "metadata/metadata_image_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

uint32_t metadata_hash_name(const char *name, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)name[i];
        h *= 16777619u;
    }
    return h;
}

uint32_t metadata_hash_id(const struct kafka_uuid *id)
{
    return metadata_hash_name((const char *)id->bytes, sizeof(id->bytes));
}

bool metadata_uuid_is_zero(const struct kafka_uuid *id)
{
    for (size_t i = 0; i < sizeof(id->bytes); i++)
        if (id->bytes[i] != 0)
            return false;
    return true;
}

void metadata_partition_clear(struct metadata_partition *p)
{
    free(p->replicas);
    free(p->isr);
    free(p->adding);
    free(p->removing);
    free(p->elr);
    free(p->last_known_elr);
    memset(p, 0, sizeof(*p));
}

void metadata_topic_free(struct metadata_topic *t)
{
    if (!t)
        return;
    for (int32_t i = 0; i < t->partition_count; i++)
        metadata_partition_clear(&t->partitions[i]);
    free(t->partitions);
    for (int32_t i = 0; i < t->config_count; i++) {
        free(t->configs[i].name);
        free(t->configs[i].value);
    }
    free(t->configs);
    free(t->name);
    free(t);
}

void metadata_topic_release(struct metadata_topic *t)
{
    if (t && atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) == 1)
        metadata_topic_free(t);
}

void metadata_broker_clear(struct metadata_broker *br)
{
    for (int32_t i = 0; i < br->endpoint_count; i++) {
        free(br->endpoints[i].listener);
        free(br->endpoints[i].host);
    }
    free(br->endpoints);
    free(br->rack);
    memset(br, 0, sizeof(*br));
}

void metadata_image_free(struct metadata_image *img)
{
    if (!img)
        return;
    for (int32_t i = 0; i < img->topic_count; i++)
        metadata_topic_release(img->topics[i]);
    free(img->topics);
    for (int32_t i = 0; i < img->broker_count; i++)
        metadata_broker_clear(&img->brokers[i]);
    free(img->brokers);
    for (int32_t i = 0; i < img->broker_config_count; i++) {
        free(img->broker_configs[i].resource);
        free(img->broker_configs[i].name);
        free(img->broker_configs[i].value);
    }
    free(img->broker_configs);
    metadata_acls_free(img);
    metadata_scrams_free(img);
    metadata_quotas_free(img);
    free(img->name_table);
    free(img->id_table);
    free(img->cluster_id);
    free(img);
}

const struct metadata_image *metadata_image_retain(const struct metadata_image *img)
{
    if (img) {
        struct metadata_image *m = (struct metadata_image *)img;
        atomic_fetch_add_explicit(&m->refcount, 1, memory_order_relaxed);
    }
    return img;
}

void metadata_image_release(const struct metadata_image *img)
{
    if (!img)
        return;
    struct metadata_image *m = (struct metadata_image *)img;
    if (atomic_fetch_sub_explicit(&m->refcount, 1, memory_order_acq_rel) == 1)
        metadata_image_free(m);
}

int metadata_image_index(struct metadata_image *img)
{
    uint32_t size = 16;
    while (size < (uint32_t)img->topic_count * 2u)
        size <<= 1;
    uint32_t *names = calloc(size, sizeof(*names));
    uint32_t *ids = calloc(size, sizeof(*ids));
    if (!names || !ids) {
        free(names);
        free(ids);
        return -1;
    }
    uint32_t mask = size - 1;
    for (int32_t i = 0; i < img->topic_count; i++) {
        const struct metadata_topic *t = img->topics[i];
        uint32_t slot = metadata_hash_name(t->name, strlen(t->name)) & mask;
        while (names[slot])
            slot = (slot + 1) & mask;
        names[slot] = (uint32_t)i + 1;
        slot = metadata_hash_id(&t->topic_id) & mask;
        while (ids[slot])
            slot = (slot + 1) & mask;
        ids[slot] = (uint32_t)i + 1;
    }
    free(img->name_table);
    free(img->id_table);
    img->name_table = names;
    img->id_table = ids;
    img->table_mask = mask;
    return 0;
}

const struct metadata_topic *metadata_image_topic_by_name(const struct metadata_image *img, const char *name,
                                                          size_t name_len)
{
    if (!img || !img->name_table || !name)
        return NULL;
    uint32_t slot = metadata_hash_name(name, name_len) & img->table_mask;
    while (img->name_table[slot]) {
        const struct metadata_topic *t = img->topics[img->name_table[slot] - 1];
        if (strlen(t->name) == name_len && memcmp(t->name, name, name_len) == 0)
            return t;
        slot = (slot + 1) & img->table_mask;
    }
    return NULL;
}

const struct metadata_topic *metadata_image_topic_by_id(const struct metadata_image *img, const struct kafka_uuid *id)
{
    if (!img || !img->id_table || !id)
        return NULL;
    uint32_t slot = metadata_hash_id(id) & img->table_mask;
    while (img->id_table[slot]) {
        const struct metadata_topic *t = img->topics[img->id_table[slot] - 1];
        if (memcmp(t->topic_id.bytes, id->bytes, sizeof(id->bytes)) == 0)
            return t;
        slot = (slot + 1) & img->table_mask;
    }
    return NULL;
}

const struct metadata_broker *metadata_image_broker(const struct metadata_image *img, int32_t node_id)
{
    if (!img)
        return NULL;
    int32_t lo = 0, hi = img->broker_count - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (img->brokers[mid].node_id == node_id)
            return &img->brokers[mid];
        if (img->brokers[mid].node_id < node_id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

const struct metadata_endpoint *metadata_broker_link_endpoint(const struct metadata_broker *b, const char *listener,
                                                              bool tls)
{
    for (int32_t i = 0; b && listener && listener[0] && i < b->endpoint_count; i++)
        if (strcasecmp(b->endpoints[i].listener, listener) == 0)
            return &b->endpoints[i];
    for (int32_t i = 0; b && !tls && i < b->endpoint_count; i++)
        if (b->endpoints[i].security_protocol == 0)
            return &b->endpoints[i];
    return NULL;
}

const struct metadata_partition *metadata_topic_partition(const struct metadata_topic *topic, int32_t partition)
{
    if (!topic || partition < 0 || partition >= topic->partition_count)
        return NULL;
    const struct metadata_partition *p = &topic->partitions[partition];
    return p->present ? p : NULL;
}

const char *metadata_topic_config(const struct metadata_topic *topic, const char *name)
{
    if (!topic || !name)
        return NULL;
    for (int32_t i = 0; i < topic->config_count; i++)
        if (strcmp(topic->configs[i].name, name) == 0)
            return topic->configs[i].value;
    return NULL;
}

int32_t metadata_image_live_broker_count(const struct metadata_image *img)
{
    int32_t live = 0;
    for (int32_t i = 0; img && i < img->broker_count; i++)
        if (!img->brokers[i].fenced)
            live++;
    return live;
}

int32_t metadata_partition_offline_replicas(const struct metadata_image *img, const struct metadata_partition *p,
                                            int32_t *out, int32_t max)
{
    int32_t n = 0;
    for (int32_t i = 0; p && i < p->replica_count; i++) {
        const struct metadata_broker *br = metadata_image_broker(img, p->replicas[i]);
        if (br && !br->fenced)
            continue;
        if (n < max)
            out[n] = p->replicas[i];
        n++;
    }
    return n;
}

static bool str_equal(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool ints_equal(const int32_t *a, int32_t na, const int32_t *b, int32_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof(*a)) == 0);
}

static bool broker_equal(const struct metadata_broker *a, const struct metadata_broker *b)
{
    if (a->node_id != b->node_id || a->epoch != b->epoch || a->fenced != b->fenced ||
        a->in_controlled_shutdown != b->in_controlled_shutdown || !str_equal(a->rack, b->rack) ||
        memcmp(&a->incarnation_id, &b->incarnation_id, sizeof(a->incarnation_id)) != 0 ||
        a->endpoint_count != b->endpoint_count)
        return false;
    for (int32_t i = 0; i < a->endpoint_count; i++) {
        const struct metadata_endpoint *x = &a->endpoints[i], *y = &b->endpoints[i];
        if (!str_equal(x->listener, y->listener) || !str_equal(x->host, y->host) || x->port != y->port ||
            x->security_protocol != y->security_protocol)
            return false;
    }
    return true;
}

static bool topic_equal(const struct metadata_topic *a, const struct metadata_topic *b)
{
    if (a == b)
        return true;
    if (strcmp(a->name, b->name) != 0 || memcmp(&a->topic_id, &b->topic_id, sizeof(a->topic_id)) != 0 ||
        a->is_internal != b->is_internal || a->partition_count != b->partition_count ||
        a->config_count != b->config_count)
        return false;
    for (int32_t i = 0; i < a->partition_count; i++) {
        const struct metadata_partition *x = &a->partitions[i], *y = &b->partitions[i];
        if (x->present != y->present || x->partition_index != y->partition_index || x->leader != y->leader ||
            x->leader_epoch != y->leader_epoch || x->partition_epoch != y->partition_epoch ||
            !ints_equal(x->replicas, x->replica_count, y->replicas, y->replica_count) ||
            !ints_equal(x->isr, x->isr_count, y->isr, y->isr_count) ||
            !ints_equal(x->adding, x->adding_count, y->adding, y->adding_count) ||
            !ints_equal(x->removing, x->removing_count, y->removing, y->removing_count) ||
            !ints_equal(x->elr, x->elr_count, y->elr, y->elr_count) ||
            !ints_equal(x->last_known_elr, x->last_known_elr_count, y->last_known_elr, y->last_known_elr_count))
            return false;
    }
    for (int32_t i = 0; i < a->config_count; i++)
        if (!str_equal(a->configs[i].name, b->configs[i].name) || !str_equal(a->configs[i].value, b->configs[i].value))
            return false;
    return true;
}

bool metadata_image_equal(const struct metadata_image *a, const struct metadata_image *b)
{
    if (a == b)
        return true;
    if (!a || !b)
        return false;
    if (!str_equal(a->cluster_id, b->cluster_id) || a->controller_id != b->controller_id ||
        a->metadata_version != b->metadata_version || a->elr_version != b->elr_version ||
        a->broker_count != b->broker_count || a->next_producer_id != b->next_producer_id ||
        a->topic_count != b->topic_count || a->broker_config_count != b->broker_config_count)
        return false;
    for (int32_t i = 0; i < a->broker_count; i++)
        if (!broker_equal(&a->brokers[i], &b->brokers[i]))
            return false;
    for (int32_t i = 0; i < a->topic_count; i++)
        if (!topic_equal(a->topics[i], b->topics[i]))
            return false;
    for (int32_t i = 0; i < a->broker_config_count; i++) {
        const struct metadata_broker_config *x = &a->broker_configs[i], *y = &b->broker_configs[i];
        if (!str_equal(x->resource, y->resource) || !str_equal(x->name, y->name) || !str_equal(x->value, y->value))
            return false;
    }
    return metadata_acls_equal(a, b) && metadata_scrams_equal(a, b) && metadata_quotas_equal(a, b);
}
