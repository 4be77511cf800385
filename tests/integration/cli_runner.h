/* The `cairn` command-line tool run as a process by the CLI tests: its
 * exit code, standard output and standard error captured, with HOME set to
 * a fresh directory per test. Main thread only. */
#ifndef CAIRN_TESTS_CLI_RUNNER_H
#define CAIRN_TESTS_CLI_RUNNER_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define OUT_MAX 65536

/* One run's captured output; main thread only. */
struct run {
    int code;
    char out[OUT_MAX];
    char err[OUT_MAX];
};

extern char g_home[512];    /* HOME for the tool: no stray profile from the real one */
extern const char *g_stdin; /* text the next run reads on standard input, or NULL */

/* Runs cairn with the NULL-terminated args; env is "NAME=value" or NULL. */
void run_env(struct run *r, const char *env, const char *const *args);

#define RUN(r, ...) run_env((r), NULL, (const char *const[]){__VA_ARGS__, NULL})
#define RUN_ENV(r, env, ...) run_env((r), (env), (const char *const[]){__VA_ARGS__, NULL})

/* Fails the test unless the run exited with code and its stdout and stderr
 * contain in_out and in_err (NULL: anything). */
void expect(const struct run *r, int code, const char *in_out, const char *in_err);

/* The run's stdout as JSON (the caller json_decref()s it); fails if it is not. */
json_t *parse_json(const struct run *r);

/* cmocka setup and teardown: a fresh HOME and a test_broker in *state. */
int cli_setup(void **state);

int cli_teardown(void **state);

/* cairn run in the background with a pipe as standard input and stdout
 * in a file of g_home. */
struct bg_run {
    int pid;
    int in; /* write end, -1 when closed */
    char out_path[600];
};

/* Starts cairn with args (NULL-terminated, without the program). */
void bg_start(struct bg_run *bg, const char *name, const char *const *args);
void bg_write(struct bg_run *bg, const char *text);
/* Waits up to 30 s for the output file to hold exactly want / n lines. */
void bg_wait_output(const struct bg_run *bg, const char *want);
void bg_wait_lines(const struct bg_run *bg, int n);

/* One stored record batch's idempotence fields, read from its v2 header
 * (the tests walk a partition's segments with broker_each_stored_batch). */
struct batch_ids {
    long long pid;
    int epoch, seq, count;
};
struct batch_ids batch_ids_read(const uint8_t *batch, size_t len);
/* Closes standard input and returns the exit code. */
int bg_finish(struct bg_run *bg);

#endif
