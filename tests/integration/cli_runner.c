/* The `cairn` tool run as a process (see cli_runner.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_runner.h"
#include "harness.h"

char g_home[512];
const char *g_stdin;

static void read_file(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

void run_env(struct run *r, const char *env, const char *const *args)
{
    char out_path[600], err_path[600];
    snprintf(out_path, sizeof(out_path), "%s/out", g_home);
    snprintf(err_path, sizeof(err_path), "%s/err", g_home);
    const char *argv[40] = {CAIRN_CLI_PATH};
    int n = 1;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0)
            _exit(127);
        if (g_stdin) {
            char in_path[600];
            snprintf(in_path, sizeof(in_path), "%s/in", g_home);
            FILE *in = fopen(in_path, "w");
            if (!in || fputs(g_stdin, in) < 0 || fclose(in) != 0 || !freopen(in_path, "r", stdin))
                _exit(127);
        }
        dup2(o, 1);
        dup2(e, 2);
        setenv("HOME", g_home, 1);
        unsetenv("CAIRN_BROKERS");
        if (env)
            putenv((char *)env);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    g_stdin = NULL;
    assert_true(WIFEXITED(status));
    r->code = WEXITSTATUS(status);
    read_file(out_path, r->out, sizeof(r->out));
    read_file(err_path, r->err, sizeof(r->err));
}

void expect(const struct run *r, int code, const char *in_out, const char *in_err)
{
    if (r->code != code || (in_out && !strstr(r->out, in_out)) || (in_err && !strstr(r->err, in_err)))
        fail_msg("exit %d (want %d), want stdout with '%s', stderr with '%s'\nstdout:\n%s\nstderr:\n%s", r->code, code,
                 in_out ? in_out : "", in_err ? in_err : "", r->out, r->err);
}

json_t *parse_json(const struct run *r)
{
    json_error_t e;
    json_t *v = json_loads(r->out, 0, &e);
    if (!v)
        fail_msg("not JSON (%s): %s", e.text, r->out);
    return v;
}

int cli_setup(void **state)
{
    snprintf(g_home, sizeof(g_home), "/tmp/cairn-cli-home-XXXXXX");
    if (!mkdtemp(g_home))
        return -1;
    struct test_broker *b = calloc(1, sizeof(*b));
    *state = b;
    return 0;
}

int cli_teardown(void **state)
{
    struct test_broker *b = *state;
    broker_cleanup(b);
    free(b);
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_home);
    return system(cmd) == 0 ? 0 : -1;
}

void bg_start(struct bg_run *bg, const char *name, const char *const *args)
{
    int fds[2];
    /* Close-on-exec: a broker restarted meanwhile must not hold the write end. */
    assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
    snprintf(bg->out_path, sizeof(bg->out_path), "%s/%s.out", g_home, name);
    const char *argv[24] = {CAIRN_CLI_PATH};
    int n = 1;
    for (int i = 0; args[i] && n < 23; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    bg->pid = fork();
    assert_true(bg->pid >= 0);
    if (bg->pid == 0) {
        int o = open(bg->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0)
            _exit(127);
        dup2(fds[0], 0);
        dup2(o, 1);
        close(fds[1]);
        setenv("HOME", g_home, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fds[0]);
    bg->in = fds[1];
}

void bg_write(struct bg_run *bg, const char *text)
{
    assert_int_equal(write(bg->in, text, strlen(text)), (ssize_t)strlen(text));
}

/* The output file so far, NUL-terminated, in a buffer of the caller's. */
static size_t bg_read(const struct bg_run *bg, char *buf, size_t cap)
{
    FILE *f = fopen(bg->out_path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return n;
}

/* Waits up to 30 s for the output file to hold want; fails otherwise. */
void bg_wait_output(const struct bg_run *bg, const char *want)
{
    static char buf[4096];
    for (long long until = harness_now_ms() + 30000;; usleep(50000)) {
        bg_read(bg, buf, sizeof(buf));
        if (!strcmp(buf, want))
            return;
        if (harness_now_ms() > until)
            fail_msg("%s: want '%s', have '%s'", bg->out_path, want, buf);
    }
}

/* Waits up to 30 s for the output file to hold n lines. */
void bg_wait_lines(const struct bg_run *bg, int n)
{
    static char buf[4096];
    for (long long until = harness_now_ms() + 30000;; usleep(50000)) {
        size_t len = bg_read(bg, buf, sizeof(buf));
        int lines = 0;
        for (size_t i = 0; i < len; i++)
            lines += buf[i] == '\n';
        if (lines >= n)
            return;
        if (harness_now_ms() > until)
            fail_msg("%s: want %d lines, have %d", bg->out_path, n, lines);
    }
}

/* The v2 batch header: producerId at byte 43, producerEpoch 51,
 * baseSequence 53, recordCount 57. */
static long long be_int(const uint8_t *p, int n)
{
    unsigned long long v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return n == 8 ? (long long)v : n == 4 ? (long long)(int32_t)v : (long long)(int16_t)v;
}

struct batch_ids batch_ids_read(const uint8_t *batch, size_t len)
{
    assert_true(len >= 61);
    return (struct batch_ids){be_int(batch + 43, 8), (int)be_int(batch + 51, 2), (int)be_int(batch + 53, 4),
                              (int)be_int(batch + 57, 4)};
}

int bg_finish(struct bg_run *bg)
{
    if (bg->in >= 0)
        close(bg->in);
    bg->in = -1;
    int status = 0;
    assert_int_equal(waitpid(bg->pid, &status, 0), bg->pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}
