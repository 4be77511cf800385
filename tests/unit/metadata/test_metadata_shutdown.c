/* Shutdown of a store whose log will not commit (a quorum that lost its
 * majority, or one already stopped): a controller operation waiting for
 * its batch returns as soon as metadata_store_begin_shutdown is called,
 * instead of after its 10 s commit wait, so the server's joins of the
 * threads that run such operations do not hang the shutdown; operations
 * after it do not wait at all. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_log.h"
#include "metadata/metadata_store.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

/* A log that takes every batch and never commits one. */
struct stuck_log {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    int appended;
};

static int stuck_register(void *log, const struct metadata_log_listener *listener, char *err, size_t errlen)
{
    (void)log, (void)listener, (void)err, (void)errlen;
    return 0;
}

static int stuck_append(void *ctx, int32_t epoch, const struct metadata_log_entry *records, int32_t count,
                        int64_t *last_offset, char *err, size_t errlen)
{
    (void)epoch, (void)records, (void)err, (void)errlen;
    struct stuck_log *log = ctx;
    pthread_mutex_lock(&log->mu);
    *last_offset = (int64_t)log->appended * 100 + count - 1;
    log->appended++;
    pthread_cond_broadcast(&log->cond);
    pthread_mutex_unlock(&log->mu);
    return 0;
}

static int32_t stuck_leader_epoch(void *log)
{
    (void)log;
    return 1;
}

static int64_t stuck_end_offset(void *ctx)
{
    struct stuck_log *log = ctx;
    pthread_mutex_lock(&log->mu);
    int64_t end = (int64_t)log->appended * 100;
    pthread_mutex_unlock(&log->mu);
    return end;
}

static bool stuck_latest_snapshot(void *log, struct metadata_snapshot_id *out)
{
    (void)log, (void)out;
    return false;
}

static int stuck_create_snapshot(void *log, const struct metadata_snapshot_id *id, int64_t last_timestamp_ms,
                                 const struct metadata_log_entry *records, int32_t count, char *err, size_t errlen)
{
    (void)log, (void)id, (void)last_timestamp_ms, (void)records, (void)count;
    snprintf(err, errlen, "no snapshots here");
    return -1;
}

static const struct metadata_log_ops stuck_ops = {
    .register_listener = stuck_register,
    .append = stuck_append,
    .leader_epoch = stuck_leader_epoch,
    .end_offset = stuck_end_offset,
    .latest_snapshot = stuck_latest_snapshot,
    .create_snapshot = stuck_create_snapshot,
};

struct op {
    struct metadata_store *store;
    int16_t rc;
    char err[256];
};

static struct metadata_acl an_acl(void)
{
    struct metadata_acl acl = {
        .resource_type = 2, /* TOPIC */
        .resource_name = (char *)"orders",
        .pattern_type = 3, /* LITERAL */
        .principal = (char *)"User:alice",
        .host = (char *)"*",
        .operation = 3,       /* READ */
        .permission_type = 3, /* ALLOW */
    };
    memset(acl.id.bytes, 7, sizeof(acl.id.bytes));
    return acl;
}

static void *create_acl(void *arg)
{
    struct op *op = arg;
    struct metadata_acl acl = an_acl();
    op->rc = metadata_create_acls(op->store, &acl, 1, op->err, sizeof(op->err));
    return NULL;
}

static void test_commit_wait_ends_at_shutdown(void **state)
{
    (void)state;
    struct fixture *f = fixture_new("/tmp/cairn-mdshutdown-XXXXXX");
    assert_non_null(f);
    struct stuck_log log = {.appended = 0};
    pthread_mutex_init(&log.mu, NULL);
    pthread_cond_init(&log.cond, NULL);
    f->opts.log_ops = &stuck_ops;
    f->opts.log = &log;
    open_store(f);

    /* An operation waits for a commit that never comes. */
    struct op op = {.store = f->store, .rc = -1};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, create_acl, &op), 0);
    pthread_mutex_lock(&log.mu);
    while (log.appended == 0)
        pthread_cond_wait(&log.cond, &log.mu);
    pthread_mutex_unlock(&log.mu);

    /* Shutdown begins: it returns now, saying why (not "did not commit
     * the batch in 10 s"). */
    metadata_store_begin_shutdown(f->store);
    pthread_join(thread, NULL);
    assert_int_equal(op.rc, KAFKA_ERR_REQUEST_TIMED_OUT);
    if (!strstr(op.err, "shutting down"))
        fail_msg("unexpected error: %s", op.err);

    /* A later operation does not wait either. */
    op = (struct op){.store = f->store, .rc = -1};
    create_acl(&op);
    assert_int_equal(op.rc, KAFKA_ERR_REQUEST_TIMED_OUT);
    assert_non_null(strstr(op.err, "shutting down"));
    assert_int_equal(log.appended, 2);

    assert_int_equal(fixture_free(f), 0);
    pthread_mutex_destroy(&log.mu);
    pthread_cond_destroy(&log.cond);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_wait_ends_at_shutdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
