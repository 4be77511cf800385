/* Where the JWK set comes from: a file:// path or an http(s):// URL
 * (libcurl). Called from init and from the plugin's refresh thread, never
 * from a request thread. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oauth_source.h"

/* A JWK set is a few keys; anything much larger is not one. */
#define JWKS_MAX_BYTES (1024 * 1024)

struct fetch_buffer {
    char *data;
    size_t len;
    bool too_large;
};

static int read_file(const char *path, struct fetch_buffer *b, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    b->data = malloc(JWKS_MAX_BYTES + 1);
    if (b->data)
        b->len = fread(b->data, 1, JWKS_MAX_BYTES + 1, f);
    bool failed = !b->data || ferror(f);
    fclose(f);
    if (failed || b->len > JWKS_MAX_BYTES) {
        snprintf(err, errlen, "%s: %s", path, failed ? "cannot be read" : "larger than 1 MiB");
        return -1;
    }
    return 0;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct fetch_buffer *b = userdata;
    size_t n = size * nmemb;
    if (b->len + n > JWKS_MAX_BYTES) {
        b->too_large = true;
        return 0; /* libcurl stops the transfer */
    }
    char *grown = realloc(b->data, b->len + n + 1);
    if (!grown)
        return 0;
    b->data = grown;
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    return n;
}

static int read_url(const char *url, const char *ca_file, long timeout_ms, struct fetch_buffer *b, char *err,
                    size_t errlen)
{
    CURL *curl = curl_easy_init();
    if (!curl) {
        snprintf(err, errlen, "curl_easy_init failed");
        return -1;
    }
    char curl_err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_err);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, b);
    /* An identity provider with a private CA: its certificate chains to
     * that CA, not to one of the system's bundle. */
    if (ca_file && ca_file[0])
        curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file);
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_cleanup(curl);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s: %s", url,
                 b->too_large  ? "larger than 1 MiB"
                 : curl_err[0] ? curl_err
                               : curl_easy_strerror(rc));
        return -1;
    }
    return 0;
}

int oauth_source_check(const char *url, char *err, size_t errlen)
{
    if (strncmp(url, "file://", 7) == 0 || strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0)
        return 0;
    snprintf(err, errlen, "'%s' is neither a file://, an http:// nor an https:// URL", url);
    return -1;
}

int oauth_source_global_init(char *err, size_t errlen)
{
    CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "curl_global_init: %s", curl_easy_strerror(rc));
        return -1;
    }
    return 0;
}

void oauth_source_global_cleanup(void)
{
    curl_global_cleanup();
}

int oauth_source_fetch(const char *url, const char *ca_file, long timeout_ms, struct jwks **out, char *err,
                       size_t errlen)
{
    struct fetch_buffer b = {0};
    int rc = strncmp(url, "file://", 7) == 0 ? read_file(url + 7, &b, err, errlen)
                                             : read_url(url, ca_file, timeout_ms, &b, err, errlen);
    if (rc == 0) {
        char why[256];
        if (jwks_parse(b.data ? b.data : "", b.len, out, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s: %s", url, why);
            rc = -1;
        }
    }
    free(b.data);
    return rc;
}
