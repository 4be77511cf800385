/* cairnd --check-config: the checks start-up makes of a loaded config that
 * need no resource, run without binding a port, opening a log directory,
 * initialising a plugin or contacting another node or an identity
 * provider. Main thread only; cfg is only read. */
#ifndef CAIRN_SERVER_CONFIG_CHECK_H
#define CAIRN_SERVER_CONFIG_CHECK_H

#include <stddef.h>

struct broker_config;

/* After config_load_strict (parsing, values, cross-key checks, every key
 * known): the role's listeners, the controller and
 * inter-broker links' SASL mechanism and JAAS entry, a SASL controller
 * listener enabling the mechanism the node authenticates with, and each
 * listed plugin's keys against its descriptor (plugin_host_check_config).
 * Returns 0, or -1 with err as start-up would word it. */
int server_config_check(const struct broker_config *cfg, char *err, size_t errlen);

#endif
