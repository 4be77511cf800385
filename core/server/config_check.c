/* cairnd --check-config; see config_check.h. */
#include "server/config_check.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/listeners.h"
#include "handlers/sasl.h"
#include "net/server.h"
#include "plugin/plugin_host.h"
#include "server/links.h"
#include "server/quorum.h"

/* broker_start's start_network: a broker role needs a listener besides the
 * quorum's controller listeners. */
static int check_broker_listeners(const struct broker_config *cfg, char *err, size_t errlen)
{
    struct listener_spec specs[NET_MAX_LISTENERS];
    int n = config_parse_listeners(config_get_string(cfg, "listeners"), specs, NET_MAX_LISTENERS, err, errlen);
    if (n < 0)
        return -1;
    if (n == 0) {
        snprintf(err, errlen, "listeners is empty: nothing to serve on");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (!quorum_enabled(cfg) || !quorum_is_controller_listener(cfg, specs[i].name))
            return 0;
    snprintf(err, errlen, "listeners holds only controller listeners: the broker role needs one more");
    return -1;
}

/* quorum_start's check_sasl_listener, as far as the config tells: which
 * mechanisms a plugin serves is known once it is initialised only, so
 * this checks that the listener enables the node's own mechanism. */
static int check_controller_sasl(const struct broker_config *cfg, const char *mechanism, char *err, size_t errlen)
{
    size_t count = 0;
    const char *const *names = config_get_list(cfg, "controller.listener.names", &count);
    if (count == 0)
        return 0;
    int protocol = config_security_protocol_id(config_listener_security_protocol(cfg, names[0]));
    if (protocol != NET_SECURITY_SASL_PLAINTEXT && protocol != NET_SECURITY_SASL_SSL)
        return 0;
    const char *enabled[16];
    char buf[1024], list[256] = "";
    int n = sasl_enabled_mechanisms(cfg, names[0], enabled, 16, buf, sizeof buf);
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof list; i++) {
        if (strcmp(enabled[i], mechanism) == 0)
            return 0;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? "," : "", enabled[i]);
    }
    snprintf(err, errlen,
             "sasl.mechanism.controller.protocol=%s is not one of the mechanisms the controller listener %s "
             "serves (%s): the other controllers would refuse it too",
             mechanism, names[0], n ? list : "none enabled");
    return -1;
}

int server_config_check(const struct broker_config *cfg, char *err, size_t errlen)
{
    /* main's choice between the two start-ups. */
    bool broker_role = !(quorum_controller_only(cfg) && quorum_enabled(cfg));
    if (broker_role && check_broker_listeners(cfg, err, errlen) != 0)
        return -1;
    char mechanism[32];
    if (quorum_enabled(cfg)) {
        if (server_link_check(cfg, SERVER_LINK_CONTROLLER, mechanism, sizeof mechanism, err, errlen) != 0)
            return -1;
        if (quorum_is_voter(cfg) && mechanism[0] && check_controller_sasl(cfg, mechanism, err, errlen) != 0)
            return -1;
    }
    if (broker_role && server_link_check(cfg, SERVER_LINK_INTER_BROKER, mechanism, sizeof mechanism, err, errlen) != 0)
        return -1;
    return plugin_host_check_config(cfg, err, errlen);
}
