/* Durable directory and small-file helpers (see fs_util.h). */
#include "util/fs_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(int rc, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(int rc, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* mkdir that accepts an existing directory but not an existing file. */
static int make_one_dir(const char *path)
{
    if (mkdir(path, 0755) == 0)
        return 0;
    int rc = errno;
    struct stat st;
    if (rc == EEXIST)
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    return rc;
}

int fs_mkdir_p(const char *path, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    size_t len = path ? strlen(path) : 0;
    if (len == 0)
        return fail(EINVAL, err, errlen, "cannot create directory '': empty path");
    if (len >= sizeof buf)
        return fail(ENAMETOOLONG, err, errlen, "cannot create directory '%s': path too long", path);
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        if (buf[i - 1] == '/')
            continue; /* "a//b" or a trailing slash: nothing new to create */
        char saved = buf[i];
        buf[i] = '\0';
        int rc = make_one_dir(buf);
        if (rc != 0)
            return fail(rc, err, errlen, "cannot create directory '%s': %s", buf, strerror(rc));
        buf[i] = saved;
    }
    return 0;
}

int fs_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int rc = fsync(fd) == 0 ? 0 : errno;
    close(fd);
    return rc;
}

int fs_fsync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return fs_fsync_dir(".");
    if (slash == path)
        return fs_fsync_dir("/");
    char dir[PATH_MAX];
    size_t len = (size_t)(slash - path);
    if (len >= sizeof dir)
        return ENAMETOOLONG;
    memcpy(dir, path, len);
    dir[len] = '\0';
    return fs_fsync_dir(dir);
}

static int write_all(int fd, const char *data, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        done += (size_t)n;
    }
    return 0;
}

int fs_replace_file(const char *path, const void *data, size_t len, bool durable, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return fail(ENAMETOOLONG, err, errlen, "cannot write '%s': path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        int rc = errno;
        return fail(rc, err, errlen, "cannot create '%s': %s", tmp, strerror(rc));
    }
    int rc = write_all(fd, data, len);
    if (rc == 0 && durable && fsync(fd) != 0)
        rc = errno;
    if (close(fd) != 0 && rc == 0)
        rc = errno;
    if (rc != 0) {
        unlink(tmp);
        return fail(rc, err, errlen, "cannot write '%s': %s", tmp, strerror(rc));
    }
    if (rename(tmp, path) != 0) {
        rc = errno;
        unlink(tmp);
        return fail(rc, err, errlen, "cannot rename '%s' to '%s': %s", tmp, path, strerror(rc));
    }
    if (durable && (rc = fs_fsync_parent_dir(path)) != 0)
        return fail(rc, err, errlen, "cannot sync the directory of '%s': %s", path, strerror(rc));
    return 0;
}
