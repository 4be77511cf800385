/* cairn-tiered-faults: command line, records, the bulk producer and the
 * verifying consumer of the tiered storage fault run (see tiered_faults.h
 * and tools/chaos/tiered-faults).
 *
 *   cairn-tiered-faults produce --bootstrap B --topic T --records N [--from K]
 *   cairn-tiered-faults verify  --bootstrap B --topic T --records N [--timeout-s S]
 *   cairn-tiered-faults steady  --bootstrap B --topic T --rate R --seconds S --samples PREFIX
 *
 * Each prints one summary line on stdout ("key=value ..."), logs on stderr,
 * and exits 0 when every record was acknowledged / read back byte for byte,
 * 1 on any loss, duplicate, reordering or wrong byte, 2 on bad usage. */
#include "tiered_faults.h"

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t tf_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tf_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void tf_log(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int64_t now = tf_wall_ms();
    fprintf(stderr, "%lld.%03lld cairn-tiered-faults: %s\n", (long long)(now / 1000), (long long)(now % 1000), line);
}

void tf_key(int64_t i, char out[TF_KEY_BYTES])
{
    char buf[TF_KEY_BYTES + 1];
    snprintf(buf, sizeof buf, "%016" PRId64, i);
    memcpy(out, buf, TF_KEY_BYTES);
}

/* splitmix64 seeded by the record number: every byte depends on i. */
void tf_value(int64_t i, uint8_t out[TF_VALUE_BYTES])
{
    uint64_t s = (uint64_t)i * 0x2545f4914f6cdd1dULL + 0x1234567ULL;
    for (size_t at = 0; at < TF_VALUE_BYTES; at += 8) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        size_t n = TF_VALUE_BYTES - at < 8 ? TF_VALUE_BYTES - at : 8;
        memcpy(out + at, &z, n);
    }
}

bool tf_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value)
{
    char err[256];
    if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK) {
        tf_log("config %s=%s: %s", key, value, err);
        return false;
    }
    return true;
}

bool tf_check_message(struct tf_checker *c, const rd_kafka_message_t *m)
{
    if (m->offset < c->next) {
        c->duplicates++;
        tf_log("offset %" PRId64 " again (expected %" PRId64 ")", m->offset, c->next);
        return false;
    }
    if (m->offset > c->next) {
        c->gaps++;
        tf_log("gap: offset %" PRId64 " after %" PRId64, m->offset, c->next - 1);
        if (c->first_bad < 0)
            c->first_bad = c->next;
        return false;
    }
    char key[TF_KEY_BYTES];
    uint8_t value[TF_VALUE_BYTES];
    tf_key(m->offset, key);
    tf_value(m->offset, value);
    bool ok = m->key_len == TF_KEY_BYTES && memcmp(m->key, key, TF_KEY_BYTES) == 0 && m->len == TF_VALUE_BYTES &&
              memcmp(m->payload, value, TF_VALUE_BYTES) == 0;
    if (!ok) {
        c->corrupt++;
        if (c->first_bad < 0)
            c->first_bad = m->offset;
        tf_log("offset %" PRId64 ": wrong record (key %zu bytes, value %zu bytes, or different bytes)", m->offset,
               m->key_len, m->len);
        return false;
    }
    c->next++;
    return true;
}

rd_kafka_t *tf_consumer_new(const char *bootstrap, const char *topic, int64_t from)
{
    char err[256], group[64];
    snprintf(group, sizeof group, "tiered-faults-%ld", (long)getpid());
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!tf_conf_set(conf, "bootstrap.servers", bootstrap) || !tf_conf_set(conf, "group.id", group) ||
        !tf_conf_set(conf, "enable.auto.commit", "false") || !tf_conf_set(conf, "enable.partition.eof", "false") ||
        !tf_conf_set(conf, "fetch.wait.max.ms", "100")) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        tf_log("consumer: %s", err);
        return NULL;
    }
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, topic, 0)->offset = from;
    rd_kafka_resp_err_t e = rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        tf_log("assign: %s", rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return NULL;
    }
    return rk;
}

struct produce_state {
    int64_t acked, failed;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    struct produce_state *st = opaque;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        st->acked++;
    } else {
        if (st->failed++ < 5)
            tf_log("record at %" PRId64 " not acknowledged: %s", m->offset, rd_kafka_err2str(m->err));
    }
}

/* Records from..from+count-1, idempotent, acks=all; waits for every one. */
static int run_produce(const char *bootstrap, const char *topic, int64_t from, int64_t count)
{
    char err[256];
    struct produce_state st = {0};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!tf_conf_set(conf, "bootstrap.servers", bootstrap) || !tf_conf_set(conf, "enable.idempotence", "true") ||
        !tf_conf_set(conf, "acks", "all") || !tf_conf_set(conf, "linger.ms", "5") ||
        !tf_conf_set(conf, "message.timeout.ms", "300000") ||
        !tf_conf_set(conf, "queue.buffering.max.kbytes", "65536")) {
        rd_kafka_conf_destroy(conf);
        return 2;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, &st);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        tf_log("producer: %s", err);
        return 2;
    }
    int64_t started = tf_mono_us();
    char key[TF_KEY_BYTES];
    uint8_t value[TF_VALUE_BYTES];
    for (int64_t i = from; i < from + count && st.failed == 0; i++) {
        tf_key(i, key);
        tf_value(i, value);
        for (;;) {
            rd_kafka_resp_err_t e = rd_kafka_producev(
                rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY(key, sizeof key),
                RD_KAFKA_V_VALUE(value, sizeof value), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                break;
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                tf_log("produce %" PRId64 ": %s", i, rd_kafka_err2str(e));
                st.failed++;
                break;
            }
            rd_kafka_poll(rk, 10);
        }
        rd_kafka_poll(rk, 0);
    }
    rd_kafka_resp_err_t fe = rd_kafka_flush(rk, 600000);
    double secs = (double)(tf_mono_us() - started) / 1e6;
    rd_kafka_destroy(rk);
    bool ok = fe == RD_KAFKA_RESP_ERR_NO_ERROR && st.failed == 0 && st.acked == count;
    printf("produce topic=%s from=%" PRId64 " records=%" PRId64 " acked=%" PRId64 " failed=%" PRId64
           " mb=%.1f seconds=%.1f mb_per_s=%.1f ok=%s\n",
           topic, from, count, st.acked, st.failed, (double)st.acked * 1024 / 1048576, secs,
           secs > 0 ? (double)st.acked * 1024 / 1048576 / secs : 0.0, ok ? "yes" : "no");
    return ok ? 0 : 1;
}

/* Reads offsets 0..count-1 of partition 0 and checks each; librdkafka
 * retries retriable fetch errors itself, so a store outage shows as a
 * stall, which the timeout bounds. */
static int run_verify(const char *bootstrap, const char *topic, int64_t count, int timeout_s)
{
    rd_kafka_t *rk = tf_consumer_new(bootstrap, topic, 0);
    if (!rk)
        return 2;
    struct tf_checker c = {.first_bad = -1};
    int64_t started_ms = tf_wall_ms(), first_ms = -1, last_progress = tf_mono_us(), errors = 0;
    bool broken = false;
    while (c.next < count && !broken) {
        if (tf_mono_us() - last_progress > (int64_t)timeout_s * 1000000) {
            tf_log("no record for %d s, at offset %" PRId64 " of %" PRId64, timeout_s, c.next, count);
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
        if (!m)
            continue;
        if (m->err) {
            if (errors++ < 10)
                tf_log("consumer error (retried by the client): %s", rd_kafka_message_errstr(m));
        } else {
            if (first_ms < 0)
                first_ms = tf_wall_ms();
            broken = !tf_check_message(&c, m);
            last_progress = tf_mono_us();
            if (c.next % 65536 == 0)
                tf_log("verified %" PRId64 " of %" PRId64, c.next, count);
        }
        rd_kafka_message_destroy(m);
    }
    int64_t done_ms = tf_wall_ms();
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    bool ok = c.next == count && !broken;
    double secs = (double)(done_ms - started_ms) / 1000;
    printf("verify topic=%s records=%" PRId64 " verified=%" PRId64 " gaps=%" PRId64 " duplicates=%" PRId64
           " corrupt=%" PRId64 " first_bad=%" PRId64 " client_errors=%" PRId64 " started_ms=%" PRId64
           " first_record_ms=%" PRId64 " done_ms=%" PRId64 " seconds=%.1f mb_per_s=%.1f ok=%s\n",
           topic, count, c.next, c.gaps, c.duplicates, c.corrupt, c.first_bad, errors, started_ms, first_ms, done_ms,
           secs, secs > 0 ? (double)c.next * 1024 / 1048576 / secs : 0.0, ok ? "yes" : "no");
    return ok ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: cairn-tiered-faults produce --bootstrap B --topic T --records N [--from K]\n"
            "       cairn-tiered-faults verify --bootstrap B --topic T --records N [--timeout-s S]\n"
            "       cairn-tiered-faults steady --bootstrap B --topic T --rate R --seconds S --samples PREFIX\n");
    return 2;
}

static bool parse_i64(const char *s, int64_t min, int64_t *out)
{
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < min)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *cmd = argv[1];
    const char *bootstrap = NULL, *topic = NULL, *samples = NULL;
    int64_t records = -1, from = 0, timeout_s = 120, rate = 0, seconds = 0;
    static const struct option longopts[] = {
        {"bootstrap", required_argument, NULL, 'b'},
        {"topic", required_argument, NULL, 't'},
        {"records", required_argument, NULL, 'n'},
        {"from", required_argument, NULL, 'f'},
        {"timeout-s", required_argument, NULL, 'w'},
        {"rate", required_argument, NULL, 'r'},
        {"seconds", required_argument, NULL, 's'},
        {"samples", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    optind = 2;
    while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        bool good = true;
        switch (opt) {
        case 'b':
            bootstrap = optarg;
            break;
        case 't':
            topic = optarg;
            break;
        case 'o':
            samples = optarg;
            break;
        case 'n':
            good = parse_i64(optarg, 0, &records);
            break;
        case 'f':
            good = parse_i64(optarg, 0, &from);
            break;
        case 'w':
            good = parse_i64(optarg, 1, &timeout_s);
            break;
        case 'r':
            good = parse_i64(optarg, 1, &rate) && rate <= 100000;
            break;
        case 's':
            good = parse_i64(optarg, 1, &seconds) && seconds <= 86400;
            break;
        default:
            good = false;
            break;
        }
        if (!good)
            return usage();
    }
    if (!bootstrap || !topic || optind != argc)
        return usage();
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(cmd, "produce") == 0 && records >= 0)
        return run_produce(bootstrap, topic, from, records);
    if (strcmp(cmd, "verify") == 0 && records >= 0)
        return run_verify(bootstrap, topic, records, (int)(timeout_s > 86400 ? 86400 : timeout_s));
    if (strcmp(cmd, "steady") == 0 && rate > 0 && seconds > 0 && samples) {
        struct tf_steady_opts o = {
            .bootstrap = bootstrap, .topic = topic, .rate = (int)rate, .seconds = (int)seconds, .samples = samples};
        return tf_steady(&o);
    }
    return usage();
}
