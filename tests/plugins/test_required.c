/* Test plugin: a required string key and an integer key. Its fini writes
 * a marker file (plugin.test_required.fini.file) so tests can see that an
 * initialised plugin is finalised when a later one fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/plugin.h"

static const struct cairn_config_key key_endpoint = {sizeof key_endpoint, "endpoint", CAIRN_CONFIG_STRING, NULL,
                                                     "Required: where to connect."};
static const struct cairn_config_key key_port = {sizeof key_port, "port", CAIRN_CONFIG_INT, "8080", "A port."};
static const struct cairn_config_key key_fini = {sizeof key_fini, "fini.file", CAIRN_CONFIG_STRING, "",
                                                 "Written at fini."};
static const struct cairn_config_key *const keys[] = {&key_endpoint, &key_port, &key_fini};

static int req_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    const char *fini_file = "";
    if (host->config_string(host->ctx, "fini.file", &fini_file, err, errlen) != CAIRN_OK)
        return CAIRN_ERROR;
    *instance = strdup(fini_file);
    return *instance ? CAIRN_OK : CAIRN_ERROR;
}

static void req_fini(void *instance)
{
    char *path = instance;
    if (path[0]) {
        FILE *f = fopen(path, "w");
        if (f) {
            fputs("fini\n", f);
            fclose(f);
        }
    }
    free(path);
}

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "test_required",
    .version = "1.0",
    .config_keys = keys,
    .config_key_count = sizeof keys / sizeof keys[0],
    .init = req_init,
    .fini = req_fini,
};

CAIRN_PLUGIN_DEFINE(descriptor)
