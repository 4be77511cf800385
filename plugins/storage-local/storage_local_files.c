/* storage-local's file work: the layout, the durable put (temp name,
 * fsync, rename, directory fsync) and ranged reads. */
#include "storage_local_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SL_CHUNK (256 * 1024)

static const char *const sl_suffixes[SL_KIND_COUNT] = {
    [SL_OFFSET_INDEX] = "index",
    [SL_TIME_INDEX] = "timeindex",
    [SL_TXN_INDEX] = "txnindex",
    [SL_PRODUCER_SNAPSHOT] = "snapshot",
    [SL_LEADER_EPOCH] = "leader-epoch-checkpoint",
    [SL_LOG] = "log",
};

const char *sl_kind_suffix(enum sl_kind kind)
{
    return (unsigned)kind < SL_KIND_COUNT ? sl_suffixes[kind] : "unknown";
}

int sl_status_of_errno(int error)
{
    switch (error) {
    case ENOENT:
        return CAIRN_NOT_FOUND;
    case EIO:
    case ENOSPC:
    case EDQUOT:
    case ESTALE:
    case ETIMEDOUT:
    case EAGAIN:
    case EINTR:
    case ENOTCONN:
    case EHOSTDOWN:
    case ENOMEM:
        return CAIRN_RETRIABLE;
    default:
        return CAIRN_ERROR;
    }
}

static void sl_hex(const uint8_t id[16], char out[33])
{
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* Kafka's topic names are [a-zA-Z0-9._-]{1,249}; "." and ".." are not. */
static bool sl_topic_ok(const char *topic)
{
    if (!topic || !topic[0] || strcmp(topic, ".") == 0 || strcmp(topic, "..") == 0 || strlen(topic) > 249)
        return false;
    for (const char *c = topic; *c; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
                  *c == '_' || *c == '-';
        if (!ok)
            return false;
    }
    return true;
}

int sl_segment_dir(const struct sl_store *store, const struct cairn_remote_segment *segment, char *out, size_t outlen)
{
    if (!sl_topic_ok(segment->topic) || segment->partition < 0)
        return CAIRN_INVALID;
    char id[33];
    sl_hex(segment->topic_id, id);
    int n = snprintf(out, outlen, "%s/%s-%" PRId32 "/%s", store->root, segment->topic, segment->partition, id);
    return n > 0 && (size_t)n < outlen ? CAIRN_OK : CAIRN_INVALID;
}

int sl_segment_path(const struct sl_store *store, const struct cairn_remote_segment *segment, enum sl_kind kind,
                    char *out, size_t outlen)
{
    char dir[4096];
    int status = sl_segment_dir(store, segment, dir, sizeof(dir));
    if (status != CAIRN_OK)
        return status;
    if (segment->start_offset < 0)
        return CAIRN_INVALID;
    char id[33];
    sl_hex(segment->segment_id, id);
    int n = snprintf(out, outlen, "%s/%020" PRId64 "-%s.%s", dir, segment->start_offset, id, sl_kind_suffix(kind));
    return n > 0 && (size_t)n < outlen ? CAIRN_OK : CAIRN_INVALID;
}

int sl_sync_dir(const struct sl_store *store, const char *dir, char *err, size_t errlen)
{
    if (!store->fsync)
        return CAIRN_OK;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int error = errno;
        snprintf(err, errlen, "fsync %s: %s", dir, strerror(error));
        if (fd >= 0)
            close(fd);
        return sl_status_of_errno(error);
    }
    close(fd);
    return CAIRN_OK;
}

int sl_make_dirs(const struct sl_store *store, const char *path, char *err, size_t errlen)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return CAIRN_INVALID;
    size_t root_len = strlen(store->root);
    for (char *p = buf + root_len + 1; p <= buf + strlen(buf); p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0755) == 0) {
            /* The new entry lives in its parent; make it durable there. */
            char parent[4096];
            snprintf(parent, sizeof(parent), "%s", buf);
            char *slash = strrchr(parent, '/');
            if (slash)
                *slash = '\0';
            int status = sl_sync_dir(store, parent, err, errlen);
            if (status != CAIRN_OK)
                return status;
        } else if (errno != EEXIST) {
            int error = errno;
            snprintf(err, errlen, "mkdir %s: %s", buf, strerror(error));
            return sl_status_of_errno(error);
        }
        *p = saved;
    }
    return CAIRN_OK;
}

static int sl_write_all(int fd, const uint8_t *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int sl_put_file(const struct sl_store *store, const char *dest, const char *src, const uint8_t *data, size_t len,
                bool sync_dir, char *err, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", dest);
    int in = -1;
    if (src) {
        in = open(src, O_RDONLY | O_CLOEXEC);
        if (in < 0) {
            int error = errno;
            snprintf(err, errlen, "open %s: %s", src, strerror(error));
            /* A vanished local file is the caller's problem to retry. */
            return error == ENOENT ? CAIRN_RETRIABLE : sl_status_of_errno(error);
        }
    }
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const char *step = "create";
    int rc = out < 0 ? -1 : 0;
    if (rc == 0) {
        step = "write";
        rc = src ? sl_copy_file(in, out, store->fsync, store->copy_range, NULL) : sl_write_all(out, data, len);
    }
    if (rc == 0 && store->fsync) {
        step = "fsync";
        rc = fsync(out);
    }
    int error = errno;
    if (out >= 0 && close(out) != 0 && rc == 0) {
        error = errno;
        step = "close";
        rc = -1;
    }
    if (in >= 0)
        close(in);
    if (rc == 0 && rename(tmp, dest) != 0) {
        error = errno;
        step = "rename";
        rc = -1;
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s %s: %s", step, tmp, strerror(error));
        unlink(tmp);
        int status = sl_status_of_errno(error);
        return status == CAIRN_NOT_FOUND ? CAIRN_RETRIABLE : status;
    }
    if (!sync_dir)
        return CAIRN_OK;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", dest);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    return sl_sync_dir(store, dir, err, errlen);
}

int sl_stream_file(const char *path, int64_t start, int64_t end, const struct cairn_byte_sink *sink, char *err,
                   size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int error = errno;
        snprintf(err, errlen, "open %s: %s", path, strerror(error));
        return sl_status_of_errno(error);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int error = errno;
        snprintf(err, errlen, "stat %s: %s", path, strerror(error));
        close(fd);
        return sl_status_of_errno(error);
    }
    if (end < 0 || end > st.st_size)
        end = st.st_size;
    if (start < 0 || start > end) {
        snprintf(err, errlen, "range %" PRId64 "..%" PRId64 " outside %s (%lld bytes)", start, end, path,
                 (long long)st.st_size);
        close(fd);
        return CAIRN_INVALID;
    }
    uint8_t *buf = malloc(SL_CHUNK);
    if (!buf) {
        close(fd);
        snprintf(err, errlen, "out of memory");
        return CAIRN_RETRIABLE;
    }
    int status = CAIRN_OK;
    int64_t pos = start;
    while (pos < end) {
        size_t want = (size_t)(end - pos) < SL_CHUNK ? (size_t)(end - pos) : SL_CHUNK;
        ssize_t n = pread(fd, buf, want, pos);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int error = n < 0 ? errno : EIO;
            snprintf(err, errlen, "read %s at %" PRId64 ": %s", path, pos, n < 0 ? strerror(error) : "short file");
            status = sl_status_of_errno(error);
            break;
        }
        status = sink->write(sink->ctx, buf, (size_t)n);
        if (status != CAIRN_OK) {
            snprintf(err, errlen, "reader stopped the transfer");
            break;
        }
        pos += n;
    }
    free(buf);
    close(fd);
    return status;
}
