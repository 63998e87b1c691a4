/* Types shared by sampler.bpf.c and its userspace loader (besides unwind/unwind_types.h). */
#ifndef SWITCHBACK_SAMPLER_H
#define SWITCHBACK_SAMPLER_H

#include "unwind/unwind_types.h"
#include "sample_record.h" /* the ring record (sb_sample_record) and the kernel stack */

#define SB_MAX_PROCESSES 4096
/* Executables whose facts the sampler keeps for processes that start later (exe_templates),
 * and executables known not to be Go programs (exe_not_go). */
#define SB_MAX_TEMPLATES 256
#define SB_MAX_NOT_GO 4096

/* What sb_new_process reports. */
enum sb_process_event {
  /* --all: a sample landed in a process userspace does not track (once per process image). */
  SB_PROCESS_SAMPLED = 0,
  /* A tracked process ran execve: its facts described the old image and are gone from
   * proc_info already; userspace ends that process (its new image is a new process). */
  SB_PROCESS_EXEC = 1,
  /* A process image of an executable with a template started (exec): its proc_info is made
   * already, relocated to its load bias (template, bias, vdso_start, start_boottime say how);
   * userspace adopts it without reading the binary again. */
  SB_PROCESS_FROM_TEMPLATE = 2,
  /* --all: a process image of an executable neither known nor known not to be Go started
   * (exec): userspace analyses it now, before its first sample. */
  SB_PROCESS_EXEC_NEW = 3,
};

/* What names an executable file at exec (bprm->file's inode) and in userspace (stat): a file
 * replaced on disk is another inode; one rewritten in place has another size or ctime. dev is
 * the kernel's encoding (major << 20 | minor). The ctime's seconds only: with multigrain
 * timestamps (6.13+) the inode's nanoseconds and those stat reports differ by microseconds. */
struct sb_exe_key {
  sb_u64 dev;
  sb_u64 ino;
  sb_u64 size;
  sb_s64 ctime_sec;
};

#define SB_EXEC_PATH_LEN 256

struct sb_new_process {
  sb_u32 pid;
  sb_u32 kind;          /* enum sb_process_event */
  sb_u32 template_id;   /* SB_PROCESS_FROM_TEMPLATE: sb_exe_template.id */
  sb_u32 path_len;      /* SB_PROCESS_EXEC_NEW: bytes of path, its NUL included (0: none) */
  sb_u64 bias;          /* SB_PROCESS_FROM_TEMPLATE: runtime minus link-time addresses */
  sb_u64 vdso_start;    /*   its [vdso] (0: none) */
  sb_u64 start_boottime; /* the process's start (task->start_boottime, ns): /proc/PID/stat's
                            starttime in clock ticks, so a reused pid is told apart */
  struct sb_exe_key exe; /* the executions' executable (FROM_TEMPLATE, EXEC_NEW) */
  /* SB_PROCESS_EXEC_NEW: the file name execve was given (bprm->filename), so the executable
   * can be analysed even when the process is gone before userspace reads /proc/PID/exe. */
  char path[SB_EXEC_PATH_LEN];
};

/* An executable's facts at its link-time addresses (MakeProcInfo at bias 0, with its pcsp
 * table placed): on_exec makes the proc_info of each new process of it from this, moved by
 * the process's load bias (mm->start_code - exec_vaddr). */
struct sb_exe_template {
  struct sb_proc_info pi;
  sb_u64 exec_vaddr;  /* the lowest p_vaddr of an executable PT_LOAD (what the kernel's
                         start_code is, before the load bias) */
  sb_u64 vdso_size;   /* the [vdso] mapping's size on this kernel (0: unknown) */
  sb_u32 id;          /* userspace's name for it, never 0 */
  sb_u32 pad;
};

/* One sample whole: the sampler's per-CPU scratch that the unwind fills, and what userspace
 * unpacks each ring record (sb_sample_record) into (unwinder/sample_record.h). sb_sample stays
 * the unwind core's own type. */
struct sb_cpu_sample {
  struct sb_kernel_stack kernel;
  struct sb_sample s;
};

/* Per-CPU counters of the kernel stacks (a map of their own beside sb_counters). */
struct sb_kernel_counters {
  sb_u64 in_kernel; /* samples of tracked processes that interrupted the kernel */
  sb_u64 stacks;    /* of those, with a kernel stack */
  sb_u64 errors;    /* of those, bpf_get_stack failed or returned no frame */
};

#endif
