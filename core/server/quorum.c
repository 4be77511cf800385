#include "server/quorum.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/listeners.h"
#include "config/meta_properties.h"
#include "config/topic_config.h"
#include "handlers/sasl.h"
#include "net/client.h"
#include "net/server.h"
#include "plugin/plugin_host.h"
#include "protocol/generated/api_keys.h"
#include "raft/raft_shell.h"
#include "raft/raft_shell_metadata.h"
#include "metadata/metadata_store.h"
#include "server/acl_feed.h"
#include "server/controller_alter_partition.h"
#include "server/controller_brokers.h"
#include "server/forwarding.h"
#include "server/links.h"
#include "server/storage.h"
#include "tls/tls.h"
#include "util/clock.h"
#include "util/fs_util.h"
#include "util/logger.h"

/* Owned by the main thread. */
struct quorum {
    struct raft_shell *shell;
    struct net_server *net;
    struct tls_listener *tls;             /* an SSL controller listener's; freed after net */
    struct server_link link;              /* how the shell's client reaches the other voters */
    struct raft_shell_metadata *metadata; /* attached to shell; detached before it stops */
    /* A SASL controller listener's mechanisms read config, plugins and
     * metadata only; read-only once the server starts. */
    struct handler_env sasl_env;
    bool stopped; /* quorum_stop ran; quorum_free frees */
};

static bool has_role(const struct broker_config *cfg, const char *role)
{
    size_t n = 0;
    const char *const *roles = config_get_list(cfg, "process.roles", &n);
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(roles[i], role) == 0)
            return true;
    return false;
}

bool quorum_enabled(const struct broker_config *cfg)
{
    /* A pure broker takes part too: as an observer of the voters' log. */
    return !config_single_node(cfg) && (has_role(cfg, "controller") || has_role(cfg, "broker"));
}

bool quorum_is_voter(const struct broker_config *cfg)
{
    /* config_check refuses bootstrap servers on a controller. */
    return !config_single_node(cfg) && has_role(cfg, "controller");
}

struct controller_rebalance quorum_rebalance_settings(const struct broker_config *cfg)
{
    return (struct controller_rebalance){
        .enable = config_get_bool(cfg, "auto.leader.rebalance.enable"),
        .interval_ms = config_get_long(cfg, "leader.imbalance.check.interval.seconds") * 1000,
        .percentage = (int32_t)config_get_int(cfg, "leader.imbalance.per.broker.percentage"),
    };
}

bool quorum_controller_only(const struct broker_config *cfg)
{
    return has_role(cfg, "controller") && !has_role(cfg, "broker");
}

bool quorum_is_controller_listener(const struct broker_config *cfg, const char *name)
{
    size_t n = 0;
    const char *const *names = config_get_list(cfg, "controller.listener.names", &n);
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(names[i], name) == 0)
            return true;
    return false;
}

int quorum_metadata_dir(const struct broker_config *cfg, char *buf, size_t len, char *err, size_t errlen)
{
    /* Kafka's metadata.log.dir, else the first of log.dirs. */
    const char *dir = config_get_string(cfg, "metadata.log.dir");
    if (!dir || !dir[0]) {
        size_t n_dirs = 0;
        const char *const *dirs = config_log_dirs(cfg, &n_dirs);
        dir = n_dirs ? dirs[0] : NULL;
    }
    if (!dir) {
        snprintf(err, errlen, "no log directory for the metadata quorum");
        return -1;
    }
    /* A broker keeps its own single-voter metadata log in the first log
     * dir's __cluster_metadata-0 until its controller runs on the quorum:
     * the quorum's log must not share those segments. */
    int n = has_role(cfg, "broker") ? snprintf(buf, len, "%s/%s", dir, QUORUM_BESIDE_BROKER_DIR)
                                    : snprintf(buf, len, "%s", dir);
    if (n < 0 || (size_t)n >= len) {
        snprintf(err, errlen, "metadata log path too long under %s", dir);
        return -1;
    }
    return 0;
}

static int shell_config(const struct broker_config *cfg, const char *cluster_id, struct raft_shell_config *sc,
                        char *err, size_t errlen)
{
    raft_shell_config_defaults(sc);
    sc->node_id = config_node_id(cfg);
    struct quorum_voter voters[RAFT_MAX_VOTERS + 1];
    int n = config_parse_quorum_voters(config_get_string(cfg, "controller.quorum.voters"), voters, RAFT_MAX_VOTERS + 1,
                                       err, errlen);
    if (n < 0)
        return -1;
    if (n > RAFT_MAX_VOTERS) {
        snprintf(err, errlen, "controller.quorum.voters lists more than %d voters", RAFT_MAX_VOTERS);
        return -1;
    }
    /* A broker without voters asks its bootstrap servers (negative ids)
     * who leads; its quorum state then names no voters. */
    bool bootstrap = n == 0;
    if (bootstrap) {
        n = config_parse_quorum_bootstrap_servers(config_get_string(cfg, "controller.quorum.bootstrap.servers"), voters,
                                                  RAFT_MAX_VOTERS, err, errlen);
        if (n < 0)
            return -1;
        if (n == 0) {
            snprintf(err, errlen, "neither controller.quorum.voters nor controller.quorum.bootstrap.servers is set");
            return -1;
        }
    }
    for (int i = 0; i < n; i++) {
        sc->voters[i].id = voters[i].node_id;
        snprintf(sc->voters[i].host, sizeof sc->voters[i].host, "%s", voters[i].host[0] ? voters[i].host : "localhost");
        sc->voters[i].port = voters[i].port;
    }
    sc->n_voters = n;
    snprintf(sc->cluster_id, sizeof sc->cluster_id, "%s", cluster_id);
    sc->election_timeout_ms = config_get_int(cfg, "controller.quorum.election.timeout.ms");
    sc->fetch_timeout_ms = config_get_int(cfg, "controller.quorum.fetch.timeout.ms");
    sc->election_backoff_max_ms = config_get_int(cfg, "controller.quorum.election.backoff.max.ms");
    sc->request_timeout_ms = config_get_int(cfg, "controller.quorum.request.timeout.ms");
    sc->retry_backoff_ms = config_get_int(cfg, "controller.quorum.retry.backoff.ms");
    sc->retention_bytes = config_get_long(cfg, "metadata.max.retention.bytes");
    sc->retention_ms = config_get_long(cfg, "metadata.max.retention.ms");
    char dir[PATH_MAX];
    if (quorum_metadata_dir(cfg, dir, sizeof dir, err, errlen) != 0)
        return -1;
    int32_t ids[RAFT_MAX_VOTERS];
    for (int i = 0; i < n; i++)
        ids[i] = sc->voters[i].id;
    sc->store_ops = &raft_shell_disk_store_ops;
    if ((size_t)snprintf(sc->snapshot_dir, sizeof sc->snapshot_dir, "%s/%s", dir, LOG_MANAGER_METADATA_DIR) >=
        sizeof sc->snapshot_dir) {
        snprintf(err, errlen, "metadata log path too long under %s", dir);
        return -1;
    }
    sc->store = raft_shell_disk_store_open(dir, cluster_id, ids, bootstrap ? 0 : n, err, errlen);
    if (!sc->store)
        return -1;
    /* The internal key, when set, goes below Kafka's 8 MiB minimum (tests). */
    int64_t segment_bytes = config_get_long(cfg, "internal.metadata.log.segment.bytes");
    if (segment_bytes <= 0)
        segment_bytes = config_get_int(cfg, "metadata.log.segment.bytes");
    raft_shell_disk_store_set_segments(sc->store, segment_bytes, config_get_long(cfg, "metadata.log.segment.ms"));
    return 0;
}

/* The first listener named in controller.listener.names. */
static int controller_listener(const struct broker_config *cfg, struct net_config *net, struct tls_listener **tls,
                               char *err, size_t errlen)
{
    struct listener_spec specs[NET_MAX_LISTENERS];
    int n = config_parse_listeners(config_get_string(cfg, "listeners"), specs, NET_MAX_LISTENERS, err, errlen);
    if (n < 0)
        return -1;
    size_t n_names = 0;
    const char *const *names = config_get_list(cfg, "controller.listener.names", &n_names);
    for (int i = 0; i < n && n_names > 0; i++) {
        if (strcasecmp(specs[i].name, names[0]) != 0)
            continue;
        struct net_listener_config *l = &net->listeners[0];
        snprintf(l->name, sizeof l->name, "%.31s", specs[i].name);
        snprintf(l->host, sizeof l->host, "%s", specs[i].host);
        l->port = specs[i].port;
        int protocol = config_security_protocol_id(config_listener_security_protocol(cfg, specs[i].name));
        if (protocol < 0) {
            snprintf(err, errlen, "controller listener %s has no protocol in listener.security.protocol.map",
                     specs[i].name);
            return -1;
        }
        l->security_protocol = (int16_t)protocol;
        if (protocol == NET_SECURITY_SSL || protocol == NET_SECURITY_SASL_SSL) {
            /* TLS without principal mapping: on SSL the voters and brokers
             * are known by their certificates, on SASL_SSL by SASL. */
            struct tls_settings settings;
            if (tls_settings_from_config(cfg, specs[i].name, &settings) != 0) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
            int rc = tls_listener_create(specs[i].name, &settings, NULL, NULL, tls, err, errlen);
            tls_settings_clear(&settings);
            if (rc != 0)
                return -1;
            l->transport_init = tls_listener_transport_init;
            l->transport_ctx = *tls;
        }
        net->listener_count = 1;
        return 0;
    }
    snprintf(err, errlen, "no controller listener: controller.listener.names names none of listeners");
    return -1;
}

static bool is_sasl(int16_t protocol)
{
    return protocol == NET_SECURITY_SASL_PLAINTEXT || protocol == NET_SECURITY_SASL_SSL;
}

/* A SASL controller listener must offer a mechanism, and the one this node
 * authenticates with itself (the other voters are configured alike). */
static int check_sasl_listener(struct quorum *q, const struct net_listener_config *l, char *err, size_t errlen)
{
    const char *offered[16];
    int n = sasl_offered_mechanisms(&q->sasl_env, l->name, offered, 16);
    char list[256] = "";
    size_t used = 0;
    bool own = false;
    for (int i = 0; i < n && used < sizeof list; i++) {
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? "," : "", offered[i]);
        own = own || strcmp(offered[i], q->link.sasl_mechanism) == 0;
    }
    if (n == 0) {
        snprintf(err, errlen,
                 "controller listener %s maps to %s, but it serves none of its SASL mechanisms "
                 "(listener.name.%s.sasl.enabled.mechanisms or sasl.enabled.mechanisms): enable SCRAM-SHA-256, "
                 "SCRAM-SHA-512, or a mechanism of a loaded authentication plugin (auth-sasl serves PLAIN)",
                 l->name, net_security_protocol_name(l->security_protocol), l->name);
        return -1;
    }
    if (!own) {
        snprintf(err, errlen,
                 "sasl.mechanism.controller.protocol=%s is not one of the mechanisms the controller listener %s "
                 "serves (%s): the other controllers would refuse it too",
                 q->link.sasl_mechanism, l->name, list);
        return -1;
    }
    return 0;
}

/* The controller listener's handler when it is a SASL listener. */
static void serve_sasl(struct net_request *req, void *arg)
{
    struct quorum *q = arg;
    sasl_front_dispatch(req, &q->sasl_env, raft_shell_handle_request, q->shell);
}

static void apply_link(const void *link, struct net_client_config *cc)
{
    server_link_apply(link, cc);
}

int quorum_start(const struct broker_config *cfg, const char *cluster_id, struct raft_shell_metadata *metadata,
                 struct controller_brokers *brokers, const struct quorum_auth *auth, struct quorum **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    /* An observer (process.roles=broker) fetches from the voters and serves
     * no controller listener of its own. */
    bool voter = quorum_is_voter(cfg);
    struct net_config net;
    net_config_defaults(&net);
    net.listener_count = 0;
    struct quorum *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    q->sasl_env.config = cfg;
    q->sasl_env.node_id = config_node_id(cfg);
    q->sasl_env.metadata = auth ? auth->store : NULL;
    q->sasl_env.plugins = auth ? auth->plugins : NULL;
    if ((voter && controller_listener(cfg, &net, &q->tls, err, errlen) != 0) ||
        server_link_open(cfg, SERVER_LINK_CONTROLLER, &q->link, err, errlen) != 0) {
        quorum_free(q);
        return -1;
    }
    bool sasl = voter && is_sasl(net.listeners[0].security_protocol);
    if (sasl && check_sasl_listener(q, &net.listeners[0], err, errlen) != 0) {
        quorum_free(q);
        return -1;
    }
    /* The quorum's requests are small and few: one loop, two workers. */
    net.num_network_threads = 1;
    net.num_io_threads = 2;
    net.socket_request_max_bytes = config_get_int(cfg, "socket.request.max.bytes");
    net.sasl_server_max_receive_size = config_get_int(cfg, "sasl.server.max.receive.size");
    /* A client closed for that bound failed to authenticate: audited. */
    net.on_auth_refusal = sasl_audit_net_refusal;
    net.auth_refusal_ctx = &q->sasl_env;
    struct raft_shell_config sc;
    if (shell_config(cfg, cluster_id, &sc, err, errlen) != 0) {
        quorum_free(q);
        return -1;
    }
    sc.client_setup = apply_link;
    sc.client_setup_ctx = &q->link;
    if (sasl) {
        static const int16_t front[] = {API_SASL_HANDSHAKE, API_SASL_AUTHENTICATE};
        for (size_t i = 0; i < sizeof front / sizeof front[0]; i++) {
            const struct api_handler_entry *e = handlers_find(front[i]);
            sc.front_apis[sc.n_front_apis++] = (struct raft_shell_api){front[i], e ? e->min_version : 0,
                                                                       e ? e->max_version : 0};
        }
    }
    if (metadata)
        sc.listener = raft_shell_metadata_listener(metadata);
    if (brokers && voter) {
        sc.other_api_keys[0] = CONTROLLER_API_BROKER_REGISTRATION;
        sc.other_api_keys[1] = CONTROLLER_API_BROKER_HEARTBEAT;
        sc.other_api_keys[2] = CONTROLLER_API_ALLOCATE_PRODUCER_IDS;
        sc.other_api_keys[3] = CONTROLLER_API_ALTER_PARTITION;
        sc.other_api_keys[4] = CONTROLLER_API_ENVELOPE;
        sc.n_other_api_keys = 5;
        sc.other_handler = controller_brokers_handle_request;
        sc.other_ctx = brokers;
    }
    /* The others reach this node at its entry in the voters: that must be
     * the port it listens on. */
    for (int i = 0; i < sc.n_voters; i++) {
        if (sc.voters[i].id == sc.node_id && net.listeners[0].port != 0 && sc.voters[i].port != net.listeners[0].port) {
            snprintf(err, errlen,
                     "controller.quorum.voters gives node %d the port %d, but its controller listener %s is on "
                     "port %d",
                     sc.node_id, sc.voters[i].port, net.listeners[0].name, net.listeners[0].port);
            sc.store_ops->close(sc.store);
            quorum_free(q);
            return -1;
        }
    }
    if (raft_shell_start(&sc, &q->shell, err, errlen) != 0) {
        quorum_free(q);
        return -1;
    }
    if (metadata)
        raft_shell_metadata_attach(metadata, q->shell);
    q->metadata = metadata;
    if (!voter) {
        logger_info("server", "node %d follows the metadata quorum as an observer", sc.node_id);
        *out = q;
        return 0;
    }
    if (net_server_start(&net, sasl ? serve_sasl : raft_shell_handle_request, sasl ? (void *)q : (void *)q->shell,
                         &q->net, err, errlen) != 0) {
        quorum_free(q);
        return -1;
    }
    logger_info("server", "metadata quorum listening on %s://%s:%d", net.listeners[0].name,
                net.listeners[0].host[0] ? net.listeners[0].host : "0.0.0.0", net_server_bound_port(q->net, 0));
    *out = q;
    return 0;
}

void quorum_stop(struct quorum *q)
{
    if (!q || q->stopped)
        return;
    q->stopped = true;
    /* The shell answers what is in flight while the server drains. */
    if (q->net)
        net_server_stop(q->net, 2000);
    /* The snapshot writer and late controller operations find no shell
     * from here, rather than one being freed. */
    if (q->metadata)
        raft_shell_metadata_attach(q->metadata, NULL);
    if (q->shell)
        raft_shell_stop(q->shell);
    q->shell = NULL;
}

void quorum_free(struct quorum *q)
{
    if (!q)
        return;
    quorum_stop(q);
    /* A request the broker sessions or forwarding threads still held past
     * the drain completed into the stopped server (and was dropped there):
     * the server goes only once those threads are stopped, after this. */
    if (q->net)
        net_server_free(q->net);
    tls_listener_free(q->tls);
    server_link_close(&q->link);
    free(q);
}

struct tls_listener *quorum_tls_listener(struct quorum *q)
{
    return q ? q->tls : NULL;
}

struct server_link *quorum_link(struct quorum *q)
{
    return q ? &q->link : NULL;
}

int quorum_reload_tls(struct quorum *q)
{
    if (!q)
        return 0;
    int failures = 0;
    char err[1024];
    if (q->tls && tls_listener_reload(q->tls, err, sizeof err) != 0) {
        logger_error("server", "TLS reload failed, keeping the previous certificates: %s", err);
        failures++;
    }
    if (server_link_reload(&q->link) != 0)
        failures++;
    return failures;
}

/* ---- controller-only process ---- */

static int validate_topic_config(void *ctx, const char *key, const char *value, char *err, size_t errlen)
{
    (void)ctx;
    return topic_config_validate(key, value, err, errlen);
}

/* The active controller runs here: the metadata store's controller over
 * the quorum's log (its loader keeps the image the controller checks
 * against) and the brokers' registrations and heartbeats. */
struct controller_process {
    struct broker_config *config;
    struct raft_shell_metadata *log; /* freed after the quorum stops */
    struct metadata_store *metadata; /* no endpoints: this node is no broker */
    struct controller_brokers *brokers;
    struct controller_forwarding *forwarding; /* Envelope requests from the brokers */
    struct quorum *quorum;
    /* The plugins a broker loads: the forwarded admin requests are
     * authorized, judged by the policies and audited here. */
    struct plugin_host *plugins;
    struct acl_feed *acl_feed; /* NULL: no plugin reads ACLs */
};

int controller_process_start(struct broker_config *cfg, struct controller_process **out, char *err, size_t errlen)
{
    int64_t started = clock_mono_ms();
    struct controller_process *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        config_free(cfg);
        return -1;
    }
    c->config = cfg;
    size_t dir_count = 0;
    const char *const *dirs = config_log_dirs(cfg, &dir_count);
    char cluster_id[64] = "";
    if (storage_require_formatted(cfg, err, errlen) != 0)
        goto fail;
    if (meta_properties_ensure(dirs, dir_count, config_node_id(cfg), config_get_string(cfg, "cluster.id"), cluster_id,
                               err, errlen) != 0)
        goto fail;
    if (plugin_host_start(cfg, config_node_id(cfg), cluster_id, &c->plugins, err, errlen) != 0)
        goto fail;
    const char *dir = config_get_string(cfg, "metadata.log.dir");
    if (!dir || !dir[0])
        dir = dir_count ? dirs[0] : NULL;
    if (!dir) {
        snprintf(err, errlen, "no log directory for the metadata quorum");
        goto fail;
    }
    struct metadata_store_options opts = {
        .dir = dir,
        .node_id = config_node_id(cfg),
        .cluster_id = cluster_id,
        .default_num_partitions = config_get_int(cfg, "num.partitions"),
        .default_replication_factor = (int16_t)config_get_int(cfg, "default.replication.factor"),
        .snapshot_bytes = config_get_long(cfg, "metadata.log.max.record.bytes.between.snapshots"),
        .snapshot_interval_ms = config_get_long(cfg, "metadata.log.max.snapshot.interval.ms"),
        .validate_topic_config = validate_topic_config,
        .unclean_leader_election_enable = config_get_bool(cfg, "unclean.leader.election.enable"),
        .min_insync_replicas = config_get_int(cfg, "min.insync.replicas"),
        .eligible_leader_replicas_enable = config_get_bool(cfg, "eligible.leader.replicas.enable"),
    };
    if (!(c->log = raft_shell_metadata_create())) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    opts.log_ops = &raft_shell_metadata_ops;
    opts.log = c->log;
    char quorum_dir[PATH_MAX];
    if (quorum_metadata_dir(cfg, quorum_dir, sizeof quorum_dir, err, errlen) != 0 ||
        raft_shell_metadata_set_dir(c->log, quorum_dir, err, errlen) != 0)
        goto fail;
    struct controller_rebalance rebalance = quorum_rebalance_settings(cfg);
    if (metadata_store_open(&opts, &c->metadata, err, errlen) != 0 ||
        controller_brokers_start(c->metadata, cluster_id, config_get_int(cfg, "broker.session.timeout.ms"), &rebalance,
                                 &c->brokers, err, errlen) != 0 ||
        controller_forwarding_start(cfg, c->metadata, c->plugins, &c->forwarding, err, errlen) != 0)
        goto fail;
    if (acl_feed_start(c->metadata, c->plugins, &c->acl_feed) != 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    controller_brokers_set_forwarding(c->brokers, controller_forwarding_serve, c->forwarding);
    struct quorum_auth auth = {c->metadata, c->plugins};
    if (quorum_start(cfg, cluster_id, c->log, c->brokers, &auth, &c->quorum, err, errlen) != 0)
        goto fail;
    logger_info("server", "cairnd started as a controller: node %d, cluster %s, %lld ms", config_node_id(cfg),
                cluster_id, (long long)(clock_mono_ms() - started));
    *out = c;
    return 0;
fail:
    controller_process_stop(c);
    return -1;
}

int controller_process_reload_tls(struct controller_process *c)
{
    return c ? quorum_reload_tls(c->quorum) : 0;
}

void controller_process_stop(struct controller_process *c)
{
    if (!c)
        return;
    /* Operations waiting for a commit the stopping quorum will not make
     * return now, so the joins below do not wait them out (10 s). */
    metadata_store_begin_shutdown(c->metadata);
    quorum_stop(c->quorum);
    controller_brokers_stop(c->brokers);
    controller_forwarding_stop(c->forwarding);
    quorum_free(c->quorum);
    acl_feed_stop(c->acl_feed);
    metadata_store_close(c->metadata);
    plugin_host_stop(c->plugins);
    raft_shell_metadata_destroy(c->log);
    config_free(c->config);
    free(c);
}
