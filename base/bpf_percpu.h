// Reading BPF per-CPU maps from userspace: a lookup fills one value per possible CPU (not per
// online CPU), which callers then sum. Header-only; the includer links libbpf.
#ifndef SWITCHBACK_BASE_BPF_PERCPU_H
#define SWITCHBACK_BASE_BPF_PERCPU_H

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstdint>
#include <vector>

namespace sb {

// KEY's value on every possible CPU; empty when the map cannot be read (or the key is absent).
template <typename T>
std::vector<T> ReadPerCpu(int map_fd, uint32_t key) {
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return {};
  std::vector<T> per_cpu(static_cast<size_t>(ncpu));
  if (bpf_map_lookup_elem(map_fd, &key, per_cpu.data()) != 0) return {};
  return per_cpu;
}

}  // namespace sb

#endif
