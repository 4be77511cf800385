/* The throwaway Kerberos realm of krb5_kdc.h. krb5kdc runs in the
 * foreground as the test's child, killed with the test (PR_SET_PDEATHSIG)
 * if it fails before test_kdc_stop; a failed test keeps the realm's dir. */
#include "krb5_kdc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define KDC_SBIN "/usr/sbin"

bool test_kdc_available(void)
{
    return access(KDC_SBIN "/krb5kdc", X_OK) == 0 && access(KDC_SBIN "/kdb5_util", X_OK) == 0 &&
           access(KDC_SBIN "/kadmin.local", X_OK) == 0 && access("/usr/bin/kinit", X_OK) == 0;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) < 0 ? -1 : 0;
    return fclose(f) != 0 ? -1 : rc;
}

/* Runs a shell command with its output in k->dir/commands.log; 0 when it exits 0. */
static int run(const struct test_kdc *k, const char *command)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "(%s) >>'%s/commands.log' 2>&1", command, k->dir);
    int rc = system(cmd);
    return rc == 0 ? 0 : -1;
}

static bool kdc_accepts(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

int test_kdc_start(struct test_kdc *k, char *why, size_t whylen)
{
    memset(k, 0, sizeof *k);
    snprintf(k->realm, sizeof k->realm, "CAIRN.TEST");
    const char *tmp = getenv("TMPDIR");
    snprintf(k->dir, sizeof k->dir, "%s/cairn-kdc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(k->dir)) {
        snprintf(why, whylen, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    k->port = harness_free_port();
    if (k->port <= 0) {
        snprintf(why, whylen, "no free port");
        return -1;
    }
    char path[400], text[3000];
    /* Names are taken as given (no DNS), and clients use TCP so a busy
     * machine's lost UDP datagram cannot stall them. */
    snprintf(text, sizeof text,
             "[libdefaults]\n default_realm = %s\n dns_lookup_kdc = false\n dns_lookup_realm = false\n"
             " dns_canonicalize_hostname = false\n rdns = false\n udp_preference_limit = 1\n"
             " ticket_lifetime = 1h\n\n"
             "[realms]\n %s = {\n  kdc = 127.0.0.1:%d\n  admin_server = 127.0.0.1:%d\n }\n",
             k->realm, k->realm, k->port, k->port);
    snprintf(path, sizeof path, "%s/krb5.conf", k->dir);
    if (write_file(path, text) != 0 || setenv("KRB5_CONFIG", path, 1) != 0) {
        snprintf(why, whylen, "cannot write %s", path);
        return -1;
    }
    snprintf(text, sizeof text,
             "[kdcdefaults]\n kdc_listen = 127.0.0.1:%d\n kdc_tcp_listen = 127.0.0.1:%d\n\n"
             "[realms]\n %s = {\n  database_name = %s/principal\n  key_stash_file = %s/stash\n"
             "  acl_file = %s/kadm5.acl\n  kdc_listen = 127.0.0.1:%d\n  kdc_tcp_listen = 127.0.0.1:%d\n"
             "  max_life = 1h\n }\n\n[logging]\n kdc = FILE:%s/kdc.log\n",
             k->port, k->port, k->realm, k->dir, k->dir, k->dir, k->port, k->port, k->dir);
    snprintf(path, sizeof path, "%s/kdc.conf", k->dir);
    if (write_file(path, text) != 0 || setenv("KRB5_KDC_PROFILE", path, 1) != 0) {
        snprintf(why, whylen, "cannot write %s", path);
        return -1;
    }
    snprintf(path, sizeof path, "FILE:%s/ccache", k->dir);
    setenv("KRB5CCNAME", path, 1);
    char cmd[700];
    snprintf(cmd, sizeof cmd, KDC_SBIN "/kdb5_util create -s -r %s -P cairn-master-password", k->realm);
    if (run(k, cmd) != 0) {
        snprintf(why, whylen, "kdb5_util create failed (see %s/commands.log)", k->dir);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* A failed test leaves without test_kdc_stop: the KDC goes with it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        char log[400];
        snprintf(log, sizeof log, "%s/krb5kdc.out", k->dir);
        FILE *out = freopen(log, "w", stdout);
        if (out)
            dup2(fileno(out), 2);
        /* -n: stay in the foreground, so the pid is the KDC's. */
        execl(KDC_SBIN "/krb5kdc", "krb5kdc", "-n", "-r", k->realm, (char *)NULL);
        _exit(127);
    }
    k->pid = pid;
    long long deadline = harness_now_ms() + 30000;
    while (!kdc_accepts(k->port)) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            k->pid = 0;
            snprintf(why, whylen, "krb5kdc exited (see %s/krb5kdc.out and kdc.log)", k->dir);
            return -1;
        }
        if (harness_now_ms() > deadline) {
            snprintf(why, whylen, "krb5kdc did not listen on 127.0.0.1:%d in 30 s", k->port);
            return -1;
        }
        usleep(50 * 1000);
    }
    return 0;
}

int test_kdc_add_principal(struct test_kdc *k, const char *principal, const char *file, char *path, size_t pathlen,
                           char *why, size_t whylen)
{
    char cmd[1200];
    snprintf(path, pathlen, "%s/%s", k->dir, file);
    snprintf(cmd, sizeof cmd,
             KDC_SBIN "/kadmin.local -r %s -q 'addprinc -randkey %s' && " KDC_SBIN
                      "/kadmin.local -r %s -q 'ktadd -k %s %s' && test -s '%s'",
             k->realm, principal, k->realm, path, principal, path);
    if (run(k, cmd) != 0) {
        snprintf(why, whylen, "kadmin.local could not add %s (see %s/commands.log)", principal, k->dir);
        return -1;
    }
    return 0;
}

int test_kdc_admin(struct test_kdc *k, const char *query)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, KDC_SBIN "/kadmin.local -r %s -q '%s'", k->realm, query);
    return run(k, cmd);
}

void test_kdc_stop(struct test_kdc *k)
{
    if (k->pid > 0) {
        kill(k->pid, SIGTERM);
        long long deadline = harness_now_ms() + 10000;
        int status;
        while (waitpid(k->pid, &status, WNOHANG) == 0) {
            if (harness_now_ms() > deadline) {
                kill(k->pid, SIGKILL);
                waitpid(k->pid, &status, 0);
                break;
            }
            usleep(20 * 1000);
        }
        k->pid = 0;
    }
    if (k->dir[0]) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", k->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", k->dir);
    }
}
