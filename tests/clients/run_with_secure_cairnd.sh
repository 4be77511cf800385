#!/usr/bin/env bash
# Runs a client test against a fresh cairnd with every secured listener
# type, as run_with_cairnd.sh does for PLAINTEXT. Made at start, in a
# temporary dir with the openssl command: a test CA, the broker's
# certificate and client certificates, an EC key and its JWK set for
# OAUTHBEARER; a sasldb with a PLAIN user (saslpasswd2), and SCRAM users
# made with `cairn user create`. The listeners:
#
#   PLAINTEXT       the operator's (user creation)
#   SSL             server certificate only
#   EXPIRED (SSL)   the same with an expired server certificate
#   MTLS (SSL)      ssl.client.auth=required; auth-mtls maps
#                   CN=alice,OU=Streams,... to User:alice, whom ACLs
#                   (acl-authorizer) give the topics and groups secure-mtls*
#   SASL_PLAINTEXT  SCRAM-SHA-256, SCRAM-SHA-512, PLAIN
#   SASL_SSL        the same and OAUTHBEARER (auth-oauth, file:// JWK set)
#
# The command gets them in its environment (CAIRN_TEST_*, listed below
# where they are exported) and runs with the broker's audit log written.
# Exits with the command's status (77 means skipped); the dir is kept when
# it failed.
#
# usage: run_with_secure_cairnd.sh CAIRND CAIRN PLUGIN_DIR -- COMMAND [ARGS...]
set -euo pipefail

usage="usage: run_with_secure_cairnd.sh CAIRND CAIRN PLUGIN_DIR -- COMMAND [ARGS...]"
cairnd="${1:?$usage}"
cairn="${2:?$usage}"
plugin_dir="${3:?$usage}"
shift 3
[ "${1:-}" = "--" ] || { echo "missing -- before the command" >&2; exit 2; }
shift
for tool in "$cairnd" "$cairn"; do [ -x "$tool" ] || { echo "$tool not found" >&2; exit 2; }; done
[ -d "$plugin_dir" ] || { echo "plugin dir $plugin_dir not found" >&2; exit 2; }
command -v openssl >/dev/null 2>&1 || { echo "openssl is not installed: SKIPPED"; exit 77; }
[ -x /usr/sbin/saslpasswd2 ] || { echo "saslpasswd2 is not installed (sasl2-bin): SKIPPED"; exit 77; }

dir="$(mktemp -d /tmp/cairn-secure-client-test.XXXXXX)"
certs="$dir/certs"
mkdir -p "$certs/expired-ca/newcerts"

# Certificates, with P-256 keys (RSA key generation takes seconds on a
# loaded machine): ca.pem, other-ca.pem (a CA the broker and clients do not
# trust), server.pem (localhost, 127.0.0.1; certificate and key), and the
# client pairs client (CN=alice,OU=Streams,...), stranger (signed by
# other-ca) and expired (signed by ca, valid only in 2020); expired-server.pem,
# the broker's certificate and key again but valid only in 2020.
q() { # runs an openssl command quietly; its output is shown when it fails
    "$@" >"$dir/openssl.log" 2>&1 || { echo "failed: $*" >&2; cat "$dir/openssl.log" >&2; exit 1; }
}
newkey=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
mkca() { # name subject
    q openssl req -x509 "${newkey[@]}" -keyout "$certs/$1.key" -out "$certs/$1.pem" -days 30 -subj "$2"
}
mkleaf() { # name subject ca ext
    q openssl req "${newkey[@]}" -keyout "$certs/$1.key" -out "$certs/$1.csr" -subj "$2"
    q openssl x509 -req -in "$certs/$1.csr" -CA "$certs/$3.pem" -CAkey "$certs/$3.key" -CAcreateserial \
        -out "$certs/$1.pem" -days 30 -extfile <(printf '%s\n' "$4")
}
mkca ca "/CN=Cairn Client Test CA"
mkca other-ca "/CN=Cairn Other CA"
mkleaf server "/CN=localhost/O=Cairn" ca "subjectAltName=DNS:localhost,IP:127.0.0.1"
cat "$certs/server.key" >>"$certs/server.pem"
client_ext="subjectAltName=DNS:alice.example"$'\n'"extendedKeyUsage=clientAuth"
mkleaf client "/C=US/O=Example/OU=Streams/CN=alice" ca "$client_ext"
mkleaf stranger "/CN=stranger" other-ca "$client_ext"
# openssl x509 cannot backdate; openssl ca takes explicit dates.
: >"$certs/expired-ca/index.txt"
echo 01 >"$certs/expired-ca/serial"
cat >"$certs/expired-ca/ca.cnf" <<CNF
[ca]
default_ca = test
[test]
dir = $certs/expired-ca
database = \$dir/index.txt
new_certs_dir = \$dir/newcerts
serial = \$dir/serial
default_md = sha256
policy = any
[any]
commonName = supplied
CNF
mkexpired() { # name subject ext
    q openssl req "${newkey[@]}" -keyout "$certs/$1.key" -out "$certs/$1.csr" -subj "$2"
    q openssl ca -batch -config "$certs/expired-ca/ca.cnf" -cert "$certs/ca.pem" -keyfile "$certs/ca.key" \
        -in "$certs/$1.csr" -out "$certs/$1.pem" -startdate 20200101000000Z -enddate 20200201000000Z -notext \
        -extfile <(printf '%s\n' "$3")
}
mkexpired expired "/CN=mallory" "$client_ext"
mkexpired expired-server "/CN=localhost" "subjectAltName=DNS:localhost,IP:127.0.0.1"
cat "$certs/expired-server.key" >>"$certs/expired-server.pem"
for f in ca other-ca server client stranger expired expired-server; do
    [ -s "$certs/$f.pem" ] || { echo "openssl did not make $certs/$f.pem" >&2; exit 1; }
done

# OAUTHBEARER (ES256): the signing key, a second key the broker does not
# know, and the JWK set with the first one's public point. A P-256 public
# key's DER ends with the point 04 || x || y.
for k in oauth oauth-unknown; do
    q openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/$k.key"
done
q openssl pkey -in "$dir/oauth.key" -pubout -outform DER -out "$dir/oauth.pub.der"
python3 - "$dir/oauth.pub.der" >"$dir/jwks.json" <<'PY'
import base64, json, sys
def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
point = open(sys.argv[1], "rb").read()[-65:]
assert point[0] == 4
print(json.dumps({"keys": [{"kty": "EC", "crv": "P-256", "kid": "cairn-client-test", "use": "sig", "alg": "ES256",
                            "x": b64url(point[1:33]), "y": b64url(point[33:])}]}))
PY

# PLAIN: one user in a sasldb for the auth-sasl plugin.
printf %s 'plain-secret' | /usr/sbin/saslpasswd2 -p -c -f "$dir/sasldb" -u cairn -a cairn plainuser

read -ra ports <<<"$(python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()')"
plaintext="127.0.0.1:${ports[0]}"
ssl="127.0.0.1:${ports[1]}"
mtls="127.0.0.1:${ports[2]}"
sasl_plaintext="127.0.0.1:${ports[3]}"
sasl_ssl="127.0.0.1:${ports[4]}"
expired="127.0.0.1:${ports[5]}"
listeners="PLAINTEXT://$plaintext,SSL://$ssl,MTLS://$mtls,SASL_PLAINTEXT://$sasl_plaintext,SASL_SSL://$sasl_ssl"
listeners="$listeners,EXPIRED://$expired"
scram_plain="SCRAM-SHA-256,SCRAM-SHA-512,PLAIN"
"$cairnd" --override "listeners=$listeners" --override "advertised.listeners=$listeners" \
    --override "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,EXPIRED:SSL" \
    --override "log.dirs=$dir/data" --override "num.partitions=2" \
    --override "ssl.keystore.location=$certs/server.pem" --override "ssl.truststore.location=$certs/ca.pem" \
    --override "listener.name.mtls.ssl.client.auth=required" \
    --override "listener.name.expired.ssl.keystore.location=$certs/expired-server.pem" \
    --override "sasl.enabled.mechanisms=$scram_plain,OAUTHBEARER" \
    --override "listener.name.sasl_plaintext.sasl.enabled.mechanisms=$scram_plain" \
    --override "plugin.path=$plugin_dir" --override "plugins=audit,auth-sasl,auth-mtls,auth-oauth,acl-authorizer" \
    --override "plugin.acl-authorizer.allow.everyone.if.no.acl.found=true" \
    --override "plugin.audit.file.path=$dir/audit.log" \
    --override "plugin.auth-sasl.sasldb_path=$dir/sasldb" --override "plugin.auth-sasl.realm=cairn" \
    --override "plugin.auth-mtls.ssl.principal.mapping.rules=RULE:^CN=([^,]*),OU=Streams,.*\$/\$1/L,DEFAULT" \
    --override "plugin.auth-oauth.sasl.oauthbearer.jwks.endpoint.url=file://$dir/jwks.json" \
    --override "plugin.auth-oauth.sasl.oauthbearer.expected.audience=cairn-client-test" \
    --override "plugin.auth-oauth.sasl.oauthbearer.expected.issuer=https://idp.cairn.invalid" \
    >"$dir/cairnd.log" 2>&1 &
pid=$!

stop_broker() {
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}
trap stop_broker EXIT

ready=0
for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || break
    listening=0
    for p in "${ports[@]}"; do
        if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then listening=$((listening + 1)); fi
    done
    if [ "$listening" = "${#ports[@]}" ]; then ready=1; break; fi
    sleep 0.1
done
if [ "$ready" != 1 ]; then
    echo "cairnd did not start; last lines of $dir/cairnd.log:" >&2
    tail -n 20 "$dir/cairnd.log" >&2
    exit 1
fi

# SCRAM users, stored in the metadata log through the PLAINTEXT listener.
for user_mech in scram256:SCRAM-SHA-256 scram512:SCRAM-SHA-512; do
    user="${user_mech%%:*}" mech="${user_mech#*:}"
    if ! "$cairn" user create "$user" --mechanism "$mech" --password "$user-secret" -b "$plaintext" >"$dir/user.log" 2>&1; then
        echo "cairn user create $user failed:" >&2
        cat "$dir/user.log" >&2
        exit 1
    fi
done

# Topics and groups named secure-mtls* are User:alice's alone: the ACLs
# must see the principal auth-mtls maps her certificate to.
for resource in --topic --group; do
    if ! "$cairn" acl create --allow-principal User:alice --operation All "$resource" secure-mtls \
        --resource-pattern-type prefixed -b "$plaintext" >"$dir/acl.log" 2>&1; then
        echo "cairn acl create failed:" >&2
        cat "$dir/acl.log" >&2
        exit 1
    fi
done

# What the client tests read. Users: scram256/scram256-secret (SCRAM-SHA-256),
# scram512/scram512-secret (SCRAM-SHA-512), plainuser/plain-secret (PLAIN).
export CAIRN_TEST_SSL="$ssl" CAIRN_TEST_MTLS="$mtls" CAIRN_TEST_EXPIRED_SSL="$expired"
export CAIRN_TEST_SASL_PLAINTEXT="$sasl_plaintext" CAIRN_TEST_SASL_SSL="$sasl_ssl"
export CAIRN_TEST_CERTS="$certs"             # ca.pem, other-ca.pem, client.pem/.key, stranger.pem/.key, expired.pem/.key
export CAIRN_TEST_AUDIT_LOG="$dir/audit.log" # JSON lines, authentication events included
export CAIRN_TEST_BROKER_LOG="$dir/cairnd.log"
export CAIRN_TEST_OAUTH_KEY="$dir/oauth.key" CAIRN_TEST_OAUTH_UNKNOWN_KEY="$dir/oauth-unknown.key"
export CAIRN_TEST_OAUTH_KID="cairn-client-test" CAIRN_TEST_OAUTH_AUDIENCE="cairn-client-test"
export CAIRN_TEST_OAUTH_ISSUER="https://idp.cairn.invalid"

status=0
"$@" || status=$?
stop_broker
trap - EXIT
if [ "$status" = 0 ] || [ "$status" = 77 ]; then
    rm -rf "$dir"
else
    echo "client test failed (status $status); broker log kept in $dir/cairnd.log; last lines:" >&2
    tail -n 20 "$dir/cairnd.log" >&2
fi
exit "$status"
