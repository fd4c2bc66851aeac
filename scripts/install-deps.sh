#!/usr/bin/env bash
# Installs the Debian packages nftrace needs to build and test, when any is missing.
# Safe to run again: it does nothing when everything is present.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang
  libbabeltrace2-dev babeltrace2
  libtraceevent-dev libtracefs-dev libtracecmd-dev trace-cmd
  libsqlite3-dev sqlite3
  libcairo2-dev
  check valgrind
  fontconfig fonts-dejavu-core
  protobuf-compiler
  python3
  # tests of the man pages, completions, installed tree and Debian package
  groff-base mandoc man-db zsh strace debootstrap debian-archive-keyring dpkg-dev
  libcurl4-openssl-dev clickhouse-server clickhouse-client
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
