/* Test plugin: built for a future ABI major. */
#include <stddef.h>

#include "cairn/plugin.h"

static int abi2_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    (void)host, (void)err, (void)errlen;
    *instance = NULL;
    return CAIRN_OK;
}

static void abi2_fini(void *instance)
{
    (void)instance;
}

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = 2,
    .abi_minor = 3,
    .name = "test_abi2",
    .version = "2.0",
    .init = abi2_init,
    .fini = abi2_fini,
};

CAIRN_PLUGIN_DEFINE(descriptor)
