/* The steady trickle of records under the rebalance benchmark: rate
 * records per second spread round-robin over every partition, so every
 * partition always has something new for its owner. */
#include "rebalance_run.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PRODUCER_TICK_US 10000
#define DESCRIBE_TIMEOUT_MS 5000

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
    (void)rk;
    struct rebalance_producer *p = opaque;
    if (msg->err) {
        atomic_fetch_add(&p->failed, 1);
        return;
    }
    pthread_mutex_lock(&p->ack_lock);
    if (p->ack_count == p->ack_cap) {
        size_t cap = p->ack_cap ? p->ack_cap * 2 : 65536;
        uint64_t *a = realloc(p->acks, cap * sizeof *a);
        if (a) {
            p->acks = a;
            p->ack_cap = cap;
        }
    }
    if (p->ack_count < p->ack_cap)
        p->acks[p->ack_count++] = bench_now_us();
    pthread_mutex_unlock(&p->ack_lock);
}

double rebalance_producer_longest_gap_ms(struct rebalance_producer *p, uint64_t from, uint64_t to)
{
    pthread_mutex_lock(&p->ack_lock);
    uint64_t gap = rebalance_longest_gap(p->acks, p->ack_count, from, to);
    pthread_mutex_unlock(&p->ack_lock);
    return (double)gap / 1000.0;
}

static void *producer_thread(void *arg)
{
    struct rebalance_producer *p = arg;
    const struct rebalance_options *o = p->opts;
    uint64_t start = bench_now_us();
    long long sent = 0;
    int partition = 0;
    char payload[32];
    while (!atomic_load(&p->stop)) {
        /* Catch up to the schedule: rate records per second since start. */
        long long due = (long long)((bench_now_us() - start) * (uint64_t)o->rate / 1000000u);
        for (; sent < due && !atomic_load(&p->stop); sent++) {
            int len = snprintf(payload, sizeof payload, "%lld", sent);
            rd_kafka_resp_err_t e = rd_kafka_producev(
                p->rk, RD_KAFKA_V_TOPIC(o->topic), RD_KAFKA_V_PARTITION(partition),
                RD_KAFKA_V_VALUE(payload, (size_t)len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e)
                atomic_fetch_add(&p->failed, 1);
            else
                atomic_fetch_add(&p->produced, 1);
            partition = (partition + 1) % o->partitions;
        }
        rd_kafka_poll(p->rk, 0);
        usleep(PRODUCER_TICK_US);
    }
    rd_kafka_flush(p->rk, 5000);
    return NULL;
}

int rebalance_producer_start(struct rebalance_producer *p, const struct rebalance_options *opts, char *err,
                             size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->opts = opts;
    pthread_mutex_init(&p->ack_lock, NULL);
    struct bench_options bo = {
        .bootstrap = opts->bootstrap, .topic = opts->topic, .partitions = opts->partitions, .replication_factor = 1};
    const struct bench_conf_pair defaults[] = {{"linger.ms", "5"}, {"acks", "1"}};
    rd_kafka_conf_t *conf = bench_conf_new(&bo, defaults, 2, err, errlen);
    if (!conf)
        return -1;
    rd_kafka_conf_set_opaque(conf, p);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    char rk_err[512];
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, rk_err, sizeof rk_err);
    if (!p->rk) {
        rd_kafka_conf_destroy(conf);
        snprintf(err, errlen, "producer: %.400s", rk_err);
        return -1;
    }
    int partitions = 0;
    if (bench_topic_ensure(p->rk, &bo, &partitions, err, errlen) != 0)
        return -1;
    if (partitions != opts->partitions) {
        snprintf(err, errlen, "topic %s has %d partitions, not %d (pick another --topic)", opts->topic, partitions,
                 opts->partitions);
        return -1;
    }
    if (pthread_create(&p->thread, NULL, producer_thread, p) != 0) {
        snprintf(err, errlen, "cannot start the producer thread");
        return -1;
    }
    p->thread_started = true;
    return 0;
}

void rebalance_producer_stop(struct rebalance_producer *p)
{
    atomic_store(&p->stop, 1);
    if (p->thread_started)
        pthread_join(p->thread, NULL);
    p->thread_started = false;
    if (p->rk)
        rd_kafka_destroy(p->rk);
    p->rk = NULL;
    free(p->acks);
    p->acks = NULL;
    pthread_mutex_destroy(&p->ack_lock);
}

rd_kafka_consumer_group_state_t rebalance_describe_group(rd_kafka_t *rk, const char *group, int *members)
{
    rd_kafka_consumer_group_state_t state = RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN;
    *members = -1;
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
    rd_kafka_AdminOptions_set_request_timeout(ao, DESCRIBE_TIMEOUT_MS, NULL, 0);
    const char *groups[1] = {group};
    rd_kafka_DescribeConsumerGroups(rk, groups, 1, ao, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, DESCRIBE_TIMEOUT_MS + 1000);
    if (ev && !rd_kafka_event_error(ev)) {
        const rd_kafka_DescribeConsumerGroups_result_t *res = rd_kafka_event_DescribeConsumerGroups_result(ev);
        size_t n = 0;
        const rd_kafka_ConsumerGroupDescription_t **descs = res ? rd_kafka_DescribeConsumerGroups_result_groups(res, &n)
                                                                : NULL;
        if (n == 1 && !rd_kafka_ConsumerGroupDescription_error(descs[0])) {
            state = rd_kafka_ConsumerGroupDescription_state(descs[0]);
            *members = (int)rd_kafka_ConsumerGroupDescription_member_count(descs[0]);
        }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(ao);
    rd_kafka_queue_destroy(q);
    return state;
}
