/* SPDX-License-Identifier: MIT */
/* inject_arch.h - aarch64 register set of the attaching agent (arch_inject.h). */
#ifndef DYNFTRACE_INJECT_ARCH_H
#define DYNFTRACE_INJECT_ARCH_H

#include <stddef.h>
#include <linux/audit.h>
#include <stdint.h>
#include <asm/ptrace.h>

/* Attach works (tested under system emulation, tests/cross/system.sh). */
#define ARCH_INJ_SUPPORTED 1

struct arch_inj_regs {
	struct user_pt_regs gp; /* NT_PRSTATUS: x0-x30, sp, pc, pstate */
	int sysno;		/* NT_ARM_SYSTEM_CALL: the kernel's syscallno */
	int in_svc;		/* pc was on `svc #0` when saved (arch_inj_syscall) */
	uint64_t tls[2];	/* NT_ARM_TLS: tpidr_el0 (and tpidr2_el0 where the kernel has it) */
	size_t tls_len;
	struct user_fpsimd_state fp; /* NT_PRFPREG: v0-v31, fpsr, fpcr */
	/* NT_ARM_SVE as the kernel hands it (header + state), sve_len bytes
	 * valid, 0: no SVE. Restored in place of fp: it holds the V
	 * registers too (as their low halves). 12 KiB holds the state at the
	 * architecture's largest vector length (2048 bits). */
	uint8_t sve[12288] __attribute__((aligned(16)));
	size_t sve_len;
};

/* AAPCS64 has no red zone; some margin all the same (a leaf function's
 * code may have been built to a different convention). */
#define ARCH_INJ_RED_ZONE 128
/* sp is 16-aligned at every public interface (AAPCS64), and on entry. */
#define ARCH_INJ_CALL_ALIGN 16
/* Signal frames are found by the word their FPSIMD record starts with
 * (FPSIMD_MAGIC 0x46508001, its size 0x210: the first record the kernel
 * writes into every frame's __reserved, at 592 from the frame's start)
 * and checked by arch_sigframe_check: aarch64's frame does not hold the
 * restorer's address (it is in x30 only). The saved pc and sp are at 568
 * and 560 from the frame's start (siginfo 128, the ucontext's mcontext at
 * 176 in it: fault_address, regs[31], sp, pc). */
#define ARCH_SIGFRAME_MARK     UINT64_C(0x0000021046508001)
#define ARCH_SIGFRAME_MARK_OFF 592
#define ARCH_SIGFRAME_IP_OFF   568
#define ARCH_SIGFRAME_SP_OFF   560
/* An address no process maps (below vm.mmap_min_addr): a called function
 * returning there (x30) faults, which the agent catches. */
#define ARCH_INJ_RETURN_TRAP 0x100u

/* The dynamic loader, which holds _r_debug (the list of loaded objects). */
#define ARCH_INJ_LOADER "/ld-linux-aarch64.so.1"

/* 1: the agent reads the system call a thread waits in before stopping
 * it (cli/inject.c, note_blocked_call), as the stop loses what undoing
 * EINTR needs: the first argument, in the register the result overwrote. */
#define ARCH_INJ_BLOCKED_CALL 1

/* What seccomp filters see as the calls' arch (struct seccomp_data). */
#define ARCH_INJ_AUDIT AUDIT_ARCH_AARCH64

#endif
