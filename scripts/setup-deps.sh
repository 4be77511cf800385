#!/usr/bin/env bash
# Installs the Debian packages Cairn needs to build, run and test.
# Only packages that are missing are installed; safe to run repeatedly.
set -euo pipefail

packages=(
  build-essential cmake pkg-config python3
  libuv1-dev libjansson-dev libzstd-dev libssl-dev libsasl2-dev
  libcmocka-dev librdkafka-dev kcat
  clang libclang-rt-14-dev
)

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
