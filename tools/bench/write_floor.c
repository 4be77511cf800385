/* cairn-write-floor: the CPU cost, per record, of the one write a disk-backed
 * broker cannot avoid: appending the producer's batches, as received, to a
 * segment file in the page cache. The batch sizes are the real ones: read
 * from segment files a cairnd run left behind (each batch's length and record
 * count from its header), so the producer's linger and batch settings carry
 * over without being modelled.
 *
 * usage: cairn-write-floor --sizes-out FILE SEGMENT.log...
 *            write the batch sizes and record counts found in the segments
 *        cairn-write-floor --sizes FILE [--dir D] [--source-mib M] [--index] MODE...
 *            append batches of those sizes to a new file in D, per MODE:
 *
 *   write          pwrite at the end of a file that grows with each write
 *   reserve-steps  the same, with blocks reserved (fallocate KEEP_SIZE) 4 MiB
 *                  at a time ahead of the write position, as cairnd's active
 *                  segment does; the fallocate calls are measured
 *   prealloc       the whole file reserved before the clock starts (the
 *                  cheapest case: log.preallocate without its cost)
 *
 * --index adds, per batch, the 8-byte offset index and 12-byte time index
 * pwrites cairnd makes (one entry per batch at these sizes), to two more files.
 *
 * The source bytes come from a ring of M MiB (default 256, more than the
 * last-level cache) so the copy reads memory, not a cache-hot buffer. CPU is
 * getrusage(RUSAGE_THREAD) user+system over the write loop alone. The file is
 * deleted after each mode. Output: one JSON object per mode; a mode named
 * twice runs twice (pass 1, 2, ...). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define RESERVE_STEP (4 * 1024 * 1024)
/* baseOffset(8) batchLength(4): the batch's size is 12 + batchLength. */
#define BATCH_LENGTH_AT 8
/* ... magic(1 at 16) ... recordsCount, the last 4 bytes of the 61-byte header. */
#define BATCH_HEADER 61
#define RECORD_COUNT_AT 57

struct batch {
    uint32_t bytes;
    uint32_t records;
};

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* pread or pwrite all of len bytes at pos; 0, or -1 on an error or end of file. */
static int io_full(int fd, uint8_t *p, size_t len, off_t pos, bool to_file)
{
    while (len > 0) {
        ssize_t n = to_file ? pwrite(fd, p, len, pos) : pread(fd, p, len, pos);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
        pos += n;
    }
    return 0;
}

/* Appends the batches of one segment file to out; returns the count or -1. */
static long scan_segment(const char *path, FILE *out)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    long count = 0;
    off_t pos = 0;
    uint8_t hdr[BATCH_HEADER];
    /* A preallocated or reserved tail reads as zeros: a zero length ends it. */
    while (io_full(fd, hdr, sizeof hdr, pos, false) == 0) {
        uint32_t len = be32(hdr + BATCH_LENGTH_AT);
        if (len < BATCH_HEADER - 12 || len > (1u << 30))
            break;
        struct batch b = {.bytes = len + 12, .records = be32(hdr + RECORD_COUNT_AT)};
        if (fwrite(&b, sizeof b, 1, out) != 1)
            break;
        pos += (off_t)b.bytes;
        count++;
    }
    close(fd);
    return count;
}

static double thread_cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static double wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

struct run {
    const struct batch *batches;
    size_t count;
    uint8_t *ring;
    size_t ring_bytes;
    const char *dir;
    bool index;
};

static int open_temp(const char *dir, const char *suffix, char *path, size_t cap)
{
    snprintf(path, cap, "%s/cairn-write-floor-%ld.%s", dir, (long)getpid(), suffix);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
    return fd;
}

static int run_mode(const struct run *r, const char *mode, int pass)
{
    bool steps = strcmp(mode, "reserve-steps") == 0, prealloc = strcmp(mode, "prealloc") == 0;
    if (!steps && !prealloc && strcmp(mode, "write") != 0) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return -1;
    }
    char log_path[4096], index_path[4096], time_path[4096];
    int fd = open_temp(r->dir, "log", log_path, sizeof log_path);
    int ifd = r->index ? open_temp(r->dir, "index", index_path, sizeof index_path) : -1;
    int tfd = r->index ? open_temp(r->dir, "timeindex", time_path, sizeof time_path) : -1;
    if (fd < 0 || (r->index && (ifd < 0 || tfd < 0)))
        return -1;
    uint64_t total = 0, records = 0;
    for (size_t i = 0; i < r->count; i++) {
        total += r->batches[i].bytes;
        records += r->batches[i].records;
    }
    if (prealloc && fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)total) != 0)
        fprintf(stderr, "fallocate: %s\n", strerror(errno));
    int rc = 0;
    off_t pos = 0, reserved = 0;
    size_t src = 0;
    uint8_t entry[12] = {0};
    double cpu0 = thread_cpu_us(), wall0 = wall_us();
    for (size_t i = 0; i < r->count && rc == 0; i++) {
        uint32_t len = r->batches[i].bytes;
        if (src + len > r->ring_bytes)
            src = 0;
        if (steps && pos + len + RESERVE_STEP / 2 > reserved) {
            off_t to = (pos + len + RESERVE_STEP) / RESERVE_STEP * RESERVE_STEP;
            if (fallocate(fd, FALLOC_FL_KEEP_SIZE, reserved, to - reserved) == 0)
                reserved = to;
        }
        rc = io_full(fd, r->ring + src, len, pos, true);
        if (rc == 0 && r->index) {
            rc = io_full(ifd, entry, 8, (off_t)i * 8, true);
            if (rc == 0)
                rc = io_full(tfd, entry, 12, (off_t)i * 12, true);
        }
        pos += len;
        src += len;
    }
    double cpu = thread_cpu_us() - cpu0, wall = wall_us() - wall0;
    close(fd);
    unlink(log_path);
    if (r->index) {
        close(ifd);
        close(tfd);
        unlink(index_path);
        unlink(time_path);
    }
    if (rc != 0) {
        fprintf(stderr, "%s: write failed: %s\n", mode, strerror(errno));
        return -1;
    }
    printf("{\"mode\":\"%s\",\"pass\":%d,\"index\":%s,\"batches\":%zu,\"records\":%llu,\"bytes\":%llu,"
           "\"mean_batch_bytes\":%.0f,\"cpu_us\":%.0f,\"wall_us\":%.0f,"
           "\"cpu_us_per_record\":%.4f,\"cpu_ns_per_kib\":%.1f}\n",
           mode, pass, r->index ? "true" : "false", r->count, (unsigned long long)records, (unsigned long long)total,
           r->count ? (double)total / (double)r->count : 0.0, cpu, wall, records ? cpu / (double)records : 0.0,
           total ? cpu * 1e3 * 1024.0 / (double)total : 0.0);
    fflush(stdout);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: cairn-write-floor --sizes-out FILE SEGMENT.log...\n"
                    "       cairn-write-floor --sizes FILE [--dir D] [--source-mib M] [--index] "
                    "write|reserve-steps|prealloc...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *sizes_out = NULL, *sizes = NULL, *dir = ".";
    size_t source_mib = 256;
    bool index = false;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--index") == 0)
            index = true;
        else if (i + 1 >= argc)
            return usage();
        else if (strcmp(argv[i], "--sizes-out") == 0)
            sizes_out = argv[++i];
        else if (strcmp(argv[i], "--sizes") == 0)
            sizes = argv[++i];
        else if (strcmp(argv[i], "--dir") == 0)
            dir = argv[++i];
        else if (strcmp(argv[i], "--source-mib") == 0)
            source_mib = (size_t)strtoul(argv[++i], NULL, 10);
        else
            return usage();
    }
    if (i >= argc || (!sizes_out == !sizes) || source_mib == 0)
        return usage();
    if (sizes_out) {
        FILE *out = fopen(sizes_out, "wb");
        if (!out)
            return 1;
        long total = 0;
        for (; i < argc; i++) {
            long n = scan_segment(argv[i], out);
            if (n < 0)
                return 1;
            total += n;
        }
        fclose(out);
        fprintf(stderr, "%ld batches\n", total);
        return total > 0 ? 0 : 1;
    }
    FILE *in = fopen(sizes, "rb");
    if (!in)
        return 1;
    size_t cap = 1024, count = 0;
    struct batch *batches = malloc(cap * sizeof *batches);
    while (batches && fread(&batches[count], sizeof *batches, 1, in) == 1)
        if (++count == cap)
            batches = realloc(batches, (cap *= 2) * sizeof *batches);
    fclose(in);
    struct run r = {.batches = batches, .count = count, .ring_bytes = source_mib << 20, .dir = dir, .index = index};
    for (size_t k = 0; batches && k < count; k++)
        if (batches[k].bytes > r.ring_bytes)
            r.ring_bytes = batches[k].bytes;
    uint8_t *ring = malloc(r.ring_bytes);
    if (!batches || !ring || count == 0)
        return 1;
    /* Touch every page: the source is resident memory, as a received buffer is. */
    for (size_t k = 0; k < r.ring_bytes; k++)
        ring[k] = (uint8_t)(k * 131);
    r.ring = ring;
    /* A mode named again is a further pass: the first pass writes into memory
     * the page cache has to obtain, later ones into pages the previous pass
     * freed (on a VM that hands free memory back to its host the difference
     * is several times; docs/benchmarks.md). */
    for (int first = i; i < argc; i++) {
        int pass = 1;
        for (int k = first; k < i; k++)
            pass += strcmp(argv[k], argv[i]) == 0;
        if (run_mode(&r, argv[i], pass) != 0)
            return 1;
    }
    free(ring);
    free(batches);
    return 0;
}
