/* Network layer throughput, run by hand (not part of ctest):
 *   bench_net [requests] [splice_mib]
 * 1. one connection, small requests one at a time (ping-pong) and
 *    pipelined (a writer thread keeps sending while the reader drains);
 * 2. one response carrying a file region sent with sendfile(), read by the
 *    client into a 128 KiB buffer.
 * Prints one JSON object. */
#include "net_test_support.h"

#include <fcntl.h>

struct pipeline_writer {
    int fd;
    int count;
};

static void *pipeline_write_all(void *arg)
{
    struct pipeline_writer *pw = arg;
    enum { BATCH = 256 };
    uint8_t buf[BATCH * 16];
    for (int i = 0; i < pw->count;) {
        size_t len = 0;
        for (int j = 0; j < BATCH && i < pw->count; j++, i++)
            len += test_build_request(buf + len, i, TEST_CMD_ECHO, NULL, 0, NULL, 0);
        if (test_send_all(pw->fd, buf, len) != 0)
            return NULL;
    }
    return NULL;
}

static double seconds_since(int64_t start_ns)
{
    return (double)(clock_mono_ns() - start_ns) / 1e9;
}

int main(int argc, char **argv)
{
    int requests = argc > 1 ? atoi(argv[1]) : 100000;
    int64_t splice_mib = argc > 2 ? atoll(argv[2]) : 1024;
    if (requests <= 0 || splice_mib <= 0 || splice_mib > 2047) {
        fprintf(stderr, "usage: bench_net [requests] [splice_mib <= 2047]\n");
        return 2;
    }
    struct test_ctx ctx;
    test_ctx_init(&ctx);
    struct net_config cfg;
    test_config(&cfg);
    cfg.num_network_threads = 1;
    cfg.num_io_threads = 2;
    struct net_server *server = NULL;
    char err[256];
    if (net_server_start(&cfg, test_handler, &ctx, &server, err, sizeof(err)) != 0) {
        fprintf(stderr, "start: %s\n", err);
        return 1;
    }
    int port = net_server_bound_port(server, 0);
    int fd = test_connect(port);
    uint8_t body[64];
    int32_t id;

    int64_t start = clock_mono_ns();
    for (int i = 0; i < requests; i++) {
        if (test_send_request(fd, i, TEST_CMD_ECHO, NULL, 0) != 0 ||
            test_read_response(fd, &id, body, sizeof(body)) != 0 || id != i) {
            fprintf(stderr, "ping-pong failed at %d\n", i);
            return 1;
        }
    }
    double ping_pong_s = seconds_since(start);

    struct pipeline_writer pw = {fd, requests};
    pthread_t writer;
    start = clock_mono_ns();
    pthread_create(&writer, NULL, pipeline_write_all, &pw);
    for (int i = 0; i < requests; i++) {
        if (test_read_response(fd, &id, body, sizeof(body)) != 0 || id != i) {
            fprintf(stderr, "pipelined failed at %d\n", i);
            return 1;
        }
    }
    double pipelined_s = seconds_since(start);
    pthread_join(writer, NULL);

    char path[] = "/tmp/cairn-net-bench-XXXXXX";
    int file_fd = mkstemp(path);
    unlink(path);
    size_t chunk_len = 1 << 20;
    uint8_t *chunk = malloc(chunk_len);
    for (size_t i = 0; i < chunk_len; i++)
        chunk[i] = (uint8_t)(i * 131);
    for (int64_t m = 0; m < splice_mib; m++) {
        if (write(file_fd, chunk, chunk_len) != (ssize_t)chunk_len) {
            fprintf(stderr, "cannot write the bench file\n");
            return 1;
        }
    }
    free(chunk);
    ctx.splice_fd = file_fd;
    int32_t splice_len = (int32_t)(splice_mib << 20);
    int32_t args[4] = {0, splice_len, 0, 0};

    uint8_t *sink = malloc(128 * 1024);
    start = clock_mono_ns();
    test_send_request(fd, 1, TEST_CMD_SPLICE, args, 4);
    int64_t expected = 4 + 4 + 3 + 4 + (int64_t)splice_len + 3 + 4 + 3;
    int64_t got = 0;
    while (got < expected) {
        ssize_t n = recv(fd, sink, 128 * 1024, 0);
        if (n <= 0) {
            fprintf(stderr, "splice response cut after %lld bytes\n", (long long)got);
            return 1;
        }
        got += n;
    }
    double splice_s = seconds_since(start);
    free(sink);

    close(fd);
    net_server_stop(server, 1000);
    test_ctx_finish(&ctx);
    net_server_free(server);
    printf("{\"requests\": %d, \"ping_pong_rps\": %.0f, \"pipelined_rps\": %.0f, "
           "\"splice_mib\": %lld, \"splice_mb_per_s\": %.0f}\n",
           requests, requests / ping_pong_s, requests / pipelined_s, (long long)splice_mib,
           (double)got / 1e6 / splice_s);
    return 0;
}
