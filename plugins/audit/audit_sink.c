/* The audit sink: a JSON Lines file that rotates by size, or stdout. */
#include "audit_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AUDIT_SINK_BUFFER_BYTES (64 * 1024)

static int audit_sink_open_file(struct audit_sink *sink, char *err, size_t errlen)
{
    int fd = open(sink->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0) {
        snprintf(err, errlen, "open %s: %s", sink->path, strerror(errno));
        return CAIRN_ERROR;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "stat %s: %s", sink->path, strerror(errno));
        close(fd);
        return CAIRN_ERROR;
    }
    sink->fd = fd;
    sink->owns_fd = true;
    sink->is_regular_file = S_ISREG(st.st_mode);
    sink->file_bytes = sink->is_regular_file ? (uint64_t)st.st_size : 0;
    return CAIRN_OK;
}

int audit_sink_open(struct audit_sink *sink, const struct audit_config *config, char *err, size_t errlen)
{
    memset(sink, 0, sizeof(*sink));
    sink->fd = -1;
    sink->max_bytes = config->file_max_bytes;
    sink->max_files = config->file_max_files;
    sink->buffer = malloc(AUDIT_SINK_BUFFER_BYTES);
    if (!sink->buffer) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    sink->buffer_capacity = AUDIT_SINK_BUFFER_BYTES;
    if (config->sink == AUDIT_SINK_STDOUT) {
        sink->fd = STDOUT_FILENO;
        return CAIRN_OK;
    }
    snprintf(sink->path, sizeof(sink->path), "%s", config->file_path);
    if (audit_sink_open_file(sink, err, errlen) != CAIRN_OK) {
        free(sink->buffer);
        sink->buffer = NULL;
        return CAIRN_ERROR;
    }
    return CAIRN_OK;
}

static int audit_write_all(int fd, const char *data, size_t len, char *err, size_t errlen)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "write: %s", n < 0 ? strerror(errno) : "no progress");
            return CAIRN_ERROR;
        }
        data += n;
        len -= (size_t)n;
    }
    return CAIRN_OK;
}

int audit_sink_flush(struct audit_sink *sink, char *err, size_t errlen)
{
    if (sink->buffered == 0)
        return CAIRN_OK;
    int rc = audit_write_all(sink->fd, sink->buffer, sink->buffered, err, errlen);
    /* A failed write loses the buffer rather than retrying it forever. */
    sink->buffered = 0;
    return rc;
}

/* path.(N-1) -> path.N, ..., path -> path.1; the oldest falls off. */
static int audit_sink_rotate(struct audit_sink *sink, char *err, size_t errlen)
{
    if (audit_sink_flush(sink, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    if (fsync(sink->fd) != 0) {
        /* Rotation goes on; the data was written. */
    }
    close(sink->fd);
    sink->fd = -1;
    char from[AUDIT_PATH_MAX + 24], to[AUDIT_PATH_MAX + 24];
    if (sink->max_files == 0) {
        if (unlink(sink->path) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "remove %s: %s", sink->path, strerror(errno));
        }
    } else {
        for (int64_t i = sink->max_files - 1; i >= 1; i--) {
            snprintf(from, sizeof(from), "%s.%lld", sink->path, (long long)i);
            snprintf(to, sizeof(to), "%s.%lld", sink->path, (long long)(i + 1));
            if (rename(from, to) != 0 && errno != ENOENT) {
                snprintf(err, errlen, "rename %s: %s", from, strerror(errno));
                /* Keep appending to the current file; the next write retries. */
                char ignored[64];
                audit_sink_open_file(sink, ignored, sizeof(ignored));
                return CAIRN_ERROR;
            }
        }
        snprintf(to, sizeof(to), "%s.1", sink->path);
        if (rename(sink->path, to) != 0) {
            snprintf(err, errlen, "rename %s: %s", sink->path, strerror(errno));
        }
    }
    return audit_sink_open_file(sink, err, errlen);
}

int audit_sink_write(struct audit_sink *sink, const char *data, size_t len, char *err, size_t errlen)
{
    if (sink->fd < 0 && sink->path[0] != '\0' && audit_sink_open_file(sink, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    /* A line longer than max_bytes still gets a file of its own. */
    if (sink->is_regular_file && sink->file_bytes > 0 && sink->file_bytes + len > sink->max_bytes) {
        if (audit_sink_rotate(sink, err, errlen) != CAIRN_OK)
            return CAIRN_ERROR;
    }
    int rc = CAIRN_OK;
    if (sink->buffered + len > sink->buffer_capacity)
        rc = audit_sink_flush(sink, err, errlen);
    if (len > sink->buffer_capacity) {
        if (rc == CAIRN_OK)
            rc = audit_write_all(sink->fd, data, len, err, errlen);
    } else {
        memcpy(sink->buffer + sink->buffered, data, len);
        sink->buffered += len;
    }
    if (sink->is_regular_file)
        sink->file_bytes += len;
    return rc;
}

int audit_sink_close(struct audit_sink *sink, char *err, size_t errlen)
{
    int rc = CAIRN_OK;
    if (sink->fd >= 0) {
        rc = audit_sink_flush(sink, err, errlen);
        if (sink->is_regular_file && fsync(sink->fd) != 0 && rc == CAIRN_OK) {
            snprintf(err, errlen, "fsync %s: %s", sink->path, strerror(errno));
            rc = CAIRN_ERROR;
        }
        if (sink->owns_fd)
            close(sink->fd);
    }
    sink->fd = -1;
    free(sink->buffer);
    sink->buffer = NULL;
    return rc;
}
