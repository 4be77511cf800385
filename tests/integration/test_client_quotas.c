/* Client quotas at run time in a real cairnd: AlterClientQuotas and
 * DescribeClientQuotas at v0 and v1 on the wire (Kafka's errors and
 * messages, validate_only, filters, a restart), and the quota plugin
 * applying a producer_byte_rate set and removed while a librdkafka
 * producer runs, without a restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "rk_helpers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { API_DESCRIBE_CLIENT_QUOTAS = 48, API_ALTER_CLIENT_QUOTAS = 49 };
enum { ERR_NONE = 0, ERR_UNSUPPORTED_VERSION = 35, ERR_INVALID_REQUEST = 42 };
enum { MATCH_EXACT = 0, MATCH_DEFAULT = 1, MATCH_SPECIFIED = 2 };

/* ---- wire helpers for both versions (v1 is flexible) ---- */

static void put_str(struct raw_writer *w, bool flexible, const char *s)
{
    if (flexible)
        raw_put_compact_string(w, s);
    else
        raw_put_string(w, s);
}

static void put_count(struct raw_writer *w, bool flexible, int n)
{
    if (flexible)
        raw_put_uvarint(w, (uint64_t)n + 1);
    else
        raw_put_i32(w, n);
}

static void put_tags(struct raw_writer *w, bool flexible)
{
    if (flexible)
        raw_put_uvarint(w, 0);
}

static void put_f64(struct raw_writer *w, double v)
{
    int64_t bits;
    memcpy(&bits, &v, sizeof bits);
    raw_put_i64(w, bits);
}

static bool get_str(struct raw_reader *r, bool flexible, char *out, size_t outlen)
{
    if (flexible)
        return raw_get_compact_string(r, out, outlen);
    int16_t n = raw_get_i16(r);
    out[0] = '\0';
    if (n < 0)
        return false;
    const uint8_t *p = r->data + r->pos;
    raw_skip(r, (size_t)n);
    if (!r->overflow) {
        size_t copy = (size_t)n < outlen - 1 ? (size_t)n : outlen - 1;
        memcpy(out, p, copy);
        out[copy] = '\0';
    }
    return true;
}

static int get_count(struct raw_reader *r, bool flexible)
{
    return flexible ? (int)raw_get_uvarint(r) - 1 : raw_get_i32(r);
}

static double get_f64(struct raw_reader *r)
{
    int64_t bits = raw_get_i64(r);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* The answer's last tagged fields; fails unless it was read exactly. */
static void end_read(struct raw_reader *r, bool flexible, uint8_t *frame)
{
    if (flexible)
        raw_skip_tagged_fields(r);
    assert_false(r->overflow);
    assert_int_equal(r->pos, r->len);
    free(frame);
}

/* One entry of an AlterClientQuotas request: up to two entity parts
 * ("user", "alice"; a NULL name is the default) and one op. */
struct alter_entry {
    const char *type[2];
    const char *name[2];
    const char *key;
    double value;
    bool remove;
};

struct alter_result {
    int16_t error;
    char message[256];
};

static int32_t next_correlation = 100;

static void alter(int port, int16_t version, const struct alter_entry *entries, int n, bool validate_only,
                  struct alter_result *out)
{
    bool flex = version >= 1;
    int32_t corr = next_correlation++;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_as(&w, API_ALTER_CLIENT_QUOTAS, version, flex, corr, "quota-admin");
    put_count(&w, flex, n);
    for (int i = 0; i < n; i++) {
        int parts = entries[i].type[1] ? 2 : 1;
        put_count(&w, flex, parts);
        for (int p = 0; p < parts; p++) {
            put_str(&w, flex, entries[i].type[p]);
            put_str(&w, flex, entries[i].name[p]);
            put_tags(&w, flex);
        }
        put_count(&w, flex, 1);
        put_str(&w, flex, entries[i].key);
        put_f64(&w, entries[i].value);
        raw_put_i8(&w, entries[i].remove ? 1 : 0);
        put_tags(&w, flex);
        put_tags(&w, flex);
    }
    raw_put_i8(&w, validate_only ? 1 : 0);
    put_tags(&w, flex);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(port, &w, corr, flex, 10000, &frame, &r), 0);
    raw_get_i32(&r); /* throttle_time_ms */
    assert_int_equal(get_count(&r, flex), n);
    for (int i = 0; i < n; i++) {
        out[i].error = raw_get_i16(&r);
        get_str(&r, flex, out[i].message, sizeof out[i].message);
        int parts = get_count(&r, flex);
        assert_int_equal(parts, entries[i].type[1] ? 2 : 1);
        for (int p = 0; p < parts; p++) {
            char type[64], name[64];
            get_str(&r, flex, type, sizeof type);
            assert_string_equal(type, entries[i].type[p]);
            assert_int_equal(get_str(&r, flex, name, sizeof name), entries[i].name[p] != NULL);
            if (flex)
                raw_skip_tagged_fields(&r);
        }
        if (flex)
            raw_skip_tagged_fields(&r);
    }
    end_read(&r, flex, frame);
}

struct component {
    const char *type;
    int8_t match_type;
    const char *match;
};

/* What a DescribeClientQuotas answer held: its error and, per entry, the
 * number of entity parts and the first value. */
struct describe_result {
    int16_t error;
    char message[256];
    int entries;
    int parts[8];
    char key[8][64];
    double value[8];
};

static void describe(int port, int16_t version, const struct component *c, int n, bool strict,
                     struct describe_result *out)
{
    bool flex = version >= 1;
    int32_t corr = next_correlation++;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_as(&w, API_DESCRIBE_CLIENT_QUOTAS, version, flex, corr, "quota-admin");
    put_count(&w, flex, n);
    for (int i = 0; i < n; i++) {
        put_str(&w, flex, c[i].type);
        raw_put_i8(&w, c[i].match_type);
        put_str(&w, flex, c[i].match);
        put_tags(&w, flex);
    }
    raw_put_i8(&w, strict ? 1 : 0);
    put_tags(&w, flex);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(port, &w, corr, flex, 10000, &frame, &r), 0);
    memset(out, 0, sizeof(*out));
    raw_get_i32(&r);
    out->error = raw_get_i16(&r);
    get_str(&r, flex, out->message, sizeof out->message);
    out->entries = get_count(&r, flex);
    for (int i = 0; i < out->entries && i < 8; i++) {
        out->parts[i] = get_count(&r, flex);
        for (int p = 0; p < out->parts[i]; p++) {
            char s[64];
            get_str(&r, flex, s, sizeof s);
            get_str(&r, flex, s, sizeof s);
            if (flex)
                raw_skip_tagged_fields(&r);
        }
        int values = get_count(&r, flex);
        for (int v = 0; v < values; v++) {
            char key[64];
            get_str(&r, flex, key, sizeof key);
            double value = get_f64(&r);
            if (v == 0) {
                snprintf(out->key[i], sizeof out->key[i], "%s", key);
                out->value[i] = value;
            }
            if (flex)
                raw_skip_tagged_fields(&r);
        }
        if (flex)
            raw_skip_tagged_fields(&r);
    }
    end_read(&r, flex, frame);
}

static void test_alter_and_describe_every_version(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    int port = broker_port(b);
    for (int16_t v = 0; v <= 1; v++) {
        char user[32];
        snprintf(user, sizeof user, "alice-v%d", v);
        struct alter_entry entries[] = {
            {{"user", "client-id"}, {user, NULL}, "producer_byte_rate", 1048576, false},
            {{"client-id", NULL}, {"app", NULL}, "bogus_rate", 1, false},
            {{"ip", NULL}, {"10.0.0.1", NULL}, "producer_byte_rate", 5, false},
            {{"user", NULL}, {"neg", NULL}, "consumer_byte_rate", -1, false},
            {{"group", NULL}, {"g", NULL}, "producer_byte_rate", 1, false},
            {{"ip", NULL}, {NULL, NULL}, "connection_creation_rate", 20, false},
        };
        struct alter_result res[6];
        alter(port, v, entries, 6, false, res);
        assert_int_equal(res[0].error, ERR_NONE);
        assert_int_equal(res[1].error, ERR_INVALID_REQUEST);
        assert_string_equal(res[1].message, "Invalid configuration key bogus_rate");
        assert_int_equal(res[2].error, ERR_INVALID_REQUEST);
        assert_int_equal(res[3].error, ERR_INVALID_REQUEST);
        assert_string_equal(res[3].message, "Quota consumer_byte_rate must be greater than 0");
        assert_int_equal(res[4].error, ERR_INVALID_REQUEST);
        assert_string_equal(res[4].message, "Unhandled client quota entity type: group");
        assert_int_equal(res[5].error, ERR_NONE);

        /* validate_only checks and stores nothing. */
        struct alter_entry ghost = {{"user", NULL}, {"ghost", NULL}, "request_percentage", 25, false};
        alter(port, v, &ghost, 1, true, res);
        assert_int_equal(res[0].error, ERR_NONE);
        struct describe_result d;
        struct component by_ghost = {"user", MATCH_EXACT, "ghost"};
        describe(port, v, &by_ghost, 1, false, &d);
        assert_int_equal(d.error, ERR_NONE);
        assert_int_equal(d.entries, 0);

        struct component by_user = {"user", MATCH_EXACT, user};
        describe(port, v, &by_user, 1, false, &d);
        assert_int_equal(d.entries, 1);
        assert_int_equal(d.parts[0], 2);
        assert_string_equal(d.key[0], "producer_byte_rate");
        assert_true(d.value[0] == 1048576);
        describe(port, v, &by_user, 1, true, &d); /* strict: the entity also has a client-id */
        assert_int_equal(d.entries, 0);
        struct component pair[] = {{"user", MATCH_EXACT, user}, {"client-id", MATCH_DEFAULT, NULL}};
        describe(port, v, pair, 2, true, &d);
        assert_int_equal(d.entries, 1);
        struct component any_ip = {"ip", MATCH_SPECIFIED, NULL};
        describe(port, v, &any_ip, 1, false, &d);
        assert_int_equal(d.entries, 1);
        assert_string_equal(d.key[0], "connection_creation_rate");
        struct component bad = {"user", 9, NULL};
        describe(port, v, &bad, 1, false, &d);
        assert_int_equal(d.error, ERR_UNSUPPORTED_VERSION);
        assert_int_equal(d.entries, -1);
        struct component mixed[] = {{"ip", MATCH_DEFAULT, NULL}, {"user", MATCH_DEFAULT, NULL}};
        describe(port, v, mixed, 2, false, &d);
        assert_int_equal(d.error, ERR_INVALID_REQUEST);

        /* Removal. */
        struct alter_entry drop = {{"ip", NULL}, {NULL, NULL}, "connection_creation_rate", 0, true};
        alter(port, v, &drop, 1, false, res);
        assert_int_equal(res[0].error, ERR_NONE);
        describe(port, v, &any_ip, 1, false, &d);
        assert_int_equal(d.entries, 0);
    }
    /* Stored in the metadata log: a restart keeps them. */
    broker_stop(b);
    broker_restart(b);
    struct describe_result d;
    describe(broker_port(b), 1, NULL, 0, false, &d);
    assert_int_equal(d.error, ERR_NONE);
    assert_int_equal(d.entries, 2);
    broker_stop(b);
    broker_mark_passed(b);
}

/* cairnd with the quota plugin and no configured entries: only what
 * AlterClientQuotas sets. Two one-second windows, so a rate follows a
 * change within seconds. */
/* extra: one more broker key, or NULL. */
static void start_with_quota_plugin_and(struct test_broker *b, const char *extra)
{
    char plugin_path[600];
    snprintf(plugin_path, sizeof plugin_path, "plugin.path=%s", CAIRN_PLUGIN_DIR);
    const char *overrides[] = {plugin_path,
                               "plugins=quota",
                               "plugin.quota.quota.window.num=2",
                               "plugin.quota.quota.window.size.seconds=1",
                               extra,
                               NULL};
    broker_start(b, overrides);
}

static void start_with_quota_plugin(struct test_broker *b)
{
    start_with_quota_plugin_and(b, NULL);
}

/* ---- a quota set and removed under a running producer ---- */

#define RT_TOPIC "quota-rt"
#define RT_CLIENT "rt-producer"
#define RT_MESSAGE_BYTES 10000
#define RT_QUOTA 400000.0

/* Written by the producer thread and its librdkafka callbacks; the main
 * thread reads the atomics and sets stop. */
struct rt_producer {
    const char *bootstrap;
    atomic_llong delivered_bytes;
    atomic_int max_throttle_ms;
    atomic_bool stop;
    char error[256];
};

static void rt_delivery_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct rt_producer *p = opaque;
    if (!msg->err)
        atomic_fetch_add(&p->delivered_bytes, (long long)msg->len);
}

static void rt_throttle_cb(rd_kafka_t *rk, const char *name, int32_t id, int throttle_ms, void *opaque)
{
    (void)rk;
    (void)name;
    (void)id;
    struct rt_producer *p = opaque;
    int seen = atomic_load(&p->max_throttle_ms);
    while (throttle_ms > seen && !atomic_compare_exchange_weak(&p->max_throttle_ms, &seen, throttle_ms)) {
    }
}

static void *rt_produce(void *arg)
{
    struct rt_producer *p = arg;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[200];
    const char *settings[] = {"bootstrap.servers",
                              p->bootstrap,
                              "client.id",
                              RT_CLIENT,
                              "batch.size",
                              "65536",
                              "linger.ms",
                              "5",
                              "acks",
                              "1",
                              "queue.buffering.max.kbytes",
                              "2048",
                              NULL};
    for (int i = 0; settings[i]; i += 2)
        if (rd_kafka_conf_set(conf, settings[i], settings[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
            snprintf(p->error, sizeof p->error, "%s: %s", settings[i], errstr);
            rd_kafka_conf_destroy(conf);
            return NULL;
        }
    rd_kafka_conf_set_opaque(conf, p);
    rd_kafka_conf_set_dr_msg_cb(conf, rt_delivery_cb);
    rd_kafka_conf_set_throttle_cb(conf, rt_throttle_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        snprintf(p->error, sizeof p->error, "rd_kafka_new: %s", errstr);
        return NULL;
    }
    static char payload[RT_MESSAGE_BYTES];
    memset(payload, 'r', sizeof payload);
    while (!atomic_load(&p->stop)) {
        rd_kafka_resp_err_t err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(RT_TOPIC), RD_KAFKA_V_PARTITION(0),
                                                    RD_KAFKA_V_VALUE(payload, sizeof payload),
                                                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(rk, 10);
        else if (err) {
            snprintf(p->error, sizeof p->error, "produce: %s", rd_kafka_err2str(err));
            break;
        } else
            rd_kafka_poll(rk, 0);
    }
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE);
    rd_kafka_flush(rk, 10000);
    rd_kafka_destroy(rk);
    return NULL;
}

/* Bytes per second delivered over the next ms milliseconds. */
static double rt_rate(struct rt_producer *p, int ms)
{
    long long before = atomic_load(&p->delivered_bytes);
    long long start = harness_now_ms();
    usleep((useconds_t)ms * 1000);
    long long bytes = atomic_load(&p->delivered_bytes) - before;
    return (double)bytes * 1000.0 / (double)(harness_now_ms() - start);
}

static void test_runtime_quota_throttles_producer(void **state)
{
    struct test_broker *b = *state;
    start_with_quota_plugin(b);
    rk_create_topic(broker_bootstrap(b), RT_TOPIC, 1, NULL);
    int port = broker_port(b);

    static struct rt_producer p;
    memset(&p, 0, sizeof p);
    p.bootstrap = broker_bootstrap(b);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, rt_produce, &p), 0);
    sleep(2);
    double before = rt_rate(&p, 2000);

    struct alter_entry set = {{"client-id", NULL}, {RT_CLIENT, NULL}, "producer_byte_rate", RT_QUOTA, false};
    struct alter_result res;
    alter(port, 1, &set, 1, false, &res);
    assert_int_equal(res.error, ERR_NONE);
    sleep(4); /* the burst measured before the quota is paid off */
    double limited = rt_rate(&p, 6000);
    int throttled_ms = atomic_load(&p.max_throttle_ms);

    struct alter_entry drop = {{"client-id", NULL}, {RT_CLIENT, NULL}, "producer_byte_rate", 0, true};
    alter(port, 1, &drop, 1, false, &res);
    assert_int_equal(res.error, ERR_NONE);
    sleep(3);
    double after = rt_rate(&p, 2000);
    atomic_store(&p.stop, true);
    pthread_join(thread, NULL);
    fprintf(stderr, "[quota-rt] before %.0f B/s, with a %.0f B/s quota %.0f B/s (max throttle %d ms), after %.0f B/s\n",
            before, RT_QUOTA, limited, throttled_ms, after);
    if (p.error[0])
        fail_msg("producer: %s", p.error);
    assert_true(before > 3 * RT_QUOTA);
    assert_true(throttled_ms > 0);
    if (limited < 0.8 * RT_QUOTA || limited > 1.2 * RT_QUOTA)
        fail_msg("with a %.0f B/s quota the producer ran at %.0f B/s", RT_QUOTA, limited);
    if (after < 3 * RT_QUOTA)
        fail_msg("after the quota was removed the producer ran at %.0f B/s only", after);
    broker_stop(b);
    broker_mark_passed(b);
}

/* ---- KIP-599: controller_mutation_rate ---- */

struct create_answer {
    int16_t error;
    int32_t throttle_ms;
};

/* CreateTopics (v5-v7, flexible) of one topic from client_id. */
static struct create_answer create_topic(int port, int16_t version, const char *client_id, const char *topic,
                                         int32_t partitions)
{
    int32_t corr = next_correlation++;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_as(&w, 19, version, true, corr, client_id);
    raw_put_uvarint(&w, 2);
    raw_put_compact_string(&w, topic);
    raw_put_i32(&w, partitions);
    raw_put_i16(&w, 1);
    raw_put_uvarint(&w, 1); /* no assignments */
    raw_put_uvarint(&w, 1); /* no configs */
    raw_put_uvarint(&w, 0);
    raw_put_i32(&w, 10000);
    raw_put_i8(&w, 0);
    raw_put_uvarint(&w, 0);
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(port, &w, corr, true, 10000, &frame, &r), 0);
    struct create_answer a;
    a.throttle_ms = raw_get_i32(&r);
    assert_int_equal(raw_get_uvarint(&r), 2);
    char name[128];
    raw_get_compact_string(&r, name, sizeof name);
    assert_string_equal(name, topic);
    if (version >= 7)
        raw_skip(&r, 16);
    a.error = raw_get_i16(&r);
    assert_false(r.overflow);
    free(frame);
    return a;
}

static void test_controller_mutation_rate(void **state)
{
    struct test_broker *b = *state;
    start_with_quota_plugin(b);
    int port = broker_port(b);
    struct alter_entry set = {{"client-id", NULL}, {"mutator", NULL}, "controller_mutation_rate", 2, false};
    struct alter_result res;
    alter(port, 1, &set, 1, false, &res);
    assert_int_equal(res.error, ERR_NONE);

    /* Within quota before the change: allowed, even though it goes over. */
    struct create_answer a = create_topic(port, 7, "mutator", "mut-a", 20);
    assert_int_equal(a.error, ERR_NONE);
    /* Now over: refused from v6, with a throttle. */
    a = create_topic(port, 7, "mutator", "mut-b", 1);
    assert_int_equal(a.error, 89); /* THROTTLING_QUOTA_EXCEEDED */
    assert_true(a.throttle_ms > 0);
    /* v5 predates the error: created, but throttled. */
    a = create_topic(port, 5, "mutator", "mut-c", 1);
    assert_int_equal(a.error, ERR_NONE);
    /* Another client id has no quota. */
    a = create_topic(port, 7, "other", "mut-d", 20);
    assert_int_equal(a.error, ERR_NONE);
    assert_int_equal(a.throttle_ms, 0);
    broker_stop(b);
    broker_mark_passed(b);
}

/* ---- Metadata auto-creation under the same quota and cap ---- */

struct auto_create_answer {
    int32_t throttle_ms;
    int created;    /* topics answered with partitions */
    int unknown;    /* topics answered UNKNOWN_TOPIC_OR_PARTITION */
    int first_made; /* index of the first topic answered with partitions, -1 none */
};

/* Metadata v4 naming count topics "<prefix>-<i>", auto-creation allowed. */
static struct auto_create_answer metadata_auto_create(int port, const char *client_id, const char *prefix, int count)
{
    int32_t corr = next_correlation++;
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin_as(&w, 3, 4, false, corr, client_id);
    raw_put_i32(&w, count);
    for (int i = 0; i < count; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        raw_put_string(&w, name);
    }
    raw_put_i8(&w, 1); /* allow_auto_topic_creation */
    uint8_t *frame = NULL;
    struct raw_reader r;
    assert_int_equal(raw_exchange(port, &w, corr, false, 30000, &frame, &r), 0);
    struct auto_create_answer a = {.first_made = -1};
    a.throttle_ms = raw_get_i32(&r);
    int brokers = raw_get_i32(&r);
    for (int i = 0; i < brokers; i++) {
        raw_get_i32(&r);
        raw_skip_string(&r);
        raw_get_i32(&r);
        raw_skip_string(&r); /* rack */
    }
    raw_skip_string(&r); /* cluster id */
    raw_get_i32(&r);     /* controller id */
    assert_int_equal(raw_get_i32(&r), count);
    for (int i = 0; i < count; i++) {
        int16_t error = raw_get_i16(&r);
        char name[64], want[64];
        get_str(&r, false, name, sizeof name);
        snprintf(want, sizeof want, "%s-%d", prefix, i);
        assert_string_equal(name, want);
        raw_get_i8(&r); /* is_internal */
        int partitions = raw_get_i32(&r);
        for (int p = 0; p < partitions; p++) {
            raw_skip(&r, 2 + 4 + 4);
            raw_skip(&r, 4 * (size_t)raw_get_i32(&r)); /* replicas */
            raw_skip(&r, 4 * (size_t)raw_get_i32(&r)); /* isr */
        }
        if (error == 3) {
            a.unknown++;
        } else if (partitions > 0) {
            if (a.first_made < 0)
                a.first_made = i;
            a.created++;
        }
    }
    assert_false(r.overflow);
    free(frame);
    return a;
}

/* Auto-created topics ask the controller mutation quota as CreateTopics
 * does: a client over its controller_mutation_rate gets no more topics
 * from Metadata (answered unknown, with the throttle), while another
 * client id creates freely. */
static void test_auto_create_counts_against_mutation_rate(void **state)
{
    struct test_broker *b = *state;
    start_with_quota_plugin(b);
    int port = broker_port(b);
    struct alter_entry set = {{"client-id", NULL}, {"autocreator", NULL}, "controller_mutation_rate", 2, false};
    struct alter_result res;
    alter(port, 1, &set, 1, false, &res);
    assert_int_equal(res.error, ERR_NONE);

    struct auto_create_answer a = metadata_auto_create(port, "autocreator", "ac", 40);
    assert_int_equal(a.first_made, 0); /* within quota before the first: made */
    assert_true(a.created < 40);
    assert_int_equal(a.created + a.unknown, 40);
    assert_true(a.throttle_ms > 0);
    /* While over, the next request makes nothing. */
    struct auto_create_answer again = metadata_auto_create(port, "autocreator", "ac-again", 5);
    assert_int_equal(again.created, 0);
    assert_true(again.throttle_ms > 0);
    /* Another client id has no quota. */
    struct auto_create_answer other = metadata_auto_create(port, "other", "ac-other", 5);
    assert_int_equal(other.created, 5);
    assert_int_equal(other.throttle_ms, 0);
    broker_stop(b);
    broker_mark_passed(b);
}

/* One Metadata request auto-creates at most 10,000 partitions, as one
 * CreateTopics may: with num.partitions=4000 the third topic is not made. */
static void test_auto_create_partitions_per_request_cap(void **state)
{
    struct test_broker *b = *state;
    start_with_quota_plugin_and(b, "num.partitions=4000");
    struct auto_create_answer a = metadata_auto_create(broker_port(b), "capped", "cap", 3);
    assert_int_equal(a.created, 2);
    assert_int_equal(a.unknown, 1);
    assert_int_equal(a.throttle_ms, 0);
    broker_stop(b);
    broker_mark_passed(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_alter_and_describe_every_version, broker_slot_setup, broker_slot_teardown),
        cmocka_unit_test_setup_teardown(test_runtime_quota_throttles_producer, broker_slot_setup, broker_slot_teardown),
        cmocka_unit_test_setup_teardown(test_controller_mutation_rate, broker_slot_setup, broker_slot_teardown),
        cmocka_unit_test_setup_teardown(test_auto_create_counts_against_mutation_rate, broker_slot_setup,
                                        broker_slot_teardown),
        cmocka_unit_test_setup_teardown(test_auto_create_partitions_per_request_cap, broker_slot_setup,
                                        broker_slot_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
