/* SPDX-License-Identifier: MIT */
/*
 * arch_inject.h - what the attaching agent (cli/inject.c, in the command,
 * never in the runtime) needs of the architecture: a stopped thread's
 * registers saved and restored whole, a function call set up in it, and
 * what its code and signal frames look like. Implemented by
 * lib/arch/<arch>/inject.c; the register set is `struct arch_inj_regs` of
 * that folder's inject_arch.h.
 */
#ifndef DYNFTRACE_ARCH_INJECT_H
#define DYNFTRACE_ARCH_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "inject_arch.h"

/* Every register of stopped thread TID (general, vector and their state):
 * 0 or -errno. */
int arch_inj_save(pid_t tid, struct arch_inj_regs *r);
/* Put them back exactly. */
int arch_inj_restore(pid_t tid, const struct arch_inj_regs *r);
/* General registers only (what a call changes besides the vector state). */
int arch_inj_set_gp(pid_t tid, const struct arch_inj_regs *r);
int arch_inj_get_gp(pid_t tid, struct arch_inj_regs *r);

uint64_t arch_inj_ip(const struct arch_inj_regs *r);
void arch_inj_set_ip(struct arch_inj_regs *r, uint64_t ip);
uint64_t arch_inj_sp(const struct arch_inj_regs *r);
/* The thread pointer (what the runtime's arch_thread_pointer() returns on
 * that thread): locates its static TLS. */
uint64_t arch_inj_tp(const struct arch_inj_regs *r);
/* The system call the thread is stopped in, or -1 in user code. */
long arch_inj_syscall(const struct arch_inj_regs *r);
/* The value a called function returned. */
uint64_t arch_inj_retval(const struct arch_inj_regs *r);
/* The link register, where a call leaves its return address (aarch64's
 * x30); 0 where calls push it (x86-64), and setting it does nothing. */
uint64_t arch_inj_link(const struct arch_inj_regs *r);
void arch_inj_set_link(struct arch_inj_regs *r, uint64_t v);

/*
 * Make R a call of FN(ARGS[0..NARGS-1]) whose return address is at SP
 * (the caller wrote it there; SP is ARCH_INJ_CALL_SP_ALIGN-aligned plus
 * the slot). The kernel must not restart an interrupted system call over
 * it: that is switched off here and comes back with the saved registers.
 */
void arch_inj_setup_call(struct arch_inj_regs *r, uint64_t fn, const uint64_t *args, int nargs,
			 uint64_t sp);

/*
 * What undoing a stop's EINTR needs of the registers, read at a stop right
 * after a system call returned; cli/inject.c (undo_eintr) decides when.
 * arch_inj_syscall_nr: the call's number as the registers still hold it
 * (x86-64's orig_rax; a plain register elsewhere, meaningless unless the
 * thread just left that call). arch_inj_syscall_args: its six argument
 * registers as they are now; where the first is also the return register
 * (ARCH_INJ_BLOCKED_CALL), ARGS[0] is the result. arch_inj_restart_syscall:
 * R back onto the call's system-call instruction with NR and ARGS put back
 * where the return overwrote them, what the kernel does for
 * -ERESTARTNOHAND, so that the thread makes the call again when it resumes.
 */
long arch_inj_syscall_nr(const struct arch_inj_regs *r);
void arch_inj_syscall_args(const struct arch_inj_regs *r, uint64_t args[6]);
void arch_inj_restart_syscall(struct arch_inj_regs *r, long nr, const uint64_t args[6]);

/* How many bytes of single-instruction NOPs start at CODE (up to N):
 * executing them does nothing but advance the instruction pointer past
 * them, so a thread stopped among them may be moved there instead. */
size_t arch_nop_run(const uint8_t *code, size_t n);
/* Is CODE (N bytes) the C library's signal return (what a signal frame's
 * return address points at)? How the agent finds signal frames where
 * their start holds that address (x86-64). */
int arch_is_sigreturn(const uint8_t *code, size_t n);

/*
 * Where a signal frame does not start with the restorer's address
 * (aarch64: the kernel hands it in x30 only), inject_arch.h defines
 * ARCH_SIGFRAME_MARK: a word the kernel writes at ARCH_SIGFRAME_MARK_OFF
 * from every frame's start, which the agent's stack scan looks for.
 * arch_sigframe_check then reads the candidate frame at FRAME through RD
 * (0 or -errno, as inj_read) and checks it strictly, as the kernel lays
 * frames out: 1 if it is one, with *END the first address above it (the
 * interrupted sp of a frame on the same stack is at or above it); 0 if
 * not. The agent checks the saved pc and sp against the mappings.
 */
typedef int (*arch_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
int arch_sigframe_check(uint64_t frame, arch_read_fn rd, void *ctx, uint64_t *end);

#endif
