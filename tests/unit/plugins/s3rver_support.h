/* s3rver for the storage-s3 tests: tests/clients/s3rver/serve.js started
 * as a child process on loopback (with its SigV4 and checksum checks), and
 * its test controls (counters, injected faults) over HTTP.
 * Thread-safety: the test's main thread only. Include <cmocka.h> first. */
#ifndef CAIRN_TESTS_S3RVER_SUPPORT_H
#define CAIRN_TESTS_S3RVER_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define S3RVER_BUCKET "cairn-tier"
#define S3RVER_KEY_ID "AKCAIRNTEST"
#define S3RVER_SECRET "cairn/test+secret"

/* dir: the data directory, set by the caller. */
struct s3rver {
    pid_t pid;
    int out_fd;
    int port;
    char dir[64];
};

int64_t s3rver_mono_ms(void);
/* node and the pinned s3rver (make client-deps) are there. */
bool s3rver_installed(void);
/* Starts serve.js on port (0: any) and waits for its "listening <port>". */
bool s3rver_start(struct s3rver *s, int port);
/* Sends sig (SIGKILL: a crash) and reaps the process. */
void s3rver_stop(struct s3rver *s, int sig);
/* GET /__control/<path> (e.g. "fail-part?part=2&status=503"); the body. */
void s3rver_control(const struct s3rver *s, const char *path, char body[512]);
/* One counter of /__control/stats. */
int64_t s3rver_stat(const struct s3rver *s, const char *name);

#endif
