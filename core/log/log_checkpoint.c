/* Atomic small-file writes and Kafka's offset checkpoint text format. */
#include "log/log_checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs_util.h"

int log_file_write_atomic(const char *path, const char *data, size_t len)
{
    return fs_replace_file(path, data, len, true, NULL, 0);
}

int log_file_write_atomic_unsynced(const char *path, const char *data, size_t len)
{
    return fs_replace_file(path, data, len, false, NULL, 0);
}

int log_file_read_all(const char *path, size_t max, char **out, size_t *out_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = errno;
        close(fd);
        return rc;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > max) {
        close(fd);
        return EFBIG;
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size + 1);
    if (!buf) {
        close(fd);
        return ENOMEM;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t n = read(fd, buf + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    close(fd);
    buf[done] = '\0';
    *out = buf;
    *out_len = done;
    return 0;
}

int log_offset_checkpoint_write(const char *path, const struct log_offset_checkpoint_entry *e, size_t n)
{
    char *text = NULL;
    size_t text_len = 0;
    FILE *mem = open_memstream(&text, &text_len);
    if (!mem)
        return ENOMEM;
    fprintf(mem, "0\n%zu\n", n);
    for (size_t i = 0; i < n; i++)
        fprintf(mem, "%s %" PRId32 " %" PRId64 "\n", e[i].topic, e[i].partition, e[i].offset);
    if (fclose(mem) != 0) {
        free(text);
        return ENOMEM;
    }
    int rc = log_file_write_atomic(path, text, text_len);
    free(text);
    return rc;
}

void log_offset_checkpoint_free(struct log_offset_checkpoint_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].topic);
    free(e);
}

int log_offset_checkpoint_read(const char *path, struct log_offset_checkpoint_entry **out, size_t *n_out)
{
    char *text;
    size_t len;
    int rc = log_file_read_all(path, 64u * 1024 * 1024, &text, &len);
    if (rc != 0)
        return rc;
    char *save = NULL;
    char *line = strtok_r(text, "\n", &save);
    long long count = -1;
    struct log_offset_checkpoint_entry *entries = NULL;
    size_t n = 0;
    rc = EINVAL;
    if (!line || strcmp(line, "0") != 0)
        goto done;
    line = strtok_r(NULL, "\n", &save);
    if (!line || sscanf(line, "%lld", &count) != 1 || count < 0 || (size_t)count > len)
        goto done;
    entries = calloc((size_t)count + 1, sizeof *entries);
    if (!entries) {
        rc = ENOMEM;
        goto done;
    }
    while (n < (size_t)count && (line = strtok_r(NULL, "\n", &save)) != NULL) {
        char *last = strrchr(line, ' ');
        if (!last || last == line)
            goto done;
        *last = '\0';
        char *mid = strrchr(line, ' ');
        if (!mid || mid == line)
            goto done;
        *mid = '\0';
        char *end;
        errno = 0;
        long long partition = strtoll(mid + 1, &end, 10);
        if (errno || *end || partition < 0 || partition > INT32_MAX)
            goto done;
        long long offset = strtoll(last + 1, &end, 10);
        if (errno || *end)
            goto done;
        entries[n].topic = strdup(line);
        if (!entries[n].topic) {
            rc = ENOMEM;
            goto done;
        }
        entries[n].partition = (int32_t)partition;
        entries[n].offset = offset;
        n++;
    }
    if (n == (size_t)count)
        rc = 0;
done:
    free(text);
    if (rc != 0) {
        log_offset_checkpoint_free(entries, n);
        return rc;
    }
    *out = entries;
    *n_out = n;
    return 0;
}

int log_parse_partition_dir(const char *name, char **topic, int32_t *partition)
{
    const char *dash = strrchr(name, '-');
    if (!dash || dash == name || dash[1] == '\0')
        return -1;
    long long value = 0;
    for (const char *p = dash + 1; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        value = value * 10 + (*p - '0');
        if (value > INT32_MAX)
            return -1;
    }
    *topic = strndup(name, (size_t)(dash - name));
    if (!*topic)
        return -1;
    *partition = (int32_t)value;
    return 0;
}
