/* flush.messages / log.flush.interval.messages: an acknowledged record was
 * synced before its acknowledgement. kill -9 keeps the page cache, so it
 * cannot show this; here a preload shim (sync_journal_shim.c) records how
 * much of each segment's .log file every fsync/fdatasync covered, and after
 * kill -9 each .log file is cut back to that, as a power cut would leave
 * it. Every acknowledged record must then come back. A topic without the
 * setting is cut back too, to show the simulation bites: its records are
 * acknowledged but never synced, so they are gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORDS 200

/* The largest synced size the journal holds for path, or 0. */
static long long synced_size(const char *journal, const char *path)
{
    FILE *f = fopen(journal, "r");
    long long best = 0;
    if (!f)
        return 0;
    char line[4200];
    while (fgets(line, sizeof line, f)) {
        char *space = strrchr(line, ' ');
        if (!space)
            continue;
        *space = '\0';
        long long size = atoll(space + 1);
        if (strcmp(line, path) == 0 && size > best)
            best = size;
    }
    fclose(f);
    return best;
}

/* Cuts every .log file of the partition directory back to its synced
 * size; returns the bytes cut. */
static long long cut_to_synced(const char *journal, const char *partition_dir)
{
    DIR *d = opendir(partition_dir);
    if (!d)
        fail_msg("no partition directory %s", partition_dir);
    long long cut = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".log") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", partition_dir, e->d_name);
        char real[1024];
        if (!realpath(path, real))
            fail_msg("realpath %s", path);
        struct stat st;
        assert_int_equal(stat(real, &st), 0);
        long long keep = synced_size(journal, real);
        if (keep < st.st_size) {
            cut += st.st_size - keep;
            assert_int_equal(truncate(real, keep), 0);
        }
    }
    closedir(d);
    return cut;
}

/* Produces RECORDS records, each acknowledged (acks=all) before the next
 * is sent, so each is its own append. */
static void produce_acknowledged(const char *bootstrap, const char *topic)
{
    const char *conf[] = {"acks", "all", "linger.ms", "0", "enable.idempotence", "false", NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    for (int i = 0; i < RECORDS; i++)
        assert_int_equal(rk_produce_one_delivered(rk, topic), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(rk);
}

static void run_case(const char *const *broker_overrides, const char *const *durable_conf,
                     const char *const *unsynced_conf)
{
    struct test_broker b;
    memset(&b, 0, sizeof b);
    char journal[] = "/tmp/cairn-sync-journal-XXXXXX";
    int fd = mkstemp(journal);
    assert_true(fd >= 0);
    close(fd);
    /* Only the broker process carries the shim: the environment is set
     * for its start and taken back. A sanitizer build's runtime insists on
     * being loaded first; verify_asan_link_order=0 lets the shim go first. */
    const char *asan = getenv("ASAN_OPTIONS");
    char *asan_saved = asan ? strdup(asan) : NULL;
    char asan_options[1024];
    snprintf(asan_options, sizeof asan_options, "%s%sverify_asan_link_order=0", asan ? asan : "", asan ? ":" : "");
    setenv("ASAN_OPTIONS", asan_options, 1);
    setenv("LD_PRELOAD", SYNC_JOURNAL_SHIM, 1);
    setenv("CAIRN_SYNC_JOURNAL", journal, 1);
    broker_start(&b, broker_overrides);
    unsetenv("LD_PRELOAD");
    if (asan_saved)
        setenv("ASAN_OPTIONS", asan_saved, 1);
    else
        unsetenv("ASAN_OPTIONS");
    free(asan_saved);

    rk_create_topic(broker_bootstrap(&b), "durable", 1, durable_conf);
    rk_create_topic(broker_bootstrap(&b), "page-cache-only", 1, unsynced_conf);
    produce_acknowledged(broker_bootstrap(&b), "durable");
    produce_acknowledged(broker_bootstrap(&b), "page-cache-only");
    broker_kill9(&b);

    char dir[1100];
    snprintf(dir, sizeof dir, "%s/durable-0", b.data_dir);
    long long durable_cut = cut_to_synced(journal, dir);
    snprintf(dir, sizeof dir, "%s/page-cache-only-0", b.data_dir);
    long long unsynced_cut = cut_to_synced(journal, dir);
    fprintf(stderr, "[flush-durability] bytes cut: durable %lld, page-cache-only %lld\n", durable_cut, unsynced_cut);
    /* The simulation bites: what was never synced is gone. */
    assert_true(unsynced_cut > 0);

    unsetenv("CAIRN_SYNC_JOURNAL");
    broker_restart(&b);
    long want[1] = {RECORDS};
    struct rk_record_set set = {0};
    long got = rk_consume_all(broker_bootstrap(&b), "durable", 1, want, 30000, &set);
    if (got != RECORDS)
        fail_msg("%ld of %d acknowledged records came back after the cut (%lld bytes cut)", got, RECORDS, durable_cut);
    rk_record_set_free(&set);
    broker_mark_passed(&b);
    broker_cleanup(&b);
    unlink(journal);
}

/* The broker-wide key. */
static void test_broker_flush_interval_messages_syncs_before_ack(void **state)
{
    (void)state;
    const char *overrides[] = {"log.flush.interval.messages=1", NULL};
    /* page-cache-only sets flush.messages back to unbounded for itself. */
    const char *unbounded[] = {"flush.messages", "9223372036854775807", NULL};
    run_case(overrides, NULL, unbounded);
}

/* The topic's key, the broker's default unbounded. */
static void test_topic_flush_messages_syncs_before_ack(void **state)
{
    (void)state;
    const char *topic_conf[] = {"flush.messages", "1", NULL};
    run_case(NULL, topic_conf, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topic_flush_messages_syncs_before_ack),
        cmocka_unit_test(test_broker_flush_interval_messages_syncs_before_ack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
