/* storage-local's byte copy of one local file into a store file. The
 * copier runs beside the producer on the same cores and disk, so it keeps
 * its cost down: the kernel moves the bytes (copy_file_range: no trip
 * through user space, a reflink where the filesystem shares extents), and
 * when the copy must be durable it writes behind itself (sync_file_range
 * per window) instead of leaving a whole segment dirty for one long fsync
 * at the end, which would hold the disk and the dirty-page budget the
 * producer's own appends need. Written pages stay cached (clean pages are
 * cheap to reclaim, and a store on this host then serves reads from
 * memory). */
#include "storage_local_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define SL_BUFFER (256 * 1024)

static ssize_t sl_kernel_copy(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned flags)
{
    return copy_file_range(in, in_off, out, out_off, len, flags);
}

const sl_copy_range_fn sl_copy_range_default = sl_kernel_copy;

/* Answers that mean "not here, copy it yourself": another filesystem
 * (EXDEV), a filesystem or kernel without it (EOPNOTSUPP, ENOSYS), a file
 * it will not take (EINVAL), and seccomp filters' EPERM. The file offsets
 * are unchanged after a refusal, so read/write carries on from there. */
static bool sl_kernel_refused(int error)
{
    return error == EXDEV || error == EOPNOTSUPP || error == ENOSYS || error == EINVAL || error == EPERM;
}

static int sl_write_full(int fd, const uint8_t *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Up to want bytes from in's offset to out's through a buffer; 0 at the
 * end of in. */
static ssize_t sl_plain_copy(int in, int out, uint8_t *buf, size_t want)
{
    for (;;) {
        ssize_t n = read(in, buf, want < SL_BUFFER ? want : SL_BUFFER);
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0 && sl_write_full(out, buf, (size_t)n) != 0)
            return -1;
        return n;
    }
}

/* Write-behind: start writing the window just filled, then wait for the
 * one before (started a window ago, so mostly done). The copy's dirty
 * pages stay within two windows. Advisory: an error here comes back from
 * the fsync that follows the copy. */
static void sl_write_behind(int out, off_t window_start, off_t window_end, off_t prev_start)
{
    (void)sync_file_range(out, window_start, window_end - window_start, SYNC_FILE_RANGE_WRITE);
    if (prev_start >= 0 && window_start > prev_start) {
        (void)sync_file_range(out, prev_start, window_start - prev_start,
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    }
}

int sl_copy_file(int in, int out, bool durable, sl_copy_range_fn copy_range, struct sl_copy_stats *stats)
{
    struct stat st;
    if (fstat(in, &st) != 0)
        return -1;
    uint8_t *buf = NULL;
    bool kernel = copy_range != NULL;
    off_t done = 0, window_start = 0, prev_start = -1;
    int rc = 0;
    for (;;) {
        size_t want = SL_COPY_WINDOW - (size_t)(done - window_start);
        ssize_t n;
        if (kernel) {
            n = copy_range(in, NULL, out, NULL, want, 0);
            if (n < 0 && errno == EINTR)
                continue;
            /* 0 before the size fstat gave: some filesystems answer 0 for
             * what they cannot copy; read/write finds the real end. */
            if ((n < 0 && sl_kernel_refused(errno)) || (n == 0 && done < st.st_size)) {
                kernel = false;
                if (stats)
                    stats->fell_back = true;
                continue;
            }
        } else {
            if (!buf && !(buf = malloc(SL_BUFFER))) {
                errno = ENOMEM;
                rc = -1;
                break;
            }
            n = sl_plain_copy(in, out, buf, want);
        }
        if (n < 0) {
            rc = -1;
            break;
        }
        done += n;
        if (stats) {
            if (kernel)
                stats->kernel_bytes += n;
            else
                stats->plain_bytes += n;
        }
        bool at_end = n == 0;
        if ((at_end || done - window_start >= (off_t)SL_COPY_WINDOW) && done > window_start) {
            if (durable)
                sl_write_behind(out, window_start, done, prev_start);
            prev_start = window_start;
            window_start = done;
        }
        if (at_end)
            break;
    }
    int saved = errno;
    free(buf);
    errno = saved;
    return rc;
}
