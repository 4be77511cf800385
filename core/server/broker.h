/* The broker process: wires configuration, logs, cluster metadata, request
 * handlers and the network layer together, and takes them down in order.
 *
 * Thread-safety: broker_start and broker_stop run on the main thread. */
#ifndef CAIRN_SERVER_BROKER_H
#define CAIRN_SERVER_BROKER_H

#include <stddef.h>

struct broker;
struct broker_config;

/* Starts everything; on failure returns -1 with one line in err naming the
 * part that failed and why. Takes ownership of cfg. */
int broker_start(struct broker_config *cfg, struct broker **out, char *err, size_t errlen);
/* Graceful stop: finish in-flight requests, flush logs, write the
 * clean-shutdown marker, free everything. */
void broker_stop(struct broker *b);
/* Re-reads the certificates and keys of every SSL listener, the quorum's
 * controller listener, and the outgoing links (controller and
 * inter-broker; SIGHUP): new connections use them, open ones keep theirs.
 * Returns the parts that failed (they keep their previous certificates;
 * logged). NULL is fine. */
int broker_reload_tls(struct broker *b);

#endif
