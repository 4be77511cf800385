/* cairn-chaos produce: a few acks=all records, one at a time, each waited
 * for, its outcome printed ("error <NAME>" per failure) and, when it was
 * acknowledged, logged as an "A" line the checker reads. With --retries 0
 * the producer is not idempotent and retries nothing, so a refusal such as
 * NOT_ENOUGH_REPLICAS reaches the delivery report instead of being retried
 * until message.timeout.ms. Single-threaded: the delivery callback runs
 * inside this thread's flush. */
#include "chaos_work.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct outcome {
    rd_kafka_resp_err_t err;
    int32_t part;
    int64_t off;
    int done;
};

static void on_produce_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    struct outcome *o = m->_private;
    o->err = m->err;
    o->part = m->partition;
    o->off = m->offset;
    o->done = 1;
}

int chaos_produce(const struct chaos_produce_opts *o)
{
    char err[256], retries[16], timeout[32];
    snprintf(retries, sizeof retries, "%d", o->retries);
    snprintf(timeout, sizeof timeout, "%d", o->timeout_ms);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (chaos_conf_set(conf, "bootstrap.servers", o->bootstrap) || chaos_conf_set(conf, "acks", "all") ||
        chaos_conf_set(conf, "enable.idempotence", o->retries > 0 ? "true" : "false") ||
        chaos_conf_set(conf, "retries", retries) || chaos_conf_set(conf, "message.timeout.ms", timeout) ||
        chaos_conf_set(conf, "client.id", o->name)) {
        rd_kafka_conf_destroy(conf);
        return 2;
    }
    for (int i = 0; i < o->client_prop_count; i++) {
        char key[128];
        const char *eq = strchr(o->client_props[i], '=');
        size_t klen = eq ? (size_t)(eq - o->client_props[i]) : 0;
        if (!eq || klen == 0 || klen >= sizeof key) {
            chaos_log("produce: --client-prop wants key=value, not '%s'", o->client_props[i]);
            rd_kafka_conf_destroy(conf);
            return 2;
        }
        memcpy(key, o->client_props[i], klen);
        key[klen] = '\0';
        if (chaos_conf_set(conf, key, eq + 1)) {
            rd_kafka_conf_destroy(conf);
            return 2;
        }
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_produce_delivery);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!rk) {
        chaos_log("produce: %s", err);
        return 2;
    }
    FILE *log = o->log_path ? fopen(o->log_path, "a") : NULL;
    if (o->log_path && !log) {
        chaos_log("produce: cannot append to %s", o->log_path);
        rd_kafka_destroy(rk);
        return 2;
    }
    /* Outcomes outlive the loop: a record still queued at the end is
     * purged by rd_kafka_destroy, which may still report it. */
    struct outcome *outs = calloc((size_t)(o->count > 0 ? o->count : 1), sizeof *outs);
    if (!outs) {
        if (log)
            fclose(log);
        rd_kafka_destroy(rk);
        return 2;
    }
    int ok = 0, failed = 0, seq;
    for (seq = 0; seq < o->count; seq++) {
        char key[64], value[96];
        int klen = snprintf(key, sizeof key, "%s-%d", o->name, seq);
        int vlen = chaos_value_for(key, value, sizeof value);
        struct outcome *out = &outs[seq];
        rd_kafka_resp_err_t e = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(o->topic), RD_KAFKA_V_PARTITION(0), RD_KAFKA_V_KEY(key, (size_t)klen),
            RD_KAFKA_V_VALUE(value, (size_t)vlen), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(out),
            RD_KAFKA_V_END);
        if (e) {
            printf("error %s\n", rd_kafka_err2name(e));
            failed++;
            continue;
        }
        rd_kafka_flush(rk, o->timeout_ms + 5000);
        if (!out->done || out->err) {
            printf("error %s\n", out->done ? rd_kafka_err2name(out->err) : "NO_DELIVERY_REPORT");
            failed++;
            if (!out->done)
                break; /* still queued: later records would wait behind it */
            continue;
        }
        ok++;
        if (o->print_times) {
            printf("ok %d %lld\n", seq, (long long)chaos_now_ms());
            fflush(stdout);
        }
        if (log)
            fprintf(log, "A %s %d %d %lld\n", o->name, seq, (int)out->part, (long long)out->off);
    }
    if (log) {
        fprintf(log, "S %s %d\n", o->name, seq < o->count ? seq + 1 : seq);
        fclose(log);
    }
    printf("produced ok %d failed %d\n", ok, failed);
    fflush(stdout);
    rd_kafka_destroy(rk);
    free(outs);
    return failed ? 1 : 0;
}
