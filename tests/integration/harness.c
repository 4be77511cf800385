#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "harness.h"
#include "raw_kafka.h"
#include "../common/test_ports.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CAIRND_PATH
#define CAIRND_PATH "cairnd"
#endif

/* A fresh broker creates __consumer_offsets and __transaction_state (100
 * partitions, a directory and five files each) before it listens: under ASan beside
 * other tests and builds that took 4-5 s of the old 10 s bound. A node of
 * a cluster back from kill -9 also waits out its previous broker session
 * (30 s in the replication tests) before the controller takes it. */
#define HARNESS_START_TIMEOUT_MS 60000
#define HARNESS_STOP_TIMEOUT_MS 10000
#define HARNESS_MAX_CHILDREN 16

/* Pids of running brokers, read by the fatal-signal handler so that a
 * failing test never leaves a broker behind. Written only by the main
 * thread; sig_atomic_t-sized slots keep the handler's reads sane. */
static volatile pid_t harness_children[HARNESS_MAX_CHILDREN];
static bool harness_handlers_installed;

static void harness_kill_children(void)
{
    for (int i = 0; i < HARNESS_MAX_CHILDREN; i++) {
        pid_t pid = harness_children[i];
        if (pid > 0)
            kill(pid, SIGKILL);
    }
}

static void harness_fatal_signal(int sig)
{
    harness_kill_children();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void harness_install_handlers(void)
{
    if (harness_handlers_installed)
        return;
    harness_handlers_installed = true;
    atexit(harness_kill_children);
    int signals[] = {SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = harness_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(signals[i], &sa, NULL);
    }
}

static void harness_track(pid_t pid)
{
    for (int i = 0; i < HARNESS_MAX_CHILDREN; i++) {
        if (harness_children[i] == 0) {
            harness_children[i] = pid;
            return;
        }
    }
}

static void harness_untrack(pid_t pid)
{
    for (int i = 0; i < HARNESS_MAX_CHILDREN; i++)
        if (harness_children[i] == pid)
            harness_children[i] = 0;
}

long long harness_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long broker_active_segment_base(const struct test_broker *b, const char *partition_dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", b->data_dir, partition_dir);
    DIR *d = opendir(path);
    if (!d)
        fail_msg("cannot list %s: %s", path, strerror(errno));
    long long best = -1;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len == 24 && strcmp(ent->d_name + 20, ".log") == 0 && atoll(ent->d_name) > best)
            best = atoll(ent->d_name);
    }
    closedir(d);
    return best;
}

int broker_each_stored_batch(const struct test_broker *b, const char *partition_dir, broker_batch_fn fn, void *ctx)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", b->data_dir, partition_dir);
    DIR *d = opendir(path);
    if (!d)
        fail_msg("cannot list %s: %s", path, strerror(errno));
    size_t cap = 1 << 16;
    uint8_t *batch = malloc(cap);
    assert_non_null(batch);
    int seen = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len != 24 || strcmp(ent->d_name + 20, ".log") != 0)
            continue;
        char file[1400];
        snprintf(file, sizeof file, "%s/%s", path, ent->d_name);
        FILE *f = fopen(file, "rb");
        if (!f)
            continue;
        while (fread(batch, 1, 12, f) == 12) {
            size_t batch_len = (size_t)batch[8] << 24 | (size_t)batch[9] << 16 | (size_t)batch[10] << 8 | batch[11];
            if (batch_len < 49 || batch_len > (64u << 20))
                break;
            if (12 + batch_len > cap) {
                cap = 12 + batch_len;
                batch = realloc(batch, cap);
                assert_non_null(batch);
            }
            if (fread(batch + 12, 1, batch_len, f) != batch_len)
                break;
            fn(batch, 12 + batch_len, ctx);
            seen++;
        }
        fclose(f);
    }
    closedir(d);
    free(batch);
    return seen;
}

static void harness_sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

const char *broker_binary(void)
{
    const char *env = getenv("CAIRND");
    return (env && *env) ? env : CAIRND_PATH;
}

bool broker_log_contains(const struct test_broker *b, const char *needle)
{
    FILE *f = fopen(b->log_path, "r");
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

void broker_print_log_tail(const struct test_broker *b, int lines)
{
    FILE *f = fopen(b->log_path, "r");
    if (!f) {
        fprintf(stderr, "[harness] no broker log at %s\n", b->log_path);
        return;
    }
    /* Keep a ring of the last `lines` lines; logs are small in tests. */
    char **ring = calloc((size_t)lines, sizeof(char *));
    char *line = NULL;
    size_t cap = 0;
    long count = 0;
    while (ring && getline(&line, &cap, f) >= 0) {
        free(ring[count % lines]);
        ring[count % lines] = strdup(line);
        count++;
    }
    fclose(f);
    free(line);
    fprintf(stderr, "[harness] ---- last lines of %s ----\n", b->log_path);
    long first = count > lines ? count - lines : 0;
    for (long i = first; ring && i < count; i++)
        fputs(ring[i % lines] ? ring[i % lines] : "", stderr);
    fprintf(stderr, "[harness] ---- end of broker log ----\n");
    for (int i = 0; ring && i < lines; i++)
        free(ring[i]);
    free(ring);
}

int harness_free_port(void)
{
    return test_free_port();
}

/* Builds argv and forks cairnd; returns the child's pid or -1. */
struct harness_args {
    char listeners[128], log_dirs[700];
    char expanded[BROKER_MAX_OVERRIDES][1024];
    const char *argv[6 + 2 * (3 + BROKER_MAX_OVERRIDES) + 1];
    int argc;
};

/* cairnd's command line: `prefix` (the binary and a subcommand's
 * arguments, NULL-terminated) then the fixed and the test's overrides. */
static void harness_args(struct test_broker *b, struct harness_args *a, const char *const *prefix)
{
    snprintf(a->listeners, sizeof(a->listeners), "listeners=PLAINTEXT://127.0.0.1:%d", b->port);
    snprintf(a->log_dirs, sizeof(a->log_dirs), "log.dirs=%s", b->data_dir);
    const char *fixed[] = {a->listeners, a->log_dirs, "node.id=1"};
    const char **argv = a->argv;
    int argc = 0;
    for (int i = 0; prefix[i]; i++)
        argv[argc++] = prefix[i];
    for (size_t i = 0; i < 3; i++) {
        argv[argc++] = "--override";
        argv[argc++] = fixed[i];
    }
    /* "{port}" in an override is the broker's PLAINTEXT port,
     * so a test can add listeners next to it. */
    for (int i = 0; i < b->override_count; i++) {
        const char *at = strstr(b->overrides[i], "{port}");
        argv[argc++] = "--override";
        if (!at) {
            argv[argc++] = b->overrides[i];
            continue;
        }
        snprintf(a->expanded[i], sizeof a->expanded[i], "%.*s%d%s", (int)(at - b->overrides[i]), b->overrides[i],
                 b->port, at + 6);
        argv[argc++] = a->expanded[i];
    }
    argv[argc] = NULL;
    a->argc = argc;
}

/* The value of an override key=, or NULL. */
static const char *harness_override(const struct test_broker *b, const char *key)
{
    size_t n = strlen(key);
    const char *found = NULL;
    for (int i = 0; i < b->override_count; i++)
        if (strncmp(b->overrides[i], key, n) == 0 && b->overrides[i][n] == '=')
            found = b->overrides[i] + n + 1;
    return found;
}

static pid_t harness_spawn(struct test_broker *b)
{
    struct harness_args args;
    harness_args(b, &args, (const char *const[]){broker_binary(), NULL});
    const char *const *argv = args.argv;

    int log_fd = open(b->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
        return -1;
    char banner[128];
    int banner_len = snprintf(banner, sizeof(banner), "==== [harness] start #%d on port %d ====\n", b->starts + 1,
                              b->port);
    if (write(log_fd, banner, (size_t)banner_len) < 0) {
        /* Only a marker for readers of the log. */
    }
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(log_fd);
        return -1;
    }
    if (pid == 0) {
        /* The broker must not outlive a test runner killed with SIGKILL. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0)
            dup2(null_fd, STDIN_FILENO);
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        signal(SIGPIPE, SIG_DFL);
        execv(argv[0], (char *const *)argv);
        dprintf(STDERR_FILENO, "[harness] exec %s failed: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(log_fd);
    harness_track(pid);
    b->starts++;
    return pid;
}

bool broker_alive(struct test_broker *b)
{
    if (b->pid <= 0)
        return false;
    int status;
    pid_t r = waitpid(b->pid, &status, WNOHANG);
    if (r == 0)
        return true;
    if (r == b->pid) {
        if (WIFSIGNALED(status))
            fprintf(stderr, "[harness] cairnd %d died from signal %d\n", (int)b->pid, WTERMSIG(status));
        else
            fprintf(stderr, "[harness] cairnd %d exited with status %d\n", (int)b->pid, WEXITSTATUS(status));
    }
    harness_untrack(b->pid);
    b->pid = 0;
    return false;
}

/* Polls until the port answers an ApiVersions round trip. */
void broker_wait_ready(struct test_broker *b)
{
    long long deadline = harness_now_ms() + HARNESS_START_TIMEOUT_MS;
    int32_t correlation = 1;
    while (harness_now_ms() < deadline) {
        if (!broker_alive(b)) {
            broker_print_log_tail(b, 40);
            fail_msg("cairnd (%s) exited during start-up", broker_binary());
        }
        int fd = raw_connect(b->port, 1000);
        if (fd >= 0) {
            struct raw_api_versions versions;
            int rc = raw_api_versions(fd, 0, correlation++, &versions);
            close(fd);
            if (rc == 0 && versions.error_code == 0 && versions.count > 0)
                return;
        }
        harness_sleep_ms(50);
    }
    broker_print_log_tail(b, 40);
    broker_kill9(b);
    fail_msg("cairnd did not answer ApiVersions on port %d within %d ms", b->port, HARNESS_START_TIMEOUT_MS);
}

/* A node of a controller quorum starts on formatted storage only: when the
 * overrides name voters (or bootstrap servers) and a cluster id, the dirs
 * are formatted first, as an operator runs `cairnd format` before the
 * first start. */
static void harness_format(struct test_broker *b)
{
    const char *cluster_id = harness_override(b, "cluster.id");
    if ((!harness_override(b, "controller.quorum.voters") &&
         !harness_override(b, "controller.quorum.bootstrap.servers")) ||
        !cluster_id)
        return;
    struct harness_args args;
    harness_args(
        b, &args,
        (const char *const[]){broker_binary(), "format", "--ignore-formatted", "--cluster-id", cluster_id, NULL});
    char cmd[8192];
    size_t used = 0;
    for (int i = 0; i < args.argc && used < sizeof cmd; i++)
        used += (size_t)snprintf(cmd + used, sizeof cmd - used, "'%s' ", args.argv[i]);
    if (used < sizeof cmd)
        snprintf(cmd + used, sizeof cmd - used, ">>'%s' 2>&1", b->log_path);
    int status = system(cmd);
    if (status != 0) {
        broker_print_log_tail(b, 20);
        fail_msg("cairnd format failed (status %d)", status);
    }
}

void broker_start(struct test_broker *b, const char *const *overrides)
{
    broker_start_on_port(b, 0, overrides);
}

void broker_start_on_port(struct test_broker *b, int port, const char *const *overrides)
{
    broker_spawn_on_port(b, port, overrides);
    broker_wait_ready(b);
}

void broker_spawn_on_port(struct test_broker *b, int port, const char *const *overrides)
{
    harness_install_handlers();
    memset(b, 0, sizeof(*b));
    const char *tmp = getenv("TMPDIR");
    snprintf(b->dir, sizeof(b->dir), "%s/cairn-it-XXXXXX", (tmp && *tmp) ? tmp : "/tmp");
    if (!mkdtemp(b->dir))
        fail_msg("mkdtemp(%s): %s", b->dir, strerror(errno));
    snprintf(b->data_dir, sizeof(b->data_dir), "%s/data", b->dir);
    snprintf(b->log_path, sizeof(b->log_path), "%s/cairnd.log", b->dir);
    if (mkdir(b->data_dir, 0755) != 0)
        fail_msg("mkdir(%s): %s", b->data_dir, strerror(errno));
    for (int i = 0; overrides && overrides[i]; i++) {
        if (b->override_count == BROKER_MAX_OVERRIDES)
            fail_msg("more than %d broker overrides", BROKER_MAX_OVERRIDES);
        b->overrides[b->override_count++] = strdup(overrides[i]);
    }
    b->port = port > 0 ? port : harness_free_port();
    if (b->port <= 0)
        fail_msg("no free loopback port");
    snprintf(b->bootstrap, sizeof(b->bootstrap), "127.0.0.1:%d", b->port);
    if (access(broker_binary(), X_OK) != 0)
        fail_msg("cairnd binary %s is not executable: %s", broker_binary(), strerror(errno));
    harness_format(b);
    b->pid = harness_spawn(b);
    if (b->pid < 0)
        fail_msg("could not fork cairnd: %s", strerror(errno));
    fprintf(stderr, "[harness] cairnd pid %d on %s, dir %s\n", (int)b->pid, b->bootstrap, b->dir);
}

const char *broker_bootstrap(const struct test_broker *b)
{
    return b->bootstrap;
}

int broker_port(const struct test_broker *b)
{
    return b->port;
}

pid_t broker_pid(const struct test_broker *b)
{
    return b->pid;
}

/* Waits for the child to exit; returns true and fills *status if it did. */
static bool harness_wait_exit(pid_t pid, int timeout_ms, int *status)
{
    long long deadline = harness_now_ms() + timeout_ms;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return true;
        if (r < 0 && errno != EINTR)
            return true; /* already reaped */
        if (harness_now_ms() >= deadline)
            return false;
        harness_sleep_ms(20);
    }
}

void broker_stop(struct test_broker *b)
{
    if (b->pid <= 0)
        fail_msg("broker_stop: cairnd is not running");
    pid_t pid = b->pid;
    kill(pid, SIGTERM);
    int status = 0;
    bool exited = harness_wait_exit(pid, HARNESS_STOP_TIMEOUT_MS, &status);
    if (!exited) {
        kill(pid, SIGKILL);
        harness_wait_exit(pid, 5000, &status);
    }
    harness_untrack(pid);
    b->pid = 0;
    if (!exited) {
        broker_print_log_tail(b, 40);
        fail_msg("cairnd %d ignored SIGTERM for %d ms", (int)pid, HARNESS_STOP_TIMEOUT_MS);
    }
    if (WIFSIGNALED(status) || WEXITSTATUS(status) != 0) {
        broker_print_log_tail(b, 40);
        if (WIFSIGNALED(status))
            fail_msg("cairnd %d died from signal %d after SIGTERM", (int)pid, WTERMSIG(status));
        fail_msg("cairnd %d exited with status %d after SIGTERM", (int)pid, WEXITSTATUS(status));
    }
}

void broker_kill9(struct test_broker *b)
{
    if (b->pid <= 0)
        return;
    kill(b->pid, SIGKILL);
    int status;
    harness_wait_exit(b->pid, 5000, &status);
    harness_untrack(b->pid);
    b->pid = 0;
}

void broker_respawn(struct test_broker *b)
{
    if (b->pid > 0)
        fail_msg("broker_restart: cairnd %d is still running", (int)b->pid);
    b->pid = harness_spawn(b);
    if (b->pid < 0)
        fail_msg("could not fork cairnd: %s", strerror(errno));
    fprintf(stderr, "[harness] cairnd restarted as pid %d on %s\n", (int)b->pid, b->bootstrap);
}

void broker_restart(struct test_broker *b)
{
    broker_respawn(b);
    broker_wait_ready(b);
}

void broker_add_override(struct test_broker *b, const char *kv)
{
    if (b->override_count >= BROKER_MAX_OVERRIDES)
        fail_msg("broker_add_override: more than %d overrides", BROKER_MAX_OVERRIDES);
    b->overrides[b->override_count] = strdup(kv);
    if (!b->overrides[b->override_count])
        fail_msg("broker_add_override: out of memory");
    b->override_count++;
}

void broker_mark_passed(struct test_broker *b)
{
    b->passed = true;
}

static int harness_remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void broker_cleanup(struct test_broker *b)
{
    broker_kill9(b);
    if (b->dir[0]) {
        const char *keep = getenv("CAIRN_KEEP_TEST_DIRS");
        if (b->passed && !(keep && strcmp(keep, "1") == 0))
            nftw(b->dir, harness_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        else
            fprintf(stderr, "[harness] kept %s (log: %s)\n", b->dir, b->log_path);
        b->dir[0] = '\0';
    }
    for (int i = 0; i < b->override_count; i++)
        free(b->overrides[i]);
    b->override_count = 0;
}

void broker_wait_log(struct test_broker *b, const char *needle, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    while (!broker_log_contains(b, needle)) {
        if (harness_now_ms() > deadline) {
            broker_print_log_tail(b, 40);
            fail_msg("no '%s' in %s within %d ms", needle, b->log_path, timeout_ms);
        }
        usleep(200 * 1000);
    }
}

int broker_slot_setup(void **state)
{
    static struct test_broker broker;
    memset(&broker, 0, sizeof broker);
    *state = &broker;
    return 0;
}

int broker_slot_teardown(void **state)
{
    broker_cleanup(*state);
    return 0;
}
