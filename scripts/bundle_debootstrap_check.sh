#!/usr/bin/env bash
# The bundle on a machine that has none of our packages: a minimal Debian 12 root made with
# debootstrap (--variant=minbase), where only pocl-opencl-icd (an OpenCL driver) is installed, runs
# the bundle's `devices --check`, 3 training steps on synthetic tokens and one device test binary
# with `env -i`. Minutes and a network (deb.debian.org): not part of CI; docs/testing.md records
# when it passed. Needs root.
#
# Usage: scripts/bundle_debootstrap_check.sh [BUNDLE.tar.gz]   (default: dist/pax-ocl-*.tar.gz)
# Env:   ROOT (default /var/tmp/pax-ocl-bookworm; kept for the next run), MIRROR
set -euo pipefail
cd "$(dirname "$0")/.."
tgz=${1:-$(ls dist/pax-ocl-*-linux-x86_64.tar.gz 2>/dev/null | head -n1)}
[[ -f $tgz ]] || { echo "debootstrap_check: no bundle; run scripts/bundle.sh first" >&2; exit 1; }
root=${ROOT:-/var/tmp/pax-ocl-bookworm}
mirror=${MIRROR:-http://deb.debian.org/debian}
[[ $(id -u) -eq 0 ]] || { echo "debootstrap_check: needs root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null || scripts/install_packages.sh debootstrap_check debootstrap
if [[ ! -x $root/usr/bin/apt-get ]]; then
  debootstrap --variant=minbase bookworm "$root" "$mirror"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# A machine's /proc, /sys (hwloc and PoCL read the CPU topology there) and /dev.
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
trap 'umount "$root/proc" "$root/sys" "$root/dev" 2>/dev/null || true' EXIT
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends pocl-opencl-icd >/dev/null'
rm -rf "$root/opt/pax-ocl" && mkdir -p "$root/opt/pax-ocl"
tar -C "$root/opt/pax-ocl" -xzf "$tgz"
bundle=$(cd "$root/opt/pax-ocl" && ls -d pax-ocl-*)
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root POCL_DEVICES=pthread "$@"; }
echo "== packages in the root: $(chroot "$root" dpkg-query -W -f='.' | wc -c); OpenCL: $(chroot "$root" dpkg-query -W -f='${Package} ' 'pocl*' 'ocl-icd*' 2>/dev/null)"
in_root "/opt/pax-ocl/$bundle/bin/pax-ocl" devices --check
in_root "/opt/pax-ocl/$bundle/bin/pax-ocl" train --fdl_config=Default --fdl.DATA=synthetic --fdl.MAX_STEPS=3 --fdl.EVAL_INTERVAL_STEPS=0 \
  --fdl.ENABLE_CHECKPOINT_SAVING=false --job_log_dir=/tmp/run | tail -n 3
in_root "/opt/pax-ocl/$bundle/bin/run" test_dtype --gtest_brief=1 | tail -n 3
echo "debootstrap_check: pass ($(cat "$root/opt/pax-ocl/$bundle/VERSION"))"
