// What the kernel pays to read a user page for the first time, on this machine: the cost every
// BPF stack walker (switchback's unwinder and the plain frame-pointer walk alike) pays in its
// bpf_probe_read_user of a stack page no kernel code has read before, e.g. a goroutine stack
// the Go runtime has just grown into fresh memory. On most hosts it is a TLB miss (well under
// 100 ns); on the AMD EPYC VM of docs/performance.md ("The machines") it is ~5 us, which changes
// what the unwinder/plain-walk cost ratios of `tools/bench/unwind_cost.py` mean there.
//
// Method: writev() of 32 iovecs of 8 bytes into a pipe (the kernel copies from each), each on a
// page of its own, on pages only userspace has touched (first), on the same pages at once
// (again), and after userspace wrote them (after a user write); the same call with all 32 on one
// page is the base subtracted. Medians of 301 batches, in ns per page.
//
// Build and run (any user): cc -O2 -o /tmp/kernel_first_read tools/bench/kernel_first_read.c &&
// /tmp/kernel_first_read
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { kBatches = 301, kPages = 32, kPage = 4096 };

static uint64_t NowNs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int CompareU64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

static int pipe_fds[2];

// One writev of iov into the pipe, timed; the pipe is drained after the clock stops.
static uint64_t TimedWritev(const struct iovec* iov) {
  static char drain[kPages * 8];
  uint64_t t0 = NowNs();
  if (writev(pipe_fds[1], iov, kPages) != kPages * 8) {
    perror("kernel_first_read: writev");
    exit(1);
  }
  uint64_t ns = NowNs() - t0;
  if (read(pipe_fds[0], drain, sizeof(drain)) != (ssize_t)sizeof(drain)) {
    perror("kernel_first_read: read");
    exit(1);
  }
  return ns;
}

static double Median(uint64_t* v) {
  qsort(v, kBatches, sizeof(*v), CompareU64);
  return (double)v[kBatches / 2];
}

int main(void) {
  if (pipe(pipe_fds) != 0) {
    perror("kernel_first_read: pipe");
    return 1;
  }
  size_t len = (size_t)kBatches * kPages * kPage;
  char* mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    perror("kernel_first_read: mmap");
    return 1;
  }
  for (size_t off = 0; off < len; off += kPage) mem[off] = 1;  // faulted in by userspace only
  static uint64_t first[kBatches], again[kBatches], after_write[kBatches], one_page[kBatches];
  for (int b = 0; b < kBatches; b++) {
    char* base = mem + (size_t)b * kPages * kPage;
    struct iovec spread[kPages], packed[kPages];
    for (int i = 0; i < kPages; i++) {
      spread[i].iov_base = base + (size_t)i * kPage + 64;
      spread[i].iov_len = 8;
      packed[i].iov_base = base + 64 + i * 64;
      packed[i].iov_len = 8;
    }
    first[b] = TimedWritev(spread);
    again[b] = TimedWritev(spread);
    for (int i = 0; i < kPages; i++) base[(size_t)i * kPage + 64]++;
    after_write[b] = TimedWritev(spread);
    one_page[b] = TimedWritev(packed);
  }
  double base_ns = Median(one_page);
  printf("kernel reads of user pages, ns per page (medians of %d batches of %d pages; one-page call %.0f ns):\n",
         kBatches, kPages, base_ns);
  printf("  first read %.0f, again %.0f, after a user write %.0f\n", (Median(first) - base_ns) / kPages,
         (Median(again) - base_ns) / kPages, (Median(after_write) - base_ns) / kPages);
  return 0;
}
