/* kcat as an independent client: produce keyed lines, read them back in
 * the same format, list metadata. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "rk_helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef KCAT_PATH
#define KCAT_PATH "/usr/bin/kcat"
#endif

#define KCAT_LINES 2000

struct kcat_output {
    char *data;
    size_t len;
    int exit_status; /* -1 when killed or timed out */
};

/* Runs kcat with argv (NULL-terminated, without argv[0]), feeding input
 * on stdin and collecting stdout; kills it after timeout_ms. */
static void kcat_run(const char *const *args, const char *input, size_t input_len, int timeout_ms,
                     struct kcat_output *out)
{
    const char *argv[32];
    int argc = 0;
    argv[argc++] = KCAT_PATH;
    for (int i = 0; args[i] && argc < 31; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;

    int in_pipe[2], out_pipe[2];
    if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0)
        fail_msg("pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(in_pipe[0], STDIN_FILENO);
        dup2(out_pipe[1], STDOUT_FILENO);
        execv(argv[0], (char *const *)argv);
        dprintf(STDERR_FILENO, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    signal(SIGPIPE, SIG_IGN);

    memset(out, 0, sizeof(*out));
    size_t cap = 4096, written = 0;
    out->data = malloc(cap);
    assert_non_null(out->data);
    int in_fd = in_pipe[1];
    if (input_len == 0) {
        close(in_fd);
        in_fd = -1;
    }
    long long deadline = harness_now_ms() + timeout_ms;
    bool out_open = true;
    while (out_open && harness_now_ms() < deadline) {
        struct pollfd pfds[2] = {{.fd = out_pipe[0], .events = POLLIN}, {.fd = in_fd, .events = POLLOUT}};
        if (poll(pfds, in_fd >= 0 ? 2 : 1, 100) < 0 && errno != EINTR)
            break;
        if (in_fd >= 0 && (pfds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = write(in_fd, input + written, input_len - written);
            if (n > 0)
                written += (size_t)n;
            if (n < 0 || written == input_len) {
                close(in_fd);
                in_fd = -1;
            }
        }
        if (pfds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (out->len + 4096 > cap) {
                cap *= 2;
                out->data = realloc(out->data, cap);
                assert_non_null(out->data);
            }
            ssize_t n = read(out_pipe[0], out->data + out->len, 4096);
            if (n > 0)
                out->len += (size_t)n;
            else if (n == 0 || errno != EINTR)
                out_open = false;
        }
    }
    if (in_fd >= 0)
        close(in_fd);
    close(out_pipe[0]);
    out->data[out->len] = '\0';
    int status = 0;
    long long wait_deadline = harness_now_ms() + (out_open ? 0 : 10000);
    pid_t reaped = 0;
    while ((reaped = waitpid(pid, &status, WNOHANG)) == 0 && harness_now_ms() < wait_deadline)
        usleep(20000);
    if (reaped != pid) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        out->exit_status = -1;
        fprintf(stderr, "[kcat] timed out after %d ms and was killed\n", timeout_ms);
        return;
    }
    out->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *kcat_make_lines(const char *tag, size_t *len)
{
    size_t cap = KCAT_LINES * 64;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t n = 0;
    for (int i = 0; i < KCAT_LINES; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s-key-%d:value %d of %s, %d bytes later\n", tag, i, i, tag,
                              (i * 37) % 1000);
    *len = n;
    return text;
}

/* Produces KCAT_LINES keyed lines with kcat and reads them back. */
static void kcat_round_trip(struct test_broker *b, const char *topic)
{
    size_t input_len;
    char *input = kcat_make_lines(topic, &input_len);
    const char *produce[] = {"-b", broker_bootstrap(b), "-t", topic, "-P", "-K:", "-p", "0", "-X", "acks=all", NULL};
    struct kcat_output out;
    kcat_run(produce, input, input_len, 60000, &out);
    free(out.data);
    if (out.exit_status != 0)
        fail_msg("kcat -P exited with %d", out.exit_status);

    const char *consume[] = {"-b", broker_bootstrap(b), "-t", topic, "-C", "-p",      "0",
                             "-o", "beginning",         "-e", "-q",  "-f", "%k:%s\n", NULL};
    kcat_run(consume, NULL, 0, 60000, &out);
    if (out.exit_status != 0)
        fail_msg("kcat -C exited with %d after %zu bytes", out.exit_status, out.len);
    if (out.len != input_len || memcmp(out.data, input, input_len) != 0) {
        size_t i = 0;
        while (i < out.len && i < input_len && out.data[i] == input[i])
            i++;
        fail_msg("kcat -C output differs from input at byte %zu (got %zu bytes, sent %zu): "
                 "got \"%.60s\" expected \"%.60s\"",
                 i, out.len, input_len, out.data + i, input + i);
    }
    free(out.data);
    free(input);
}

static void test_kcat_produce_consume(void **state)
{
    struct test_broker *b = *state;
    rk_create_topic(broker_bootstrap(b), "kcat-lines", 1, NULL);
    kcat_round_trip(b, "kcat-lines");
}

static void test_kcat_auto_created_topic(void **state)
{
    /* kcat -P to an unknown topic relies on auto.create.topics.enable. */
    kcat_round_trip(*state, "kcat-auto");
}

static void test_kcat_lists_metadata(void **state)
{
    struct test_broker *b = *state;
    rk_create_topic(broker_bootstrap(b), "kcat-listed", 3, NULL);
    const char *list[] = {"-b", broker_bootstrap(b), "-L", NULL};
    struct kcat_output out;
    kcat_run(list, NULL, 0, 30000, &out);
    if (out.exit_status != 0)
        fail_msg("kcat -L exited with %d: %s", out.exit_status, out.data);
    char expect_topic[128], expect_broker[128];
    snprintf(expect_topic, sizeof(expect_topic), "topic \"kcat-listed\" with 3 partitions:");
    snprintf(expect_broker, sizeof(expect_broker), "broker 1 at %s", broker_bootstrap(b));
    if (!strstr(out.data, expect_topic) || !strstr(out.data, expect_broker))
        fail_msg("kcat -L output lacks '%s' or '%s':\n%s", expect_topic, expect_broker, out.data);
    for (int p = 0; p < 3; p++) {
        char expect_partition[64];
        snprintf(expect_partition, sizeof(expect_partition), "partition %d, leader 1,", p);
        if (!strstr(out.data, expect_partition))
            fail_msg("kcat -L output lacks '%s':\n%s", expect_partition, out.data);
    }
    free(out.data);
}

static int kcat_setup(void **state)
{
    static struct test_broker broker;
    if (access(KCAT_PATH, X_OK) != 0) {
        fprintf(stderr, "kcat not found at %s\n", KCAT_PATH);
        return -1;
    }
    *state = &broker;
    broker_start(&broker, NULL);
    return 0;
}

static int kcat_teardown(void **state)
{
    struct test_broker *b = *state;
    if (b)
        broker_cleanup(b);
    return 0;
}

/* Marks the run as passed only when every test above passed. */
static int kcat_all_passed;

static void kcat_count(void **state, void (*test)(void **))
{
    test(state);
    kcat_all_passed++;
    if (kcat_all_passed == 3)
        broker_mark_passed(*state);
}

static void test_produce_consume(void **state)
{
    kcat_count(state, test_kcat_produce_consume);
}
static void test_auto_created(void **state)
{
    kcat_count(state, test_kcat_auto_created_topic);
}
static void test_list(void **state)
{
    kcat_count(state, test_kcat_lists_metadata);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_produce_consume),
        cmocka_unit_test(test_auto_created),
        cmocka_unit_test(test_list),
    };
    return cmocka_run_group_tests(tests, kcat_setup, kcat_teardown);
}
