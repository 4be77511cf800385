/* ACL bindings of the metadata image: kept sorted by id so the ACL APIs can
 * look one up, and so a replay and a snapshot load compare equal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_image_internal.h"

static char *dup_str(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void acl_clear(struct metadata_acl *a)
{
    free(a->resource_name);
    free(a->principal);
    free(a->host);
    memset(a, 0, sizeof(*a));
}

static int acl_copy(struct metadata_acl *dst, const struct metadata_acl *src)
{
    *dst = *src;
    dst->resource_name = dup_str(src->resource_name);
    dst->principal = dup_str(src->principal);
    dst->host = dup_str(src->host);
    if ((src->resource_name && !dst->resource_name) || (src->principal && !dst->principal) ||
        (src->host && !dst->host)) {
        acl_clear(dst);
        return -1;
    }
    return 0;
}

static bool opt_str_equal(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Index of id, or -(insertion point) - 1 when absent. */
static int32_t acl_find(const struct metadata_image *img, const struct kafka_uuid *id)
{
    int32_t lo = 0, hi = img->acl_count;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int cmp = memcmp(img->acls[mid].id.bytes, id->bytes, sizeof(id->bytes));
        if (cmp == 0)
            return mid;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -lo - 1;
}

const struct metadata_acl *metadata_image_acl(const struct metadata_image *img, const struct kafka_uuid *id)
{
    if (!img || !id)
        return NULL;
    int32_t at = acl_find(img, id);
    return at >= 0 ? &img->acls[at] : NULL;
}

int metadata_acls_copy(struct metadata_image *dst, const struct metadata_image *src)
{
    if (src->acl_count == 0)
        return 0;
    dst->acls = calloc((size_t)src->acl_count, sizeof(*dst->acls));
    if (!dst->acls)
        return -1;
    for (int32_t i = 0; i < src->acl_count; i++) {
        if (acl_copy(&dst->acls[i], &src->acls[i]) != 0)
            return -1;
        dst->acl_count = i + 1;
    }
    return 0;
}

void metadata_acls_free(struct metadata_image *img)
{
    for (int32_t i = 0; i < img->acl_count; i++)
        acl_clear(&img->acls[i]);
    free(img->acls);
    img->acls = NULL;
    img->acl_count = 0;
}

bool metadata_acls_equal(const struct metadata_image *a, const struct metadata_image *b)
{
    if (a->acl_count != b->acl_count)
        return false;
    for (int32_t i = 0; i < a->acl_count; i++) {
        const struct metadata_acl *x = &a->acls[i], *y = &b->acls[i];
        if (memcmp(x->id.bytes, y->id.bytes, sizeof(x->id.bytes)) != 0 || x->resource_type != y->resource_type ||
            x->pattern_type != y->pattern_type || x->operation != y->operation ||
            x->permission_type != y->permission_type || !opt_str_equal(x->resource_name, y->resource_name) ||
            !opt_str_equal(x->principal, y->principal) || !opt_str_equal(x->host, y->host))
            return false;
    }
    return true;
}

int metadata_builder_add_acl(struct metadata_builder *b, const struct metadata_acl *acl, char *err, size_t errlen)
{
    struct metadata_image *img = metadata_builder_image_mut(b);
    struct metadata_acl copy;
    if (acl_copy(&copy, acl) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int32_t at = acl_find(img, &acl->id);
    if (at >= 0) {
        acl_clear(&img->acls[at]);
        img->acls[at] = copy;
        return 0;
    }
    at = -at - 1;
    struct metadata_acl *grown = realloc(img->acls, (size_t)(img->acl_count + 1) * sizeof(*grown));
    if (!grown) {
        acl_clear(&copy);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memmove(&grown[at + 1], &grown[at], (size_t)(img->acl_count - at) * sizeof(*grown));
    grown[at] = copy;
    img->acls = grown;
    img->acl_count++;
    return 0;
}

int metadata_builder_remove_acl(struct metadata_builder *b, const struct kafka_uuid *id, char *err, size_t errlen)
{
    struct metadata_image *img = metadata_builder_image_mut(b);
    int32_t at = acl_find(img, id);
    if (at < 0) {
        snprintf(err, errlen, "no ACL binding with this id");
        return -1;
    }
    acl_clear(&img->acls[at]);
    memmove(&img->acls[at], &img->acls[at + 1], (size_t)(img->acl_count - at - 1) * sizeof(*img->acls));
    img->acl_count--;
    return 0;
}
