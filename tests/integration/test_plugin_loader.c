/* Plugin loading failures: cairnd started with each bad plugin
 * configuration must exit non-zero quickly, print one line naming the
 * plugin and the cause, and never open its listener. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"

#define MAX_ARGS 40

struct run_result {
    int exit_code; /* -1 when killed by a signal or timed out */
    char output[16384];
    long long elapsed_ms;
};

static char temp_dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(temp_dir, sizeof temp_dir, "/tmp/cairn-plugin-loader-XXXXXX");
    return mkdtemp(temp_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", temp_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A port nobody listens on now: bind to 0, read it, release it. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* Runs cairnd on a free port with the given overrides (NULL-terminated)
 * and waits for it to exit (at most 15 s). */
static void run_cairnd(const char *const *overrides, struct run_result *res, int *port_out)
{
    char listeners[128], log_dirs[400], out_path[400];
    int port = free_port();
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:%d", port);
    snprintf(log_dirs, sizeof log_dirs, "log.dirs=%s/data", temp_dir);
    snprintf(out_path, sizeof out_path, "%s/stderr.txt", temp_dir);
    const char *argv[MAX_ARGS];
    int argc = 0;
    argv[argc++] = broker_binary();
    const char *fixed[] = {listeners, log_dirs, "plugin.path=" TEST_PLUGIN_DIR};
    for (size_t i = 0; i < 3; i++) {
        argv[argc++] = "--override";
        argv[argc++] = fixed[i];
    }
    for (size_t i = 0; overrides && overrides[i] && argc < MAX_ARGS - 3; i++) {
        argv[argc++] = "--override";
        argv[argc++] = overrides[i];
    }
    argv[argc] = NULL;
    long long start = harness_now_ms();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    res->exit_code = -1;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            res->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            break;
        }
        if (harness_now_ms() - start > 15000) {
            /* Still running: a plugin error did not stop start-up. */
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(20000);
    }
    res->elapsed_ms = harness_now_ms() - start;
    FILE *f = fopen(out_path, "r");
    size_t n = f ? fread(res->output, 1, sizeof res->output - 1, f) : 0;
    res->output[n] = '\0';
    if (f)
        fclose(f);
    if (port_out)
        *port_out = port;
}

static int count_lines_containing(const char *text, const char *needle)
{
    int n = 0;
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[4096];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        if (strstr(buf, needle))
            n++;
        if (!end)
            break;
        line = end + 1;
    }
    return n;
}

/* The broker failed to start with exactly one line holding every
 * expected fragment, and never listened. */
static void expect_failure(const char *const *overrides, const char *const *fragments)
{
    struct run_result res;
    int port = 0;
    run_cairnd(overrides, &res, &port);
    if (res.exit_code <= 0)
        fprintf(stderr, "cairnd output:\n%s\n", res.output);
    assert_true(res.exit_code > 0);
    assert_true(res.elapsed_ms < 10000);
    int lines = count_lines_containing(res.output, fragments[0]);
    if (lines != 1)
        fprintf(stderr, "expected one line with '%s', output:\n%s\n", fragments[0], res.output);
    assert_int_equal(lines, 1);
    for (size_t i = 1; fragments[i]; i++) {
        if (!strstr(res.output, fragments[i]))
            fprintf(stderr, "missing '%s' in output:\n%s\n", fragments[i], res.output);
        assert_non_null(strstr(res.output, fragments[i]));
    }
    assert_null(strstr(res.output, "listening on"));
    int fd = raw_connect(port, 200);
    assert_true(fd < 0);
}

static void test_missing_file_lists_paths(void **state)
{
    (void)state;
    const char *ov[] = {"plugins=nosuch", "plugin.path=/nonexistent/a:" TEST_PLUGIN_DIR, NULL};
    const char *want[] = {"plugin 'nosuch': nosuch.so not found", "/nonexistent/a/nosuch.so",
                          TEST_PLUGIN_DIR "/nosuch.so", NULL};
    expect_failure(ov, want);
}

static void test_not_a_shared_object(void **state)
{
    (void)state;
    const char *ov[] = {"plugins=bogus", NULL};
    const char *want[] = {"plugin 'bogus': cannot load", "bogus.so", NULL};
    expect_failure(ov, want);
}

static void test_missing_entry_symbol(void **state)
{
    (void)state;
    const char *ov[] = {"plugins=test_noentry", NULL};
    const char *want[] = {"plugin 'test_noentry':", "does not export cairn_plugin_entry", NULL};
    expect_failure(ov, want);
}

static void test_abi_major_mismatch(void **state)
{
    (void)state;
    const char *ov[] = {"plugins=test_abi2", NULL};
    const char *want[] = {"plugin 'test_abi2': ABI mismatch", "2.3", "this broker provides 1.3", NULL};
    expect_failure(ov, want);
}

static void test_init_failure(void **state)
{
    (void)state;
    const char *ov[] = {"plugins=test_initfail", NULL};
    const char *want[] = {"plugin 'test_initfail': init failed: cannot reach the policy server", NULL};
    expect_failure(ov, want);
}

static void test_required_key_missing(void **state)
{
    (void)state;
    const char *ov[] = {"plugins=test_required", NULL};
    const char *want[] = {"plugin 'test_required': required config key plugin.test_required.endpoint", NULL};
    expect_failure(ov, want);
}

static void test_unknown_key(void **state)
{
    (void)state;
    const char *ov[] = {"plugins=test_required", "plugin.test_required.endpoint=x", "plugin.test_required.colour=red",
                        NULL};
    const char *want[] = {"plugin 'test_required': unknown config key plugin.test_required.colour",
                          "it declares endpoint, port, fini.file", "cairnd --print-plugin-docs", NULL};
    expect_failure(ov, want);
}

static void test_bad_value(void **state)
{
    (void)state;
    const char *ov[] = {"plugins=test_required", "plugin.test_required.endpoint=x", "plugin.test_required.port=eighty",
                        NULL};
    const char *want[] = {"plugin 'test_required': invalid value 'eighty' for plugin.test_required.port", NULL};
    expect_failure(ov, want);
    const char *ov2[] = {"plugins=test_authz", "plugin.test_authz.buffer.size=12QB", NULL};
    const char *want2[] = {"plugin 'test_authz': invalid value '12QB' for plugin.test_authz.buffer.size", NULL};
    expect_failure(ov2, want2);
}

/* A later plugin failing finalises the ones already initialised. */
static void test_failure_finalises_earlier_plugins(void **state)
{
    (void)state;
    char fini_file[400], fini_key[500];
    snprintf(fini_file, sizeof fini_file, "%s/fini-marker", temp_dir);
    unlink(fini_file);
    snprintf(fini_key, sizeof fini_key, "plugin.test_required.fini.file=%s", fini_file);
    const char *ov[] = {"plugins=test_required,test_initfail", "plugin.test_required.endpoint=x", fini_key, NULL};
    const char *want[] = {"plugin 'test_initfail': init failed", NULL};
    expect_failure(ov, want);
    assert_int_equal(access(fini_file, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file_lists_paths),
        cmocka_unit_test(test_not_a_shared_object),
        cmocka_unit_test(test_missing_entry_symbol),
        cmocka_unit_test(test_abi_major_mismatch),
        cmocka_unit_test(test_init_failure),
        cmocka_unit_test(test_required_key_missing),
        cmocka_unit_test(test_unknown_key),
        cmocka_unit_test(test_bad_value),
        cmocka_unit_test(test_failure_finalises_earlier_plugins),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
