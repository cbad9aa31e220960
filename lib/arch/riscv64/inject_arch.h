/* SPDX-License-Identifier: MIT */
/* inject_arch.h - riscv64: attach is not implemented (inject.c refuses). */
#ifndef DYNFTRACE_INJECT_ARCH_H
#define DYNFTRACE_INJECT_ARCH_H

#include <linux/audit.h>
#include <stdint.h>
#include <asm/ptrace.h>

/* 0: the attaching agent refuses at once (cmd_attach.c says why). */
#define ARCH_INJ_SUPPORTED 0

struct arch_inj_regs {
	struct user_regs_struct gp;
};

#define ARCH_INJ_RED_ZONE    0
#define ARCH_INJ_CALL_ALIGN  16
#define ARCH_SIGFRAME_IP_OFF 0
#define ARCH_SIGFRAME_SP_OFF 0
#define ARCH_INJ_RETURN_TRAP 0x100u

/* The dynamic loader, which holds _r_debug (the list of loaded objects). */
#define ARCH_INJ_LOADER "/ld-linux-riscv64-lp64d.so.1"

/* 1: the agent reads the system call a thread waits in before stopping
 * it (arch_inj_blocked_call), as the stop loses what undoing EINTR needs. */
#define ARCH_INJ_BLOCKED_CALL 0

/* What seccomp filters see as the calls' arch (struct seccomp_data). */
#define ARCH_INJ_AUDIT AUDIT_ARCH_RISCV64

#endif
