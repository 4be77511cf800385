#!/bin/sh
# Makes the certificates the TLS tests use, in directory $1, with the
# openssl command line only:
#   ca.pem ca.key            a test CA
#   server.pem               broker keystore: cert for localhost/127.0.0.1 + key
#   client.pem client.key    CN=alice, SAN DNS alice.example and spiffe://example.org/ns/prod/sa/alice
#   expired.pem expired.key  signed by the CA, valid only in 2020
#   stranger.pem stranger.key  a client certificate signed by the other CA
#   other-ca.pem other-server.pem  a second CA and a broker keystore signed by it (reload)
#   server-encrypted.pem     server.pem with its key encrypted with password "secret"
#   revoked.pem revoked.key  CN=bob, signed by the CA, then revoked
#   future.pem future.key    CN=carol, signed by the CA, valid only from 2090
#   crl-before.pem           the CA's CRL before bob's revocation (empty)
#   crl.pem                  the CA's CRL naming bob's certificate
set -e
d=$1
cd "$d"
q() { "$@" >/dev/null 2>&1; }
mkca() { # name subject
  q openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -days 30 -subj "$2"
}
mkleaf() { # name subject ca extfile
  q openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
  q openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -out "$1.crt" -days 30 -extfile "$4"
}
mkca ca "/CN=Cairn Test CA"
mkca other-ca "/CN=Cairn Other CA"
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
printf 'subjectAltName=DNS:alice.example,URI:spiffe://example.org/ns/prod/sa/alice\nextendedKeyUsage=clientAuth\n' >client.ext
mkleaf server "/CN=localhost/O=Cairn" ca server.ext
cat server.crt server.key >server.pem
mkleaf other-server "/CN=localhost/O=Cairn Other" other-ca server.ext
cat other-server.crt other-server.key >other-server.pem
mkleaf client "/C=US/O=Example/OU=Streams/CN=alice" ca client.ext
mv client.crt client.pem
mkleaf stranger "/CN=stranger" other-ca client.ext
mv stranger.crt stranger.pem
q openssl pkey -in server.key -out encrypted.key -aes256 -passout pass:secret
cat server.crt encrypted.key >server-encrypted.pem

# Expired: openssl ca takes explicit dates.
mkdir -p expired-ca/newcerts
: >expired-ca/index.txt
echo 01 >expired-ca/serial
cat >expired-ca/ca.cnf <<CNF
[ca]
default_ca = test
[test]
dir = $d/expired-ca
database = \$dir/index.txt
new_certs_dir = \$dir/newcerts
serial = \$dir/serial
default_md = sha256
default_crl_days = 30
policy = any
copy_extensions = none
[any]
commonName = supplied
CNF
q openssl req -newkey rsa:2048 -nodes -keyout expired.key -out expired.csr -subj "/CN=mallory"
q openssl ca -batch -config expired-ca/ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem \
  -startdate 20200101000000Z -enddate 20200201000000Z -notext
test -s expired.pem

# Valid from 2090, and bob's, which the CA then revokes; a CRL from before
# and one from after.
q openssl req -newkey rsa:2048 -nodes -keyout future.key -out future.csr -subj "/CN=carol"
q openssl ca -batch -config expired-ca/ca.cnf -cert ca.pem -keyfile ca.key -in future.csr -out future.pem \
  -startdate 20900101000000Z -enddate 20910101000000Z -notext
q openssl req -newkey rsa:2048 -nodes -keyout revoked.key -out revoked.csr -subj "/CN=bob"
q openssl ca -batch -config expired-ca/ca.cnf -cert ca.pem -keyfile ca.key -in revoked.csr -out revoked.pem \
  -days 30 -notext
q openssl ca -config expired-ca/ca.cnf -cert ca.pem -keyfile ca.key -gencrl -out crl-before.pem
q openssl ca -config expired-ca/ca.cnf -cert ca.pem -keyfile ca.key -revoke revoked.pem
q openssl ca -config expired-ca/ca.cnf -cert ca.pem -keyfile ca.key -gencrl -out crl.pem
test -s future.pem && test -s revoked.pem && test -s crl-before.pem && test -s crl.pem
