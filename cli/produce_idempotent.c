/* cairn produce's idempotent producer: InitProducerId once, then per
 * partition a base sequence per batch. See produce_idempotent.h. */
#include "produce_idempotent.h"

#include <stdlib.h>
#include <string.h>

#include "util/crc32c.h"

int produce_idem_resolve(int setting, bool acks_set, int16_t acks, bool *on)
{
    bool weak_acks = acks_set && acks != -1;
    if (setting == 1 && weak_acks)
        return cli_fail(CLI_EXIT_USAGE,
                        "enable.idempotence=true needs --acks all (got --acks %d); drop one of them or set "
                        "-X enable.idempotence=false",
                        (int)acks);
    /* Unset: on, unless the user picked acks 0/1 (Kafka 3's producer). */
    *on = setting == 1 || (setting < 0 && !weak_acks);
    return 0;
}

struct init_pid_ctx {
    int32_t timeout_ms;
    int64_t producer_id; /* -1 for a new id; else the current one, to bump */
    int16_t epoch;
};

static int build_init_pid(void *req, int16_t version, struct kafka_arena *ar, void *ctx)
{
    struct init_producer_id_request *m = req;
    const struct init_pid_ctx *ic = ctx;
    (void)version;
    (void)ar;
    m->transactional_id = (struct kafka_str){NULL, -1}; /* idempotence only */
    m->transaction_timeout_ms = ic->timeout_ms;
    /* v3 carries the current id and epoch (KIP-360); an older broker
     * hands out a new id instead, which restarts the sequences too. */
    m->producer_id = version >= 3 ? ic->producer_id : -1;
    m->producer_epoch = version >= 3 ? ic->epoch : -1;
    return 0;
}

/* Errors after which InitProducerId may succeed when asked again. */
static bool init_pid_retriable(int16_t code)
{
    return code == KAFKA_ERR_COORDINATOR_LOAD_IN_PROGRESS || code == KAFKA_ERR_COORDINATOR_NOT_AVAILABLE ||
           code == KAFKA_ERR_NOT_COORDINATOR || code == KAFKA_ERR_REQUEST_TIMED_OUT ||
           code == KAFKA_ERR_CONCURRENT_TRANSACTIONS;
}

static int init_pid(struct produce_idem *id, struct cli_conn *c, int64_t deadline_ms);

int produce_idem_init(struct produce_idem *id, struct cli_conn *c, bool on, int32_t partitions, int64_t deadline_ms)
{
    memset(id, 0, sizeof(*id));
    id->producer_id = -1;
    id->epoch = -1;
    if (!on)
        return 0;
    id->next_seq = calloc((size_t)partitions, sizeof(*id->next_seq));
    if (!id->next_seq)
        return cli_fail(CLI_EXIT_UNREACHABLE, "out of memory");
    id->partitions = partitions;
    return init_pid(id, c, deadline_ms);
}

/* InitProducerId until it answers (retriable errors asked again until
 * deadline_ms): a new id, or the current one's epoch bumped. */
static int init_pid(struct produce_idem *id, struct cli_conn *c, int64_t deadline_ms)
{
    struct init_pid_ctx ic = {(int32_t)(c->timeout_ms < 60000 ? 60000 : c->timeout_ms), id->producer_id, id->epoch};
    for (int64_t backoff = 100;; backoff = backoff * 2 > 1000 ? 1000 : backoff * 2) {
        struct cli_reply r;
        int rc = cli_call_any(c, KAFKA_API_KEY_INIT_PRODUCER_ID, build_init_pid, &ic, &r);
        if (rc)
            return rc;
        const struct init_producer_id_response *m = r.response;
        int16_t code = m ? m->error_code : KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        if (code == KAFKA_ERR_NONE) {
            id->producer_id = m->producer_id;
            id->epoch = m->producer_epoch;
            cli_reply_free(&r);
            id->enabled = true;
            return 0;
        }
        cli_reply_free(&r);
        if (!init_pid_retriable(code) || cli_now_ms() + backoff > deadline_ms)
            return cli_kafka_fail(code, (struct kafka_str){NULL, -1}, "cannot get a producer id (InitProducerId)",
                                  code == KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED ||
                                          code == KAFKA_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                                      ? "the idempotent producer needs IdempotentWrite on the cluster, or set "
                                        "-X enable.idempotence=false"
                                      : "set -X enable.idempotence=false to produce without it");
        cli_sleep_ms(backoff);
    }
}

bool produce_idem_recoverable(const struct produce_idem *id, int16_t code)
{
    return id->enabled && (code == KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER || code == KAFKA_ERR_UNKNOWN_PRODUCER_ID);
}

int produce_idem_bump(struct produce_idem *id, struct cli_conn *c, int64_t deadline_ms)
{
    int rc = init_pid(id, c, deadline_ms);
    if (rc == 0) {
        id->bumps++;
        memset(id->next_seq, 0, sizeof(*id->next_seq) * (size_t)id->partitions);
    }
    return rc;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

/* The v2 batch header: producerId at 43, producerEpoch 51, baseSequence
 * 53, recordCount 57; the CRC at 17 covers byte 21 to the end. */
#define BATCH_HEADER_BYTES 61

void produce_idem_restamp(struct produce_idem *id, int32_t partition, uint8_t *batch, size_t len)
{
    if (!id->enabled || partition < 0 || partition >= id->partitions || len < BATCH_HEADER_BYTES)
        return;
    int32_t count = (int32_t)((uint32_t)batch[57] << 24 | (uint32_t)batch[58] << 16 | (uint32_t)batch[59] << 8 |
                              (uint32_t)batch[60]);
    put_be(batch + 43, (uint64_t)id->producer_id, 8);
    put_be(batch + 51, (uint16_t)id->epoch, 2);
    put_be(batch + 53, (uint32_t)id->next_seq[partition], 4);
    put_be(batch + 17, crc32c(0, batch + 21, len - 21), 4);
    int64_t next = (int64_t)id->next_seq[partition] + count;
    id->next_seq[partition] = (int32_t)(next > INT32_MAX ? next - INT32_MAX - 1 : next);
}

void produce_idem_free(struct produce_idem *id)
{
    free(id->next_seq);
    memset(id, 0, sizeof(*id));
}

void produce_idem_stamp(struct produce_idem *id, int32_t partition, struct record_batch_builder *b)
{
    if (!id->enabled || partition < 0 || partition >= id->partitions)
        return;
    b->producer_id = id->producer_id;
    b->producer_epoch = id->epoch;
    b->base_sequence = id->next_seq[partition];
    /* Kafka's sequences wrap to 0 after INT32_MAX. */
    int64_t next = (int64_t)id->next_seq[partition] + b->count;
    id->next_seq[partition] = (int32_t)(next > INT32_MAX ? next - INT32_MAX - 1 : next);
}

bool produce_idem_already_written(const struct produce_idem *id, int16_t code)
{
    return id->enabled && code == KAFKA_ERR_DUPLICATE_SEQUENCE_NUMBER;
}

const char *produce_idem_hint(int16_t code)
{
    switch (code) {
    case KAFKA_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER:
        return "the leader lost this producer's earlier batches (records may be missing); check the log and "
               "produce the rest again";
    case KAFKA_ERR_UNKNOWN_PRODUCER_ID:
        return "the leader no longer knows this producer id (its records were deleted or expired); produce the "
               "rest again";
    case KAFKA_ERR_INVALID_PRODUCER_EPOCH:
    case KAFKA_ERR_PRODUCER_FENCED:
        return "another producer took over this producer id";
    default:
        return NULL;
    }
}
