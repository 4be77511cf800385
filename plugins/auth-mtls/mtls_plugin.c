/* auth-mtls: maps a verified TLS client certificate to a principal, as
 * Kafka's ssl.principal.mapping.rules do with the subject DN, or, beyond
 * Kafka, from the certificate's first URI (SPIFFE id) or DNS SAN.
 *
 * Thread-safety: the instance is immutable after init; map_tls_principal
 * runs concurrently on the broker's network threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/plugin.h"
#include "mtls_internal.h"

enum mtls_source { MTLS_SUBJECT, MTLS_SAN_URI, MTLS_SAN_DNS };

struct mtls_plugin {
    const struct cairn_host *host;
    struct mtls_rules rules;
    enum mtls_source source;
    char principal_type[64];
    struct cairn_metric *mapped;
    struct cairn_metric *refused;
};

static int mtls_string(const struct cairn_host *host, const char *key, const char **out, char *err, size_t errlen)
{
    char why[256] = "";
    if (host->config_string(host->ctx, key, out, why, sizeof why) != CAIRN_OK || !*out) {
        snprintf(err, errlen, "config %s: %s", key, why[0] ? why : "not available");
        return CAIRN_ERROR;
    }
    return CAIRN_OK;
}

static int mtls_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    const char *rules_text, *source, *type;
    if (mtls_string(host, "ssl.principal.mapping.rules", &rules_text, err, errlen) != CAIRN_OK ||
        mtls_string(host, "principal.source", &source, err, errlen) != CAIRN_OK ||
        mtls_string(host, "principal.type", &type, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    struct mtls_plugin *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    p->host = host;
    if (strcmp(source, "subject") == 0)
        p->source = MTLS_SUBJECT;
    else if (strcmp(source, "san.uri") == 0)
        p->source = MTLS_SAN_URI;
    else if (strcmp(source, "san.dns") == 0)
        p->source = MTLS_SAN_DNS;
    else {
        snprintf(err, errlen, "principal.source '%s' is not one of subject, san.uri, san.dns", source);
        free(p);
        return CAIRN_ERROR;
    }
    if (strlen(type) >= sizeof p->principal_type || strchr(type, ':')) {
        snprintf(err, errlen, "principal.type '%s' must be shorter than 64 characters, without ':'", type);
        free(p);
        return CAIRN_ERROR;
    }
    snprintf(p->principal_type, sizeof p->principal_type, "%s", type);
    char why[256];
    if (mtls_rules_parse(rules_text, &p->rules, why, sizeof why) != 0) {
        snprintf(err, errlen, "ssl.principal.mapping.rules: %s", why);
        free(p);
        return CAIRN_ERROR;
    }
    p->mapped = host->counter(host->ctx, "mapped", "TLS clients given a principal from their certificate");
    p->refused = host->counter(host->ctx, "refused", "TLS clients refused: no rule or no SAN matched");
    host->log(host->ctx, CAIRN_LOG_INFO, "%zu mapping rules, principal from the %s", p->rules.count, source);
    *instance = p;
    return CAIRN_OK;
}

static void mtls_fini(void *instance)
{
    struct mtls_plugin *p = instance;
    if (!p)
        return;
    mtls_rules_free(&p->rules);
    free(p);
}

static void mtls_count(struct mtls_plugin *p, struct cairn_metric *m)
{
    if (m)
        p->host->metric_add(m, 1);
}

static int mtls_map(void *instance, const struct cairn_tls_peer *peer, struct cairn_principal_out *principal, char *err,
                    size_t errlen)
{
    struct mtls_plugin *p = instance;
    const char *name = peer->subject_dn;
    const char *what = "subject";
    if (p->source == MTLS_SAN_URI) {
        name = peer->san_uri_count > 0 ? peer->san_uris[0] : NULL;
        what = "URI SAN";
    } else if (p->source == MTLS_SAN_DNS) {
        name = peer->san_dns_count > 0 ? peer->san_dns[0] : NULL;
        what = "DNS SAN";
    }
    if (!name) {
        snprintf(err, errlen, "the client certificate (%s) has no %s", peer->subject_dn ? peer->subject_dn : "?", what);
        mtls_count(p, p->refused);
        return CAIRN_ERROR;
    }
    if (mtls_rules_apply(&p->rules, name, principal->name, sizeof principal->name) != 0) {
        snprintf(err, errlen, "no ssl.principal.mapping.rules rule maps the %s '%.200s'", what, name);
        mtls_count(p, p->refused);
        return CAIRN_ERROR;
    }
    snprintf(principal->type, sizeof principal->type, "%s", p->principal_type);
    mtls_count(p, p->mapped);
    return CAIRN_OK;
}

static const struct cairn_config_key mtls_key_rules = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "ssl.principal.mapping.rules",
    .type = CAIRN_CONFIG_STRING,
    .default_value = "DEFAULT",
    .doc = "Kafka's rules, e.g. RULE:^CN=([^,]*),OU=Streams.*$/$1/L,DEFAULT; the first that matches wins.",
};
static const struct cairn_config_key mtls_key_source = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "principal.source",
    .type = CAIRN_CONFIG_STRING,
    .default_value = "subject",
    .doc = "What the rules apply to: subject (the RFC 2253 DN, as Kafka), san.uri (the first URI SAN, e.g. a "
           "SPIFFE id) or san.dns (the first DNS SAN).",
};
static const struct cairn_config_key mtls_key_type = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "principal.type",
    .type = CAIRN_CONFIG_STRING,
    .default_value = "User",
    .doc = "Principal type of a mapped client.",
};

static const struct cairn_config_key *const mtls_config_keys[] = {&mtls_key_rules, &mtls_key_source, &mtls_key_type};

static const struct cairn_authn_vtable mtls_vtable = {
    .struct_size = sizeof(struct cairn_authn_vtable),
    .map_tls_principal = mtls_map,
};

static const struct cairn_plugin_descriptor mtls_descriptor = {
    .struct_size = sizeof(struct cairn_plugin_descriptor),
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "auth-mtls",
    .version = "1.0.0",
    .description = "Principals of TLS clients from their certificates (ssl.principal.mapping.rules, SAN)",
    .capabilities = CAIRN_CAP_AUTHENTICATION,
    .config_keys = mtls_config_keys,
    .config_key_count = sizeof(mtls_config_keys) / sizeof(mtls_config_keys[0]),
    .init = mtls_init,
    .fini = mtls_fini,
    .authentication = &mtls_vtable,
};

CAIRN_PLUGIN_DEFINE(mtls_descriptor)
