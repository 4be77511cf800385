/* The outbound client (core/net/client.h) against real cairnd processes:
 * ApiVersions negotiation, Metadata, a CreateTopics -> Produce -> Fetch
 * round trip, 1,000 pipelined requests answered in order, reconnect
 * backoff that grows while nothing listens, a SIGKILLed broker failing the
 * request in flight, request timeouts, the response size cap, and destroy
 * completing every pending request exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/client.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/api_table.h"
#include "protocol/record_batch.h"

#define NODE 1
#define KEY_PRODUCE 0
#define KEY_FETCH 1
#define KEY_METADATA 3
#define KEY_API_VERSIONS 18
#define KEY_CREATE_TOPICS 19

/* ---- completions, collected for the test thread ---- */

struct done_slot {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int completions;
    enum net_client_status status;
    char error[320];
    int16_t version;
    struct net_client_kept *kept;
    long long done_ms;
};

static void slot_init(struct done_slot *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

static void slot_free(struct done_slot *s)
{
    net_client_kept_free(s->kept);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
}

static void on_done(struct net_client_result *r, void *ctx)
{
    struct done_slot *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->completions++;
    s->status = r->status;
    s->version = r->api_version;
    snprintf(s->error, sizeof s->error, "%s", r->error);
    if (r->status == NET_CLIENT_OK && !s->kept)
        s->kept = net_client_result_keep(r);
    s->done_ms = harness_now_ms();
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Waits for the slot's completion; fails the test after timeout_ms. */
static void slot_wait(struct done_slot *s, long long timeout_ms)
{
    long long end = harness_now_ms() + timeout_ms;
    pthread_mutex_lock(&s->mu);
    while (s->completions == 0 && harness_now_ms() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    int n = s->completions;
    pthread_mutex_unlock(&s->mu);
    if (n == 0)
        fail_msg("no completion within %lld ms", timeout_ms);
}

static int slot_completions(struct done_slot *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->completions;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Waits for the completion and checks its status. */
static void slot_expect(struct done_slot *s, long long timeout_ms, enum net_client_status want)
{
    slot_wait(s, timeout_ms);
    if (s->status != want)
        fail_msg("got %s (%s), expected %s", net_client_status_name(s->status), s->error, net_client_status_name(want));
    assert_int_equal(slot_completions(s), 1);
}

static struct net_client *client_for(const struct test_broker *b, const struct net_client_config *cfg)
{
    struct net_client_config defaults;
    if (!cfg) {
        net_client_config_defaults(&defaults);
        cfg = &defaults;
    }
    struct net_client *c = NULL;
    char err[160];
    if (net_client_create(cfg, &c, err, sizeof err) != 0)
        fail_msg("net_client_create: %s", err);
    assert_int_equal(net_client_add_node(c, NODE, "127.0.0.1", broker_port(b)), 0);
    return c;
}

static void send_req(struct net_client *c, int16_t key, int16_t pinned, const void *body, int64_t timeout_ms,
                     struct done_slot *s)
{
    struct net_client_request req = {
        .node_id = NODE,
        .api_key = key,
        .pinned_version = pinned,
        .body = body,
        .timeout_ms = timeout_ms,
        .done = on_done,
        .ctx = s,
    };
    char err[160];
    if (net_client_send(c, &req, err, sizeof err) != 0)
        fail_msg("net_client_send: %s", err);
}

/* Sends and waits; returns the kept response (owned by s). */
static void *call_ok(struct net_client *c, int16_t key, const void *body, struct done_slot *s)
{
    slot_init(s);
    send_req(c, key, -1, body, 0, s);
    slot_wait(s, 15000);
    if (s->status != NET_CLIENT_OK)
        fail_msg("api %d: %s: %s", key, net_client_status_name(s->status), s->error);
    assert_non_null(s->kept);
    return net_client_kept_response(s->kept);
}

static int16_t codec_max(int16_t key)
{
    return kafka_api_lookup(key)->max_version;
}

/* ---- request bodies ---- */

static void metadata_all_topics(struct metadata_request *m)
{
    metadata_request_init(m);
    m->topics = NULL;
    m->topics_count = -1;
}

/* Creates topic (one partition); returns its id. */
static struct kafka_uuid create_topic(struct net_client *c, const char *topic)
{
    struct create_topics_request_creatable_topic t;
    create_topics_request_creatable_topic_init(&t);
    t.name = kafka_str_from_cstr(topic);
    t.num_partitions = 1;
    t.replication_factor = 1;
    struct create_topics_request req;
    create_topics_request_init(&req);
    req.topics = &t;
    req.topics_count = 1;
    req.timeout_ms = 10000;
    struct done_slot s;
    struct create_topics_response *resp = call_ok(c, KEY_CREATE_TOPICS, &req, &s);
    assert_int_equal(resp->topics_count, 1);
    assert_int_equal(resp->topics[0].error_code, 0);
    struct kafka_uuid id = resp->topics[0].topic_id;
    slot_free(&s);
    return id;
}

struct fetch_body {
    struct fetch_request req;
    struct fetch_request_fetch_topic topic;
    struct fetch_request_fetch_partition part;
};

static void fetch_body_init(struct fetch_body *f, const char *topic, struct kafka_uuid id, int64_t offset,
                            int32_t max_wait_ms)
{
    fetch_request_init(&f->req);
    fetch_request_fetch_topic_init(&f->topic);
    fetch_request_fetch_partition_init(&f->part);
    f->part.partition = 0;
    f->part.fetch_offset = offset;
    f->part.partition_max_bytes = 1 << 20;
    f->part.current_leader_epoch = -1;
    f->part.last_fetched_epoch = -1;
    f->part.log_start_offset = -1;
    f->topic.topic = kafka_str_from_cstr(topic);
    f->topic.topic_id = id;
    f->topic.partitions = &f->part;
    f->topic.partitions_count = 1;
    f->req.replica_id = -1;
    f->req.max_wait_ms = max_wait_ms;
    f->req.min_bytes = 1;
    f->req.max_bytes = 1 << 20;
    f->req.session_epoch = -1;
    f->req.topics = &f->topic;
    f->req.topics_count = 1;
}

/* Produces one batch of `count` records "v<i>" (value_size bytes each when
 * value_size > 0) to partition 0; returns the base offset (-1 for acks 0,
 * which gets no answer). */
static int64_t produce(struct net_client *c, const char *topic, int count, size_t value_size, int16_t acks)
{
    struct record_batch_builder bb;
    record_batch_builder_init(&bb, 1700000000000LL);
    char *big = value_size ? calloc(1, value_size) : NULL;
    for (int i = 0; i < count; i++) {
        char v[32];
        int vlen = snprintf(v, sizeof v, "v%d", i);
        const char *value = v;
        if (big) {
            memset(big, 'x', value_size);
            memcpy(big, v, (size_t)vlen);
            value = big;
            vlen = (int)value_size;
        }
        assert_int_equal(record_batch_builder_add(&bb, 1700000000000LL + i, NULL, -1, value, vlen, NULL, 0), 0);
    }
    free(big);
    uint8_t *batch;
    size_t batch_len;
    assert_int_equal(record_batch_builder_finish(&bb, &batch, &batch_len), 0);

    struct produce_request_partition_produce_data pd;
    produce_request_partition_produce_data_init(&pd);
    pd.index = 0;
    pd.records = kafka_records_from_memory(batch, (int32_t)batch_len);
    struct produce_request_topic_produce_data td;
    produce_request_topic_produce_data_init(&td);
    td.name = kafka_str_from_cstr(topic);
    td.partition_data = &pd;
    td.partition_data_count = 1;
    struct produce_request req;
    produce_request_init(&req);
    req.transactional_id.len = -1;
    req.acks = acks;
    req.timeout_ms = 10000;
    req.topic_data = &td;
    req.topic_data_count = 1;
    struct done_slot s;
    struct produce_response *resp = call_ok(c, KEY_PRODUCE, &req, &s);
    if (acks == 0) {
        assert_null(resp);
        slot_free(&s);
        free(batch);
        return -1;
    }
    assert_int_equal(resp->responses_count, 1);
    assert_int_equal(resp->responses[0].partition_responses_count, 1);
    assert_int_equal(resp->responses[0].partition_responses[0].error_code, 0);
    int64_t base = resp->responses[0].partition_responses[0].base_offset;
    slot_free(&s);
    free(batch);
    return base;
}

/* Creates topic and sends a Fetch that parks in the broker (empty
 * partition, max_wait_ms) with the given client-side timeout. */
static void send_parked_fetch(struct net_client *c, const char *topic, int32_t max_wait_ms, int64_t timeout_ms,
                              struct fetch_body *f, struct done_slot *s)
{
    struct kafka_uuid id = create_topic(c, topic);
    fetch_body_init(f, topic, id, 0, max_wait_ms);
    slot_init(s);
    send_req(c, KEY_FETCH, -1, &f->req, timeout_ms, s);
}

/* A Metadata request succeeds, over the connections-th connection. */
static void expect_answered_on_connection(struct net_client *c, uint64_t connections)
{
    struct metadata_request md;
    metadata_request_init(&md);
    struct done_slot m;
    struct metadata_response *resp = call_ok(c, KEY_METADATA, &md, &m);
    assert_int_equal(resp->brokers_count, 1);
    slot_free(&m);
    struct net_client_node_stats st;
    assert_int_equal(net_client_node_stats(c, NODE, &st), 0);
    assert_true(st.ready);
    assert_int_equal(st.connections, connections);
}

static void finish(struct net_client *c, struct test_broker *b)
{
    net_client_destroy(c);
    broker_mark_passed(b);
    broker_cleanup(b);
}

struct custom_encode {
    const struct metadata_request *body;
    int16_t version;
    int calls;
};

/* Runs on the client's thread, once the version is known. */
static int encode_metadata(struct kafka_writer *w, int16_t version, void *ctx)
{
    struct custom_encode *ce = ctx;
    ce->version = version;
    ce->calls++;
    return metadata_request_encode(ce->body, w, version);
}

/* ---- tests ---- */

static void test_api_versions_negotiation(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    struct net_client *c = client_for(&b, NULL);

    struct api_versions_request req;
    api_versions_request_init(&req);
    req.client_software_name = kafka_str_from_cstr("cairn-it");
    req.client_software_version = kafka_str_from_cstr("1");
    struct done_slot s;
    struct api_versions_response *adv = call_ok(c, KEY_API_VERSIONS, &req, &s);
    assert_int_equal(adv->error_code, 0);
    assert_true(adv->api_keys_count > 10);

    /* What the connection negotiated is what cairnd advertises. */
    struct net_client_node_stats st;
    assert_int_equal(net_client_node_stats(c, NODE, &st), 0);
    assert_true(st.ready);
    assert_int_equal(st.api_versions_version, 3);
    assert_int_equal(st.connections, 1);
    for (int32_t i = 0; i < adv->api_keys_count; i++) {
        int16_t lo, hi;
        assert_int_equal(net_client_api_range(c, NODE, adv->api_keys[i].api_key, &lo, &hi), 0);
        assert_int_equal(lo, adv->api_keys[i].min_version);
        assert_int_equal(hi, adv->api_keys[i].max_version);
    }
    int16_t broker_api_versions_max = -1, broker_metadata_max = -1;
    for (int32_t i = 0; i < adv->api_keys_count; i++) {
        if (adv->api_keys[i].api_key == KEY_API_VERSIONS)
            broker_api_versions_max = adv->api_keys[i].max_version;
        if (adv->api_keys[i].api_key == KEY_METADATA)
            broker_metadata_max = adv->api_keys[i].max_version;
    }
    int16_t want = codec_max(KEY_API_VERSIONS) < broker_api_versions_max ? codec_max(KEY_API_VERSIONS)
                                                                         : broker_api_versions_max;
    assert_int_equal(s.version, want);

    /* Unpinned requests go at min(codec max, broker max); a pin is honoured. */
    struct metadata_request md;
    metadata_all_topics(&md);
    struct done_slot m1, m2;
    call_ok(c, KEY_METADATA, &md, &m1);
    assert_int_equal(m1.version,
                     codec_max(KEY_METADATA) < broker_metadata_max ? codec_max(KEY_METADATA) : broker_metadata_max);
    slot_init(&m2);
    send_req(c, KEY_METADATA, 4, &md, 0, &m2);
    slot_expect(&m2, 10000, NET_CLIENT_OK);
    assert_int_equal(m2.version, 4);

    /* A caller's own encoder gets the negotiated version. */
    struct custom_encode ce = {.body = &md, .version = -1};
    struct done_slot m4;
    slot_init(&m4);
    struct net_client_request creq = {
        .node_id = NODE,
        .api_key = KEY_METADATA,
        .pinned_version = -1,
        .encode = encode_metadata,
        .encode_ctx = &ce,
        .done = on_done,
        .ctx = &m4,
    };
    char err[160];
    assert_int_equal(net_client_send(c, &creq, err, sizeof err), 0);
    slot_expect(&m4, 10000, NET_CLIENT_OK);
    assert_int_equal(ce.version, m1.version);
    assert_int_equal(ce.calls, 1);
    slot_free(&m4);

    /* A pin above what the broker serves, and an API it does not serve. */
    if (broker_metadata_max < codec_max(KEY_METADATA)) {
        struct done_slot m3;
        slot_init(&m3);
        send_req(c, KEY_METADATA, (int16_t)(broker_metadata_max + 1), &md, 0, &m3);
        slot_expect(&m3, 10000, NET_CLIENT_UNSUPPORTED_VERSION);
        slot_free(&m3);
    }
    int16_t unserved = -1;
    for (int i = 0; i < kafka_api_count() && unserved < 0; i++) {
        int16_t key = kafka_api_at(i)->api_key, lo, hi;
        if (net_client_api_range(c, NODE, key, &lo, &hi) != 0)
            unserved = key;
    }
    assert_true(unserved >= 0);
    struct done_slot u;
    slot_init(&u);
    /* The body is never encoded: the API is refused before sending. */
    send_req(c, unserved, -1, &md, 0, &u);
    slot_expect(&u, 10000, NET_CLIENT_UNSUPPORTED_VERSION);

    slot_free(&s);
    slot_free(&m1);
    slot_free(&m2);
    slot_free(&u);
    finish(c, &b);
}

static void test_metadata(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    struct net_client *c = client_for(&b, NULL);
    create_topic(c, "nc-meta");
    struct metadata_request md;
    metadata_all_topics(&md);
    struct done_slot s;
    struct metadata_response *resp = call_ok(c, KEY_METADATA, &md, &s);
    assert_int_equal(resp->brokers_count, 1);
    assert_int_equal(resp->brokers[0].node_id, 1);
    assert_int_equal(resp->brokers[0].port, broker_port(&b));
    assert_int_equal(resp->controller_id, 1);
    bool found = false;
    for (int32_t i = 0; i < resp->topics_count; i++)
        if (kafka_str_eq_cstr(resp->topics[i].name, "nc-meta")) {
            found = true;
            assert_int_equal(resp->topics[i].partitions_count, 1);
            assert_int_equal(resp->topics[i].partitions[0].leader_id, 1);
        }
    assert_true(found);
    slot_free(&s);
    finish(c, &b);
}

static void test_create_produce_fetch_round_trip(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    struct net_client *c = client_for(&b, NULL);
    struct kafka_uuid id = create_topic(c, "nc-orders");
    assert_int_equal(produce(c, "nc-orders", 5, 0, -1), 0);
    assert_int_equal(produce(c, "nc-orders", 3, 0, 1), 5);
    /* acks=0: done once written; the records still land (offsets 8, 9). */
    assert_int_equal(produce(c, "nc-orders", 2, 0, 0), -1);

    struct fetch_body f;
    fetch_body_init(&f, "nc-orders", id, 0, 500);
    struct done_slot s;
    struct fetch_response *resp = NULL;
    struct fetch_response_partition_data *p = NULL;
    for (int attempt = 0; attempt < 50; attempt++) { /* until the acks=0 batch is in */
        resp = call_ok(c, KEY_FETCH, &f.req, &s);
        assert_int_equal(resp->error_code, 0);
        assert_int_equal(resp->responses_count, 1);
        p = &resp->responses[0].partitions[0];
        assert_int_equal(p->error_code, 0);
        if (p->high_watermark == 10)
            break;
        slot_free(&s);
        usleep(100 * 1000);
    }
    assert_int_equal(p->high_watermark, 10);
    assert_true(p->records.len > 0);

    struct record_batch_iter it;
    record_batch_iter_init(&it, p->records.data, (size_t)p->records.len);
    const uint8_t *batch;
    size_t batch_len;
    int64_t next = 0;
    while (record_batch_iter_next(&it, &batch, &batch_len) == 1) {
        assert_true(record_batch_crc_ok(batch, batch_len));
        struct record_batch_record_iter ri;
        assert_int_equal(record_batch_records_begin(&ri, batch, batch_len), 0);
        struct record_batch_record rec;
        while (record_batch_records_next(&ri, &rec) == 1) {
            char want[32];
            int64_t i = next < 5 ? next : next < 8 ? next - 5 : next - 8;
            snprintf(want, sizeof want, "v%lld", (long long)i);
            assert_int_equal(rec.offset, next);
            assert_int_equal(rec.value_len, (int32_t)strlen(want));
            assert_memory_equal(rec.value, want, strlen(want));
            next++;
        }
    }
    assert_int_equal(next, 10);
    slot_free(&s);
    finish(c, &b);
}

#define PIPELINED 1000

struct order_log {
    pthread_mutex_t mu;
    int next_expected;
    int completed;
    int out_of_order;
    int failed;
};

struct order_ctx {
    struct order_log *log;
    int index;
};

static void on_ordered(struct net_client_result *r, void *ctx)
{
    struct order_ctx *o = ctx;
    pthread_mutex_lock(&o->log->mu);
    if (o->index != o->log->next_expected)
        o->log->out_of_order++;
    o->log->next_expected = o->index + 1;
    if (r->status != NET_CLIENT_OK || ((struct metadata_response *)r->response)->brokers_count != 1)
        o->log->failed++;
    o->log->completed++;
    pthread_mutex_unlock(&o->log->mu);
}

static void test_thousand_pipelined_requests_in_order(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    cfg.max_in_flight = 64;
    struct net_client *c = client_for(&b, &cfg);
    struct metadata_request md;
    metadata_request_init(&md); /* no topics: brokers only */
    struct order_log log = {.mu = PTHREAD_MUTEX_INITIALIZER};
    static struct order_ctx ctx[PIPELINED];
    for (int i = 0; i < PIPELINED; i++) {
        ctx[i].log = &log;
        ctx[i].index = i;
        struct net_client_request req = {
            .node_id = NODE,
            .api_key = KEY_METADATA,
            .pinned_version = -1,
            .body = &md,
            .done = on_ordered,
            .ctx = &ctx[i],
        };
        char err[160];
        assert_int_equal(net_client_send(c, &req, err, sizeof err), 0);
    }
    long long end = harness_now_ms() + 60000;
    int completed = 0;
    while (harness_now_ms() < end) {
        pthread_mutex_lock(&log.mu);
        completed = log.completed;
        pthread_mutex_unlock(&log.mu);
        if (completed == PIPELINED)
            break;
        usleep(5000);
    }
    assert_int_equal(completed, PIPELINED);
    assert_int_equal(log.out_of_order, 0);
    assert_int_equal(log.failed, 0);
    struct net_client_node_stats st;
    assert_int_equal(net_client_node_stats(c, NODE, &st), 0);
    assert_int_equal(st.connections, 1); /* one connection carried them all */
    assert_true(st.peak_in_flight > 1);  /* pipelined, not one by one */
    assert_true(st.peak_in_flight <= 64);
    finish(c, &b);
}

static void test_reconnect_backoff_grows_until_broker_listens(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    broker_stop(&b); /* its port now has nothing listening */
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    cfg.reconnect_backoff_ms = 50;
    cfg.reconnect_backoff_max_ms = 1000;
    struct net_client *c = client_for(&b, &cfg);
    struct metadata_request md;
    metadata_request_init(&md);
    struct done_slot s;
    slot_init(&s);
    send_req(c, KEY_METADATA, -1, &md, 30000, &s);

    /* Record the backoff chosen after each failed attempt. */
    int64_t backoffs[16];
    int seen = 0;
    uint64_t failures = 0;
    long long end = harness_now_ms() + 2500;
    while (harness_now_ms() < end && seen < 16) {
        struct net_client_node_stats st;
        assert_int_equal(net_client_node_stats(c, NODE, &st), 0);
        if (st.connect_failures > failures) {
            failures = st.connect_failures;
            backoffs[seen++] = st.last_backoff_ms;
        }
        usleep(1000);
    }
    assert_true(seen >= 4);
    assert_true(backoffs[0] >= 40 && backoffs[0] <= 60);
    for (int i = 1; i < 4; i++)
        assert_true(backoffs[i] > backoffs[i - 1]);
    for (int i = 0; i < seen; i++)
        assert_true(backoffs[i] <= 1000);
    struct net_client_node_stats st;
    assert_int_equal(net_client_node_stats(c, NODE, &st), 0);
    /* 50, 100, 200, 400, 800, 1000 ms apart: a handful of attempts in 2.5 s,
     * not one every 50 ms. */
    assert_true(st.connect_attempts <= 10);
    assert_false(st.ready);
    assert_int_equal(slot_completions(&s), 0); /* still waiting for the node */

    broker_restart(&b);
    slot_expect(&s, 10000, NET_CLIENT_OK);
    slot_free(&s);
    expect_answered_on_connection(c, 1);
    finish(c, &b);
}

static void test_sigkill_fails_in_flight_then_reconnects(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    struct net_client *c = client_for(&b, NULL);
    /* An empty partition and a long max_wait park the Fetch in the broker. */
    struct fetch_body f;
    struct done_slot s;
    send_parked_fetch(c, "nc-park", 20000, 60000, &f, &s);
    usleep(500 * 1000);
    assert_int_equal(slot_completions(&s), 0);
    long long killed_at = harness_now_ms();
    broker_kill9(&b);
    slot_expect(&s, 5000, NET_CLIENT_NETWORK_ERROR);
    assert_true(s.done_ms - killed_at < 5000);
    slot_free(&s);

    broker_restart(&b);
    expect_answered_on_connection(c, 2);
    finish(c, &b);
}

static void test_request_timeout_fires(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    struct net_client *c = client_for(&b, NULL);
    struct fetch_body f;
    struct done_slot s;
    long long sent_at = harness_now_ms();
    send_parked_fetch(c, "nc-slow", 10000, 600, &f, &s);
    slot_expect(&s, 5000, NET_CLIENT_TIMED_OUT);
    long long took = s.done_ms - sent_at;
    assert_true(took >= 550 && took < 3000);
    slot_free(&s);

    /* The connection was dropped (in-order responses); the next request
     * opens a new one. */
    expect_answered_on_connection(c, 2);
    finish(c, &b);
}

static void test_response_size_cap(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    struct net_client *c = client_for(&b, NULL);
    struct kafka_uuid id = create_topic(c, "nc-big");
    produce(c, "nc-big", 4, 16384, -1);
    net_client_destroy(c);

    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    cfg.max_response_bytes = 8192;
    c = client_for(&b, &cfg);
    struct fetch_body f;
    fetch_body_init(&f, "nc-big", id, 0, 0);
    struct done_slot s;
    slot_init(&s);
    send_req(c, KEY_FETCH, -1, &f.req, 10000, &s);
    slot_expect(&s, 10000, NET_CLIENT_NETWORK_ERROR);
    assert_non_null(strstr(s.error, "response size"));
    slot_free(&s);
    finish(c, &b);
}

#define PENDING 40

static void test_destroy_completes_each_pending_once(void **state)
{
    (void)state;
    struct test_broker b;
    broker_start(&b, NULL);
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    cfg.max_in_flight = 1;
    struct net_client *c = client_for(&b, &cfg);
    /* A parked Fetch in flight, Metadata requests queued behind it, and
     * requests to a node nobody listens for. */
    static struct done_slot slots[PENDING];
    struct fetch_body f;
    send_parked_fetch(c, "nc-pending", 20000, 60000, &f, &slots[0]);
    for (int i = 1; i < PENDING; i++)
        slot_init(&slots[i]);
    struct metadata_request md;
    metadata_request_init(&md);
    for (int i = 1; i < PENDING / 2; i++)
        send_req(c, KEY_METADATA, -1, &md, 60000, &slots[i]);
    assert_int_equal(net_client_add_node(c, 2, "127.0.0.1", 1), 0);
    for (int i = PENDING / 2; i < PENDING; i++) {
        struct net_client_request req = {
            .node_id = 2,
            .api_key = KEY_METADATA,
            .pinned_version = -1,
            .body = &md,
            .timeout_ms = 60000,
            .done = on_done,
            .ctx = &slots[i],
        };
        char err[160];
        assert_int_equal(net_client_send(c, &req, err, sizeof err), 0);
    }
    usleep(300 * 1000);
    struct net_client_node_stats st;
    assert_int_equal(net_client_node_stats(c, NODE, &st), 0);
    assert_int_equal(st.peak_in_flight, 1); /* max_in_flight held the rest back */
    net_client_destroy(c);
    for (int i = 0; i < PENDING; i++) {
        assert_int_equal(slots[i].completions, 1);
        assert_int_equal(slots[i].status, NET_CLIENT_CANCELLED);
        slot_free(&slots[i]);
    }
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_versions_negotiation),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_create_produce_fetch_round_trip),
        cmocka_unit_test(test_thousand_pipelined_requests_in_order),
        cmocka_unit_test(test_reconnect_backoff_grows_until_broker_listens),
        cmocka_unit_test(test_sigkill_fails_in_flight_then_reconnects),
        cmocka_unit_test(test_request_timeout_fires),
        cmocka_unit_test(test_response_size_cap),
        cmocka_unit_test(test_destroy_completes_each_pending_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
