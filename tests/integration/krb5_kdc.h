/* A throwaway MIT Kerberos realm for tests: a KDC database, krb5.conf and
 * kdc.conf in a temporary directory, krb5kdc on a free loopback port, and
 * principals with keytabs made by kadmin.local. Starting it points this
 * process's KRB5_CONFIG, KRB5_KDC_PROFILE and KRB5CCNAME at the realm, so
 * the processes the test starts (cairnd, kinit) use it too.
 *
 * Thread-safety: owned by the test thread; it changes the environment. */
#ifndef CAIRN_TESTS_KRB5_KDC_H
#define CAIRN_TESTS_KRB5_KDC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct test_kdc {
    char dir[256];  /* the realm's files */
    char realm[64]; /* CAIRN.TEST */
    int port;       /* krb5kdc's TCP and UDP port on 127.0.0.1 */
    pid_t pid;      /* krb5kdc, 0 when not running */
};

/* True when krb5kdc, kdb5_util, kadmin.local and kinit are installed. */
bool test_kdc_available(void);
/* Creates the realm and starts its KDC; 0, or -1 with the reason in why. */
int test_kdc_start(struct test_kdc *k, char *why, size_t whylen);
/* Adds `principal` (e.g. kafka/localhost) with a random key and exports it
 * to k->dir/<file>; fills path. 0, or -1 with the reason in why. */
int test_kdc_add_principal(struct test_kdc *k, const char *principal, const char *file, char *path, size_t pathlen,
                           char *why, size_t whylen);
/* Runs one kadmin.local query (e.g. "delprinc -force ghost", after which
 * ghost's keytab stays but the KDC no longer knows it). 0, or -1. */
int test_kdc_admin(struct test_kdc *k, const char *query);
/* Stops the KDC and removes the realm's files. */
void test_kdc_stop(struct test_kdc *k);

#endif
