/* cairnd: a Kafka-compatible broker.
 *   cairnd [--config server.properties] [--override key=value]...
 *   cairnd --check-config [--config server.properties] [--override key=value]...
 *   cairnd format --config <file> --cluster-id <id> [--ignore-formatted]
 *   cairnd random-uuid */
#include <pthread.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "plugin/plugin_host.h"
#include "server/broker.h"
#include "server/config_check.h"
#include "server/quorum.h"
#include "server/storage.h"
#include "util/logger.h"

int main(int argc, char **argv)
{
    int storage_rc = storage_command(argc, argv);
    if (storage_rc >= 0)
        return storage_rc;
    char err[1024] = "";
    struct broker_config *cfg = NULL;
    /* --print-plugin-docs and --check-config need the whole config: take
     * them out and let config_load parse the rest. */
    bool plugin_docs = false, check = false;
    int kept = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && strcmp(argv[i], "--print-plugin-docs") == 0)
            plugin_docs = true;
        else if (i > 0 && strcmp(argv[i], "--check-config") == 0)
            check = true;
        else
            argv[kept++] = argv[i];
    }
    argc = kept;
    argv[argc] = NULL;
    /* The check's verdict is its one line: an unknown key's start-up
     * warning would only repeat it. */
    if (check && logger_get_level() < LOGGER_ERROR)
        logger_set_level(LOGGER_ERROR);
    int rc = check ? config_load_strict(argc, argv, &cfg, err, sizeof err)
                   : config_load(argc, argv, &cfg, err, sizeof err);
    if (rc == 0 && plugin_docs) {
        rc = plugin_host_print_docs(cfg, stdout, err, sizeof err);
        config_free(cfg);
        if (rc == 0)
            return 0;
    }
    if (rc == 0 && check) {
        /* Start-up's checks that need no port, directory or peer. */
        rc = server_config_check(cfg, err, sizeof err);
        config_free(cfg);
        if (rc == 0) {
            printf("configuration OK\n");
            return 0;
        }
    }
    if (rc == 1)
        return 0;
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
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct broker *broker = NULL;
    struct controller_process *controller = NULL;
    /* process.roles=controller: the metadata quorum only, no broker. */
    int started = quorum_controller_only(cfg) && quorum_enabled(cfg)
                      ? controller_process_start(cfg, &controller, err, sizeof err)
                      : broker_start(cfg, &broker, err, sizeof err);
    if (started != 0) {
        /* A stop asked for during start-up is no failure: the start undid
         * what it had begun, and the signal is still pending here. */
        sigset_t pending;
        if (sigpending(&pending) == 0 && (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1)) {
            logger_info("server", "received %s during start-up (%s): shut down",
                        sigismember(&pending, SIGINT) == 1 ? "SIGINT" : "SIGTERM", err);
            return 0;
        }
        /* One line: the logger writes to stderr too. */
        logger_error("server", "start-up failed: %s", err);
        return 1;
    }
    int sig = 0;
    /* SIGHUP re-reads TLS certificates and keys, of the listeners and of the
     * outgoing links; the config file is not re-read. */
    while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
        logger_info("server", "received SIGHUP: reloading TLS certificates and keys");
        if (controller)
            controller_process_reload_tls(controller);
        else
            broker_reload_tls(broker);
    }
    logger_info("server", "received %s: shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
    if (controller)
        controller_process_stop(controller);
    else
        broker_stop(broker);
    logger_info("server", "shutdown complete");
    return 0;
}
