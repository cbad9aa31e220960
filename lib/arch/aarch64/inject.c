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

/*
 * The system calls that loading the runtime and running it make on aarch64,
 * for the seccomp check before an attach (cli/seccomp.c), with the
 * arguments a filter may decide on. Found in the runtime's code (its
 * undefined symbols, `nm -D --undefined-only libdynftrace.so`, and its raw
 * syscall() uses) the x86-64 table's (lib/arch/x86_64/inject.c) with
 * the calls aarch64 has instead: it has no access, readlink, mkdir,
 * chmod, unlink, link or poll, glibc makes them faccessat, readlinkat,
 * mkdirat, fchmodat, unlinkat, linkat and ppoll. As glibc 2.34 and later
 * make them: stat, lstat and fstat are newfstatat, nanosleep is
 * clock_nanosleep, sysconf reads /sys (openat, read), qsort asks sysinfo,
 * a thread is made by clone3 (by clone where clone3 fails with ENOSYS).
 *
 * Addresses, lengths and descriptors are representative values (a filter
 * deciding on them is asked about these only); int arguments are zero-
 * extended, as glibc passes them (AT_FDCWD is 0x00000000ffffff9c).
 */
#define P_ADDR	 UINT64_C(0x7f5a3c200000) /* some address */
#define P_LEN	 UINT64_C(4096)
#define P_FD	 UINT64_C(5)
#define P_INT(v) ((uint64_t)(uint32_t)(v))
#define P_CWD	 P_INT(AT_FDCWD)
/* pthread_create's flags (glibc, sysdeps/unix/sysv/linux/createthread.c) */
#define P_THREAD_FLAGS                                                                             \
	(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |        \
	 CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID)

/* clang-format off */
#define PROBE(call, shown, needs, ...) {#call, shown, needs, SYS_##call, {__VA_ARGS__}}
/* clang-format on */
#define LOAD   "loading the runtime (dlopen)"
#define PATCH  "patching"
#define THREAD "starting the runtime's threads"
#define CTL    "the control socket"
#define REC    "recording"
#define SIG    "the runtime's signal handling"
#define RT     "the runtime"

static const struct arch_syscall_probe runtime_syscalls[] = {
    /* The loader, in dlopen: open the file, read its headers, map its
     * segments (R, R+X, R+W), protect its RELRO, free what it used. */
    PROBE(openat, "O_RDONLY|O_CLOEXEC", LOAD, P_CWD, P_ADDR, O_RDONLY | O_CLOEXEC, 0),
    PROBE(read, "", LOAD, P_FD, P_ADDR, 832),
    PROBE(pread64, "", LOAD, P_FD, P_ADDR, 68, 64),
    PROBE(newfstatat, "AT_EMPTY_PATH", LOAD, P_FD, P_ADDR, P_ADDR, AT_EMPTY_PATH),
    PROBE(mmap, "PROT_READ", LOAD, 0, P_LEN, PROT_READ, MAP_PRIVATE | MAP_DENYWRITE, P_FD, 0),
    PROBE(mmap, "PROT_READ|PROT_EXEC", LOAD, P_ADDR, P_LEN, PROT_READ | PROT_EXEC,
	  MAP_PRIVATE | MAP_FIXED | MAP_DENYWRITE, P_FD, P_LEN),
    PROBE(mmap, "PROT_READ|PROT_WRITE", LOAD, P_ADDR, P_LEN, PROT_READ | PROT_WRITE,
	  MAP_PRIVATE | MAP_FIXED | MAP_DENYWRITE, P_FD, P_LEN),
    PROBE(mprotect, "PROT_READ", LOAD, P_ADDR, P_LEN, PROT_READ),
    PROBE(munmap, "", LOAD, P_ADDR, P_LEN),
    PROBE(close, "", LOAD, P_FD),
    PROBE(brk, "", "memory allocation (malloc)", 0),
    PROBE(newfstatat, "AT_FDCWD", RT, P_CWD, P_ADDR, P_ADDR, 0),
    PROBE(newfstatat, "AT_FDCWD, AT_SYMLINK_NOFOLLOW", RT, P_CWD, P_ADDR, P_ADDR,
	  AT_SYMLINK_NOFOLLOW),
    PROBE(faccessat, "AT_FDCWD, F_OK", RT, P_CWD, P_ADDR, F_OK, 0),
    PROBE(readlinkat, "AT_FDCWD", RT, P_CWD, P_ADDR, P_ADDR, 4096),
    PROBE(getdents64, "", RT, P_FD, P_ADDR, 32768),
    PROBE(openat, "O_RDONLY|O_NONBLOCK|O_DIRECTORY|O_CLOEXEC", RT, P_CWD, P_ADDR,
	  O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC, 0),

    /* Memory: malloc, the buffers, the trampoline regions (mapped R+W,
     * filled, then R+X), the far-jump pages (R+X), and patching, which
     * makes code pages writable (R+W+X) and gives them back (R+X); where
     * that is refused it writes through /proc/self/mem (O_RDWR). */
    PROBE(mmap, "PROT_READ|PROT_WRITE, anonymous", RT, 0, P_LEN, PROT_READ | PROT_WRITE,
	  MAP_PRIVATE | MAP_ANONYMOUS, P_INT(-1), 0),
    PROBE(mmap, "PROT_READ|PROT_WRITE, MAP_FIXED_NOREPLACE", PATCH, P_ADDR, P_LEN,
	  PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, P_INT(-1), 0),
    PROBE(mmap, "PROT_READ|PROT_EXEC, anonymous", PATCH, P_ADDR, P_LEN, PROT_READ | PROT_EXEC,
	  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, P_INT(-1), 0),
    PROBE(mprotect, "PROT_READ|PROT_EXEC", PATCH, P_ADDR, P_LEN, PROT_READ | PROT_EXEC),
    PROBE(mprotect, "PROT_READ|PROT_WRITE|PROT_EXEC", PATCH, P_ADDR, P_LEN,
	  PROT_READ | PROT_WRITE | PROT_EXEC),
    PROBE(mprotect, "PROT_READ|PROT_WRITE", PATCH, P_ADDR, P_LEN, PROT_READ | PROT_WRITE),
    PROBE(mmap, "PROT_READ|PROT_WRITE|PROT_EXEC",
	  "a new thread's stack where the program's stack is executable", 0, P_LEN,
	  PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, P_INT(-1),
	  0),
    PROBE(openat, "O_RDWR|O_CLOEXEC", PATCH, P_CWD, P_ADDR, O_RDWR | O_CLOEXEC, 0),
    PROBE(pwrite64, "", PATCH, P_FD, P_ADDR, 5, P_ADDR),
    PROBE(madvise, "MADV_POPULATE_WRITE", REC, P_ADDR, P_LEN, MADV_POPULATE_WRITE),

    /* Cross-thread syncs after patching: membarrier (which falls back to
     * mprotect when refused), waking the buffers' consumer, locks. */
    PROBE(membarrier, "MEMBARRIER_CMD_QUERY", PATCH, MEMBARRIER_CMD_QUERY, 0, 0),
    PROBE(membarrier, "MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE", PATCH,
	  MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0),
    PROBE(membarrier, "MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED", PATCH,
	  MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0),
    PROBE(membarrier, "MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE", PATCH,
	  MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0),
    PROBE(membarrier, "MEMBARRIER_CMD_PRIVATE_EXPEDITED", PATCH, MEMBARRIER_CMD_PRIVATE_EXPEDITED,
	  0, 0),
    PROBE(futex, "FUTEX_WAIT_PRIVATE", RT, P_ADDR, FUTEX_WAIT_PRIVATE, 1, P_ADDR),
    PROBE(futex, "FUTEX_WAKE_PRIVATE", RT, P_ADDR, FUTEX_WAKE_PRIVATE, 1),
    PROBE(futex, "FUTEX_WAIT_BITSET_PRIVATE", RT, P_ADDR, FUTEX_WAIT_BITSET_PRIVATE, 1, 0, 0,
	  FUTEX_BITSET_MATCH_ANY),
    PROBE(futex, "FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME", "ending the runtime's threads", P_ADDR,
	  FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 1, 0, 0, FUTEX_BITSET_MATCH_ANY),
    PROBE(sched_yield, "", PATCH, 0),

    /* Threads (the control thread, the recorder) made by pthread_create,
     * named with pthread_setname_np (prctl on itself), ending with exit
     * after freeing their stack's pages. */
    PROBE(clone3, "", THREAD, P_ADDR, 88),
    PROBE(clone, "CLONE_VM|CLONE_THREAD|...", THREAD, P_THREAD_FLAGS, P_ADDR, P_ADDR, P_ADDR,
	  P_ADDR),
    PROBE(mmap, "PROT_NONE", THREAD, 0, P_LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
	  P_INT(-1), 0),
    PROBE(set_robust_list, "", THREAD, P_ADDR, 24),
    PROBE(rseq, "", THREAD, P_ADDR, 32, 0, 0x53053053 /* RSEQ_SIG */),
    PROBE(prctl, "PR_SET_NAME", THREAD, PR_SET_NAME, P_ADDR),
    PROBE(madvise, "MADV_DONTNEED", THREAD, P_ADDR, P_LEN, MADV_DONTNEED),
    PROBE(exit, "", "ending the runtime's threads", 0),
    PROBE(gettid, "", RT, 0),
    PROBE(getpid, "", RT, 0),
    PROBE(geteuid, "", CTL, 0),
    PROBE(prlimit64, "RLIMIT_NOFILE", CTL, 0, RLIMIT_NOFILE, 0, P_ADDR),
    PROBE(prlimit64, "RLIMIT_FSIZE", REC, 0, RLIMIT_FSIZE, 0, P_ADDR),
    PROBE(clock_nanosleep, "CLOCK_REALTIME", RT, CLOCK_REALTIME, 0, P_ADDR, P_ADDR),
    PROBE(clock_gettime, "CLOCK_MONOTONIC", "reading the clock without the vDSO", CLOCK_MONOTONIC,
	  P_ADDR),
    PROBE(sysinfo, "", "sorting (qsort)", P_ADDR),

    /* Signals: the SIGTRAP handler of patching, the handlers of fatal
     * signals that save a recording, masks around both, raising again. */
    PROBE(rt_sigaction, "SIGTRAP", SIG, SIGTRAP, P_ADDR, P_ADDR, 8),
    PROBE(rt_sigaction, "SIGSEGV", SIG, SIGSEGV, P_ADDR, P_ADDR, 8),
    PROBE(rt_sigprocmask, "SIG_BLOCK", SIG, SIG_BLOCK, P_ADDR, P_ADDR, 8),
    PROBE(rt_sigprocmask, "SIG_UNBLOCK", SIG, SIG_UNBLOCK, P_ADDR, P_ADDR, 8),
    PROBE(rt_sigprocmask, "SIG_SETMASK", SIG, SIG_SETMASK, P_ADDR, P_ADDR, 8),
    PROBE(rt_sigreturn, "", SIG, 0),
    PROBE(rt_tgsigqueueinfo, "SIGTRAP", SIG, 0, 0, SIGTRAP, P_ADDR),
    PROBE(tgkill, "SIGTRAP", SIG, 0, 0, SIGTRAP),
    PROBE(tgkill, "0", REC, 0, 0, 0),
    PROBE(kill, "0", CTL, 0, 0),

    /* The control socket: a Unix socket in a directory of its own, one
     * client at a time; descriptors moved high (fcntl). */
    PROBE(socket, "AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK", CTL, AF_UNIX,
	  SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0),
    PROBE(bind, "", CTL, P_FD, P_ADDR, 110),
    PROBE(listen, "", CTL, P_FD, 4),
    PROBE(connect, "", CTL, P_FD, P_ADDR, 110),
    PROBE(accept4, "SOCK_CLOEXEC|SOCK_NONBLOCK", CTL, P_FD, 0, 0, SOCK_CLOEXEC | SOCK_NONBLOCK),
    PROBE(getsockopt, "SOL_SOCKET, SO_PEERCRED", CTL, P_FD, SOL_SOCKET, SO_PEERCRED, P_ADDR,
	  P_ADDR),
    PROBE(sendto, "MSG_NOSIGNAL|MSG_DONTWAIT", CTL, P_FD, P_ADDR, 64, MSG_NOSIGNAL | MSG_DONTWAIT,
	  0, 0),
    PROBE(recvfrom, "MSG_DONTWAIT", CTL, P_FD, P_ADDR, 64, MSG_DONTWAIT, 0, 0),
    PROBE(recvfrom, "MSG_PEEK|MSG_DONTWAIT", CTL, P_FD, P_ADDR, 64, MSG_PEEK | MSG_DONTWAIT, 0, 0),
    PROBE(ppoll, "", CTL, P_ADDR, 1, P_ADDR, 0, 8),
    PROBE(shutdown, "SHUT_RDWR", CTL, P_FD, SHUT_RDWR),
    PROBE(fcntl, "F_DUPFD_CLOEXEC", CTL, P_FD, F_DUPFD_CLOEXEC, 900),
    PROBE(mkdirat, "AT_FDCWD, 0700", CTL, P_CWD, P_ADDR, 0700),
    PROBE(fchmodat, "AT_FDCWD, 0600", CTL, P_CWD, P_ADDR, 0600),
    PROBE(unlinkat, "AT_FDCWD", CTL, P_CWD, P_ADDR, 0),

    /* Files: trace streams and buffers in shared files (record), the
     * session's info, the CTF metadata (a link makes it appear whole). */
    PROBE(openat, "O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC", REC, P_CWD, P_ADDR,
	  O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600),
    PROBE(openat, "O_WRONLY|O_CREAT|O_CLOEXEC", REC, P_CWD, P_ADDR, O_WRONLY | O_CREAT | O_CLOEXEC,
	  0644),
    PROBE(openat, "O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC", REC, P_CWD, P_ADDR,
	  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644),
    PROBE(openat, "O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC", REC, P_CWD, P_ADDR,
	  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644),
    PROBE(openat, "O_WRONLY|O_APPEND|O_CLOEXEC", REC, P_CWD, P_ADDR,
	  O_WRONLY | O_APPEND | O_CLOEXEC, 0),
    PROBE(openat, "O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC", REC, P_CWD, P_ADDR,
	  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644),
    PROBE(mmap, "PROT_READ|PROT_WRITE, MAP_SHARED", REC, 0, P_LEN, PROT_READ | PROT_WRITE,
	  MAP_SHARED, P_FD, 0),
    PROBE(ftruncate, "", REC, P_FD, P_LEN),
    PROBE(fallocate, "", REC, P_FD, 0, 0, P_LEN),
    PROBE(lseek, "SEEK_SET", REC, P_FD, P_LEN, SEEK_SET),
    PROBE(write, "", REC, P_FD, P_ADDR, 65536),
    PROBE(write, "stderr", "printing the runtime's messages", 2, P_ADDR, 128),
    PROBE(linkat, "AT_FDCWD", REC, P_CWD, P_ADDR, P_CWD, P_ADDR, 0),
    PROBE(getrandom, "0", REC, P_ADDR, 16, 0),
    PROBE(getrandom, "GRND_NONBLOCK", "memory allocation (malloc)", P_ADDR, 8, GRND_NONBLOCK),
    PROBE(exit_group, "", "ending the process after a trap it cannot handle (_exit)", 0),
};

const struct arch_syscall_probe *arch_runtime_syscalls(size_t *n, uint32_t *audit_arch)
{
	*n = sizeof(runtime_syscalls) / sizeof(runtime_syscalls[0]);
	*audit_arch = AUDIT_ARCH_AARCH64;
	return runtime_syscalls;
}
