/* s3rver for the storage-s3 tests; see s3rver_support.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "s3rver_support.h"

#include <curl/curl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Loading s3rver's modules takes seconds on a busy machine. */
#define SERVER_START_TIMEOUT_MS 120000

int64_t s3rver_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool s3rver_installed(void)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/node_modules/s3rver/package.json", CAIRN_S3RVER_DIR);
    return access(path, R_OK) == 0 && system("node --version >/dev/null 2>&1") == 0;
}

bool s3rver_start(struct s3rver *s, int port)
{
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    char port_text[16], script[1024];
    snprintf(port_text, sizeof(port_text), "%d", port);
    snprintf(script, sizeof(script), "%s/serve.js", CAIRN_S3RVER_DIR);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        /* A test killed by its timeout leaves no store behind. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execlp("node", "node", script, s->dir, port_text, S3RVER_BUCKET, S3RVER_KEY_ID, S3RVER_SECRET, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    s->pid = pid;
    s->out_fd = fds[0];
    char line[256] = "";
    size_t len = 0;
    int64_t deadline = s3rver_mono_ms() + SERVER_START_TIMEOUT_MS;
    while (s3rver_mono_ms() < deadline && len + 1 < sizeof(line)) {
        struct pollfd p = {fds[0], POLLIN, 0};
        if (poll(&p, 1, 500) <= 0)
            continue;
        ssize_t n = read(fds[0], line + len, sizeof(line) - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        line[len] = '\0';
        if (sscanf(line, "listening %d", &s->port) == 1 && strchr(line, '\n'))
            return true;
    }
    fprintf(stderr, "s3rver did not start: '%s'\n", line);
    return false;
}

void s3rver_stop(struct s3rver *s, int sig)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, sig);
    waitpid(s->pid, NULL, 0);
    close(s->out_fd);
    s->pid = 0;
}

static size_t control_body(char *data, size_t size, size_t nmemb, void *arg)
{
    char *out = arg;
    size_t len = strlen(out), n = size * nmemb;
    if (len + n < 512) {
        memcpy(out + len, data, n);
        out[len + n] = '\0';
    }
    return size * nmemb;
}

void s3rver_control(const struct s3rver *s, const char *path, char body[512])
{
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/__control/%s", s->port, path);
    body[0] = '\0';
    CURL *curl = curl_easy_init();
    assert_non_null(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, control_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_cleanup(curl);
    if (rc != CURLE_OK)
        fail_msg("control %s: %s", path, curl_easy_strerror(rc));
}

int64_t s3rver_stat(const struct s3rver *s, const char *name)
{
    char body[512];
    s3rver_control(s, "stats", body);
    json_t *stats = json_loads(body, 0, NULL);
    if (!stats)
        fail_msg("stats are not JSON: %s", body);
    int64_t value = (int64_t)json_integer_value(json_object_get(stats, name));
    json_decref(stats);
    return value;
}
