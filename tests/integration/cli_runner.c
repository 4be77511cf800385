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
