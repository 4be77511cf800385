/* Fuzzes what a whole broker does with well-framed but hostile requests.
 *
 * One broker runs in this process for the whole fuzzing run (temp log
 * dir, loopback listener, group and transaction coordinators, two topics
 * and a transactional producer made at start). Each input holds up to 8
 * requests (layout in broker_fuzz_input.h): the harness frames each with the
 * right request header, sends them in order on one loopback connection and
 * waits briefly for each answer, so ASan and UBSan watch the broker's own threads decode,
 * handle and answer it. Broker state carries over from input to input.
 *
 * Invariants (a violation traps):
 *  - an answer carries the correlation id of the request it answers and
 *    decodes with the generated response codec at the request's version;
 *  - a request whose body decodes (with the generated codec, as the
 *    broker's dispatcher decodes it) is answered, not met with a closed
 *    connection: the broker closes only on bodies it cannot decode (or
 *    when out of memory), so a close here means a handler built an answer
 *    the response encoder refused, or gave up on valid input;
 *  - a request that cannot park (all but Fetch, JoinGroup and SyncGroup)
 *    is answered within BROKER_FUZZ_ALIVE_MS (CreateTopics and
 *    CreatePartitions within BROKER_FUZZ_CREATE_MS: a valid one may add up
 *    to 10,000 partitions, each a directory of synced files, answered once
 *    they exist); one that may park is given
 *    BROKER_FUZZ_ANSWER_MS, after which the harness drops the connection and
 *    a fresh connection must still get ApiVersions answered within
 *    BROKER_FUZZ_ALIVE_MS (the broker is not hung or wedged).
 *
 * CAIRN_FUZZ_BROKER_STATS=1 prints per-API counts at exit,
 * CAIRN_FUZZ_BROKER_TRACE=1 each request and its answer's first bytes; CAIRN_LOG_LEVEL
 * (default error here) sets the broker's log level. */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sanitizer/common_interface_defs.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "broker_fuzz_input.h"
#include "config/config.h"
#include "protocol/messages.h"
#include "protocol/record_batch.h"
#include "server/broker.h"
#include "util/logger.h"

#define BROKER_FUZZ_ANSWER_MS 100
#define BROKER_FUZZ_ALIVE_MS 10000
#define BROKER_FUZZ_CREATE_MS 120000
#define BROKER_FUZZ_MAX_RESPONSE (64u << 20)
#define BROKER_FUZZ_API_SLOTS 128

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What happened to requests of one API, for CAIRN_FUZZ_BROKER_STATS. */
struct broker_fuzz_api_stats {
    unsigned long sent, answered, no_answer_expected, closed, timed_out;
};

/* Harness state; touched only by libFuzzer's thread (and the exit handler). */
static struct {
    struct broker *broker;
    char dir[64];
    int port;
    int fd; /* -1 when not connected */
    int32_t correlation_id;
    struct kafka_uuid topic_id, compacted_topic_id;
    /* Learnt from answers, written over placeholders (broker_fuzz_input.h). */
    char member_id[BROKER_FUZZ_MEMBER_ID_LEN];
    bool have_member_id;
    uint8_t generation[4];
    uint8_t producer[10];  /* producer id and epoch, big-endian */
    bool after_unanswered; /* the last request on fd expected no answer */
    bool stats;
    bool trace;
    struct broker_fuzz_api_stats api[BROKER_FUZZ_API_SLOTS];
} fuzz = {.fd = -1};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    remove(path);
    return 0;
}

/* Also the sanitizers' death callback: a crash leaves no temp dir behind. */
static void remove_temp_dir(void)
{
    if (fuzz.dir[0])
        nftw(fuzz.dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    fuzz.dir[0] = '\0';
}

/* The harness itself failed (not the broker). */
static void die(const char *what)
{
    fprintf(stderr, "fuzz_broker_requests: %s\n", what);
    remove_temp_dir();
    abort();
}

/* The broker broke an invariant: report and crash, so libFuzzer keeps the input. */
__attribute__((format(printf, 1, 2), noreturn)) static void broker_failed(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz_broker_requests: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    remove_temp_dir();
    __builtin_trap();
}

static int pick_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 && getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

static int connect_broker(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in addr = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)fuzz.port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* A broker that stops reading must not block the fuzzer forever. */
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void disconnect(void)
{
    if (fuzz.fd >= 0)
        close(fuzz.fd);
    fuzz.fd = -1;
    fuzz.after_unanswered = false;
}

static int send_all(int fd, const uint8_t *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads exactly len bytes before the deadline: 0, 1 if the peer closed or
 * reset, -1 on timeout. */
static int recv_exact(int fd, uint8_t *out, size_t len, int64_t deadline)
{
    size_t got = 0;
    while (got < len) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        ssize_t n = recv(fd, out + got, len - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 1;
        got += (size_t)n;
    }
    return 0;
}

/* One response frame (without its size): 0 with *out malloc'd, 1 closed,
 * -1 timeout. A size the broker could never mean is a broker bug. */
static int recv_frame(int fd, int timeout_ms, uint8_t **out, size_t *out_len)
{
    int64_t deadline = now_ms() + timeout_ms;
    uint8_t size_bytes[4];
    int rc = recv_exact(fd, size_bytes, 4, deadline);
    if (rc != 0)
        return rc;
    uint32_t size = (uint32_t)size_bytes[0] << 24 | (uint32_t)size_bytes[1] << 16 | (uint32_t)size_bytes[2] << 8 |
                    size_bytes[3];
    if (size < 4 || size > BROKER_FUZZ_MAX_RESPONSE)
        broker_failed("response frame of %u bytes", size);
    uint8_t *buf = malloc(size);
    if (!buf)
        die("out of memory");
    /* The size arrived, so the rest is on its way: allow it the full wait. */
    rc = recv_exact(fd, buf, size, now_ms() + BROKER_FUZZ_ALIVE_MS);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    *out = buf;
    *out_len = size;
    return 0;
}

/* A complete request frame (size, header, body) in w. */
static int build_frame(struct kafka_writer *w, int16_t api_key, int16_t version, int32_t correlation_id,
                       const uint8_t *body, size_t body_len)
{
    if (kafka_writer_init(w, 64 + body_len) != 0)
        return -1;
    size_t size_at = kafka_writer_reserve(w, 4);
    struct request_header header;
    request_header_init(&header);
    header.request_api_key = api_key;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = kafka_str_from_cstr("fuzz");
    if (request_header_encode(&header, w, kafka_request_header_version(api_key, version)) != 0) {
        kafka_writer_free(w);
        return -1;
    }
    if (body_len)
        kafka_write_raw(w, body, body_len);
    kafka_writer_patch_int32(w, size_at, (int32_t)(w->len - 4));
    if (w->failed) {
        kafka_writer_free(w);
        return -1;
    }
    return 0;
}

static void put_be(uint8_t *out, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        out[i] = (uint8_t)v;
}

/* Keeps what later requests of a flow need from an answer. */
static void learn_from_answer(int16_t api_key, const void *msg)
{
    if (api_key == 11) {
        const struct join_group_response *join = msg;
        if (join->member_id.len == BROKER_FUZZ_MEMBER_ID_LEN) {
            memcpy(fuzz.member_id, join->member_id.data, BROKER_FUZZ_MEMBER_ID_LEN);
            fuzz.have_member_id = true;
        }
        if (join->error_code == KAFKA_ERR_NONE)
            put_be(fuzz.generation, (uint32_t)join->generation_id, 4);
    } else if (api_key == 22) {
        const struct init_producer_id_response *init = msg;
        if (init->error_code == KAFKA_ERR_NONE) {
            put_be(fuzz.producer, (uint64_t)init->producer_id, 8);
            put_be(fuzz.producer + 8, (uint16_t)init->producer_epoch, 2);
        }
    }
}

/* Checks a response frame: correlation id, header, body decode. */
static void check_response(const uint8_t *frame, size_t len, const struct kafka_api_desc *desc, int16_t version,
                           int32_t correlation_id)
{
    struct kafka_reader r;
    kafka_reader_init(&r, frame, len);
    int32_t got = kafka_read_int32(&r);
    if (got != correlation_id)
        broker_failed("%s v%d answered with correlation id %d, sent %d", desc->name, version, got, correlation_id);
    if (kafka_response_header_version(desc->api_key, version) >= 1)
        kafka_reader_skip_tagged_fields(&r);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    void *msg = kafka_arena_alloc(&arena, desc->response_size_of);
    if (!msg)
        die("out of memory");
    desc->response_init(msg);
    if (r.failed || desc->response_decode(msg, &r, version, &arena) != 0)
        broker_failed("%s v%d response does not decode: %s", desc->name, version, r.error);
    learn_from_answer(desc->api_key, msg);
    kafka_arena_free(&arena);
}

/* After a timeout: a new connection must still be answered. */
static void check_alive(void)
{
    const struct kafka_api_desc *desc = kafka_api_lookup(18);
    struct kafka_writer w;
    /* ApiVersions v0: an empty body. */
    if (build_frame(&w, 18, 0, INT32_MAX, NULL, 0) != 0)
        die("out of memory");
    int fd = connect_broker();
    if (fd < 0)
        die("the broker no longer accepts connections");
    if (send_all(fd, w.buf, w.len) != 0)
        die("the broker no longer reads requests");
    kafka_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = recv_frame(fd, BROKER_FUZZ_ALIVE_MS, &frame, &len);
    close(fd);
    if (rc != 0)
        broker_failed("ApiVersions on a new connection got %s", rc > 0 ? "the connection closed" : "no answer");
    check_response(frame, len, desc, 0, INT32_MAX);
    free(frame);
}

/* Recomputes the CRC of every v2 batch in a records field (in place). */
static void fix_batch_crcs(uint8_t *records, size_t len)
{
    size_t pos = 0;
    while (len - pos >= RECORD_BATCH_HEADER_SIZE) {
        struct record_batch_header h;
        if (record_batch_parse_header(records + pos, len - pos, &h) != 0 || h.magic != 2 || h.batch_length < 0)
            return;
        size_t total = record_batch_total_size(&h);
        if (total < RECORD_BATCH_HEADER_SIZE || total > len - pos)
            return;
        record_batch_update_crc(records + pos, total);
        pos += total;
    }
}

/* Produce needs a look inside: acks=0 gets no answer, and bit 0 of the
 * flags asks for the batches' CRCs to be made right. body is the harness's
 * own copy, so the records can be rewritten in place. */
static bool produce_expects_answer(uint8_t *body, size_t body_len, int16_t version, uint8_t flags)
{
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct kafka_reader r;
    kafka_reader_init(&r, body, body_len);
    struct produce_request req;
    produce_request_init(&req);
    bool answer = true;
    if (produce_request_decode(&req, &r, version, &arena) == 0) {
        answer = req.acks != 0;
        for (int32_t t = 0; (flags & BROKER_FUZZ_FLAG_FIX_CRC) && t < req.topic_data_count; t++) {
            const struct produce_request_topic_produce_data *topic = &req.topic_data[t];
            for (int32_t p = 0; p < topic->partition_data_count; p++) {
                const struct kafka_records *rec = &topic->partition_data[p].records;
                /* The decoder points into body, which this function owns. */
                if (rec->data && rec->len > 0)
                    fix_batch_crcs(body + (rec->data - body), (size_t)rec->len);
            }
        }
    }
    kafka_arena_free(&arena);
    return answer;
}

/* True when the body decodes as the broker's dispatcher decodes it. */
static bool request_decodes(const struct kafka_api_desc *desc, int16_t version, const uint8_t *body, size_t len)
{
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct kafka_reader r;
    kafka_reader_init(&r, body, len);
    void *msg = kafka_arena_alloc(&arena, desc->request_size_of);
    if (!msg)
        die("out of memory");
    desc->request_init(msg);
    bool ok = desc->request_decode(msg, &r, version, &arena) == 0;
    kafka_arena_free(&arena);
    return ok;
}

static bool placeholder_at(const uint8_t *body, size_t len, size_t i, const char *placeholder, size_t n)
{
    return len - i >= n && memcmp(body + i, placeholder, n) == 0;
}

/* Writes what only the broker knows over the placeholders in a body. */
static void put_placeholders(uint8_t *body, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (placeholder_at(body, len, i, BROKER_FUZZ_TOPIC_ID_PLACEHOLDER, 16))
            memcpy(body + i, fuzz.topic_id.bytes, 16);
        else if (placeholder_at(body, len, i, BROKER_FUZZ_COMPACTED_TOPIC_ID_PLACEHOLDER, 16))
            memcpy(body + i, fuzz.compacted_topic_id.bytes, 16);
        else if (fuzz.have_member_id &&
                 placeholder_at(body, len, i, BROKER_FUZZ_MEMBER_ID_PLACEHOLDER, BROKER_FUZZ_MEMBER_ID_LEN))
            memcpy(body + i, fuzz.member_id, BROKER_FUZZ_MEMBER_ID_LEN);
        else if (placeholder_at(body, len, i, BROKER_FUZZ_GENERATION_PLACEHOLDER, 4))
            memcpy(body + i, fuzz.generation, 4);
        else if (placeholder_at(body, len, i, BROKER_FUZZ_PRODUCER_PLACEHOLDER, 10))
            memcpy(body + i, fuzz.producer, 10);
    }
}

static void print_stats(void)
{
    fprintf(stderr, "fuzz_broker_requests: per API: sent answered no-answer-expected closed timed-out\n");
    for (int k = 0; k < BROKER_FUZZ_API_SLOTS; k++) {
        const struct broker_fuzz_api_stats *s = &fuzz.api[k];
        if (!s->sent)
            continue;
        const struct kafka_api_desc *desc = kafka_api_lookup((int16_t)k);
        fprintf(stderr, "  %3d %-24s %8lu %8lu %8lu %8lu %8lu\n", k, desc ? desc->name : "?", s->sent, s->answered,
                s->no_answer_expected, s->closed, s->timed_out);
    }
}

/* Stops the broker (a graceful stop after hostile traffic is worth
 * checking too; LeakSanitizer then sees everything it freed) and removes
 * the temp dir this harness made. */
static void shutdown_broker(void)
{
    disconnect();
    if (fuzz.stats)
        print_stats();
    if (fuzz.broker)
        broker_stop(fuzz.broker);
    fuzz.broker = NULL;
    remove_temp_dir();
}

/* Sends one request on a new connection and decodes its answer into
 * arena (which keeps the frame the answer points into). */
static void *setup_request(int16_t api_key, int16_t version, const void *msg, struct kafka_arena *arena)
{
    const struct kafka_api_desc *desc = kafka_api_lookup(api_key);
    struct kafka_writer body;
    if (kafka_writer_init(&body, 256) != 0 || desc->request_encode(msg, &body, version) != 0 || body.failed)
        die("cannot encode a set-up request");
    struct kafka_writer w;
    if (build_frame(&w, api_key, version, 1, body.buf, body.len) != 0)
        die("out of memory");
    kafka_writer_free(&body);
    int fd = connect_broker();
    if (fd < 0 || send_all(fd, w.buf, w.len) != 0)
        die("cannot send a set-up request");
    kafka_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    if (recv_frame(fd, BROKER_FUZZ_ALIVE_MS, &frame, &len) != 0)
        die("no answer to a set-up request");
    close(fd);
    check_response(frame, len, desc, version, 1);
    uint8_t *kept = kafka_arena_alloc(arena, len);
    void *response = kafka_arena_alloc(arena, desc->response_size_of);
    if (!kept || !response)
        die("out of memory");
    memcpy(kept, frame, len);
    free(frame);
    struct kafka_reader r;
    kafka_reader_init(&r, kept, len);
    kafka_read_int32(&r);
    if (kafka_response_header_version(api_key, version) >= 1)
        kafka_reader_skip_tagged_fields(&r);
    desc->response_init(response);
    if (desc->response_decode(response, &r, version, arena) != 0)
        die("set-up answer does not decode");
    return response;
}

/* The harness's topics (their ids replace the placeholders in inputs) and
 * the transactional id's producer (the first producer placeholder value). */
static void create_fixtures(void)
{
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct create_topics_request_creatable_topic_config compact;
    create_topics_request_creatable_topic_config_init(&compact);
    compact.name = kafka_str_from_cstr("cleanup.policy");
    compact.value = kafka_str_from_cstr("compact");
    struct create_topics_request_creatable_topic topics[2];
    for (int i = 0; i < 2; i++)
        create_topics_request_creatable_topic_init(&topics[i]);
    topics[0].name = kafka_str_from_cstr(BROKER_FUZZ_TOPIC);
    topics[0].num_partitions = 2;
    topics[0].replication_factor = 1;
    topics[1].name = kafka_str_from_cstr(BROKER_FUZZ_COMPACTED_TOPIC);
    topics[1].num_partitions = 1;
    topics[1].replication_factor = 1;
    topics[1].configs = &compact;
    topics[1].configs_count = 1;
    struct create_topics_request req;
    create_topics_request_init(&req);
    req.topics = topics;
    req.topics_count = 2;
    req.timeout_ms = 10000;
    struct create_topics_response *created = setup_request(19, 7, &req, &arena);
    for (int32_t i = 0; i < created->topics_count; i++) {
        const struct create_topics_response_creatable_topic_result *t = &created->topics[i];
        if (t->error_code != KAFKA_ERR_NONE)
            die("cannot create the fuzzing topics");
        if (kafka_str_eq_cstr(t->name, BROKER_FUZZ_TOPIC))
            fuzz.topic_id = t->topic_id;
        if (kafka_str_eq_cstr(t->name, BROKER_FUZZ_COMPACTED_TOPIC))
            fuzz.compacted_topic_id = t->topic_id;
    }

    struct init_producer_id_request init;
    init_producer_id_request_init(&init);
    init.transactional_id = kafka_str_from_cstr(BROKER_FUZZ_TXN_ID);
    init.transaction_timeout_ms = 60000;
    struct init_producer_id_response *producer = setup_request(22, 4, &init, &arena);
    if (producer->error_code != KAFKA_ERR_NONE)
        die("cannot initialise the fuzzing producer");
    kafka_arena_free(&arena);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    signal(SIGPIPE, SIG_IGN);
    fuzz.stats = getenv("CAIRN_FUZZ_BROKER_STATS") != NULL;
    fuzz.trace = getenv("CAIRN_FUZZ_BROKER_TRACE") != NULL;
    if (!getenv("CAIRN_LOG_LEVEL"))
        logger_set_level(LOGGER_ERROR);
    snprintf(fuzz.dir, sizeof fuzz.dir, "/tmp/cairn-fuzz-broker-XXXXXX");
    if (!mkdtemp(fuzz.dir))
        die("cannot create a temp dir");
    fuzz.port = pick_free_port();
    if (fuzz.port <= 0)
        die("no free port");
    char log_dirs[128], listeners[64];
    snprintf(log_dirs, sizeof log_dirs, "%s/data", fuzz.dir);
    snprintf(listeners, sizeof listeners, "PLAINTEXT://127.0.0.1:%d", fuzz.port);
    const char *keys[] = {
        "log.dirs",
        "listeners",
        "auto.create.topics.enable",
        "num.partitions",
        /* Small segments: rolls, index and retention work happen often. */
        "log.segment.bytes",
        "log.cleaner.backoff.ms",
        "log.retention.check.interval.ms",
        /* Joins answer at once instead of after the default 3 s. */
        "group.initial.rebalance.delay.ms",
        "offsets.topic.num.partitions",
        "transaction.state.log.num.partitions",
        "num.io.threads",
        "num.network.threads",
    };
    const char *values[] = {
        log_dirs, listeners, "true", "2", "16384", "200", "1000", "0", "4", "4", "4", "2",
    };
    struct broker_config *cfg = NULL;
    char err[512] = "";
    if (config_build(keys, values, sizeof keys / sizeof keys[0], &cfg, err, sizeof err) != 0 ||
        broker_start(cfg, &fuzz.broker, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_broker_requests: cannot start the broker: %s\n", err);
        remove_temp_dir();
        exit(1);
    }
    atexit(shutdown_broker);
    __sanitizer_set_death_callback(remove_temp_dir);
    create_fixtures();
    return 0;
}

/* Sends one request of an input and checks what comes back. */
static void run_request(const uint8_t *data, size_t size)
{
    struct broker_fuzz_pick pick;
    if (!broker_fuzz_pick(data, size, &pick))
        return;
    int16_t api_key = pick.entry->api_key;
    const struct kafka_api_desc *desc = kafka_api_lookup(api_key);
    if (!desc)
        return;
    struct broker_fuzz_api_stats *stats = &fuzz.api[api_key % BROKER_FUZZ_API_SLOTS];
    uint8_t *body = malloc(pick.body_len ? pick.body_len : 1);
    if (!body)
        die("out of memory");
    if (pick.body_len)
        memcpy(body, pick.body, pick.body_len);
    put_placeholders(body, pick.body_len);
    bool answer = api_key != 0 || produce_expects_answer(body, pick.body_len, pick.version, pick.flags);
    bool decodes = request_decodes(desc, pick.version, body, pick.body_len);

    int32_t correlation_id = ++fuzz.correlation_id;
    if (fuzz.correlation_id == INT32_MAX - 1)
        fuzz.correlation_id = 0;
    struct kafka_writer w;
    if (build_frame(&w, api_key, pick.version, correlation_id, body, pick.body_len) != 0)
        die("out of memory");
    free(body);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (fuzz.fd < 0)
            fuzz.fd = connect_broker();
        if (fuzz.fd < 0)
            die("cannot connect to the broker");
        if (send_all(fuzz.fd, w.buf, w.len) == 0)
            break;
        /* The broker closed the connection after an earlier request. */
        disconnect();
        if (attempt == 1)
            die("cannot send a request on a fresh connection");
    }
    kafka_writer_free(&w);
    stats->sent++;
    /* A close after acks=0 may be the broker refusing that Produce. */
    bool excused = fuzz.after_unanswered;
    fuzz.after_unanswered = !answer;
    if (!answer) {
        stats->no_answer_expected++;
        return;
    }
    uint8_t *frame = NULL;
    size_t len = 0;
    /* Only Fetch, JoinGroup and SyncGroup may park; anything else must
     * answer at once, give or take a slow disk under the sanitizers. */
    bool long_poll = api_key == 1 || api_key == 11 || api_key == 14;
    bool creates = api_key == 19 || api_key == 37;
    int answer_ms = long_poll ? BROKER_FUZZ_ANSWER_MS : creates ? BROKER_FUZZ_CREATE_MS : BROKER_FUZZ_ALIVE_MS;
    int rc = recv_frame(fuzz.fd, answer_ms, &frame, &len);
    if (fuzz.trace) {
        fprintf(stderr, "fuzz_broker_requests: %s v%d: %s", desc->name, pick.version,
                rc == 0  ? "answer"
                : rc > 0 ? "closed"
                         : "no answer");
        for (size_t i = 0; rc == 0 && i < len && i < 48; i++)
            fprintf(stderr, " %02x", frame[i]);
        fputc('\n', stderr);
    }
    if (rc == 0) {
        stats->answered++;
        check_response(frame, len, desc, pick.version, correlation_id);
        free(frame);
    } else if (rc > 0) {
        stats->closed++;
        disconnect();
        if (decodes && !excused)
            broker_failed("%s v%d decodes but the broker closed the connection", desc->name, pick.version);
    } else {
        if (!long_poll)
            broker_failed("%s v%d not answered within %d ms", desc->name, pick.version, answer_ms);
        /* Parked (a long Fetch wait, a JoinGroup) or stuck: drop it and
         * make sure the broker still serves others. */
        stats->timed_out++;
        disconnect();
        check_alive();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *end = data + size;
    for (int n = 0; n < BROKER_FUZZ_MAX_REQUESTS; n++) {
        const uint8_t *sep = memmem(data, (size_t)(end - data), BROKER_FUZZ_SEPARATOR, BROKER_FUZZ_SEPARATOR_LEN);
        run_request(data, (size_t)((sep ? sep : end) - data));
        if (!sep)
            break;
        data = sep + BROKER_FUZZ_SEPARATOR_LEN;
    }
    return 0;
}
