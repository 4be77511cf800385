/* cairn group reset-offsets and delete-offsets against a real cairnd with
 * librdkafka consumer groups, and the shell completion script run in a
 * real bash. Committed offsets are read back with librdkafka
 * (rd_kafka_committed: OffsetFetch from another client), and a consumer
 * of the group is shown to start where a reset put it. The commands are
 * the examples of docs/cli.md ("Consumer group offsets", "Shell
 * completion"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_runner.h"
#include "harness.h"
#include "rk_helpers.h"

/* Record timestamps of "events": offset i of each partition at t0 + i s. */
static long long g_t0;

/* "events": 10 records on partition 0 and 5 on partition 1. */
static void produce_events(const char *bs)
{
    rk_create_topic(bs, "events", 2, NULL);
    g_t0 = ((long long)time(NULL) - 3600) * 1000; /* an hour ago (wall clock: record timestamps), whole seconds */
    rd_kafka_t *p = rk_producer_new(bs, NULL);
    for (int i = 0; i < 15; i++) {
        int part = i < 10 ? 0 : 1, idx = i < 10 ? i : i - 10;
        assert_int_equal(rk_produce_blocking(p, "events", part, NULL, 0, "v", 1, g_t0 + idx * 1000, NULL, NULL), 0);
    }
    rd_kafka_flush(p, 10000);
    assert_int_equal(rk_producer_stats(p)->delivered, 15);
    rk_producer_destroy(p);
}

/* A consumer of group (not yet subscribed); offsets are committed only by hand. */
static rd_kafka_t *group_consumer(const char *bs, const char *group, const char *reset)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {
        "bootstrap.servers",  bs,     "group.id", group, "auto.offset.reset", reset, "enable.auto.commit", "false",
        "session.timeout.ms", "6000", NULL};
    for (int i = 0; kv[i]; i += 2)
        assert_int_equal(rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr), RD_KAFKA_CONF_OK);
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    assert_non_null(c);
    rd_kafka_poll_set_consumer(c);
    return c;
}

/* Subscribes c to topic and waits until it holds `partitions` partitions. */
static void subscribe_assigned(rd_kafka_t *c, const char *topic, int partitions)
{
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(c, sub), 0);
    rd_kafka_topic_partition_list_destroy(sub);
    bool assigned = false;
    for (long long deadline = harness_now_ms() + 30000; !assigned && harness_now_ms() < deadline;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
        if (m)
            rd_kafka_message_destroy(m);
        rd_kafka_topic_partition_list_t *a = NULL;
        if (rd_kafka_assignment(c, &a) == 0) {
            assigned = a->cnt == partitions;
            rd_kafka_topic_partition_list_destroy(a);
        }
    }
    assert_true(assigned);
}

/* Commits p0 and p1 for events:0 and events:1 as member c. */
static void commit_events(rd_kafka_t *c, long long p0, long long p1)
{
    rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(2);
    rd_kafka_topic_partition_list_add(offs, "events", 0)->offset = p0;
    rd_kafka_topic_partition_list_add(offs, "events", 1)->offset = p1;
    assert_int_equal(rd_kafka_commit(c, offs, 0), 0);
    rd_kafka_topic_partition_list_destroy(offs);
}

/* The group's committed offset of topic:partition read with librdkafka
 * (-1: none). */
static long long committed(const char *bs, const char *group, const char *topic, int partition)
{
    rd_kafka_t *c = group_consumer(bs, group, "earliest");
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition);
    assert_int_equal(rd_kafka_committed(c, l, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(l->elems[0].err, RD_KAFKA_RESP_ERR_NO_ERROR);
    long long off = l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(c);
    return off < 0 ? -1 : off;
}

static void expect_committed(const char *bs, const char *group, long long p0, long long p1)
{
    assert_int_equal(committed(bs, group, "events", 0), p0);
    assert_int_equal(committed(bs, group, "events", 1), p1);
}

/* The new offsets of a `reset-offsets --format json` run, by partition. */
static void expect_plan(const struct run *r, long long p0, long long p1)
{
    json_t *v = parse_json(r);
    json_t *offs = json_object_get(v, "offsets");
    long long want[2] = {p0, p1};
    int seen = 0;
    size_t i;
    json_t *o;
    json_array_foreach(offs, i, o)
    {
        int part = (int)json_integer_value(json_object_get(o, "partition"));
        assert_true(part == 0 || part == 1);
        if (want[part] < -1) /* not in the plan */
            fail_msg("partition %d is in the plan: %s", part, r->out);
        assert_int_equal(json_integer_value(json_object_get(o, "new")), want[part]);
        seen++;
    }
    assert_int_equal(seen, (p0 >= -1) + (p1 >= -1));
    json_decref(v);
}

/* ms as ISO-8601 in the zone east_min minutes east of UTC ("Z" for 0). */
static void iso_time_zone(long long ms, int east_min, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000) + east_min * 60;
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[32], zone[16] = "Z";
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    if (east_min)
        snprintf(zone, sizeof(zone), "%c%02d:%02d", east_min < 0 ? '-' : '+', abs(east_min) / 60, abs(east_min) % 60);
    snprintf(buf, len, "%s.%03lld%s", base, ms % 1000, zone);
}

static void iso_time(long long ms, char *buf, size_t len)
{
    iso_time_zone(ms, 0, buf, len);
}

#define NONE (-2) /* expect_plan: the partition is not in the plan */

/* Every reset mode, first as a dry run (nothing committed), then with
 * --execute (committed as planned); a consumer of the group then starts
 * at the reset offsets. */
static void test_reset_modes(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    produce_events(bs);

    /* The group consumed and committed 4 and 2, then stopped: Empty. */
    rd_kafka_t *c = group_consumer(bs, "billing", "earliest");
    subscribe_assigned(c, "events", 2);
    commit_events(c, 4, 2);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    expect_committed(bs, "billing", 4, 2);

    char ts[32], at[48], at6[48], at_east[48], at_west[48];
    snprintf(ts, sizeof(ts), "%lld", g_t0 + 3500);
    iso_time(g_t0 + 5000, at, sizeof(at));
    iso_time_zone(g_t0 + 2000, 120, at_east, sizeof(at_east));
    iso_time_zone(g_t0 + 3000, -330, at_west, sizeof(at_west));
    iso_time(g_t0 + 6000, at6, sizeof(at6));
    struct run r;
    /* Dry runs: the plan, nothing committed. */
    RUN(&r, "group", "reset-offsets", "billing", "--topic", "events", "--to-earliest", "-b", bs);
    expect(&r, 0,
           "GROUP    TOPIC   PARTITION  CURRENT-OFFSET  NEW-OFFSET\nbilling  events  0          4               0",
           "dry run: nothing was committed");
    expect(&r, 0, "billing  events  1          2               0", NULL);
    const struct {
        const char *flag, *value;
        long long p0, p1;
    } dry[] = {
        {"--to-earliest", NULL, 0, 0},    {"--to-latest", NULL, 10, 5},     {"--to-offset", "7", 7, 5},
        {"--to-timestamp", ts, 4, 4},     {"--to-datetime", at, 5, 5},      {"--shift-by", "-3", 1, 0},
        {"--shift-by", "4", 8, 5},        {"--shift-by", "-100", 0, 0},     {"--to-offset", "0", 0, 0},
        {"--to-datetime", at_east, 2, 2}, {"--to-datetime", at_west, 3, 3},
    };
    for (size_t i = 0; i < sizeof(dry) / sizeof(dry[0]); i++) {
        if (dry[i].value)
            RUN(&r, "group", "reset-offsets", "billing", "--topic", "events", dry[i].flag, dry[i].value, "--format",
                "json", "-b", bs);
        else
            RUN(&r, "group", "reset-offsets", "billing", "--all-topics", dry[i].flag, "--dry-run", "--format", "json",
                "-b", bs);
        expect(&r, 0, "\"executed\": false", "dry run");
        expect_plan(&r, dry[i].p0, dry[i].p1);
    }
    json_t *v = parse_json(&r);
    assert_string_equal(json_string_value(json_object_get(v, "state")), "Empty");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(v, "offsets"), 0), "current")),
                     4);
    json_decref(v);
    expect_committed(bs, "billing", 4, 2);

    /* --execute: committed as planned. */
    RUN(&r, "group", "reset-offsets", "billing", "--topic", "events", "--to-latest", "--execute", "-b", bs);
    expect(&r, 0, "RESULT", NULL);
    expect(&r, 0,
           "GROUP    TOPIC   PARTITION  CURRENT-OFFSET  NEW-OFFSET  RESULT\n"
           "billing  events  0          4               10          COMMITTED\n"
           "billing  events  1          2               5           COMMITTED\n",
           NULL);
    expect_committed(bs, "billing", 10, 5);
    RUN(&r, "group", "reset-offsets", "billing", "--topic", "events:1", "--shift-by", "-3", "--format", "json", "-b",
        bs);
    expect(
        &r, 0,
        "{\n  \"group\": \"billing\",\n  \"state\": \"Empty\",\n  \"executed\": false,\n  \"offsets\": [\n    {\n"
        "      \"topic\": \"events\",\n      \"partition\": 1,\n      \"current\": 5,\n      \"new\": 2\n    }\n  ]\n}",
        "dry run");
    expect_committed(bs, "billing", 10, 5);
    RUN(&r, "group", "reset-offsets", "billing", "--all-topics", "--to-earliest", "--execute", "-b", bs);
    expect(&r, 0, "COMMITTED", NULL);
    expect_committed(bs, "billing", 0, 0);
    RUN(&r, "group", "reset-offsets", "billing", "--topic", "events", "--to-offset", "7", "--execute", "-b", bs);
    expect_committed(bs, "billing", 7, 5);
    RUN(&r, "group", "reset-offsets", "billing", "--topic", "events", "--shift-by", "-3", "--execute", "-b", bs);
    expect_committed(bs, "billing", 4, 2);
    /* One partition named: only that one moves. */
    RUN(&r, "group", "reset-offsets", "billing", "--topic", "events:1", "--to-timestamp", ts, "--execute", "--format",
        "json", "-b", bs);
    expect(&r, 0, "\"result\": \"COMMITTED\"", NULL);
    expect_plan(&r, NONE, 4);
    expect_committed(bs, "billing", 4, 4);
    RUN(&r, "group", "reset-offsets", "billing", "--all-topics", "--to-datetime", at6, "--execute", "-b", bs);
    expect(&r, 0, NULL, NULL);
    expect_committed(bs, "billing", 6, 5);
    RUN(&r, "group", "reset-offsets", "billing", "--topic", "events:0,1", "--shift-by", "-3", "--execute", "-b", bs);
    expect(&r, 0, NULL, NULL);
    expect_committed(bs, "billing", 3, 2);

    /* A consumer of the group starts there (auto.offset.reset=latest
     * would start it at the end were the commits not used). */
    c = group_consumer(bs, "billing", "latest");
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, "events", RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(c, sub), 0);
    rd_kafka_topic_partition_list_destroy(sub);
    long long first[2] = {-1, -1};
    for (long long deadline = harness_now_ms() + 30000;
         (first[0] < 0 || first[1] < 0) && harness_now_ms() < deadline;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 200);
        if (!m)
            continue;
        if (!m->err && m->partition >= 0 && m->partition < 2 && first[m->partition] < 0)
            first[m->partition] = m->offset;
        rd_kafka_message_destroy(m);
    }
    assert_int_equal(first[0], 3);
    assert_int_equal(first[1], 2);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    broker_mark_passed(b);
}

/* While a member consumes: a reset is refused naming the state, and
 * delete-offsets answers GROUP_SUBSCRIBED_TO_TOPIC for the topic it
 * consumes but deletes the others; once it left, everything goes. */
static void test_active_group(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    produce_events(bs);
    rk_create_topic(bs, "audit", 1, NULL);
    struct run r;
    /* A group nobody runs yet: its offsets made by the reset itself. */
    RUN(&r, "group", "reset-offsets", "shipping", "--topic", "audit", "--to-offset", "0", "--execute", "-b", bs);
    expect(&r, 0, "COMMITTED", NULL);
    assert_int_equal(committed(bs, "shipping", "audit", 0), 0);

    rd_kafka_t *c = group_consumer(bs, "shipping", "earliest");
    subscribe_assigned(c, "events", 2);
    commit_events(c, 1, 1);

    RUN(&r, "group", "reset-offsets", "shipping", "--topic", "events", "--to-earliest", "--execute", "-b", bs);
    expect(&r, 1, NULL,
           "NON_EMPTY_GROUP: group 'shipping' is Stable with 1 member(s): offsets can be reset only while it is "
           "Empty; stop its consumers first");
    RUN(&r, "group", "reset-offsets", "shipping", "--all-topics", "--to-latest", "-b", bs);
    expect(&r, 1, NULL, "is Stable");
    assert_null(strstr(r.out, "events"));
    expect_committed(bs, "shipping", 1, 1);

    RUN(&r, "group", "delete-offsets", "shipping", "--topic", "events", "-b", bs);
    expect(&r, 1,
           "TOPIC   PARTITION  RESULT\nevents  0          GROUP_SUBSCRIBED_TO_TOPIC\n"
           "events  1          GROUP_SUBSCRIBED_TO_TOPIC\n",
           "cairn: 2 of 2 offset(s) of group 'shipping' were not deleted (RESULT names why)");
    expect_committed(bs, "shipping", 1, 1);
    RUN(&r, "group", "delete-offsets", "shipping", "--topic", "audit", "-b", bs);
    expect(&r, 0, "TOPIC  PARTITION  RESULT\naudit  0          DELETED\n", NULL);
    assert_int_equal(committed(bs, "shipping", "audit", 0), -1);

    RUN(&r, "group", "delete", "shipping", "-b", bs);
    expect(&r, 1, NULL, "NON_EMPTY_GROUP: cannot delete group 'shipping'; stop its consumers first");

    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    /* Left the group: Empty, so the topic's offsets can go. */
    RUN(&r, "group", "delete-offsets", "shipping", "--topic", "events:0", "--format", "json", "-b", bs);
    expect(&r, 0, NULL, NULL);
    json_t *v = parse_json(&r);
    assert_int_equal(json_array_size(v), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "result")), "DELETED");
    json_decref(v);
    expect_committed(bs, "shipping", -1, 1);
    RUN(&r, "group", "reset-offsets", "shipping", "--all-topics", "--to-earliest", "--execute", "-b", bs);
    expect(&r, 0, "events  1          1               0", NULL);
    expect_committed(bs, "shipping", -1, 0);
    /* An Empty group can be deleted, its offsets with it. */
    RUN(&r, "group", "delete", "shipping", "-b", bs);
    expect(&r, 0, "deleted group 'shipping'", NULL);
    expect_committed(bs, "shipping", -1, -1);
    RUN(&r, "group", "delete", "shipping", "-b", bs);
    expect(&r, 1, NULL, "GROUP_ID_NOT_FOUND: cannot delete group 'shipping'");
    broker_mark_passed(b);
}

static void test_bad_input(void **state)
{
    struct test_broker *b = *state;
    broker_start(b, NULL);
    const char *bs = broker_bootstrap(b);
    rk_create_topic(bs, "events", 2, NULL);
    struct run r;
    RUN(&r, "group", "reset-offsets", "nobody", "--all-topics", "--to-earliest", "-b", bs);
    expect(&r, 1, NULL, "GROUP_ID_NOT_FOUND: group 'nobody' has no committed offsets");
    RUN(&r, "group", "delete-offsets", "nobody", "--topic", "events", "-b", bs);
    expect(&r, 1, NULL, "GROUP_ID_NOT_FOUND: cannot delete offsets of group 'nobody'");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events", "--to-earliest", "--to-latest", "-b", bs);
    expect(&r, 2, NULL, "wants exactly one of --to-earliest, --to-latest");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events", "-b", bs);
    expect(&r, 2, NULL, "wants exactly one of");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events", "--to-datetime", "yesterday", "-b", bs);
    expect(&r, 2, NULL, "--to-datetime wants YYYY-MM-DDTHH:mm:SS");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events", "--to-datetime", "2026-02-01T25:00:00Z", "-b", bs);
    expect(&r, 2, NULL, "--to-datetime wants");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events", "--to-offset", "-1", "-b", bs);
    expect(&r, 2, NULL, "--to-offset wants an offset");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events", "--all-topics", "--to-latest", "-b", bs);
    expect(&r, 2, NULL, "either --topic or --all-topics");
    RUN(&r, "group", "reset-offsets", "g", "--to-latest", "-b", bs);
    expect(&r, 2, NULL, "either --topic or --all-topics");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events", "--to-latest", "--execute", "--dry-run", "-b", bs);
    expect(&r, 2, NULL, "--execute and --dry-run");
    RUN(&r, "group", "reset-offsets", "--topic", "events", "--to-latest", "-b", bs);
    expect(&r, 2, NULL, "wants one group id");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "nosuch", "--to-latest", "-b", bs);
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION: topic 'nosuch' does not exist");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events:9", "--to-latest", "-b", bs);
    expect(&r, 1, NULL, "UNKNOWN_TOPIC_OR_PARTITION: topic 'events' has no partition 9");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events:x", "--to-latest", "-b", bs);
    expect(&r, 2, NULL, "--topic wants T or T:P,P...");
    RUN(&r, "group", "reset-offsets", "g", "--topic", "events", "--shift-by", "1", "-b", bs);
    expect(&r, 2, NULL, "cannot shift events:0: the group has no committed offset there");
    RUN(&r, "group", "delete-offsets", "g", "-b", bs);
    expect(&r, 2, NULL, "delete-offsets wants --topic");
    RUN(&r, "group", "delete-offsets", "g", "--topic", "events", "--execute", "-b", bs);
    expect(&r, 2, NULL, "takes only --topic");
    RUN(&r, "group", "delete", "-b", bs);
    expect(&r, 2, NULL, "group delete wants one or more group ids");
    RUN(&r, "completion", "fish");
    expect(&r, 2, NULL, "completion wants bash or zsh, got 'fish'");
    const char *const helps[][3] = {{"group", "delete", "--help"},
                                    {"group", "reset-offsets", "--help"},
                                    {"group", "delete-offsets", "--help"},
                                    {"completion", "--help", NULL},
                                    {"completion", "bash", "--help"}};
    for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
        if (helps[i][2])
            RUN(&r, helps[i][0], helps[i][1], helps[i][2]);
        else
            RUN(&r, helps[i][0], helps[i][1]);
        expect(&r, 0, "usage: cairn", NULL);
    }
    broker_mark_passed(b);
}

/* Runs a script in shell ("bash --norc --noprofile", "zsh -f") with the
 * cairn build directory first in PATH and HOME the test's own; its stdout
 * and stderr in out. Returns the shell's exit status. */
static int run_shell(const char *shell, const char *script, char *out, size_t len)
{
    char path[600], out_path[600], cmd[1400], dir[512];
    snprintf(path, sizeof(path), "%s/script.bash", g_home);
    snprintf(out_path, sizeof(out_path), "%s/script.out", g_home);
    snprintf(dir, sizeof(dir), "%s", CAIRN_CLI_PATH);
    *strrchr(dir, '/') = '\0';
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "PATH='%s':\"$PATH\"\nHOME='%s'\n%s", dir, g_home, script);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "%s '%s' > '%s' 2>&1", shell, path, out_path);
    int rc = system(cmd);
    f = fopen(out_path, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    fclose(f);
    return rc;
}

/* The bash script loads and completes; every command and subcommand that
 * `cairn --help` lists is completed (the help text and the script come
 * from the same table). */
static void test_completion(void **state)
{
    (void)state;
    static char out[OUT_MAX];
    struct run r;
    RUN(&r, "completion", "bash");
    expect(&r, 0, "complete -o default -F _cairn cairn", NULL);
    RUN(&r, "completion", "zsh");
    expect(&r, 0, "#compdef cairn", NULL);
    expect(&r, 0, "compdef _cairn cairn", NULL);

    static const char base[] = "source <(cairn completion bash) || exit 9\n"
                               "complete -p cairn || exit 8\n"
                               "comp() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _cairn;\n"
                               "         echo \"[${COMPREPLY[*]}]\"; }\n";
    char script[8192];
    snprintf(script, sizeof(script),
             "%scomp cairn gr\ncomp cairn group re\ncomp cairn group reset-offsets billing --to-e\n"
             "comp cairn topic list --format j\ncomp cairn group describe x --form\n",
             base);
    assert_int_equal(run_shell("bash --norc --noprofile", script, out, sizeof(out)), 0);
    if (!strstr(out, "complete -o default -F _cairn cairn\n[group]\n[reset-offsets]\n[--to-earliest]\n[json]\n"
                     "[--format]\n"))
        fail_msg("completion:\n%s", out);

    /* Every command of cairn --help, and its subcommands. */
    RUN(&r, "--help");
    expect(&r, 0, "commands:\n", NULL);
    char help[OUT_MAX];
    snprintf(help, sizeof(help), "%s", strstr(r.out, "commands:\n") + strlen("commands:\n"));
    *strstr(help, "\n\n") = '\0';
    size_t used = (size_t)snprintf(script, sizeof(script), "%scomp cairn ''\n", base);
    char want[4096] = "";
    char all_commands[1024] = "";
    int ncommands = 0;
    char *save = NULL;
    for (char *line = strtok_r(help, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[64], subs[512] = "";
        int n = 0;
        assert_int_equal(sscanf(line, " %63s %n", name, &n), 1);
        /* "a | b | c  (note)" -> "a b c" */
        char rest[512];
        snprintf(rest, sizeof(rest), "%s", line + n);
        char *paren = strchr(rest, '(');
        if (paren)
            *paren = '\0';
        char *save2 = NULL;
        for (char *w = strtok_r(rest, " ", &save2); w; w = strtok_r(NULL, " ", &save2))
            if (strcmp(w, "|") != 0) {
                if (*subs)
                    strcat(subs, " ");
                strcat(subs, w);
            }
        used += (size_t)snprintf(script + used, sizeof(script) - used, "comp cairn %s ''\n", name);
        strcat(want, "[");
        strcat(want, subs);
        strcat(want, "]\n");
        strcat(all_commands, name);
        strcat(all_commands, " ");
        ncommands++;
    }
    assert_true(ncommands >= 10);
    assert_non_null(strstr(all_commands, "group "));
    assert_non_null(strstr(all_commands, "completion "));
    assert_int_equal(run_shell("bash --norc --noprofile", script, out, sizeof(out)), 0);
    char want_all[sizeof want + sizeof all_commands + 16];
    snprintf(want_all, sizeof(want_all), "[%shelp]\n%s", all_commands, want);
    if (!strstr(out, want_all))
        fail_msg("want:\n%s\ngot:\n%s", want_all, out);

    /* zsh (scripts/setup-deps.sh installs it): the script loads after
     * compinit and registers _cairn; run with compadd standing in for the
     * builtin, it offers the same words. */
    if (system("command -v zsh > /dev/null 2>&1") != 0)
        fail_msg("zsh is not installed (scripts/setup-deps.sh installs it)");
    static const char zsh_script[] =
        "autoload -U compinit && compinit -u -D || exit 7\n"
        "source <(cairn completion zsh) || exit 9\n"
        "print -r -- \"registered $_comps[cairn]\"\n"
        "compadd() { if [[ $1 == -a ]]; then print -r -- \"[${(P)2}]\"; else shift; print -r -- \"[$*]\"; fi }\n"
        "_files() { print -r -- '[files]' }\n"
        "comp() { words=(\"$@\"); CURRENT=$#; _cairn }\n"
        "comp cairn gr\ncomp cairn group ''\ncomp cairn group reset-offsets g --to-e\n"
        "comp cairn topic list --format ''\ncomp cairn topic list --profile ''\n";
    assert_int_equal(run_shell("zsh -f", zsh_script, out, sizeof(out)), 0);
    char want_zsh[2048];
    snprintf(want_zsh, sizeof(want_zsh),
             "registered _cairn\n[%shelp]\n[list describe delete reset-offsets delete-offsets]\n", all_commands);
    if (!strstr(out, want_zsh) || !strstr(out, " --to-earliest --to-latest --to-offset --to-timestamp --topic ") ||
        !strstr(out, "]\n[text json]\n[files]\n"))
        fail_msg("zsh completion, want:\n%s\ngot:\n%s", want_zsh, out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reset_modes, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_active_group, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_completion, cli_setup, cli_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
