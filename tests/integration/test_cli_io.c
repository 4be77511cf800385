/* `cairn produce` and `cairn consume` run as processes against a real
 * cairnd, checked against librdkafka on the other side: lines produced by
 * cairn (keys, headers, partitions as librdkafka's murmur2 partitioner
 * puts them, compression) read back by librdkafka; records produced by
 * librdkafka (keys, headers, timestamps, lz4 batches, binary values) read
 * by cairn in every output form; start positions, counts and the end;
 * group commits; transactions under read_committed; the idempotent
 * producer (stored batch headers, a retry across a frozen broker); bad
 * input. The commands are the examples of docs/cli.md ("Producing and
 * consuming"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_runner.h"
#include "harness.h"
#include "rk_helpers.h"

#define LINES 200

/* Lines of a run's stdout, split in place (the run is the caller's). */
static int split_lines(char *text, char **lines, int max)
{
    int n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    return n;
}

/* Record timestamps are wall-clock milliseconds. */
static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static json_t *json_line(const char *line)
{
    json_error_t e;
    json_t *v = json_loads(line, 0, &e);
    if (!v)
        fail_msg("not JSON (%s): %s", e.text, line);
    return v;
}

static const char *jstr(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static long long jint(json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

/* Lines through cairn produce, read back with librdkafka: bytes, keys,
 * headers, and each keyed record in the partition librdkafka's murmur2
 * partitioner picks for its key. */
static void test_produce_read_by_librdkafka(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "topic", "create", "orders", "-b", bs, "--partitions", "4");
    expect(&r, 0, NULL, NULL);

    static char input[LINES * 40];
    size_t used = 0;
    for (int i = 0; i < LINES; i++) /* every tenth line has no key */
        used += (size_t)snprintf(input + used, sizeof(input) - used,
                                 i % 10 == 9 ? "unkeyed %d\n" : "user-%d:order %d\n", i, i * 7);
    g_stdin = input;
    RUN(&r, "produce", "orders", "-b", bs, "--key-separator", ":", "--header", "source=cli", "-H", "trace=t-1=x",
        "--format", "json");
    expect(&r, 0, NULL, NULL);
    char *lines[LINES + 1];
    assert_int_equal(split_lines(r.out, lines, LINES + 1), LINES);
    long per_partition[4] = {0};
    for (int i = 0; i < LINES; i++) {
        json_t *v = json_line(lines[i]);
        assert_string_equal(jstr(v, "topic"), "orders");
        long long p = jint(v, "partition");
        assert_true(p >= 0 && p < 4);
        assert_int_equal(jint(v, "offset"), per_partition[p]++); /* input order within a partition */
        json_decref(v);
    }

    struct rk_record_set set = {0};
    assert_int_equal(rk_consume_all(bs, "orders", 4, per_partition, 30000, &set), LINES);
    int seen = 0;
    for (size_t i = 0; i < set.count; i++) {
        const struct rk_record *rec = &set.records[i];
        assert_int_equal(rec->header_count, 2);
        assert_string_equal(rec->header_names[0], "source");
        assert_memory_equal(rec->header_values[0], "cli", 3);
        assert_string_equal(rec->header_names[1], "trace");
        assert_int_equal(rec->header_lens[1], 5);
        assert_memory_equal(rec->header_values[1], "t-1=x", 5); /* split at the first '=' only */
        int n;
        char want[64];
        if (rec->key) {
            assert_int_equal(sscanf(rec->key, "user-%d", &n), 1);
            snprintf(want, sizeof(want), "order %d", n * 7);
            int32_t p = rd_kafka_msg_partitioner_murmur2(NULL, rec->key, rec->key_len, 4, NULL, NULL);
            assert_int_equal(rec->partition, p);
        } else {
            assert_int_equal(sscanf(rec->value, "unkeyed %d", &n), 1);
            snprintf(want, sizeof(want), "unkeyed %d", n);
        }
        assert_int_equal(rec->value_len, strlen(want));
        assert_memory_equal(rec->value, want, rec->value_len);
        seen++;
    }
    assert_int_equal(seen, LINES);
    rk_record_set_free(&set);

    /* --partition, compression, acks=1, no output by default; empty lines
     * are records too and a last line without a newline counts. */
    const char *codecs[] = {"gzip", "zstd", "lz4", "snappy", "none"};
    for (int c = 0; c < 5; c++) {
        RUN(&r, "topic", "create", codecs[c], "-b", bs, "--partitions", "2");
        expect(&r, 0, NULL, NULL);
        g_stdin = "first\n\nthird";
        RUN(&r, "produce", codecs[c], "-b", bs, "--partition", "1", "--compression", codecs[c], "--acks", "1");
        expect(&r, 0, NULL, NULL);
        assert_string_equal(r.out, "");
        long want[2] = {0, 3};
        struct rk_record_set zs = {0};
        assert_int_equal(rk_consume_all(bs, codecs[c], 2, want, 30000, &zs), 3);
        assert_int_equal(zs.records[0].partition, 1);
        assert_memory_equal(zs.records[0].value, "first", 5);
        assert_int_equal(zs.records[1].value_len, 0);
        assert_memory_equal(zs.records[2].value, "third", 5);
        assert_null(zs.records[0].key);
        rk_record_set_free(&zs);
    }

    /* -v prints where each record went; acks=0 has no offsets. */
    g_stdin = "x\ny\n";
    RUN(&r, "produce", "none", "-b", bs, "-p", "0", "-v");
    expect(&r, 0, "partition 0 offset 0\npartition 0 offset 1\n", NULL);
    g_stdin = "z\n";
    RUN(&r, "produce", "none", "-b", bs, "-p", "0", "--acks", "0", "-v");
    expect(&r, 0, "partition 0 offset -1", NULL);
    broker_mark_passed(b);
}

/* Fails unless the file (docs/cli.md, README.md) shows text. */
static void file_shows(const char *path, const char *text)
{
    static char doc[200000];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(doc, 1, sizeof(doc) - 1, f);
    fclose(f);
    doc[n] = '\0';
    if (!strstr(doc, text))
        fail_msg("%s does not show:\n%s", path, text);
}

static void doc_shows(const char *text)
{
    file_shows(CAIRN_SOURCE_DIR "/docs/cli.md", text);
}

/* The examples of docs/cli.md "Producing and consuming" and the README's
 * quick start, as written there (-b added), with the output shown. */
static void test_doc_examples(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;
    doc_shows("$ echo hello | cairn produce demo\n$ cairn consume demo -e\nhello\n");
    file_shows(CAIRN_SOURCE_DIR "/README.md",
               "echo hello | build/cli/cairn produce demo\nbuild/cli/cairn consume demo -e\n");
    g_stdin = "hello\n";
    RUN(&r, "produce", "demo", "-b", bs); /* created by the broker on first use */
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "");
    RUN(&r, "consume", "demo", "-b", bs, "-e");
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "hello\n");

    RUN(&r, "topic", "create", "orders", "--partitions", "3", "-b", bs);
    expect(&r, 0, NULL, NULL);
    doc_shows("$ cairn topic create orders --partitions 3\n");
    const char *produced = "{\"topic\":\"orders\",\"partition\":0,\"offset\":0}\n"
                           "{\"topic\":\"orders\",\"partition\":1,\"offset\":0}\n";
    char shown[600];
    snprintf(shown, sizeof(shown),
             "$ printf 'alice:order 7\\ndave:order 9\\n' | cairn produce orders -K : -H source=cli --format json\n%s",
             produced);
    doc_shows(shown);
    g_stdin = "alice:order 7\ndave:order 9\n";
    RUN(&r, "produce", "orders", "-K", ":", "-H", "source=cli", "--format", "json", "-b", bs);
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, produced);

    const char *listed = "0 0 alice=order 7 [source=cli]\n1 0 dave=order 9 [source=cli]\n";
    snprintf(shown, sizeof(shown), "$ cairn consume orders -e --format '%%p %%o %%k=%%v [%%h]\\n'\n%s", listed);
    doc_shows(shown);
    RUN(&r, "consume", "orders", "-e", "--format", "%p %o %k=%v [%h]\\n", "-b", bs);
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, listed);

    doc_shows("$ cairn consume orders -e -p 1 --format json\n{\"topic\":\"orders\",\"partition\":1,\"offset\":0,"
              "\"timestamp\":");
    doc_shows(",\"key\":\"dave\",\"value\":\"order 9\",\"headers\":[{\"key\":\"source\",\"value\":\"cli\"}]}\n");
    RUN(&r, "consume", "orders", "-e", "-p", "1", "--format", "json", "-b", bs);
    expect(&r, 0, "{\"topic\":\"orders\",\"partition\":1,\"offset\":0,\"timestamp\":", NULL);
    expect(&r, 0, ",\"key\":\"dave\",\"value\":\"order 9\",\"headers\":[{\"key\":\"source\",\"value\":\"cli\"}]}\n",
           NULL);

    doc_shows("$ cairn consume orders -c 1 -g audit\norder 7\n$ cairn consume orders -e -g audit\norder 9\n");
    RUN(&r, "consume", "orders", "-c", "1", "-g", "audit", "-b", bs);
    assert_string_equal(r.out, "order 7\n");
    RUN(&r, "consume", "orders", "-e", "-g", "audit", "-b", bs);
    assert_string_equal(r.out, "order 9\n");
    broker_mark_passed(b);
}

/* Records from librdkafka (lz4 batches, keys, headers, set timestamps, a
 * null value and a binary one) in every output form of cairn consume. */
static void test_consume_formats(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    rk_create_topic(bs, "events", 2, NULL);
    const char *conf[] = {"compression.codec", "lz4", "linger.ms", "20", NULL};
    rd_kafka_t *p = rk_producer_new(bs, conf);
    for (int i = 0; i < 6; i++) {
        char key[16], value[16];
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(value, sizeof(value), "v%d", i);
        rd_kafka_headers_t *h = rd_kafka_headers_new(2);
        rd_kafka_header_add(h, "n", -1, key, -1);
        if (i == 5)
            rd_kafka_header_add(h, "empty", -1, NULL, 0);
        assert_int_equal(rk_produce_blocking(p, "events", i % 2, key, strlen(key), value, strlen(value),
                                             1700000000000LL + i, h, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_headers_destroy(h); /* rk_produce_blocking sends a copy */
    }
    /* A null value and a value that is not UTF-8, on partition 0. */
    assert_int_equal(rk_produce_blocking(p, "events", 0, "nul", 3, NULL, 0, 1700000000100LL, NULL, NULL), 0);
    assert_int_equal(rk_produce_blocking(p, "events", 0, "bin", 3, "\xff\x00\x01", 3, 1700000000200LL, NULL, NULL), 0);
    rd_kafka_flush(p, 10000);
    assert_int_equal(rk_producer_stats(p)->delivered, 8);
    rk_producer_destroy(p);

    struct run r;
    RUN(&r, "consume", "events", "-b", bs, "-e", "-p", "1");
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "v1\nv3\nv5\n");

    RUN(&r, "consume", "events", "-b", bs, "-e", "-p", "1", "--format", "%t|%p|%o|%T|%k|%K|%v|%S|%h|%%\\t.\\n");
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "events|1|0|1700000000001|k1|2|v1|2|n=k1|%\t.\n"
                               "events|1|1|1700000000003|k3|2|v3|2|n=k3|%\t.\n"
                               "events|1|2|1700000000005|k5|2|v5|2|n=k5,empty|%\t.\n");

    RUN(&r, "consume", "events", "-b", bs, "-e", "--format", "json");
    expect(&r, 0, NULL, NULL);
    char *lines[16];
    int n = split_lines(r.out, lines, 16);
    assert_int_equal(n, 8);
    int by_partition[2] = {0};
    for (int i = 0; i < n; i++) {
        json_t *v = json_line(lines[i]);
        long long part = jint(v, "partition"), off = jint(v, "offset");
        assert_string_equal(jstr(v, "topic"), "events");
        assert_int_equal(off, by_partition[part]++);
        const char *key = jstr(v, "key");
        json_t *hs = json_object_get(v, "headers");
        if (!strcmp(key, "nul")) {
            assert_true(json_is_null(json_object_get(v, "value")));
            assert_int_equal(jint(v, "timestamp"), 1700000000100LL);
        } else if (!strcmp(key, "bin")) {
            assert_null(json_object_get(v, "value"));
            assert_string_equal(jstr(v, "value_base64"), "/wAB");
        } else {
            int k = key[1] - '0';
            assert_int_equal(part, k % 2);
            assert_int_equal(jint(v, "timestamp"), 1700000000000LL + k);
            assert_int_equal(jstr(v, "value")[1], key[1]);
            json_t *h0 = json_array_get(hs, 0);
            assert_string_equal(jstr(h0, "key"), "n");
            assert_string_equal(jstr(h0, "value"), key);
            if (k == 5)
                assert_true(json_is_null(json_object_get(json_array_get(hs, 1), "value")));
        }
        json_decref(v);
    }
    assert_int_equal(by_partition[0], 5);
    assert_int_equal(by_partition[1], 3);
    broker_mark_passed(b);
}

/* Start positions (ListOffsets), --count, -e, and a group's commits. */
static void test_consume_positions(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "topic", "create", "log", "-b", bs, "--partitions", "1");
    expect(&r, 0, NULL, NULL);
    g_stdin = "r0\nr1\nr2\nr3\nr4\n";
    RUN(&r, "produce", "log", "-b", bs);
    expect(&r, 0, NULL, NULL);
    long long between = wall_ms();
    while (wall_ms() == between) /* the next records' timestamps come after it */
        ;
    between = wall_ms();
    g_stdin = "r5\nr6\nr7\n";
    RUN(&r, "produce", "log", "-b", bs);
    expect(&r, 0, NULL, NULL);

    const char *fmt = "%o:%v\\n";
    RUN(&r, "consume", "log", "-b", bs, "-e", "--format", fmt);
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "0:r0\n1:r1\n2:r2\n3:r3\n4:r4\n5:r5\n6:r6\n7:r7\n");
    RUN(&r, "consume", "log", "-b", bs, "-e", "--offset", "6", "--format", fmt);
    assert_string_equal(r.out, "6:r6\n7:r7\n");
    RUN(&r, "consume", "log", "-b", bs, "-e", "--offset", "-3", "--format", fmt);
    assert_string_equal(r.out, "5:r5\n6:r6\n7:r7\n");
    RUN(&r, "consume", "log", "-b", bs, "-e", "--offset", "-100", "--format", fmt);
    expect(&r, 0, "0:r0\n", NULL);
    RUN(&r, "consume", "log", "-b", bs, "-e", "--offset", "latest");
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "");
    char ts[32];
    snprintf(ts, sizeof(ts), "%lld", between);
    RUN(&r, "consume", "log", "-b", bs, "-e", "--timestamp", ts, "--format", fmt);
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "5:r5\n6:r6\n7:r7\n");
    snprintf(ts, sizeof(ts), "%lld", between + 3600000); /* after every record: the end */
    RUN(&r, "consume", "log", "-b", bs, "-e", "--timestamp", ts);
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "");
    /* --count stops without -e, mid-batch. */
    RUN(&r, "consume", "log", "-b", bs, "--count", "2", "--offset", "earliest", "--format", fmt);
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "0:r0\n1:r1\n");

    /* A group: the committed position carries over, and group describe sees it. */
    RUN(&r, "consume", "log", "-b", bs, "-c", "3", "-g", "readers", "--format", fmt);
    assert_string_equal(r.out, "0:r0\n1:r1\n2:r2\n");
    RUN(&r, "group", "describe", "readers", "-b", bs, "--format", "json");
    json_t *d = parse_json(&r);
    json_t *o0 = json_array_get(json_object_get(d, "offsets"), 0);
    assert_int_equal(jint(o0, "committed"), 3);
    assert_int_equal(jint(o0, "lag"), 5);
    json_decref(d);
    RUN(&r, "consume", "log", "-b", bs, "-e", "-g", "readers", "--format", fmt);
    assert_string_equal(r.out, "3:r3\n4:r4\n5:r5\n6:r6\n7:r7\n");
    RUN(&r, "consume", "log", "-b", bs, "-e", "-g", "readers");
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "");
    /* The commit beats --offset, which applies where the group has none
     * (as auto.offset.reset); what is read then is committed in turn. */
    RUN(&r, "consume", "log", "-b", bs, "-e", "-g", "readers", "-o", "1", "--format", fmt);
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "");
    RUN(&r, "consume", "log", "-b", bs, "-c", "1", "-g", "fresh", "-o", "1", "--format", fmt);
    assert_string_equal(r.out, "1:r1\n");
    RUN(&r, "consume", "log", "-b", bs, "-c", "1", "-g", "fresh", "-o", "latest", "--format", fmt);
    assert_string_equal(r.out, "2:r2\n");
    RUN(&r, "consume", "log", "-b", bs, "-g", "fresh", "-p", "0");
    expect(&r, 2, NULL, "--group and --partition cannot be used together");
    broker_mark_passed(b);
}

/* A transactional producer's aborted records and the control batches are
 * not shown under read_committed; read_uncommitted shows every record. */
static void test_read_committed(void **state)
{
    struct test_broker *b = *state;
    const char *overrides[] = {"transaction.state.log.num.partitions=2", "offsets.topic.num.partitions=2", NULL};
    broker_start(b, overrides);
    const char *bs = broker_bootstrap(b);
    rk_create_topic(bs, "txn", 1, NULL);
    const char *conf[] = {"transactional.id", "cli-io-txn", NULL};
    rd_kafka_t *p = rk_producer_new(bs, conf);
    rk_expect_ok(rd_kafka_init_transactions(p, 30000), "init_transactions");
    const char *values[] = {"c1", "c2", "a1", "a2", "c3"};
    for (int t = 0; t < 3; t++) {
        rk_expect_ok(rd_kafka_begin_transaction(p), "begin_transaction");
        int from = t == 0 ? 0 : t == 1 ? 2 : 4, to = t == 0 ? 2 : t == 1 ? 4 : 5;
        for (int i = from; i < to; i++)
            assert_int_equal(rk_produce_blocking(p, "txn", 0, NULL, 0, values[i], 2, 0, NULL, NULL), 0);
        /* Sent before the abort (an abort drops what is still queued). */
        assert_int_equal(rd_kafka_flush(p, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
        rk_expect_ok(t == 1 ? rd_kafka_abort_transaction(p, 30000) : rd_kafka_commit_transaction(p, 30000),
                     "end_transaction");
    }
    rk_producer_destroy(p);
    struct run r;
    RUN(&r, "consume", "txn", "-b", bs, "-e", "--isolation", "read_committed");
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "c1\nc2\nc3\n");
    RUN(&r, "consume", "txn", "-b", bs, "-e", "--isolation", "read_uncommitted", "--format", "%o %v\\n");
    expect(&r, 0, NULL, NULL);
    /* Offsets 2 and 5 are the commit and abort markers. */
    assert_string_equal(r.out, "0 c1\n1 c2\n3 a1\n4 a2\n6 c3\n");
    broker_mark_passed(b);
}

/* The broker goes away mid-stream and comes back: produce retries the
 * batch written while it was down, consume looks the leader up again and
 * carries on; neither loses or repeats a record. */
static void test_broker_restart(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "topic", "create", "steady", "-b", bs);
    expect(&r, 0, NULL, NULL);
    struct bg_run prod, cons;
    bg_start(&prod, "produce", (const char *const[]){"produce", "steady", "-b", bs, "-v", "--timeout", "30000", NULL});
    bg_start(&cons, "consume",
             (const char *const[]){"consume", "steady", "-b", bs, "-c", "3", "--timeout", "30000", NULL});
    bg_write(&prod, "before\n");
    bg_wait_output(&prod, "partition 0 offset 0\n");
    bg_wait_output(&cons, "before\n");
    broker_stop(b);
    bg_write(&prod, "during\n"); /* sent to a broker that is not there */
    usleep(300000);
    broker_restart(b);
    bg_wait_output(&prod, "partition 0 offset 0\npartition 0 offset 1\n");
    bg_write(&prod, "after\n");
    assert_int_equal(bg_finish(&prod), 0);
    assert_int_equal(bg_finish(&cons), 0);
    bg_wait_output(&prod, "partition 0 offset 0\npartition 0 offset 1\npartition 0 offset 2\n");
    bg_wait_output(&cons, "before\nduring\nafter\n");
    RUN(&r, "consume", "steady", "-b", bs, "-e");
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "before\nduring\nafter\n");
    broker_mark_passed(b);
}

/* The idempotence fields of the batches stored for one partition, in log
 * order. */
struct stored_seqs {
    int batches, records;
    long long producer_id; /* of the first batch */
    bool in_order;         /* every batch's base sequence == records before it */
    bool one_producer;
};

static void note_batch(const uint8_t *batch, size_t len, void *ctx)
{
    struct stored_seqs *s = ctx;
    struct batch_ids ids = batch_ids_read(batch, len);
    if (s->batches == 0)
        s->producer_id = ids.pid;
    s->one_producer &= ids.pid == s->producer_id && ids.epoch >= 0;
    s->in_order &= ids.seq == s->records;
    s->batches++;
    s->records += ids.count;
}

static struct stored_seqs stored_seqs(const struct test_broker *b, const char *partition_dir)
{
    struct stored_seqs s = {.producer_id = -2, .in_order = true, .one_producer = true};
    broker_each_stored_batch(b, partition_dir, note_batch, &s);
    return s;
}

/* cairn produce is an idempotent producer by default: its batches carry a
 * producer id and per-partition sequences 0..n-1, enable.idempotence=false
 * leaves them out, and acks 0/1 with idempotence asked for is refused. */
static void test_produce_idempotent(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "topic", "create", "idem", "-b", bs, "-p", "3");
    expect(&r, 0, NULL, NULL);
    static char lines[64 * 16];
    size_t used = 0;
    for (int i = 0; i < 60; i++)
        used += (size_t)snprintf(lines + used, sizeof(lines) - used, "k%d:v%d\n", i, i);
    /* Two runs: the second gets a new producer id and starts at 0 again. */
    for (int run = 0; run < 2; run++) {
        g_stdin = lines;
        RUN(&r, "produce", "idem", "-b", bs, "-K", ":");
        expect(&r, 0, NULL, NULL);
    }
    int total = 0;
    long long pids[3];
    for (int p = 0; p < 3; p++) {
        char dir[32];
        snprintf(dir, sizeof(dir), "idem-%d", p);
        struct stored_seqs s = stored_seqs(b, dir);
        assert_true(s.batches >= 2);
        assert_true(s.producer_id >= 0);
        pids[p] = s.producer_id;
        /* Each run's batches count from 0, so the stored sequences restart
         * once, where the second producer id begins. */
        assert_true(s.one_producer == false);
        total += s.records;
    }
    assert_int_equal(total, 120);
    assert_true(pids[0] == pids[1] && pids[1] == pids[2]);

    /* Per partition 0..n-1 for one run, checked on a fresh topic. */
    /* Compressed batches keep the header fields. */
    for (int z = 0; z < 2; z++) {
        const char *topic = z ? "idemz" : "idem1";
        RUN(&r, "topic", "create", topic, "-b", bs, "-p", "3");
        expect(&r, 0, NULL, NULL);
        g_stdin = lines;
        RUN(&r, "produce", topic, "-b", bs, "-K", ":", "-z", z ? "gzip" : "none");
        expect(&r, 0, NULL, NULL);
        total = 0;
        for (int p = 0; p < 3; p++) {
            char dir[32];
            snprintf(dir, sizeof(dir), "%s-%d", topic, p);
            struct stored_seqs s = stored_seqs(b, dir);
            assert_true(s.producer_id >= 0 && s.producer_id != pids[0]);
            assert_true(s.one_producer && s.in_order);
            total += s.records;
        }
        assert_int_equal(total, 60);
    }

    /* Off: no producer id; acks=1 alone turns it off too (Kafka 3). */
    const char *off[][2] = {{"-X", "enable.idempotence=false"}, {"--acks", "1"}};
    for (int i = 0; i < 2; i++) {
        char topic[16];
        snprintf(topic, sizeof(topic), "plain%d", i);
        g_stdin = "a\nb\n";
        RUN(&r, "produce", topic, "-b", bs, off[i][0], off[i][1]);
        expect(&r, 0, NULL, NULL);
        char dir[32];
        snprintf(dir, sizeof(dir), "%s-0", topic);
        struct stored_seqs s = stored_seqs(b, dir);
        assert_int_equal(s.records, 2);
        assert_true(s.producer_id == -1);
    }
    g_stdin = "a\n";
    RUN(&r, "produce", "idem", "-b", bs, "--acks", "0", "-X", "enable.idempotence=true");
    expect(&r, 2, NULL, "enable.idempotence=true needs --acks all");
    RUN(&r, "produce", "idem", "-b", bs, "-X", "enable.idempotence=maybe");
    expect(&r, 2, NULL, "enable.idempotence wants true or false");
    broker_mark_passed(b);
}

/* The broker is frozen (SIGSTOP) while a Produce request is in flight: the
 * request times out, cairn retries it, and once the broker runs again it
 * finds the original request and the retry. With idempotence each record
 * is in the log once. Returns how many records the log holds. */
static int produce_across_freeze(struct test_broker *b, const char *topic)
{
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "topic", "create", topic, "-b", bs);
    expect(&r, 0, NULL, NULL);
    struct bg_run prod;
    bg_start(&prod, topic,
             (const char *const[]){"produce", topic, "-b", bs, "-v", "--timeout", "1000", "-X",
                                   "delivery.timeout.ms=40000", "-X", "enable.idempotence=true", NULL});
    bg_write(&prod, "first\n");
    bg_wait_output(&prod, "partition 0 offset 0\n");
    assert_int_equal(kill(b->pid, SIGSTOP), 0);
    bg_write(&prod, "second\n");
    /* Well past the 1 s request timeout (a margin for a loaded machine):
     * the request times out, its connection is closed and it is sent
     * again, all while the broker is frozen. */
    usleep(4000000);
    assert_int_equal(kill(b->pid, SIGCONT), 0);
    bg_wait_output(&prod, "partition 0 offset 0\npartition 0 offset 1\n");
    bg_write(&prod, "third\n");
    assert_int_equal(bg_finish(&prod), 0);
    char dir[64];
    snprintf(dir, sizeof(dir), "%s-0", topic);
    struct stored_seqs s = stored_seqs(b, dir);
    assert_true(s.producer_id >= 0 && s.one_producer && s.in_order);
    RUN(&r, "consume", topic, "-b", bs, "-e");
    expect(&r, 0, NULL, NULL);
    assert_string_equal(r.out, "first\nsecond\nthird\n");
    return s.records;
}

/* The broker's debug log names each batch it recognised as a retry of one
 * already written, so the test knows the original and the retry both
 * reached it. Whether they do depends on scheduling (on a loaded machine
 * the original may not be sent before the freeze, or not time out within
 * it), so the freeze is repeated until one run overlaps; each run must
 * leave every record once regardless. */
static void test_produce_retry_once(void **state)
{
    struct test_broker *b = *state;
    setenv("CAIRN_LOG_LEVEL", "debug", 1);
    broker_start(b, NULL);
    unsetenv("CAIRN_LOG_LEVEL");
    bool overlapped = false;
    for (int attempt = 0; attempt < 4 && !overlapped; attempt++) {
        char topic[32], needle[96];
        snprintf(topic, sizeof(topic), "frozen%d", attempt);
        assert_int_equal(produce_across_freeze(b, topic), 3);
        snprintf(needle, sizeof(needle), "duplicate batch for %s-0 from", topic);
        overlapped = broker_log_contains(b, needle);
        if (!overlapped)
            fprintf(stderr, "attempt %d: the broker saw no retried batch; freezing again\n", attempt);
    }
    if (!overlapped)
        fail_msg("in 4 freezes the broker never received a retry of a batch it had written");
    broker_mark_passed(b);
}

static void test_bad_input(void **state)
{
    struct test_broker *b = *state;
    const char *overrides[] = {"auto.create.topics.enable=false", NULL};
    broker_start(b, overrides);
    const char *bs = broker_bootstrap(b);
    struct run r;
    RUN(&r, "consume", "nosuch", "-b", bs, "-e");
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION: topic 'nosuch' does not exist");
    g_stdin = "x\n";
    RUN(&r, "produce", "nosuch", "-b", bs, "--timeout", "1500");
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION: topic 'nosuch' does not exist");

    RUN(&r, "topic", "create", "small", "-b", bs, "-p", "2", "-c", "max.message.bytes=200");
    expect(&r, 0, NULL, NULL);
    RUN(&r, "consume", "small", "-b", bs, "-p", "2", "-e");
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION: partition 2 of 'small' does not exist (2 partitions)");
    g_stdin = "x\n";
    RUN(&r, "produce", "small", "-b", bs, "-p", "5");
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION: partition 5 of 'small'");
    static char big[1000];
    memset(big, 'b', sizeof(big) - 2);
    big[sizeof(big) - 2] = '\n';
    g_stdin = big;
    RUN(&r, "produce", "small", "-b", bs, "-p", "0");
    expect(&r, 1, NULL, "MESSAGE_TOO_LARGE: cannot produce to partition 0 of 'small'");
    RUN(&r, "consume", "small", "-b", bs, "-o", "5", "-p", "0");
    expect(&r, 1, NULL, "OFFSET_OUT_OF_RANGE: cannot read partition 0 of 'small' at offset 5");

    RUN(&r, "consume", "small", "-b", bs, "--format", "%k %x");
    expect(&r, 2, NULL, "bad format string '%k %x': unknown escape '%x'");
    RUN(&r, "consume", "small", "-b", bs, "--format", "tail\\");
    expect(&r, 2, NULL, "bad format string");
    RUN(&r, "consume", "small", "-b", bs, "--offset", "soon");
    expect(&r, 2, NULL, "--offset wants earliest, latest, an offset or -N");
    RUN(&r, "consume", "small", "-b", bs, "--isolation", "serializable");
    expect(&r, 2, NULL, "--isolation wants");
    RUN(&r, "consume", "-b", bs);
    expect(&r, 2, NULL, "consume wants one topic name");
    RUN(&r, "produce", "small", "-b", bs, "--acks", "2");
    expect(&r, 2, NULL, "--acks wants all, 1 or 0");
    RUN(&r, "produce", "small", "-b", bs, "--compression", "brotli");
    expect(&r, 2, NULL, "--compression wants");
    RUN(&r, "produce", "small", "-b", bs, "--header", "novalue");
    expect(&r, 2, NULL, "--header wants KEY=VALUE");
    RUN(&r, "produce", "small", "-b", bs, "--format", "%v");
    expect(&r, 2, NULL, "--format wants text or json");
    RUN(&r, "produce", "--help");
    expect(&r, 0, "usage: cairn produce TOPIC", NULL);
    RUN(&r, "consume", "--help");
    expect(&r, 0, "%h headers", NULL);

    char dead[64];
    snprintf(dead, sizeof(dead), "127.0.0.1:%d", harness_free_port());
    g_stdin = "x\n";
    RUN(&r, "produce", "small", "-b", dead, "--timeout", "1500");
    expect(&r, 3, NULL, "no broker reachable");
    RUN(&r, "consume", "small", "-b", dead, "--timeout", "1500");
    expect(&r, 3, NULL, "no broker reachable");
    /* A timed-out request names why its node's last connection failed. */
    expect(&r, 3, NULL, "its last connection attempt failed: socket error: Connection refused");
    broker_mark_passed(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_produce_read_by_librdkafka, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_doc_examples, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_consume_formats, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_consume_positions, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_read_committed, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_broker_restart, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_produce_idempotent, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_produce_retry_once, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, cli_setup, cli_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
