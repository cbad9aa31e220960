/* SPDX-License-Identifier: MIT */
/*
 * inject.c - riscv64 operations of the attaching agent (arch_inject.h):
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

#define ECALL 0x00000073u /* ecall: 4 bytes, it has no compressed form */

static int getset(pid_t tid, int set, long type, void *buf, size_t *len)
{
	struct iovec iov = {buf, *len};
	if (ptrace(set ? PTRACE_SETREGSET : PTRACE_GETREGSET, tid, (void *)type, &iov))
		return -errno;
	*len = iov.iov_len;
	return 0;
}

/* pc, ra, sp, gp, tp, t0-t6, s0-s11, a0-a7. The system call number is a7
 * itself, and the kernel keeps no restart state that ptrace must switch
 * off (below, arch_inj_save). */
int arch_inj_get_gp(pid_t tid, struct arch_inj_regs *r)
{
	size_t len = sizeof(r->gp);
	return getset(tid, 0, NT_PRSTATUS, &r->gp, &len);
}

int arch_inj_set_gp(pid_t tid, const struct arch_inj_regs *r)
{
	size_t len = sizeof(r->gp);
	return getset(tid, 1, NT_PRSTATUS, (void *)&r->gp, &len);
}

int arch_inj_save(pid_t tid, struct arch_inj_regs *r)
{
	int err = arch_inj_get_gp(tid, r);
	if (err)
		return err;
	/* A thread stopped in a restartable system call was already moved
	 * back onto its `ecall` by the kernel (riscv's
	 * arch_do_signal_or_restart, since Linux 6.1 as arm64's: it rewinds
	 * epc and puts orig_a0 back into a0 before get_signal, where the
	 * stop happens, and forgets that it came from a system call):
	 * resumed with these registers, it makes the call again. */
	errno = 0;
	long w = ptrace(PTRACE_PEEKTEXT, tid, (void *)(uintptr_t)r->gp.pc, 0);
	r->in_ecall = errno == 0 && (uint32_t)w == ECALL;
	/* F and D: f0-f31 and fcsr, as long as the kernel says (the Q
	 * layout's size is an upper bound). Linux 6.1 has no vector state
	 * for user space. */
	r->fp_len = sizeof(r->fp);
	if ((err = getset(tid, 0, NT_PRFPREG, &r->fp, &r->fp_len)))
		return err;
	return 0;
}

int arch_inj_restore(pid_t tid, const struct arch_inj_regs *r)
{
	int err = arch_inj_set_gp(tid, r);
	if (err)
		return err;
	size_t len = r->fp_len;
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

/* tp (x4): what the runtime's arch_thread_pointer reads. */
uint64_t arch_inj_tp(const struct arch_inj_regs *r)
{
	return r->gp.tp;
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
/* ptrace shows no "in a system call" on riscv64 outside syscall stops: a
 * thread whose pc is on an `ecall` is in that call (rewound for a
 * restart) or about to make it, and its number is in a7. */
long arch_inj_syscall(const struct arch_inj_regs *r)
{
	return r->in_ecall ? (long)r->gp.a7 : -1;
}

uint64_t arch_inj_retval(const struct arch_inj_regs *r)
{
	return r->gp.a0;
}

void arch_inj_setup_call(struct arch_inj_regs *r, uint64_t fn, const uint64_t *args, int nargs,
			 uint64_t sp)
{
	uint64_t *a[8] = {&r->gp.a0, &r->gp.a1, &r->gp.a2, &r->gp.a3,
			  &r->gp.a4, &r->gp.a5, &r->gp.a6, &r->gp.a7};
	for (int i = 0; i < nargs && i < 8; i++)
		*a[i] = args[i];
	/* The return address is ra, not the stack: returning faults at the
	 * trap. The slot the caller wrote at SP stays above the new sp, which
	 * the psABI wants 16-aligned. gp and tp stay the thread's own: the
	 * program's global pointer and its TLS. */
	r->gp.pc = fn;
	r->gp.ra = ARCH_INJ_RETURN_TRAP;
	r->gp.sp = sp & ~(uint64_t)15;
}

long arch_inj_syscall_nr(const struct arch_inj_regs *r)
{
	return (long)r->gp.a7;
}

/* a0 is the first argument and the return value: at a call's return it
 * holds the result, and the kernel's orig_a0 is not visible to ptrace
 * (/proc/PID/task/TID/syscall shows it: ARCH_INJ_BLOCKED_CALL). */
void arch_inj_syscall_args(const struct arch_inj_regs *r, uint64_t args[6])
{
	const uint64_t a[6] = {r->gp.a0, r->gp.a1, r->gp.a2, r->gp.a3, r->gp.a4, r->gp.a5};
	memcpy(args, a, sizeof(a));
}

/* Back onto the `ecall` (4 bytes: the kernel stepped over it on entry), a0
 * restored; a7 still holds NR. The thread is then in that call again, as
 * arch_inj_syscall tells from in_ecall. */
void arch_inj_restart_syscall(struct arch_inj_regs *r, long nr, const uint64_t args[6])
{
	(void)nr;
	r->gp.a0 = args[0];
	r->gp.pc -= 4;
	r->in_ecall = 1;
}

/* `nop` (addi x0, x0, 0) and, with the C extension, `c.nop`: what
 * -fpatchable-function-entry leaves at a site. */
size_t arch_nop_run(const uint8_t *code, size_t n)
{
	size_t k = 0;
	while (k + 2 <= n) {
		uint16_t h;
		memcpy(&h, code + k, 2);
		if (h == 0x0001u) { /* c.nop */
			k += 2;
			continue;
		}
		uint32_t v;
		if (k + 4 > n)
			break;
		memcpy(&v, code + k, 4);
		if (v != 0x00000013u)
			break;
		k += 4;
	}
	return k;
}

/*
 * The vDSO's __vdso_rt_sigreturn (`li a7, 139; ecall`) is where a handler
 * returns, but riscv64's signal frame does not hold its address: the
 * kernel puts it in ra only, as arm64 does, so the agent's scan for frames
 * by that address (ARCH_SIGFRAME_*) would take a handler's saved ra for a
 * frame and write into the wrong words. Not recognised until the scan
 * locates frames this way (not done; docs/ARCHITECTURE.md says what that
 * leaves).
 */
int arch_is_sigreturn(const uint8_t *code, size_t n)
{
	(void)code, (void)n;
	return 0;
}
