/* Starts a throw-away cairnd for the rebalance benchmark: free loopback
 * port, data in a temp dir, group.initial.rebalance.delay.ms=0. */
#include "rebalance.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BROKER_READY_TIMEOUT_US (20 * 1000000ull)
#define BROKER_STOP_TIMEOUT_US (10 * 1000000ull)

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static bool port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

int rebalance_broker_start(struct rebalance_broker *b, const char *cairnd, const char *const *overrides,
                           int override_count, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    snprintf(b->dir, sizeof b->dir, "/tmp/cairn-rebalance-bench.XXXXXX");
    if (!mkdtemp(b->dir)) {
        snprintf(err, errlen, "mkdtemp: %s", strerror(errno));
        b->dir[0] = '\0';
        return -1;
    }
    int port = free_port();
    if (port < 0) {
        snprintf(err, errlen, "no free port: %s", strerror(errno));
        return -1;
    }
    snprintf(b->bootstrap, sizeof b->bootstrap, "127.0.0.1:%d", port);
    char listeners[96], log_dirs[300], log_path[300];
    snprintf(listeners, sizeof listeners, "listeners=PLAINTEXT://127.0.0.1:%d", port);
    snprintf(log_dirs, sizeof log_dirs, "log.dirs=%s/data", b->dir);
    snprintf(log_path, sizeof log_path, "%s/cairnd.log", b->dir);
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        snprintf(err, errlen, "%s: %s", log_path, strerror(errno));
        return -1;
    }
    const char *fixed[] = {listeners, log_dirs, "node.id=1",
                           /* Only the first rebalance of an empty group waits for it; the
                            * measured join is never that one, but set-up is faster. */
                           "group.initial.rebalance.delay.ms=0"};
    const char *argv[1 + 2 * (4 + BENCH_MAX_OVERRIDES) + 1];
    int argc = 0;
    argv[argc++] = cairnd;
    for (int i = 0; i < 4; i++) {
        argv[argc++] = "--override";
        argv[argc++] = fixed[i];
    }
    for (int i = 0; i < override_count && i < BENCH_MAX_OVERRIDES; i++) {
        argv[argc++] = "--override";
        argv[argc++] = overrides[i];
    }
    argv[argc] = NULL;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(log_fd);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the benchmark */
        if (getppid() != parent)
            _exit(127);
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        execv(cairnd, (char *const *)argv);
        _exit(127);
    }
    close(log_fd);
    b->pid = pid;
    uint64_t deadline = bench_now_us() + BROKER_READY_TIMEOUT_US;
    while (!port_open(port)) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            b->pid = 0;
            snprintf(err, errlen, "%s exited during start-up (see %s)", cairnd, log_path);
            return -1;
        }
        if (bench_now_us() > deadline) {
            snprintf(err, errlen, "%s did not listen within 20 s (see %s)", cairnd, log_path);
            return -1;
        }
        usleep(50 * 1000);
    }
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void rebalance_broker_stop(struct rebalance_broker *b)
{
    if (b->pid > 0) {
        kill(b->pid, SIGTERM);
        uint64_t deadline = bench_now_us() + BROKER_STOP_TIMEOUT_US;
        int status;
        while (waitpid(b->pid, &status, WNOHANG) == 0) {
            if (bench_now_us() > deadline) {
                kill(b->pid, SIGKILL);
                waitpid(b->pid, &status, 0);
                break;
            }
            usleep(50 * 1000);
        }
        b->pid = 0;
    }
    if (b->dir[0] && !getenv("CAIRN_KEEP_BENCH_DIR"))
        nftw(b->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    b->dir[0] = '\0';
}
