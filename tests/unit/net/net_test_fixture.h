/* A started server for the cmocka tests of the network layer. Include
 * <cmocka.h> (with its prerequisites) and net_test_support.h first. */
#ifndef CAIRN_TEST_NET_FIXTURE_H
#define CAIRN_TEST_NET_FIXTURE_H

struct fixture {
    struct test_ctx ctx;
    struct net_server *server;
    int port;
};

static inline void fixture_start_with(struct fixture *f, const struct net_config *cfg, net_request_handler handler)
{
    char err[256] = "";
    test_ctx_init(&f->ctx);
    int rc = net_server_start(cfg, handler, &f->ctx, &f->server, err, sizeof(err));
    if (rc != 0)
        fail_msg("net_server_start: %s", err);
    f->port = net_server_bound_port(f->server, 0);
    assert_true(f->port > 0);
}

static inline void fixture_finish(struct fixture *f)
{
    net_server_stop(f->server, 5000);
    test_ctx_finish(&f->ctx);
    net_server_free(f->server);
}

#endif
