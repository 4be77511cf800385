#!/usr/bin/python3
"""kafka-python 2.0 (Debian's python3-kafka) on cairnd's secured listeners;
run by ../run_with_secure_cairnd.sh, whose CAIRN_TEST_* environment names
the listeners, certificates, users and OAuth key.

    secure.py ssl|mtls|sasl_plaintext|sasl_ssl|oauthbearer

Each mode produces records and reads them back with every credential the
listener takes, then checks the refusals: a wrong password or mechanism,
an untrusted server certificate, a missing, foreign or expired client
certificate, an expired token or one signed with a key the broker does not
know. A refused client must not get in (and so gets no data); the audit
log must show the broker's verdict and the principal it authenticated.

kafka-python 2.0 speaks SaslHandshake v0 and bare SASL tokens, where the
broker answers a failed PLAIN or SCRAM login by closing the connection, as
Kafka does: the client sees a closed connection, not an error code, so the
refusal's reason is checked in the audit log.

Exit status: 0 passed, 1 failed, 77 skipped.
"""
import base64
import json
import os
import subprocess
import sys
import time

SKIP = 77
RECORDS = 20

try:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic
    from kafka.errors import KafkaError, KafkaTimeoutError, TopicAuthorizationFailedError
    from kafka.oauth.abstract import AbstractTokenProvider
except ImportError:
    print("kafka-python is not installed (apt-get install python3-kafka): SKIPPED")
    sys.exit(SKIP)

env = os.environ


class SecureError(Exception):
    pass


def cert(name):
    return os.path.join(env["CAIRN_TEST_CERTS"], name)


def tls(ca="ca.pem", client=None):
    """kafka-python's TLS settings: trust ca; client names a certificate/key pair or None."""
    conf = {"ssl_cafile": cert(ca), "ssl_check_hostname": True}
    if client:
        conf.update(ssl_certfile=cert(f"{client}.pem"), ssl_keyfile=cert(f"{client}.key"))
    return conf


def scram_or_plain(mechanism, user, password):
    return {"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}


class StaticToken(AbstractTokenProvider):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def token(self):
        return self.value


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def der_signature_to_jws(der):
    """ECDSA's DER SEQUENCE { INTEGER r, INTEGER s } as JWS's 32-byte r || s (RFC 7518 3.4)."""
    if der[0] != 0x30:
        raise SecureError("openssl gave no DER ECDSA signature")
    pos = 3 if der[1] & 0x80 else 2
    out = b""
    for _ in range(2):
        if der[pos] != 0x02:
            raise SecureError("openssl gave no DER ECDSA signature")
        length = der[pos + 1]
        out += der[pos + 2:pos + 2 + length].lstrip(b"\0").rjust(32, b"\0")
        pos += 2 + length
    return out


def jwt(key_file, sub, **claims):
    """An ES256 JWT signed with the EC key in key_file (openssl does the signing)."""
    now = int(time.time())
    header = {"alg": "ES256", "typ": "JWT", "kid": env["CAIRN_TEST_OAUTH_KID"]}
    payload = {"sub": sub, "iss": env["CAIRN_TEST_OAUTH_ISSUER"], "aud": env["CAIRN_TEST_OAUTH_AUDIENCE"],
               "iat": now, "exp": now + 600, "scope": "kafka"}
    payload.update(claims)
    signed = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(payload).encode())}"
    signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_file], input=signed.encode(),
                               capture_output=True, check=True).stdout
    return f"{signed}.{b64url(der_signature_to_jws(signature))}"


def oauth(token):
    return {"sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": StaticToken(token)}


def client_conf(bootstrap, protocol, extra):
    conf = {"bootstrap_servers": bootstrap, "security_protocol": protocol, "client_id": "cairn-python-secure",
            "request_timeout_ms": 20000}
    conf.update(extra)
    return conf


def record_for(label, i):
    return f"{label}-key-{i}".encode(), f"{label}-value-{i}".encode(), [("seq", str(i).encode())]


def round_trip(bootstrap, protocol, extra, label):
    """Creates a topic, produces RECORDS records, reads them back without a
    group and checks each arrived once and unchanged."""
    conf = client_conf(bootstrap, protocol, extra)
    topic = f"secure-{label}-{int(time.time() * 1000)}"
    admin = KafkaAdminClient(**conf)
    admin.create_topics([NewTopic(topic, 2, 1)], timeout_ms=10000)
    producer = KafkaProducer(acks="all", **conf)
    futures = []
    for i in range(RECORDS):
        key, value, headers = record_for(label, i)
        futures.append(producer.send(topic, key=key, value=value, headers=headers))
    producer.flush(30)
    for f in futures:
        f.get(timeout=30)
    producer.close(10)

    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, **conf)
    tps = [TopicPartition(topic, p) for p in range(2)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    seen = set()
    deadline = time.time() + 30
    while len(seen) < RECORDS:
        if time.time() > deadline:
            raise SecureError(f"{label}: {len(seen)} of {RECORDS} records after 30 s")
        for messages in consumer.poll(timeout_ms=500).values():
            for m in messages:
                seq = int(dict(m.headers)["seq"])
                key, value, _ = record_for(label, seq)
                if m.key != key or m.value != value:
                    raise SecureError(f"{label}: record {seq} differs from what was sent")
                if seq in seen:
                    raise SecureError(f"{label}: record {seq} read twice")
                seen.add(seq)
    consumer.close()
    admin.delete_topics([topic], timeout_ms=10000)
    admin.close()
    print(f"kafka-python {label}: {RECORDS} records produced and consumed")


def expect_refused(bootstrap, protocol, extra, label, error_names=None, message_part=None):
    """A consumer of a refused client must fail to bootstrap, before it could
    fetch anything; error_names, when given, are the error classes allowed,
    and message_part a text the error must contain."""
    conf = client_conf(bootstrap, protocol, extra)
    conf["api_version_auto_timeout_ms"] = 5000
    try:
        consumer = KafkaConsumer("anything", group_id=None, **conf)
    except (KafkaError, OSError) as e:
        name = type(e).__name__
        if error_names and name not in error_names:
            raise SecureError(f"{label}: refused with {name}: {e}, expected one of {error_names}")
        if message_part and message_part not in str(e):
            raise SecureError(f"{label}: refused with {name}: {e}, expected '{message_part}'")
        print(f"kafka-python {label}: refused ({name}: {e})")
        return
    records = consumer.poll(timeout_ms=2000)
    consumer.close()
    raise SecureError(f"{label}: the client was let in ({len(records)} partitions with records)")


def expect_others_denied():
    """alice makes a topic under her prefix; User:ANONYMOUS (the SSL listener
    without client certificates) may not write to it."""
    alice = client_conf(env["CAIRN_TEST_MTLS"], "SSL", tls("ca.pem", "client"))
    topic = f"secure-mtls-acl-{int(time.time() * 1000)}"
    admin = KafkaAdminClient(**alice)
    admin.create_topics([NewTopic(topic, 1, 1)], timeout_ms=10000)
    producer = KafkaProducer(acks="all", max_block_ms=5000, **client_conf(env["CAIRN_TEST_SSL"], "SSL", tls()))
    try:
        producer.send(topic, value=b"not yours").get(timeout=30)
        raise SecureError(f"User:ANONYMOUS wrote to {topic}")
    except (TopicAuthorizationFailedError, KafkaTimeoutError) as e:
        # kafka-python 2.0 waits for metadata without the topic's
        # TOPIC_AUTHORIZATION_FAILED until max_block_ms: the audit log says why.
        print(f"kafka-python: User:ANONYMOUS may not write to {topic}: {type(e).__name__}")
    finally:
        producer.close(10)
    wait_for_audit(lambda ev: ev.get("type") == "authorization" and ev.get("principal") == "User:ANONYMOUS"
                   and ev.get("listener") == "SSL" and ev.get("resource_name") == topic
                   and ev.get("decision") == "denied", f"a denied authorization of User:ANONYMOUS on {topic}")
    consumer = KafkaConsumer(group_id=None, **alice)
    tp = TopicPartition(topic, 0)
    written = consumer.end_offsets([tp])[tp]
    consumer.close()
    if written != 0:
        raise SecureError(f"{topic} holds {written} records after a denied write")
    admin.delete_topics([topic], timeout_ms=10000)
    admin.close()


def wait_for_audit(matches, what):
    """Waits up to 20 s for an audit event for which matches(event) holds; returns it."""
    deadline = time.time() + 20
    while True:
        try:
            with open(env["CAIRN_TEST_AUDIT_LOG"]) as f:
                events = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            events = []
        for ev in events:
            if matches(ev):
                return ev
        if time.time() > deadline:
            raise SecureError(f"the audit log has no {what}")
        time.sleep(0.1)


def expect_audited(principal, listener, success, mechanism=None, error_part=None):
    """Waits up to 20 s for the audit log's authentication event of principal
    (one of a tuple) on listener, with mechanism and an error containing
    error_part when given."""
    principals = principal if isinstance(principal, tuple) else (principal,)
    ev = wait_for_audit(lambda ev: ev.get("type") == "authentication" and ev.get("principal") in principals
                        and ev.get("listener") == listener and ev.get("success") is success
                        and (mechanism is None or ev.get("mechanism") == mechanism)
                        and (error_part is None or error_part in (ev.get("error") or "")),
                        f"authentication of {principal} on {listener} ({mechanism or 'any mechanism'}, "
                        f"success {success}, {error_part})")
    print(f"kafka-python: audit log has {ev['principal']} on {listener} ({ev['mechanism']}, success {success}, "
          f"{ev.get('error')})")


def expect_broker_log(pattern):
    """Waits up to 20 s for a line of the broker's log containing pattern."""
    deadline = time.time() + 20
    while True:
        with open(env["CAIRN_TEST_BROKER_LOG"]) as f:
            line = next((l for l in f if pattern in l), None)
        if line:
            print(f"kafka-python: broker log: {line.split(' ', 1)[1].strip()}")
            return
        if time.time() > deadline:
            raise SecureError(f"the broker log has no line with '{pattern}'")
        time.sleep(0.1)


USERS = [("SCRAM-SHA-256", "scram256", "scram256-secret"), ("SCRAM-SHA-512", "scram512", "scram512-secret"),
         ("PLAIN", "plainuser", "plain-secret")]
NOT_LET_IN = {"NoBrokersAvailable", "KafkaConnectionError", "AuthenticationFailedError"}


def sasl_listener(bootstrap, listener, ssl_conf):
    for mechanism, user, password in USERS:
        round_trip(bootstrap, listener, {**ssl_conf, **scram_or_plain(mechanism, user, password)},
                   f"{listener}-{mechanism}")
        expect_audited(f"User:{user}", listener, True, mechanism)
    for mechanism, user, _ in USERS:
        expect_refused(bootstrap, listener, {**ssl_conf, **scram_or_plain(mechanism, user, "wrong-password")},
                       f"{listener}-{mechanism}-wrong-password", NOT_LET_IN)
        # A refused login is audited as the user it claimed to be.
        if mechanism == "PLAIN":
            expect_audited(f"User:{user}", listener, False, mechanism, "Invalid username or password")
        else:
            expect_audited(f"User:{user}", listener, False, mechanism, "invalid proof (wrong password)")


def main(mode):
    if mode == "ssl":
        round_trip(env["CAIRN_TEST_SSL"], "SSL", tls(), "ssl")
        expect_refused(env["CAIRN_TEST_SSL"], "SSL", tls("other-ca.pem"), "ssl-untrusted-server",
                       {"SSLCertVerificationError"})
        # A listener whose certificate expired.
        expect_refused(env["CAIRN_TEST_EXPIRED_SSL"], "SSL", tls(), "ssl-expired-server", {"SSLCertVerificationError"},
                       "certificate has expired")
    elif mode == "mtls":
        # secure-mtls* is User:alice's alone (ACLs): the round trip only
        # works when the ACLs see the principal auth-mtls maps.
        round_trip(env["CAIRN_TEST_MTLS"], "SSL", tls("ca.pem", "client"), "mtls")
        expect_audited("User:alice", "MTLS", True)
        expect_others_denied()
        for client, reason in ((None, "peer did not return a certificate"),
                               ("stranger", "unable to get local issuer certificate"),
                               ("expired", "certificate has expired")):
            expect_refused(env["CAIRN_TEST_MTLS"], "SSL", tls("ca.pem", client),
                           f"mtls-{client or 'no'}-client-certificate", {"SSLEOFError", "SSLError", "NoBrokersAvailable",
                                                                         "KafkaConnectionError"})
            expect_audited("User:ANONYMOUS", "MTLS", False, "SSL", reason)
        expect_refused(env["CAIRN_TEST_MTLS"], "SSL", tls("other-ca.pem", "client"), "mtls-untrusted-server",
                       {"SSLCertVerificationError"})
    elif mode == "sasl_plaintext":
        sasl_listener(env["CAIRN_TEST_SASL_PLAINTEXT"], "SASL_PLAINTEXT", {})
        # OAUTHBEARER is enabled on SASL_SSL only. The broker answers the
        # handshake with UNSUPPORTED_SASL_MECHANISM, which kafka-python 2.0
        # takes as a failed connection.
        expect_refused(env["CAIRN_TEST_SASL_PLAINTEXT"], "SASL_PLAINTEXT",
                       oauth(jwt(env["CAIRN_TEST_OAUTH_KEY"], "oauth-client")), "SASL_PLAINTEXT-wrong-mechanism",
                       NOT_LET_IN | {"UnsupportedSaslMechanismError"})
        expect_broker_log("asked for SASL mechanism 'OAUTHBEARER', which is not enabled")
    elif mode == "sasl_ssl":
        sasl_listener(env["CAIRN_TEST_SASL_SSL"], "SASL_SSL", tls())
        expect_refused(env["CAIRN_TEST_SASL_SSL"], "SASL_SSL", {**tls("other-ca.pem"), **scram_or_plain(*USERS[0])},
                       "SASL_SSL-untrusted-server", {"SSLCertVerificationError"})
    elif mode == "oauthbearer":
        bootstrap = env["CAIRN_TEST_SASL_SSL"]
        round_trip(bootstrap, "SASL_SSL", {**tls(), **oauth(jwt(env["CAIRN_TEST_OAUTH_KEY"], "oauth-client"))},
                   "oauthbearer")
        expect_audited("User:oauth-client", "SASL_SSL", True, "OAUTHBEARER")
        now = int(time.time())
        # kafka-python takes the broker's invalid_token challenge as a refusal
        # and closes; the broker logs why it refused the token.
        refused = [("expired", jwt(env["CAIRN_TEST_OAUTH_KEY"], "oauth-client", iat=now - 7200, exp=now - 3600),
                    "token refused: the token expired"),
                   ("unknown-key", jwt(env["CAIRN_TEST_OAUTH_UNKNOWN_KEY"], "oauth-client"),
                    "token refused: the ES256 signature does not verify"),
                   ("wrong-audience", jwt(env["CAIRN_TEST_OAUTH_KEY"], "oauth-client", aud="someone-else"),
                    "token refused: the token's audience is not one of")]
        for what, token, reason in refused:
            expect_refused(bootstrap, "SASL_SSL", {**tls(), **oauth(token)}, f"oauthbearer-{what}-token",
                           {"AuthenticationFailedError"})
            expect_broker_log(reason)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        sys.exit(main(sys.argv[1]))
    except (SecureError, KafkaError) as e:
        print(f"kafka-python secure: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
