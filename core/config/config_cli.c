/* Command line of cairnd and the generated configuration reference. */
#include "config/config.h"

#include "config/config_internal.h"
#include "config/topic_config.h"

#include <stdlib.h>
#include <string.h>

#ifndef CAIRN_VERSION
#define CAIRN_VERSION "unknown"
#endif

static void print_usage(FILE *out, const char *program)
{
    fprintf(out,
            "Usage: %s [--config FILE | -c FILE | FILE] [--override key=value]...\n"
            "\n"
            "Starts a Cairn broker. Without a config file it runs a single-node cluster\n"
            "on localhost:9092 with data under ./data.\n"
            "\n"
            "  -c, --config FILE      read broker configuration (Java properties format)\n"
            "      --override K=V     set key K to V; wins over the file (repeatable)\n"
            "      --check-config     check the configuration as start-up does, without\n"
            "                         binding ports, opening log dirs, initialising plugins\n"
            "                         or contacting anything; print 'configuration OK' and\n"
            "                         exit 0, or the error and exit 2 (unknown keys are errors)\n"
            "      --print-config-docs  print the configuration reference (Markdown)\n"
            "      --print-plugin-docs  print the configured plugins' keys (Markdown)\n"
            "  -h, --help             show this help\n"
            "      --version          show the version\n",
            program);
}

/* Value of an option given as "--opt VALUE" or "--opt=VALUE"; NULL if this
 * argument is not that option. Advances *index past a separate value. */
static const char *option_value(int argc, char **argv, int *index, const char *long_name, const char *short_name,
                                bool *missing)
{
    const char *arg = argv[*index];
    size_t n = strlen(long_name);
    *missing = false;
    if (strncmp(arg, long_name, n) == 0 && arg[n] == '=')
        return arg + n + 1;
    if (strcmp(arg, long_name) == 0 || (short_name && strcmp(arg, short_name) == 0)) {
        if (*index + 1 >= argc) {
            *missing = true;
            return NULL;
        }
        return argv[++*index];
    }
    return NULL;
}

struct pending_entries {
    const char **keys;
    const char **values;
    size_t count;
};

static int pending_add(struct pending_entries *p, const char *key, const char *value)
{
    const char **keys = realloc(p->keys, (p->count + 1) * sizeof *keys);
    if (!keys)
        return -1;
    p->keys = keys;
    const char **values = realloc(p->values, (p->count + 1) * sizeof *values);
    if (!values)
        return -1;
    p->values = values;
    p->keys[p->count] = key;
    p->values[p->count] = value;
    p->count++;
    return 0;
}

static int load(int argc, char **argv, bool strict, struct broker_config **out, char *err, size_t errlen)
{
    const char *program = argc > 0 && argv[0] ? argv[0] : "cairnd";
    const char *config_path = NULL;
    struct properties overrides = {0}, file = {0};
    struct pending_entries all = {0};
    int rc = -1;
    *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool missing;
        const char *value;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_usage(stdout, program);
            rc = 1;
            goto done;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("cairnd %s\n", CAIRN_VERSION);
            rc = 1;
            goto done;
        }
        if (strcmp(arg, "--print-config-docs") == 0) {
            config_print_docs(stdout);
            rc = 1;
            goto done;
        }
        if ((value = option_value(argc, argv, &i, "--override", NULL, &missing)) || missing) {
            const char *eq = value ? strchr(value, '=') : NULL;
            if (!eq || eq == value) {
                snprintf(err, errlen, "--override expects key=value, got '%s'", value ? value : "");
                goto done;
            }
            char *key = strndup(value, (size_t)(eq - value));
            int set_rc = key ? properties_set(&overrides, key, eq + 1, 0) : -1;
            free(key);
            if (set_rc < 0) {
                snprintf(err, errlen, "out of memory");
                goto done;
            }
            continue;
        }
        if ((value = option_value(argc, argv, &i, "--config", "-c", &missing)) || missing) {
            if (missing) {
                snprintf(err, errlen, "%s expects a file name", arg);
                goto done;
            }
        } else if (arg[0] == '-' && arg[1] != '\0') {
            snprintf(err, errlen, "unknown option '%s' (see --help)", arg);
            goto done;
        } else {
            value = arg;
        }
        if (config_path) {
            snprintf(err, errlen, "more than one config file given ('%s' and '%s')", config_path, value);
            goto done;
        }
        config_path = value;
    }

    if (config_path && properties_load_file(config_path, &file, err, errlen) < 0)
        goto done;
    for (size_t i = 0; i < file.count; i++)
        if (pending_add(&all, file.entries[i].key, file.entries[i].value) < 0)
            goto oom;
    for (size_t i = 0; i < overrides.count; i++)
        if (pending_add(&all, overrides.entries[i].key, overrides.entries[i].value) < 0)
            goto oom;
    /* An unknown key first: its misspelling may be why a check below fails. */
    for (size_t i = 0; strict && i < all.count; i++)
        if (config_check_key_name(all.keys[i], err, errlen) < 0)
            goto done;
    if (config_build(all.keys, all.values, all.count, out, err, errlen) < 0)
        goto done;
    if (strict && config_check_known_keys(*out, err, errlen) < 0) {
        config_free(*out);
        *out = NULL;
        goto done;
    }
    if (config_check_implemented(*out, err, errlen) < 0) {
        config_free(*out);
        *out = NULL;
        goto done;
    }
    if (config_path && !((*out)->file_path = strdup(config_path))) {
        config_free(*out);
        *out = NULL;
        goto oom;
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
done:
    free(all.keys);
    free(all.values);
    properties_free(&file);
    properties_free(&overrides);
    return rc;
}

int config_load(int argc, char **argv, struct broker_config **out, char *err, size_t errlen)
{
    return load(argc, argv, false, out, err, errlen);
}

int config_load_strict(int argc, char **argv, struct broker_config **out, char *err, size_t errlen)
{
    return load(argc, argv, true, out, err, errlen);
}

static void print_doc_row(FILE *out, const struct config_key_def *def, const char *suffix)
{
    const char *dflt = def->default_value ? def->default_value : "null";
    /* Broker keys not implemented are refused at start unless at their default. */
    const char *unused = def->group == CONFIG_GROUP_TOPIC
                             ? " *Accepted, not yet used.*"
                             : " *Not implemented yet: start-up refuses any value but the default.*";
    const char *runtime = def->group != CONFIG_GROUP_TOPIC && (def->flags & CONFIG_FLAG_RUNTIME)
                              ? " *Dynamic: changeable at runtime (see below).*"
                              : "";
    fprintf(out, "| `%s` | %s | %s%s%s | %s%s%s%s |\n", def->name, config_type_name(def->type), *dflt ? "`" : "",
            *dflt ? dflt : "(empty)", *dflt ? "`" : "", def->doc, suffix ? suffix : "",
            (def->flags & CONFIG_FLAG_UNUSED) ? unused : "", runtime);
}

/* The keys of one kind, comma-separated, for the dynamic configs section. */
static void print_key_list(FILE *out, unsigned want, unsigned refuse)
{
    bool first = true;
    for (size_t i = 0; i < config_broker_key_count(); i++) {
        const struct config_key_def *def = config_broker_key_at(i);
        if ((def->flags & want) != want || (def->flags & refuse))
            continue;
        fprintf(out, "%s`%s`", first ? "" : ", ", def->name);
        first = false;
    }
    fprintf(out, "%s\n", first ? "none" : ".");
}

/* Which broker keys AlterConfigs may change; printed after the tables. */
static void print_dynamic_notes(FILE *out)
{
    fprintf(out, "\n## Dynamic broker configs\n\n"
                 "AlterConfigs and IncrementalAlterConfigs on a BROKER resource (`cairn config alter\n"
                 "--broker ID` or `--broker-defaults`, kafka-configs.sh `--entity-type brokers`)\n"
                 "change broker keys at runtime: the resource name is a broker id for that broker,\n"
                 "or empty for the cluster-wide default. The values are kept in the metadata log\n"
                 "(ConfigRecord), so they survive restarts and reach every broker. A value applies\n"
                 "in Kafka's order: the broker's own (`DYNAMIC_BROKER_CONFIG`), the cluster-wide\n"
                 "default (`DYNAMIC_DEFAULT_BROKER_CONFIG`), the config file or `--override`\n"
                 "(`STATIC_BROKER_CONFIG`), the default (`DEFAULT_CONFIG`); DescribeConfigs reports\n"
                 "each key's source, and with synonyms every layer that sets it.\n\n"
                 "Keys Cairn applies without a restart (DescribeConfigs shows them not read-only):\n"
                 "topic defaults reach every topic without its own value at once (the next append,\n"
                 "roll or retention pass), the connection limits the next accepted connection,\n"
                 "`num.replica.fetchers` the followed partitions' fetchers at once, the replication\n"
                 "throttle rates the next fetch, the TLS listeners' `ssl.*` keys the next accepted\n"
                 "connection (see Dynamic TLS settings):\n\n");
    print_key_list(out, CONFIG_FLAG_RUNTIME, 0);
    fprintf(out, "\nKafka lets these change at runtime too, but Cairn reads them at start only, so\n"
                 "AlterConfigs refuses them with INVALID_CONFIG naming the key (set them in the file\n"
                 "and restart):\n\n");
    print_key_list(out, CONFIG_FLAG_DYNAMIC, CONFIG_FLAG_RUNTIME);
    fprintf(out, "\nEvery other key is read-only, as in Kafka, and refused the same way. Of Kafka's\n"
                 "per-broker keys only the TLS ones above are changeable (not `listeners` nor\n"
                 "`sasl.enabled.mechanisms`); a per-broker key set as the cluster-wide default gets\n"
                 "INVALID_REQUEST. Deleting a dynamic value is always allowed: the key falls back to\n"
                 "the next layer.\n\n"
                 "### Dynamic TLS settings\n\n"
                 "The dynamic `ssl.*` keys above may be set for one broker, broker-wide or for one\n"
                 "listener as `listener.name.<listener name in lower case>.ssl.*` (Kafka's way to\n"
                 "give a listener a new keystore or truststore), e.g. with kafka-configs.sh\n"
                 "`--entity-type brokers --entity-name 1 --alter --add-config\n"
                 "listener.name.ssl.ssl.keystore.location=/etc/cairn/broker-2027.pem`. Before the\n"
                 "change is recorded the broker builds the new TLS context of every listener it\n"
                 "touches: a file that cannot be read, a key that does not match its certificate\n"
                 "or a bad value refuses the change with INVALID_CONFIG naming the key, and the\n"
                 "listener keeps serving with its old settings. Once recorded, new connections\n"
                 "get the new context; open connections keep theirs. A later `kill -HUP` re-reads\n"
                 "the files the dynamic values name, not the ones of the config file. Deleting\n"
                 "the dynamic value goes back to the config file's. DescribeConfigs lists the\n"
                 "per-listener values set dynamically with source `DYNAMIC_BROKER_CONFIG`. Cairn\n"
                 "does not check that the new certificate keeps the old one's subject and SANs\n"
                 "(Kafka does, unless told not to). The node's own links to other nodes take the\n"
                 "new values of the listener they connect over as well.\n");
}

/* How the ssl.* keys fit together; printed after the tables. */
static void print_tls_notes(FILE *out)
{
    fprintf(out, "\n## TLS listeners\n\n"
                 "A listener mapped to `SSL` in `listener.security.protocol.map` serves TLS\n"
                 "(OpenSSL), e.g.\n\n"
                 "    listeners=PLAINTEXT://:9092,SSL://:9093\n"
                 "    ssl.keystore.location=/etc/cairn/broker.pem\n"
                 "    ssl.truststore.location=/etc/cairn/clients-ca.pem\n"
                 "    ssl.client.auth=required\n\n"
                 "- Only PEM stores (KIP-651): a keystore file holding the certificate chain and\n"
                 "  the private key, or the two inline as `ssl.keystore.certificate.chain` and\n"
                 "  `ssl.keystore.key` (write line breaks as `\\n` or continue lines with `\\`).\n"
                 "  An encrypted key needs `ssl.key.password`.\n"
                 "- Every `ssl.*` key can be set for one listener as\n"
                 "  `listener.name.<listener name in lower case>.ssl.*`, which wins over the\n"
                 "  broker-wide key.\n"
                 "- A file that cannot be read, a key that does not match its certificate or a\n"
                 "  wrong password stops start-up with one line naming the key and OpenSSL's\n"
                 "  reason. `requested` or `required` client auth needs a truststore.\n"
                 "- `kill -HUP <cairnd pid>` re-reads the files of every TLS listener (the\n"
                 "  controller listener too) and of the node's own links to the other nodes\n"
                 "  (controller and inter-broker): new connections use the new certificates,\n"
                 "  open ones keep theirs; a listener or link whose new files are bad keeps the\n"
                 "  old ones and logs why, naming the file. The config file is not re-read, so\n"
                 "  inline PEM values do not change.\n"
                 "- A client certificate that fails verification (expired, not yet valid,\n"
                 "  unknown issuer, revoked) ends the connection in the handshake, with a log\n"
                 "  line naming the reason. A verified client acts as `User:<subject DN>`\n"
                 "  (RFC 2253), or as the `auth-mtls` plugin maps it\n"
                 "  (`ssl.principal.mapping.rules`). With `requested`, a client that presents\n"
                 "  no certificate acts as `User:ANONYMOUS`.\n"
                 "- `ssl.crl.location` (Cairn's own key) names a PEM file of certificate\n"
                 "  revocation lists, one from every CA in the client chains: a revoked client\n"
                 "  certificate is refused (`client certificate refused: certificate revoked`),\n"
                 "  and so is one whose CA has no current CRL in the file. SIGHUP re-reads it\n"
                 "  with the certificates.\n"
                 "- Fetch responses over TLS read the log with `pread` and encrypt with\n"
                 "  `SSL_write`; with kernel TLS they use `SSL_sendfile`. To see whether the kernel\n"
                 "  offers it: `modprobe tls && grep -w tls /proc/modules` (or\n"
                 "  `ls /sys/module/tls`); cairnd logs `kTLS send on` per connection at debug level.\n");
}

void config_print_docs(FILE *out)
{
    fprintf(out, "# Configuration\n\n"
                 "Cairn reads Kafka's `server.properties` keys with Kafka's types, defaults and\n"
                 "ranges, so an existing Kafka config mostly works as it is.\n\n"
                 "    cairnd [--config FILE | -c FILE | FILE] [--override key=value]...\n\n"
                 "- The file uses the Java properties format: `key=value`, `key: value` or\n"
                 "  `key value`; `#` and `!` start comments; a trailing backslash continues a\n"
                 "  line; `\\t \\n \\\\ \\uXXXX` escapes work. Bytes are read as UTF-8.\n"
                 "- `--override` wins over the file; a later occurrence of a key wins over an\n"
                 "  earlier one.\n"
                 "- A bad value of a known key stops start-up with a message naming the key,\n"
                 "  the value and the accepted form. An unknown key is logged as a warning.\n"
                 "- `cairnd --check-config --config FILE` runs start-up's checks of the file\n"
                 "  and the `--override`s without starting: it prints `configuration OK`\n"
                 "  (exit 0) or the line start-up would stop with (exit 2), and refuses\n"
                 "  unknown keys (docs/operations.md \"Checking a config\").\n"
                 "- A broker key Cairn does not implement yet is accepted only at its default\n"
                 "  (as Kafka's own files carry it); any other value stops start-up with a line\n"
                 "  naming it. The tables below mark those keys.\n"
                 "- Keys under `plugin.` are passed untouched to plugins (`plugin.<name>.*`).\n"
                 "- Kafka's authorizer settings belong to the ACL authorizer plugin:\n"
                 "  `plugins=acl-authorizer` stands for `authorizer.class.name`, and its keys\n"
                 "  `plugin.acl-authorizer.super.users` (principals separated by `;`, default\n"
                 "  none) and `plugin.acl-authorizer.allow.everyone.if.no.acl.found` (default\n"
                 "  `false`) for Kafka's `super.users` and `allow.everyone.if.no.acl.found`.\n"
                 "  The ACLs themselves are managed with CreateAcls/DeleteAcls, not config.\n"
                 "- Kafka's `create.topic.policy.class.name` and\n"
                 "  `alter.config.policy.class.name` are topic policy plugins (ABI 1.3):\n"
                 "  `plugins=tenant-limits` with `plugin.tenant-limits.entries` (tenants\n"
                 "  separated by `;`, each `principal=<principal>[*],prefix=<topic prefix>:`\n"
                 "  then caps among `max.partitions.per.topic`, `max.partitions`,\n"
                 "  `max.replication.factor`, `max.retention.ms`, `max.retention.bytes`;\n"
                 "  default empty) refuses topic changes over a tenant's caps with\n"
                 "  POLICY_VIOLATION (plugins/tenant-limits/README.md).\n"
                 "- Without any config Cairn runs a single-node cluster: node id 1, broker\n"
                 "  and sole controller voter, `PLAINTEXT://localhost:9092`, data in `./data`.\n"
                 "- Retention and roll times: `*.ms` wins over `*.minutes`, which wins over\n"
                 "  `*.hours`. `log.dirs` wins over `log.dir`; `advertised.listeners`\n"
                 "  defaults to `listeners`; `broker.id` is read when `node.id` is not set.\n"
                 "- Every data directory holds a `meta.properties` (`version=1`, `node.id`,\n"
                 "  `cluster.id`, `directory.id`), written on first start and checked on\n"
                 "  every later one.\n"
                 "- SASL listeners (`SASL_PLAINTEXT`, and `SASL_SSL` over TLS) offer `sasl.enabled.mechanisms`, or\n"
                 "  `listener.name.<listener>.sasl.enabled.mechanisms` for one listener (the\n"
                 "  listener name in any case), limited to what is served: SCRAM-SHA-256 and\n"
                 "  SCRAM-SHA-512 by the core (credentials through AlterUserScramCredentials),\n"
                 "  PLAIN and GSSAPI (Kerberos) by the auth-sasl plugin, whose keys\n"
                 "  `plugin.auth-sasl.service` (`kafka`, also the Kerberos service name),\n"
                 "  `.realm`, `.pwcheck_method` (`auxprop`), `.auxprop_plugin` (`sasldb`),\n"
                 "  `.sasldb_path` (`/etc/sasldb2`) and `.saslauthd_path` are Cyrus SASL's\n"
                 "  options, and for GSSAPI `.keytab` (the broker's keytab; empty: krb5's\n"
                 "  default), `.kerberos_host` (the host of the service principal\n"
                 "  `kafka/<host>@REALM`; empty: the machine's host name) and\n"
                 "  `.principal_to_local_rules` (Kafka's `sasl.kerberos.principal.to.local.rules`;\n"
                 "  only `DEFAULT`, which maps `name[/host]@<default realm>` to `User:name`)\n"
                 "  (plugins/auth-sasl/README.md, docs/operations.md \"Kerberos (GSSAPI)\"), and OAUTHBEARER by the auth-oauth\n"
                 "  plugin, whose keys are Kafka's `sasl.oauthbearer.*` under\n"
                 "  `plugin.auth-oauth.` (plugins/auth-oauth/README.md).\n"
                 "- A node's own credentials for a SASL inter-broker listener are Kafka's\n"
                 "  `listener.name.<listener>.<mechanism>.sasl.jaas.config` (both names in\n"
                 "  lower case), in one of two forms only:\n"
                 "  `org.apache.kafka.common.security.scram.ScramLoginModule required\n"
                 "  username=\"broker\" password=\"...\";` for SCRAM-SHA-256/512, or\n"
                 "  `org.apache.kafka.common.security.plain.PlainLoginModule required\n"
                 "  username=\"broker\" password=\"...\";` for PLAIN. Any other module or\n"
                 "  option stops start-up with a line naming the key.\n\n"
                 "This file is generated by `cairnd --print-config-docs`.\n");
    static const enum config_group groups[] = {
        CONFIG_GROUP_SERVER, CONFIG_GROUP_NETWORK,      CONFIG_GROUP_LOG,    CONFIG_GROUP_REPLICATION,
        CONFIG_GROUP_GROUPS, CONFIG_GROUP_TRANSACTIONS, CONFIG_GROUP_PLUGINS};
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        fprintf(out, "\n## %s\n\n| Key | Type | Default | What it does in Cairn |\n|---|---|---|---|\n",
                config_group_name(groups[g]));
        for (size_t i = 0; i < config_broker_key_count(); i++) {
            const struct config_key_def *def = config_broker_key_at(i);
            if (def->group == groups[g])
                print_doc_row(out, def, NULL);
        }
    }
    fprintf(out, "\n## Topic\n\nSet per topic with CreateTopics or AlterConfigs. Without a topic value the\n"
                 "broker synonym applies, then the default shown here.\n\n"
                 "| Key | Type | Default | What it does in Cairn |\n|---|---|---|---|\n");
    for (size_t i = 0; i < topic_config_key_count(); i++) {
        const struct topic_key_def *tk = topic_config_key_at(i);
        char suffix[200] = " Broker synonym: ";
        size_t used = strlen(suffix);
        for (size_t s = 0; s < TOPIC_CONFIG_MAX_SYNONYMS && tk->synonyms[s] && used < sizeof suffix; s++)
            used += (size_t)snprintf(suffix + used, sizeof suffix - used, "%s`%s`", s ? ", " : "", tk->synonyms[s]);
        if (used + 1 < sizeof suffix)
            strcat(suffix, ".");
        print_doc_row(out, &tk->def, tk->synonyms[0] ? suffix : "");
    }
    print_tls_notes(out);
    print_dynamic_notes(out);
}
