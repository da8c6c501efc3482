#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are not installed yet (root, else sudo);
# does nothing when all are present. Run by scripts/setup.sh and scripts/fuzz.sh.
#
# Usage: scripts/install_packages.sh WHO PACKAGE...   (WHO prefixes the log line, e.g. "setup")
set -euo pipefail
who=$1
shift
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
echo "$who: installing ${#missing[@]} Debian packages: ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
