/* Idempotent producer against a real cairnd.
 * 1. Raw connection: InitProducerId, a batch with sequence 0 and its retry
 *    (same base offset, written once), a sequence gap, a stale epoch after a
 *    KIP-360 bump, a transactional id, and retries recognised after a clean
 *    stop and after kill -9.
 * 2. librdkafka with enable.idempotence=true producing 100k records through
 *    a proxy that drops some Produce responses after the broker wrote the
 *    batch (so the client retries batches already in the log), while the
 *    broker is stopped with SIGTERM and later killed with kill -9: every
 *    acknowledged record is read back once, in order per partition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RAW_TOPIC "idem-raw"
#define LOAD_TOPIC "idem-load"
#define LOAD_PARTITIONS 3
#define LOAD_MESSAGES 100000L
#define LOAD_STOP_AT 30000L /* deliveries before SIGTERM */
#define LOAD_KILL_AT 60000L /* deliveries before kill -9 */

#define API_PRODUCE 0
#define API_INIT_PRODUCER_ID 22
#define ERR_NONE 0
#define ERR_INVALID_REQUEST 42
#define ERR_OUT_OF_ORDER_SEQUENCE_NUMBER 45
#define ERR_INVALID_PRODUCER_EPOCH 47
#define ERR_PRODUCER_FENCED 90

static int32_t next_correlation = 1000;

/* Sends the frame and returns the response body after the correlation id
 * (header v0) or after it and the tagged fields (flexible). */
static uint8_t *exchange(int port, struct raw_writer *w, bool flexible_response, struct raw_reader *r)
{
    int fd = raw_connect(port, 10000);
    assert_true(fd >= 0);
    assert_int_equal(raw_send_all(fd, w->data, w->len), 0);
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = raw_recv_frame(fd, 10000, 1 << 20, &frame, &len);
    close(fd);
    if (rc != 0)
        fail_msg("no answer (%s)", rc == 1 ? "connection closed" : "timeout");
    raw_reader_init(r, frame, len);
    (void)raw_get_i32(r);
    if (flexible_response)
        raw_skip_tagged_fields(r);
    return frame;
}

struct pid_answer {
    int16_t error;
    int64_t producer_id;
    int16_t epoch;
};

/* InitProducerId at `version` (flexible from v2); producer_id and epoch are
 * sent from v3 on. */
static struct pid_answer init_producer_id(int port, int16_t version, const char *txn_id, int64_t producer_id,
                                          int16_t epoch)
{
    struct raw_writer w;
    raw_writer_init(&w);
    bool flexible = version >= 2;
    if (flexible) {
        raw_frame_begin_flexible(&w, API_INIT_PRODUCER_ID, version, next_correlation++, "idem-raw");
        raw_put_compact_string(&w, txn_id);
    } else {
        raw_frame_begin(&w, API_INIT_PRODUCER_ID, version, next_correlation++, "idem-raw");
        raw_put_string(&w, txn_id);
    }
    raw_put_i32(&w, 60000);
    if (version >= 3) {
        raw_put_i64(&w, producer_id);
        raw_put_i16(&w, epoch);
    }
    if (flexible)
        raw_put_uvarint(&w, 0);
    raw_frame_finish(&w);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, flexible, &r);
    raw_writer_free(&w);
    struct pid_answer a;
    (void)raw_get_i32(&r); /* throttle */
    a.error = raw_get_i16(&r);
    a.producer_id = raw_get_i64(&r);
    a.epoch = raw_get_i16(&r);
    bool overflow = r.overflow;
    free(frame);
    assert_false(overflow);
    return a;
}

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * (bytes - 1 - i)));
}

/* A batch of `count` records "pid/epoch/seq+i" with producer fields set. */
static void idem_batch(struct raw_writer *w, int64_t pid, int16_t epoch, int32_t seq, int count)
{
    struct raw_record recs[8];
    char values[8][48];
    assert_true(count <= 8);
    for (int i = 0; i < count; i++) {
        snprintf(values[i], sizeof values[i], "%" PRId64 "/%d/%d", pid, epoch, seq + i);
        recs[i] = (struct raw_record){NULL, values[i]};
    }
    size_t start = raw_build_record_batch(w, 1700000000000LL, recs, count);
    uint8_t *b = w->data + start;
    put_be(b + 43, (uint64_t)pid, 8);
    put_be(b + 51, (uint64_t)(uint16_t)epoch, 2);
    put_be(b + 53, (uint64_t)(uint32_t)seq, 4);
    put_be(b + 17, raw_crc32c(b + 21, w->len - start - 21), 4);
}

/* Produce v7 of one batch to RAW_TOPIC[0]; returns the error, *base the offset. */
static int16_t produce_batch(int port, int64_t pid, int16_t epoch, int32_t seq, int count, int64_t *base)
{
    struct raw_writer batch;
    raw_writer_init(&batch);
    idem_batch(&batch, pid, epoch, seq, count);
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, API_PRODUCE, 7, next_correlation++, "idem-raw");
    raw_put_produce_body(&w, NULL, -1, RAW_TOPIC, 0, batch.data, batch.len);
    raw_frame_finish(&w);
    raw_writer_free(&batch);
    struct raw_reader r;
    uint8_t *frame = exchange(port, &w, false, &r);
    raw_writer_free(&w);
    int32_t topics = raw_get_i32(&r);
    raw_skip_string(&r);
    int32_t partitions = raw_get_i32(&r);
    (void)raw_get_i32(&r);
    int16_t error = raw_get_i16(&r);
    *base = raw_get_i64(&r);
    bool ok = !r.overflow && topics == 1 && partitions == 1;
    free(frame);
    assert_true(ok);
    return error;
}

/* ---- a TCP proxy that loses Produce responses ----
 * Owned by the test thread; the accept thread and one thread per connection
 * share only `stop` and `dropped` (atomics). Each connection relays whole
 * frames: it remembers the api key of every request it forwarded and, for
 * every PROXY_DROP_EVERY-th Produce response, closes both sides instead of
 * relaying it. The broker has written that batch; the client retries it. */
#define PROXY_DROP_EVERY 7
#define PROXY_MAX_FRAME (64 * 1024 * 1024)

struct fault_proxy {
    int listen_fd;
    int port;
    int broker_port;
    pthread_t accept_thread;
    atomic_bool stop;
    atomic_long dropped;
    atomic_long produce_responses;
};

struct proxy_conn {
    struct fault_proxy *proxy;
    int client_fd, broker_fd;
    uint8_t *buf[2]; /* 0: client->broker, 1: broker->client */
    size_t len[2], cap[2];
    int16_t keys[512]; /* api keys of forwarded requests, FIFO */
    size_t key_head, key_tail;
};

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Forward every complete frame in direction dir; false closes the pair. */
static bool proxy_pump(struct proxy_conn *c, int dir)
{
    size_t pos = 0;
    bool ok = true;
    while (ok && c->len[dir] - pos >= 4) {
        const uint8_t *f = c->buf[dir] + pos;
        uint32_t size = (uint32_t)f[0] << 24 | (uint32_t)f[1] << 16 | (uint32_t)f[2] << 8 | f[3];
        if (size > PROXY_MAX_FRAME || size < 4)
            return false;
        if (c->len[dir] - pos < 4 + (size_t)size)
            break;
        if (dir == 0) {
            if (c->key_tail - c->key_head == 512)
                return false;
            c->keys[c->key_tail++ % 512] = (int16_t)(f[4] << 8 | f[5]);
            ok = write_all(c->broker_fd, f, 4 + (size_t)size);
        } else {
            if (c->key_head == c->key_tail)
                return false;
            int16_t key = c->keys[c->key_head++ % 512];
            if (key == API_PRODUCE &&
                atomic_fetch_add(&c->proxy->produce_responses, 1) % PROXY_DROP_EVERY == PROXY_DROP_EVERY - 1) {
                atomic_fetch_add(&c->proxy->dropped, 1);
                return false;
            }
            ok = write_all(c->client_fd, f, 4 + (size_t)size);
        }
        pos += 4 + (size_t)size;
    }
    memmove(c->buf[dir], c->buf[dir] + pos, c->len[dir] - pos);
    c->len[dir] -= pos;
    return ok;
}

static void *proxy_conn_main(void *arg)
{
    struct proxy_conn *c = arg;
    struct pollfd fds[2] = {{c->client_fd, POLLIN, 0}, {c->broker_fd, POLLIN, 0}};
    bool open = true;
    while (open && !atomic_load(&c->proxy->stop)) {
        if (poll(fds, 2, 100) < 0)
            break;
        for (int dir = 0; dir < 2 && open; dir++) {
            if (!(fds[dir].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (c->cap[dir] - c->len[dir] < 65536) {
                size_t cap = c->cap[dir] ? c->cap[dir] * 2 : 262144;
                uint8_t *grown = realloc(c->buf[dir], cap);
                if (!grown) {
                    open = false;
                    break;
                }
                c->buf[dir] = grown;
                c->cap[dir] = cap;
            }
            ssize_t n = recv(fds[dir].fd, c->buf[dir] + c->len[dir], c->cap[dir] - c->len[dir], 0);
            if (n <= 0) {
                open = false;
                break;
            }
            c->len[dir] += (size_t)n;
            open = proxy_pump(c, dir);
        }
    }
    close(c->client_fd);
    close(c->broker_fd);
    free(c->buf[0]);
    free(c->buf[1]);
    free(c);
    return NULL;
}

static void *proxy_accept_main(void *arg)
{
    struct fault_proxy *p = arg;
    while (!atomic_load(&p->stop)) {
        struct pollfd pfd = {p->listen_fd, POLLIN, 0};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        /* CLOEXEC: a broker restarted meanwhile must not inherit it and keep
         * the connection open after the proxy closes it. */
        int client = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0)
            continue;
        int broker = raw_connect(p->broker_port, 10000);
        if (broker < 0) { /* broker down (restarting): the client reconnects */
            close(client);
            continue;
        }
        struct proxy_conn *c = calloc(1, sizeof *c);
        pthread_t t;
        if (!c) {
            close(client);
            close(broker);
            continue;
        }
        c->proxy = p;
        c->client_fd = client;
        c->broker_fd = broker;
        if (pthread_create(&t, NULL, proxy_conn_main, c) != 0) {
            close(client);
            close(broker);
            free(c);
            continue;
        }
        pthread_detach(t);
    }
    return NULL;
}

/* Binds a loopback port; proxy_run starts relaying to broker_port. */
static void proxy_bind(struct fault_proxy *p)
{
    memset(p, 0, sizeof *p);
    p->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(p->listen_fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    assert_int_equal(bind(p->listen_fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(p->listen_fd, 64), 0);
    assert_int_equal(getsockname(p->listen_fd, (struct sockaddr *)&addr, &alen), 0);
    p->port = ntohs(addr.sin_port);
}

static void proxy_run(struct fault_proxy *p, int broker_port)
{
    p->broker_port = broker_port;
    assert_int_equal(pthread_create(&p->accept_thread, NULL, proxy_accept_main, p), 0);
}

static void proxy_stop(struct fault_proxy *p)
{
    atomic_store(&p->stop, true);
    pthread_join(p->accept_thread, NULL);
    close(p->listen_fd);
    /* Connection threads notice `stop` within one poll timeout. */
    usleep(300 * 1000);
}

/* Shared by both tests; owned by the test thread. */
struct idem_fixture {
    struct test_broker broker;
    struct fault_proxy proxy;
    bool proxied;
};

static void test_raw_duplicates_gaps_and_epochs(void **state)
{
    struct idem_fixture *f = *state;
    struct test_broker *b = &f->broker;
    rk_create_topic(broker_bootstrap(b), RAW_TOPIC, 1, NULL);
    int port = broker_port(b);

    struct pid_answer a = init_producer_id(port, 1, NULL, -1, -1);
    assert_int_equal(a.error, ERR_NONE);
    assert_true(a.producer_id >= 0);
    assert_int_equal(a.epoch, 0);
    struct pid_answer other = init_producer_id(port, 1, NULL, -1, -1);
    assert_int_equal(other.error, ERR_NONE);
    assert_true(other.producer_id != a.producer_id);
    /* A transactional id is the transaction coordinator's: its own producer id, epoch 0. */
    struct pid_answer txn = init_producer_id(port, 4, "txn-1", -1, -1);
    assert_int_equal(txn.error, ERR_NONE);
    assert_int_equal(txn.epoch, 0);
    assert_true(txn.producer_id != a.producer_id && txn.producer_id != other.producer_id);
    assert_int_equal(init_producer_id(port, 4, "", -1, -1).error, ERR_INVALID_REQUEST);
    /* An id without an epoch (or the reverse) is malformed. */
    assert_int_equal(init_producer_id(port, 3, NULL, a.producer_id, -1).error, ERR_INVALID_REQUEST);

    int64_t base = -1;
    int64_t pid = a.producer_id;
    assert_int_equal(produce_batch(port, pid, 0, 0, 3, &base), ERR_NONE);
    assert_int_equal(base, 0);
    /* The retry: same offset, nothing written. */
    assert_int_equal(produce_batch(port, pid, 0, 0, 3, &base), ERR_NONE);
    assert_int_equal(base, 0);
    assert_int_equal(produce_batch(port, pid, 0, 3, 2, &base), ERR_NONE);
    assert_int_equal(base, 3);
    assert_int_equal(produce_batch(port, pid, 0, 9, 1, &base), ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);

    /* KIP-360 bump: the current epoch gets +1; the old one is then fenced. */
    struct pid_answer bumped = init_producer_id(port, 4, NULL, pid, 0);
    assert_int_equal(bumped.error, ERR_NONE);
    assert_int_equal(bumped.producer_id, pid);
    assert_int_equal(bumped.epoch, 1);
    assert_int_equal(init_producer_id(port, 4, NULL, pid, 0).error, ERR_PRODUCER_FENCED);
    assert_int_equal(init_producer_id(port, 3, NULL, pid, 0).error, ERR_INVALID_PRODUCER_EPOCH);
    assert_int_equal(produce_batch(port, pid, 1, 0, 1, &base), ERR_NONE);
    assert_int_equal(base, 5);
    assert_int_equal(produce_batch(port, pid, 0, 5, 1, &base), ERR_INVALID_PRODUCER_EPOCH);

    /* Retries are still recognised after a clean stop (snapshot) ... */
    broker_stop(b);
    broker_restart(b);
    assert_int_equal(produce_batch(port, pid, 1, 0, 1, &base), ERR_NONE);
    assert_int_equal(base, 5);
    assert_int_equal(produce_batch(port, pid, 1, 1, 2, &base), ERR_NONE);
    assert_int_equal(base, 6);
    /* ... and after kill -9 (rebuilt from the log after the snapshot). */
    broker_kill9(b);
    broker_restart(b);
    assert_int_equal(produce_batch(port, pid, 1, 1, 2, &base), ERR_NONE);
    assert_int_equal(base, 6);
    assert_int_equal(produce_batch(port, pid, 1, 0, 1, &base), ERR_NONE);
    assert_int_equal(base, 5);
    assert_int_equal(produce_batch(port, pid, 1, 4, 1, &base), ERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal(produce_batch(port, pid, 0, 5, 1, &base), ERR_INVALID_PRODUCER_EPOCH);

    /* Ids handed out before the restarts are never handed out again. */
    struct pid_answer fresh = init_producer_id(port, 1, NULL, -1, -1);
    assert_int_equal(fresh.error, ERR_NONE);
    assert_true(fresh.producer_id > pid && fresh.producer_id > other.producer_id);

    /* The log holds each record once: 3 + 2 + 1 + 2. */
    long want[1] = {8};
    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(broker_bootstrap(b), RAW_TOPIC, 1, want, 30000, &set), 8);
    const char *expect[8] = {"0/0/0", "0/0/1", "0/0/2", "0/0/3", "0/0/4", "0/1/0", "0/1/1", "0/1/2"};
    for (size_t i = 0; i < set.count; i++) {
        char text[64];
        snprintf(text, sizeof text, "%" PRId64 "%s", pid, strchr(expect[i], '/'));
        assert_int_equal(set.records[i].offset, (int64_t)i);
        assert_int_equal(set.records[i].value_len, strlen(text));
        assert_memory_equal(set.records[i].value, text, strlen(text));
    }
    rk_record_set_free(&set);
    broker_mark_passed(b);
}

static long load_parse_seq(const rd_kafka_message_t *m)
{
    char text[32];
    size_t n = m->len < sizeof(text) - 1 ? m->len : sizeof(text) - 1;
    memcpy(text, m->payload, n);
    text[n] = '\0';
    long seq;
    return sscanf(text, "idem|%ld|", &seq) == 1 ? seq : -1;
}

struct load_check {
    long produced;
    int64_t *seen_at; /* offset where each seq was read, -1 if not */
    long last_seq[LOAD_PARTITIONS];
    char failure[256];
};

static bool load_collect(const rd_kafka_message_t *m, void *ctx)
{
    struct load_check *c = ctx;
    long s = load_parse_seq(m);
    int p = m->partition;
    if (s < 0 || s >= c->produced || s % LOAD_PARTITIONS != p)
        snprintf(c->failure, sizeof c->failure, "partition %d offset %" PRId64 ": foreign record", p, m->offset);
    else if (c->seen_at[s] >= 0)
        snprintf(c->failure, sizeof c->failure, "seq %ld at offsets %" PRId64 " and %" PRId64, s, c->seen_at[s],
                 m->offset);
    else if (s <= c->last_seq[p])
        snprintf(c->failure, sizeof c->failure, "partition %d: seq %ld after %ld", p, s, c->last_seq[p]);
    else {
        c->seen_at[s] = m->offset;
        c->last_seq[p] = s;
        return true;
    }
    return false;
}

/* SIGTERM + restart at LOAD_STOP_AT deliveries, kill -9 + restart at LOAD_KILL_AT. */
static void load_maybe_restart(struct test_broker *b, const struct rk_delivery_stats *stats, long seq, bool *stopped,
                               bool *killed)
{
    if (!*stopped && stats->delivered >= LOAD_STOP_AT) {
        fprintf(stderr, "[idem] SIGTERM after %ld delivered, %ld enqueued\n", stats->delivered, seq);
        broker_stop(b);
        broker_restart(b);
        *stopped = true;
    }
    if (!*killed && stats->delivered >= LOAD_KILL_AT) {
        fprintf(stderr, "[idem] kill -9 after %ld delivered, %ld enqueued\n", stats->delivered, seq);
        broker_kill9(b);
        broker_restart(b);
        *killed = true;
    }
}

static void test_librdkafka_idempotence_across_restarts(void **state)
{
    struct idem_fixture *f = *state;
    struct test_broker *b = &f->broker;
    struct fault_proxy *proxy = &f->proxy;
    char bootstrap[64];
    snprintf(bootstrap, sizeof bootstrap, "127.0.0.1:%d", proxy->port);
    rk_create_topic(bootstrap, LOAD_TOPIC, LOAD_PARTITIONS, NULL);
    const char *conf[] = {"enable.idempotence",
                          "true",
                          "linger.ms",
                          "5",
                          "message.timeout.ms",
                          "60000",
                          "reconnect.backoff.ms",
                          "50",
                          "reconnect.backoff.max.ms",
                          "500",
                          "batch.num.messages",
                          "2000",
                          NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    struct rk_delivery_slot *slots = calloc(LOAD_MESSAGES, sizeof(*slots));
    assert_non_null(slots);
    struct rk_delivery_stats *stats = rk_producer_stats(rk);
    long long deadline = harness_now_ms() + 40000;
    bool stopped = false, killed = false;
    long seq = 0;
    while (seq < LOAD_MESSAGES && harness_now_ms() < deadline) {
        char value[96];
        int len = snprintf(value, sizeof value, "idem|%ld|%0*d", seq, (int)(seq % 40), 0);
        rd_kafka_resp_err_t err = rk_produce_blocking(rk, LOAD_TOPIC, (int32_t)(seq % LOAD_PARTITIONS), NULL, 0, value,
                                                      (size_t)len, 0, NULL, &slots[seq]);
        if (err)
            fail_msg("enqueue seq %ld: %s", seq, rd_kafka_err2str(err));
        seq++;
        if ((seq & 255) == 0)
            rd_kafka_poll(rk, 0);
        load_maybe_restart(b, stats, seq, &stopped, &killed);
    }
    /* Enqueueing may outrun delivery: keep the restarts on schedule. */
    while (!killed && harness_now_ms() < deadline) {
        rd_kafka_poll(rk, 5);
        load_maybe_restart(b, stats, seq, &stopped, &killed);
    }
    rd_kafka_flush(rk, 60000);
    long produced = seq, delivered = stats->delivered, failed = stats->failed;
    fprintf(stderr, "[idem] enqueued %ld, delivered %ld, failed %ld (first error: %s)\n", produced, delivered, failed,
            failed ? stats->first_error_text : "none");
    rk_producer_destroy(rk);
    fprintf(stderr, "[idem] the proxy dropped %ld Produce responses\n", atomic_load(&proxy->dropped));
    if (atomic_load(&proxy->dropped) == 0)
        fail_msg("no Produce response was dropped: retries were not exercised");
    if (!stopped || !killed)
        fail_msg("only %ld delivered before the deadline; restarts did not both happen", delivered);
    assert_int_equal(produced, LOAD_MESSAGES);
    /* Idempotence makes retries safe, so nothing should have failed. */
    assert_int_equal(failed, 0);
    assert_int_equal(delivered, produced);

    long want[LOAD_PARTITIONS] = {0};
    for (long s = 0; s < produced; s++)
        want[s % LOAD_PARTITIONS]++;
    struct load_check check = {.produced = produced};
    check.seen_at = malloc((size_t)produced * sizeof(int64_t));
    assert_non_null(check.seen_at);
    for (long s = 0; s < produced; s++)
        check.seen_at[s] = -1;
    for (int p = 0; p < LOAD_PARTITIONS; p++)
        check.last_seq[p] = -1;
    long got = rk_consume_each(bootstrap, LOAD_TOPIC, LOAD_PARTITIONS, want, 60000, load_collect, &check);
    if (check.failure[0])
        fail_msg("%s", check.failure);
    assert_int_equal(got, produced);
    for (long s = 0; s < produced; s++) {
        if (check.seen_at[s] < 0)
            fail_msg("acknowledged seq %ld is missing", s);
        if (check.seen_at[s] != slots[s].offset)
            fail_msg("seq %ld acknowledged at %" PRId64 " but read at %" PRId64, s, slots[s].offset, check.seen_at[s]);
    }
    free(check.seen_at);
    free(slots);
    broker_mark_passed(b);
}

static int idem_setup(void **state)
{
    struct idem_fixture *f = calloc(1, sizeof *f);
    *state = f;
    broker_start(&f->broker, NULL);
    return 0;
}

/* The broker advertises the proxy, so every client connection goes through it. */
static int idem_setup_proxied(void **state)
{
    struct idem_fixture *f = calloc(1, sizeof *f);
    *state = f;
    proxy_bind(&f->proxy);
    char advertised[96];
    snprintf(advertised, sizeof advertised, "advertised.listeners=PLAINTEXT://127.0.0.1:%d", f->proxy.port);
    const char *overrides[] = {advertised, NULL};
    broker_start(&f->broker, overrides);
    proxy_run(&f->proxy, broker_port(&f->broker));
    f->proxied = true;
    return 0;
}

static int idem_teardown(void **state)
{
    struct idem_fixture *f = *state;
    if (f->proxied)
        proxy_stop(&f->proxy);
    broker_cleanup(&f->broker);
    free(f);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_raw_duplicates_gaps_and_epochs, idem_setup, idem_teardown),
        cmocka_unit_test_setup_teardown(test_librdkafka_idempotence_across_restarts, idem_setup_proxied, idem_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
