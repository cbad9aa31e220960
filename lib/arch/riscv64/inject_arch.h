/* SPDX-License-Identifier: MIT */
/* inject_arch.h - riscv64 register set of the attaching agent (arch_inject.h). */
#ifndef DYNFTRACE_INJECT_ARCH_H
#define DYNFTRACE_INJECT_ARCH_H

#include <linux/audit.h>
#include <stddef.h>
#include <stdint.h>
#include <asm/ptrace.h>

/* Attach works (tested under system emulation, tests/cross/system.sh, on
 * a Linux 6.1 kernel built by tests/cross/system/rv-kernel.sh); what it
 * does not do yet here: see ARCH_SIGFRAME_* below. */
#define ARCH_INJ_SUPPORTED 1

struct arch_inj_regs {
	struct user_regs_struct gp; /* NT_PRSTATUS: pc, x1-x31 */
	int in_ecall;		    /* pc was on `ecall` when saved (arch_inj_syscall) */
	union __riscv_fp_state fp;  /* NT_PRFPREG: f0-f31, fcsr; fp_len bytes valid */
	size_t fp_len;
};

/* The psABI has no red zone; some margin all the same (a leaf function's
 * code may have been built to a different convention). */
#define ARCH_INJ_RED_ZONE 128
/* sp is 16-aligned at every call (the psABI's standard calling convention). */
#define ARCH_INJ_CALL_ALIGN 16
/* Not used: the agent finds signal frames by the restorer's address at
 * their start (x86-64's rt_sigframe), which riscv64's frame does not hold
 * (it is in ra only), so arch_is_sigreturn answers 0 and no frame is
 * found (threads inside a signal handler: docs/ARCHITECTURE.md). The
 * saved pc and sp are at 304 and 320 from the frame's start (siginfo 128,
 * the ucontext's mcontext at 176 in it: its sc_regs pc, ra, sp). */
#define ARCH_SIGFRAME_IP_OFF 304
#define ARCH_SIGFRAME_SP_OFF 320
/* An address no process maps (below vm.mmap_min_addr): a called function
 * returning there (ra) faults, which the agent catches. */
#define ARCH_INJ_RETURN_TRAP 0x100u

/* The dynamic loader, which holds _r_debug (the list of loaded objects). */
#define ARCH_INJ_LOADER "/ld-linux-riscv64-lp64d.so.1"

/* 1: the agent reads the system call a thread waits in before stopping
 * it (cli/inject.c, note_blocked_call), as the stop loses what undoing
 * EINTR needs: the first argument, in the register the result overwrote. */
#define ARCH_INJ_BLOCKED_CALL 1

/* What seccomp filters see as the calls' arch (struct seccomp_data). */
#define ARCH_INJ_AUDIT AUDIT_ARCH_RISCV64

#endif
