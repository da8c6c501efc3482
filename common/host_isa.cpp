#include "common/host_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace paxocl {

namespace {
HostIsa read_host_isa() {
  HostIsa isa;
#if defined(__x86_64__) || defined(__i386__)
  isa.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  isa.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  isa.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  // CPUID 1's ecx, read once: OSXSAVE (bit 27) and F16C (bit 29).
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  const bool leaf1 = __get_cpuid(1, &a1, &b1, &c1, &d1) != 0;
  // AMX-BF16 is CPUID 7's edx bit 22, usable where the OS saves the tile state (XCR0 bits 17 and
  // 18), read directly: clang 16's __builtin_cpu_supports does not know "amx-bf16".
  unsigned a7 = 0, b7 = 0, c7 = 0, d7 = 0;
  if (leaf1 && (c1 & bit_OSXSAVE) != 0 && __get_cpuid_count(7, 0, &a7, &b7, &c7, &d7) != 0 &&
      (d7 & (1u << 22)) != 0) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    isa.amx_bf16 = (lo & 0x60000u) == 0x60000u;
  }
  // F16C, read directly too (clang's __builtin_cpu_supports does not know "f16c"); "avx" holds
  // only where the OS saves the ymm registers.
  isa.f16c = __builtin_cpu_supports("avx") && leaf1 && (c1 & bit_F16C) != 0;
#endif
  return isa;
}
}  // namespace

const HostIsa& host_isa() {
  static const HostIsa isa = read_host_isa();
  return isa;
}

std::string host_isa_list(const HostIsa& isa) {
  std::string list;
  const auto add = [&list](bool has, const char* name) {
    if (!has) return;
    if (!list.empty()) list += ',';
    list += name;
  };
  add(isa.avx2_fma, "avx2");
  add(isa.avx512, "avx512");
  add(isa.avx512_bf16, "avx512bf16");
  add(isa.amx_bf16, "amx-bf16");
  return list;
}

}  // namespace paxocl
