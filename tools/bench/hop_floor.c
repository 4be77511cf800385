/* cairn-hop-floor: the latency floor of the acks=all path's thread and
 * process hand-offs on this machine, with no broker in it. Four processes
 * on loopback TCP (TCP_NODELAY) relay 1 KiB records as cairnd's acks=all
 * RF 3 round trip does:
 *
 *   producer: app thread -> sender thread (queue + eventfd) -> socket
 *   leader:   loop thread (epoll) -> io thread (mutex + condvar) -> loop
 *             (eventfd): the append (pwrite) wakes both followers' parked
 *             fetches; each follower's next fetch moves the high watermark
 *             and the one that passes a record answers its produce
 *   follower (x2): loop thread -> fetcher thread (condvar): pwrite, then
 *             the next fetch goes back through the loop (eventfd)
 *
 * That is the ~8 thread wake-ups in three processes per round trip that
 * cairnd has. --inline runs the io and fetcher work on the loop threads
 * (no hand-off inside a process: what cairnd would cost with follower
 * fetches answered and fetched data appended on the loops); --followers 0
 * is the acks=1 RF 1 shape (the leader answers after its append).
 *
 * The producer sends one record per request at --rate records/s for
 * --seconds (open loop: latency from each record's due time, as
 * `cairn-bench produce --rate`). Prints one JSON line: latency
 * percentiles (ms), CPU seconds per second of the leader and followers
 * together, thread hand-offs (condvar or eventfd wakes) per record, and
 * context switches of those processes per record (set-up included).
 *
 * usage: cairn-hop-floor [--rate 2000] [--seconds 10] [--followers 2|0]
 *                        [--inline] [--dir /tmp]
 * Needs nothing but libc and threads. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RECORD_BYTES 1024
#define MAX_FOLLOWERS 2
#define QUEUE_CAP 8192

enum { MSG_PRODUCE = 1, MSG_PRODUCE_ACK, MSG_FETCH, MSG_FETCH_DATA };

struct frame {
    uint32_t type;
    uint32_t records; /* MSG_FETCH_DATA: records carried */
    int64_t offset;   /* produce: the record's sequence; fetch: the follower's log end */
    int64_t due_ns;   /* produce and its answer: the record's due time */
};

struct shared { /* MAP_SHARED between the processes */
    atomic_long handoffs;
    atomic_int ready;
};

static struct shared *sh;
static bool inline_mode;
static bool count_handoffs; /* in the broker-like processes only */
static int followers = 2;
static char dir[512] = "/tmp";

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what)
{
    perror(what);
    _exit(1);
}

static void read_full(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            _exit(r == 0 ? 0 : 1); /* peer gone: the run is over */
        }
        p += r;
        n -= (size_t)r;
    }
}

static void write_full(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = write(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            die("write");
        p += r;
        n -= (size_t)r;
    }
}

/* A connected pair of loopback TCP sockets with TCP_NODELAY. */
static void tcp_pair(int fds[2])
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        die("listen");
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&a, sizeof a) != 0)
        die("connect");
    fds[1] = accept(l, NULL, NULL);
    if (fds[1] < 0)
        die("accept");
    close(l);
    int one = 1;
    setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A queue of frames to one thread, woken by a condvar or an eventfd. */
struct item {
    int fd; /* where the frame came from or goes */
    struct frame f;
};

struct queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int efd; /* >= 0: wake by eventfd (a loop), else by the condvar */
    struct item items[QUEUE_CAP];
    int head, count;
};

static void queue_init(struct queue *q, bool eventfd_wake)
{
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->efd = eventfd_wake ? eventfd(0, EFD_NONBLOCK) : -1;
    q->head = q->count = 0;
}

static void queue_push(struct queue *q, int fd, const struct frame *f)
{
    pthread_mutex_lock(&q->mu);
    if (q->count == QUEUE_CAP)
        die("queue full");
    bool was_empty = q->count == 0;
    q->items[(q->head + q->count++) % QUEUE_CAP] = (struct item){fd, *f};
    pthread_mutex_unlock(&q->mu);
    if (!was_empty)
        return; /* the consumer is awake or about to drain */
    if (count_handoffs)
        atomic_fetch_add(&sh->handoffs, 1);
    if (q->efd >= 0) {
        uint64_t one = 1;
        if (write(q->efd, &one, sizeof one) != sizeof one)
            die("eventfd");
    } else {
        pthread_cond_signal(&q->cv);
    }
}

/* Takes every queued item into out (at most cap); blocks on the condvar
 * when wait is set. */
static int queue_drain(struct queue *q, struct item *out, int cap, bool wait)
{
    pthread_mutex_lock(&q->mu);
    while (wait && q->count == 0)
        pthread_cond_wait(&q->cv, &q->mu);
    int n = 0;
    while (q->count > 0 && n < cap) {
        out[n++] = q->items[q->head];
        q->head = (q->head + 1) % QUEUE_CAP;
        q->count--;
    }
    pthread_mutex_unlock(&q->mu);
    return n;
}

static int open_log(const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/cairn-hop-floor-%d-%s.log", dir, (int)getpid(), name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("open log");
    unlink(path);
    return fd;
}

/* Appends n records of 1 KiB at record offset off (wrapping every 16 MiB
 * so the file stays in the page cache). */
static void append_records(int fd, int64_t off, uint32_t n)
{
    static uint8_t rec[RECORD_BYTES * 64];
    while (n > 0) {
        uint32_t k = n > 64 ? 64 : n;
        if (pwrite(fd, rec, (size_t)k * RECORD_BYTES, (off_t)(off % 16384) * RECORD_BYTES) < 0)
            die("pwrite");
        off += k;
        n -= k;
    }
}

/* A process's loop: epoll over its sockets and its out-queue's eventfd;
 * frames read go to handle (inline) or to the worker's queue; frames the
 * worker queues are written here. */
struct loop {
    int epfd;
    struct queue out;  /* worker -> loop */
    struct queue work; /* loop -> worker */
    void (*handle)(int fd, const struct frame *f, const uint8_t *payload);
    uint8_t payload[RECORD_BYTES * 64];
};

static struct loop lp;

/* Where handlers send: straight to the socket on the loop thread (inline),
 * through the loop's out-queue from a worker. */
static void emit(int fd, const struct frame *f)
{
    if (inline_mode) {
        write_full(fd, f, sizeof *f);
        if (f->type == MSG_FETCH_DATA)
            write_full(fd, lp.payload, (size_t)f->records * RECORD_BYTES);
        else if (f->type == MSG_PRODUCE)
            write_full(fd, lp.payload, RECORD_BYTES);
    } else {
        queue_push(&lp.out, fd, f);
    }
}

static void *worker_main(void *arg)
{
    (void)arg;
    struct item batch[256];
    for (;;) {
        int n = queue_drain(&lp.work, batch, 256, true);
        for (int i = 0; i < n; i++)
            lp.handle(batch[i].fd, &batch[i].f, NULL);
    }
    return NULL;
}

static void loop_watch(int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    if (epoll_ctl(lp.epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        die("epoll_ctl");
}

static void loop_run(void)
{
    struct epoll_event evs[8];
    struct item batch[256];
    for (;;) {
        int n = epoll_wait(lp.epfd, evs, 8, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lp.out.efd) {
                uint64_t v;
                if (read(fd, &v, sizeof v) < 0 && errno != EAGAIN)
                    die("eventfd read");
                int k;
                while ((k = queue_drain(&lp.out, batch, 256, false)) > 0)
                    for (int j = 0; j < k; j++) {
                        struct frame *f = &batch[j].f;
                        write_full(batch[j].fd, f, sizeof *f);
                        if (f->type == MSG_FETCH_DATA)
                            write_full(batch[j].fd, lp.payload, (size_t)f->records * RECORD_BYTES);
                        else if (f->type == MSG_PRODUCE)
                            write_full(batch[j].fd, lp.payload, RECORD_BYTES);
                    }
                continue;
            }
            struct frame f;
            read_full(fd, &f, sizeof f);
            size_t body = f.type == MSG_PRODUCE      ? RECORD_BYTES
                          : f.type == MSG_FETCH_DATA ? (size_t)f.records * RECORD_BYTES
                                                     : 0;
            uint8_t scratch[RECORD_BYTES];
            for (size_t got = 0; got < body;) {
                size_t k = body - got > sizeof scratch ? sizeof scratch : body - got;
                read_full(fd, scratch, k);
                got += k;
            }
            if (inline_mode)
                lp.handle(fd, &f, NULL);
            else
                queue_push(&lp.work, fd, &f);
        }
    }
}

static void loop_start(void)
{
    lp.epfd = epoll_create1(0);
    queue_init(&lp.out, true);
    queue_init(&lp.work, false);
    loop_watch(lp.out.efd);
    if (!inline_mode) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker_main, NULL) != 0)
            die("pthread_create");
    }
}

/* --- leader --- */
struct pending {
    int64_t offset, seq, due_ns;
};
static int leader_log, producer_fd, follower_fd[MAX_FOLLOWERS];
static int64_t log_end, follower_end[MAX_FOLLOWERS], high_watermark;
static bool parked[MAX_FOLLOWERS];
static struct pending waiting[QUEUE_CAP];
static int waiting_head, waiting_count;

static void leader_answer_produces(void)
{
    int64_t hw = log_end;
    for (int k = 0; k < followers; k++)
        if (follower_end[k] < hw)
            hw = follower_end[k];
    high_watermark = hw;
    while (waiting_count > 0 && waiting[waiting_head].offset < high_watermark) {
        struct pending *p = &waiting[waiting_head];
        emit(producer_fd, &(struct frame){.type = MSG_PRODUCE_ACK, .offset = p->seq, .due_ns = p->due_ns});
        waiting_head = (waiting_head + 1) % QUEUE_CAP;
        waiting_count--;
    }
}

static void leader_serve_fetch(int k)
{
    uint32_t n = (uint32_t)(log_end - follower_end[k]);
    if (n == 0) {
        parked[k] = true;
        return;
    }
    parked[k] = false;
    emit(follower_fd[k],
         &(struct frame){.type = MSG_FETCH_DATA, .records = n > 64 ? 64 : n, .offset = follower_end[k]});
}

static void leader_handle(int fd, const struct frame *f, const uint8_t *payload)
{
    (void)payload;
    if (f->type == MSG_PRODUCE) {
        append_records(leader_log, log_end, 1);
        if (followers == 0) {
            log_end++;
            emit(fd, &(struct frame){.type = MSG_PRODUCE_ACK, .offset = f->offset, .due_ns = f->due_ns});
            return;
        }
        waiting[(waiting_head + waiting_count++) % QUEUE_CAP] = (struct pending){
            .offset = log_end, .seq = f->offset, .due_ns = f->due_ns};
        log_end++;
        for (int k = 0; k < followers; k++)
            if (parked[k])
                leader_serve_fetch(k);
        return;
    }
    for (int k = 0; k < followers; k++)
        if (fd == follower_fd[k]) { /* MSG_FETCH: the follower's log end */
            follower_end[k] = f->offset;
            leader_answer_produces();
            leader_serve_fetch(k);
        }
}

/* --- follower --- */
static int follower_log, leader_fd;
static int64_t follower_log_end;

static void follower_handle(int fd, const struct frame *f, const uint8_t *payload)
{
    (void)fd;
    (void)payload;
    append_records(follower_log, f->offset, f->records);
    follower_log_end = f->offset + f->records;
    emit(leader_fd, &(struct frame){.type = MSG_FETCH, .offset = follower_log_end});
}

/* --- producer --- */
struct producer {
    int fd;
    int64_t total, start_ns, period_ns;
    double *lat_ms;
    atomic_long answered;
    struct queue sendq; /* app thread -> sender thread, eventfd */
};
static struct producer pr;

static void *producer_sender(void *arg)
{
    (void)arg;
    struct item batch[256];
    static uint8_t rec[RECORD_BYTES];
    for (;;) {
        uint64_t v;
        if (read(pr.sendq.efd, &v, sizeof v) < 0 && errno != EAGAIN)
            die("eventfd read");
        int n;
        while ((n = queue_drain(&pr.sendq, batch, 256, false)) > 0)
            for (int i = 0; i < n; i++) {
                write_full(pr.fd, &batch[i].f, sizeof batch[i].f);
                write_full(pr.fd, rec, sizeof rec);
            }
    }
    return NULL;
}

static void *producer_receiver(void *arg)
{
    (void)arg;
    while (atomic_load(&pr.answered) < pr.total) {
        struct frame f;
        read_full(pr.fd, &f, sizeof f);
        pr.lat_ms[f.offset] = (double)(now_ns() - f.due_ns) / 1e6;
        atomic_fetch_add(&pr.answered, 1);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *v, int64_t n, double p)
{
    int64_t i = (int64_t)(p * (double)n);
    return v[i >= n ? n - 1 : i];
}

static double children_cpu_s(long *switches)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    *switches = ru.ru_nvcsw + ru.ru_nivcsw;
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
    int rate = 2000, seconds = 10;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
            rate = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--followers") == 0 && i + 1 < argc)
            followers = atoi(argv[++i]);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            snprintf(dir, sizeof dir, "%s", argv[++i]);
        else if (strcmp(argv[i], "--inline") == 0)
            inline_mode = true;
        else {
            fprintf(stderr, "usage: cairn-hop-floor [--rate 2000] [--seconds 10] [--followers 2|0] [--inline] "
                            "[--dir /tmp]\n");
            return 2;
        }
    }
    if (rate <= 0 || seconds <= 0 || (followers != 0 && followers != MAX_FOLLOWERS)) {
        fprintf(stderr, "cairn-hop-floor: --rate and --seconds > 0, --followers 0 or 2\n");
        return 2;
    }
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        die("mmap");
    int prod[2], fol[MAX_FOLLOWERS][2];
    tcp_pair(prod);
    for (int k = 0; k < followers; k++)
        tcp_pair(fol[k]);
    pid_t pids[1 + MAX_FOLLOWERS];
    int nproc = 0;
    if ((pids[nproc++] = fork()) == 0) { /* leader */
        count_handoffs = true;
        close(prod[0]);
        producer_fd = prod[1];
        leader_log = open_log("leader");
        loop_start();
        lp.handle = leader_handle;
        loop_watch(producer_fd);
        for (int k = 0; k < followers; k++) {
            close(fol[k][0]);
            follower_fd[k] = fol[k][1];
            loop_watch(follower_fd[k]);
        }
        loop_run();
    }
    for (int k = 0; k < followers; k++)
        if ((pids[nproc++] = fork()) == 0) { /* follower k */
            count_handoffs = true;
            close(prod[0]);
            close(prod[1]);
            for (int j = 0; j < followers; j++)
                close(fol[j][1]);
            leader_fd = fol[k][0];
            follower_log = open_log("follower");
            loop_start();
            lp.handle = follower_handle;
            loop_watch(leader_fd);
            emit(leader_fd, &(struct frame){.type = MSG_FETCH, .offset = 0});
            loop_run();
        }
    close(prod[1]);
    for (int k = 0; k < followers; k++) {
        close(fol[k][0]);
        close(fol[k][1]);
    }
    pr.fd = prod[0];
    pr.total = (int64_t)rate * seconds;
    pr.period_ns = 1000000000LL / rate;
    pr.lat_ms = calloc((size_t)pr.total, sizeof *pr.lat_ms);
    if (!pr.lat_ms)
        die("calloc");
    queue_init(&pr.sendq, true);
    pthread_t sender, receiver;
    if (pthread_create(&sender, NULL, producer_sender, NULL) != 0 ||
        pthread_create(&receiver, NULL, producer_receiver, NULL) != 0)
        die("pthread_create");
    usleep(300000); /* the followers' first fetches park at the leader */
    long handoffs0 = atomic_load(&sh->handoffs);
    pr.start_ns = now_ns();
    for (int64_t i = 0; i < pr.total; i++) {
        int64_t due = pr.start_ns + i * pr.period_ns;
        struct timespec ts = {.tv_sec = due / 1000000000, .tv_nsec = due % 1000000000};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        queue_push(&pr.sendq, -1, &(struct frame){.type = MSG_PRODUCE, .offset = i, .due_ns = due});
    }
    pthread_join(receiver, NULL);
    double elapsed_s = (double)(now_ns() - pr.start_ns) / 1e9;
    long handoffs = atomic_load(&sh->handoffs) - handoffs0;
    shutdown(pr.fd, SHUT_RDWR); /* the leader sees EOF and exits, then the followers */
    for (int i = 0; i < nproc; i++)
        waitpid(pids[i], NULL, 0);
    long switches = 0;
    double cpu_s = children_cpu_s(&switches);
    qsort(pr.lat_ms, (size_t)pr.total, sizeof *pr.lat_ms, cmp_double);
    printf("{\"followers\":%d,\"inline\":%s,\"rate\":%d,\"records\":%lld,\"p50_ms\":%.3f,\"p99_ms\":%.3f,"
           "\"p999_ms\":%.3f,\"max_ms\":%.3f,\"broker_cpu_s_per_s\":%.3f,\"handoffs_per_record\":%.2f,"
           "\"switches_per_record\":%.2f}\n",
           followers, inline_mode ? "true" : "false", rate, (long long)pr.total, pct(pr.lat_ms, pr.total, 0.50),
           pct(pr.lat_ms, pr.total, 0.99), pct(pr.lat_ms, pr.total, 0.999), pr.lat_ms[pr.total - 1], cpu_s / elapsed_s,
           (double)handoffs / (double)pr.total, (double)switches / (double)pr.total);
    return 0;
}
