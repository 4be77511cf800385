/* cairn-handoff-cost: what it costs, per KiB, to validate (CRC32C) and
 * append (pwrite) a 1 MiB request body depending on which CPU last wrote
 * it. cairnd's network thread receives a request and an io thread, often on
 * the other core, checks and appends it; this isolates that hand-off.
 *
 *   same    one thread fills the buffer, then CRCs and pwrites it
 *   cross   a thread on CPU 0 fills it; a thread on CPU 1 CRCs and pwrites
 *           (cairnd's path: the data crosses cores before the CRC)
 *   crc-first  the filling thread also CRCs (while the bytes are in its
 *           cache); the other thread only pwrites
 *
 * usage: cairn-handoff-cost [--rounds N] [--dir D] MODE...
 * Each mode prints one JSON line: CPU ns/KiB of the CRC and of the pwrite
 * (thread CPU time, wherever it ran), and their sum. Needs two CPUs. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/crc32c.h"

#define BUFFER_BYTES (1u << 20)
/* Truncate the file every so often so it stays in memory. */
#define ROUNDS_PER_FILE 256

struct run {
    const char *mode;
    int fd;
    int rounds;
    uint8_t *buf;
    atomic_int turn; /* 0: filler's turn, 1: consumer's turn */
    int64_t crc_ns, write_ns;
    volatile uint32_t sink;
    bool failed;
};

static int64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void crc_buffer(struct run *r)
{
    int64_t t0 = thread_cpu_ns();
    r->sink = crc32c(0, r->buf, BUFFER_BYTES);
    r->crc_ns += thread_cpu_ns() - t0;
}

static void write_buffer(struct run *r, int round)
{
    int64_t t0 = thread_cpu_ns();
    off_t pos = (off_t)(round % ROUNDS_PER_FILE) * BUFFER_BYTES;
    if (round % ROUNDS_PER_FILE == 0 && ftruncate(r->fd, 0) != 0)
        r->failed = true;
    if (pwrite(r->fd, r->buf, BUFFER_BYTES, pos) != (ssize_t)BUFFER_BYTES)
        r->failed = true;
    r->write_ns += thread_cpu_ns() - t0;
}

static void *consumer_main(void *arg)
{
    struct run *r = arg;
    pin_to(1);
    bool crc_here = strcmp(r->mode, "cross") == 0;
    for (int i = 0; i < r->rounds; i++) {
        while (atomic_load(&r->turn) != 1)
            ;
        if (crc_here)
            crc_buffer(r);
        write_buffer(r, i);
        atomic_store(&r->turn, 0);
    }
    return NULL;
}

static int run_mode(const char *mode, const char *dir, int rounds)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/handoff-cost.%d.dat", dir, (int)getpid());
    struct run r = {.mode = mode, .rounds = rounds};
    r.fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    r.buf = aligned_alloc(4096, BUFFER_BYTES);
    if (r.fd < 0 || !r.buf) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        free(r.buf);
        return -1;
    }
    bool two_threads = strcmp(mode, "same") != 0;
    pthread_t consumer;
    pin_to(0);
    if (two_threads && pthread_create(&consumer, NULL, consumer_main, &r) != 0) {
        fprintf(stderr, "pthread_create failed\n");
        return -1;
    }
    for (int i = 0; i < rounds; i++) {
        memset(r.buf, i, BUFFER_BYTES); /* stands in for recv() */
        if (strcmp(mode, "cross") != 0)
            crc_buffer(&r);
        if (!two_threads) {
            write_buffer(&r, i);
            continue;
        }
        atomic_store(&r.turn, 1);
        while (atomic_load(&r.turn) != 0)
            ;
    }
    if (two_threads)
        pthread_join(consumer, NULL);
    double kib = (double)rounds * (BUFFER_BYTES >> 10);
    if (!r.failed)
        printf("{\"mode\": \"%s\", \"rounds\": %d, \"crc_ns_per_kib\": %.1f, "
               "\"pwrite_ns_per_kib\": %.1f, \"total_ns_per_kib\": %.1f}\n",
               mode, rounds, (double)r.crc_ns / kib, (double)r.write_ns / kib, (double)(r.crc_ns + r.write_ns) / kib);
    close(r.fd);
    unlink(path);
    free(r.buf);
    return r.failed ? -1 : 0;
}

int main(int argc, char **argv)
{
    int rounds = 2000;
    const char *dir = "/tmp";
    int first_mode = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else {
            first_mode = i;
            break;
        }
    }
    if (first_mode >= argc || rounds <= 0) {
        fprintf(stderr, "usage: cairn-handoff-cost [--rounds N] [--dir D] same|cross|crc-first...\n");
        return 2;
    }
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "cairn-handoff-cost needs two CPUs\n");
        return 2;
    }
    for (int i = first_mode; i < argc; i++) {
        if (strcmp(argv[i], "same") != 0 && strcmp(argv[i], "cross") != 0 && strcmp(argv[i], "crc-first") != 0) {
            fprintf(stderr, "unknown mode %s\n", argv[i]);
            return 2;
        }
        if (run_mode(argv[i], dir, rounds) != 0)
            return 1;
    }
    return 0;
}
