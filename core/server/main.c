/* cairnd: a Kafka-compatible broker.
 *   cairnd [--config server.properties] [--override key=value]... */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "server/broker.h"
#include "util/logger.h"

int main(int argc, char **argv)
{
    char err[1024] = "";
    struct broker_config *cfg = NULL;
    int rc = config_load(argc, argv, &cfg, err, sizeof err);
    if (rc == 1) return 0;
    if (rc != 0) {
        fprintf(stderr, "cairnd: %s\n", err);
        return 2;
    }

    /* Signals are taken synchronously on this thread; every thread started
     * later inherits the blocked mask. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct broker *broker = NULL;
    if (broker_start(cfg, &broker, err, sizeof err) != 0) {
        /* One line: the logger writes to stderr too. */
        logger_error("server", "start-up failed: %s", err);
        return 1;
    }
    int sig = 0;
    sigwait(&signals, &sig);
    logger_info("server", "received %s: shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    broker_stop(broker);
    logger_info("server", "shutdown complete");
    return 0;
}
