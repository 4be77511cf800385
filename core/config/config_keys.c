/* The broker keys Cairn knows: Kafka's names, types, defaults and ranges.
 * Defaults follow Kafka 3.9 except where Cairn's single-node start needs
 * another (process.roles, listeners, log.dir). */
#include "config/config_registry.h"

#include <float.h>
#include <string.h>

#define I32 INT32_MAX
#define I64 INT64_MAX
#define KEY_INT(n, def, lo, hi)                                                                                        \
    .name = (n), .type = CONFIG_TYPE_INT, .default_value = (def), .validator = CONFIG_VALID_RANGE, .min = (lo),        \
    .max = (hi)
#define KEY_SHORT(n, def, lo, hi)                                                                                      \
    .name = (n), .type = CONFIG_TYPE_SHORT, .default_value = (def), .validator = CONFIG_VALID_RANGE, .min = (lo),      \
    .max = (hi)
#define KEY_LONG(n, def, lo, hi)                                                                                       \
    .name = (n), .type = CONFIG_TYPE_LONG, .default_value = (def), .validator = CONFIG_VALID_RANGE, .min = (lo),       \
    .max = (hi)
#define KEY_DOUBLE(n, def, lo, hi)                                                                                     \
    .name = (n), .type = CONFIG_TYPE_DOUBLE, .default_value = (def), .validator = CONFIG_VALID_DOUBLE_RANGE,           \
    .dmin = (lo), .dmax = (hi)
#define KEY_BOOL(n, def) .name = (n), .type = CONFIG_TYPE_BOOLEAN, .default_value = (def)
#define KEY_STRING(n, def) .name = (n), .type = CONFIG_TYPE_STRING, .default_value = (def)
#define KEY_ONE_OF(n, def, ch)                                                                                         \
    .name = (n), .type = CONFIG_TYPE_STRING, .default_value = (def), .validator = CONFIG_VALID_ONE_OF, .choices = (ch)
#define KEY_LIST(n, def) .name = (n), .type = CONFIG_TYPE_LIST, .default_value = (def)
#define KEY_LIST_OF(n, def, ch)                                                                                        \
    .name = (n), .type = CONFIG_TYPE_LIST, .default_value = (def), .validator = CONFIG_VALID_LIST_OF, .choices = (ch)
#define KEY_PASSWORD(n) .name = (n), .type = CONFIG_TYPE_PASSWORD, .default_value = NULL
#define HIGH .importance = CONFIG_IMPORTANCE_HIGH
#define MEDIUM .importance = CONFIG_IMPORTANCE_MEDIUM
#define LOW .importance = CONFIG_IMPORTANCE_LOW
#define IN(g) .group = CONFIG_GROUP_##g
#define DYN CONFIG_FLAG_DYNAMIC
/* Kafka lets it change per broker only, never as the cluster-wide default. */
#define PER_BROKER (CONFIG_FLAG_DYNAMIC | CONFIG_FLAG_PER_BROKER)
/* Cairn applies a change without restart (Kafka classifies it dynamic too). */
#define RT CONFIG_FLAG_RUNTIME
#define LATER CONFIG_FLAG_UNUSED
#define PROTOCOLS "PLAINTEXT,SSL,SASL_PLAINTEXT,SASL_SSL"

static const struct config_key_def broker_keys[] = {
    /* server */
    {KEY_INT("node.id", "-1", -1, I32), HIGH, IN(SERVER),
     .doc = "Id of this node in the cluster; -1 means 1 when running as a single node."},
    {KEY_INT("broker.id", "-1", -1, I32), HIGH, IN(SERVER),
     .doc = "Older name for node.id, used when node.id is not set; both set must agree."},
    {KEY_LIST_OF("process.roles", "broker,controller", "broker,controller"), HIGH, IN(SERVER),
     .doc = "Roles this node plays: broker, controller, or both (the single-node default). With "
            "controller.quorum.voters set, controller alone runs only the metadata quorum (no client listener)."},
    {KEY_LIST("controller.quorum.voters", ""), HIGH, IN(SERVER),
     .doc = "Metadata quorum voters as id@host:port,...; empty means this node is the only voter."},
    {KEY_LIST("controller.quorum.bootstrap.servers", ""), HIGH, IN(SERVER),
     .doc = "host:port list of controller listeners a broker (process.roles=broker) asks who leads the metadata "
            "quorum, instead of controller.quorum.voters (set one of the two); the leader's endpoint comes back "
            "in the Fetch answer (KIP-853). Controllers still need controller.quorum.voters."},
    {KEY_LIST("controller.listener.names", NULL), HIGH, IN(SERVER),
     .doc = "Listener names used by the controller role; the first one carries the quorum's requests (Vote, "
            "BeginQuorumEpoch, EndQuorumEpoch, Fetch, DescribeQuorum). Required with the controller role when "
            "controller.quorum.voters is set."},
    {KEY_INT("controller.quorum.election.timeout.ms", "1000", 1, I32), HIGH, IN(SERVER),
     .doc = "Time without a leader before a voter stands for election (randomized up to twice this)."},
    {KEY_INT("controller.quorum.fetch.timeout.ms", "2000", 1, I32), HIGH, IN(SERVER),
     .doc = "Time without a successful fetch from the leader before a follower stands for election."},
    {KEY_INT("controller.quorum.election.backoff.max.ms", "1000", 1, I32), HIGH, IN(SERVER),
     .doc = "Longest randomized wait before a candidate that lost an election stands again."},
    {KEY_INT("controller.quorum.request.timeout.ms", "2000", 1, I32), MEDIUM, IN(SERVER),
     .doc = "Time a quorum request (Vote, Fetch, ...) to another controller waits for its answer."},
    {KEY_INT("controller.quorum.retry.backoff.ms", "20", 0, I32), LOW, IN(SERVER),
     .doc = "Wait before reconnecting to a controller after a failed connection, and before a quorum Fetch "
            "that failed is sent again."},
    {KEY_INT("broker.heartbeat.interval.ms", "2000", 1, I32), MEDIUM, IN(SERVER),
     .doc = "Time between a broker's heartbeats to the active controller (with controller.quorum.voters set)."},
    {KEY_INT("broker.session.timeout.ms", "9000", 1, I32), MEDIUM, IN(SERVER),
     .doc = "Time without a heartbeat after which the active controller fences a broker."},
    {KEY_STRING("broker.rack", NULL), MEDIUM, IN(SERVER),
     .doc = "Rack of the broker, recorded in its registration and listed in Metadata and DescribeCluster. When "
            "every live broker has one, new partitions put their replicas on distinct racks while racks remain."},
    {KEY_STRING("cluster.id", NULL), MEDIUM, IN(SERVER),
     .doc = "Expected cluster id (22-char base64url); generated on first start when not set. With "
            "controller.quorum.voters the id comes from the storage written by cairnd format (then, if set, it "
            "must match)."},
    {KEY_STRING("metadata.log.dir", NULL), HIGH, IN(SERVER),
     .doc = "Directory of the metadata log (the controller quorum's log and quorum-state); by default the first log "
            "directory."},
    {KEY_LONG("metadata.log.max.record.bytes.between.snapshots", "20971520", 1, I64), HIGH, IN(SERVER),
     .doc = "Bytes of new metadata records after which the loader writes a metadata snapshot; a start loads "
            "the newest snapshot and replays only the records after it."},
    {KEY_LONG("metadata.log.max.snapshot.interval.ms", "3600000", 0, I64), HIGH, IN(SERVER),
     .doc = "Milliseconds after the last metadata snapshot after which records committed since are snapshotted, "
            "whatever their size and with no further commit needed (KIP-876; 0: only "
            "metadata.log.max.record.bytes.between.snapshots)."},
    {KEY_LONG("metadata.max.retention.bytes", "104857600", -1, I64), HIGH, IN(SERVER),
     .doc = "Bytes of metadata log past which the log is cleaned behind the newest metadata snapshot (its start "
            "moves up to the snapshot's end; replicas further behind download the snapshot); -1: no limit."},
    {KEY_LONG("metadata.max.retention.ms", "604800000", -1, I64), HIGH, IN(SERVER),
     .doc = "Age of the oldest metadata log batch past which the log is cleaned behind the newest metadata "
            "snapshot; -1: no limit."},
    {KEY_INT("metadata.log.segment.bytes", "1073741824", 8388608, I32), HIGH, IN(SERVER),
     .doc = "Size at which the metadata log rolls a new segment; cleaning behind a snapshot deletes whole "
            "segments only."},
    {KEY_LONG("metadata.log.segment.ms", "604800000", 1, I64), HIGH, IN(SERVER),
     .doc = "Age after which the metadata log rolls a new segment at its next append."},
    {KEY_LONG("internal.metadata.log.segment.bytes", "0", 0, I32), LOW, IN(SERVER),
     .doc = "Internal, for tests: when above 0, the metadata log's segment size in place of "
            "metadata.log.segment.bytes, without its 8 MiB minimum (as Kafka's internal override)."},
    {KEY_BOOL("auto.create.topics.enable", "true"), HIGH, IN(SERVER),
     .doc = "Create a topic when a client asks for metadata of an unknown one."},
    {KEY_BOOL("delete.topic.enable", "true"), HIGH, IN(SERVER), .doc = "Allow DeleteTopics requests."},
    {KEY_INT("num.partitions", "1", 1, I32), MEDIUM, IN(SERVER), .doc = "Partitions of an auto-created topic."},
    {KEY_INT("default.replication.factor", "1", 1, I32), MEDIUM, IN(SERVER),
     .doc = "Replication factor of an auto-created topic."},
    {KEY_INT("background.threads", "10", 1, I32), HIGH, IN(SERVER), .flags = DYN | LATER,
     .doc = "Threads for background work such as segment deletion."},
    {KEY_INT("fetch.max.bytes", "57671680", 1024, I32), MEDIUM, IN(SERVER),
     .doc = "Upper bound on the bytes returned by one Fetch request."},
    {KEY_INT("max.incremental.fetch.session.cache.slots", "1000", 0, I32), MEDIUM, IN(SERVER),
     .doc = "Incremental fetch sessions kept by the broker."},
    {KEY_LONG("max.incremental.fetch.session.cache.bytes", "67108864", 1048576, I64), MEDIUM, IN(SERVER),
     .doc = "Cairn's own (Kafka bounds the cache by slots only): memory all incremental fetch sessions together may "
            "hold, about 70-110 bytes per cached partition. A new session that does not fit evicts stale or less "
            "valuable ones as Kafka's cache does for slots, or is not cached (the client then fetches in full, "
            "session id 0); a session that outgrows it is closed the same way."},
    {KEY_BOOL("auto.leader.rebalance.enable", "true"), HIGH, IN(SERVER),
     .doc = "The active controller moves leadership back to preferred replicas (the first of each partition's "
            "replicas) every leader.imbalance.check.interval.seconds, for brokers whose imbalance is above "
            "leader.imbalance.per.broker.percentage."},
    {KEY_LONG("leader.imbalance.check.interval.seconds", "300", 1, I64), HIGH, IN(SERVER),
     .doc = "How often the active controller checks the preferred-leader imbalance."},
    {KEY_INT("leader.imbalance.per.broker.percentage", "10", 0, I32), HIGH, IN(SERVER),
     .doc = "Share (percent) of the partitions a broker is preferred replica of but does not lead above which "
            "the automatic rebalance moves those leaderships back to it."},

    /* network */
    {KEY_STRING("listeners", "PLAINTEXT://localhost:9092"), HIGH, IN(NETWORK), .flags = PER_BROKER,
     .doc = "Addresses to listen on as NAME://host:port,...; an empty host binds every interface."},
    {KEY_STRING("advertised.listeners", NULL), HIGH, IN(NETWORK), .flags = PER_BROKER,
     .doc = "Addresses given to clients in metadata; defaults to listeners."},
    {KEY_STRING("listener.security.protocol.map",
                "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"),
     LOW, IN(NETWORK), .flags = PER_BROKER,
     .doc = "Security protocol of each listener name, as NAME:PROTOCOL,...; every listener name needs an entry. "
            "All four protocols are served; SSL and SASL_SSL listeners need a keystore (ssl.*)."},
    {KEY_STRING("inter.broker.listener.name", NULL), MEDIUM, IN(NETWORK),
     .doc = "Listener brokers use to reach each other (replica fetchers, transaction markers), with its protocol "
            "from listener.security.protocol.map: PLAINTEXT, or SSL with the ssl.* keys "
            "(listener.name.<name>.ssl.* first)."},
    {KEY_ONE_OF("security.inter.broker.protocol", "PLAINTEXT", PROTOCOLS), MEDIUM, IN(NETWORK),
     .doc = "Protocol between brokers when inter.broker.listener.name is not set: the listener of that name is "
            "used."},
    {KEY_INT("num.network.threads", "3", 1, I32), HIGH, IN(NETWORK), .flags = DYN,
     .doc = "Network threads (one event loop each) reading requests and writing responses."},
    {KEY_INT("num.io.threads", "8", 1, I32), HIGH, IN(NETWORK), .flags = DYN,
     .doc = "Request handler threads, which may do disk I/O."},
    {KEY_INT("queued.max.requests", "500", 1, I32), HIGH, IN(NETWORK),
     .doc = "Requests queued for handler threads before network threads stop reading."},
    {KEY_LONG("queued.max.request.bytes", "-1", -1, I64), MEDIUM, IN(NETWORK),
     .doc = "Bytes of requests read and not yet answered at which no connection starts reading another request "
            "until the total drops; -1 means no limit."},
    {KEY_INT("socket.request.max.bytes", "104857600", 1, I32), HIGH, IN(NETWORK),
     .doc = "Largest request frame accepted; larger frames close the connection."},
    {KEY_INT("socket.send.buffer.bytes", "102400", -1, I32), HIGH, IN(NETWORK),
     .doc = "SO_SNDBUF of client sockets; -1 keeps the OS default."},
    {KEY_INT("socket.receive.buffer.bytes", "102400", -1, I32), HIGH, IN(NETWORK),
     .doc = "SO_RCVBUF of client sockets; -1 keeps the OS default."},
    {KEY_INT("socket.listen.backlog.size", "50", 1, I32), MEDIUM, IN(NETWORK),
     .doc = "Backlog of pending connections on each listening socket (the kernel may cap it at net.core.somaxconn)."},
    {KEY_INT("max.connection.creation.rate", "2147483647", 0, I32), MEDIUM, IN(NETWORK),
     .doc = "New connections per second across all listeners; listener.name.<listener>.max.connection.creation.rate "
            "sets one listener's own rate. Beyond either, the listener stops accepting until the rate allows one more "
            "(connections wait in the listen backlog)."},
    {KEY_LONG("connections.max.idle.ms", "600000", -1, I64), MEDIUM, IN(NETWORK),
     .doc = "Close connections idle this long (no byte read or written); the same bound caps the time to receive "
            "one request from its first byte and to write one response, so trickling senders and non-readers are "
            "closed too; -1 disables."},
    {KEY_INT("max.connections", "2147483647", 0, I32), MEDIUM, IN(NETWORK), .flags = DYN | RT,
     .doc = "Connections open at once across all listeners; a new one beyond it is closed at accept; "
            "changeable at runtime."},
    {KEY_INT("max.connections.per.ip", "2147483647", 0, I32), MEDIUM, IN(NETWORK), .flags = DYN | RT,
     .doc =
         "Connections open at once from one address; a new one beyond it is closed at accept; changeable at runtime."},
    {KEY_STRING("max.connections.per.ip.overrides", ""), MEDIUM, IN(NETWORK), .flags = DYN,
     .doc = "Per-address exceptions to max.connections.per.ip, as host:count,... (a host name counts for each "
            "address it resolves to at start)."},
    {KEY_LIST("sasl.enabled.mechanisms", "GSSAPI"), MEDIUM, IN(NETWORK), .flags = PER_BROKER,
     .doc = "SASL mechanisms offered to clients of SASL listeners (SCRAM-SHA-256, SCRAM-SHA-512, and those of "
            "authentication plugins); listener.name.<listener>.sasl.enabled.mechanisms overrides it per listener. "
            "GSSAPI, Kafka's default, is offered only by a plugin that serves it."},
    {KEY_INT("connection.failed.authentication.delay.ms", "100", 0, I32), LOW, IN(NETWORK),
     .doc = "A failed SASL authentication's response, and the close after it, wait this long, so a client "
            "guessing passwords cannot reconnect at once."},
    {KEY_LONG("connections.max.reauth.ms", "0", 0, I64), MEDIUM, IN(NETWORK),
     .doc = "KIP-368: lifetime of an authenticated SASL session, sent to the client, which must re-authenticate "
            "before it ends; the broker closes a connection that does not. 0 disables."},
    {KEY_INT("sasl.server.max.receive.size", "524288", 1, I32), MEDIUM, IN(NETWORK),
     .doc = "Largest frame a connection on a SASL listener may send before it has authenticated, or while it "
            "re-authenticates (SaslHandshake, SaslAuthenticate, ApiVersions, bare tokens); a larger announced size "
            "closes the connection before any of the frame is read. socket.request.max.bytes applies once "
            "authenticated."},
    /* TLS: PEM only (KIP-651); each key may be set per listener as
     * listener.name.<name>.ssl.* */
    {KEY_ONE_OF("ssl.keystore.type", "PEM", "PEM"), MEDIUM, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "Format of the keystore; only PEM (Kafka defaults to JKS, a Java format Cairn cannot read)."},
    {KEY_STRING("ssl.keystore.location", NULL), HIGH, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "PEM file with this broker's certificate chain (leaf first) and its private key."},
    {KEY_PASSWORD("ssl.keystore.certificate.chain"), HIGH, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "This broker's certificate chain as inline PEM, instead of ssl.keystore.location."},
    {KEY_PASSWORD("ssl.keystore.key"), HIGH, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "This broker's private key as inline PEM, with ssl.keystore.certificate.chain."},
    {KEY_PASSWORD("ssl.keystore.password"), HIGH, IN(NETWORK), .flags = LATER | PER_BROKER,
     .doc = "Password of a JKS/PKCS12 keystore file; unused with PEM."},
    {KEY_PASSWORD("ssl.key.password"), HIGH, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "Password of an encrypted PEM private key."},
    {KEY_ONE_OF("ssl.truststore.type", "PEM", "PEM"), MEDIUM, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "Format of the truststore; only PEM."},
    {KEY_STRING("ssl.truststore.location", NULL), HIGH, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "PEM file of CA certificates trusted for client certificates, and for the servers of the broker's "
            "own SSL links."},
    {KEY_PASSWORD("ssl.truststore.certificates"), HIGH, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "Trusted CA certificates as inline PEM, instead of ssl.truststore.location."},
    {KEY_PASSWORD("ssl.truststore.password"), HIGH, IN(NETWORK), .flags = LATER | PER_BROKER,
     .doc = "Password of a JKS/PKCS12 truststore file; unused with PEM."},
    {KEY_ONE_OF("ssl.client.auth", "none", "required,requested,none"), MEDIUM, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "Whether TLS clients must, may or need not present a certificate."},
    {KEY_STRING("ssl.crl.location", NULL), MEDIUM, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "Cairn's own key (Kafka leaves revocation to JVM properties): PEM file of one or more certificate "
            "revocation lists, one from every CA in the chains of client certificates. When set, an SSL listener "
            "checks every certificate of a client's chain against them: a revoked one, or one whose issuer has no "
            "current CRL here, is refused in the handshake. The node's own TLS links to other nodes (controller "
            "quorum, registration, forwarding, replica fetchers, transaction markers) check the servers they "
            "connect to against the same CRLs and refuse a revoked one (logged). Re-read on SIGHUP with the "
            "certificates. Needs ssl.truststore.location or ssl.truststore.certificates."},
    {KEY_LIST("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"), MEDIUM, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "TLS versions accepted from clients."},
    {KEY_LIST("ssl.cipher.suites", ""), LOW, IN(NETWORK), .flags = PER_BROKER | RT,
     .doc = "Cipher suites (IANA or OpenSSL names); empty keeps OpenSSL's defaults."},
    {KEY_STRING("ssl.endpoint.identification.algorithm", "https"), LOW, IN(NETWORK), .flags = PER_BROKER,
     .doc = "On the broker's own TLS links (controller quorum, registration, forwarding, replica fetchers, "
            "transaction markers): https checks that the server's certificate names the host connected to (a DNS "
            "or IP SAN); empty turns that check off (the certificate chain is still verified)."},
    {KEY_STRING("sasl.mechanism.controller.protocol", "GSSAPI"), MEDIUM, IN(NETWORK),
     .doc = "SASL mechanism of the controller links (quorum requests between voters, broker registration and "
            "heartbeats, forwarded admin requests) when the controller listener maps to SASL_PLAINTEXT or SASL_SSL: "
            "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI, with the node's credentials in "
            "listener.name.<controller listener>.<mechanism>.sasl.jaas.config (names in lower case; for OAUTHBEARER "
            "the token endpoint's clientId, clientSecret and scope, see sasl.oauthbearer.token.endpoint.url; for "
            "GSSAPI Krb5LoginModule's keyTab and principal, see sasl.kerberos.service.name); the controller listener "
            "must serve it (listener.name.<l>.sasl.enabled.mechanisms)."},
    {KEY_STRING("sasl.mechanism.inter.broker.protocol", "GSSAPI"), MEDIUM, IN(NETWORK),
     .doc = "SASL mechanism of the inter-broker link (replica fetchers, transaction markers) when its listener "
            "maps to SASL_PLAINTEXT or SASL_SSL: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI, with the "
            "node's credentials in listener.name.<listener>.<mechanism>.sasl.jaas.config (names in lower case; for "
            "OAUTHBEARER the token endpoint's clientId, clientSecret and scope, see "
            "sasl.oauthbearer.token.endpoint.url; for GSSAPI Krb5LoginModule's keyTab and principal, see "
            "sasl.kerberos.service.name)."},
    {KEY_STRING("sasl.kerberos.service.name", NULL), MEDIUM, IN(NETWORK),
     .doc = "GSSAPI on the node's own links: the first part of the service principal asked for, "
            "<name>/<host dialled>@REALM (serviceName in the link's Krb5LoginModule entry wins). The link's keyTab "
            "becomes krb5's client keytab (KRB5_CLIENT_KTNAME), one per process; krb5 takes the principal from it "
            "(or from the ticket cache)."},
    {KEY_STRING("sasl.oauthbearer.token.endpoint.url", NULL), MEDIUM, IN(NETWORK),
     .doc = "OAUTHBEARER on the node's own links (sasl.mechanism.controller.protocol or "
            "sasl.mechanism.inter.broker.protocol): the identity provider's OAuth 2 token endpoint (http or https). "
            "The node asks it for a token with the client-credentials grant, as clientId and clientSecret (HTTP "
            "Basic) with the optional scope of listener.name.<listener>.oauthbearer.sasl.jaas.config "
            "(OAuthBearerLoginModule), and fetches a new one before it expires (sasl.login.refresh.*)."},
    {KEY_DOUBLE("sasl.login.refresh.window.factor", "0.8", 0.5, 1.0), LOW, IN(NETWORK),
     .doc = "OAUTHBEARER links: a new token is fetched once this share of the current one's lifetime has passed "
            "(plus the jitter)."},
    {KEY_DOUBLE("sasl.login.refresh.window.jitter", "0.05", 0.0, 0.25), LOW, IN(NETWORK),
     .doc = "OAUTHBEARER links: up to this share of the token's lifetime is added at random to the refresh time."},
    {KEY_SHORT("sasl.login.refresh.min.period.seconds", "60", 0, 900), LOW, IN(NETWORK),
     .doc = "OAUTHBEARER links: least time between a token's fetch and the next; ignored, with the buffer, when "
            "both add up to more than the token's lifetime."},
    {KEY_SHORT("sasl.login.refresh.buffer.seconds", "300", 0, 3600), LOW, IN(NETWORK),
     .doc = "OAUTHBEARER links: a new token is fetched at least this long before the current one expires "
            "(within sasl.login.refresh.min.period.seconds)."},
    {KEY_INT("sasl.login.connect.timeout.ms", NULL, 1, I32), LOW, IN(NETWORK),
     .doc = "OAUTHBEARER links: connection timeout of a token request; unset: 10000 (Kafka waits without end)."},
    {KEY_INT("sasl.login.read.timeout.ms", NULL, 1, I32), LOW, IN(NETWORK),
     .doc = "OAUTHBEARER links: time a token request may take once connected; unset: 10000 (Kafka waits without "
            "end)."},
    {KEY_LONG("sasl.login.retry.backoff.ms", "100", 1, I64), LOW, IN(NETWORK),
     .doc = "OAUTHBEARER links: wait after a failed token request; it doubles with each failure in a row up to "
            "sasl.login.retry.backoff.max.ms."},
    {KEY_LONG("sasl.login.retry.backoff.max.ms", "10000", 1, I64), LOW, IN(NETWORK),
     .doc = "OAUTHBEARER links: longest wait between failed token requests."},
    {KEY_LONG("ssl.handshake.timeout.ms", "10000", 1, I64), LOW, IN(NETWORK),
     .doc = "Cairn's own: a TLS client that has not finished its handshake this long after connecting is "
            "closed, however slowly it keeps sending."},

    /* log */
    {KEY_STRING("log.dirs", NULL), HIGH, IN(LOG), .doc = "Comma-separated data directories; overrides log.dir."},
    {KEY_STRING("log.dir", "./data"), HIGH, IN(LOG), .doc = "Data directory used when log.dirs is not set."},
    {KEY_INT("log.segment.bytes", "1073741824", 14, I32), HIGH, IN(LOG), .flags = DYN | RT,
     .doc = "Size at which a partition's active segment is rolled."},
    {KEY_LONG("log.roll.ms", NULL, 1, I64), HIGH, IN(LOG), .flags = DYN | RT,
     .doc = "Age at which a segment is rolled; wins over log.roll.hours."},
    {KEY_INT("log.roll.hours", "168", 1, I32), HIGH, IN(LOG), .flags = DYN | RT,
     .doc = "Age in hours at which a segment is rolled."},
    {KEY_LONG("log.roll.jitter.ms", NULL, 0, I64), HIGH, IN(LOG), .flags = DYN | LATER,
     .doc = "Random jitter subtracted from the roll time; wins over log.roll.jitter.hours."},
    {KEY_INT("log.roll.jitter.hours", "0", 0, I32), HIGH, IN(LOG), .flags = DYN | LATER,
     .doc = "Random jitter in hours subtracted from the roll time."},
    {KEY_LONG("log.retention.ms", NULL, -1, I64), HIGH, IN(LOG), .flags = DYN | RT,
     .doc = "Age after which segments are deleted; -1 keeps them. Wins over minutes and hours."},
    {KEY_INT("log.retention.minutes", NULL, -1, I32), HIGH, IN(LOG), .flags = DYN | RT,
     .doc = "Retention in minutes; wins over log.retention.hours."},
    {KEY_INT("log.retention.hours", "168", -1, I32), HIGH, IN(LOG), .flags = DYN | RT, .doc = "Retention in hours."},
    {KEY_LONG("log.retention.bytes", "-1", -1, I64), HIGH, IN(LOG), .flags = DYN | RT,
     .doc = "Size per partition beyond which old segments are deleted; -1 means no limit."},
    {KEY_LONG("log.retention.check.interval.ms", "300000", 1, I64), MEDIUM, IN(LOG),
     .doc = "How often retention is checked."},
    {KEY_LONG("log.local.retention.ms", "-2", -2, I64), MEDIUM, IN(LOG), .flags = DYN,
     .doc = "Tiered topics: age after which a local segment whose remote copy is confirmed is deleted; "
            "-2 means log.retention.ms."},
    {KEY_LONG("log.local.retention.bytes", "-2", -2, I64), MEDIUM, IN(LOG), .flags = DYN,
     .doc = "Tiered topics: local size beyond which copied segments are deleted; -2 means log.retention.bytes."},
    {KEY_BOOL("remote.log.storage.system.enable", "false"), MEDIUM, IN(LOG),
     .doc = "Run the remote log manager: topics with remote.storage.enable move closed segments to the "
            "remote storage plugin."},
    {KEY_LONG("remote.log.manager.task.interval.ms", "30000", 1, I64), LOW, IN(LOG),
     .doc = "How often the remote log manager looks for segments to copy and remote segments to delete."},
    {KEY_LONG("remote.log.manager.task.retry.backoff.ms", "500", 1, I64), LOW, IN(LOG),
     .doc = "After a remote storage call fails as unavailable (an outage, a throttled or timed-out request), the "
            "remote log manager makes no further remote calls for this long, then tries one; it doubles with each "
            "failure in a row up to remote.log.manager.task.retry.backoff.max.ms."},
    {KEY_LONG("remote.log.manager.task.retry.backoff.max.ms", "30000", 1, I64), LOW, IN(LOG),
     .doc = "Longest wait between the remote log manager's attempts while the remote store stays unavailable."},
    {KEY_DOUBLE("remote.log.manager.task.retry.jitter", "0.2", 0.0, 0.5), LOW, IN(LOG),
     .doc = "Each remote log manager retry wait is multiplied by a random factor within 1 +/- this fraction "
            "(capped at remote.log.manager.task.retry.backoff.max.ms)."},
    {KEY_INT("remote.log.manager.thread.pool.size", "10", 1, 256), LOW, IN(LOG),
     .doc = "Threads that copy segments to and delete them from the remote store."},
    {KEY_INT("remote.log.reader.threads", "10", 1, 256), LOW, IN(LOG),
     .doc = "Threads that read remote segments for fetches."},
    {KEY_INT("remote.log.read.ahead.segments", "1", 0, 16), LOW, IN(LOG),
     .doc = "Cairn's own: how far a fetch from remote data downloads ahead, in segments: the chunks (see "
            "remote.log.chunk.size.bytes) after the one it reads, in the same segment and then the next ones, as "
            "many as this many times the chunks of the segment being read (per partition, at most 4 downloads "
            "in flight, only while they fit in the cache with the chunk being read). 0 disables read-ahead."},
    {KEY_LONG("remote.log.chunk.size.bytes", "4194304", 4096, I64), LOW, IN(LOG),
     .doc = "Cairn's own: remote segments are downloaded and cached in chunks of about this many bytes (each "
            "starts at the first indexed batch at or after a multiple of it, so it holds whole batches); a fetch "
            "downloads only the chunk holding its offset, not the whole segment."},
    {KEY_INT("remote.fetch.max.wait.ms", "500", 1, I32), LOW, IN(LOG),
     .doc = "Longest a fetch waits for remote data before answering without it."},
    {KEY_LONG("remote.log.manager.copy.max.bytes.per.second", "9223372036854775807", 1, I64), MEDIUM, IN(LOG),
     .flags = DYN | RT,
     .doc = "Bytes per second the broker copies to remote storage, all partitions together, measured over "
            "remote.log.manager.copy.quota.window.num windows; while it is exceeded the next segment copy waits "
            "(producers and fetches are never held). Changeable at runtime."},
    {KEY_INT("remote.log.manager.copy.quota.window.num", "11", 1, 128), LOW, IN(LOG),
     .doc = "Samples kept to measure the remote copy rate."},
    {KEY_INT("remote.log.manager.copy.quota.window.size.seconds", "1", 1, I32), LOW, IN(LOG),
     .doc = "Length of each sample of the remote copy rate."},
    {KEY_LONG("remote.log.manager.fetch.max.bytes.per.second", "9223372036854775807", 1, I64), MEDIUM, IN(LOG),
     .flags = DYN | RT,
     .doc = "Bytes per second the broker reads from remote storage for fetches, measured over "
            "remote.log.manager.fetch.quota.window.num windows; while it is exceeded a fetch that needs a remote "
            "segment not yet cached gets no data for that partition this round and asks again. Changeable at "
            "runtime."},
    {KEY_INT("remote.log.manager.fetch.quota.window.num", "11", 1, 128), LOW, IN(LOG),
     .doc = "Samples kept to measure the remote fetch rate."},
    {KEY_INT("remote.log.manager.fetch.quota.window.size.seconds", "1", 1, I32), LOW, IN(LOG),
     .doc = "Length of each sample of the remote fetch rate."},
    {KEY_LONG("remote.log.index.file.cache.total.size.bytes", "1073741824", 1, I64), LOW, IN(LOG),
     .doc = "Space for the remote segment chunks (on disk) and offset indexes (in memory) fetched to serve reads "
            "(least recently used go first)."},
    {KEY_INT("log.index.interval.bytes", "4096", 0, I32), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "Bytes appended between two entries of the sparse offset index."},
    {KEY_INT("log.index.size.max.bytes", "10485760", 4, I32), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "Largest offset or time index file; a full index rolls the segment."},
    {KEY_LONG("log.flush.interval.messages", "9223372036854775807", 1, I64), HIGH, IN(LOG), .flags = DYN | RT,
     .doc = "Messages appended to a partition before it is fsynced."},
    {KEY_LONG("log.flush.interval.ms", NULL, 0, I64), HIGH, IN(LOG), .flags = DYN | RT,
     .doc = "Longest time appended data stays unsynced; null uses log.flush.scheduler.interval.ms."},
    {KEY_LONG("log.flush.scheduler.interval.ms", "9223372036854775807", 0, I64), HIGH, IN(LOG),
     .doc = "How often partitions are checked for a time-based flush."},
    {KEY_INT("log.flush.offset.checkpoint.interval.ms", "60000", 0, I32), HIGH, IN(LOG),
     .doc = "How often the recovery-point checkpoint is written."},
    {KEY_INT("log.flush.start.offset.checkpoint.interval.ms", "60000", 0, I32), HIGH, IN(LOG), .flags = LATER,
     .doc = "How often the log-start-offset checkpoint is written."},
    {KEY_INT("num.recovery.threads.per.data.dir", "1", 1, I32), HIGH, IN(LOG), .flags = DYN,
     .doc = "Threads per data directory opening and recovering logs at start-up; read at start-up only."},
    {KEY_INT("message.max.bytes", "1048588", 0, I32), HIGH, IN(LOG), .flags = DYN | RT,
     .doc = "Largest record batch accepted, after compression."},
    {KEY_ONE_OF("compression.type", "producer", "uncompressed,zstd,lz4,snappy,gzip,producer"), HIGH, IN(LOG),
     .flags = DYN | LATER, .doc = "Compression of stored batches; producer keeps what the producer sent."},
    {KEY_ONE_OF("log.message.timestamp.type", "CreateTime", "CreateTime,LogAppendTime"), MEDIUM, IN(LOG),
     .flags = DYN | RT, .doc = "Whether record timestamps are the producer's or the broker's append time."},
    {KEY_LONG("log.message.timestamp.difference.max.ms", "9223372036854775807", 0, I64), MEDIUM, IN(LOG),
     .flags = DYN | RT, .doc = "Largest accepted gap between a CreateTime timestamp and the broker clock."},
    {KEY_LONG("log.message.timestamp.before.max.ms", "9223372036854775807", 0, I64), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "How far in the past a CreateTime timestamp may be."},
    {KEY_LONG("log.message.timestamp.after.max.ms", "9223372036854775807", 0, I64), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "How far in the future a CreateTime timestamp may be."},
    {KEY_BOOL("log.message.downconversion.enable", "true"), LOW, IN(LOG), .flags = DYN | LATER,
     .doc = "Convert batches to older formats for old consumers."},
    {KEY_STRING("log.message.format.version", "3.0-IV1"), MEDIUM, IN(LOG),
     .doc = "Deprecated by Kafka; accepted for old tools. Cairn always writes message format v2."},
    {KEY_LIST_OF("log.cleanup.policy", "delete", "compact,delete"), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "Default cleanup of old segments: delete, compact, or both."},
    {KEY_BOOL("log.cleaner.enable", "true"), MEDIUM, IN(LOG), .doc = "Run the log cleaner for compacted topics."},
    {KEY_INT("log.cleaner.threads", "1", 0, I32), MEDIUM, IN(LOG), .flags = DYN,
     .doc = "Threads compacting logs, each taking the dirtiest log no other is cleaning; 0 runs "
            "none. Read at start-up only."},
    {KEY_DOUBLE("log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", 1.0, DBL_MAX), MEDIUM, IN(LOG),
     .flags = DYN,
     .doc = "Bytes per second all cleaner threads together read and write at most; the default "
            "throttles nothing."},
    {KEY_LONG("log.cleaner.backoff.ms", "15000", 0, I64), MEDIUM, IN(LOG), .flags = DYN,
     .doc = "Sleep of the cleaner when nothing needs cleaning."},
    {KEY_LONG("log.cleaner.dedupe.buffer.size", "134217728", 0, I64), MEDIUM, IN(LOG), .flags = DYN,
     .doc = "Memory for the cleaners' key-to-offset maps, split evenly between the cleaner threads; "
            "a pass stops where its map fills."},
    {KEY_DOUBLE("log.cleaner.io.buffer.load.factor", "0.9", 0.0, 1.0), MEDIUM, IN(LOG), .flags = DYN,
     .doc = "Fill of the dedupe map at which it counts as full."},
    {KEY_LONG("log.cleaner.delete.retention.ms", "86400000", 0, I64), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "How long tombstones stay in compacted topics."},
    {KEY_LONG("log.cleaner.min.compaction.lag.ms", "0", 0, I64), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "Least age of a record before it may be compacted."},
    {KEY_LONG("log.cleaner.max.compaction.lag.ms", "9223372036854775807", 1, I64), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "Greatest age of a record before its segment must be compacted."},
    {KEY_DOUBLE("log.cleaner.min.cleanable.ratio", "0.5", 0.0, 1.0), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "Dirty fraction of a log that makes it eligible for cleaning."},
    {KEY_LONG("log.segment.delete.delay.ms", "60000", 0, I64), HIGH, IN(LOG), .flags = DYN | LATER,
     .doc = "Wait between removing a segment from the log and deleting its files."},
    {KEY_BOOL("log.preallocate", "false"), MEDIUM, IN(LOG), .flags = DYN | RT,
     .doc = "Preallocate segment files when they are created."},

    /* replication */
    {KEY_INT("min.insync.replicas", "1", 1, I32), HIGH, IN(REPLICATION), .flags = DYN,
     .doc = "In-sync replicas needed for an acks=all write to succeed."},
    {KEY_BOOL("unclean.leader.election.enable", "false"), HIGH, IN(REPLICATION), .flags = DYN | RT,
     .doc = "Allow an out-of-sync replica to become leader, losing data; the active controller reads it (topic, "
            "then its own dynamic value, the cluster default, its config file) when a partition has no live "
            "in-sync replica."},
    {KEY_BOOL("eligible.leader.replicas.enable", "false"), MEDIUM, IN(REPLICATION),
     .doc = "Eligible Leader Replicas (KIP-966): the active controller finalizes the feature "
            "eligible.leader.replicas.version at 1 (true) or 0 (false) in the metadata log when a broker registers. "
            "At 1, replicas leaving an ISR below min.insync.replicas stay eligible to lead, a partition whose ISR "
            "empties elects one of them cleanly, and a leader does not advance the high watermark below "
            "min.insync.replicas. Set it alike on every controller."},
    {KEY_LONG("replica.lag.time.max.ms", "30000", 1, I64), HIGH, IN(REPLICATION),
     .doc = "A follower that has not caught up for this long leaves the ISR."},
    {KEY_INT("num.replica.fetchers", "1", 1, I32), HIGH, IN(REPLICATION), .flags = DYN | RT,
     .doc = "Fetcher threads per source broker; a change at runtime moves partitions between them."},
    {KEY_INT("replica.fetch.max.bytes", "1048576", 0, I32), MEDIUM, IN(REPLICATION),
     .doc = "Bytes per partition a follower asks for."},
    {KEY_INT("replica.fetch.response.max.bytes", "10485760", 0, I32), MEDIUM, IN(REPLICATION),
     .doc = "Bytes a follower asks for in one fetch response."},
    {KEY_INT("replica.fetch.wait.max.ms", "500", 0, I32), MEDIUM, IN(REPLICATION),
     .doc = "Longest wait of a follower fetch."},
    {KEY_INT("replica.fetch.min.bytes", "1", 1, I32), MEDIUM, IN(REPLICATION),
     .doc = "Bytes a follower fetch waits for."},
    {KEY_INT("replica.fetch.backoff.ms", "1000", 0, I32), MEDIUM, IN(REPLICATION),
     .doc = "Wait after a failed follower fetch before the next."},
    {KEY_LONG("follower.replication.throttled.rate", "9223372036854775807", 1, I64), MEDIUM, IN(REPLICATION),
     .flags = DYN | RT,
     .doc = "Bytes per second this broker's fetchers copy, together, for the replicas a topic's "
            "follower.replication.throttled.replicas names with this broker; while it is exceeded those "
            "partitions are left out of fetches and the others go on. Changeable at runtime."},
    {KEY_LONG("leader.replication.throttled.rate", "9223372036854775807", 1, I64), MEDIUM, IN(REPLICATION),
     .flags = DYN | RT,
     .doc = "Bytes per second this broker sends, together, in Fetch answers to followers outside the ISR of "
            "partitions whose topic's leader.replication.throttled.replicas names this broker's replica; while "
            "it is exceeded those partitions answer empty and the others as usual. Changeable at runtime."},
    {KEY_STRING("replica.selector.class", NULL), MEDIUM, IN(REPLICATION),
     .doc = "Where consumers may fetch from (KIP-392). Unset: the leader only. "
            "org.apache.kafka.common.replica.RackAwareReplicaSelector: followers in the ISR serve Fetch v11+ up to "
            "their high watermark, and the leader sends a consumer whose client.rack differs from its own rack to "
            "an in-sync replica in that rack. Any other value is refused at start."},
    {KEY_INT("replica.socket.timeout.ms", "30000", 1, I32), HIGH, IN(REPLICATION),
     .doc = "Socket timeout of follower fetches."},
    {KEY_LONG("replica.high.watermark.checkpoint.interval.ms", "5000", 1, I64), HIGH, IN(REPLICATION),
     .doc = "How often each log dir's replication-offset-checkpoint (the high watermarks, loaded back at "
            "start) is written; also written at clean shutdown."},

    /* groups */
    {KEY_INT("group.min.session.timeout.ms", "6000", 0, I32), MEDIUM, IN(GROUPS),
     .doc = "Smallest session timeout a consumer may ask for."},
    {KEY_INT("group.max.session.timeout.ms", "1800000", 0, I32), MEDIUM, IN(GROUPS),
     .doc = "Largest session timeout a consumer may ask for."},
    {KEY_INT("group.initial.rebalance.delay.ms", "3000", 0, I32), MEDIUM, IN(GROUPS),
     .doc = "Wait for more members before the first rebalance of an empty group."},
    {KEY_INT("group.max.size", "2147483647", 1, I32), MEDIUM, IN(GROUPS), .doc = "Most members in one group."},
    {KEY_INT("group.max.pending.members", "1000", 0, I32), MEDIUM, IN(GROUPS),
     .doc = "Cairn's own: most pending members of one group (KIP-394: a JoinGroup without a member id gets one "
            "and MEMBER_ID_REQUIRED; the id is pending until the member joins with it or its session timeout "
            "passes). Over it a new member is answered GROUP_MAX_SIZE_REACHED. 0: no bound."},
    {KEY_INT("group.coordinator.max.pending.members", "100000", 0, I32), MEDIUM, IN(GROUPS),
     .doc = "Cairn's own: most pending members (see group.max.pending.members) across the groups of this "
            "coordinator. Over it a new member is answered COORDINATOR_LOAD_IN_PROGRESS, which clients retry. "
            "0: no bound."},
    {KEY_LIST_OF("group.coordinator.rebalance.protocols", "classic", "classic,consumer"), MEDIUM, IN(GROUPS),
     .flags = LATER, .doc = "Group protocols the coordinator serves."},
    {KEY_INT("offsets.topic.num.partitions", "50", 1, I32), HIGH, IN(GROUPS),
     .doc = "Partitions of __consumer_offsets (fixed once created)."},
    {KEY_SHORT("offsets.topic.replication.factor", "3", 1, INT16_MAX), HIGH, IN(GROUPS),
     .doc = "Replication factor of __consumer_offsets, capped at the live broker count once the brokers a quorum of "
            "several voters expects (one per voter) have had 2 s to register."},
    {KEY_INT("offsets.topic.segment.bytes", "104857600", 1, I32), HIGH, IN(GROUPS),
     .doc = "Segment size of __consumer_offsets."},
    {KEY_INT("offsets.retention.minutes", "10080", 1, I32), HIGH, IN(GROUPS),
     .doc = "Committed offsets of an empty group are dropped after this long."},
    {KEY_LONG("offsets.retention.check.interval.ms", "600000", 1, I64), HIGH, IN(GROUPS),
     .doc = "How often expired offsets are looked for."},
    {KEY_INT("offsets.commit.timeout.ms", "5000", 1, I32), HIGH, IN(GROUPS),
     .doc = "How long an offset commit (OffsetCommit, TxnOffsetCommit) or a group leader's SyncGroup waits for every "
            "in-sync replica of its __consumer_offsets partition; past it the request is answered "
            "COORDINATOR_NOT_AVAILABLE, which clients retry (a failed SyncGroup rebalances the group)."},
    {KEY_INT("offsets.load.buffer.size", "5242880", 1, I32), HIGH, IN(GROUPS),
     .doc = "Read buffer used when loading __consumer_offsets."},
    {KEY_INT("offset.metadata.max.bytes", "4096", 0, I32), HIGH, IN(GROUPS),
     .doc = "Largest metadata string stored with a committed offset."},

    /* transactions */
    {KEY_INT("transaction.max.timeout.ms", "900000", 1, I32), HIGH, IN(TRANSACTIONS),
     .doc = "Largest transaction timeout a producer may ask for."},
    {KEY_INT("transactional.id.expiration.ms", "604800000", 1, I32), HIGH, IN(TRANSACTIONS),
     .doc = "A transactional id unused this long is forgotten."},
    {KEY_BOOL("transaction.partition.verification.enable", "true"), HIGH, IN(TRANSACTIONS),
     .doc = "Before a transactional batch opens a transaction on a partition, the leader checks with the transaction "
            "coordinator that the partition is in that producer's ongoing transaction (KIP-890 part 1); a batch "
            "that is not is refused (INVALID_TXN_STATE, TRANSACTION_ABORTABLE from Produce v11). Read at start."},
    {KEY_INT("transaction.state.log.num.partitions", "50", 1, I32), HIGH, IN(TRANSACTIONS),
     .doc = "Partitions of __transaction_state (fixed once created)."},
    {KEY_SHORT("transaction.state.log.replication.factor", "3", 1, INT16_MAX), HIGH, IN(TRANSACTIONS),
     .doc = "Replication factor of __transaction_state, capped at the live broker count once the brokers a quorum of "
            "several voters expects (one per voter) have had 2 s to register."},
    {KEY_INT("transaction.state.log.segment.bytes", "104857600", 1, I32), HIGH, IN(TRANSACTIONS),
     .doc = "Segment size of __transaction_state."},
    {KEY_INT("transaction.state.log.min.isr", "2", 1, I32), HIGH, IN(TRANSACTIONS),
     .doc = "min.insync.replicas of __transaction_state, capped at its replication factor, set when the topic is "
            "created. Below it the transaction coordinator writes nothing and answers COORDINATOR_NOT_AVAILABLE, which "
            "clients retry."},
    {KEY_INT("transaction.state.log.load.buffer.size", "5242880", 1, I32), HIGH, IN(TRANSACTIONS),
     .doc = "Read buffer used when loading __transaction_state."},
    {KEY_INT("transaction.abort.timed.out.transaction.cleanup.interval.ms", "10000", 1, I32), LOW, IN(TRANSACTIONS),
     .doc = "How often timed-out transactions are aborted."},
    {KEY_INT("transaction.remove.expired.transaction.cleanup.interval.ms", "3600000", 1, I32), LOW, IN(TRANSACTIONS),
     .doc = "How often expired transactional ids are removed."},
    {KEY_INT("producer.id.expiration.ms", "86400000", 1, I32), LOW, IN(TRANSACTIONS), .flags = DYN | RT,
     .doc = "Producer state of an idle producer id is dropped after this long."},
    {KEY_INT("producer.id.expiration.check.interval.ms", "600000", 1, I32), LOW, IN(TRANSACTIONS),
     .doc = "How often idle producer ids are looked for."},

    /* plugins */
    {KEY_STRING("plugin.path", NULL), MEDIUM, IN(PLUGINS),
     .doc = "Colon-separated directories searched for <name>.so; unset means the build tree's plugins "
            "directory, then <libdir>/cairn/plugins."},
    {KEY_LIST("plugins", ""), MEDIUM, IN(PLUGINS),
     .doc = "Plugins to load at start-up, in init order; each reads its keys under plugin.<name>."},
    {KEY_INT("plugin.blocking.threads", "2", 1, 64), LOW, IN(PLUGINS),
     .doc = "Threads that run plugins' blocking work (cairn_host.submit_blocking)."},
    {KEY_STRING("metrics.http.listener", ""), LOW, IN(PLUGINS),
     .doc = "host:port serving GET /metrics in Prometheus text format; empty disables it."},
};

size_t config_broker_key_count(void)
{
    return sizeof broker_keys / sizeof broker_keys[0];
}

const struct config_key_def *config_broker_key_at(size_t index)
{
    return index < config_broker_key_count() ? &broker_keys[index] : NULL;
}

long config_broker_key_index(const char *name)
{
    for (size_t i = 0; i < config_broker_key_count(); i++)
        if (strcmp(broker_keys[i].name, name) == 0)
            return (long)i;
    return -1;
}
