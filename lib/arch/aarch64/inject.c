/* SPDX-License-Identifier: MIT */
/*
 * inject.c - aarch64 operations of the attaching agent (arch_inject.h):
 * ptrace register access through register sets, a call's set-up, NOP runs
 * and the signal return, and the system calls the runtime makes (for the
 * seccomp check). Built into the command only.
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

#define SVC0 0xd4000001u /* svc #0 */

static int getset(pid_t tid, int set, long type, void *buf, size_t *len)
{
	struct iovec iov = {buf, *len};
	if (ptrace(set ? PTRACE_SETREGSET : PTRACE_GETREGSET, tid, (void *)type, &iov))
		return -errno;
	*len = iov.iov_len;
	return 0;
}

int arch_inj_get_gp(pid_t tid, struct arch_inj_regs *r)
{
	size_t len = sizeof(r->gp);
	int err = getset(tid, 0, NT_PRSTATUS, &r->gp, &len);
	if (err)
		return err;
	len = sizeof(r->sysno);
	return getset(tid, 0, NT_ARM_SYSTEM_CALL, &r->sysno, &len);
}

/* The general registers and the system call number: setup_call makes it
 * -1, so that the kernel does not take the call's x0 for a system call's
 * result to restart; the saved one comes back with the saved registers. */
int arch_inj_set_gp(pid_t tid, const struct arch_inj_regs *r)
{
	size_t len = sizeof(r->gp);
	int err = getset(tid, 1, NT_PRSTATUS, (void *)&r->gp, &len);
	if (err)
		return err;
	len = sizeof(r->sysno);
	return getset(tid, 1, NT_ARM_SYSTEM_CALL, (void *)&r->sysno, &len);
}

int arch_inj_save(pid_t tid, struct arch_inj_regs *r)
{
	int err = arch_inj_get_gp(tid, r);
	if (err)
		return err;
	/* A thread stopped in a restartable system call was already moved
	 * back onto its `svc` by the kernel (arm64's do_signal rewinds pc and
	 * puts orig_x0 back into x0 before the stop, and forgets the
	 * number): resumed with these registers, it makes the call again. */
	errno = 0;
	long w = ptrace(PTRACE_PEEKTEXT, tid, (void *)(uintptr_t)r->gp.pc, 0);
	r->in_svc = errno == 0 && (uint32_t)w == SVC0;
	r->tls_len = sizeof(r->tls);
	if ((err = getset(tid, 0, NT_ARM_TLS, r->tls, &r->tls_len)))
		return err;
	size_t len = sizeof(r->fp);
	if ((err = getset(tid, 0, NT_PRFPREG, &r->fp, &len)))
		return err;
	/* SVE: the whole state (Z, P, FFR and the vector length), when the
	 * CPU has it. Its header's size is what is valid. */
	r->sve_len = sizeof(r->sve);
	if (getset(tid, 0, NT_ARM_SVE, r->sve, &r->sve_len)) {
		r->sve_len = 0;
		return 0;
	}
	struct user_sve_header h;
	memcpy(&h, r->sve, sizeof(h));
	if (h.size > sizeof(r->sve) || h.size < sizeof(h))
		return -E2BIG;
	r->sve_len = h.size;
	return 0;
}

int arch_inj_restore(pid_t tid, const struct arch_inj_regs *r)
{
	int err = arch_inj_set_gp(tid, r);
	if (err)
		return err;
	size_t len = r->tls_len;
	if ((err = getset(tid, 1, NT_ARM_TLS, (void *)r->tls, &len)))
		return err;
	/* SVE when there was some: it holds the V registers as well, and
	 * setting the FPSIMD view afterwards would drop its upper halves. */
	len = r->sve_len;
	if (len)
		return getset(tid, 1, NT_ARM_SVE, (void *)r->sve, &len);
	len = sizeof(r->fp);
	return getset(tid, 1, NT_PRFPREG, (void *)&r->fp, &len);
}

uint64_t arch_inj_ip(const struct arch_inj_regs *r)
{
	return r->gp.pc;
}

void arch_inj_set_ip(struct arch_inj_regs *r, uint64_t ip)
{
	r->gp.pc = ip;
}

uint64_t arch_inj_sp(const struct arch_inj_regs *r)
{
	return r->gp.sp;
}

uint64_t arch_inj_tp(const struct arch_inj_regs *r)
{
	return r->tls[0];
}

/* The kernel forgets the number of a call it rewound for a restart
 * (syscallno -1 at the stop), so the thread's pc on `svc #0` says it:
 * the number is in x8. A thread stopped in user code right before an
 * `svc` counts as in that call too, which is what it is about to be. */
long arch_inj_syscall(const struct arch_inj_regs *r)
{
	if (r->sysno >= 0)
		return r->sysno;
	return r->in_svc ? (long)r->gp.regs[8] : -1;
}

uint64_t arch_inj_retval(const struct arch_inj_regs *r)
{
	return r->gp.regs[0];
}

void arch_inj_setup_call(struct arch_inj_regs *r, uint64_t fn, const uint64_t *args, int nargs,
			 uint64_t sp)
{
	for (int i = 0; i < nargs && i < 8; i++)
		r->gp.regs[i] = args[i];
	r->gp.pc = fn;
	/* The return address is x30, not the stack: returning faults at the
	 * trap. The slot the caller wrote at SP stays above the new sp, which
	 * AAPCS64 wants 16-aligned. Entering FN by setting pc is not a
	 * branch, so BTI does not check it (PSTATE.BTYPE is kept as saved: 0
	 * at any stop between instructions of guarded code). */
	r->gp.regs[30] = ARCH_INJ_RETURN_TRAP;
	r->gp.sp = sp & ~(uint64_t)15;
	r->sysno = -1;
}

void arch_inj_blocked_call(struct arch_inj_regs *r, long nr, const uint64_t *args, uint64_t sp,
			   uint64_t pc)
{
	r->blocked_nr = nr;
	memcpy(r->blocked_args, args, sizeof(r->blocked_args));
	r->blocked_sp = sp;
	r->blocked_pc = pc;
}

/*
 * A wait the stop ended with EINTR (epoll_pwait, epoll_pwait2, semtimedop,
 * rt_sigtimedwait) has its result in x0, over its first argument, and the
 * kernel's orig_x0 is not visible to ptrace. That argument comes from
 * /proc/PID/task/TID/syscall read just before the stop
 * (arch_inj_blocked_call), trusted only when that was the same call: same
 * number, the same five other arguments, sp and pc (after the `svc`).
 * Then back onto the `svc` with x0 restored, what the kernel does for
 * -ERESTARTNOHAND; a wait with a time-out starts again whole. A thread
 * that entered such a wait between that read and the stop keeps its
 * EINTR (as POSIX allows after a stop).
 */
int arch_inj_undo_eintr(struct arch_inj_regs *r)
{
	static const long calls[] = {SYS_epoll_pwait, SYS_rt_sigtimedwait, SYS_semtimedop,
#ifdef SYS_epoll_pwait2
				     SYS_epoll_pwait2
#endif
	};
	long nr = (long)r->gp.regs[8];
	if (r->blocked_nr < 0 || nr != r->blocked_nr || (int64_t)r->gp.regs[0] != -EINTR ||
	    r->gp.sp != r->blocked_sp || r->gp.pc != r->blocked_pc)
		return 0;
	for (int k = 1; k < 6; k++)
		if (r->gp.regs[k] != r->blocked_args[k])
			return 0;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (nr == calls[i]) {
			r->gp.regs[0] = r->blocked_args[0];
			r->gp.pc -= 4;
			r->blocked_nr = -1;
			return 1;
		}
	return 0;
}

size_t arch_nop_run(const uint8_t *code, size_t n)
{
	size_t k = 0;
	while (k + 4 <= n) {
		uint32_t v;
		memcpy(&v, code + k, 4);
		if (v != 0xd503201fu) /* nop */
			break;
		k += 4;
	}
	return k;
}

/*
 * glibc's __restore_rt (`mov x8, #139; svc #0`, rt_sigreturn) is where a
 * handler returns, but aarch64's signal frame does not hold its address:
 * the kernel puts it in x30 only, so the agent's scan for frames by that
 * address (ARCH_SIGFRAME_*) would take a handler's saved x30 for a frame
 * and write into the wrong words. Not recognised until the scan locates
 * aarch64 frames (not done; docs/ARCHITECTURE.md says what that leaves).
 */
int arch_is_sigreturn(const uint8_t *code, size_t n)
{
	(void)code, (void)n;
	return 0;
}
