#include "config/meta_properties.h"

#include "config/properties.h"
#include "util/logger.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    if (!text || !*text) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (*end || errno || v < INT32_MIN || v > INT32_MAX) return -1;
    *out = (int32_t)v;
    return 0;
}

int meta_properties_read(const char *dir, struct meta_properties *out, char *err, size_t errlen)
{
    char path[PATH_MAX];
    memset(out, 0, sizeof *out);
    if (meta_path(dir, META_PROPERTIES_FILE, path, sizeof path, err, errlen) < 0) return -1;
    if (access(path, F_OK) != 0 && errno == ENOENT) return 1;
    struct properties props;
    if (properties_load_file(path, &props, err, errlen) < 0) return -1;
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
        if (directory_id) memcpy(out->directory_id, directory_id, UUID_BASE64URL_LEN + 1);
        rc = 0;
    }
    properties_free(&props);
    return rc;
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int meta_properties_write(const char *dir, const struct meta_properties *props, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX], content[512];
    if (meta_path(dir, META_PROPERTIES_FILE, path, sizeof path, err, errlen) < 0) return -1;
    if (meta_path(dir, META_PROPERTIES_FILE ".tmp", tmp, sizeof tmp, err, errlen) < 0) return -1;
    int len = snprintf(content, sizeof content,
                       "#\n# Identity of this data directory, written by cairnd on first start.\n"
                       "node.id=%d\ndirectory.id=%s\nversion=%d\ncluster.id=%s\n",
                       props->node_id, props->directory_id, props->version, props->cluster_id);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create '%s': %s", tmp, strerror(errno));
        return -1;
    }
    ssize_t written = 0;
    while (written < len) {
        ssize_t n = write(fd, content + written, (size_t)(len - written));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        written += n;
    }
    int saved_errno = errno;
    if (written != len || fsync(fd) != 0) {
        if (written == len) saved_errno = errno;
        close(fd);
        unlink(tmp);
        snprintf(err, errlen, "cannot write '%s': %s", tmp, strerror(saved_errno));
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    /* The rename is durable only once the directory entry is synced. */
    if (fsync_dir(dir) != 0) {
        snprintf(err, errlen, "cannot sync directory '%s': %s", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static int make_dirs(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path) {
        snprintf(err, errlen, "invalid data directory '%s'", dir);
        return -1;
    }
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create data directory '%s': %s", path, strerror(errno));
            return -1;
        }
        path[i] = saved;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "data directory '%s' is not a directory", dir);
        return -1;
    }
    return 0;
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
        if (make_dirs(dirs[i], err, errlen) < 0) goto done;
        int read_rc = meta_properties_read(dirs[i], &found[i], err, errlen);
        if (read_rc < 0) goto done;
        present[i] = read_rc == 0;
        if (!present[i]) continue;
        if (found[i].node_id != node_id) {
            snprintf(err, errlen,
                     "%s/" META_PROPERTIES_FILE " belongs to node.id %d but this node is configured as node.id %d",
                     dirs[i], found[i].node_id, node_id);
            goto done;
        }
        if (cluster_id && strcmp(cluster_id, found[i].cluster_id) != 0) {
            snprintf(err, errlen, "%s/" META_PROPERTIES_FILE " has cluster.id %s but %s has cluster.id %s",
                     dirs[i], found[i].cluster_id, cluster_origin, cluster_id);
            goto done;
        }
        if (!cluster_id) {
            cluster_id = found[i].cluster_id;
            cluster_origin = dirs[i];
        }
        for (size_t j = 0; j < i; j++) {
            if (present[j] && found[i].directory_id[0] &&
                strcmp(found[i].directory_id, found[j].directory_id) == 0) {
                snprintf(err, errlen, "%s and %s have the same directory.id %s (copied directory?)", dirs[j],
                         dirs[i], found[i].directory_id);
                goto done;
            }
        }
    }
    char generated[UUID_BASE64URL_LEN + 1];
    if (!cluster_id) {
        if (new_uuid_text(generated, err, errlen) < 0) goto done;
        cluster_id = generated;
        logger_info("config", "formatting new cluster with cluster.id %s", cluster_id);
    }
    snprintf(cluster_id_out, UUID_BASE64URL_LEN + 1, "%s", cluster_id);
    for (size_t i = 0; i < count; i++) {
        if (present[i] && found[i].directory_id[0]) continue;
        struct meta_properties props = {.version = 1, .node_id = node_id};
        snprintf(props.cluster_id, sizeof props.cluster_id, "%s", cluster_id_out);
        if (new_uuid_text(props.directory_id, err, errlen) < 0) goto done;
        if (meta_properties_write(dirs[i], &props, err, errlen) < 0) goto done;
        logger_info("config", "wrote %s/" META_PROPERTIES_FILE " (node.id %d, directory.id %s)", dirs[i], node_id,
                    props.directory_id);
    }
    rc = 0;
done:
    free(found);
    free(present);
    return rc;
}
