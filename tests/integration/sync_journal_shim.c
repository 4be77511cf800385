/* LD_PRELOAD shim for integration_test_flush_durability: before each
 * fsync or fdatasync of a segment's .log file, notes the file's size, and
 * when the call succeeds appends "<path> <size>" to $CAIRN_SYNC_JOURNAL.
 * Those are bytes a power cut could not take (written before the sync
 * began); the test cuts every .log file back to them after a kill -9, as
 * losing the page cache would. Size is taken before the call so a write
 * racing the sync is never counted as synced. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int (*sync_fn)(int);

/* The .log file's size now, or -1 when fd is not a segment's .log. */
static long long segment_size(int fd, char *path, size_t path_cap)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, path_cap - 1);
    if (n < 5)
        return -1;
    path[n] = '\0';
    if (strcmp(path + n - 4, ".log") != 0)
        return -1;
    struct stat st;
    return fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
}

static void journal(const char *path, long long size)
{
    const char *journal_path = getenv("CAIRN_SYNC_JOURNAL");
    if (!journal_path)
        return;
    char line[4200];
    int len = snprintf(line, sizeof line, "%s %lld\n", path, size);
    int fd = open(journal_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    /* One write with O_APPEND: lines of concurrent syncs do not interleave. */
    if (write(fd, line, (size_t)len) != len)
        dprintf(STDERR_FILENO, "sync journal: short write\n");
    close(fd);
}

static int journaled_sync(int fd, const char *name)
{
    sync_fn real = (sync_fn)dlsym(RTLD_NEXT, name);
    char path[4096];
    long long size = segment_size(fd, path, sizeof path);
    int rc = real(fd);
    if (rc == 0 && size >= 0)
        journal(path, size);
    return rc;
}

int fsync(int fd)
{
    return journaled_sync(fd, "fsync");
}

int fdatasync(int fd)
{
    return journaled_sync(fd, "fdatasync");
}
