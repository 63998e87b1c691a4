#!/usr/bin/env bash
# Prints, one fact per line, the machine a test run ran on: what a failure may depend on (the
# CPU and its mitigations, the hypervisor, the kernel and its BPF features, the size). The
# test command prints it first, so every CI log says where it ran.
set -u
say() { printf '  %-22s %s\n' "$1" "$2"; }
first() { [ -r "$1" ] && head -n1 "$1" 2>/dev/null | tr -s ' '; }
echo "machine:"
say "cpu" "$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//') ($(nproc) online)"
say "memory" "$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
vm=$(systemd-detect-virt --vm 2>/dev/null || true)
[ "$vm" = none ] && vm=
if [ -z "$vm" ] && grep -qw hypervisor /proc/cpuinfo 2>/dev/null; then
  vm="present (cpuinfo flag)"
  uname -r | grep -q -- '-fc-' && vm="$vm, Firecracker kernel"
fi
hv=$(first /sys/hypervisor/type)
say "hypervisor" "${vm:-none}${hv:+ ($hv)}"
ct=$(systemd-detect-virt --container 2>/dev/null || true)
[ -n "$ct" ] && [ "$ct" != none ] && say "container" "$ct"
vendor=$(first /sys/class/dmi/id/sys_vendor)
product=$(first /sys/class/dmi/id/product_name)
[ -n "$vendor$product" ] && say "platform" "$vendor $product"
say "kernel" "$(uname -r) $(uname -m)"
say "os" "$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
say "btf" "$([ -r /sys/kernel/btf/vmlinux ] && echo present || echo "missing (/sys/kernel/btf/vmlinux)")"
stats=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null)
if [ -n "$stats" ]; then say "bpf stats" "available (kernel.bpf_stats_enabled=$stats)"; else say "bpf stats" "not available"; fi
say "unprivileged bpf" "$(cat /proc/sys/kernel/unprivileged_bpf_disabled 2>/dev/null || echo '?')"
say "perf_event_paranoid" "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?')"
say "kptr_restrict" "$(cat /proc/sys/kernel/kptr_restrict 2>/dev/null || echo '?')"
mit=$(grep -l . /sys/devices/system/cpu/vulnerabilities/* 2>/dev/null | while read -r f; do
  v=$(cat "$f"); case "$v" in "Not affected") ;; *) printf '%s: %s; ' "${f##*/}" "${v%%;*}" ;; esac; done)
say "mitigations" "${mit:-none reported}"
say "load" "$(cut -d' ' -f1-3 /proc/loadavg)"
exit 0
