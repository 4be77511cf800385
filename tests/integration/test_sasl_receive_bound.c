/* sasl.server.max.receive.size on a real cairnd's SASL_PLAINTEXT listener:
 * a connection that has not authenticated announcing a frame above the
 * bound (a 100 MB SaslAuthenticate, one a byte above the bound, a bare
 * token after SaslHandshake v0, an ApiVersions before any handshake) is
 * closed on the size prefix alone, with a log line naming the peer and the
 * size and one failed AUTHENTICATION audit event (as the user a half-done
 * exchange named, else the connection's principal; never a second one for
 * the exchange left unfinished), while the broker's memory stays flat; a
 * frame at the bound is
 * answered; an authenticated connection is bound by socket.request.max.bytes
 * only, except while it re-authenticates (KIP-368); a SCRAM client on
 * another connection keeps working throughout.
 *
 * Without the bound the 100 MB frame is below socket.request.max.bytes:
 * the broker buffers everything sent and waits for the rest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"
#include "raw_session.h"
#include "sasl_it_fixture.h"
#include "scram_wire_client.h"

#define KAFKA_BOUND 524288           /* Kafka's default sasl.server.max.receive.size */
#define HUGE_FRAME 100000000         /* announced, far below socket.request.max.bytes */
#define HUGE_SENT (48 * 1024 * 1024) /* what the client tries to send of it */
#define MEMORY_SLACK_KIB (16 * 1024) /* allowed broker growth; the sent bytes are 3x this */
#define CLOSE_MS 15000               /* "promptly", generous for a loaded machine */

/* A field of /proc/<pid>/status in KiB, or -1. */
static long proc_status_kib(pid_t pid, const char *field)
{
    char path[64], line[256], fmt[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    snprintf(fmt, sizeof fmt, "%s: %%ld kB", field);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, fmt, &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* "127.0.0.1:<port>" of the client end of fd: how the broker names the peer. */
static void local_peer(int fd, char *out, size_t outlen)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(out, outlen, "127.0.0.1:%d", ntohs(sa.sin_port));
}

/* Sends up to len bytes; returns how many went before the peer closed
 * (a reset or a broken pipe ends it, no SIGPIPE). */
static size_t send_until_closed(int fd, const uint8_t *data, size_t len)
{
    size_t sent = 0;
    while (sent < len) {
        ssize_t n = send(fd, data + sent, len - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    return sent;
}

/* The 4-byte size prefix and a SaslAuthenticate v2 request header whose
 * frame claims frame_size bytes; the rest is the caller's to send. */
static void authenticate_prefix(struct raw_writer *w, int32_t corr, int32_t frame_size)
{
    raw_frame_begin_flexible(w, 36, 2, corr, "sasl-it");
    raw_patch_i32(w, 0, frame_size);
}

/* A SaslAuthenticate v2 frame of exactly frame_size bytes (size prefix
 * excluded), its token filler. */
static void authenticate_frame_of_size(struct raw_writer *w, int32_t corr, size_t frame_size)
{
    raw_frame_begin_flexible(w, 36, 2, corr, "sasl-it");
    size_t header = w->len - 4;
    /* header + uvarint(token + 1) + token + tagged fields (1 byte) */
    size_t varint = 1;
    while (frame_size - header - varint >= ((size_t)1 << (7 * varint)))
        varint++;
    size_t token = frame_size - header - varint - 1;
    uint8_t *filler = malloc(token);
    assert_non_null(filler);
    memset(filler, 'x', token);
    raw_put_compact_bytes(w, filler, token);
    free(filler);
    raw_put_uvarint(w, 0);
    raw_frame_finish(w);
    assert_int_equal(w->len - 4, frame_size);
}

/* Waits for the broker's log line about peer's frame of size bytes. */
static void expect_refusal_logged(struct sasl_it *t, const char *peer, long long size)
{
    char needle[160];
    snprintf(needle, sizeof needle, "from %s on SASL_PLAINTEXT: frame of %lld bytes before SASL authentication", peer,
             size);
    broker_wait_log(&t->broker, needle, 10000);
}

/* The refusal of the frame of size bytes is one failed authentication in
 * the audit log, as principal, with mechanism ("" before any handshake). */
static void expect_refusal_audited(struct sasl_it *t, const char *principal, long long size, const char *mech)
{
    char reason[160];
    snprintf(reason, sizeof reason, "frame of %lld bytes before SASL authentication exceeds", size);
    sasl_it_expect_audited(t, principal, false, reason, mech);
}

/* A whole SCRAM login and a Metadata on a connection of its own. */
static void good_client_works(struct sasl_it *t)
{
    struct scram_wire_conn c = scram_wire_connect(t);
    char mechanisms[200];
    struct scram_wire_answer a;
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA256, "hana", "hana-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(scram_wire_metadata(&c), 0);
    close(c.fd);
}

static void test_huge_unauthenticated_frame_closed_unread(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    sasl_it_start(&t, "0");
    sasl_it_create_user(&t, "hana", SHA256, "hana-secret");
    good_client_works(&t); /* the broker has served SASL once before measuring */
    pid_t pid = broker_pid(&t.broker);
    long rss_before = proc_status_kib(pid, "VmRSS"), hwm_before = proc_status_kib(pid, "VmHWM");
    assert_true(rss_before > 0 && hwm_before > 0);

    struct scram_wire_conn c = scram_wire_connect(&t);
    char mechanisms[200], peer[64];
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    local_peer(c.fd, peer, sizeof peer);
    struct timeval send_timeout = {10, 0};
    assert_int_equal(setsockopt(c.fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout), 0);
    struct raw_writer w;
    raw_writer_init(&w);
    authenticate_prefix(&w, ++c.corr, HUGE_FRAME);
    size_t sent = send_until_closed(c.fd, w.data, w.len);
    raw_writer_free(&w);

    /* Trickle a little, let another client log in meanwhile, then push. */
    uint8_t *filler = malloc(HUGE_SENT);
    assert_non_null(filler);
    memset(filler, 'x', HUGE_SENT);
    sent += send_until_closed(c.fd, filler, 100);
    good_client_works(&t);
    sent += send_until_closed(c.fd, filler, HUGE_SENT);
    free(filler);
    long rss_after_send = proc_status_kib(pid, "VmRSS");
    bool closed = raw_wait_closed(c.fd, CLOSE_MS);
    close(c.fd);
    long hwm_after = proc_status_kib(pid, "VmHWM");
    fprintf(
        stderr,
        "[sasl-bound] announced %d bytes, sent %zu; broker VmRSS %ld -> %ld KiB, VmHWM %ld -> %ld KiB; closed: %s\n",
        HUGE_FRAME, sent, rss_before, rss_after_send, hwm_before, hwm_after, closed ? "yes" : "no");
    if (!closed) {
        broker_print_log_tail(&t.broker, 20);
        fail_msg("the broker kept a connection announcing a %d-byte frame before authentication open", HUGE_FRAME);
    }
    if (rss_after_send - rss_before > MEMORY_SLACK_KIB || hwm_after - hwm_before > MEMORY_SLACK_KIB)
        fail_msg("the broker grew by %ld KiB RSS (%ld KiB peak) for an unauthenticated frame",
                 rss_after_send - rss_before, hwm_after - hwm_before);
    expect_refusal_logged(&t, peer, HUGE_FRAME);
    /* A failed authentication, once: not again as an exchange abandoned. */
    expect_refusal_audited(&t, "User:ANONYMOUS", HUGE_FRAME, "SCRAM-SHA-256");
    good_client_works(&t);
    usleep(500 * 1000);
    assert_int_equal(sasl_it_count_audited(t.audit_path, NULL, false, "exceeds sasl.server.max.receive.size", NULL), 1);
    assert_int_equal(sasl_it_count_audited(t.audit_path, NULL, false, "before the SASL exchange finished", NULL), 0);
    sasl_it_stop(&t);
}

static void test_bound_edges(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    sasl_it_start(&t, "0");
    sasl_it_create_user(&t, "hana", SHA256, "hana-secret");
    char mechanisms[200], peer[64];
    struct raw_writer w;

    /* At the bound: read and answered (a SCRAM first message this long fails). */
    struct scram_wire_conn c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    raw_writer_init(&w);
    authenticate_frame_of_size(&w, ++c.corr, KAFKA_BOUND);
    assert_int_equal(raw_send_all(c.fd, w.data, w.len), 0);
    raw_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv_frame(c.fd, 10000, 1 << 20, &frame, &len), 0);
    struct raw_reader r;
    raw_reader_init(&r, frame, len);
    assert_int_equal(raw_get_i32(&r), c.corr);
    raw_skip_tagged_fields(&r);
    assert_int_equal(raw_get_i16(&r), ERR_SASL_AUTHENTICATION_FAILED);
    free(frame);
    close(c.fd);

    /* One byte above: closed on the prefix, with the whole frame sent. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    local_peer(c.fd, peer, sizeof peer);
    raw_writer_init(&w);
    authenticate_frame_of_size(&w, ++c.corr, KAFKA_BOUND + 1);
    send_until_closed(c.fd, w.data, w.len);
    raw_writer_free(&w);
    assert_true(raw_wait_closed(c.fd, CLOSE_MS));
    close(c.fd);
    expect_refusal_logged(&t, peer, KAFKA_BOUND + 1);

    /* A bare token after SaslHandshake v0 is bound the same way. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake_v(&c, 0, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    local_peer(c.fd, peer, sizeof peer);
    uint8_t prefix[4] = {0, 0x08, 0, 0x01}; /* 524289 */
    assert_int_equal(raw_send_all(c.fd, prefix, 4), 0);
    assert_true(raw_wait_closed(c.fd, CLOSE_MS));
    close(c.fd);
    expect_refusal_logged(&t, peer, KAFKA_BOUND + 1);

    /* So is the first request, before any handshake (an ApiVersions). */
    c = scram_wire_connect(&t);
    local_peer(c.fd, peer, sizeof peer);
    raw_writer_init(&w);
    raw_frame_begin(&w, 18, 0, 1, "sasl-it");
    raw_patch_i32(&w, 0, 1 << 20);
    assert_int_equal(raw_send_all(c.fd, w.data, w.len), 0);
    raw_writer_free(&w);
    assert_true(raw_wait_closed(c.fd, CLOSE_MS));
    close(c.fd);
    expect_refusal_logged(&t, peer, 1 << 20);
    expect_refusal_audited(&t, "User:ANONYMOUS", 1 << 20, "");

    /* Half way through an exchange: audited once, as the user it named. */
    c = scram_wire_connect(&t);
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    struct scram_wire_answer a;
    assert_int_equal(scram_wire_authenticate(&c, "n,,n=hana,r=abc", 15, &a), 0);
    assert_int_equal(a.error, 0);
    local_peer(c.fd, peer, sizeof peer);
    assert_int_equal(raw_send_all(c.fd, prefix, 4), 0);
    assert_true(raw_wait_closed(c.fd, CLOSE_MS));
    close(c.fd);
    expect_refusal_logged(&t, peer, KAFKA_BOUND + 1);
    expect_refusal_audited(&t, "User:hana", KAFKA_BOUND + 1, "SCRAM-SHA-256");

    good_client_works(&t);
    /* Every refusal once, none of them again as an exchange abandoned. */
    usleep(500 * 1000);
    assert_int_equal(sasl_it_count_audited(t.audit_path, "User:ANONYMOUS", false, "exceeds", "SCRAM-SHA-256"), 2);
    assert_int_equal(sasl_it_count_audited(t.audit_path, "User:ANONYMOUS", false, "exceeds", ""), 1);
    assert_int_equal(sasl_it_count_audited(t.audit_path, "User:hana", false, "exceeds", "SCRAM-SHA-256"), 1);
    assert_int_equal(sasl_it_count_audited(t.audit_path, NULL, false, "before the SASL exchange finished", NULL), 0);
    sasl_it_stop(&t);
}

/* ApiVersions v0 whose client id makes the frame client_id_len + 10 bytes;
 * returns 0 answered, 1 closed. */
static int api_versions_with_client_id(int fd, int32_t corr, size_t client_id_len)
{
    char *client_id = malloc(client_id_len + 1);
    assert_non_null(client_id);
    memset(client_id, 'c', client_id_len);
    client_id[client_id_len] = '\0';
    struct raw_writer w;
    raw_writer_init(&w);
    raw_frame_begin(&w, 18, 0, corr, client_id);
    raw_frame_finish(&w);
    free(client_id);
    send_until_closed(fd, w.data, w.len);
    raw_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    int rc = raw_recv_frame(fd, 10000, 1 << 20, &frame, &len);
    if (rc == 0) {
        struct raw_reader r;
        raw_reader_init(&r, frame, len);
        assert_int_equal(raw_get_i32(&r), corr);
        assert_int_equal(raw_get_i16(&r), 0);
        free(frame);
    }
    assert_true(rc == 0 || rc == 1);
    return rc;
}

/* A configured bound is the one applied, and only until the connection
 * authenticated, and again while it re-authenticates. */
static void test_configured_bound_until_authenticated(void **state)
{
    (void)state;
    struct sasl_it t = {0};
    const char *const extra[] = {"sasl.server.max.receive.size=1000", NULL};
    sasl_it_start_with(&t, "0", extra);
    sasl_it_create_user(&t, "hana", SHA256, "hana-secret");

    /* A SCRAM login fits easily. */
    good_client_works(&t);

    /* Before authenticating: 1000 bytes answered, 1001 closed. */
    struct scram_wire_conn c = scram_wire_connect(&t);
    assert_int_equal(api_versions_with_client_id(c.fd, 1, 990), 0);
    assert_int_equal(api_versions_with_client_id(c.fd, 2, 991), 1);
    close(c.fd);

    /* After: far larger frames are served. */
    c = scram_wire_connect(&t);
    char mechanisms[200];
    struct scram_wire_answer a;
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA256, "hana", "hana-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(api_versions_with_client_id(c.fd, ++c.corr, 20000), 0);

    /* KIP-368 re-authentication is bound again until it succeeds... */
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    scram_wire_login(&c, SHA256, "hana", "hana-secret", &a);
    assert_int_equal(a.error, 0);
    assert_int_equal(api_versions_with_client_id(c.fd, ++c.corr, 20000), 0);
    /* ...and a token above the bound during it closes the connection
     * unanswered (read, it would be answered as a failed login). */
    assert_int_equal(scram_wire_handshake(&c, "SCRAM-SHA-256", mechanisms, sizeof mechanisms), 0);
    char peer[64];
    local_peer(c.fd, peer, sizeof peer);
    struct raw_writer w;
    raw_writer_init(&w);
    authenticate_frame_of_size(&w, ++c.corr, 1001);
    send_until_closed(c.fd, w.data, w.len);
    raw_writer_free(&w);
    uint8_t *frame = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv_frame(c.fd, CLOSE_MS, 1 << 20, &frame, &len), 1);
    close(c.fd);
    expect_refusal_logged(&t, peer, 1001);
    assert_true(broker_log_contains(&t.broker, "exceeds sasl.server.max.receive.size=1000"));
    /* The re-authenticating session's user failed to authenticate again;
     * the ApiVersions above the bound before any handshake, as nobody. */
    expect_refusal_audited(&t, "User:hana", 1001, "SCRAM-SHA-256");
    expect_refusal_audited(&t, "User:ANONYMOUS", 1001, "");
    usleep(500 * 1000);
    assert_int_equal(
        sasl_it_count_audited(t.audit_path, NULL, false, "exceeds sasl.server.max.receive.size=1000", NULL), 2);
    sasl_it_stop(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_huge_unauthenticated_frame_closed_unread),
        cmocka_unit_test(test_bound_edges),
        cmocka_unit_test(test_configured_bound_until_authenticated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
