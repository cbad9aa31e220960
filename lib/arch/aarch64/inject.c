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
#include <sys/ucontext.h>
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

uint64_t arch_inj_link(const struct arch_inj_regs *r)
{
	return r->gp.regs[30];
}

void arch_inj_set_link(struct arch_inj_regs *r, uint64_t v)
{
	r->gp.regs[30] = v;
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

/* At the stop after a wait's EINTR the kernel has forgotten the number
 * (syscallno -1, do_signal's forget_syscall): x8 still holds it. */
long arch_inj_syscall_nr(const struct arch_inj_regs *r)
{
	return (long)r->gp.regs[8];
}

/* x0 is the first argument and the return value: at a call's return it
 * holds the result, and the kernel's orig_x0 is not visible to ptrace
 * (the agent reads it from /proc before the stop: ARCH_INJ_BLOCKED_CALL). */
void arch_inj_syscall_args(const struct arch_inj_regs *r, uint64_t args[6])
{
	memcpy(args, r->gp.regs, 6 * sizeof(args[0]));
}

/* Back onto the `svc #0` (4 bytes), x0 restored; x8 still holds NR. */
void arch_inj_restart_syscall(struct arch_inj_regs *r, long nr, const uint64_t args[6])
{
	(void)nr;
	r->gp.regs[0] = args[0];
	r->gp.pc -= 4;
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
 * handler returns, but aarch64's signal frame does not hold its address
 * (the kernel hands it in x30 only): frames are found by their FPSIMD
 * record instead (ARCH_SIGFRAME_MARK, arch_sigframe_check below).
 */
int arch_is_sigreturn(const uint8_t *code, size_t n)
{
	(void)code, (void)n;
	return 0;
}

/*
 * arm64's rt_sigframe (arch/arm64/kernel/signal.c): siginfo (128 bytes),
 * then the ucontext, whose layout glibc's ucontext_t repeats: uc_flags and
 * uc_link (both 0 as the kernel writes them), the stack, the mask, and the
 * sigcontext (fault_address, x0-x30, sp, pc, pstate) with __reserved: a
 * chain of records {magic, size}, FPSIMD's first (always written), ending
 * with a null record. Space that did not fit there (large SVE/SME state)
 * follows the frame, named by an EXTRA record. Above it all, 16-aligned,
 * the kernel writes a frame record {x29, x30} of the interrupted code for
 * unwinders; the frame itself starts at the handler's 16-aligned sp.
 */
#define SF_UC		128u /* sizeof(siginfo_t) */
#define SF_MC		(SF_UC + offsetof(ucontext_t, uc_mcontext))
#define SF_REGS		(SF_MC + offsetof(mcontext_t, regs))
#define SF_PSTATE	(SF_MC + offsetof(mcontext_t, pstate))
#define SF_RES		(SF_MC + offsetof(mcontext_t, __reserved))
#define SF_RES_LEN	sizeof(((mcontext_t *)0)->__reserved)
#define SF_SIZE		(SF_UC + sizeof(ucontext_t))
#define SF_MAXSZ	(256u << 10) /* the kernel's SIGFRAME_MAXSZ, extra space included */
#define REC_FPSIMD	0x46508001u  /* FPSIMD_MAGIC, <asm/sigcontext.h> */
#define REC_FPSIMD_SIZE 0x210u	     /* sizeof(struct fpsimd_context) */
#define REC_EXTRA	0x45585401u  /* EXTRA_MAGIC */
_Static_assert(SF_MC + offsetof(mcontext_t, pc) == ARCH_SIGFRAME_IP_OFF, "saved pc");
_Static_assert(SF_MC + offsetof(mcontext_t, sp) == ARCH_SIGFRAME_SP_OFF, "saved sp");
_Static_assert(SF_RES == ARCH_SIGFRAME_MARK_OFF, "FPSIMD record");
_Static_assert(ARCH_SIGFRAME_MARK == ((uint64_t)REC_FPSIMD_SIZE << 32 | REC_FPSIMD), "marker");

int arch_sigframe_check(uint64_t frame, arch_read_fn rd, void *ctx, uint64_t *end)
{
	uint8_t f[SF_SIZE];
	if ((frame & 15) || rd(ctx, frame, f, sizeof(f)))
		return 0;
	int32_t signo;
	uint64_t flags, link, pstate, regs[31];
	memcpy(&signo, f, 4);
	memcpy(&flags, f + SF_UC + offsetof(ucontext_t, uc_flags), 8);
	memcpy(&link, f + SF_UC + offsetof(ucontext_t, uc_link), 8);
	memcpy(&pstate, f + SF_PSTATE, 8);
	memcpy(regs, f + SF_REGS, sizeof(regs));
	/* a signal number; EL0t in AArch64 state (M[4:0] = 0) */
	if (signo < 1 || signo > 64 || flags || link || (pstate & 0x1f))
		return 0;
	/* the record chain: FPSIMD first, each 16-aligned and inside
	 * __reserved, a null record at its end */
	uint64_t next = frame + SF_SIZE;
	size_t off = 0;
	for (int first = 1;; first = 0) {
		uint32_t h[2];
		if (off + 8 > SF_RES_LEN)
			return 0;
		memcpy(h, f + SF_RES + off, 8);
		if (first && (h[0] != REC_FPSIMD || h[1] != REC_FPSIMD_SIZE))
			return 0;
		if (!h[0]) {
			if (h[1])
				return 0;
			break;
		}
		if (h[1] < 8 || (h[1] & 15) || h[1] > SF_RES_LEN - off)
			return 0;
		if (h[0] == REC_EXTRA) {
			uint64_t datap;
			uint32_t size;
			if (h[1] < 24)
				return 0;
			memcpy(&datap, f + SF_RES + off + 8, 8);
			memcpy(&size, f + SF_RES + off + 16, 4);
			if (datap < frame + SF_SIZE || (datap & 15) || size > SF_MAXSZ ||
			    datap + size > frame + SF_MAXSZ)
				return 0;
			next = datap + size;
		}
		off += h[1];
	}
	/* the frame record of the interrupted code */
	uint64_t fr[2];
	next = (next + 15) & ~UINT64_C(15);
	if (rd(ctx, next, fr, sizeof(fr)) || fr[0] != regs[29] || fr[1] != regs[30])
		return 0;
	*end = next + sizeof(fr);
	return 1;
}
