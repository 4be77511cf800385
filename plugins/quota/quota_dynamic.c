/* Quotas set at run time (AlterClientQuotas, handed over by the quota host
 * service of ABI 1.2) merged over the configured `entries`. */
#include "quota_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int quota_name_dup(const char *in, char **out)
{
    *out = NULL;
    if (!in)
        return CAIRN_OK;
    *out = strdup(in);
    return *out ? CAIRN_OK : CAIRN_ERROR;
}

static int quota_entry_copy(struct quota_entry *dst, const struct quota_entry *src)
{
    *dst = *src;
    int rc = quota_name_dup(src->entity.user, &dst->entity.user);
    if (quota_name_dup(src->entity.client_id, &dst->entity.client_id) != CAIRN_OK)
        rc = CAIRN_ERROR;
    return rc;
}

/* The part of an entity as the ABI gives it; false for a value the plugin cannot use. */
static bool quota_part_of(int32_t part, const char *name, enum quota_part *out, const char **out_name)
{
    *out_name = NULL;
    switch (part) {
    case CAIRN_QUOTA_PART_ABSENT:
        *out = QUOTA_PART_ABSENT;
        return true;
    case CAIRN_QUOTA_PART_DEFAULT:
        *out = QUOTA_PART_DEFAULT;
        return true;
    case CAIRN_QUOTA_PART_NAMED:
        *out = QUOTA_PART_NAMED;
        *out_name = name;
        return name != NULL;
    default:
        return false;
    }
}

static bool quota_same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* The entry of the entity in out, added (with no limits) when missing; NULL on no memory. */
static struct quota_entry *quota_entry_for(struct quota_entries *out, size_t cap, enum quota_part user_part,
                                           const char *user, enum quota_part client_part, const char *client)
{
    for (size_t i = 0; i < out->count; i++) {
        const struct quota_entity *e = &out->items[i].entity;
        if (e->user_part == user_part && e->client_part == client_part && quota_same(e->user, user) &&
            quota_same(e->client_id, client))
            return &out->items[i];
    }
    if (out->count == cap)
        return NULL;
    struct quota_entry *entry = &out->items[out->count];
    memset(entry, 0, sizeof(*entry));
    entry->entity.user_part = user_part;
    entry->entity.client_part = client_part;
    if (quota_name_dup(user, &entry->entity.user) != CAIRN_OK ||
        quota_name_dup(client, &entry->entity.client_id) != CAIRN_OK) {
        free(entry->entity.user);
        free(entry->entity.client_id);
        return NULL;
    }
    out->count++;
    return entry;
}

int quota_entries_merge(const struct quota_entries *configured, const struct cairn_client_quota *const *quotas,
                        size_t count, struct quota_entries *out)
{
    size_t cap = configured->count + count;
    out->count = 0;
    out->items = calloc(cap + 1, sizeof(*out->items));
    if (!out->items)
        return CAIRN_ERROR;
    for (size_t i = 0; i < configured->count; i++) {
        int rc = quota_entry_copy(&out->items[i], &configured->items[i]);
        out->count = i + 1;
        if (rc != CAIRN_OK) {
            quota_entries_free(out);
            return CAIRN_ERROR;
        }
    }
    for (size_t i = 0; i < count; i++) {
        const struct cairn_client_quota *q = quotas[i];
        if (!q || !CAIRN_HAS_FIELD(q, struct cairn_client_quota, value) || !q->key || !isfinite(q->value) ||
            q->value <= 0 || q->ip_part != CAIRN_QUOTA_PART_ABSENT)
            continue;
        int type = -1;
        for (int t = 0; t < QUOTA_TYPE_COUNT; t++)
            if (strcmp(q->key, quota_type_name((enum quota_type)t)) == 0)
                type = t;
        enum quota_part user_part, client_part;
        const char *user, *client;
        if (type < 0 || !quota_part_of(q->user_part, q->user, &user_part, &user) ||
            !quota_part_of(q->client_id_part, q->client_id, &client_part, &client) ||
            (user_part == QUOTA_PART_ABSENT && client_part == QUOTA_PART_ABSENT))
            continue;
        struct quota_entry *entry = quota_entry_for(out, cap, user_part, user, client_part, client);
        if (!entry) {
            quota_entries_free(out);
            return CAIRN_ERROR;
        }
        entry->has_limit[type] = true;
        entry->limit[type] = q->value;
    }
    return CAIRN_OK;
}
