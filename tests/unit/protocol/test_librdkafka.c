/* Golden bytes from a real client: a librdkafka producer connects to a
 * loopback socket played by this test. Its ApiVersions and Metadata requests
 * must decode with the generated codecs, and it must accept an ApiVersions
 * response that the generated encoder produced (otherwise it would never
 * send Metadata). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#ifdef CAIRN_HAVE_RDKAFKA

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "protocol/messages.h"

#define TEST_CLIENT_ID "cairn-golden"
#define TEST_TOPIC "golden-topic"

/* Reads exactly n bytes or fails after timeout_ms without progress. */
static int read_full(int fd, uint8_t *buf, size_t n, int timeout_ms)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) <= 0)
            return -1;
        ssize_t k = read(fd, buf + got, n - got);
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* Reads one size-prefixed request frame; caller frees *out. */
static int read_frame(int fd, uint8_t **out, size_t *len)
{
    uint8_t hdr[4];
    if (read_full(fd, hdr, 4, 10000) != 0)
        return -1;
    uint32_t n = ((uint32_t)hdr[0] << 24) | ((uint32_t)hdr[1] << 16) | ((uint32_t)hdr[2] << 8) | hdr[3];
    if (n < 8 || n > (1u << 20))
        return -1;
    *out = malloc(n);
    if (!*out)
        return -1;
    if (read_full(fd, *out, n, 10000) != 0) {
        free(*out);
        return -1;
    }
    *len = n;
    return 0;
}

/* Decodes the request header at the version its api key/version imply. */
static void decode_header(struct kafka_reader *r, struct request_header *h, struct kafka_arena *arena)
{
    assert_true(r->len >= 4);
    int16_t key = (int16_t)((r->data[0] << 8) | r->data[1]);
    int16_t ver = (int16_t)((r->data[2] << 8) | r->data[3]);
    int16_t hv = kafka_request_header_version(key, ver);
    assert_true(hv >= 0);
    if (request_header_decode(h, r, hv, arena) != 0)
        fail_msg("request header: %s", r->error);
}

static void send_api_versions_response(int fd, int32_t correlation_id, int16_t version)
{
    struct api_versions_response_api_version keys[2];
    api_versions_response_api_version_init(&keys[0]);
    keys[0].api_key = 3; /* Metadata */
    keys[0].min_version = 0;
    keys[0].max_version = 12;
    api_versions_response_api_version_init(&keys[1]);
    keys[1].api_key = 0; /* Produce */
    keys[1].min_version = 0;
    keys[1].max_version = 9;

    struct api_versions_response resp;
    api_versions_response_init(&resp);
    resp.error_code = KAFKA_ERR_NONE;
    resp.api_keys = keys;
    resp.api_keys_count = 2;

    struct response_header rh;
    response_header_init(&rh);
    rh.correlation_id = correlation_id;

    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 128), 0);
    size_t at = kafka_writer_reserve(&w, 4);
    assert_int_equal(response_header_encode(&rh, &w, kafka_response_header_version(18, version)), 0);
    assert_int_equal(api_versions_response_encode(&resp, &w, version), 0);
    kafka_writer_patch_int32(&w, at, (int32_t)(w.len - 4));
    assert_int_equal((size_t)kafka_writer_total_len(&w),
                     4 + response_header_size(&rh, 0) + api_versions_response_size(&resp, version));
    assert_int_equal(write(fd, w.buf, w.len), (ssize_t)w.len);
    kafka_writer_free(&w);
}

static void test_librdkafka_requests_decode(void **state)
{
    (void)state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(lfd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = 0};
    assert_int_equal(bind(lfd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(lfd, 4), 0);
    socklen_t alen = sizeof(addr);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&addr, &alen), 0);

    char servers[64], errstr[256];
    snprintf(servers, sizeof(servers), "127.0.0.1:%u", ntohs(addr.sin_port));
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(conf, "bootstrap.servers", servers, errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(conf, "client.id", TEST_CLIENT_ID, errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(conf, "api.version.request", "true", errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(conf, "message.timeout.ms", "5000", errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk)
        fail_msg("rd_kafka_new: %s", errstr);
    /* A message for an unknown topic makes the client ask for its metadata. */
    assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(TEST_TOPIC), RD_KAFKA_V_VALUE("v", 1), RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);

    struct pollfd p = {.fd = lfd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 10000), 1);
    int cfd = accept(lfd, NULL, NULL);
    assert_true(cfd >= 0);

    /* First frame: ApiVersions v3 with a flexible (v2) header. */
    uint8_t *frame;
    size_t len;
    assert_int_equal(read_frame(cfd, &frame, &len), 0);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct kafka_reader r;
    kafka_reader_init(&r, frame, len);
    struct request_header h;
    decode_header(&r, &h, &arena);
    assert_int_equal(h.request_api_key, 18);
    assert_int_equal(h.request_api_version, 3);
    assert_true(kafka_str_eq_cstr(h.client_id, TEST_CLIENT_ID));
    const struct kafka_api_desc *desc = kafka_api_lookup(h.request_api_key);
    assert_non_null(desc);
    assert_string_equal(desc->name, "ApiVersions");
    struct api_versions_request avr;
    if (api_versions_request_decode(&avr, &r, h.request_api_version, &arena) != 0)
        fail_msg("ApiVersionsRequest: %s", r.error);
    assert_int_equal(r.pos, len);
    assert_true(kafka_str_eq_cstr(avr.client_software_name, "librdkafka"));
    assert_true(avr.client_software_version.len > 0);
    send_api_versions_response(cfd, h.correlation_id, h.request_api_version);
    free(frame);
    kafka_arena_free(&arena);

    /* Then Metadata requests; one of them must name the topic. */
    bool saw_topic = false;
    for (int i = 0; i < 8 && !saw_topic; i++) {
        if (read_frame(cfd, &frame, &len) != 0)
            break;
        kafka_arena_init(&arena);
        kafka_reader_init(&r, frame, len);
        decode_header(&r, &h, &arena);
        assert_true(kafka_str_eq_cstr(h.client_id, TEST_CLIENT_ID));
        if (h.request_api_key == 3) {
            assert_true(h.request_api_version <= 12);
            struct metadata_request mr;
            if (metadata_request_decode(&mr, &r, h.request_api_version, &arena) != 0)
                fail_msg("MetadataRequest v%d: %s", h.request_api_version, r.error);
            assert_int_equal(r.pos, len);
            printf("metadata v%d request with %d topic(s)\n", h.request_api_version, mr.topics_count);
            for (int32_t t = 0; t < mr.topics_count; t++)
                if (kafka_str_eq_cstr(mr.topics[t].name, TEST_TOPIC))
                    saw_topic = true;
            /* Re-encoding the decoded request reproduces the client's bytes. */
            struct kafka_writer w;
            kafka_writer_init(&w, 64);
            size_t body_at = len - metadata_request_size(&mr, h.request_api_version);
            assert_int_equal(metadata_request_encode(&mr, &w, h.request_api_version), 0);
            assert_int_equal(w.len, len - body_at);
            assert_memory_equal(w.buf, frame + body_at, w.len);
            kafka_writer_free(&w);
        }
        free(frame);
        kafka_arena_free(&arena);
    }
    assert_true(saw_topic);

    close(cfd);
    close(lfd);
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_destroy(rk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_librdkafka_requests_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

static void test_librdkafka_missing(void **state)
{
    (void)state;
    skip();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_librdkafka_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
