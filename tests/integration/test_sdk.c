/* The SDK as a plugin author gets it: install it into a temporary prefix,
 * build every example in sdk/examples with pkg-config (its Makefile) and
 * with CMake (find_package(CairnPlugin)) from the installed files only, load
 * the builds into cairnd and check their effect with librdkafka:
 * hello_audit's event file, prefix_authorizer's decisions on create,
 * produce and consume, syslog_audit's RFC 3164 datagrams (sent to a
 * socket of the test's own through socket.path, so the host's /dev/log is
 * never touched), and static_plain's SASL/PLAIN logins (a right password
 * admitted as its user, wrong ones refused). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <errno.h>

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "harness.h"
#include "rk_helpers.h"

static char work[256];

static void run(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0)
        fail_msg("command failed (%d): %s", rc, cmd);
}

static int setup(void **state)
{
    (void)state;
    snprintf(work, sizeof work, "/tmp/cairn-sdk-XXXXXX");
    if (!mkdtemp(work))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return strdup("");
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strdup(buf);
}

/* Loads <plugin_dir>/hello_audit.so, creates `topic`, checks the event file. */
static void load_and_check(const char *plugin_dir, const char *topic)
{
    char events[400], path_kv[400], file_kv[500];
    snprintf(events, sizeof events, "%s/events-%s.log", work, topic);
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s", plugin_dir);
    snprintf(file_kv, sizeof file_kv, "plugin.hello_audit.file=%s", events);
    const char *ov[] = {path_kv, "plugins=hello_audit", file_kv, NULL};
    struct test_broker b;
    memset(&b, 0, sizeof b);
    broker_start(&b, ov);
    rk_create_topic(broker_bootstrap(&b), topic, 2, NULL);
    broker_stop(&b);
    char *text = slurp(events);
    char want[300];
    snprintf(want, sizeof want,
             "ADMIN principal=User:ANONYMOUS operation=CreateTopics resource=%s success=true error=0", topic);
    if (!strstr(text, want))
        fprintf(stderr, "event file %s:\n%s\n", events, text);
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "\"partitions\":2"));
    free(text);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static char prefix[400];

/* Installs the SDK once into <work>/prefix. */
static void install_sdk(void)
{
    if (prefix[0])
        return;
    snprintf(prefix, sizeof prefix, "%s/prefix", work);
    run("'%s' --install '%s' --component sdk --prefix '%s' >/dev/null", CMAKE_COMMAND_PATH, CAIRN_BINARY_DIR, prefix);
    char header[500];
    snprintf(header, sizeof header, "%s/include/cairn/plugin.h", prefix);
    assert_int_equal(access(header, R_OK), 0);
}

/* Builds the installed copy of example `name` with its Makefile into
 * <work>/pc-<name>/ and with CMake into <work>/cm-<name>/build/; writes
 * the two directories holding <name>.so. Only files under the prefix are
 * used, never the source tree. */
static void build_example(const char *name, char *pc_dir, char *cm_dir, size_t dirlen)
{
    install_sdk();
    snprintf(pc_dir, dirlen, "%s/pc-%s", work, name);
    snprintf(cm_dir, dirlen, "%s/cm-%s/build", work, name);
    run("cp -r '%s/share/cairn/sdk-examples/%s' '%s'", prefix, name, pc_dir);
    run("cd '%s' && PKG_CONFIG_PATH='%s/lib/pkgconfig:%s/lib/x86_64-linux-gnu/pkgconfig' CC='%s' "
        "CFLAGS='-O2 -Wall -Wextra -Werror' make -s >/dev/null",
        pc_dir, prefix, prefix, C_COMPILER_PATH);
    char so[600];
    snprintf(so, sizeof so, "%s/%s.so", pc_dir, name);
    assert_int_equal(access(so, R_OK), 0);
    /* Hidden visibility: the entry point is the only exported function. */
    run("test \"$(nm -D --defined-only '%s' | awk '$2 == \"T\"' | wc -l)\" = 1", so);

    run("cp -r '%s/share/cairn/sdk-examples/%s' '%s/cm-%s'", prefix, name, work, name);
    run("cd '%s/cm-%s' && '%s' -S . -B build -DCMAKE_PREFIX_PATH='%s' -DCMAKE_C_COMPILER='%s' "
        "-DCMAKE_C_FLAGS='-Wall -Wextra -Werror' >/dev/null && '%s' --build build >/dev/null",
        work, name, CMAKE_COMMAND_PATH, prefix, C_COMPILER_PATH, CMAKE_COMMAND_PATH);
    snprintf(so, sizeof so, "%s/%s.so", cm_dir, name);
    assert_int_equal(access(so, R_OK), 0);
    run("test \"$(nm -D --defined-only '%s' | awk '$2 == \"T\"' | wc -l)\" = 1", so);
}

static void test_sdk_install_and_build(void **state)
{
    (void)state;
    char pc[400], cm[400];
    build_example("hello_audit", pc, cm, sizeof pc);
    load_and_check(pc, "sdk-pkgconfig");
    load_and_check(cm, "sdk-cmake");
}

/* A unix datagram socket standing in for syslogd: a thread appends every
 * datagram (one per line) to `text` until `stop`. text/len/cap/datagrams
 * are guarded by lock; the rest is set by main before the thread starts. */
struct syslog_collector {
    int fd;
    char path[300];
    pthread_t thread;
    atomic_bool stop;
    pthread_mutex_t lock;
    char *text;
    size_t len, cap;
    int datagrams;
};

static void *syslog_collect(void *arg)
{
    struct syslog_collector *c = arg;
    char buf[4096];
    while (!atomic_load(&c->stop)) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        ssize_t n = recv(c->fd, buf, sizeof buf - 1, 0);
        if (n <= 0)
            continue;
        pthread_mutex_lock(&c->lock);
        if (c->len + (size_t)n + 2 > c->cap) {
            size_t cap = (c->cap + (size_t)n + 2) * 2;
            char *grown = realloc(c->text, cap);
            if (!grown) {
                pthread_mutex_unlock(&c->lock);
                continue;
            }
            c->text = grown;
            c->cap = cap;
        }
        memcpy(c->text + c->len, buf, (size_t)n);
        c->len += (size_t)n;
        c->text[c->len++] = '\n';
        c->text[c->len] = '\0';
        c->datagrams++;
        pthread_mutex_unlock(&c->lock);
    }
    return NULL;
}

/* False (for /dev/log only) when the path is taken: someone else's. */
static bool syslog_collector_start(struct syslog_collector *c, const char *path)
{
    memset(c, 0, sizeof *c);
    assert_true(strlen(path) < sizeof c->path);
    memcpy(c->path, path, strlen(path) + 1);
    pthread_mutex_init(&c->lock, NULL);
    c->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(c->fd >= 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    assert_true(strlen(path) < sizeof addr.sun_path);
    memcpy(addr.sun_path, path, strlen(path) + 1);
    /* Never remove a /dev/log this test did not make. */
    bool shared_path = strcmp(path, "/dev/log") == 0;
    if (!shared_path)
        unlink(path);
    if (bind(c->fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        if (!shared_path)
            fail_msg("bind %s: %s", path, strerror(errno));
        close(c->fd);
        return false;
    }
    /* Room for every line of a run even when the reader falls behind. */
    int rcvbuf = 4 << 20;
    setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    assert_int_equal(pthread_create(&c->thread, NULL, syslog_collect, c), 0);
    return true;
}

static void syslog_collector_stop(struct syslog_collector *c)
{
    usleep(200 * 1000); /* the last datagrams */
    atomic_store(&c->stop, true);
    pthread_join(c->thread, NULL);
    close(c->fd);
    unlink(c->path);
}

/* Fails the test unless one collected line holds every needle. */
static void expect_syslog_line(struct syslog_collector *c, const char *const *needles)
{
    pthread_mutex_lock(&c->lock);
    bool found = false;
    for (char *line = c->text; line && *line && !found;) {
        char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        found = true;
        for (int i = 0; needles[i] && found; i++) {
            const char *hit = memmem(line, n, needles[i], strlen(needles[i]));
            found = hit != NULL;
        }
        line = end ? end + 1 : NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (!found) {
        fprintf(stderr, "no syslog line holds all of:");
        for (int i = 0; needles[i]; i++)
            fprintf(stderr, " [%s]", needles[i]);
        fprintf(stderr, "\ncollected %d datagrams:\n%s\n", c->datagrams, c->text ? c->text : "");
        fail();
    }
}

/* Produces one message and returns its delivery error. */
static rd_kafka_resp_err_t produce_one(const char *bootstrap, const char *topic)
{
    const char *conf[] = {"message.timeout.ms", "8000", NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    struct rk_delivery_slot slot = {0};
    rd_kafka_resp_err_t err = rk_produce_blocking(rk, topic, 0, NULL, 0, "v", 1, 0, NULL, &slot);
    if (!err) {
        rd_kafka_flush(rk, 10000);
        err = slot.done ? slot.err : RD_KAFKA_RESP_ERR__TIMED_OUT;
    }
    rk_producer_destroy(rk);
    return err;
}

/* Reads partition 0 from the beginning: the first message's error (0 when
 * a record arrived). */
static rd_kafka_resp_err_t consume_first(const char *bootstrap, const char *topic)
{
    rd_kafka_t *rk = rk_consumer_new(bootstrap, NULL);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    assert_int_equal(rd_kafka_consume_start(rkt, 0, RD_KAFKA_OFFSET_BEGINNING), 0);
    rd_kafka_resp_err_t result = RD_KAFKA_RESP_ERR__TIMED_OUT;
    long long deadline = harness_now_ms() + 8000;
    while (harness_now_ms() < deadline && result == RD_KAFKA_RESP_ERR__TIMED_OUT) {
        rd_kafka_message_t *m = rd_kafka_consume(rkt, 0, 200);
        if (!m)
            continue;
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            result = m->err;
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, 0);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(rk);
    return result;
}

static rd_kafka_resp_err_t create_topic(const char *bootstrap, const char *topic)
{
    rd_kafka_t *rk = rk_producer_new(bootstrap, NULL);
    char errstr[256];
    rd_kafka_resp_err_t err = rk_create_topic_result(rk, topic, 1, 1, NULL, false, errstr, sizeof errstr);
    rk_producer_destroy(rk);
    return err;
}

#define EXPECT_LINE(c, ...)                                                                                            \
    do {                                                                                                               \
        const char *needles_[] = {__VA_ARGS__, NULL};                                                                  \
        expect_syslog_line(c, needles_);                                                                               \
    } while (0)

/* One broker with prefix_authorizer from authz_dir and syslog_audit from
 * syslog_dir. tag names the topics. With super_user, ANONYMOUS is in
 * super.users and every action is allowed; otherwise the rules grant
 * everything on orders-*, only create and describe on audit-* and
 * nothing on payments-* (the rule for User:nobody does not match). */
static void run_examples(const char *authz_dir, const char *syslog_dir, const char *tag, bool super_user,
                         bool via_dev_log)
{
    char sock[400], path_kv[1000], sock_kv[500];
    snprintf(sock, sizeof sock, "%s/syslog-%s.sock", work, tag);
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s:%s", authz_dir, syslog_dir);
    snprintf(sock_kv, sizeof sock_kv, "plugin.syslog_audit.socket.path=%s", sock);
    if (via_dev_log) {
        /* syslog(3) itself: the collector stands in for syslogd at /dev/log. */
        snprintf(sock, sizeof sock, "/dev/log");
        snprintf(sock_kv, sizeof sock_kv, "plugin.syslog_audit.socket.path=");
    }
    const char *ov[] = {path_kv,
                        "plugins=prefix_authorizer,syslog_audit",
                        "plugin.prefix_authorizer.allow=User:ANON=topic:orders-;User:ANON=topic:audit-@create|describe;"
                        "User:nobody=*",
                        super_user ? "plugin.prefix_authorizer.super.users=User:root, User:ANONYMOUS"
                                   : "plugin.prefix_authorizer.super.users=User:root",
                        "plugin.syslog_audit.ident=cairn-test",
                        "plugin.syslog_audit.facility=local3",
                        "plugin.syslog_audit.events=AUTHORIZATION,ADMIN",
                        sock_kv,
                        NULL};
    struct syslog_collector collector;
    if (!syslog_collector_start(&collector, sock)) {
        fprintf(stderr, "[sdk] %s appeared meanwhile: syslog(3) path not exercised\n", sock);
        return;
    }
    struct test_broker b;
    memset(&b, 0, sizeof b);
    broker_start(&b, ov);
    const char *bs = broker_bootstrap(&b);
    char orders[64], audit[64], payments[64];
    snprintf(orders, sizeof orders, "orders-%s", tag);
    snprintf(audit, sizeof audit, "audit-%s", tag);
    snprintf(payments, sizeof payments, "payments-%s", tag);

    rd_kafka_resp_err_t denied = super_user ? RD_KAFKA_RESP_ERR_NO_ERROR : RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED;
    assert_int_equal(create_topic(bs, orders), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(create_topic(bs, audit), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(create_topic(bs, payments), denied);
    assert_int_equal(produce_one(bs, orders), RD_KAFKA_RESP_ERR_NO_ERROR);
    assert_int_equal(produce_one(bs, audit), denied);
    assert_int_equal(consume_first(bs, orders), RD_KAFKA_RESP_ERR_NO_ERROR);
    if (super_user) {
        assert_int_equal(produce_one(bs, payments), RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(consume_first(bs, audit), RD_KAFKA_RESP_ERR_NO_ERROR);
    } else {
        assert_int_not_equal(produce_one(bs, payments), RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(consume_first(bs, audit), RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    }
    broker_stop(&b);
    syslog_collector_stop(&collector);

    /* local3 = 19: PRI 19 * 8 + 6 (info) = 158, + 4 (warning) = 156. */
    char res[100];
    snprintf(res, sizeof res, "resource=TOPIC:%s ", orders);
    EXPECT_LINE(&collector, "<158>", " cairn-test[", "]: type=AUTHORIZATION principal=User:ANONYMOUS",
                "operation=WRITE", res, "decision=ALLOWED");
    EXPECT_LINE(&collector, "<158>", "type=AUTHORIZATION", "operation=READ", res, "decision=ALLOWED");
    EXPECT_LINE(&collector, "<158>", "type=ADMIN principal=User:ANONYMOUS", "operation=CreateTopics", res,
                "error_code=0", "\"partitions\":1");
    snprintf(res, sizeof res, "resource=TOPIC:%s ", audit);
    if (super_user) {
        EXPECT_LINE(&collector, "type=AUTHORIZATION", "operation=WRITE", res, "decision=ALLOWED");
    } else {
        EXPECT_LINE(&collector, "<156>", "type=AUTHORIZATION", "operation=WRITE", res, "decision=DENIED");
        EXPECT_LINE(&collector, "<156>", "type=AUTHORIZATION", "operation=READ", res, "decision=DENIED");
        snprintf(res, sizeof res, "resource=TOPIC:%s ", payments);
        EXPECT_LINE(&collector, "<156>", "type=AUTHORIZATION", "operation=CREATE", res, "decision=DENIED");
    }
    free(collector.text);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

/* cairnd must refuse to start when an example's config is invalid, and say why. */
static void expect_startup_failure(const char *plugin_dir, const char *plugin, const char *setting, const char *want)
{
    char cmd[3000];
    snprintf(cmd, sizeof cmd,
             "timeout 20 '%s' --override 'listeners=PLAINTEXT://127.0.0.1:0' --override 'log.dirs=%s/bad-data' "
             "--override 'plugin.path=%s' --override 'plugins=%s' --override '%s' 2>&1; echo \"exit=$?\"",
             broker_binary(), work, plugin_dir, plugin, setting);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[8192];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    pclose(p);
    if (!strstr(out, want) || !strstr(out, "exit=1"))
        fail_msg("'%s': expected exit 1 and '%s', got:\n%s", setting, want, out);
}

static void test_sdk_examples(void **state)
{
    (void)state;
    char authz_pc[400], authz_cm[400], syslog_pc[400], syslog_cm[400];
    build_example("prefix_authorizer", authz_pc, authz_cm, sizeof authz_pc);
    build_example("syslog_audit", syslog_pc, syslog_cm, sizeof syslog_pc);
    expect_startup_failure(authz_pc, "prefix_authorizer", "plugin.prefix_authorizer.allow=User:x=topic",
                           "init failed: allow: bad grant 'topic'");
    expect_startup_failure(authz_pc, "prefix_authorizer", "plugin.prefix_authorizer.allow=User:x=topic:a@fly",
                           "init failed: allow: unknown operation 'fly'");
    expect_startup_failure(syslog_cm, "syslog_audit", "plugin.syslog_audit.facility=kern2",
                           "init failed: facility: unknown facility 'kern2'");
    expect_startup_failure(syslog_cm, "syslog_audit", "plugin.syslog_audit.events=ADMIN,LOGIN",
                           "init failed: events: unknown event type 'LOGIN'");
    /* Each build of each example is loaded once. */
    run_examples(authz_pc, syslog_cm, "a", false, false);
    run_examples(authz_cm, syslog_pc, "b", true, false);
    /* The syslog(3) path needs /dev/log: only when there is none and the
     * test may create it (it removes it afterwards). */
    if (access("/dev/log", F_OK) != 0 && access("/dev", W_OK) == 0)
        run_examples(authz_pc, syslog_pc, "c", false, true);
    else
        fprintf(stderr, "[sdk] /dev/log exists or /dev is read-only: syslog(3) path not exercised\n");
}

/* What one SASL/PLAIN login as user/password came to. */
struct plain_outcome {
    int auth_errors;
    char last_error[512];
    bool delivered;
};

static void on_plain_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    struct plain_outcome *o = opaque;
    if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) {
        o->auth_errors++;
        snprintf(o->last_error, sizeof o->last_error, "%s", reason);
    }
}

static void on_plain_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    struct plain_outcome *o = opaque;
    if (!m->err)
        o->delivered = true;
}

/* A producer logging in with PLAIN on bootstrap sends one message to
 * topic: delivered, or refused at authentication (20 s at most). */
static struct plain_outcome plain_produce(const char *bootstrap, const char *user, const char *password,
                                          const char *topic)
{
    struct plain_outcome o = {0};
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    const char *kv[] = {"bootstrap.servers",
                        bootstrap,
                        "security.protocol",
                        "SASL_PLAINTEXT",
                        "sasl.mechanisms",
                        "PLAIN",
                        "sasl.username",
                        user,
                        "sasl.password",
                        password,
                        "message.timeout.ms",
                        "20000",
                        NULL};
    for (int i = 0; kv[i]; i += 2)
        if (rd_kafka_conf_set(conf, kv[i], kv[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
            fail_msg("%s: %s", kv[i], errstr);
    rd_kafka_conf_set_error_cb(conf, on_plain_error);
    rd_kafka_conf_set_dr_msg_cb(conf, on_plain_delivery);
    rd_kafka_conf_set_opaque(conf, &o);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk)
        fail_msg("rd_kafka_new: %s", errstr);
    assert_int_equal(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE("v", 1),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    long long deadline = harness_now_ms() + 20000;
    while (!o.delivered && o.auth_errors == 0 && harness_now_ms() < deadline)
        rd_kafka_poll(rk, 100);
    rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    rd_kafka_poll(rk, 0);
    rd_kafka_destroy(rk);
    if (!o.delivered && o.auth_errors == 0)
        fail_msg("PLAIN as %s: neither delivered nor refused in 20 s", user);
    return o;
}

static void expect_plain_refused(const char *bootstrap, const char *user, const char *password)
{
    struct plain_outcome o = plain_produce(bootstrap, user, password, "plain-refused");
    assert_false(o.delivered);
    if (!strstr(o.last_error, "Invalid username or password"))
        fail_msg("PLAIN as %s/%s: refused without Kafka's text: %s", user, password, o.last_error);
}

/* static_plain from plugin_dir on a SASL_PLAINTEXT listener: the users of
 * the file produce as themselves; a wrong password, an unknown user and
 * a known user's password under another name are refused. */
static void run_static_plain(const char *plugin_dir, const char *tag)
{
    char users[400], path_kv[500], file_kv[500], listeners[200], bootstrap[64], topic[64];
    snprintf(users, sizeof users, "%s/plain-users-%s", work, tag);
    FILE *f = fopen(users, "w");
    assert_non_null(f);
    fputs("# who may log in\nalice:alice-secret\n\norders-service:s3cr3t:with:colons\n", f);
    fclose(f);
    int port = harness_free_port();
    assert_true(port > 0);
    snprintf(bootstrap, sizeof bootstrap, "127.0.0.1:%d", port);
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:%d", port);
    snprintf(path_kv, sizeof path_kv, "plugin.path=%s", plugin_dir);
    snprintf(file_kv, sizeof file_kv, "plugin.static_plain.users.file=%s", users);
    const char *ov[] = {listeners, "sasl.enabled.mechanisms=PLAIN", path_kv, "plugins=static_plain", file_kv, NULL};
    struct test_broker b;
    memset(&b, 0, sizeof b);
    broker_start(&b, ov);
    broker_wait_log(&b, "2 user(s) from", 10000);

    snprintf(topic, sizeof topic, "plain-%s", tag);
    struct plain_outcome o = plain_produce(bootstrap, "alice", "alice-secret", topic);
    if (!o.delivered)
        fail_msg("alice with her password was not admitted: %s", o.last_error);
    assert_int_equal(o.auth_errors, 0);
    broker_wait_log(&b, "User:alice authenticated with PLAIN from", 10000);
    o = plain_produce(bootstrap, "orders-service", "s3cr3t:with:colons", topic);
    assert_true(o.delivered);

    expect_plain_refused(bootstrap, "alice", "wrong");
    expect_plain_refused(bootstrap, "alice", "alice-secre");
    expect_plain_refused(bootstrap, "mallory", "alice-secret");
    expect_plain_refused(bootstrap, "orders-service", "alice-secret");
    assert_true(broker_log_contains(&b, "PLAIN login refused for 'mallory'"));
    assert_false(broker_log_contains(&b, "User:mallory authenticated"));
    broker_stop(&b);
    broker_mark_passed(&b);
    broker_cleanup(&b);
}

static void test_sdk_authenticator(void **state)
{
    (void)state;
    char pc[400], cm[400], setting[500];
    build_example("static_plain", pc, cm, sizeof pc);
    expect_startup_failure(pc, "static_plain", "plugin.static_plain.users.file=/nonexistent/plain-users",
                           "init failed: users.file: cannot open '/nonexistent/plain-users'");
    char bad[400];
    snprintf(bad, sizeof bad, "%s/plain-users-bad", work);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("alice:alice-secret\nno-colon-here\n", f);
    fclose(f);
    snprintf(setting, sizeof setting, "plugin.static_plain.users.file=%s", bad);
    expect_startup_failure(cm, "static_plain", setting, "init failed: users.file: line 2 is not user:password");
    run_static_plain(pc, "pc");
    run_static_plain(cm, "cm");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sdk_install_and_build),
        cmocka_unit_test(test_sdk_examples),
        cmocka_unit_test(test_sdk_authenticator),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
