/* SCRAM credentials of the metadata image (UserScramCredentialRecord):
 * salt, StoredKey, ServerKey and iterations per (user, mechanism), never a
 * password. Kept sorted by user then mechanism, so lookups are a binary
 * search and a replay and a snapshot load compare equal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_image_internal.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"
#include "protocol/generated/errors.h"

static void scram_clear(struct metadata_scram *c)
{
    free(c->name);
    free(c->salt);
    memset(c, 0, sizeof(*c));
}

static int scram_copy(struct metadata_scram *dst, const struct metadata_scram *src)
{
    *dst = *src;
    dst->name = strdup(src->name);
    dst->salt = malloc(src->salt_len > 0 ? (size_t)src->salt_len : 1);
    if (!dst->name || !dst->salt) {
        scram_clear(dst);
        return -1;
    }
    if (src->salt_len > 0)
        memcpy(dst->salt, src->salt, (size_t)src->salt_len);
    return 0;
}

static int scram_cmp(const struct metadata_scram *c, const char *name, int8_t mechanism)
{
    int cmp = strcmp(c->name, name);
    return cmp != 0 ? cmp : (c->mechanism > mechanism) - (c->mechanism < mechanism);
}

/* Index of (name, mechanism), or -(insertion point) - 1 when absent. */
static int32_t scram_find(const struct metadata_image *img, const char *name, int8_t mechanism)
{
    int32_t lo = 0, hi = img->scram_count;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        int cmp = scram_cmp(&img->scrams[mid], name, mechanism);
        if (cmp == 0)
            return mid;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -lo - 1;
}

const struct metadata_scram *metadata_image_scram(const struct metadata_image *img, const char *name, int8_t mechanism)
{
    if (!img || !name)
        return NULL;
    int32_t at = scram_find(img, name, mechanism);
    return at >= 0 ? &img->scrams[at] : NULL;
}

int metadata_scrams_copy(struct metadata_image *dst, const struct metadata_image *src)
{
    if (src->scram_count == 0)
        return 0;
    dst->scrams = calloc((size_t)src->scram_count, sizeof(*dst->scrams));
    if (!dst->scrams)
        return -1;
    for (int32_t i = 0; i < src->scram_count; i++) {
        if (scram_copy(&dst->scrams[i], &src->scrams[i]) != 0)
            return -1;
        dst->scram_count = i + 1;
    }
    return 0;
}

void metadata_scrams_free(struct metadata_image *img)
{
    for (int32_t i = 0; i < img->scram_count; i++)
        scram_clear(&img->scrams[i]);
    free(img->scrams);
    img->scrams = NULL;
    img->scram_count = 0;
}

bool metadata_scrams_equal(const struct metadata_image *a, const struct metadata_image *b)
{
    if (a->scram_count != b->scram_count)
        return false;
    for (int32_t i = 0; i < a->scram_count; i++) {
        const struct metadata_scram *x = &a->scrams[i], *y = &b->scrams[i];
        if (scram_cmp(x, y->name, y->mechanism) != 0 || x->iterations != y->iterations || x->salt_len != y->salt_len ||
            x->key_len != y->key_len || (x->salt_len > 0 && memcmp(x->salt, y->salt, (size_t)x->salt_len) != 0) ||
            memcmp(x->stored_key, y->stored_key, (size_t)x->key_len) != 0 ||
            memcmp(x->server_key, y->server_key, (size_t)x->key_len) != 0)
            return false;
    }
    return true;
}

int metadata_builder_put_scram(struct metadata_builder *b, const struct metadata_scram *cred, char *err, size_t errlen)
{
    if (!cred->name || cred->name[0] == '\0' || cred->salt_len < 0 || (cred->salt_len > 0 && !cred->salt) ||
        (cred->key_len != 32 && cred->key_len != 64)) {
        snprintf(err, errlen, "malformed SCRAM credential");
        return -1;
    }
    struct metadata_image *img = metadata_builder_image_mut(b);
    struct metadata_scram copy;
    if (scram_copy(&copy, cred) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int32_t at = scram_find(img, cred->name, cred->mechanism);
    if (at >= 0) {
        scram_clear(&img->scrams[at]);
        img->scrams[at] = copy;
        return 0;
    }
    at = -at - 1;
    struct metadata_scram *grown = realloc(img->scrams, (size_t)(img->scram_count + 1) * sizeof(*grown));
    if (!grown) {
        scram_clear(&copy);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memmove(&grown[at + 1], &grown[at], (size_t)(img->scram_count - at) * sizeof(*grown));
    grown[at] = copy;
    img->scrams = grown;
    img->scram_count++;
    return 0;
}

int metadata_builder_remove_scram(struct metadata_builder *b, const char *name, int8_t mechanism, char *err,
                                  size_t errlen)
{
    struct metadata_image *img = metadata_builder_image_mut(b);
    int32_t at = scram_find(img, name, mechanism);
    if (at < 0) {
        snprintf(err, errlen, "no SCRAM credential for this user and mechanism");
        return -1;
    }
    scram_clear(&img->scrams[at]);
    memmove(&img->scrams[at], &img->scrams[at + 1], (size_t)(img->scram_count - at - 1) * sizeof(*img->scrams));
    img->scram_count--;
    return 0;
}

/* True when another change of the same user carries an error. */
static bool user_failed(const struct metadata_scram_change *changes, int32_t count, const char *name)
{
    for (int32_t i = 0; i < count; i++)
        if (changes[i].error_code != KAFKA_ERR_NONE && strcmp(changes[i].name, name) == 0)
            return true;
    return false;
}

int16_t metadata_alter_scram(struct metadata_store *store, struct metadata_scram_change *changes, int32_t count,
                             char *err, size_t errlen)
{
    metadata_controller_lock(store);
    const struct metadata_image *img = metadata_store_current_locked(store);
    for (int32_t i = 0; i < count; i++)
        if (changes[i].error_code == KAFKA_ERR_NONE && !changes[i].cred &&
            !metadata_image_scram(img, changes[i].name, changes[i].mechanism))
            changes[i].error_code = KAFKA_ERR_RESOURCE_NOT_FOUND;
    struct metadata_record_list records;
    int16_t rc = KAFKA_ERR_NONE;
    if (metadata_record_list_init(&records) != 0) {
        snprintf(err, errlen, "out of memory");
        rc = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        goto out;
    }
    for (int32_t i = 0; i < count; i++) {
        if (user_failed(changes, count, changes[i].name))
            continue;
        if (changes[i].cred)
            metadata_record_write_scram(&records.w, changes[i].cred);
        else
            metadata_record_write_remove_scram(&records.w, changes[i].name, changes[i].mechanism);
        metadata_record_list_mark(&records);
    }
    if (records.count > 0)
        rc = metadata_store_commit_locked(store, &records, err, errlen);
    metadata_record_list_free(&records);
out:
    metadata_controller_unlock(store);
    return rc;
}
