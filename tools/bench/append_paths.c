/* cairn-append-paths: CPU cost, per KiB, of the ways received bytes can reach
 * a log file's page cache. A sender thread streams fixed-size chunks over
 * loopback TCP; the receiving thread measures its own CPU time for:
 *
 *   recv    recv() into a reused buffer, nothing else (the socket copy alone)
 *   write   recv() into the buffer, then pwrite() it to the file (what cairnd
 *           does: two copies, socket -> buffer -> page cache)
 *   write-fallocate  the same, blocks reserved first (FALLOC_FL_KEEP_SIZE, as
 *           log.preallocate does)
 *   write-reserve-steps  the same, blocks reserved in bounded steps as
 *           cairnd's active segment does: from the first --reserve-mib step
 *           of data on, extended by one step when the write position comes
 *           within half a step of the reserved end (the fallocate calls are
 *           part of the measured CPU)
 *   write-misaligned  as write, with the buffer address and the file position
 *           differing by 36 bytes modulo 64 (as a batch inside a request frame
 *           and its place in a segment usually do)
 *   mmap    recv() straight into a shared mapping of the file, pages made
 *           writable ahead with MADV_POPULATE_WRITE (one copy); the file is
 *           sized with ftruncate (sparse)
 *   mmap-fallocate  the same with the blocks allocated up front (fallocate)
 *   splice  splice() from the socket into a pipe and from the pipe into the
 *           file: no copy to user space, one copy into the page cache (but no
 *           user-space view of the bytes to validate before they are written)
 *   direct  recv() into an aligned buffer, pwrite() through an O_DIRECT
 *           descriptor: the device copies from user memory (DMA), the page
 *           cache is bypassed (a later read goes to the disk)
 *   direct-staged  as direct, with a memcpy into an aligned staging buffer
 *           first, as a log appending batches at arbitrary positions would need
 *
 * usage: cairn-append-paths [--mib N] [--chunk-kib K] [--reserve-mib S] [--sync] [--dir D]
 *            MODE...
 *
 * --sync ends each run with fdatasync and also reports the whole machine's
 * busy CPU (from /proc/stat, steal excluded) over the run and the sync: block
 * allocation and extent conversion that a mode moves out of write() into
 * writeback show up there, not in the receiving thread.
 *
 * file_cpu_ns_per_kib is the part spent in pwrite and fallocate (splice: the
 * pipe-to-file half; direct-staged: with the staging copy), which the
 * socket's noise does not reach. Only the receiving thread is measured:
 * loopback transmit work done in the sender's context is the same for every
 * mode. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define POPULATE_AHEAD (4u << 20)
/* O_DIRECT needs buffer, offset and length aligned to the logical block. */
#define DIRECT_ALIGN 4096

struct sender_args {
    int fd;
    size_t total;
    size_t chunk;
};

static void *sender_main(void *arg)
{
    struct sender_args *a = arg;
    uint8_t *buf = malloc(a->chunk);
    if (!buf)
        return NULL;
    memset(buf, 'x', a->chunk);
    size_t sent = 0;
    while (sent < a->total) {
        size_t want = a->total - sent < a->chunk ? a->total - sent : a->chunk;
        ssize_t n = send(a->fd, buf, want, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        sent += (size_t)n;
    }
    free(buf);
    return NULL;
}

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Busy CPU of the whole machine in ns (user, nice, system, irq, softirq). */
static int64_t machine_busy_ns(void)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[7] = {0};
    if (!f)
        return 0;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]);
    fclose(f);
    if (n != 7)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6];
    return (int64_t)(busy * (1000000000ULL / (unsigned long long)(hz > 0 ? hz : 100)));
}

static int connect_pair(int *rx, int *tx)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 1) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &len) != 0)
        return -1;
    *tx = socket(AF_INET, SOCK_STREAM, 0);
    if (*tx < 0 || connect(*tx, (struct sockaddr *)&sa, sizeof sa) != 0)
        return -1;
    *rx = accept(lfd, NULL, NULL);
    close(lfd);
    return *rx < 0 ? -1 : 0;
}

/* Reads exactly len bytes into dst; 0 or -1. */
static int recv_full(int fd, uint8_t *dst, size_t len)
{
    while (len > 0) {
        ssize_t n = recv(fd, dst, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        dst += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Keeps at least step/2 bytes reserved past end once a step has been written,
 * as cairnd's active segment does; *reserved is the end of the reservation.
 * 0 or -1. */
static int reserve_ahead(int file, size_t end, size_t step, size_t *reserved)
{
    if (end < step)
        return 0;
    while (*reserved < end + step / 2) {
        if (fallocate(file, FALLOC_FL_KEEP_SIZE, (off_t)*reserved, (off_t)step) != 0) {
            fprintf(stderr, "fallocate: %s\n", strerror(errno));
            return -1;
        }
        *reserved += step;
    }
    return 0;
}

/* Moves len bytes socket -> pipe -> file at pos; *file_cpu gets the time of
 * the pipe -> file half. 0 or -1. */
static int splice_chunk(int sock, const int pipe_fds[2], int file, loff_t pos, size_t len, int64_t *file_cpu)
{
    while (len > 0) {
        ssize_t in = splice(sock, NULL, pipe_fds[1], NULL, len, SPLICE_F_MOVE);
        if (in < 0 && errno == EINTR)
            continue;
        if (in <= 0)
            return -1;
        int64_t t0 = thread_cpu_ns();
        size_t left = (size_t)in;
        while (left > 0) {
            ssize_t out = splice(pipe_fds[0], NULL, file, &pos, left, SPLICE_F_MOVE);
            if (out <= 0)
                return -1;
            left -= (size_t)out;
        }
        *file_cpu += thread_cpu_ns() - t0;
        len -= (size_t)in;
    }
    return 0;
}

static int run_mode(const char *mode, const char *dir, size_t total, size_t chunk, size_t reserve_step,
                    bool sync_at_end)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/append-paths.%d.log", dir, (int)getpid());
    int file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (file < 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    int rx, tx;
    if (connect_pair(&rx, &tx) != 0) {
        fprintf(stderr, "loopback connection failed: %s\n", strerror(errno));
        close(file);
        unlink(path);
        return -1;
    }
    /* 64 bytes of slack so the misaligned mode can start inside the buffer;
     * aligned for the direct modes. */
    uint8_t *alloc = aligned_alloc(DIRECT_ALIGN, chunk + DIRECT_ALIGN);
    uint8_t *staging = NULL;
    uint8_t *buf = strcmp(mode, "write-misaligned") == 0 ? alloc + 36 : alloc;
    bool use_direct = strncmp(mode, "direct", 6) == 0;
    bool use_splice = strcmp(mode, "splice") == 0;
    int direct_fd = -1, pipe_fds[2] = {-1, -1};
    if (use_direct) {
        if (chunk % DIRECT_ALIGN != 0 || total % chunk != 0) {
            fprintf(stderr, "direct modes need --chunk-kib a multiple of 4 dividing --mib\n");
            return -1;
        }
        direct_fd = open(path, O_WRONLY | O_DIRECT);
        if (direct_fd < 0) {
            fprintf(stderr, "O_DIRECT: %s\n", strerror(errno));
            return -1;
        }
        if (strcmp(mode, "direct-staged") == 0)
            staging = aligned_alloc(DIRECT_ALIGN, chunk);
    }
    if (use_splice) {
        if (pipe(pipe_fds) != 0 || fcntl(pipe_fds[1], F_SETPIPE_SZ, (int)chunk) < 0) {
            fprintf(stderr, "pipe of %zu bytes: %s\n", chunk, strerror(errno));
            return -1;
        }
    }
    uint8_t *map = NULL;
    if (strcmp(mode, "write-fallocate") == 0 && fallocate(file, FALLOC_FL_KEEP_SIZE, 0, (off_t)total) != 0) {
        fprintf(stderr, "fallocate: %s\n", strerror(errno));
        return -1;
    }
    bool use_map = strncmp(mode, "mmap", 4) == 0;
    if (use_map) {
        int sized = strcmp(mode, "mmap-fallocate") == 0 ? fallocate(file, 0, 0, (off_t)total)
                                                        : ftruncate(file, (off_t)total);
        if (sized != 0 || (map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0)) == MAP_FAILED) {
            fprintf(stderr, "mmap: %s\n", strerror(errno));
            return -1;
        }
    }
    struct sender_args args = {tx, total, chunk};
    pthread_t sender;
    pthread_create(&sender, NULL, sender_main, &args);
    int64_t busy0 = machine_busy_ns();
    int64_t cpu0 = thread_cpu_ns();
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    size_t done = 0, populated = 0, reserved = 0;
    int64_t file_cpu = 0; /* pwrite and fallocate alone, without recv */
    bool reserve_steps = strcmp(mode, "write-reserve-steps") == 0;
    int rc = 0;
    while (rc == 0 && done < total) {
        size_t want = total - done < chunk ? total - done : chunk;
        if (use_map) {
            if (populated < done + want) {
                size_t span = total - populated < POPULATE_AHEAD ? total - populated : POPULATE_AHEAD;
                if (madvise(map + populated, span, MADV_POPULATE_WRITE) != 0) {
                    fprintf(stderr, "MADV_POPULATE_WRITE: %s\n", strerror(errno));
                    rc = -1;
                    break;
                }
                populated += span;
            }
            rc = recv_full(rx, map + done, want);
        } else if (use_splice) {
            int64_t spliced_cpu = 0;
            rc = splice_chunk(rx, pipe_fds, file, (loff_t)done, want, &spliced_cpu);
            file_cpu += spliced_cpu;
        } else if (use_direct) {
            rc = recv_full(rx, buf, want);
            int64_t file0 = thread_cpu_ns();
            const uint8_t *src = buf;
            if (rc == 0 && staging) {
                memcpy(staging, buf, want);
                src = staging;
            }
            if (rc == 0 && pwrite(direct_fd, src, want, (off_t)done) != (ssize_t)want) {
                fprintf(stderr, "O_DIRECT pwrite: %s\n", strerror(errno));
                rc = -1;
            }
            file_cpu += thread_cpu_ns() - file0;
        } else {
            rc = recv_full(rx, buf, want);
            int64_t file0 = thread_cpu_ns();
            if (rc == 0 && reserve_steps)
                rc = reserve_ahead(file, done + want, reserve_step, &reserved);
            if (rc == 0 && strncmp(mode, "write", 5) == 0 && pwrite(file, buf, want, (off_t)done) != (ssize_t)want)
                rc = -1;
            file_cpu += thread_cpu_ns() - file0;
        }
        done += want;
    }
    int64_t cpu = thread_cpu_ns() - cpu0;
    clock_gettime(CLOCK_MONOTONIC, &w1);
    pthread_join(sender, NULL);
    char synced[96] = "";
    if (rc == 0 && sync_at_end) {
        if (fdatasync(file) != 0) {
            fprintf(stderr, "fdatasync: %s\n", strerror(errno));
            rc = -1;
        }
        snprintf(synced, sizeof synced, ", \"machine_cpu_ns_per_kib_with_sync\": %.1f",
                 (double)(machine_busy_ns() - busy0) / (double)(total >> 10));
    }
    double wall = (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9;
    if (rc == 0)
        printf("{\"mode\": \"%s\", \"mib\": %zu, \"chunk_kib\": %zu, \"receiver_cpu_ns_per_kib\": %.1f, "
               "\"file_cpu_ns_per_kib\": %.1f, \"wall_mib_per_s\": %.0f%s}\n",
               mode, total >> 20, chunk >> 10, (double)cpu / (double)(total >> 10),
               (double)file_cpu / (double)(total >> 10), (double)(total >> 20) / wall, synced);
    if (map)
        munmap(map, total);
    if (direct_fd >= 0)
        close(direct_fd);
    if (pipe_fds[0] >= 0) {
        close(pipe_fds[0]);
        close(pipe_fds[1]);
    }
    free(staging);
    free(alloc);
    close(rx);
    close(tx);
    close(file);
    unlink(path);
    return rc;
}

int main(int argc, char **argv)
{
    size_t mib = 1024, chunk_kib = 1024, reserve_mib = 8;
    bool sync_at_end = false;
    const char *dir = "/tmp";
    int first_mode = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
            mib = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--chunk-kib") == 0 && i + 1 < argc)
            chunk_kib = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--reserve-mib") == 0 && i + 1 < argc)
            reserve_mib = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--sync") == 0)
            sync_at_end = true;
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else {
            first_mode = i;
            break;
        }
    }
    if (first_mode >= argc || mib == 0 || chunk_kib == 0 || reserve_mib == 0) {
        fprintf(stderr, "usage: cairn-append-paths [--mib N] [--chunk-kib K] [--reserve-mib S] "
                        "[--sync] [--dir D] recv|write|write-fallocate|write-reserve-steps|"
                        "write-misaligned|mmap|mmap-fallocate|splice|direct|direct-staged...\n");
        return 2;
    }
    for (int i = first_mode; i < argc; i++) {
        if (strcmp(argv[i], "recv") != 0 && strcmp(argv[i], "write") != 0 && strcmp(argv[i], "mmap") != 0 &&
            strcmp(argv[i], "mmap-fallocate") != 0 && strcmp(argv[i], "write-fallocate") != 0 &&
            strcmp(argv[i], "write-misaligned") != 0 && strcmp(argv[i], "write-reserve-steps") != 0 &&
            strcmp(argv[i], "splice") != 0 && strcmp(argv[i], "direct") != 0 && strcmp(argv[i], "direct-staged") != 0) {
            fprintf(stderr, "unknown mode %s\n", argv[i]);
            return 2;
        }
        if (run_mode(argv[i], dir, mib << 20, chunk_kib << 10, reserve_mib << 20, sync_at_end) != 0)
            return 1;
    }
    return 0;
}
