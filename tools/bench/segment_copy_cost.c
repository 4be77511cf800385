/* cairn-segment-copy-cost: what storage-local's copy of one segment costs
 * the thread that makes it, per way of copying: CPU (user and system) and
 * wall time, the final fsync's wall time apart. The source is a segment
 * file of --mib MiB in the page cache (as a just-rolled segment is); the
 * copy goes to a new file in --dir, written, fsynced and deleted, as the
 * plugin does for a segment's .log.
 *
 * usage: cairn-segment-copy-cost [--dir D] [--mib 8] [--copies 16] MODE...
 *   plain      read/write through a 256 KiB buffer, one fsync at the end
 *              (storage-local before copy_file_range)
 *   plain-wb   the same with write-behind (sync_file_range per 8 MiB)
 *   kernel     copy_file_range, one fsync at the end
 *   kernel-wb  copy_file_range with write-behind (storage-local now)
 * Output: one JSON object per mode with the medians per copy and the CPU
 * per GiB copied. */
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

#include "storage_local_internal.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void thread_cpu_ms(double *user, double *sys)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    *user = (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3;
    *sys = (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int make_source(const char *path, size_t bytes)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    uint8_t *buf = malloc(1 << 20);
    if (!buf) {
        close(fd);
        return -1;
    }
    uint64_t x = 88172645463325252ull;
    for (size_t done = 0; done < bytes; done += 1 << 20) {
        for (size_t i = 0; i < (1 << 20); i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(buf + i, &x, 8);
        }
        if (write(fd, buf, 1 << 20) != 1 << 20) {
            free(buf);
            close(fd);
            return -1;
        }
    }
    free(buf);
    return close(fd); /* left dirty-then-clean in the page cache, like a rolled segment */
}

int main(int argc, char **argv)
{
    const char *dir = "/tmp";
    int mib = 8, copies = 16;
    int first_mode = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc) {
            mib = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--copies") == 0 && i + 1 < argc) {
            copies = atoi(argv[++i]);
        } else {
            first_mode = i;
            break;
        }
    }
    if (first_mode >= argc || mib <= 0 || copies <= 0) {
        fprintf(stderr, "usage: %s [--dir D] [--mib 8] [--copies 16] plain|plain-wb|kernel|kernel-wb...\n", argv[0]);
        return 2;
    }
    char src[4096], dst[4200];
    snprintf(src, sizeof src, "%s/segment-copy-cost-%d.log", dir, (int)getpid());
    snprintf(dst, sizeof dst, "%s.copy", src);
    size_t bytes = (size_t)mib << 20;
    if (make_source(src, bytes) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", src, strerror(errno));
        return 1;
    }
    double *user = calloc((size_t)copies, sizeof *user), *sys = calloc((size_t)copies, sizeof *sys);
    double *wall = calloc((size_t)copies, sizeof *wall), *sync_wall = calloc((size_t)copies, sizeof *sync_wall);
    double *total_cpu = calloc((size_t)copies, sizeof *total_cpu);
    int status = user && sys && wall && sync_wall && total_cpu ? 0 : 1;
    for (int m = first_mode; m < argc && status == 0; m++) {
        const char *mode = argv[m];
        bool kernel = strncmp(mode, "kernel", 6) == 0;
        bool behind = strstr(mode, "-wb") != NULL;
        if (!kernel && strncmp(mode, "plain", 5) != 0) {
            fprintf(stderr, "unknown mode %s\n", mode);
            status = 2;
            break;
        }
        struct sl_copy_stats stats = {0};
        for (int c = 0; c < copies; c++) {
            int in = open(src, O_RDONLY | O_CLOEXEC);
            int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (in < 0 || out < 0) {
                fprintf(stderr, "open: %s\n", strerror(errno));
                status = 1;
                break;
            }
            double u0, s0, u1, s1;
            thread_cpu_ms(&u0, &s0);
            double t0 = now_ms();
            int rc = sl_copy_file(in, out, behind, kernel ? sl_copy_range_default : NULL, &stats);
            double t1 = now_ms();
            if (rc == 0)
                rc = fsync(out);
            double t2 = now_ms();
            thread_cpu_ms(&u1, &s1);
            close(out);
            close(in);
            unlink(dst);
            if (rc != 0) {
                fprintf(stderr, "%s: copy failed: %s\n", mode, strerror(errno));
                status = 1;
                break;
            }
            user[c] = u1 - u0;
            sys[c] = s1 - s0;
            wall[c] = t2 - t0;
            sync_wall[c] = t2 - t1;
        }
        if (status != 0)
            break;
        for (int c = 0; c < copies; c++)
            total_cpu[c] = user[c] + sys[c];
        double cpu = median(total_cpu, copies);
        printf("{\"mode\": \"%s\", \"mib\": %d, \"copies\": %d, \"kernel_bytes\": %lld, \"plain_bytes\": %lld, "
               "\"user_ms\": %.2f, \"system_ms\": %.2f, \"cpu_ms\": %.2f, \"wall_ms\": %.2f, \"fsync_wall_ms\": %.2f, "
               "\"cpu_ms_per_gib\": %.1f}\n",
               mode, mib, copies, (long long)stats.kernel_bytes, (long long)stats.plain_bytes, median(user, copies),
               median(sys, copies), cpu, median(wall, copies), median(sync_wall, copies), cpu * 1024.0 / mib);
        fflush(stdout);
    }
    unlink(src);
    free(user);
    free(sys);
    free(wall);
    free(sync_wall);
    free(total_cpu);
    return status;
}
