#include "config/meta_properties.h"

#include "config/properties.h"
#include "util/fs_util.h"
#include "util/logger.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int meta_path(const char *dir, const char *file, char *out, size_t outlen, char *err, size_t errlen)
{
    int n = snprintf(out, outlen, "%s/%s", dir, file);
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "data directory path too long: '%s'", dir);
        return -1;
    }
    return 0;
}

static int parse_int32(const char *text, int32_t *out)
{
    if (!text || !*text)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*end || errno || v < INT32_MIN || v > INT32_MAX)
        return -1;
    *out = (int32_t)v;
    return 0;
}

int meta_properties_read(const char *dir, struct meta_properties *out, char *err, size_t errlen)
{
    char path[PATH_MAX];
    memset(out, 0, sizeof *out);
    if (meta_path(dir, META_PROPERTIES_FILE, path, sizeof path, err, errlen) < 0)
        return -1;
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return 1;
    struct properties props;
    if (properties_load_file(path, &props, err, errlen) < 0)
        return -1;
    int rc = -1;
    const char *version = properties_get(&props, "version");
    const char *node_id = properties_get(&props, "node.id");
    const char *cluster_id = properties_get(&props, "cluster.id");
    const char *directory_id = properties_get(&props, "directory.id");
    int32_t version_number;
    uint8_t uuid[16];
    if (parse_int32(version, &version_number) < 0 || version_number != 1) {
        snprintf(err, errlen, "%s: unsupported version '%s' (expected 1)", path, version ? version : "(missing)");
    } else if (parse_int32(node_id, &out->node_id) < 0 || out->node_id < 0) {
        snprintf(err, errlen, "%s: invalid node.id '%s'", path, node_id ? node_id : "(missing)");
    } else if (!cluster_id || uuid_from_base64url(cluster_id, uuid) < 0) {
        snprintf(err, errlen, "%s: invalid cluster.id '%s'", path, cluster_id ? cluster_id : "(missing)");
    } else if (directory_id && uuid_from_base64url(directory_id, uuid) < 0) {
        snprintf(err, errlen, "%s: invalid directory.id '%s'", path, directory_id);
    } else {
        out->version = version_number;
        memcpy(out->cluster_id, cluster_id, UUID_BASE64URL_LEN + 1);
        if (directory_id)
            memcpy(out->directory_id, directory_id, UUID_BASE64URL_LEN + 1);
        rc = 0;
    }
    properties_free(&props);
    return rc;
}

int meta_properties_write(const char *dir, const struct meta_properties *props, char *err, size_t errlen)
{
    char path[PATH_MAX], content[512];
    if (meta_path(dir, META_PROPERTIES_FILE, path, sizeof path, err, errlen) < 0)
        return -1;
    int len = snprintf(content, sizeof content,
                       "#\n# Identity of this data directory, written by cairnd on first start.\n"
                       "node.id=%d\ndirectory.id=%s\nversion=%d\ncluster.id=%s\n",
                       props->node_id, props->directory_id, props->version, props->cluster_id);
    return fs_replace_file(path, content, (size_t)len, true, err, errlen) == 0 ? 0 : -1;
}

static int new_uuid_text(char out[UUID_BASE64URL_LEN + 1], char *err, size_t errlen)
{
    uint8_t uuid[16];
    if (uuid_random(uuid) < 0) {
        snprintf(err, errlen, "cannot read random bytes: %s", strerror(errno));
        return -1;
    }
    uuid_to_base64url(uuid, out);
    return 0;
}

int meta_properties_ensure(const char *const *dirs, size_t count, int32_t node_id, const char *expected_cluster_id,
                           char cluster_id_out[UUID_BASE64URL_LEN + 1], char *err, size_t errlen)
{
    if (count == 0) {
        snprintf(err, errlen, "no data directory configured");
        return -1;
    }
    struct meta_properties *found = calloc(count, sizeof *found);
    int *present = calloc(count, sizeof *present);
    int rc = -1;
    if (!found || !present) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        for (size_t j = 0; j < i; j++) {
            if (strcmp(dirs[i], dirs[j]) == 0) {
                snprintf(err, errlen, "data directory '%s' is listed twice", dirs[i]);
                goto done;
            }
        }
    }
    const char *cluster_id = expected_cluster_id;
    const char *cluster_origin = "the configuration";
    for (size_t i = 0; i < count; i++) {
        if (fs_mkdir_p(dirs[i], err, errlen) != 0)
            goto done;
        int read_rc = meta_properties_read(dirs[i], &found[i], err, errlen);
        if (read_rc < 0)
            goto done;
        present[i] = read_rc == 0;
        if (!present[i])
            continue;
        if (found[i].node_id != node_id) {
            snprintf(err, errlen,
                     "%s/" META_PROPERTIES_FILE " belongs to node.id %d but this node is configured as node.id %d",
                     dirs[i], found[i].node_id, node_id);
            goto done;
        }
        if (cluster_id && strcmp(cluster_id, found[i].cluster_id) != 0) {
            snprintf(err, errlen, "%s/" META_PROPERTIES_FILE " has cluster.id %s but %s has cluster.id %s", dirs[i],
                     found[i].cluster_id, cluster_origin, cluster_id);
            goto done;
        }
        if (!cluster_id) {
            cluster_id = found[i].cluster_id;
            cluster_origin = dirs[i];
        }
        for (size_t j = 0; j < i; j++) {
            if (present[j] && found[i].directory_id[0] && strcmp(found[i].directory_id, found[j].directory_id) == 0) {
                snprintf(err, errlen, "%s and %s have the same directory.id %s (copied directory?)", dirs[j], dirs[i],
                         found[i].directory_id);
                goto done;
            }
        }
    }
    char generated[UUID_BASE64URL_LEN + 1];
    if (!cluster_id) {
        if (new_uuid_text(generated, err, errlen) < 0)
            goto done;
        cluster_id = generated;
        logger_info("config", "formatting new cluster with cluster.id %s", cluster_id);
    }
    snprintf(cluster_id_out, UUID_BASE64URL_LEN + 1, "%s", cluster_id);
    for (size_t i = 0; i < count; i++) {
        if (present[i] && found[i].directory_id[0])
            continue;
        struct meta_properties props = {.version = 1, .node_id = node_id};
        snprintf(props.cluster_id, sizeof props.cluster_id, "%s", cluster_id_out);
        if (new_uuid_text(props.directory_id, err, errlen) < 0)
            goto done;
        if (meta_properties_write(dirs[i], &props, err, errlen) < 0)
            goto done;
        logger_info("config", "wrote %s/" META_PROPERTIES_FILE " (node.id %d, directory.id %s)", dirs[i], node_id,
                    props.directory_id);
    }
    rc = 0;
done:
    free(found);
    free(present);
    return rc;
}

int meta_properties_format(const char *const *dirs, size_t count, int32_t node_id, const char *cluster_id,
                           bool ignore_formatted, bool *written, char *err, size_t errlen)
{
    uint8_t uuid[16];
    if (!cluster_id || uuid_from_base64url(cluster_id, uuid) < 0) {
        snprintf(err, errlen, "cluster id '%s' is not 22 base64url characters encoding 16 bytes (cairnd random-uuid prints one)",
                 cluster_id ? cluster_id : "");
        return -1;
    }
    if (count == 0) {
        snprintf(err, errlen, "no log directory configured");
        return -1;
    }
    bool *skip = calloc(count, sizeof *skip);
    if (!skip) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = -1;
    for (size_t i = 0; i < count; i++) {
        struct meta_properties found;
        int read_rc = meta_properties_read(dirs[i], &found, err, errlen);
        if (read_rc < 0)
            goto done;
        if (read_rc == 1)
            continue;
        if (strcmp(found.cluster_id, cluster_id) != 0 || found.node_id != node_id) {
            snprintf(err, errlen, "log directory %s is already formatted for cluster.id %s and node.id %d, not %s and %d",
                     dirs[i], found.cluster_id, found.node_id, cluster_id, node_id);
            goto done;
        }
        if (!ignore_formatted) {
            snprintf(err, errlen,
                     "log directory %s is already formatted; use --ignore-formatted to skip it and format the others",
                     dirs[i]);
            goto done;
        }
        skip[i] = true;
    }
    for (size_t i = 0; i < count; i++) {
        if (written)
            written[i] = false;
        if (skip[i])
            continue;
        struct meta_properties props = {.version = 1, .node_id = node_id};
        snprintf(props.cluster_id, sizeof props.cluster_id, "%s", cluster_id);
        if (fs_mkdir_p(dirs[i], err, errlen) != 0 || new_uuid_text(props.directory_id, err, errlen) < 0 ||
            meta_properties_write(dirs[i], &props, err, errlen) < 0)
            goto done;
        if (written)
            written[i] = true;
    }
    rc = 0;
done:
    free(skip);
    return rc;
}

int meta_properties_require(const char *const *dirs, size_t count, char *err, size_t errlen)
{
    for (size_t i = 0; i < count; i++) {
        struct meta_properties found;
        int rc = meta_properties_read(dirs[i], &found, err, errlen);
        if (rc < 0)
            return -1;
        if (rc == 1) {
            snprintf(err, errlen,
                     "log directory %s is not formatted (no " META_PROPERTIES_FILE
                     "): run 'cairnd format --config <file> --cluster-id <id>' on this node first (cairnd "
                     "random-uuid prints a new id)",
                     dirs[i]);
            return -1;
        }
    }
    return 0;
}
