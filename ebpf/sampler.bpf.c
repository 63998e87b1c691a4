// SPDX-License-Identifier: GPL-2.0
/* CPU sampler: a perf_event program (cpu-clock, one event per CPU) that unwinds the user
 * stack of tracked processes with the shared unwind core and sends each sample through a
 * ring buffer. Userspace keeps one sb_proc_info per tracked tgid in proc_info. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "unwind/unwind_types.h"
#define SB_PCSP_CACHE 1 /* the per-CPU pcsp cache (bpf_env.bpf.h): the sampler only */
#define SB_STACK_WINDOW 1 /* the per-CPU stack window (bpf_env.bpf.h): the sampler only */
#include "unwind/bpf_env.bpf.h"
#include "unwind/user_regs.bpf.h"
#include "unwind/unwind_core.h"
#include "unwind/goroutine_labels.h"
#include "unwind/sample_init.bpf.h"
#include "unwind/fp_walk_baseline.h"
#include "unwind/proc_info_bias.h"
#include "sampler.h"
#include "sample_pack.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define SB_SAMPLES_RINGBUF_SIZE (16 << 20)

/* Set by userspace before load. */
const volatile __u32 self_tgid = 0;
const volatile __u8 track_all = 0; /* --all: report unknown processes to userspace */
/* Benchmark: 1 also times a plain frame-pointer walk, 2 the floor against that walk, 3 the
 * crossing floor against it (fp_walk_baseline.h). */
const volatile __u8 compare_fp_walk = 0;
const volatile __u8 read_labels = 1; /* goroutine pprof labels on each sample (--no-labels: 0) */
const volatile __u8 kernel_stacks = 0; /* --kernel: each sample's kernel stack too */

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, SB_MAX_PROCESSES);
  __type(key, __u32);
  __type(value, struct sb_proc_info);
} proc_info SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, SB_SAMPLES_RINGBUF_SIZE);
} samples SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 256 << 10); /* ~800 events: a build host's execs while userspace analyses */
} new_processes SEC(".maps");

/* Unknown tgids already reported, with the start time of the process reported, so each
 * process image is reported once: a reused pid is another start time, and an exec (where a
 * shell's fork becomes the Go program it runs) deletes the entry. Userspace deletes it too
 * when it forgets a process, so that pid is reported again if it still runs. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, __u64);
} reported SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_cpu_sample);
} scratch SEC(".maps");

/* Executables whose facts userspace has made (--all): a new process of one gets its proc_info
 * at exec, from here, so its first sample is unwound (a process that lives 30 ms is over
 * before userspace could read its maps). Userspace bounds it (SB_MAX_TEMPLATES, least recently
 * used out). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, SB_MAX_TEMPLATES);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct sb_exe_key);
  __type(value, struct sb_exe_template);
} exe_templates SEC(".maps");

/* Executables userspace found are not Go programs: their processes are not reported. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, SB_MAX_NOT_GO);
  __type(key, struct sb_exe_key);
  __type(value, __u8);
} exe_not_go SEC(".maps");

/* Processes whose executable userspace is analysing (an SB_PROCESS_EXEC_NEW sent), by tgid:
 * their samples are counted by executable in not_analyzed until userspace tracks them. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, struct sb_exe_key);
} exec_pending SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1024);
  __type(key, struct sb_exe_key);
  __type(value, __u64);
} not_analyzed SEC(".maps");

/* The executable each tracked process's facts describe (userspace's TrackProcess, or a
 * template at exec): an exec of that same file seen after the facts were handed over (the
 * process was read in the middle of its execve) keeps them. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, SB_MAX_PROCESSES);
  __type(key, __u32);
  __type(value, struct sb_exe_key);
} proc_exe SEC(".maps");

/* Where on_exec relocates a template before storing it whole (11 KB: far over BPF's stack). */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_proc_info);
} proc_scratch SEC(".maps");

/* The record as sent (sample_record.h sb_sample_record), packed here from the scratch sample
 * (sample_pack.bpf.h). */
struct sb_record_buf {
  __u8 b[SB_SAMPLE_RECORD_MAX];
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_record_buf);
} record_buf SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_counters);
} counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sb_kernel_counters);
} kernel_counters SEC(".maps");

/* The kernel stack of a sample that interrupted the kernel (its pc is a kernel address: the
 * upper half on x86-64 and arm64); none for one in user code. */
static __always_inline void read_kernel_stack(struct bpf_perf_event_data *ctx, struct sb_kernel_stack *k) {
  __u32 zero = 0;
  k->status = SB_KSTACK_OFF;
  k->nframes = 0;
  k->err = 0;
  if (!kernel_stacks) return;
  if (!(PT_REGS_IP(&ctx->regs) >> 63)) {
    k->status = SB_KSTACK_USER;
    return;
  }
  struct sb_kernel_counters *kc = bpf_map_lookup_elem(&kernel_counters, &zero);
  if (!kc) return;
  kc->in_kernel++;
  long got = bpf_get_stack(ctx, k->frames, sizeof(k->frames), 0);
  if (got >= (long)sizeof(__u64)) {
    k->status = SB_KSTACK_OK;
    k->nframes = (__u16)(got / sizeof(__u64));
    kc->stacks++;
  } else {
    k->status = SB_KSTACK_ERROR;
    k->err = got < 0 ? (__s32)got : 0;
    kc->errors++;
  }
}

/* Queues a process event; 0 when queued. The ring fills when userspace stops reading it for a
 * while (it reads it between resolving binaries) while many processes start: the event is
 * counted as lost and the caller leaves things so that the process's next sample sends it
 * again, so a lost event delays a process, never drops it. */
static __always_inline int send_process_event(struct sb_counters *cnt, __u32 tgid, __u32 kind) {
  struct sb_new_process *ev = bpf_ringbuf_reserve(&new_processes, sizeof(*ev), 0);
  if (!ev) {
    if (cnt) cnt->process_events_lost++;
    return -1;
  }
  ev->pid = tgid;
  ev->kind = kind;
  ev->template_id = 0;
  ev->path_len = 0;
  ev->bias = 0;
  ev->vdso_start = 0;
  ev->start_boottime = 0;
  bpf_ringbuf_submit(ev, 0);
  return 0;
}

/* Marked reported only once its event is queued: otherwise the next sample tries again. */
static __always_inline void report_unknown(struct sb_counters *cnt, __u32 tgid, struct task_struct *task) {
  __u64 start = BPF_CORE_READ(task, group_leader, start_time);
  __u64 *seen = bpf_map_lookup_elem(&reported, &tgid);
  if (seen && *seen == start) return;
  if (send_process_event(cnt, tgid, SB_PROCESS_SAMPLED) == 0) bpf_map_update_elem(&reported, &tgid, &start, BPF_ANY);
}

/* The benchmark modes: times one baseline walk of the sample's stack (fp_walk_baseline.h): the
 * plain frame-pointer walk (floor 0), the floor under any goroutine-aware unwinder (1) or that
 * floor crossing into curg (2). Returns the walk's time; *frames_out its frames. */
static __always_inline __u64 time_baseline(struct sb_counters *cnt, const struct sb_proc_info *pi,
                                           const struct sb_regs *r, int floor, __u32 *frames_out) {
  __u64 goid = 0, t0 = bpf_ktime_get_ns();
  /* Only the walk is timed: its counters are written after the clock is read (the unwinder's
   * own counting is part of its work, this bookkeeping is not part of the walk's). */
  __u32 frames = floor ? sb_fp_walk_floor(0, pi, r, &goid, floor == 2) : sb_fp_walk_baseline(0, r->fp, pi->max_frames);
  __u64 ns = bpf_ktime_get_ns() - t0;
  if (floor) {
    cnt->floor_frames += frames + 1;
    cnt->floor_ns += ns;
  } else {
    cnt->fp_walk_frames += frames + 1;
    cnt->fp_walk_ns += ns;
  }
  *frames_out = frames + 1;
  return ns;
}

/* The sample's two timed walks under where it was taken (enum sb_cmp_kind, from the unwind):
 * --compare-fp-walk the unwinder's, the floor modes the floor's (unwind_ns/frames: that walk's). */
static __always_inline void count_by_kind(struct sb_counters *cnt, const struct sb_sample *s, __u64 unwind_ns,
                                          __u32 unwind_frames, __u64 fp_ns, __u32 fp_frames) {
  __u32 kind = !(s->flags & SB_SAMPLE_ON_G0)                  ? SB_CMP_GOROUTINE
               : (s->crossed & (1u << SB_CROSS_MORESTACK)) ? SB_CMP_G0_MORESTACK
                                                             : SB_CMP_G0_OTHER;
  if (kind >= SB_CMP_KINDS) return;
  __u64 *c = cnt->cmp[kind];
  c[SB_CMP_SAMPLES]++;
  c[SB_CMP_UNWIND_NS] += unwind_ns;
  c[SB_CMP_UNWIND_FRAMES] += unwind_frames;
  c[SB_CMP_FP_NS] += fp_ns;
  c[SB_CMP_FP_FRAMES] += fp_frames;
}

SEC("perf_event")
int sample_cpu(struct bpf_perf_event_data *ctx) {
  __u32 zero = 0;
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  if (tgid == 0 || tgid == self_tgid) return 0;

  struct sb_counters *cnt = bpf_map_lookup_elem(&counters, &zero);
  if (!cnt) return 0;
  struct task_struct *task = bpf_get_current_task_btf();
  const struct sb_proc_info *pi = bpf_map_lookup_elem(&proc_info, &tgid);
  if (!pi) {
    if (track_all && task->mm) {
      const struct sb_exe_key *exe = bpf_map_lookup_elem(&exec_pending, &tgid);
      if (exe) {
        cnt->not_analyzed++;
        __u64 one = 1, *n = bpf_map_lookup_elem(&not_analyzed, exe);
        if (n)
          __sync_fetch_and_add(n, 1);
        else
          bpf_map_update_elem(&not_analyzed, exe, &one, BPF_NOEXIST);
      } else {
        report_unknown(cnt, tgid, task);
      }
    }
    cnt->unknown_pid++;
    return 0;
  }
  /* It ran execve and on_exec could not queue the event: the facts are the old image's, so
   * the sample is not unwound; the event is sent now, and once queued the facts go. */
  if (pi->flags & SB_PI_EXEC_PENDING) {
    if (send_process_event(cnt, tgid, SB_PROCESS_EXEC) == 0) {
      bpf_map_delete_elem(&proc_info, &tgid);
      bpf_map_delete_elem(&proc_exe, &tgid);
    }
    cnt->unknown_pid++;
    return 0;
  }

  /* A task that is exiting (PF_EXITING, or its mm already dropped) still reports its user
   * registers, but its address space is being torn down: no user memory can be read, and the
   * unwind would end at the leaf with read_fault. Short-lived processes (a git hook's commands,
   * 14% of lefthook's samples) spend a good part of their samples there. Counted, not sent. */
  if ((task->flags & 0x00000004 /* PF_EXITING */) || !task->mm) {
    cnt->exiting++;
    return 0;
  }
  /* Inside execve the process's image is being replaced: from exec_mmap on, task->mm is the
   * new image's while proc_info (dropped by on_exec below, at the end of the load) still
   * describes the old one, and the user registers are the old image's until start_thread sets
   * the new entry point. A sample there would be unwound with the wrong binary's facts (the
   * agent's exec test saw one: the old demo's syscall leaf, then read_fault in the new memory). The kernel marks
   * the whole of execve with in_execve; those samples are counted, not sent. */
  if (bpf_core_field_exists(task->in_execve) && BPF_CORE_READ_BITFIELD(task, in_execve)) {
    cnt->in_exec++;
    return 0;
  }

  struct sb_cpu_sample *rec = bpf_map_lookup_elem(&scratch, &zero);
  if (!rec) return 0;
  struct sb_sample *s = &rec->s;
  sb_sample_init(s, tgid, (__u32)id, bpf_ktime_get_ns());

  /* The user registers, also when the sample interrupted the kernel (syscall, fault). */
  struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
  if (!regs) return 0;
  struct sb_regs r = {};
  sb_read_user_regs(task, regs, &r);

  /* --compare-fp-walk (1): the unwind and a plain frame-pointer walk of the same stack are timed,
   * the walk before or after the unwind on alternate samples so neither always finds the stack
   * in cache. --compare-floor (2) and --compare-crossing-floor (3): the floor (that walk plus
   * the reads naming the goroutine; 3: and the crossing into curg) and the plain walk instead,
   * in alternating order, both before the unwind (which then finds the stack warm: its time is
   * not the comparison's; it only says where the sample was taken). Two walks per sample in any
   * mode: a third would find the stack warm more often and change what the figures mean. */
  int plain_first = s->time_ns & 1;
  __u64 fp_ns = 0, floor_ns = 0;
  __u32 fp_frames = 0, floor_frames = 0;
  if (compare_fp_walk >= 2) {
    int floor = compare_fp_walk == 3 ? 2 : 1;
    if (plain_first) fp_ns = time_baseline(cnt, pi, &r, 0, &fp_frames);
    floor_ns = time_baseline(cnt, pi, &r, floor, &floor_frames);
    if (!plain_first) fp_ns = time_baseline(cnt, pi, &r, 0, &fp_frames);
  } else if (compare_fp_walk == 1 && plain_first) {
    fp_ns = time_baseline(cnt, pi, &r, 0, &fp_frames);
  }
  __u64 t0 = bpf_ktime_get_ns();
  sb_unwind(pi, s, cnt, 0, &r);
  __u64 unwind_ns = bpf_ktime_get_ns() - t0;
  cnt->unwind_ns += unwind_ns;
  cnt->unwind_frames += s->nframes;
  /* The labels of the goroutine the sample is labelled with (after a crossing: the crossed
   * one); none without a goroutine. */
  if (read_labels && s->goid_g != 0) {
    __u64 l0 = bpf_ktime_get_ns();
    sb_read_goroutine_labels(0, pi, s->goid_g, &s->labels);
    cnt->labels_ns += bpf_ktime_get_ns() - l0;
  }
  if (s->labels.status < SB_LABELS_MAX) cnt->labels[s->labels.status]++;
  if (compare_fp_walk == 1 && !plain_first) fp_ns = time_baseline(cnt, pi, &r, 0, &fp_frames);
  if (compare_fp_walk == 1) count_by_kind(cnt, s, unwind_ns, s->nframes, fp_ns, fp_frames);
  if (compare_fp_walk >= 2) count_by_kind(cnt, s, floor_ns, floor_frames, fp_ns, fp_frames);

  read_kernel_stack(ctx, &rec->kernel);

  struct sb_record_buf *buf = bpf_map_lookup_elem(&record_buf, &zero);
  __u64 size = buf ? sb_pack_sample_record(buf->b, &rec->s, &rec->kernel) : 0;
  if (size == 0 || size > sizeof(*buf)) {
    cnt->lost++;
    return 0;
  }
  /* Waking the reader costs more than the whole unwind (an irq_work per sample): userspace
   * polls every 100 ms anyway, so wake it only when a quarter of the buffer is used. */
  __u64 flags = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) > (SB_SAMPLES_RINGBUF_SIZE / 4)
                    ? BPF_RB_FORCE_WAKEUP
                    : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(&samples, buf->b, size, flags) != 0) cnt->lost++;
  return 0;
}

/* The executable a process image runs, as userspace names it from stat (sb_exe_key). The
 * inode's ctime moved in 6.6 (__i_ctime) and again in 6.11 (i_ctime_sec). */
struct inode___ctime_timespec {
  struct timespec64 __i_ctime;
} __attribute__((preserve_access_index));
struct inode___ctime_old {
  struct timespec64 i_ctime;
} __attribute__((preserve_access_index));

static __always_inline int exe_key_of(struct linux_binprm *bprm, struct sb_exe_key *k) {
  struct inode *ino = BPF_CORE_READ(bprm, file, f_inode);
  if (!ino) return -1;
  k->dev = BPF_CORE_READ(ino, i_sb, s_dev);
  k->ino = BPF_CORE_READ(ino, i_ino);
  k->size = BPF_CORE_READ(ino, i_size);
  if (bpf_core_field_exists(ino->i_ctime_sec)) {
    k->ctime_sec = BPF_CORE_READ(ino, i_ctime_sec);
  } else if (bpf_core_field_exists(((struct inode___ctime_timespec *)ino)->__i_ctime)) {
    struct inode___ctime_timespec *t = (void *)ino;
    k->ctime_sec = BPF_CORE_READ(t, __i_ctime.tv_sec);
  } else {
    struct inode___ctime_old *t = (void *)ino;
    k->ctime_sec = BPF_CORE_READ(t, i_ctime.tv_sec);
  }
  return 0;
}

/* A new process image of an executable with a template: its proc_info, relocated to where
 * this exec loaded it (start_code is the lowest executable segment's address plus the load
 * bias: fs/binfmt_elf.c), with this process's [vdso], stored whole (a reader never sees a
 * half-made entry). Userspace is told, and adopts it; if the event cannot be queued the entry
 * goes again and the process is reported at its first sample, as one without a template. */
static __always_inline void from_template(struct sb_counters *cnt, __u32 tgid, struct task_struct *p,
                                          const struct sb_exe_template *t, const struct sb_exe_key *key) {
  __u32 zero = 0;
  struct sb_proc_info *n = bpf_map_lookup_elem(&proc_scratch, &zero);
  if (!n) return;
  if (bpf_probe_read_kernel(n, sizeof(*n), &t->pi) != 0) return;
  struct mm_struct *mm = BPF_CORE_READ(p, mm);
  if (!mm) return;
  __u64 bias = BPF_CORE_READ(mm, start_code) - t->exec_vaddr;
  sb_proc_info_add_bias(n, bias);
  __u64 vdso = (__u64)BPF_CORE_READ(mm, context.vdso);
  n->vdso_start = t->vdso_size ? vdso : 0;
  n->vdso_end = t->vdso_size ? vdso + t->vdso_size : 0;
  if (bpf_map_update_elem(&proc_info, &tgid, n, BPF_NOEXIST) != 0) return;
  bpf_map_update_elem(&proc_exe, &tgid, key, BPF_ANY);
  struct sb_new_process *ev = bpf_ringbuf_reserve(&new_processes, sizeof(*ev), 0);
  if (!ev) {
    bpf_map_delete_elem(&proc_info, &tgid);
    if (cnt) cnt->process_events_lost++;
    return;
  }
  ev->pid = tgid;
  ev->kind = SB_PROCESS_FROM_TEMPLATE;
  ev->template_id = t->id;
  ev->path_len = 0;
  ev->bias = bias;
  ev->vdso_start = n->vdso_start;
  ev->start_boottime = BPF_CORE_READ(p, group_leader, start_boottime);
  ev->exe = *key;
  bpf_ringbuf_submit(ev, 0);
  if (cnt) cnt->from_template++;
}

/* --all: an executable not seen before started. Userspace is told now (not at the process's
 * first sample), and the process's samples until it is tracked are counted by executable. */
static __always_inline void exec_new(struct sb_counters *cnt, __u32 tgid, struct task_struct *p,
                                     struct linux_binprm *bprm, const struct sb_exe_key *key) {
  struct sb_new_process *ev = bpf_ringbuf_reserve(&new_processes, sizeof(*ev), 0);
  if (!ev) {
    if (cnt) cnt->process_events_lost++;
    return; /* reported at its first sample instead */
  }
  ev->pid = tgid;
  ev->kind = SB_PROCESS_EXEC_NEW;
  ev->template_id = 0;
  ev->bias = 0;
  ev->vdso_start = 0;
  ev->start_boottime = BPF_CORE_READ(p, group_leader, start_boottime);
  ev->exe = *key;
  long n = bpf_probe_read_kernel_str(ev->path, sizeof(ev->path), BPF_CORE_READ(bprm, filename));
  ev->path_len = n > 0 ? (__u32)n : 0;
  bpf_ringbuf_submit(ev, 0);
  bpf_map_update_elem(&exec_pending, &tgid, key, BPF_ANY);
  /* Reported: no SB_PROCESS_SAMPLED for this image as well. */
  __u64 start = BPF_CORE_READ(p, group_leader, start_time);
  bpf_map_update_elem(&reported, &tgid, &start, BPF_ANY);
}

/* execve replaces the process image under the same pid (and start time). A tracked process's
 * facts (binary, load bias, pcsp tables) describe the old image: they are dropped here, before
 * the new image's first sample, and userspace is told to end that process. An untracked pid
 * whose new executable has a template is followed from here on; with --all, one whose
 * executable is unknown is reported now, one known not to be Go is not reported at all; other
 * untracked pids are reported again at their next sample (the fork of a shell, ignored as not
 * Go, becomes the Go program it executes). Lives beside sample_cpu because it keeps
 * sample_cpu's maps. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (tgid == 0 || tgid == self_tgid) return 0;
  bpf_map_delete_elem(&reported, &tgid);
  bpf_map_delete_elem(&exec_pending, &tgid);
  __u32 zero = 0;
  struct sb_counters *cnt = bpf_map_lookup_elem(&counters, &zero);
  struct sb_exe_key key = {};
  int have_key = exe_key_of(bprm, &key) == 0;
  struct sb_proc_info *pi = bpf_map_lookup_elem(&proc_info, &tgid);
  if (pi) {
    /* Userspace read this process while its execve was under way (/proc/PID/exe is the new
     * file, and /proc/PID/maps the new image's, from early in execve on) and handed over the
     * new image's facts already: the same file, and this very address space (its [vdso], placed
     * anew by each exec). An exec of the same file again has another [vdso]. */
    const struct sb_exe_key *had = bpf_map_lookup_elem(&proc_exe, &tgid);
    struct mm_struct *mm = BPF_CORE_READ(p, mm);
    __u64 vdso = mm ? (__u64)BPF_CORE_READ(mm, context.vdso) : 0;
    if (have_key && had && had->dev == key.dev && had->ino == key.ino && had->size == key.size &&
        had->ctime_sec == key.ctime_sec && pi->vdso_start == vdso)
      return 0;
    /* Marked first, so that no sample from here on is unwound with the old image's facts; they
     * go once the event is queued (here, or at a later sample: sample_cpu). */
    pi->flags |= SB_PI_EXEC_PENDING;
    if (send_process_event(cnt, tgid, SB_PROCESS_EXEC) == 0) {
      bpf_map_delete_elem(&proc_info, &tgid);
      bpf_map_delete_elem(&proc_exe, &tgid);
    }
    return 0;
  }
  if (!track_all || !have_key) return 0;
  const struct sb_exe_template *t = bpf_map_lookup_elem(&exe_templates, &key);
  if (t) {
    from_template(cnt, tgid, p, t, &key);
    return 0;
  }
  if (bpf_map_lookup_elem(&exe_not_go, &key)) {
    __u64 start = BPF_CORE_READ(p, group_leader, start_time);
    bpf_map_update_elem(&reported, &tgid, &start, BPF_ANY);
    return 0;
  }
  exec_new(cnt, tgid, p, bprm, &key);
  return 0;
}
