/* The storage-s3 plugin against a real S3-compatible server: s3rver (pinned
 * in tests/clients/s3rver) started on loopback by serve.js, which checks
 * every request's SigV4 signature. The plugin is dlopen()ed and driven
 * through its remote-storage table, as the broker's loader does.
 * Skips (77) when node or s3rver is not installed (make client-deps). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "s3rver_support.h"
#include "test_host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUCKET S3RVER_BUCKET
#define KEY_ID S3RVER_KEY_ID
#define SECRET S3RVER_SECRET
#define MIB (1024 * 1024)

/* Owned by the test's main thread. */
static struct s3rver server;
static struct test_host s3_host;
static char work_dir[64];

/* The plugin, (re)started with the common settings plus extra key=value pairs. */
static int plugin_start(char *err, size_t errlen, const char *const *extra)
{
    char endpoint[64];
    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", server.port);
    test_host_fini(&s3_host);
    test_host_clear_config(&s3_host);
    test_host_set(&s3_host, "bucket", BUCKET);
    test_host_set(&s3_host, "endpoint", endpoint);
    test_host_set(&s3_host, "path.style.access", "true");
    test_host_set(&s3_host, "access.key.id", KEY_ID);
    test_host_set(&s3_host, "secret.access.key", SECRET);
    test_host_set(&s3_host, "key.prefix", "tiered/");
    test_host_set(&s3_host, "multipart.part.size", "5MiB");
    test_host_set(&s3_host, "connect.timeout.ms", "1000");
    test_host_set(&s3_host, "request.timeout.ms", "2000");
    test_host_set(&s3_host, "retry.backoff.ms", "50");
    test_host_set(&s3_host, "retry.backoff.max.ms", "500");
    test_host_set(&s3_host, "retry.total.timeout.ms", "3000");
    for (size_t i = 0; extra && extra[i]; i += 2)
        test_host_set(&s3_host, extra[i], extra[i + 1]);
    return test_host_init(&s3_host, err, errlen);
}

static void plugin_start_ok(const char *const *extra)
{
    char err[512];
    if (plugin_start(err, sizeof(err), extra) != CAIRN_OK)
        fail_msg("storage-s3 init failed: %s", err);
}

static const struct cairn_remote_storage_vtable *rs(void)
{
    return s3_host.descriptor->remote_storage;
}

/* A segment on local disk: its files, their bytes, and the metadata the
 * broker would pass. */
struct local_segment {
    char paths[5][128]; /* log, offset index, time index, producer snapshot, txn index */
    uint8_t *bytes[5];
    size_t sizes[5];
    uint8_t epoch_checkpoint[32];
    size_t epoch_len;
    struct cairn_remote_segment meta;
    struct cairn_remote_segment_files files;
    uint8_t custom[256];
};

static void fill_random(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
}

static void write_file(const char *path, const uint8_t *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static const char *const file_names[5] = {"log", "index", "timeindex", "snapshot", "txnindex"};

/* with_txn: also a transaction index (the ABI passes NULL when there is none). */
static void segment_make(struct local_segment *seg, const char *name, size_t log_size, bool with_txn, uint64_t seed)
{
    memset(seg, 0, sizeof(*seg));
    size_t sizes[5] = {log_size, 4096, 6000, 123, with_txn ? 40 : 0};
    for (int i = 0; i < 5; i++) {
        if (i == 4 && !with_txn)
            continue;
        snprintf(seg->paths[i], sizeof(seg->paths[i]), "%s/%s.%s", work_dir, name, file_names[i]);
        seg->sizes[i] = sizes[i];
        seg->bytes[i] = malloc(sizes[i] ? sizes[i] : 1);
        assert_non_null(seg->bytes[i]);
        fill_random(seg->bytes[i], sizes[i], seed + (uint64_t)i);
        write_file(seg->paths[i], seg->bytes[i], sizes[i]);
    }
    seg->epoch_len = (size_t)snprintf((char *)seg->epoch_checkpoint, sizeof(seg->epoch_checkpoint), "0\n1\n7 1000\n");
    seg->meta = (struct cairn_remote_segment){
        .struct_size = sizeof(seg->meta),
        .topic = "orders",
        .partition = 3,
        .start_offset = 1000,
        .end_offset = 1999,
        .segment_size_bytes = (int64_t)log_size,
    };
    fill_random(seg->meta.topic_id, 16, seed ^ 0xabc);
    fill_random(seg->meta.segment_id, 16, seed ^ 0xdef);
    seg->files = (struct cairn_remote_segment_files){
        .struct_size = sizeof(seg->files),
        .log_path = seg->paths[0],
        .offset_index_path = seg->paths[1],
        .time_index_path = seg->paths[2],
        .producer_snapshot_path = seg->paths[3],
        .txn_index_path = with_txn ? seg->paths[4] : NULL,
        .leader_epoch_checkpoint = seg->epoch_checkpoint,
        .leader_epoch_checkpoint_len = seg->epoch_len,
    };
}

static void segment_free(struct local_segment *seg)
{
    for (int i = 0; i < 5; i++) {
        free(seg->bytes[i]);
        if (seg->paths[i][0])
            unlink(seg->paths[i]);
    }
}

static int segment_copy(struct local_segment *seg, char *err, size_t errlen)
{
    size_t custom_len = sizeof(seg->custom);
    int rc = rs()->copy_segment(s3_host.instance, &seg->meta, &seg->files, seg->custom, &custom_len, err, errlen);
    seg->meta.custom_metadata = seg->custom;
    seg->meta.custom_metadata_len = custom_len;
    return rc;
}

struct collected {
    uint8_t *data;
    size_t len;
    size_t cap;
    int refuse_after; /* > 0: refuse the write after this many bytes */
};

static int collect_write(void *ctx, const uint8_t *data, size_t len)
{
    struct collected *c = ctx;
    if (c->refuse_after > 0 && c->len + len > (size_t)c->refuse_after)
        return CAIRN_ERROR;
    if (c->len + len > c->cap) {
        size_t cap = (c->len + len) * 2;
        uint8_t *grown = realloc(c->data, cap);
        if (!grown)
            return CAIRN_ERROR;
        c->data = grown;
        c->cap = cap;
    }
    memcpy(c->data + c->len, data, len);
    c->len += len;
    return CAIRN_OK;
}

static int fetch_range(struct local_segment *seg, int64_t start, int64_t end, struct collected *out, char *err,
                       size_t errlen)
{
    struct cairn_byte_sink sink = {sizeof(sink), out, collect_write};
    return rs()->fetch_segment(s3_host.instance, &seg->meta, start, end, &sink, err, errlen);
}

static void expect_range(struct local_segment *seg, int64_t start, int64_t end)
{
    struct collected got = {0};
    char err[512] = "";
    int rc = fetch_range(seg, start, end, &got, err, sizeof(err));
    if (rc != CAIRN_OK)
        fail_msg("fetch_segment [%lld, %lld) failed (%d): %s", (long long)start, (long long)end, rc, err);
    size_t want_end = end < 0 ? seg->sizes[0] : (size_t)end;
    assert_int_equal(got.len, want_end - (size_t)start);
    assert_memory_equal(got.data, seg->bytes[0] + start, got.len);
    free(got.data);
}

static void expect_index(struct local_segment *seg, int32_t type, const uint8_t *want, size_t want_len)
{
    struct collected got = {0};
    struct cairn_byte_sink sink = {sizeof(sink), &got, collect_write};
    char err[512] = "";
    int rc = rs()->fetch_index(s3_host.instance, &seg->meta, type, &sink, err, sizeof(err));
    if (rc != CAIRN_OK)
        fail_msg("fetch_index %d failed (%d): %s", (int)type, rc, err);
    assert_int_equal(got.len, want_len);
    assert_memory_equal(got.data, want, want_len);
    free(got.data);
}

static int fetch_index_rc(struct local_segment *seg, int32_t type)
{
    struct collected got = {0};
    struct cairn_byte_sink sink = {sizeof(sink), &got, collect_write};
    char err[512];
    int rc = rs()->fetch_index(s3_host.instance, &seg->meta, type, &sink, err, sizeof(err));
    free(got.data);
    return rc;
}

static void copy_ok(struct local_segment *seg)
{
    char err[512] = "";
    int rc = segment_copy(seg, err, sizeof(err));
    if (rc != CAIRN_OK)
        fail_msg("copy_segment failed (%d): %s", rc, err);
}

static void delete_ok(struct local_segment *seg)
{
    char err[512] = "";
    int rc = rs()->delete_segment(s3_host.instance, &seg->meta, err, sizeof(err));
    if (rc != CAIRN_OK)
        fail_msg("delete_segment failed (%d): %s", rc, err);
}

/* Every file of a segment whose log needs a three-part multipart upload
 * comes back byte-identical, whole and by range; delete removes it all. */
static void test_round_trip_multipart(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    struct local_segment seg;
    segment_make(&seg, "big", 11 * MIB + 4321, true, 1);
    copy_ok(&seg);
    assert_true(seg.meta.custom_metadata_len >= 2);
    assert_true(test_host_metric(&s3_host, "uploaded_bytes_total") >= (int64_t)seg.sizes[0]);

    expect_range(&seg, 0, -1);
    expect_range(&seg, 5 * MIB - 10, 5 * MIB + 10); /* across the first part boundary */
    expect_range(&seg, 1, 2);
    expect_range(&seg, (int64_t)seg.sizes[0] - 7, -1);
    expect_range(&seg, 100, 100); /* empty */
    expect_index(&seg, CAIRN_REMOTE_INDEX_OFFSET, seg.bytes[1], seg.sizes[1]);
    expect_index(&seg, CAIRN_REMOTE_INDEX_TIMESTAMP, seg.bytes[2], seg.sizes[2]);
    expect_index(&seg, CAIRN_REMOTE_INDEX_PRODUCER_SNAPSHOT, seg.bytes[3], seg.sizes[3]);
    expect_index(&seg, CAIRN_REMOTE_INDEX_TRANSACTION, seg.bytes[4], seg.sizes[4]);
    expect_index(&seg, CAIRN_REMOTE_INDEX_LEADER_EPOCH, seg.epoch_checkpoint, seg.epoch_len);
    assert_int_equal(fetch_index_rc(&seg, 99), CAIRN_NOT_FOUND);

    struct collected none = {0};
    char err[512];
    assert_int_equal(fetch_range(&seg, 10, 5, &none, err, sizeof(err)), CAIRN_INVALID);

    delete_ok(&seg);
    assert_int_equal(fetch_range(&seg, 0, -1, &none, err, sizeof(err)), CAIRN_NOT_FOUND);
    assert_int_equal(fetch_index_rc(&seg, CAIRN_REMOTE_INDEX_OFFSET), CAIRN_NOT_FOUND);
    delete_ok(&seg); /* deleting a deleted segment is fine */
    free(none.data);
    segment_free(&seg);
}

/* A 503 on one part is retried and the upload completes intact. */
static void test_multipart_part_retried(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    struct local_segment seg;
    segment_make(&seg, "retried", 10 * MIB + 1, false, 9);
    char body[512];
    s3rver_control(&server, "fail-part?part=2&status=503", body);
    int64_t injected = s3rver_stat(&server, "injected"), retries = test_host_metric(&s3_host, "retries_total");
    copy_ok(&seg);
    assert_int_equal(s3rver_stat(&server, "injected"), injected + 1);
    assert_true(test_host_metric(&s3_host, "retries_total") > retries);
    expect_range(&seg, 0, -1);
    delete_ok(&seg);
    segment_free(&seg);
}

/* A part refused for good: the upload is aborted (AbortMultipartUpload is
 * sent; s3rver 3.7.1 does not implement it and answers 405, which the
 * plugin logs), the copy fails, and nothing of the segment is left to fetch. */
static void test_multipart_aborted(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    struct local_segment seg;
    segment_make(&seg, "aborted", 10 * MIB + 1, false, 10);
    char body[512], err[512] = "";
    s3rver_control(&server, "fail-part?part=2&status=400", body);
    int64_t aborts = s3rver_stat(&server, "aborts"), completes = s3rver_stat(&server, "completes");
    assert_int_equal(segment_copy(&seg, err, sizeof(err)), CAIRN_ERROR);
    assert_non_null(strstr(err, "InvalidPart"));
    assert_int_equal(s3rver_stat(&server, "aborts"), aborts + 1);
    assert_int_equal(s3rver_stat(&server, "completes"), completes);
    struct collected none = {0};
    assert_int_equal(fetch_range(&seg, 0, -1, &none, err, sizeof(err)), CAIRN_NOT_FOUND);
    assert_int_equal(fetch_index_rc(&seg, CAIRN_REMOTE_INDEX_OFFSET), CAIRN_NOT_FOUND);
    free(none.data);
    segment_free(&seg);
}

/* A GET whose connection drops after 100000 bytes, or whose body ends
 * there cleanly, is resumed from the first missing byte (a Range past what
 * the sink got): the bytes come out whole, none twice. */
static void test_broken_fetch_resumes(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    struct local_segment seg;
    segment_make(&seg, "cut", 3 * MIB, false, 13);
    copy_ok(&seg);
    char body[512];
    const char *const modes[] = {"cut-get?after=100000&mode=drop", "cut-get?after=100000&mode=short"};
    for (int i = 0; i < 2; i++) {
        int64_t cuts = s3rver_stat(&server, "cuts"), retries = test_host_metric(&s3_host, "retries_total");
        s3rver_control(&server, modes[i], body);
        expect_range(&seg, 1000, -1);
        assert_int_equal(s3rver_stat(&server, "cuts"), cuts + 1);
        assert_true(test_host_metric(&s3_host, "retries_total") > retries);
    }
    s3rver_control(&server, "cut-get?after=0", body);
    expect_range(&seg, 0, 10);
    delete_ok(&seg);
    segment_free(&seg);
}

/* Calls from one thread share its connection: five fetches open at most
 * one new connection (the other counted one is the stats request's own). */
static void test_connection_reuse(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    struct local_segment seg;
    segment_make(&seg, "reuse", 50000, false, 12);
    copy_ok(&seg);
    int64_t before = s3rver_stat(&server, "connections");
    for (int i = 0; i < 5; i++)
        expect_range(&seg, i * 100, i * 100 + 5000);
    assert_true(s3rver_stat(&server, "connections") - before <= 2);
    delete_ok(&seg);
    segment_free(&seg);
}

struct concurrent_job {
    struct local_segment seg;
    int rc;
    char err[512];
};

static void *concurrent_copy_fetch(void *arg)
{
    struct concurrent_job *job = arg;
    job->rc = segment_copy(&job->seg, job->err, sizeof(job->err));
    struct collected got = {0};
    if (job->rc == CAIRN_OK)
        job->rc = fetch_range(&job->seg, 0, -1, &got, job->err, sizeof(job->err));
    if (job->rc == CAIRN_OK && (got.len != job->seg.sizes[0] || memcmp(got.data, job->seg.bytes[0], got.len) != 0)) {
        snprintf(job->err, sizeof(job->err), "fetched bytes differ");
        job->rc = CAIRN_ERROR;
    }
    free(got.data);
    return NULL;
}

/* Calls for different segments run concurrently, each thread on its own
 * handle (the ABI's blocking-work threads do this). */
static void test_concurrent_segments(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    enum { JOBS = 4 };
    static struct concurrent_job jobs[JOBS];
    pthread_t threads[JOBS];
    for (int i = 0; i < JOBS; i++) {
        char name[16];
        snprintf(name, sizeof(name), "conc%d", i);
        segment_make(&jobs[i].seg, name, 600000 + (size_t)i * 1000, i % 2 == 0, 20 + (uint64_t)i);
        assert_int_equal(pthread_create(&threads[i], NULL, concurrent_copy_fetch, &jobs[i]), 0);
    }
    for (int i = 0; i < JOBS; i++) {
        pthread_join(threads[i], NULL);
        if (jobs[i].rc != CAIRN_OK)
            fail_msg("job %d failed (%d): %s", i, jobs[i].rc, jobs[i].err);
    }
    for (int i = 0; i < JOBS; i++) {
        delete_ok(&jobs[i].seg);
        segment_free(&jobs[i].seg);
    }
}

/* No transaction index: fetch_index says NOT_FOUND without guessing. A
 * segment with no custom metadata (another writer's) is still found under
 * the configured prefix. */
static void test_no_txn_index_and_bare_metadata(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    struct local_segment seg;
    segment_make(&seg, "small", 70000, false, 2);
    copy_ok(&seg);
    assert_int_equal(fetch_index_rc(&seg, CAIRN_REMOTE_INDEX_TRANSACTION), CAIRN_NOT_FOUND);
    seg.meta.custom_metadata = NULL;
    seg.meta.custom_metadata_len = 0;
    expect_range(&seg, 0, -1);
    assert_int_equal(fetch_index_rc(&seg, CAIRN_REMOTE_INDEX_TRANSACTION), CAIRN_NOT_FOUND);
    delete_ok(&seg);
    segment_free(&seg);
}

/* An empty log reads back as empty (S3 answers "bytes=0-" on an empty
 * object with 416, so that read must go without a Range). */
static void test_empty_log(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    struct local_segment seg;
    segment_make(&seg, "empty", 0, false, 11);
    copy_ok(&seg);
    expect_range(&seg, 0, -1);
    delete_ok(&seg);
    segment_free(&seg);
}

/* A sink that refuses ends the fetch with its error, without retries. */
static void test_sink_refusal(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    struct local_segment seg;
    segment_make(&seg, "refuse", 300000, false, 3);
    copy_ok(&seg);
    int64_t retries = test_host_metric(&s3_host, "retries_total");
    struct collected got = {.refuse_after = 1000};
    char err[512];
    assert_int_equal(fetch_range(&seg, 0, -1, &got, err, sizeof(err)), CAIRN_ERROR);
    assert_int_equal(test_host_metric(&s3_host, "retries_total"), retries);
    free(got.data);
    delete_ok(&seg);
    segment_free(&seg);
}

/* <bucket>.s3.localhost:<port>: curl resolves *.localhost to loopback and
 * s3rver (service endpoint "localhost") takes the bucket from the host. */
static void test_virtual_hosted_style(void **state)
{
    (void)state;
    char endpoint[64];
    snprintf(endpoint, sizeof(endpoint), "http://s3.localhost:%d", server.port);
    const char *const extra[] = {"endpoint", endpoint, "path.style.access", "false", NULL};
    plugin_start_ok(extra);
    struct local_segment seg;
    segment_make(&seg, "vhost", 100000, false, 4);
    copy_ok(&seg);
    expect_range(&seg, 0, -1);
    expect_index(&seg, CAIRN_REMOTE_INDEX_OFFSET, seg.bytes[1], seg.sizes[1]);
    delete_ok(&seg);
    segment_free(&seg);
}

/* A wrong secret is refused by the server's signature check: a clear,
 * non-retriable error naming SignatureDoesNotMatch. */
static void test_wrong_secret_fails(void **state)
{
    (void)state;
    const char *const extra[] = {"secret.access.key", "not-the-secret", NULL};
    plugin_start_ok(extra);
    struct local_segment seg;
    segment_make(&seg, "denied", 1000, false, 5);
    char err[512] = "";
    int64_t started = s3rver_mono_ms();
    assert_int_equal(segment_copy(&seg, err, sizeof(err)), CAIRN_ERROR);
    assert_true(s3rver_mono_ms() - started < 2500); /* not retried */
    assert_non_null(strstr(err, "403"));
    assert_non_null(strstr(err, "SignatureDoesNotMatch"));
    assert_true(test_host_metric(&s3_host, "errors_total") >= 1);
    segment_free(&seg);
}

static void write_text(const char *path, const char *text)
{
    write_file(path, (const uint8_t *)text, strlen(text));
}

/* No keys in the config: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else the
 * named profile of the shared credentials file; neither is an init error. */
static void test_credential_chain(void **state)
{
    (void)state;
    char file[128];
    snprintf(file, sizeof(file), "%s/credentials", work_dir);
    write_text(file, "[default]\naws_access_key_id = WRONG\naws_secret_access_key = wrong\n\n"
                     "# the tests' profile\n[cairn]\naws_access_key_id = " KEY_ID "\n"
                     "aws_secret_access_key = " SECRET "\n");
    const char *const from_file[] = {"access.key.id", "", "secret.access.key", "", "credentials.file", file,
                                     "profile", "cairn", NULL};
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    plugin_start_ok(from_file);
    assert_non_null(strstr(s3_host.last_log, "credentials from shared credentials file"));
    struct local_segment seg;
    segment_make(&seg, "creds", 5000, false, 6);
    copy_ok(&seg);
    expect_range(&seg, 0, -1);

    setenv("AWS_ACCESS_KEY_ID", KEY_ID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    const char *const from_env[] = {"access.key.id", "", "secret.access.key", "", "credentials.file",
                                    "/nonexistent", NULL};
    plugin_start_ok(from_env);
    assert_non_null(strstr(s3_host.last_log, "credentials from environment"));
    expect_range(&seg, 0, -1);

    /* Temporary credentials: the session token goes out signed. */
    setenv("AWS_SESSION_TOKEN", "session-token/abc", 1);
    plugin_start_ok(from_env);
    int64_t tokens = s3rver_stat(&server, "signedSessionTokens");
    expect_range(&seg, 0, -1);
    assert_int_equal(s3rver_stat(&server, "signedSessionTokens"), tokens + 1);
    unsetenv("AWS_SESSION_TOKEN");

    /* The file and profile named by AWS_SHARED_CREDENTIALS_FILE / AWS_PROFILE. */
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    setenv("AWS_SHARED_CREDENTIALS_FILE", file, 1);
    setenv("AWS_PROFILE", "cairn", 1);
    const char *const from_env_file[] = {"access.key.id", "", "secret.access.key", "", NULL};
    plugin_start_ok(from_env_file);
    assert_non_null(strstr(s3_host.last_log, "credentials from shared credentials file"));
    expect_range(&seg, 0, -1);
    unsetenv("AWS_PROFILE"); /* [default] holds the wrong keys: refused */
    plugin_start_ok(from_env_file);
    struct collected got = {0};
    char denied[512] = "";
    assert_int_equal(fetch_range(&seg, 0, -1, &got, denied, sizeof(denied)), CAIRN_ERROR);
    assert_non_null(strstr(denied, "403"));
    free(got.data);
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    plugin_start_ok(NULL);
    delete_ok(&seg);

    char err[512] = "";
    assert_int_not_equal(plugin_start(err, sizeof(err), from_env), CAIRN_OK);
    assert_non_null(strstr(err, "no credentials"));
    segment_free(&seg);
}

/* The server killed: a fetch gives up as RETRIABLE within the retry budget
 * (3 s here); once the server is back on the same port and data directory,
 * the next call succeeds. */
static void test_server_down_then_back(void **state)
{
    (void)state;
    plugin_start_ok(NULL);
    struct local_segment seg;
    segment_make(&seg, "outage", 200000, false, 7);
    copy_ok(&seg);
    expect_range(&seg, 0, -1); /* the connection is open and reused */

    s3rver_stop(&server, SIGKILL);
    struct collected got = {0};
    char err[512] = "";
    int64_t started = s3rver_mono_ms();
    int rc = fetch_range(&seg, 0, -1, &got, err, sizeof(err));
    int64_t took = s3rver_mono_ms() - started;
    assert_int_equal(rc, CAIRN_RETRIABLE);
    assert_non_null(strstr(err, "gave up after"));
    assert_true(took < 3000 + 2500);
    assert_true(test_host_metric(&s3_host, "retries_total") >= 1);
    assert_int_equal(got.len, 0);
    free(got.data);

    if (!s3rver_start(&server, server.port))
        fail_msg("s3rver did not restart on port %d", server.port);
    expect_range(&seg, 0, -1);
    delete_ok(&seg);
    segment_free(&seg);
}

/* A server that accepts connections and never answers: each attempt ends
 * at request.timeout.ms, and the call within the retry budget. */
static void test_stalled_server_times_out(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
    char endpoint[64];
    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", ntohs(addr.sin_port));
    const char *const extra[] = {"endpoint", endpoint, "request.timeout.ms", "1000", NULL};
    plugin_start_ok(extra);
    struct local_segment seg;
    segment_make(&seg, "stalled", 1000, false, 8);
    char err[512] = "";
    int64_t started = s3rver_mono_ms();
    int rc = segment_copy(&seg, err, sizeof(err));
    int64_t took = s3rver_mono_ms() - started;
    assert_int_equal(rc, CAIRN_RETRIABLE);
    assert_non_null(strstr(err, "gave up after"));
    assert_true(took >= 1000);
    if (took >= 3000 + 1000 + 2500)
        fail_msg("took %lld ms: %s", (long long)took, err);
    close(fd);
    segment_free(&seg);
}

static void test_config_errors(void **state)
{
    (void)state;
    char err[512];
    /* An IP endpoint cannot carry the bucket in its host name. */
    const char *const ip_virtual[] = {"path.style.access", "false", NULL};
    plugin_start_ok(ip_virtual);
    assert_non_null(strstr(s3_host.last_log, "(path-style)"));
    const char *const small_parts[] = {"multipart.part.size", "1MiB", NULL};
    assert_int_not_equal(plugin_start(err, sizeof(err), small_parts), CAIRN_OK);
    assert_non_null(strstr(err, "multipart.part.size"));
    const char *const bad_endpoint[] = {"endpoint", "ftp://x", NULL};
    assert_int_not_equal(plugin_start(err, sizeof(err), bad_endpoint), CAIRN_OK);
    assert_non_null(strstr(err, "endpoint"));
    const char *const half_keys[] = {"secret.access.key", "", NULL};
    assert_int_not_equal(plugin_start(err, sizeof(err), half_keys), CAIRN_OK);
    assert_non_null(strstr(err, "together"));
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(work_dir, sizeof(work_dir), "/tmp/cairn-s3-test-XXXXXX");
    snprintf(server.dir, sizeof(server.dir), "/tmp/cairn-s3rver-XXXXXX");
    if (!mkdtemp(work_dir) || !mkdtemp(server.dir))
        return -1;
    if (!s3rver_start(&server, 0))
        return -1;
    test_host_load(&s3_host, "storage-s3");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    test_host_unload(&s3_host);
    s3rver_stop(&server, SIGTERM);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", work_dir, server.dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    if (!s3rver_installed()) {
        printf("node or s3rver is not installed in %s (make client-deps): SKIPPED\n", CAIRN_S3RVER_DIR);
        return 77;
    }
    if (getenv("CAIRN_TEST_FILTER")) /* e.g. CAIRN_TEST_FILTER='*stalled*' */
        cmocka_set_test_filter(getenv("CAIRN_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_multipart),
        cmocka_unit_test(test_multipart_part_retried),
        cmocka_unit_test(test_multipart_aborted),
        cmocka_unit_test(test_no_txn_index_and_bare_metadata),
        cmocka_unit_test(test_empty_log),
        cmocka_unit_test(test_broken_fetch_resumes),
        cmocka_unit_test(test_connection_reuse),
        cmocka_unit_test(test_concurrent_segments),
        cmocka_unit_test(test_sink_refusal),
        cmocka_unit_test(test_virtual_hosted_style),
        cmocka_unit_test(test_wrong_secret_fails),
        cmocka_unit_test(test_credential_chain),
        cmocka_unit_test(test_stalled_server_times_out),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_server_down_then_back),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
