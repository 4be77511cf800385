/* `cairn consume --group` as a member of a consumer group, run as
 * processes against a real cairnd: two cairn members split a topic's
 * partitions and read each record once; when one exits (committing and
 * leaving) the other takes its partitions over from the committed offsets;
 * a cairn member and a librdkafka consumer share a group, each side
 * leading the assignment in turn; `cairn group describe` shows the cairn
 * members and what they were assigned. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_runner.h"
#include "harness.h"
#include "rk_helpers.h"

#define PARTS 4
#define MAX_RECORDS 1000

static const char *const fast_groups[] = {"group.initial.rebalance.delay.ms=0", NULL};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* --timeout and auto.commit.interval.ms of the members started next. */
static const char *member_timeout = "30000";
static const char *member_commit = "auto.commit.interval.ms=1000";

/* A `cairn consume --group` process, its output in a file. */
struct member {
    pid_t pid;
    char client_id[32];
    char out_path[600];
};

static void member_start(struct member *m, const char *bs, const char *topic, const char *group, const char *client_id)
{
    snprintf(m->client_id, sizeof(m->client_id), "%s", client_id);
    snprintf(m->out_path, sizeof(m->out_path), "%s/%s.out", g_home, client_id);
    char err_path[620], cid[64];
    snprintf(err_path, sizeof(err_path), "%s.err", m->out_path);
    snprintf(cid, sizeof(cid), "client.id=%s", client_id);
    m->pid = fork();
    assert_true(m->pid >= 0);
    if (m->pid == 0) {
        int o = open(m->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0)
            _exit(127);
        dup2(o, 1);
        dup2(e, 2);
        setenv("HOME", g_home, 1);
        unsetenv("CAIRN_BROKERS");
        execl(CAIRN_CLI_PATH, CAIRN_CLI_PATH, "consume", topic, "-b", bs, "-g", group, "--timeout", member_timeout,
              "--format", "%p:%o:%v\\n", "-X", cid, "-X", "heartbeat.interval.ms=300", "-X", "session.timeout.ms=10000",
              "-X", member_commit, (char *)NULL);
        _exit(127);
    }
}

/* SIGTERM (as Ctrl-C): the member commits, leaves and exits 0. */
static void member_stop(struct member *m)
{
    if (m->pid <= 0)
        return;
    kill(m->pid, SIGTERM);
    int status = 0;
    long long until = now_ms() + 30000;
    pid_t got = 0;
    while ((got = waitpid(m->pid, &status, WNOHANG)) == 0 && now_ms() < until)
        sleep_ms(50);
    if (got == 0) {
        kill(m->pid, SIGKILL);
        waitpid(m->pid, &status, 0);
    }
    m->pid = 0;
    if (got == 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char err_path[620], err[4096] = "";
        snprintf(err_path, sizeof(err_path), "%s.err", m->out_path);
        FILE *f = fopen(err_path, "r");
        if (f) {
            err[fread(err, 1, sizeof(err) - 1, f)] = '\0';
            fclose(f);
        }
        fail_msg("%s did not exit 0 on SIGTERM (status %d): %s", m->client_id, status, err);
    }
}

/* The records a member printed: "partition:offset:value" lines. */
struct seen {
    int n;
    int partition[MAX_RECORDS];
    long long offset[MAX_RECORDS];
    char value[MAX_RECORDS][16];
};

static void member_read(const struct member *m, struct seen *s)
{
    s->n = 0;
    FILE *f = fopen(m->out_path, "r");
    if (!f)
        return;
    char line[256];
    while (s->n < MAX_RECORDS && fgets(line, sizeof(line), f)) {
        if (!strchr(line, '\n'))
            break; /* a line still being written */
        if (sscanf(line, "%d:%lld:%15[^\n]", &s->partition[s->n], &s->offset[s->n], s->value[s->n]) == 3)
            s->n++;
    }
    fclose(f);
}

/* `cairn group describe GROUP --format json`; with may_be_missing, NULL
 * while the group does not exist yet. */
static json_t *describe_group(const char *bs, const char *group, bool may_be_missing)
{
    struct run r;
    RUN(&r, "group", "describe", group, "-b", bs, "--format", "json");
    if (may_be_missing && r.code == 1 && strstr(r.err, "GROUP_ID_NOT_FOUND"))
        return NULL;
    expect(&r, 0, NULL, NULL);
    return parse_json(&r);
}

static json_t *describe(const char *bs, const char *group)
{
    return describe_group(bs, group, false);
}

/* The partitions of topic the member with client_id holds (-1: not a member). */
static int assigned_count(json_t *d, const char *client_id, const char *topic)
{
    json_t *mem;
    size_t i;
    json_array_foreach(json_object_get(d, "members"), i, mem)
    {
        if (!strcmp(json_string_value(json_object_get(mem, "client_id")), client_id))
            return (int)json_array_size(json_object_get(json_object_get(mem, "assignment"), topic));
    }
    return -1;
}

/* Waits until the group is Stable with exactly the given members holding
 * want[i] partitions each; fails the test after 45 s. rk (may be NULL) is
 * polled meanwhile. */
static void wait_assignment(const char *bs, const char *group, const char *topic, const char *const *clients,
                            const int *want, int n, rd_kafka_t *rk)
{
    long long until = now_ms() + 45000;
    char last[2048] = "";
    for (;;) {
        json_t *d = describe_group(bs, group, true);
        bool ok = d && !strcmp(json_string_value(json_object_get(d, "state")), "Stable") &&
                  json_array_size(json_object_get(d, "members")) == (size_t)n;
        for (int i = 0; ok && i < n; i++)
            ok = assigned_count(d, clients[i], topic) == want[i];
        char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;
        snprintf(last, sizeof(last), "%s", text ? text : "");
        free(text);
        json_decref(d);
        if (ok)
            return;
        if (now_ms() > until)
            fail_msg("group %s never reached the expected assignment; last: %s", group, last);
        if (rk) {
            rd_kafka_message_t *msg = rd_kafka_consumer_poll(rk, 200);
            if (msg) /* nothing is produced while waiting */
                rd_kafka_message_destroy(msg);
        } else {
            sleep_ms(200);
        }
    }
}

/* Produces count records "v<first+i>" to partition (first+i) % PARTS. */
static void produce(const char *bs, const char *topic, int first, int count)
{
    rd_kafka_t *p = rk_producer_new(bs, NULL);
    for (int i = first; i < first + count; i++) {
        char v[16];
        snprintf(v, sizeof(v), "v%d", i);
        assert_int_equal(rk_produce_blocking(p, topic, i % PARTS, NULL, 0, v, strlen(v), 0, NULL, NULL),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    assert_int_equal(rd_kafka_flush(p, 20000), RD_KAFKA_RESP_ERR_NO_ERROR);
    rk_producer_destroy(p);
}

/* How many times value "v<i>" appears in the sets. */
static int times_seen(const struct seen *const *sets, int nsets, int i)
{
    char v[16];
    snprintf(v, sizeof(v), "v%d", i);
    int times = 0;
    for (int s = 0; s < nsets; s++)
        for (int j = 0; j < sets[s]->n; j++)
            times += !strcmp(sets[s]->value[j], v);
    return times;
}

/* The partitions a member printed records of, as a bit set. */
static unsigned partitions_of(const struct seen *s)
{
    unsigned bits = 0;
    for (int j = 0; j < s->n; j++)
        bits |= 1u << s->partition[j];
    return bits;
}

/* Waits until the members together printed total records. */
static void wait_total(const struct member *const *ms, struct seen *const *sets, int n, int total)
{
    long long until = now_ms() + 30000;
    for (;;) {
        int got = 0;
        for (int i = 0; i < n; i++) {
            member_read(ms[i], sets[i]);
            got += sets[i]->n;
        }
        if (got >= total)
            break;
        if (now_ms() > until)
            fail_msg("the members printed %d records, want %d", got, total);
        sleep_ms(100);
    }
    sleep_ms(1000); /* a duplicate would show up by now */
    for (int i = 0; i < n; i++)
        member_read(ms[i], sets[i]);
}

/* The partitions a member printed records "v<from>" and later of. */
static unsigned partitions_of_from(const struct seen *s, int from)
{
    unsigned bits = 0;
    for (int j = 0; j < s->n; j++)
        if (atoi(s->value[j] + 1) >= from)
            bits |= 1u << s->partition[j];
    return bits;
}

/* Waits until every "v<from>".."v<to - 1>" was printed by one of two
 * members (m1 may have exited: its file stays). */
static void wait_values(const struct member *m1, struct seen *s1, const struct member *m2, struct seen *s2, int from,
                        int to)
{
    long long until = now_ms() + 30000;
    for (;;) {
        member_read(m1, s1);
        member_read(m2, s2);
        const struct seen *sets[] = {s1, s2};
        int missing = -1;
        for (int i = from; i < to && missing < 0; i++)
            if (times_seen(sets, 2, i) == 0)
                missing = i;
        if (missing < 0)
            break;
        if (now_ms() > until)
            fail_msg("v%d was never read (records %d..%d)", missing, from, to - 1);
        sleep_ms(100);
    }
    sleep_ms(1000); /* a duplicate would show up by now */
    member_read(m1, s1);
    member_read(m2, s2);
}

static struct seen seen_a, seen_b, seen_c;

/* A broker (groups rebalancing without the initial delay) with the
 * four-partition topic "events"; returns its bootstrap address. */
static const char *broker_with_topic(struct test_broker *b)
{
    broker_start(b, fast_groups);
    const char *bs = broker_bootstrap(b);
    rk_create_topic(bs, "events", PARTS, NULL);
    return bs;
}

/* cairn-a joins group alone (all four partitions), then cairn-b: two each. */
static void start_two_members(const char *bs, const char *group, struct member *a, struct member *c)
{
    member_start(a, bs, "events", group, "cairn-a");
    wait_assignment(bs, group, "events", (const char *const[]){"cairn-a"}, (const int[]){4}, 1, NULL);
    member_start(c, bs, "events", group, "cairn-b");
    wait_assignment(bs, group, "events", (const char *const[]){"cairn-a", "cairn-b"}, (const int[]){2, 2}, 2, NULL);
}

/* Two cairn members split the four partitions two each, and every record
 * is read exactly once between them. describe shows both members with
 * their assignment; after they exit, the commits cover every record. */
static void test_two_members_split(void **state)
{
    struct test_broker *b = *state;
    const char *bs = broker_with_topic(b);
    struct member a, c;
    start_two_members(bs, "split", &a, &c);
    json_t *d = describe(bs, "split");
    assert_string_equal(json_string_value(json_object_get(d, "protocol_type")), "consumer");
    assert_string_equal(json_string_value(json_object_get(d, "protocol")), "range");
    json_decref(d);
    /* The table names each cairn member with its range: 0,1 or 2,3. */
    struct run r;
    RUN(&r, "group", "describe", "split", "-b", bs);
    expect(&r, 0, "cairn-b", NULL);
    const char *line = strstr(r.out, "cairn-a");
    assert_non_null(line);
    const char *eol = strchr(line, '\n');
    const char *range = strstr(line, "events:0,1");
    if (!range || (eol && range > eol))
        range = strstr(line, "events:2,3");
    if (!range || (eol && range > eol))
        fail_msg("cairn-a's assignment is not a range of two partitions:\n%s", r.out);

    produce(bs, "events", 0, 200);
    wait_total((const struct member *const[]){&a, &c}, (struct seen *const[]){&seen_a, &seen_b}, 2, 200);
    member_stop(&a);
    member_stop(&c);
    const struct seen *sets[] = {&seen_a, &seen_b};
    for (int i = 0; i < 200; i++)
        if (times_seen(sets, 2, i) != 1)
            fail_msg("v%d read %d times by the two members", i, times_seen(sets, 2, i));
    assert_int_equal(seen_a.n + seen_b.n, 200);
    unsigned pa = partitions_of(&seen_a), pb = partitions_of(&seen_b);
    assert_int_equal(pa & pb, 0);
    assert_int_equal(pa | pb, 0xf);
    assert_int_equal(__builtin_popcount(pa), 2);

    /* Left the group; their commits cover every record. */
    d = describe(bs, "split");
    assert_int_equal(json_array_size(json_object_get(d, "members")), 0);
    json_t *o;
    size_t i;
    long long committed = 0;
    json_array_foreach(json_object_get(d, "offsets"), i, o)
        committed += json_integer_value(json_object_get(o, "committed"));
    assert_int_equal(committed, 200);
    json_decref(d);
    broker_mark_passed(b);
}

/* A member exits: the other takes its partitions over from the offsets it
 * committed at exit, so no record is lost and, the exit being clean (commit
 * then LeaveGroup), none is read twice. A member killed without a word is
 * replaced once its session expires; its records are all read, and only
 * records of its partitions may be read twice (those after its last
 * commit). */
static void test_member_takeover(void **state)
{
    struct test_broker *b = *state;
    const char *bs = broker_with_topic(b);
    struct member a, c;
    /* Commits at exit and at rebalances only: no periodic commit hides a
     * missing one. */
    member_commit = "auto.commit.interval.ms=600000";
    start_two_members(bs, "takeover", &a, &c);
    produce(bs, "events", 0, 200);
    wait_total((const struct member *const[]){&a, &c}, (struct seen *const[]){&seen_a, &seen_b}, 2, 200);
    member_stop(&a);
    unsigned pa = partitions_of(&seen_a);
    assert_int_equal(__builtin_popcount(pa), 2);
    wait_assignment(bs, "takeover", "events", (const char *const[]){"cairn-b"}, (const int[]){4}, 1, NULL);
    produce(bs, "events", 200, 200);
    wait_total((const struct member *const[]){&a, &c}, (struct seen *const[]){&seen_a, &seen_b}, 2, 400);
    const struct seen *sets[] = {&seen_a, &seen_b};
    for (int i = 0; i < 400; i++)
        if (times_seen(sets, 2, i) != 1)
            fail_msg("v%d read %d times by the two members", i, times_seen(sets, 2, i));
    /* b read a's former partitions from where a stopped. */
    assert_int_equal(partitions_of(&seen_b), 0xf);

    /* A third member joins, then b is killed (no commit, no LeaveGroup). */
    struct member x;
    member_start(&x, bs, "events", "takeover", "cairn-c");
    member_commit = "auto.commit.interval.ms=1000";
    wait_assignment(bs, "takeover", "events", (const char *const[]){"cairn-b", "cairn-c"}, (const int[]){2, 2}, 2,
                    NULL);
    produce(bs, "events", 400, 200);
    wait_values(&c, &seen_b, &x, &seen_c, 400, 600);
    kill(c.pid, SIGKILL);
    waitpid(c.pid, NULL, 0);
    c.pid = 0;
    member_read(&c, &seen_b);
    unsigned killed = 0; /* b's partitions after c joined */
    for (int j = 0; j < seen_b.n; j++)
        if (atoi(seen_b.value[j] + 1) >= 400)
            killed |= 1u << seen_b.partition[j];
    assert_int_equal(__builtin_popcount(killed), 2);
    assert_int_equal(killed & partitions_of_from(&seen_c, 400), 0);
    /* c took its two partitions from where b committed at the rebalance
     * (b commits before it joins again): nothing older read again. */
    for (int j = 0; j < seen_c.n; j++)
        if (atoi(seen_c.value[j] + 1) < 400)
            fail_msg("cairn-c read %s again: cairn-b did not commit before the rebalance", seen_c.value[j]);
    /* Once b's session expires, c holds all four and reads from b's last
     * commit on: nothing from 400 on is lost. */
    wait_assignment(bs, "takeover", "events", (const char *const[]){"cairn-c"}, (const int[]){4}, 1, NULL);
    produce(bs, "events", 600, 100);
    wait_values(&c, &seen_b, &x, &seen_c, 400, 700);
    member_stop(&x);
    member_read(&x, &seen_c);
    const struct seen *both[] = {&seen_b, &seen_c};
    for (int i = 400; i < 700; i++) {
        int times = times_seen(both, 2, i);
        if (times == 1)
            continue;
        if (times != 2 || !(killed & (1u << (i % PARTS))))
            fail_msg("v%d read %d times (partition %d; the killed member's: 0x%x)", i, times, i % PARTS, killed);
    }
    broker_mark_passed(b);
}

/* The broker restarts under a member: its heartbeats and commits fail
 * for a while, it waits for the coordinator to come back, joins again if
 * the group forgot it, and goes on reading; every record is read. */
static void test_member_broker_restart(void **state)
{
    struct test_broker *b = *state;
    const char *bs = broker_with_topic(b);
    struct member a;
    member_timeout = "2000";
    member_start(&a, bs, "events", "restart", "cairn-a");
    member_timeout = "30000";
    wait_assignment(bs, "restart", "events", (const char *const[]){"cairn-a"}, (const int[]){4}, 1, NULL);
    produce(bs, "events", 0, 100);
    wait_values(&a, &seen_a, &a, &seen_b, 0, 100);
    broker_stop(b);
    sleep_ms(8000); /* longer than the member's --timeout: its requests fail */
    broker_restart(b);
    produce(bs, "events", 100, 100);
    wait_values(&a, &seen_a, &a, &seen_b, 100, 200);
    wait_assignment(bs, "restart", "events", (const char *const[]){"cairn-a"}, (const int[]){4}, 1, NULL);
    member_stop(&a);
    broker_mark_passed(b);
}

/* A cairn member and a librdkafka consumer (range assignor) share a group:
 * first with cairn leading the assignment, then with librdkafka leading. */
static void test_member_with_librdkafka(void **state)
{
    struct test_broker *b = *state;
    const char *bs = broker_with_topic(b);
    struct member a;
    member_start(&a, bs, "events", "mixed", "cairn-a");
    wait_assignment(bs, "mixed", "events", (const char *const[]){"cairn-a"}, (const int[]){4}, 1, NULL);

    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    const char *kv[] = {"bootstrap.servers",
                        bs,
                        "group.id",
                        "mixed",
                        "client.id",
                        "rdkafka",
                        "partition.assignment.strategy",
                        "range",
                        "auto.offset.reset",
                        "earliest",
                        "heartbeat.interval.ms",
                        "300",
                        "session.timeout.ms",
                        "10000",
                        NULL};
    for (int i = 0; kv[i]; i += 2)
        assert_int_equal(rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof(errstr)), RD_KAFKA_CONF_OK);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    assert_non_null(rk);
    rd_kafka_poll_set_consumer(rk);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, "events", RD_KAFKA_PARTITION_UA);
    assert_int_equal(rd_kafka_subscribe(rk, topics), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(topics);
    /* cairn joined first: it leads and assigns librdkafka its share. */
    wait_assignment(bs, "mixed", "events", (const char *const[]){"cairn-a", "rdkafka"}, (const int[]){2, 2}, 2, rk);

    for (int round = 0; round < 2; round++) {
        int first = round * 100;
        produce(bs, "events", first, 100);
        int rk_parts[PARTS] = {0}, rk_got = 0;
        static char rk_values[MAX_RECORDS][16];
        long long until = now_ms() + 30000;
        for (;;) {
            rd_kafka_message_t *msg = rd_kafka_consumer_poll(rk, 100);
            if (msg && !msg->err && msg->len < 15 && rk_got < MAX_RECORDS) {
                rk_parts[msg->partition]++;
                snprintf(rk_values[rk_got++], 16, "%.*s", (int)msg->len, (const char *)msg->payload);
            }
            if (msg)
                rd_kafka_message_destroy(msg);
            member_read(&a, &seen_a);
            int cairn_now = 0;
            for (int j = 0; j < seen_a.n; j++)
                cairn_now += atoi(seen_a.value[j] + 1) >= first;
            if (rk_got + cairn_now >= 100 || now_ms() > until)
                break;
        }
        member_read(&a, &seen_a);
        /* Each record of the round exactly once, between the two. */
        for (int i = first; i < first + 100; i++) {
            char v[16];
            snprintf(v, sizeof(v), "v%d", i);
            int times = 0;
            for (int j = 0; j < rk_got; j++)
                times += !strcmp(rk_values[j], v);
            for (int j = 0; j < seen_a.n; j++)
                times += !strcmp(seen_a.value[j], v);
            if (times != 1)
                fail_msg("round %d: v%d read %d times by cairn and librdkafka", round, i, times);
        }
        unsigned cairn_parts = 0, rk_bits = 0;
        for (int j = 0; j < seen_a.n; j++)
            if (atoi(seen_a.value[j] + 1) >= first)
                cairn_parts |= 1u << seen_a.partition[j];
        for (int p = 0; p < PARTS; p++)
            rk_bits |= (rk_parts[p] > 0 ? 1u : 0u) << p;
        assert_int_equal(cairn_parts & rk_bits, 0);
        assert_int_equal(cairn_parts | rk_bits, 0xf);
        assert_int_equal(__builtin_popcount(cairn_parts), 2);
        if (round == 1)
            break;
        /* cairn leaves: librdkafka takes all four; a new cairn member then
         * joins a group librdkafka leads, and is assigned by it. */
        member_stop(&a);
        wait_assignment(bs, "mixed", "events", (const char *const[]){"rdkafka"}, (const int[]){4}, 1, rk);
        member_start(&a, bs, "events", "mixed", "cairn-a2");
        wait_assignment(bs, "mixed", "events", (const char *const[]){"cairn-a2", "rdkafka"}, (const int[]){2, 2}, 2,
                        rk);
    }
    member_stop(&a);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    broker_mark_passed(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_members_split, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_member_takeover, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_member_with_librdkafka, cli_setup, cli_teardown),
        cmocka_unit_test_setup_teardown(test_member_broker_restart, cli_setup, cli_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
