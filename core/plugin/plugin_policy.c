/* Topic policies (ABI 1.3): every loaded policy plugin must allow a topic
 * creation, partition addition or topic config change; the first refusal
 * wins and its message goes back to the client. */
#include <stdio.h>
#include <string.h>

#include "plugin/plugin_internal.h"

bool plugin_host_policy_check(struct plugin_host *host, const struct cairn_request_info *request,
                              const struct cairn_policy_request *change, char *message, size_t message_len)
{
    if (!host || host->policy_count == 0)
        return true;
    for (size_t i = 0; i < host->policy_count; i++) {
        struct loaded_plugin *p = host->policies[i];
        message[0] = '\0';
        int rc = p->desc->policy->check(p->instance, request, change, message, message_len);
        if (rc == CAIRN_OK)
            continue;
        /* A plugin may leave the buffer unterminated or empty: say who refused. */
        message[message_len - 1] = '\0';
        if (!message[0])
            snprintf(message, message_len, "refused by policy plugin '%s'", p->name);
        return false;
    }
    message[0] = '\0';
    return true;
}
