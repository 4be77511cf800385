/* The TLS tests' client helpers; see tls_client.h. */
#include <stdio.h>
#include <string.h>

#include "rk_helpers.h"
#include "tls_client.h"

const char *const *ssl_client_conf(struct ssl_conf *c, const char *certs_dir, const char *ca, const char *client)
{
    int n = 0;
    c->kv[n++] = "security.protocol";
    c->kv[n++] = "ssl";
    snprintf(c->ca, sizeof c->ca, "%s/%s", certs_dir, ca ? ca : "ca.pem");
    c->kv[n++] = "ssl.ca.location";
    c->kv[n++] = c->ca;
    if (client) {
        snprintf(c->cert, sizeof c->cert, "%s/%s.pem", certs_dir, client);
        snprintf(c->key, sizeof c->key, "%s/%s.key", certs_dir, client);
        c->kv[n++] = "ssl.certificate.location";
        c->kv[n++] = c->cert;
        c->kv[n++] = "ssl.key.location";
        c->kv[n++] = c->key;
    }
    c->kv[n++] = "socket.timeout.ms";
    c->kv[n++] = "4000";
    c->kv[n] = NULL;
    return c->kv;
}

bool rk_metadata_works(const char *bootstrap, const char *const *conf, int timeout_ms)
{
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
    if (md)
        rd_kafka_metadata_destroy(md);
    rk_producer_destroy(rk);
    return err == RD_KAFKA_RESP_ERR_NO_ERROR;
}

int file_lines_with(const char *path, const char *a, const char *b, const char *c)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[8192];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, a) && strstr(line, b) && (!c || strstr(line, c));
    fclose(f);
    return n;
}
