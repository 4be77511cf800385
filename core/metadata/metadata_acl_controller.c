/* Controller side of the ACL APIs: Kafka's validation of bindings and
 * filters, and the batches of AccessControlEntryRecord /
 * RemoveAccessControlEntryRecord that create and delete them. The bindings
 * take effect when the loader applies the batch to the image. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/uuid.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"
#include "protocol/generated/errors.h"

/* Kafka's enum values (ResourceType, PatternType, AclOperation, AclPermissionType). */
enum { ACL_UNKNOWN = 0, ACL_ANY = 1, PATTERN_MATCH = 2, PATTERN_LITERAL = 3, PATTERN_PREFIXED = 4 };
#define RESOURCE_TYPE_MAX 7
#define OPERATION_MAX 14
#define PERMISSION_DENY 2
#define PERMISSION_ALLOW 3

static int16_t invalid(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int16_t invalid(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return KAFKA_ERR_INVALID_REQUEST;
}

/* Wire values outside Kafka's enums decode as UNKNOWN, as Kafka's fromCode does. */
static bool known(int8_t v, int8_t max)
{
    return v > ACL_UNKNOWN && v <= max;
}

int16_t metadata_acl_validate(const struct metadata_acl *acl, char *err, size_t errlen)
{
    if (!known(acl->resource_type, RESOURCE_TYPE_MAX) || acl->resource_type == ACL_ANY)
        return invalid(err, errlen, "Invalid resourceType %d", (int)acl->resource_type);
    if (acl->pattern_type != PATTERN_LITERAL && acl->pattern_type != PATTERN_PREFIXED)
        return invalid(err, errlen, "Invalid patternType %d", (int)acl->pattern_type);
    if (!known(acl->operation, OPERATION_MAX) || acl->operation == ACL_ANY)
        return invalid(err, errlen, "Invalid operation %d", (int)acl->operation);
    if (acl->permission_type != PERMISSION_DENY && acl->permission_type != PERMISSION_ALLOW)
        return invalid(err, errlen, "Invalid permissionType %d", (int)acl->permission_type);
    if (!acl->resource_name || acl->resource_name[0] == '\0')
        return invalid(err, errlen, "Resource name should not be empty");
    if (!acl->principal || !strchr(acl->principal, ':'))
        return invalid(err, errlen,
                       "Could not parse principal from `%s` (no colon is present separating the principal type "
                       "from the principal name)",
                       acl->principal ? acl->principal : "");
    if (!acl->host)
        return invalid(err, errlen, "Host should not be null");
    return KAFKA_ERR_NONE;
}

int16_t metadata_acl_filter_validate(const struct metadata_acl_filter *f, char *err, size_t errlen)
{
    if (!known(f->resource_type, RESOURCE_TYPE_MAX) || !known(f->pattern_type, PATTERN_PREFIXED))
        return invalid(err, errlen, "Unknown patternFilter.");
    if (!known(f->operation, OPERATION_MAX) || !known(f->permission_type, PERMISSION_ALLOW))
        return invalid(err, errlen, "Unknown entryFilter.");
    return KAFKA_ERR_NONE;
}

static bool str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

bool metadata_acl_filter_matches(const struct metadata_acl_filter *f, const struct metadata_acl *a)
{
    if (f->resource_type != ACL_ANY && f->resource_type != a->resource_type)
        return false;
    if (f->pattern_type != ACL_ANY && f->pattern_type != PATTERN_MATCH && f->pattern_type != a->pattern_type)
        return false;
    if (f->resource_name) {
        if (f->pattern_type == ACL_ANY || f->pattern_type == a->pattern_type) {
            if (!str_eq(f->resource_name, a->resource_name))
                return false;
        } else if (a->pattern_type == PATTERN_LITERAL) {
            if (!str_eq(f->resource_name, a->resource_name) && !str_eq(a->resource_name, "*"))
                return false;
        } else if (a->pattern_type == PATTERN_PREFIXED) {
            if (!a->resource_name || strncmp(f->resource_name, a->resource_name, strlen(a->resource_name)) != 0)
                return false;
        } else {
            return false;
        }
    }
    if (f->principal && !str_eq(f->principal, a->principal))
        return false;
    if (f->host && !str_eq(f->host, a->host))
        return false;
    if (f->operation != ACL_ANY && f->operation != a->operation)
        return false;
    return f->permission_type == ACL_ANY || f->permission_type == a->permission_type;
}

/* The same binding under another id. */
static bool same_binding(const struct metadata_acl *x, const struct metadata_acl *y)
{
    return x->resource_type == y->resource_type && x->pattern_type == y->pattern_type && x->operation == y->operation &&
           x->permission_type == y->permission_type && str_eq(x->resource_name, y->resource_name) &&
           str_eq(x->principal, y->principal) && str_eq(x->host, y->host);
}

static bool binding_present(const struct metadata_image *img, const struct metadata_acl *acl,
                            const struct metadata_acl *batch, int32_t batch_count)
{
    for (int32_t i = 0; i < img->acl_count; i++)
        if (same_binding(&img->acls[i], acl))
            return true;
    for (int32_t i = 0; i < batch_count; i++)
        if (same_binding(&batch[i], acl))
            return true;
    return false;
}

int16_t metadata_create_acls(struct metadata_store *store, const struct metadata_acl *acls, int32_t count, char *err,
                             size_t errlen)
{
    if (count <= 0)
        return KAFKA_ERR_NONE;
    struct metadata_acl *added = calloc((size_t)count, sizeof(*added));
    struct metadata_record_list records;
    if (!added || metadata_record_list_init(&records) != 0) {
        free(added);
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    int16_t rc = KAFKA_ERR_NONE;
    int32_t n = 0;
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    for (int32_t i = 0; i < count && rc == KAFKA_ERR_NONE; i++) {
        if (binding_present(img, &acls[i], added, n))
            continue;
        struct metadata_acl a = acls[i];
        do {
            if (uuid_random(a.id.bytes) != 0) {
                snprintf(err, errlen, "no randomness for an ACL id");
                rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
                break;
            }
        } while (metadata_image_acl(img, &a.id));
        if (rc != KAFKA_ERR_NONE)
            break;
        added[n++] = a;
        metadata_record_write_acl(&records.w, &a);
        if (metadata_record_list_mark(&records) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        }
    }
    if (rc == KAFKA_ERR_NONE && n > 0)
        rc = metadata_store_commit_locked(store, &records, err, errlen);
    metadata_controller_unlock(store);
    metadata_record_list_free(&records);
    free(added);
    return rc;
}

static int uuid_cmp(const void *a, const void *b)
{
    return memcmp(((const struct kafka_uuid *)a)->bytes, ((const struct kafka_uuid *)b)->bytes, 16);
}

int16_t metadata_delete_acls(struct metadata_store *store, const struct kafka_uuid *in_ids, int32_t count, char *err,
                             size_t errlen)
{
    if (count <= 0)
        return KAFKA_ERR_NONE;
    /* Sorted, so an id two filters both matched is removed once. */
    struct kafka_uuid *ids = malloc((size_t)count * sizeof(*ids));
    struct metadata_record_list records;
    if (!ids || metadata_record_list_init(&records) != 0) {
        free(ids);
        snprintf(err, errlen, "out of memory");
        return KAFKA_ERR_UNKNOWN_SERVER_ERROR;
    }
    memcpy(ids, in_ids, (size_t)count * sizeof(*ids));
    qsort(ids, (size_t)count, sizeof(*ids), uuid_cmp);
    int16_t rc = KAFKA_ERR_NONE;
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    for (int32_t i = 0; i < count; i++) {
        if ((i > 0 && uuid_cmp(&ids[i], &ids[i - 1]) == 0) || !metadata_image_acl(img, &ids[i]))
            continue;
        metadata_record_write_remove_acl(&records.w, &ids[i]);
        if (metadata_record_list_mark(&records) != 0) {
            snprintf(err, errlen, "out of memory");
            rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            break;
        }
    }
    if (rc == KAFKA_ERR_NONE && records.count > 0)
        rc = metadata_store_commit_locked(store, &records, err, errlen);
    metadata_controller_unlock(store);
    metadata_record_list_free(&records);
    free(ids);
    return rc;
}
