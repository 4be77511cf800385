/* storage-s3 configuration: the endpoint and addressing, and credentials
 * from the plugin config, else the AWS environment variables, else the
 * AWS shared credentials file. */
#include "s3_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* S3's multipart limits: every part but the last at least 5 MiB, at most 5 GiB. */
#define S3_MIN_PART_SIZE (5ull * 1024 * 1024)
#define S3_MAX_PART_SIZE (5ull * 1024 * 1024 * 1024)

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

static int read_string(const struct cairn_host *host, const char *key, const char **out, char *err, size_t errlen)
{
    int rc = host->config_string(host->ctx, key, out, err, errlen);
    if (rc != CAIRN_OK && err[0] == '\0')
        snprintf(err, errlen, "cannot read %s", key);
    return rc;
}

static int read_int(const struct cairn_host *host, const char *key, int64_t min, int64_t *out, char *err,
                    size_t errlen)
{
    int rc = host->config_int(host->ctx, key, out, err, errlen);
    if (rc != CAIRN_OK)
        return rc;
    if (*out < min) {
        snprintf(err, errlen, "%s must be at least %lld", key, (long long)min);
        return CAIRN_INVALID;
    }
    return CAIRN_OK;
}

/* scheme://host[:port][/path] into its parts. */
static int parse_endpoint(const char *endpoint, struct s3_config *config, char *err, size_t errlen)
{
    const char *sep = strstr(endpoint, "://");
    if (!sep) {
        snprintf(err, errlen, "endpoint '%s' must start with http:// or https://", endpoint);
        return CAIRN_INVALID;
    }
    size_t scheme_len = (size_t)(sep - endpoint);
    if (!((scheme_len == 4 && strncmp(endpoint, "http", 4) == 0) ||
          (scheme_len == 5 && strncmp(endpoint, "https", 5) == 0))) {
        snprintf(err, errlen, "endpoint '%s' must start with http:// or https://", endpoint);
        return CAIRN_INVALID;
    }
    const char *host = sep + 3;
    size_t host_len = strcspn(host, "/?#");
    if (host_len == 0 || host[host_len] == '?' || host[host_len] == '#') {
        snprintf(err, errlen, "endpoint '%s' has no host, or has a query", endpoint);
        return CAIRN_INVALID;
    }
    const char *path = host + host_len;
    size_t path_len = strlen(path);
    while (path_len > 0 && path[path_len - 1] == '/')
        path_len--;
    config->scheme = strndup(endpoint, scheme_len);
    config->host = strndup(host, host_len);
    config->base_path = strndup(path, path_len);
    return CAIRN_OK;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    size_t start = strspn(s, " \t");
    memmove(s, s + start, n - start + 1);
}

int s3_credentials_file_read(const char *path, const char *profile, struct s3_config *config, char *err,
                             size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return CAIRN_NOT_FOUND;
    char line[1024];
    bool in_profile = false, found = false;
    while (fgets(line, sizeof(line), f)) {
        trim(line);
        if (line[0] == '#' || line[0] == ';' || line[0] == '\0')
            continue;
        if (line[0] == '[') {
            char *end = strchr(line, ']');
            if (end)
                *end = '\0';
            char *name = line + 1;
            trim(name);
            in_profile = strcmp(name, profile) == 0;
            found = found || in_profile;
            continue;
        }
        char *eq = strchr(line, '=');
        if (!in_profile || !eq)
            continue;
        *eq = '\0';
        char *key = line, *value = eq + 1;
        trim(key);
        trim(value);
        char **slot = strcmp(key, "aws_access_key_id") == 0       ? &config->access_key_id
                      : strcmp(key, "aws_secret_access_key") == 0 ? &config->secret_access_key
                      : strcmp(key, "aws_session_token") == 0     ? &config->session_token
                                                                  : NULL;
        if (slot) {
            free(*slot);
            *slot = dup_or_null(value);
        }
    }
    fclose(f);
    if (!found)
        return CAIRN_NOT_FOUND;
    if (!config->access_key_id || !config->secret_access_key) {
        snprintf(err, errlen, "profile [%s] of %s has no aws_access_key_id or aws_secret_access_key", profile, path);
        return CAIRN_INVALID;
    }
    return CAIRN_OK;
}

/* Config keys, else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN, else the shared credentials file. */
static int load_credentials(const struct cairn_host *host, struct s3_config *config, char *err, size_t errlen)
{
    const char *key_id, *secret, *token, *file, *profile;
    if (read_string(host, "access.key.id", &key_id, err, errlen) != CAIRN_OK ||
        read_string(host, "secret.access.key", &secret, err, errlen) != CAIRN_OK ||
        read_string(host, "session.token", &token, err, errlen) != CAIRN_OK ||
        read_string(host, "credentials.file", &file, err, errlen) != CAIRN_OK ||
        read_string(host, "profile", &profile, err, errlen) != CAIRN_OK)
        return CAIRN_INVALID;
    if (*key_id || *secret) {
        if (!*key_id || !*secret) {
            snprintf(err, errlen, "access.key.id and secret.access.key must be set together");
            return CAIRN_INVALID;
        }
        config->access_key_id = strdup(key_id);
        config->secret_access_key = strdup(secret);
        config->session_token = dup_or_null(token);
        config->credentials_source = "config";
        return CAIRN_OK;
    }
    const char *env_id = getenv("AWS_ACCESS_KEY_ID"), *env_secret = getenv("AWS_SECRET_ACCESS_KEY");
    if (env_id && *env_id && env_secret && *env_secret) {
        config->access_key_id = strdup(env_id);
        config->secret_access_key = strdup(env_secret);
        config->session_token = dup_or_null(getenv("AWS_SESSION_TOKEN"));
        config->credentials_source = "environment";
        return CAIRN_OK;
    }
    if (!*profile)
        profile = getenv("AWS_PROFILE") && *getenv("AWS_PROFILE") ? getenv("AWS_PROFILE") : "default";
    char path[4096];
    if (*file)
        snprintf(path, sizeof(path), "%s", file);
    else if (getenv("AWS_SHARED_CREDENTIALS_FILE") && *getenv("AWS_SHARED_CREDENTIALS_FILE"))
        snprintf(path, sizeof(path), "%s", getenv("AWS_SHARED_CREDENTIALS_FILE"));
    else
        snprintf(path, sizeof(path), "%s/.aws/credentials", getenv("HOME") ? getenv("HOME") : "");
    int rc = s3_credentials_file_read(path, profile, config, err, errlen);
    if (rc == CAIRN_NOT_FOUND)
        snprintf(err, errlen,
                 "no credentials: set access.key.id and secret.access.key, or AWS_ACCESS_KEY_ID and "
                 "AWS_SECRET_ACCESS_KEY, or profile [%s] in %s",
                 profile, path);
    else if (rc == CAIRN_OK)
        config->credentials_source = "shared credentials file";
    return rc == CAIRN_OK ? CAIRN_OK : CAIRN_INVALID;
}

int s3_config_load(const struct cairn_host *host, struct s3_config *config, char *err, size_t errlen)
{
    memset(config, 0, sizeof(*config));
    err[0] = '\0';
    const char *bucket, *region, *endpoint, *prefix, *ca_file;
    int rc = CAIRN_INVALID;
    if (read_string(host, "bucket", &bucket, err, errlen) != CAIRN_OK ||
        read_string(host, "region", &region, err, errlen) != CAIRN_OK ||
        read_string(host, "endpoint", &endpoint, err, errlen) != CAIRN_OK ||
        read_string(host, "key.prefix", &prefix, err, errlen) != CAIRN_OK ||
        read_string(host, "tls.ca.file", &ca_file, err, errlen) != CAIRN_OK ||
        host->config_bool(host->ctx, "path.style.access", &config->path_style, err, errlen) != CAIRN_OK ||
        host->config_bool(host->ctx, "tls.verify", &config->tls_verify, err, errlen) != CAIRN_OK ||
        read_int(host, "connect.timeout.ms", 1, &config->connect_timeout_ms, err, errlen) != CAIRN_OK ||
        read_int(host, "request.timeout.ms", 1000, &config->request_timeout_ms, err, errlen) != CAIRN_OK ||
        read_int(host, "retry.max.attempts", 1, &config->retry_max_attempts, err, errlen) != CAIRN_OK ||
        read_int(host, "retry.backoff.ms", 1, &config->retry_backoff_ms, err, errlen) != CAIRN_OK ||
        read_int(host, "retry.backoff.max.ms", 1, &config->retry_backoff_max_ms, err, errlen) != CAIRN_OK ||
        read_int(host, "retry.total.timeout.ms", 100, &config->retry_total_timeout_ms, err, errlen) != CAIRN_OK ||
        host->config_size(host->ctx, "multipart.part.size", &config->part_size, err, errlen) != CAIRN_OK)
        goto fail;
    if (!*bucket || strspn(bucket, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != strlen(bucket)) {
        snprintf(err, errlen, "bucket '%s' is not a valid S3 bucket name", bucket);
        goto fail;
    }
    if (!*region) {
        snprintf(err, errlen, "region must not be empty");
        goto fail;
    }
    if (config->part_size < S3_MIN_PART_SIZE || config->part_size > S3_MAX_PART_SIZE) {
        snprintf(err, errlen, "multipart.part.size must be between 5MiB and 5GiB (S3's part limits)");
        goto fail;
    }
    config->bucket = strdup(bucket);
    config->region = strdup(region);
    config->key_prefix = strdup(prefix);
    config->ca_file = dup_or_null(ca_file);
    char default_endpoint[256];
    if (!*endpoint) {
        snprintf(default_endpoint, sizeof(default_endpoint), "https://s3.%s.amazonaws.com", region);
        endpoint = default_endpoint;
    }
    if (parse_endpoint(endpoint, config, err, errlen) != CAIRN_OK)
        goto fail;
    /* <bucket>.<IP address> names nothing: an IP endpoint is path-style, as
     * the AWS SDKs do. */
    size_t name_len = config->host[0] == '[' ? 0 : strcspn(config->host, ":");
    if (config->host[0] == '[' || strspn(config->host, "0123456789.") == name_len)
        config->path_style = true;
    /* A dotted bucket name breaks the TLS wildcard certificate of a
     * virtual-hosted endpoint, as AWS documents; path style avoids it. */
    if (!config->path_style && strchr(bucket, '.') && strcmp(config->scheme, "https") == 0) {
        snprintf(err, errlen, "bucket '%s' has dots: set path.style.access=true for HTTPS", bucket);
        goto fail;
    }
    if (load_credentials(host, config, err, errlen) != CAIRN_OK)
        goto fail;
    return CAIRN_OK;
fail:
    s3_config_free(config);
    return rc;
}

static void free_secret(char **s)
{
    if (*s) {
        memset(*s, 0, strlen(*s));
        free(*s);
        *s = NULL;
    }
}

void s3_config_free(struct s3_config *config)
{
    free(config->bucket);
    free(config->region);
    free(config->scheme);
    free(config->host);
    free(config->base_path);
    free(config->key_prefix);
    free(config->access_key_id);
    free_secret(&config->secret_access_key);
    free_secret(&config->session_token);
    free(config->ca_file);
    memset(config, 0, sizeof(*config));
}
