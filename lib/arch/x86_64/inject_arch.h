/* SPDX-License-Identifier: MIT */
/* inject_arch.h - x86-64 register set of the attaching agent (arch_inject.h). */
#ifndef DYNFTRACE_INJECT_ARCH_H
#define DYNFTRACE_INJECT_ARCH_H

#include <linux/audit.h>
#include <stdint.h>
#include <sys/user.h>

#define ARCH_INJ_SUPPORTED 1

struct arch_inj_regs {
	struct user_regs_struct gp;
	/* XSAVE area (NT_X86_XSTATE): x87, SSE, AVX, AVX-512, ... as the
	 * kernel hands it; xs_len bytes of it are valid. */
	uint8_t xs[16384] __attribute__((aligned(64)));
	size_t xs_len;
	int xs_legacy; /* 1: only the FXSAVE area (PTRACE_GETFPREGS) */
};

/* Below the stack pointer: the red zone the interrupted code may use. */
#define ARCH_INJ_RED_ZONE 128
/* At a function's entry the stack pointer + 8 is 16-aligned. */
#define ARCH_INJ_CALL_ALIGN 16
/* rt_sigframe: the return address (the restorer) is at the frame's start,
 * the ucontext follows; these are the saved rip and rsp in its mcontext,
 * from the return address. */
#define ARCH_SIGFRAME_IP_OFF 176
#define ARCH_SIGFRAME_SP_OFF 168
/* An address no process maps (below vm.mmap_min_addr): a called function
 * returning there faults, which the agent catches. */
#define ARCH_INJ_RETURN_TRAP 0x100u

/* The dynamic loader, which holds _r_debug (the list of loaded objects). */
#define ARCH_INJ_LOADER "/ld-linux-x86-64.so.2"

/* 1: the agent reads the system call a thread waits in before stopping
 * it (cli/inject.c, note_blocked_call), as the stop loses what undoing
 * EINTR needs. 0: the first argument's register is not the return
 * register, and orig_rax keeps the number. */
#define ARCH_INJ_BLOCKED_CALL 0

/* What seccomp filters see as the calls' arch (struct seccomp_data). */
#define ARCH_INJ_AUDIT AUDIT_ARCH_X86_64

#endif
