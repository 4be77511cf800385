/* Client quotas of the metadata image: the sorted (entity, key) list, its
 * copy, free and equality for builders and replay checks, and the
 * ClientQuotaRecord mapping. */
#include "metadata/metadata_quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_image_internal.h"
#include "metadata/metadata_records.h"
#include "protocol/generated/client_quota_record.h"

static const char *const type_names[METADATA_QUOTA_TYPE_COUNT] = {"user", "client-id", "ip"};

const char *metadata_quota_type_name(int type)
{
    return type >= 0 && type < METADATA_QUOTA_TYPE_COUNT ? type_names[type] : "unknown";
}

int metadata_quota_type_of(const char *name, size_t len)
{
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++)
        if (name && strlen(type_names[t]) == len && memcmp(type_names[t], name, len) == 0)
            return t;
    return -1;
}

int metadata_quota_entity_cmp(const struct metadata_quota_entity *a, const struct metadata_quota_entity *b)
{
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++) {
        if (a->part[t] != b->part[t])
            return a->part[t] < b->part[t] ? -1 : 1;
        if (a->part[t] == METADATA_QUOTA_NAMED) {
            int cmp = strcmp(a->name[t], b->name[t]);
            if (cmp != 0)
                return cmp;
        }
    }
    return 0;
}

static int quota_cmp(const struct metadata_quota *q, const struct metadata_quota_entity *e, const char *key)
{
    int cmp = metadata_quota_entity_cmp(&q->entity, e);
    return cmp != 0 ? cmp : strcmp(q->key, key);
}

static void quota_clear(struct metadata_quota *q)
{
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++)
        free((char *)q->entity.name[t]);
    free(q->key);
    memset(q, 0, sizeof(*q));
}

/* Deep copy; names of parts that are not NAMED are dropped. */
static int quota_copy(struct metadata_quota *dst, const struct metadata_quota_entity *e, const char *key, double value)
{
    memset(dst, 0, sizeof(*dst));
    dst->value = value;
    dst->key = strdup(key);
    bool ok = dst->key != NULL;
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++) {
        dst->entity.part[t] = e->part[t];
        if (e->part[t] == METADATA_QUOTA_NAMED) {
            dst->entity.name[t] = e->name[t] ? strdup(e->name[t]) : NULL;
            ok &= dst->entity.name[t] != NULL;
        }
    }
    if (!ok)
        quota_clear(dst);
    return ok ? 0 : -1;
}

int32_t metadata_image_quota_find(const struct metadata_image *img, const struct metadata_quota_entity *e,
                                  const char *key)
{
    int32_t lo = 0, hi = img->quota_count;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int cmp = quota_cmp(&img->quotas[mid], e, key);
        if (cmp == 0)
            return mid;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -lo - 1;
}

int metadata_quotas_copy(struct metadata_image *dst, const struct metadata_image *src)
{
    if (src->quota_count == 0)
        return 0;
    dst->quotas = calloc((size_t)src->quota_count, sizeof(*dst->quotas));
    if (!dst->quotas)
        return -1;
    for (int32_t i = 0; i < src->quota_count; i++) {
        const struct metadata_quota *q = &src->quotas[i];
        if (quota_copy(&dst->quotas[i], &q->entity, q->key, q->value) != 0)
            return -1;
        dst->quota_count = i + 1;
    }
    return 0;
}

void metadata_quotas_free(struct metadata_image *img)
{
    for (int32_t i = 0; i < img->quota_count; i++)
        quota_clear(&img->quotas[i]);
    free(img->quotas);
    img->quotas = NULL;
    img->quota_count = 0;
}

bool metadata_quotas_equal(const struct metadata_image *a, const struct metadata_image *b)
{
    if (a->quota_count != b->quota_count)
        return false;
    for (int32_t i = 0; i < a->quota_count; i++) {
        const struct metadata_quota *x = &a->quotas[i], *y = &b->quotas[i];
        if (quota_cmp(x, &y->entity, y->key) != 0 || x->value != y->value)
            return false;
    }
    return true;
}

int metadata_builder_put_quota(struct metadata_builder *b, const struct metadata_quota_entity *e, const char *key,
                               double value, char *err, size_t errlen)
{
    struct metadata_image *img = metadata_builder_image_mut(b);
    struct metadata_quota copy;
    if (quota_copy(&copy, e, key, value) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int32_t at = metadata_image_quota_find(img, e, key);
    if (at >= 0) {
        quota_clear(&img->quotas[at]);
        img->quotas[at] = copy;
        return 0;
    }
    at = -at - 1;
    struct metadata_quota *grown = realloc(img->quotas, (size_t)(img->quota_count + 1) * sizeof(*grown));
    if (!grown) {
        quota_clear(&copy);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memmove(&grown[at + 1], &grown[at], (size_t)(img->quota_count - at) * sizeof(*grown));
    grown[at] = copy;
    img->quotas = grown;
    img->quota_count++;
    return 0;
}

int metadata_builder_remove_quota(struct metadata_builder *b, const struct metadata_quota_entity *e, const char *key,
                                  char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct metadata_image *img = metadata_builder_image_mut(b);
    int32_t at = metadata_image_quota_find(img, e, key);
    if (at < 0)
        return 0;
    quota_clear(&img->quotas[at]);
    memmove(&img->quotas[at], &img->quotas[at + 1], (size_t)(img->quota_count - at - 1) * sizeof(*img->quotas));
    img->quota_count--;
    return 0;
}

void metadata_record_write_quota(struct kafka_writer *w, const struct metadata_quota_entity *e, const char *key,
                                 double value, bool remove)
{
    struct client_quota_record_entity_data parts[METADATA_QUOTA_TYPE_COUNT];
    int32_t n = 0;
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++) {
        if (e->part[t] == METADATA_QUOTA_ABSENT)
            continue;
        parts[n].entity_type = kafka_str_from_cstr(type_names[t]);
        parts[n++].entity_name = e->part[t] == METADATA_QUOTA_NAMED ? kafka_str_from_cstr(e->name[t])
                                                                    : (struct kafka_str){NULL, -1};
    }
    struct client_quota_record m = {
        .entity = parts, .entity_count = n, .key = kafka_str_from_cstr(key), .value = value, .remove = remove};
    static const uint8_t no_body[1];
    metadata_record_write_raw(w, METADATA_RECORD_CLIENT_QUOTA, 0, no_body, 0);
    client_quota_record_encode(&m, w, 0);
}

/* A NUL-terminated heap copy of a decoded string. */
static char *str_dup(struct kafka_str s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *p = malloc(n + 1);
    if (p) {
        if (n)
            memcpy(p, s.data, n);
        p[n] = '\0';
    }
    return p;
}

int metadata_builder_apply_quota_record(struct metadata_builder *b, const struct client_quota_record *m, char *err,
                                        size_t errlen)
{
    struct metadata_quota_entity e;
    memset(&e, 0, sizeof(e));
    char *names[METADATA_QUOTA_TYPE_COUNT] = {NULL, NULL, NULL};
    char *key = str_dup(m->key);
    int rc = key ? 0 : -1;
    if (!key)
        snprintf(err, errlen, "out of memory");
    for (int32_t i = 0; rc == 0 && i < m->entity_count; i++) {
        const struct client_quota_record_entity_data *d = &m->entity[i];
        int t = metadata_quota_type_of(d->entity_type.data, d->entity_type.len > 0 ? (size_t)d->entity_type.len : 0);
        if (t < 0 || e.part[t] != METADATA_QUOTA_ABSENT) {
            snprintf(err, errlen, "ClientQuotaRecord with an unknown or repeated entity type");
            rc = -1;
            break;
        }
        if (d->entity_name.len < 0) {
            e.part[t] = METADATA_QUOTA_DEFAULT;
            continue;
        }
        e.part[t] = METADATA_QUOTA_NAMED;
        e.name[t] = names[t] = str_dup(d->entity_name);
        if (!names[t]) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
    }
    if (rc == 0 && m->entity_count == 0) {
        snprintf(err, errlen, "ClientQuotaRecord without an entity");
        rc = -1;
    }
    if (rc == 0)
        rc = m->remove ? metadata_builder_remove_quota(b, &e, key, err, errlen)
                       : metadata_builder_put_quota(b, &e, key, m->value, err, errlen);
    for (int t = 0; t < METADATA_QUOTA_TYPE_COUNT; t++)
        free(names[t]);
    free(key);
    return rc;
}
