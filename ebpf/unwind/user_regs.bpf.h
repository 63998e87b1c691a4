/* The sampled task's user registers, per architecture (libbpf-tools style compat shim). */
#ifndef SWITCHBACK_USER_REGS_BPF_H
#define SWITCHBACK_USER_REGS_BPF_H

static __always_inline void sb_read_user_regs(struct task_struct *task, struct pt_regs *regs,
                                              struct sb_regs *r) {
#if defined(__TARGET_ARCH_x86)
  r->pc = BPF_CORE_READ(regs, ip);
  r->sp = BPF_CORE_READ(regs, sp);
  r->fp = BPF_CORE_READ(regs, bp);
  r->g_reg = BPF_CORE_READ(regs, r14);
  r->tls_base = BPF_CORE_READ(task, thread.fsbase);
#elif defined(__TARGET_ARCH_arm64)
  r->pc = BPF_CORE_READ(regs, pc);
  r->sp = BPF_CORE_READ(regs, sp);
  r->fp = BPF_CORE_READ(regs, regs[29]);
  r->lr = BPF_CORE_READ(regs, regs[30]);
  r->g_reg = BPF_CORE_READ(regs, regs[28]);
  r->tls_base = BPF_CORE_READ(task, thread.uw.tp_value);
#else
#error "switchback's sampler supports x86_64 and arm64"
#endif
}

#endif
