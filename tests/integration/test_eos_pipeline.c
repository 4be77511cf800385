/* Exactly-once consume-transform-produce under kill -9.
 *
 * The test binary doubles as the pipeline worker (argv[1] == "worker"):
 * a group consumer (read_committed, no auto commit) reads "eos-in", and a
 * transactional producer writes one "out-<id>" record per "in-<id>" input
 * to "eos-out", committing the consumed offsets in the same transaction
 * every few hundred records.
 *
 * The test produces the input, runs the worker, kill -9s it at random
 * points (each restart reuses the transactional.id, so the new instance
 * fences the old one and its open transaction is aborted), kill -9s the
 * broker once mid-run, and at the end checks with a read_committed reader
 * that every input id appears exactly once in the output. A
 * read_uncommitted reader counts the duplicates left by aborted
 * transactions, as evidence that aborts happened. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INPUT_TOPIC "eos-in"
#define OUTPUT_TOPIC "eos-out"
#define INPUT_PARTITIONS 4
#define OUTPUT_PARTITIONS 3
#define GROUP_ID "eos-pipeline"
#define TXN_ID "eos-pipeline-worker"
#define RECORD_COUNT 20000
#define WORKER_KILLS 5
#define WORKER_MAX_STARTS 40
#define TXN_BATCH "200"

/* ---- worker mode ------------------------------------------------------ */

static void worker_set(rd_kafka_conf_t *conf, const char *key, const char *value)
{
    char errstr[256];
    if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "[worker] %s: %s\n", key, errstr);
        exit(2);
    }
}

/* Ends the worker on a failed transactional call: the test restarts it,
 * which is what an application does after a fatal or fencing error. */
static void worker_check(rd_kafka_error_t *err, const char *what)
{
    if (!err)
        return;
    fprintf(stderr, "[worker %d] %s: %s%s\n", (int)getpid(), what, rd_kafka_error_string(err),
            rd_kafka_error_is_fatal(err) ? " (fatal)" : "");
    rd_kafka_error_destroy(err);
    exit(3);
}

/* Parses "in-<id>"; returns -1 for anything else. */
static long worker_input_id(const rd_kafka_message_t *m)
{
    if (m->len < 4 || m->len > 20 || memcmp(m->payload, "in-", 3) != 0)
        return -1;
    char digits[24];
    memcpy(digits, (const char *)m->payload + 3, m->len - 3);
    digits[m->len - 3] = '\0';
    char *end = NULL;
    long id = strtol(digits, &end, 10);
    return (*end == '\0' && id >= 0) ? id : -1;
}

static int worker_main(const char *bootstrap, int batch)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    rd_kafka_conf_t *pconf = rd_kafka_conf_new();
    worker_set(pconf, "bootstrap.servers", bootstrap);
    worker_set(pconf, "transactional.id", TXN_ID);
    worker_set(pconf, "transaction.timeout.ms", "10000");
    worker_set(pconf, "linger.ms", "5");
    char errstr[256];
    rd_kafka_t *producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, errstr, sizeof errstr);
    if (!producer) {
        fprintf(stderr, "[worker] producer: %s\n", errstr);
        return 2;
    }
    worker_check(rd_kafka_init_transactions(producer, 30000), "init_transactions");

    rd_kafka_conf_t *cconf = rd_kafka_conf_new();
    worker_set(cconf, "bootstrap.servers", bootstrap);
    worker_set(cconf, "group.id", GROUP_ID);
    worker_set(cconf, "isolation.level", "read_committed");
    worker_set(cconf, "enable.auto.commit", "false");
    worker_set(cconf, "auto.offset.reset", "earliest");
    worker_set(cconf, "session.timeout.ms", "2000");
    worker_set(cconf, "heartbeat.interval.ms", "300");
    worker_set(cconf, "fetch.wait.max.ms", "50");
    rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, errstr, sizeof errstr);
    if (!consumer) {
        fprintf(stderr, "[worker] consumer: %s\n", errstr);
        return 2;
    }
    rd_kafka_poll_set_consumer(consumer);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, INPUT_TOPIC, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t rerr = rd_kafka_subscribe(consumer, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (rerr) {
        fprintf(stderr, "[worker] subscribe: %s\n", rd_kafka_err2str(rerr));
        return 2;
    }

    rd_kafka_topic_partition_list_t *offsets = NULL;
    int in_txn = 0;
    for (;;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 50);
        rd_kafka_poll(producer, 0);
        if (m && !m->err) {
            long id = worker_input_id(m);
            if (id < 0) {
                fprintf(stderr, "[worker] unexpected input at %d/%" PRId64 "\n", m->partition, m->offset);
                return 2;
            }
            if (!offsets) {
                worker_check(rd_kafka_begin_transaction(producer), "begin_transaction");
                offsets = rd_kafka_topic_partition_list_new(INPUT_PARTITIONS);
            }
            char key[24], value[32];
            int klen = snprintf(key, sizeof key, "%ld", id);
            int vlen = snprintf(value, sizeof value, "out-%ld", id);
            for (;;) {
                rerr = rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(OUTPUT_TOPIC), RD_KAFKA_V_KEY(key, (size_t)klen),
                                         RD_KAFKA_V_VALUE(value, (size_t)vlen),
                                         RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (rerr != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                    break;
                rd_kafka_poll(producer, 10);
            }
            if (rerr) {
                fprintf(stderr, "[worker] produce: %s\n", rd_kafka_err2str(rerr));
                return 3;
            }
            rd_kafka_topic_partition_list_t *o = offsets;
            rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_find(o, INPUT_TOPIC, m->partition);
            if (!tp)
                tp = rd_kafka_topic_partition_list_add(o, INPUT_TOPIC, m->partition);
            tp->offset = m->offset + 1;
            in_txn++;
        } else if (m && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            fprintf(stderr, "[worker] consume: %s\n", rd_kafka_message_errstr(m));
        }
        bool idle = !m || m->err;
        if (m)
            rd_kafka_message_destroy(m);
        if (offsets && (in_txn >= batch || idle)) {
            /* Stands in for the transform's work, inside the transaction so
             * most kills find one open; it also caps the rate near 10k
             * records/s so every kill point lands before the input ends. */
            usleep(20 * 1000);
            rd_kafka_consumer_group_metadata_t *cgmd = rd_kafka_consumer_group_metadata(consumer);
            worker_check(rd_kafka_send_offsets_to_transaction(producer, offsets, cgmd, 30000),
                         "send_offsets_to_transaction");
            rd_kafka_consumer_group_metadata_destroy(cgmd);
            worker_check(rd_kafka_commit_transaction(producer, 30000), "commit_transaction");
            rd_kafka_topic_partition_list_destroy(offsets);
            offsets = NULL;
            in_txn = 0;
        }
    }
}

/* ---- test side -------------------------------------------------------- */

struct eos_state {
    struct test_broker broker;
    pid_t worker;
    char self_path[512];
};

static int setup(void **state)
{
    struct eos_state *s = calloc(1, sizeof *s);
    assert_non_null(s);
    ssize_t n = readlink("/proc/self/exe", s->self_path, sizeof s->self_path - 1);
    assert_true(n > 0);
    s->self_path[n] = '\0';
    const char *overrides[] = {"transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
                               "group.initial.rebalance.delay.ms=0",
                               "group.min.session.timeout.ms=1000",
                               "offsets.topic.num.partitions=4",
                               "transaction.state.log.num.partitions=4",
                               NULL};
    broker_start(&s->broker, overrides);
    *state = s;
    return 0;
}

static void worker_kill(struct eos_state *s)
{
    if (s->worker > 0) {
        kill(s->worker, SIGKILL);
        waitpid(s->worker, NULL, 0);
        s->worker = 0;
    }
}

static int teardown(void **state)
{
    struct eos_state *s = *state;
    worker_kill(s);
    broker_cleanup(&s->broker);
    free(s);
    return 0;
}

static void worker_start(struct eos_state *s)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execl(s->self_path, s->self_path, "worker", broker_bootstrap(&s->broker), TXN_BATCH, (char *)NULL);
        _exit(127);
    }
    s->worker = pid;
}

/* If the worker exited on its own (an error it reports), reaps it and
 * returns true. */
static bool worker_exited(struct eos_state *s)
{
    int status = 0;
    if (s->worker > 0 && waitpid(s->worker, &status, WNOHANG) == s->worker) {
        fprintf(stderr, "[test] worker %d exited (%s %d); restarting\n", (int)s->worker,
                WIFEXITED(status) ? "status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        s->worker = 0;
        return true;
    }
    return false;
}

/* Sum of the group's committed input offsets, -1 when unknown. A separate
 * consumer handle asks without joining the group. */
static long committed_progress(rd_kafka_t *reader)
{
    rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(INPUT_PARTITIONS);
    for (int p = 0; p < INPUT_PARTITIONS; p++)
        rd_kafka_topic_partition_list_add(list, INPUT_TOPIC, p);
    long sum = -1;
    if (rd_kafka_committed(reader, list, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        sum = 0;
        for (int i = 0; i < list->cnt; i++)
            if (list->elems[i].err == RD_KAFKA_RESP_ERR_NO_ERROR && list->elems[i].offset > 0)
                sum += (long)list->elems[i].offset;
    }
    rd_kafka_topic_partition_list_destroy(list);
    return sum;
}

struct output_count {
    int per_id[RECORD_COUNT];
    long foreign; /* values that are no "out-<id>" of a known id */
};

static void count_output(const rd_kafka_message_t *m, struct output_count *c)
{
    char buf[32];
    if (m->len < 5 || m->len >= sizeof buf || memcmp(m->payload, "out-", 4) != 0) {
        c->foreign++;
        return;
    }
    memcpy(buf, m->payload, m->len);
    buf[m->len] = '\0';
    char *end = NULL;
    long id = strtol(buf + 4, &end, 10);
    if (*end != '\0' || id < 0 || id >= RECORD_COUNT)
        c->foreign++;
    else
        c->per_id[id]++;
}

/* Reads every output partition from the beginning to its end (the LSO
 * for read_committed, the high watermark otherwise), counting ids. */
static void read_output(struct eos_state *s, bool committed, struct output_count *c)
{
    memset(c, 0, sizeof *c);
    const char *conf[] = {"isolation.level",
                          committed ? "read_committed" : "read_uncommitted",
                          "fetch.wait.max.ms",
                          "100",
                          "enable.partition.eof",
                          "true",
                          NULL};
    rd_kafka_t *rk = rk_consumer_new(broker_bootstrap(&s->broker), conf);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, OUTPUT_TOPIC, NULL);
    rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
    for (int p = 0; p < OUTPUT_PARTITIONS; p++)
        assert_int_equal(rd_kafka_consume_start_queue(rkt, p, RD_KAFKA_OFFSET_BEGINNING, queue), 0);
    bool at_end[OUTPUT_PARTITIONS] = {false};
    int ended = 0;
    long long deadline = harness_now_ms() + 30000;
    while (ended < OUTPUT_PARTITIONS && harness_now_ms() < deadline) {
        rd_kafka_message_t *m = rd_kafka_consume_queue(queue, 200);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (m->partition >= 0 && m->partition < OUTPUT_PARTITIONS && !at_end[m->partition]) {
                at_end[m->partition] = true;
                ended++;
            }
        } else if (!m->err) {
            count_output(m, c);
        }
        rd_kafka_message_destroy(m);
    }
    for (int p = 0; p < OUTPUT_PARTITIONS; p++)
        rd_kafka_consume_stop(rkt, p);
    rd_kafka_queue_destroy(queue);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    assert_int_equal(ended, OUTPUT_PARTITIONS);
}

static void test_pipeline_exactly_once(void **state)
{
    struct eos_state *s = *state;
    struct test_broker *b = &s->broker;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    if (getenv("EOS_SEED"))
        seed = (unsigned)strtoul(getenv("EOS_SEED"), NULL, 10);
    fprintf(stderr, "[test] seed %u (EOS_SEED=<seed> repeats the random choices)\n", seed);
    srand(seed);

    rk_create_topic(broker_bootstrap(b), INPUT_TOPIC, INPUT_PARTITIONS, NULL);
    rk_create_topic(broker_bootstrap(b), OUTPUT_TOPIC, OUTPUT_PARTITIONS, NULL);

    const char *pconf[] = {"enable.idempotence", "true", "linger.ms", "5", NULL};
    rd_kafka_t *input = rk_producer_new(broker_bootstrap(b), pconf);
    for (int id = 0; id < RECORD_COUNT; id++) {
        char value[32];
        int n = snprintf(value, sizeof value, "in-%d", id);
        assert_int_equal(
            rk_produce_blocking(input, INPUT_TOPIC, id % INPUT_PARTITIONS, NULL, 0, value, (size_t)n, 0, NULL, NULL),
            RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(input, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(rk_producer_stats(input)->delivered, RECORD_COUNT);
    rk_producer_destroy(input);

    const char *watch_conf[] = {"group.id", GROUP_ID, "enable.auto.commit", "false", NULL};
    rd_kafka_t *watch = rk_consumer_new(broker_bootstrap(b), watch_conf);

    long long start = harness_now_ms();
    long long deadline = start + 90000;
    int kills = 0, starts = 0;
    bool broker_restarted = false;
    /* Kill points: each worker is killed once it has committed at least one
     * transaction of its own, after a random amount of further progress and
     * a random delay, so kills land inside open transactions and between
     * them. */
    long progress = 0;
    long kill_at = 1 + rand() % 600;
    long broker_kill_at = RECORD_COUNT / 2 + rand() % 2000;
    worker_start(s);
    starts++;
    for (;;) {
        usleep(100 * 1000);
        long p = committed_progress(watch);
        if (p >= 0)
            progress = p;
        if (progress >= RECORD_COUNT || harness_now_ms() >= deadline)
            break;
        if (worker_exited(s)) {
            assert_true(starts < WORKER_MAX_STARTS);
            worker_start(s);
            starts++;
        }
        if (kills < WORKER_KILLS && progress >= kill_at) {
            usleep((useconds_t)(rand() % 150) * 1000);
            fprintf(stderr, "[test] kill -9 worker at progress %ld\n", progress);
            worker_kill(s);
            kills++;
            worker_start(s);
            starts++;
            kill_at = progress + 1 + rand() % 600;
        }
        if (!broker_restarted && progress >= broker_kill_at) {
            usleep((useconds_t)(rand() % 150) * 1000);
            fprintf(stderr, "[test] kill -9 broker at progress %ld\n", progress);
            broker_kill9(b);
            broker_restart(b);
            broker_restarted = true;
        }
    }
    fprintf(stderr, "[test] pipeline done: progress %ld in %lld ms, %d kills, %d worker starts\n", progress,
            harness_now_ms() - start, kills, starts);
    worker_kill(s);
    rd_kafka_consumer_close(watch);
    rd_kafka_destroy(watch);
    assert_int_equal(progress, RECORD_COUNT);
    assert_int_equal(kills, WORKER_KILLS);
    assert_true(broker_restarted);

    /* The last commit's markers follow EndTxn asynchronously: read until
     * every id shows up or the wait ends, then judge. */
    struct output_count *c = calloc(1, sizeof *c);
    assert_non_null(c);
    long missing = RECORD_COUNT;
    long long read_deadline = harness_now_ms() + 20000;
    while (missing > 0 && harness_now_ms() < read_deadline) {
        read_output(s, true, c);
        missing = 0;
        for (int id = 0; id < RECORD_COUNT; id++)
            missing += c->per_id[id] == 0;
        if (missing > 0)
            usleep(300 * 1000);
    }
    long duplicated = 0;
    int first_bad = -1;
    for (int id = 0; id < RECORD_COUNT; id++) {
        if (c->per_id[id] > 1)
            duplicated++;
        if (c->per_id[id] != 1 && first_bad < 0)
            first_bad = id;
    }
    fprintf(stderr, "[test] read_committed: %ld missing, %ld duplicated, %ld foreign (first bad id %d)\n", missing,
            duplicated, c->foreign, first_bad);
    assert_int_equal(missing, 0);
    assert_int_equal(duplicated, 0);
    assert_int_equal(c->foreign, 0);

    read_output(s, false, c);
    long uncommitted_total = 0;
    for (int id = 0; id < RECORD_COUNT; id++)
        uncommitted_total += c->per_id[id];
    fprintf(stderr, "[test] read_uncommitted: %ld records, %ld beyond one per id (aborted transactions)\n",
            uncommitted_total, uncommitted_total - RECORD_COUNT);
    assert_true(uncommitted_total >= RECORD_COUNT);
    free(c);
    broker_mark_passed(b);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "worker") == 0)
        return worker_main(argv[2], atoi(argv[3]));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pipeline_exactly_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
