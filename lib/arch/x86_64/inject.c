/* SPDX-License-Identifier: MIT */
/*
 * inject.c - x86-64 operations of the attaching agent (arch_inject.h):
 * ptrace register access, a call's set-up, NOP runs and signal frames,
 * and the system calls the runtime makes (for the seccomp check). Built
 * into the command only.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "arch_inject.h"

int arch_inj_get_gp(pid_t tid, struct arch_inj_regs *r)
{
	return ptrace(PTRACE_GETREGS, tid, 0, &r->gp) ? -errno : 0;
}

int arch_inj_set_gp(pid_t tid, const struct arch_inj_regs *r)
{
	return ptrace(PTRACE_SETREGS, tid, 0, &r->gp) ? -errno : 0;
}

int arch_inj_save(pid_t tid, struct arch_inj_regs *r)
{
	int err = arch_inj_get_gp(tid, r);
	if (err)
		return err;
	struct iovec iov = {r->xs, sizeof(r->xs)};
	r->xs_legacy = 0;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) == 0) {
		r->xs_len = iov.iov_len;
		return 0;
	}
	/* No XSAVE: the FXSAVE area holds x87 and SSE. */
	if (ptrace(PTRACE_GETFPREGS, tid, 0, r->xs))
		return -errno;
	r->xs_legacy = 1;
	r->xs_len = sizeof(struct user_fpregs_struct);
	return 0;
}

int arch_inj_restore(pid_t tid, const struct arch_inj_regs *r)
{
	int err = arch_inj_set_gp(tid, r);
	if (err)
		return err;
	if (r->xs_legacy)
		return ptrace(PTRACE_SETFPREGS, tid, 0, r->xs) ? -errno : 0;
	struct iovec iov = {(void *)r->xs, r->xs_len};
	return ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov) ? -errno : 0;
}

uint64_t arch_inj_ip(const struct arch_inj_regs *r)
{
	return r->gp.rip;
}

void arch_inj_set_ip(struct arch_inj_regs *r, uint64_t ip)
{
	r->gp.rip = ip;
}

uint64_t arch_inj_sp(const struct arch_inj_regs *r)
{
	return r->gp.rsp;
}

uint64_t arch_inj_tp(const struct arch_inj_regs *r)
{
	return r->gp.fs_base;
}

uint64_t arch_inj_link(const struct arch_inj_regs *r)
{
	(void)r;
	return 0;
}

void arch_inj_set_link(struct arch_inj_regs *r, uint64_t v)
{
	(void)r, (void)v;
}

long arch_inj_syscall(const struct arch_inj_regs *r)
{
	return (long)r->gp.orig_rax;
}

uint64_t arch_inj_retval(const struct arch_inj_regs *r)
{
	return r->gp.rax;
}

void arch_inj_setup_call(struct arch_inj_regs *r, uint64_t fn, const uint64_t *args, int nargs,
			 uint64_t sp)
{
	unsigned long long *argr[6] = {&r->gp.rdi, &r->gp.rsi, &r->gp.rdx,
				       &r->gp.rcx, &r->gp.r8,  &r->gp.r9};
	for (int i = 0; i < nargs && i < 6; i++)
		*argr[i] = args[i];
	r->gp.rip = fn;
	r->gp.rsp = sp;
	r->gp.rax = 0; /* no vector arguments (variadic convention) */
	/* Not in a system call any more: else the kernel, seeing -ERESTART*
	 * in rax, would back rip up onto a syscall instruction. The saved
	 * registers bring the interrupted call back, and the kernel restarts
	 * it when the thread resumes with them. */
	r->gp.orig_rax = (unsigned long long)-1;
}

/* orig_rax survives the stop: the call the thread just left, -1 if none. */
long arch_inj_syscall_nr(const struct arch_inj_regs *r)
{
	return (long)r->gp.orig_rax;
}

/* The result is in rax, so the arguments survive the call's return. */
void arch_inj_syscall_args(const struct arch_inj_regs *r, uint64_t args[6])
{
	const uint64_t a[6] = {r->gp.rdi, r->gp.rsi, r->gp.rdx, r->gp.r10, r->gp.r8, r->gp.r9};
	memcpy(args, a, sizeof(a));
}

/* Back onto the 2-byte `syscall`, number in rax (the arguments are still
 * in place). */
void arch_inj_restart_syscall(struct arch_inj_regs *r, long nr, const uint64_t args[6])
{
	(void)args;
	r->gp.rax = (unsigned long long)nr;
	r->gp.rip -= 2;
}

size_t arch_nop_run(const uint8_t *code, size_t n)
{
	size_t k = 0;
	while (k < n && code[k] == 0x90) /* nop: the only 1-byte NOP */
		k++;
	return k;
}

int arch_is_sigreturn(const uint8_t *code, size_t n)
{
	/* glibc's __restore_rt: mov $15 (rt_sigreturn), %rax; syscall */
	static const uint8_t rt[] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
	return n >= sizeof(rt) && !memcmp(code, rt, sizeof(rt));
}
