/* A group member of the rebalance benchmark: one consumer thread with its
 * own rd_kafka_t that logs when it consumed what and follows its
 * assignment through the rebalance callback. */
#include "rebalance.h"

#include <stdlib.h>
#include <string.h>

#define MEMBER_POLL_MS 10

static void record_event(struct rebalance_member *m, int32_t partition, uint64_t at_us)
{
    if (m->event_count == m->event_cap) {
        size_t cap = m->event_cap ? m->event_cap * 2 : 1024;
        struct rebalance_event *e = realloc(m->events, cap * sizeof *e);
        if (!e)
            return; /* the log is a sample: losing its tail is not fatal */
        m->events = e;
        m->event_cap = cap;
    }
    m->events[m->event_count++] = (struct rebalance_event){.at_us = at_us, .partition = partition};
}

static void set_owned(struct rebalance_member *m, const rd_kafka_topic_partition_list_t *parts, bool owned)
{
    for (int i = 0; parts && i < parts->cnt; i++) {
        int32_t p = parts->elems[i].partition;
        if (p < 0 || p >= m->opts->partitions || strcmp(parts->elems[i].topic, m->opts->topic) != 0)
            continue;
        if (m->owned[p] != owned)
            m->owned_count += owned ? 1 : -1;
        m->owned[p] = owned;
    }
}

static void clear_owned(struct rebalance_member *m)
{
    memset(m->owned, 0, (size_t)m->opts->partitions * sizeof *m->owned);
    m->owned_count = 0;
}

static void note_error(struct rebalance_member *m, const char *what, const char *detail)
{
    if (!m->error[0])
        snprintf(m->error, sizeof m->error, "member %d: %s: %s", m->index, what, detail);
}

/* Runs inside rd_kafka_consumer_poll on the member's thread. */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    struct rebalance_member *m = opaque;
    bool cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    pthread_mutex_lock(&m->lock);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (cooperative) {
            rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, parts);
            if (e) {
                note_error(m, "incremental_assign", rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
            }
        } else {
            rd_kafka_resp_err_t e = rd_kafka_assign(rk, parts);
            if (e)
                note_error(m, "assign", rd_kafka_err2str(e));
            clear_owned(m);
        }
        set_owned(m, parts, true);
    } else {
        /* Revocation, or an error that loses the assignment. */
        if (cooperative && err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
            rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
            if (e) {
                note_error(m, "incremental_unassign", rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
            }
            set_owned(m, parts, false);
        } else {
            rd_kafka_assign(rk, NULL);
            clear_owned(m);
        }
    }
    m->assign_us = bench_now_us();
    m->rebalances++;
    pthread_mutex_unlock(&m->lock);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    struct rebalance_member *m = opaque;
    fprintf(stderr, "cairn-rebalance-bench: member %d: %s: %s\n", m->index, rd_kafka_err2name((rd_kafka_resp_err_t)err),
            reason);
}

static void *member_thread(void *arg)
{
    struct rebalance_member *m = arg;
    while (!m->stop) {
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(m->rk, MEMBER_POLL_MS);
        if (!msg)
            continue;
        if (!msg->err && msg->partition >= 0 && msg->partition < m->opts->partitions) {
            uint64_t now = bench_now_us();
            pthread_mutex_lock(&m->lock);
            record_event(m, msg->partition, now);
            pthread_mutex_unlock(&m->lock);
        }
        rd_kafka_message_destroy(msg);
    }
    /* Leaves the group (revoking through the callback) like a real
     * consumer shutting down. */
    rd_kafka_consumer_close(m->rk);
    return NULL;
}

static rd_kafka_conf_t *member_conf(const struct rebalance_member *m, char *err, size_t errlen)
{
    const struct rebalance_options *o = m->opts;
    char client_id[64];
    snprintf(client_id, sizeof client_id, "rebalance-bench-%d", m->index);
    const struct bench_conf_pair defaults[] = {
        {"bootstrap.servers", o->bootstrap},
        {"client.id", client_id},
        {"group.id", m->group},
        {"partition.assignment.strategy", m->strategy},
        /* New owners resume near where the old ones stopped. */
        {"enable.auto.commit", "true"},
        {"auto.commit.interval.ms", "1000"},
        {"auto.offset.reset", "latest"},
        {"enable.partition.eof", "false"},
    };
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        if (bench_conf_set(conf, defaults[i].key, defaults[i].value, err, errlen) != 0)
            goto fail;
    for (int i = 0; i < o->override_count; i++) {
        char key[256];
        const char *eq = strchr(o->overrides[i], '=');
        size_t keylen = eq ? (size_t)(eq - o->overrides[i]) : 0;
        if (keylen == 0 || keylen >= sizeof key) {
            snprintf(err, errlen, "-X %s: bad key", o->overrides[i]);
            goto fail;
        }
        memcpy(key, o->overrides[i], keylen);
        key[keylen] = '\0';
        if (bench_conf_set(conf, key, eq + 1, err, errlen) != 0)
            goto fail;
    }
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

int rebalance_member_start(struct rebalance_member *m, int index, const struct rebalance_options *opts,
                           const char *group, const char *strategy, uint64_t *subscribed_us, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->index = index;
    m->opts = opts;
    m->group = group;
    m->strategy = strategy;
    pthread_mutex_init(&m->lock, NULL);
    m->owned = calloc((size_t)opts->partitions, sizeof *m->owned);
    if (!m->owned) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rd_kafka_conf_t *conf = member_conf(m, err, errlen);
    if (!conf)
        return -1;
    rd_kafka_conf_set_opaque(conf, m);
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_error_cb(conf, on_error);
    char rk_err[512];
    m->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, rk_err, sizeof rk_err);
    if (!m->rk) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "consumer %d: %.400s", index, rk_err);
        return -1;
    }
    rd_kafka_poll_set_consumer(m->rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, opts->topic, RD_KAFKA_PARTITION_UA);
    if (subscribed_us)
        *subscribed_us = bench_now_us();
    rd_kafka_resp_err_t e = rd_kafka_subscribe(m->rk, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e) {
        snprintf(err, errlen, "subscribe %d: %s", index, rd_kafka_err2str(e));
        return -1;
    }
    if (pthread_create(&m->thread, NULL, member_thread, m) != 0) {
        snprintf(err, errlen, "consumer %d: cannot start a thread", index);
        return -1;
    }
    m->thread_started = true;
    return 0;
}

void rebalance_member_stop(struct rebalance_member *m)
{
    m->stop = 1;
    if (m->thread_started)
        pthread_join(m->thread, NULL);
    m->thread_started = false;
    if (m->rk)
        rd_kafka_destroy(m->rk);
    m->rk = NULL;
    free(m->owned);
    free(m->events);
    m->owned = NULL;
    m->events = NULL;
    pthread_mutex_destroy(&m->lock);
}
