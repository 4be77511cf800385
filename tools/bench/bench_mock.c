/* mock-cluster: librdkafka's in-process mock cluster as a stand-alone
 * broker, so the same benchmark and conformance runs can target it. */
#include "bench.h"

#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

int bench_run_mock_cluster(const struct bench_options *opts)
{
    if (opts->port != 0) {
        /* librdkafka's mock brokers bind port 0; its API offers no choice. */
        fprintf(stderr,
                "cairn-bench: --port is not supported by librdkafka %s's mock "
                "cluster; it picks free ports and prints them\n",
                rd_kafka_version_str());
        return 2;
    }
    /* Block the stop signals before librdkafka starts its threads, so they
     * inherit the mask and sigwait() below is the only receiver. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (bench_conf_set(conf, "client.id", "cairn-bench-mock", err, sizeof(err)) != 0) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return 1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (!rk) {
        fprintf(stderr, "cairn-bench: %s\n", err);
        rd_kafka_conf_destroy(conf);
        return 1;
    }
    rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(rk, opts->brokers);
    if (!cluster) {
        fprintf(stderr, "cairn-bench: could not start the mock cluster\n");
        rd_kafka_destroy(rk);
        return 1;
    }
    if (opts->topic) {
        int partitions = opts->partitions > 0 ? opts->partitions : 1;
        int replicas = opts->replication_factor <= opts->brokers ? opts->replication_factor : opts->brokers;
        rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(cluster, opts->topic, partitions, replicas);
        if (e) {
            fprintf(stderr, "cairn-bench: mock topic %s: %s\n", opts->topic, rd_kafka_err2str(e));
            rd_kafka_mock_cluster_destroy(cluster);
            rd_kafka_destroy(rk);
            return 1;
        }
    }
    printf("%s\n", rd_kafka_mock_cluster_bootstraps(cluster));
    fflush(stdout);

    int sig = 0;
    sigwait(&stop, &sig);
    fprintf(stderr, "cairn-bench: mock cluster stopping on signal %d\n", sig);
    rd_kafka_mock_cluster_destroy(cluster);
    rd_kafka_destroy(rk);
    return 0;
}
