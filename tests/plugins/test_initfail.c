/* Test plugin: init fails with a reason. */
#include <stdio.h>

#include "cairn/plugin.h"

static int fail_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    (void)host;
    *instance = NULL;
    snprintf(err, errlen, "cannot reach the policy server at 192.0.2.1:8181");
    return CAIRN_ERROR;
}

static void fail_fini(void *instance)
{
    (void)instance;
}

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "test_initfail",
    .version = "1.0",
    .init = fail_init,
    .fini = fail_fini,
};

CAIRN_PLUGIN_DEFINE(descriptor)
