/* Listening ports for tests, shared by unit and integration tests. */
#ifndef CAIRN_TEST_PORTS_H
#define CAIRN_TEST_PORTS_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Listening ports come from below the kernel's ephemeral range
 * (32768-60999 here): a port taken from that range and left unbound while
 * a broker starts or restarts could go to any client's outgoing connection
 * meanwhile ("Address already in use", seen with three tests at a time).
 * 13000-18999 is clear of the fixed ports the shell tests use (19092 and
 * up). A port is handed out once per process and only if it binds now. */
#define TEST_FREE_PORT_FIRST 13000
#define TEST_FREE_PORT_COUNT 6000

static inline bool test_port_binds(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
    close(fd);
    return ok;
}

/* Tests run side by side (ctest -j): a port is claimed across processes
 * by a file naming the claiming pid, taken over once that pid is gone. */
#define TEST_PORT_CLAIM_DIR "/tmp/cairn-test-ports"

static inline bool test_port_claim(int port)
{
    char path[64];
    snprintf(path, sizeof path, TEST_PORT_CLAIM_DIR "/%d", port);
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            char pid[24];
            int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
            bool ok = write(fd, pid, (size_t)n) == n;
            close(fd);
            return ok;
        }
        if (errno == ENOENT) {
            (void)mkdir(TEST_PORT_CLAIM_DIR, 0777);
            continue;
        }
        if (errno != EEXIST)
            return true; /* no claim possible here: the bind check still applies */
        FILE *f = fopen(path, "r");
        int owner = 0;
        if (f) {
            if (fscanf(f, "%d", &owner) != 1)
                owner = 0;
            fclose(f);
        }
        if (owner > 0 && (owner == (int)getpid() || kill(owner, 0) == 0 || errno != ESRCH))
            return false; /* held by a live process */
        (void)unlink(path);
    }
    return false;
}

static inline int test_free_port(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static bool handed_out[TEST_FREE_PORT_COUNT];
    static uint64_t state;
    pthread_mutex_lock(&lock);
    if (state == 0)
        state = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ 0x9E3779B97F4A7C15ull;
    int port = -1;
    for (int tries = 0; tries < 4 * TEST_FREE_PORT_COUNT && port < 0; tries++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        int i = (int)((state >> 33) % TEST_FREE_PORT_COUNT);
        if (!handed_out[i] && test_port_claim(TEST_FREE_PORT_FIRST + i) && test_port_binds(TEST_FREE_PORT_FIRST + i)) {
            handed_out[i] = true;
            port = TEST_FREE_PORT_FIRST + i;
        }
    }
    pthread_mutex_unlock(&lock);
    return port;
}

#endif
