#!/usr/bin/env bash
# Environment of a relocated pax-ocl bundle; `source env.sh` (bin/run does it for every program).
#
# Sets LD_LIBRARY_PATH to the bundle's lib/, points Open MPI and PMIx at their bundled components,
# sets PAX_OCL_GOLDEN_DIR, and builds the OpenCL vendor list (OCL_ICD_VENDORS) from the driver
# libraries that exist on this machine, because a machine's /etc/OpenCL/vendors may be missing the
# driver's .icd file or name a driver that is not installed (an H100 host had only a dead pocl.icd
# while /usr/lib/libnvidia-opencl.so.1 was there). An OCL_ICD_VENDORS already set is kept.
# PAX_OCL_BUNDLE_DRIVERS is left set to the drivers found, one per line; empty when there are none.
PAX_OCL_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PAX_OCL_BUNDLE
export LD_LIBRARY_PATH="$PAX_OCL_BUNDLE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_MCA_mca_base_component_path="$PAX_OCL_BUNDLE/lib/openmpi"
export PMIX_MCA_mca_base_component_path="$PAX_OCL_BUNDLE/lib/pmix"
export OPAL_PREFIX="$PAX_OCL_BUNDLE"
export PAX_OCL_GOLDEN_DIR="${PAX_OCL_GOLDEN_DIR:-$PAX_OCL_BUNDLE/share/golden}"

# Resolves a driver library named in an .icd file (absolute path or bare soname) to a file, or fails.
pax_ocl_resolve_driver() {
  local lib=$1 d
  if [[ $lib == /* ]]; then [[ -f $lib ]] && echo "$lib" && return 0; return 1; fi
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib \
           /usr/local/lib /opt/rocm/lib /opt/rocm/opencl/lib /opt/intel/oneapi/lib; do
    [[ -f $d/$lib ]] && echo "$d/$lib" && return 0
  done
  d=$(/sbin/ldconfig -p 2>/dev/null | awk -v n="$lib" '$1 == n { print $NF; exit }' || true)
  [[ -n $d && -f $d ]] && echo "$d" && return 0
  return 1
}

pax_ocl_find_drivers() {
  local icd lib path
  {
    for icd in /etc/OpenCL/vendors/*.icd; do
      [[ -f $icd ]] || continue
      lib=$(head -n 1 "$icd" | tr -d '[:space:]')
      [[ -n $lib ]] && pax_ocl_resolve_driver "$lib"
    done
    for lib in libnvidia-opencl.so.1 libamdocl64.so libigdrcl.so libpocl.so.2; do
      pax_ocl_resolve_driver "$lib"
    done
  } | while read -r path; do readlink -f "$path"; done | awk '!seen[$0]++'
}

if [[ -z "${OCL_ICD_VENDORS:-}" ]]; then
  PAX_OCL_BUNDLE_DRIVERS=$(pax_ocl_find_drivers || true)
  if [[ -n $PAX_OCL_BUNDLE_DRIVERS ]]; then
    # One directory per driver list, named by its checksum and made by rename: concurrent ranks
    # of one job agree on it and never see it half written.
    _pax_sum=$(printf '%s\n' "$PAX_OCL_BUNDLE_DRIVERS" | cksum | cut -d' ' -f1)
    _pax_dir="${TMPDIR:-/tmp}/pax-ocl-vendors-$(id -u)-$_pax_sum"
    if [[ ! -d $_pax_dir ]]; then
      _pax_tmp=$(mktemp -d "${TMPDIR:-/tmp}/pax-ocl-vendors.XXXXXX")
      _pax_i=0
      while read -r _pax_lib; do
        _pax_i=$((_pax_i + 1))
        echo "$_pax_lib" >"$_pax_tmp/$_pax_i-$(basename "$_pax_lib" | cut -d. -f1).icd"
      done <<<"$PAX_OCL_BUNDLE_DRIVERS"
      mv -T "$_pax_tmp" "$_pax_dir" 2>/dev/null || rm -rf "$_pax_tmp"
    fi
    export OCL_ICD_VENDORS=$_pax_dir
    unset _pax_sum _pax_dir _pax_tmp _pax_i _pax_lib
  fi
else
  PAX_OCL_BUNDLE_DRIVERS=$OCL_ICD_VENDORS
fi
export PAX_OCL_BUNDLE_DRIVERS
