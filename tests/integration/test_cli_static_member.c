/* `cairn consume --group --group-instance-id` as a static member of a
 * consumer group (KIP-345), run as processes against a real cairnd:
 *  - test_static_restart_keeps_generation: a static member reads part of
 *    a partition and exits (committing, no LeaveGroup: the group still
 *    lists it, where a dynamic member's exit empties its group); started
 *    again with the same id (here from -X group.instance.id, a profile
 *    key) it joins at the same generation (no rebalance, as its debug=cgrp
 *    line shows) and goes on from the committed offset;
 *  - test_second_instance_fences_first: while a static member runs, a
 *    second process with the same id takes its place; the first hears
 *    FENCED_INSTANCE_ID and exits 1 saying so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_runner.h"
#include "harness.h"
#include "rk_helpers.h"

#define RECORDS 10
#define WAIT_MS 30000

static const char *const fast_groups[] = {"group.initial.rebalance.delay.ms=0", NULL};

/* A broker with topic "static": one partition holding v0..v9. */
static const char *broker_with_records(struct test_broker *b)
{
    broker_start(b, fast_groups);
    const char *bs = broker_bootstrap(b);
    rk_create_topic(bs, "static", 1, NULL);
    rd_kafka_t *p = rk_producer_new(bs, NULL);
    for (int i = 0; i < RECORDS; i++) {
        char v[16];
        snprintf(v, sizeof v, "v%d", i);
        assert_int_equal(rk_produce_blocking(p, "static", 0, NULL, 0, v, strlen(v), 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(p, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(p);
    return bs;
}

/* The generation a debug=cgrp run printed it joined at (-1: none). */
static int joined_generation(const struct run *r)
{
    const char *at = strstr(r->err, "joined generation ");
    return at ? atoi(at + strlen("joined generation ")) : -1;
}

/* `cairn group describe` of group: its state and member count. */
static int group_members(const char *bs, const char *group, char *state, size_t len)
{
    struct run r;
    RUN(&r, "group", "describe", group, "-b", bs, "--format", "json");
    expect(&r, 0, NULL, NULL);
    json_t *d = parse_json(&r);
    snprintf(state, len, "%s", json_string_value(json_object_get(d, "state")));
    int n = (int)json_array_size(json_object_get(d, "members"));
    json_decref(d);
    return n;
}

static void test_static_restart_keeps_generation(void **state)
{
    struct test_broker *b = *state;
    const char *bs = broker_with_records(b);
    char group_state[32];
    struct run r;

    /* The control: a dynamic member leaves its group at exit. */
    RUN(&r, "consume", "static", "-b", bs, "-g", "dynamic", "-c", "2");
    expect(&r, 0, "v0\nv1\n", NULL);
    assert_int_equal(group_members(bs, "dynamic", group_state, sizeof group_state), 0);

    RUN(&r, "consume", "static", "-b", bs, "-g", "fixed", "--group-instance-id", "reader-1", "-c", "4", "--format",
        "%o:%v\\n", "-X", "debug=cgrp");
    expect(&r, 0, NULL, "instance reader-1, partitions [0]");
    assert_string_equal(r.out, "0:v0\n1:v1\n2:v2\n3:v3\n");
    int generation = joined_generation(&r);
    assert_true(generation >= 1);
    /* No LeaveGroup: the member keeps its place for session.timeout.ms. */
    assert_int_equal(group_members(bs, "fixed", group_state, sizeof group_state), 1);
    assert_string_equal(group_state, "Stable");

    RUN(&r, "consume", "static", "-b", bs, "-g", "fixed", "-X", "group.instance.id=reader-1", "-c", "3", "--format",
        "%o:%v\\n", "-X", "debug=cgrp");
    expect(&r, 0, NULL, "instance reader-1, partitions [0]");
    assert_string_equal(r.out, "4:v4\n5:v5\n6:v6\n");
    if (joined_generation(&r) != generation)
        fail_msg("the restarted static member joined generation %d, not %d (a rebalance):\n%s", joined_generation(&r),
                 generation, r.err);
    assert_int_equal(group_members(bs, "fixed", group_state, sizeof group_state), 1);
    assert_string_equal(group_state, "Stable");

    RUN(&r, "consume", "static", "-b", bs, "--group-instance-id", "reader-1", "-c", "1");
    expect(&r, 2, NULL, "--group-instance-id goes with --group");
    broker_mark_passed(b);
}

/* A background `cairn consume` with stdout and stderr in files of g_home. */
struct member {
    pid_t pid;
    char out_path[600], err_path[620];
};

static void member_start(struct member *m, const char *const *args)
{
    snprintf(m->out_path, sizeof m->out_path, "%s/first.out", g_home);
    snprintf(m->err_path, sizeof m->err_path, "%s/first.err", g_home);
    const char *argv[32] = {CAIRN_CLI_PATH};
    int n = 1;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    m->pid = fork();
    assert_true(m->pid >= 0);
    if (m->pid == 0) {
        int o = open(m->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(m->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0)
            _exit(127);
        dup2(o, 1);
        dup2(e, 2);
        setenv("HOME", g_home, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
}

static void file_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
}

/* Waits for the member's exit status, killing it after WAIT_MS (-1). */
static int member_exit_code(struct member *m)
{
    int status = 0;
    pid_t got = 0;
    for (long long until = harness_now_ms() + WAIT_MS; (got = waitpid(m->pid, &status, WNOHANG)) == 0;) {
        if (harness_now_ms() > until) {
            kill(m->pid, SIGKILL);
            waitpid(m->pid, &status, 0);
            return -1;
        }
        usleep(50 * 1000);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_second_instance_fences_first(void **state)
{
    struct test_broker *b = *state;
    const char *bs = broker_with_records(b);
    struct member first;
    member_start(&first,
                 (const char *const[]){"consume", "static", "-b", bs, "-g", "fenced", "--group-instance-id", "reader-2",
                                       "-X", "heartbeat.interval.ms=300", "-X", "auto.commit.interval.ms=200", NULL});
    static char out[4096];
    for (long long until = harness_now_ms() + WAIT_MS;; usleep(50 * 1000)) {
        file_text(first.out_path, out, sizeof out);
        if (strstr(out, "v9\n"))
            break;
        if (harness_now_ms() > until)
            fail_msg("the first member read only:\n%s", out);
    }
    struct run r;
    RUN(&r, "consume", "static", "-b", bs, "-g", "fenced", "--group-instance-id", "reader-2", "-e", "-X", "debug=cgrp");
    expect(&r, 0, NULL, "instance reader-2, partitions [0]");
    int code = member_exit_code(&first);
    static char err[4096];
    file_text(first.err_path, err, sizeof err);
    if (code != 1 || !strstr(err, "FENCED_INSTANCE_ID") ||
        !strstr(err, "another process joined as group.instance.id 'reader-2'"))
        fail_msg("the fenced member exited %d, want 1 naming FENCED_INSTANCE_ID:\n%s", code, err);
    broker_mark_passed(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_static_restart_keeps_generation, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_second_instance_fences_first, cli_setup, cli_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
