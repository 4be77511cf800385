/* Dynamic broker configs: the controller operation that records them as
 * ConfigRecords (resource type BROKER; resource "" is the cluster-wide
 * default, "<id>" one broker) and the image queries that read them back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_registry.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"
#include "protocol/generated/errors.h"

bool metadata_broker_resource_valid(const char *resource)
{
    if (!resource)
        return false;
    if (resource[0] == '\0')
        return true;
    char *end = NULL;
    errno = 0;
    long id = strtol(resource, &end, 10);
    return errno == 0 && *end == '\0' && resource[0] != '+' && resource[0] != ' ' && id >= 0 && id <= INT32_MAX;
}

int32_t metadata_image_broker_configs(const struct metadata_image *img, const char *resource,
                                      const struct metadata_broker_config **first)
{
    /* Sorted by resource then name, so one resource's entries are adjacent. */
    int32_t start = 0, n = 0;
    while (img && start < img->broker_config_count && strcmp(img->broker_configs[start].resource, resource) < 0)
        start++;
    while (img && start + n < img->broker_config_count &&
           strcmp(img->broker_configs[start + n].resource, resource) == 0)
        n++;
    *first = img && n > 0 ? &img->broker_configs[start] : NULL;
    return n;
}

static bool same_entries(const struct metadata_image *a, const struct metadata_image *b, const char *resource)
{
    const struct metadata_broker_config *x, *y;
    int32_t nx = metadata_image_broker_configs(a, resource, &x);
    int32_t ny = metadata_image_broker_configs(b, resource, &y);
    if (nx != ny)
        return false;
    for (int32_t i = 0; i < nx; i++)
        if (strcmp(x[i].name, y[i].name) != 0 || strcmp(x[i].value, y[i].value) != 0)
            return false;
    return true;
}

bool metadata_broker_configs_changed(const struct metadata_image *old_image, const struct metadata_image *new_image,
                                     int32_t node_id)
{
    char self[16];
    snprintf(self, sizeof self, "%d", (int)node_id);
    return !same_entries(old_image, new_image, "") || !same_entries(old_image, new_image, self);
}

/* The entries of one resource as config_kv (pointing into the image);
 * *out is malloc'd (NULL when none). Returns -1 when out of memory. */
static int resource_kvs(const struct metadata_image *img, const char *resource, struct config_kv **out, size_t *count)
{
    const struct metadata_broker_config *first;
    int32_t n = metadata_image_broker_configs(img, resource, &first);
    *out = NULL;
    *count = 0;
    if (n == 0)
        return 0;
    struct config_kv *kvs = calloc((size_t)n, sizeof *kvs);
    if (!kvs)
        return -1;
    for (int32_t i = 0; i < n; i++)
        kvs[i] = (struct config_kv){first[i].name, first[i].value};
    *out = kvs;
    *count = (size_t)n;
    return 0;
}

int metadata_broker_config_layered(const struct metadata_image *img, const struct broker_config *base, int32_t node_id,
                                   const struct config_kv *extra, size_t extra_count, bool extra_is_default,
                                   struct broker_config **out, char *err, size_t errlen)
{
    char self[16];
    snprintf(self, sizeof self, "%d", (int)node_id);
    struct config_kv *defaults = NULL, *mine = NULL;
    size_t nd = 0, nm = 0;
    int rc = -1;
    if (resource_kvs(img, "", &defaults, &nd) != 0 || resource_kvs(img, self, &mine, &nm) != 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    const struct config_kv *d = defaults, *m = mine;
    size_t dn = nd, mn = nm;
    if (extra && extra_is_default) {
        d = extra;
        dn = extra_count;
    } else if (extra) {
        m = extra;
        mn = extra_count;
    }
    rc = config_build_layered(base, d, dn, m, mn, out, err, errlen);
out:
    free(defaults);
    free(mine);
    return rc;
}

static int16_t refuse(char *err, size_t errlen, int16_t code, const char *what, const char *key)
{
    snprintf(err, errlen, "%s%s", what, key);
    return code;
}

int16_t metadata_alter_broker_configs(struct metadata_store *store, const char *resource,
                                      const struct metadata_config_kv *configs, int32_t config_count,
                                      bool validate_only, char *err, size_t errlen)
{
    if (!metadata_broker_resource_valid(resource))
        return refuse(err, errlen, KAFKA_ERR_INVALID_REQUEST,
                      "Invalid broker resource name: ", resource ? resource : "(null)");
    if (config_count < 0 || (config_count > 0 && !configs))
        return refuse(err, errlen, KAFKA_ERR_INVALID_REQUEST, "Missing configs", "");
    for (int32_t i = 0; i < config_count; i++) {
        const char *key = configs[i].key;
        if (!key || key[0] == '\0')
            return refuse(err, errlen, KAFKA_ERR_INVALID_CONFIG, "Config name must not be empty", "");
        /* A delete is always allowed: it only falls back to the static value. */
        if (!configs[i].value)
            continue;
        enum config_dynamic_verdict verdict = config_dynamic_check_key(key, resource[0] == '\0', err, errlen);
        if (verdict != CONFIG_DYNAMIC_OK)
            return verdict == CONFIG_DYNAMIC_PER_BROKER_ONLY ? KAFKA_ERR_INVALID_REQUEST : KAFKA_ERR_INVALID_CONFIG;
        long index = config_broker_key_index(key);
        if (index < 0)
            index = config_listener_key_index(key); /* listener.name.<l>.ssl.* */
        struct config_parsed parsed;
        if (config_value_parse(config_broker_key_at((size_t)index), configs[i].value, &parsed, err, errlen) < 0)
            return KAFKA_ERR_INVALID_CONFIG;
        config_parsed_free(&parsed);
    }
    if (validate_only || config_count == 0)
        return KAFKA_ERR_NONE;
    struct metadata_record_list records;
    if (metadata_record_list_init(&records) != 0)
        return refuse(err, errlen, KAFKA_ERR_UNKNOWN_SERVER_ERROR, "out of memory", "");
    for (int32_t i = 0; i < config_count; i++) {
        metadata_record_write_config(&records.w, METADATA_CONFIG_RESOURCE_BROKER, resource, configs[i].key,
                                     configs[i].value);
        metadata_record_list_mark(&records);
    }
    metadata_controller_lock(store);
    int16_t rc = metadata_store_commit_locked(store, &records, err, errlen);
    metadata_controller_unlock(store);
    metadata_record_list_free(&records);
    return rc;
}
