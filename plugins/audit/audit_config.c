/* Audit plugin configuration: reading keys through the host and the event
 * filters built from them. */
#include "audit_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUDIT_MAX_FILES_LIMIT 1000
#define AUDIT_QUEUE_CAPACITY_LIMIT 10000000

static const char *const audit_type_names[] = {
    [CAIRN_AUDIT_AUTHENTICATION] = "authentication",
    [CAIRN_AUDIT_AUTHORIZATION] = "authorization",
    [CAIRN_AUDIT_ADMIN] = "admin",
};

/* Copies the list item [start, end) without surrounding blanks. */
static char *audit_trimmed_copy(const char *start, const char *end)
{
    while (start < end && (*start == ' ' || *start == '\t'))
        start++;
    while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    size_t len = (size_t)(end - start);
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, start, len);
        copy[len] = '\0';
    }
    return copy;
}

static void audit_free_strings(char **items, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(items[i]);
    free(items);
}

/* Splits a comma-separated list, skipping empty items. */
static int audit_split_list(const char *list, char ***items_out, size_t *count_out, char *err, size_t errlen)
{
    *items_out = NULL;
    *count_out = 0;
    size_t cap = 1;
    for (const char *p = list; *p; p++)
        cap += *p == ',';
    char **items = calloc(cap, sizeof(*items));
    if (!items) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    size_t count = 0;
    const char *start = list;
    for (;;) {
        const char *end = strchr(start, ',');
        if (!end)
            end = start + strlen(start);
        char *item = audit_trimmed_copy(start, end);
        if (!item) {
            audit_free_strings(items, count);
            snprintf(err, errlen, "out of memory");
            return CAIRN_ERROR;
        }
        if (item[0] == '\0')
            free(item);
        else
            items[count++] = item;
        if (*end == '\0')
            break;
        start = end + 1;
    }
    *items_out = items;
    *count_out = count;
    return CAIRN_OK;
}

int audit_parse_type_list(const char *list, uint32_t *mask, char *err, size_t errlen)
{
    char **items;
    size_t count;
    *mask = 0;
    if (audit_split_list(list, &items, &count, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    int rc = CAIRN_OK;
    for (size_t i = 0; i < count && rc == CAIRN_OK; i++) {
        bool known = false;
        for (int32_t t = CAIRN_AUDIT_AUTHENTICATION; t <= CAIRN_AUDIT_ADMIN; t++) {
            if (strcmp(items[i], audit_type_names[t]) == 0) {
                *mask |= 1u << t;
                known = true;
            }
        }
        if (!known) {
            snprintf(err, errlen, "unknown event type '%s' (expected authentication, authorization or admin)",
                     items[i]);
            rc = CAIRN_INVALID;
        }
    }
    audit_free_strings(items, count);
    return rc;
}

static bool audit_has_prefix(char *const *prefixes, size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++) {
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    }
    return false;
}

bool audit_filter_accepts(const struct audit_filter *filter, int32_t type, const char *resource_name)
{
    if (type < CAIRN_AUDIT_AUTHENTICATION || type > CAIRN_AUDIT_ADMIN)
        return false;
    uint32_t bit = 1u << type;
    if (filter->include_types != 0 && !(filter->include_types & bit))
        return false;
    if (filter->exclude_types & bit)
        return false;
    /* Resource filters only judge events that name a resource. */
    if (resource_name == NULL || resource_name[0] == '\0')
        return true;
    if (filter->include_prefix_count > 0 &&
        !audit_has_prefix(filter->include_prefixes, filter->include_prefix_count, resource_name))
        return false;
    return !audit_has_prefix(filter->exclude_prefixes, filter->exclude_prefix_count, resource_name);
}

static int audit_get_string(const struct cairn_host *host, const char *key, const char **out, char *err, size_t errlen)
{
    char why[256] = "";
    int rc = host->config_string(host->ctx, key, out, why, sizeof(why));
    if (rc != CAIRN_OK || *out == NULL) {
        snprintf(err, errlen, "config %s: %s", key, why[0] ? why : "not available");
        return CAIRN_INVALID;
    }
    return CAIRN_OK;
}

static int audit_get_int(const struct cairn_host *host, const char *key, int64_t min, int64_t max, int64_t *out,
                         char *err, size_t errlen)
{
    char why[256] = "";
    if (host->config_int(host->ctx, key, out, why, sizeof(why)) != CAIRN_OK) {
        snprintf(err, errlen, "config %s: %s", key, why[0] ? why : "not available");
        return CAIRN_INVALID;
    }
    if (*out < min || *out > max) {
        snprintf(err, errlen, "config %s: %lld is outside [%lld, %lld]", key, (long long)*out, (long long)min,
                 (long long)max);
        return CAIRN_INVALID;
    }
    return CAIRN_OK;
}

static int audit_load_filter(const struct cairn_host *host, struct audit_filter *filter, char *err, size_t errlen)
{
    static const char *const type_keys[2] = {"include.types", "exclude.types"};
    uint32_t *masks[2] = {&filter->include_types, &filter->exclude_types};
    for (int i = 0; i < 2; i++) {
        const char *value;
        if (audit_get_string(host, type_keys[i], &value, err, errlen) != CAIRN_OK)
            return CAIRN_INVALID;
        char why[200];
        if (audit_parse_type_list(value, masks[i], why, sizeof(why)) != CAIRN_OK) {
            snprintf(err, errlen, "config %s: %s", type_keys[i], why);
            return CAIRN_INVALID;
        }
    }
    const char *include, *exclude;
    if (audit_get_string(host, "include.resources", &include, err, errlen) != CAIRN_OK ||
        audit_get_string(host, "exclude.resources", &exclude, err, errlen) != CAIRN_OK)
        return CAIRN_INVALID;
    if (audit_split_list(include, &filter->include_prefixes, &filter->include_prefix_count, err, errlen) != CAIRN_OK ||
        audit_split_list(exclude, &filter->exclude_prefixes, &filter->exclude_prefix_count, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    return CAIRN_OK;
}

int audit_config_load(const struct cairn_host *host, struct audit_config *config, char *err, size_t errlen)
{
    memset(config, 0, sizeof(*config));
    const char *value;
    if (audit_get_string(host, "sink", &value, err, errlen) != CAIRN_OK)
        return CAIRN_INVALID;
    if (strcmp(value, "file") == 0) {
        config->sink = AUDIT_SINK_FILE;
    } else if (strcmp(value, "stdout") == 0) {
        config->sink = AUDIT_SINK_STDOUT;
    } else {
        snprintf(err, errlen, "config sink: '%s' is neither file nor stdout", value);
        return CAIRN_INVALID;
    }

    if (audit_get_string(host, "file.path", &value, err, errlen) != CAIRN_OK)
        return CAIRN_INVALID;
    /* Room for the ".N" suffix of rotated files. */
    if (value[0] == '\0' || strlen(value) + 16 >= sizeof(config->file_path)) {
        snprintf(err, errlen, "config file.path: empty or longer than %zu bytes", sizeof(config->file_path) - 16);
        return CAIRN_INVALID;
    }
    snprintf(config->file_path, sizeof(config->file_path), "%s", value);

    char why[256] = "";
    if (host->config_size(host->ctx, "file.max.bytes", &config->file_max_bytes, why, sizeof(why)) != CAIRN_OK ||
        config->file_max_bytes == 0) {
        snprintf(err, errlen, "config file.max.bytes: %s", why[0] ? why : "must be at least 1");
        return CAIRN_INVALID;
    }
    if (audit_get_int(host, "file.max.files", 0, AUDIT_MAX_FILES_LIMIT, &config->file_max_files, err, errlen) !=
            CAIRN_OK ||
        audit_get_int(host, "queue.capacity", 1, AUDIT_QUEUE_CAPACITY_LIMIT, &config->queue_capacity, err, errlen) !=
            CAIRN_OK)
        return CAIRN_INVALID;

    if (audit_get_string(host, "queue.full.policy", &value, err, errlen) != CAIRN_OK)
        return CAIRN_INVALID;
    if (strcmp(value, "block") == 0) {
        config->drop_when_full = false;
    } else if (strcmp(value, "drop") == 0) {
        config->drop_when_full = true;
    } else {
        snprintf(err, errlen, "config queue.full.policy: '%s' is neither block nor drop", value);
        return CAIRN_INVALID;
    }

    int rc = audit_load_filter(host, &config->filter, err, errlen);
    if (rc != CAIRN_OK)
        audit_config_free(config);
    return rc;
}

void audit_config_free(struct audit_config *config)
{
    audit_free_strings(config->filter.include_prefixes, config->filter.include_prefix_count);
    audit_free_strings(config->filter.exclude_prefixes, config->filter.exclude_prefix_count);
    config->filter.include_prefixes = NULL;
    config->filter.exclude_prefixes = NULL;
    config->filter.include_prefix_count = 0;
    config->filter.exclude_prefix_count = 0;
}
