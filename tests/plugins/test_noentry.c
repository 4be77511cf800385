/* Test plugin: a shared object without the entry symbol. */
#include "cairn/types.h"

CAIRN_PLUGIN_EXPORT int test_noentry_something(void);
int test_noentry_something(void)
{
    return 42;
}
