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

#ifndef SYS_riscv_flush_icache
#define SYS_riscv_flush_icache (244 + 15) /* arch/riscv/include/uapi/asm/unistd.h */
#endif

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
 * rt_sigtimedwait) has its result in a0, over its first argument, and the
 * kernel's orig_a0 is not visible to ptrace. That argument comes from
 * /proc/PID/task/TID/syscall read just before the stop
 * (arch_inj_blocked_call: it shows orig_a0, and pc after the `ecall`,
 * which the kernel steps over on entry), trusted only when that was the
 * same call: same number (a7), the same five other arguments, sp and pc.
 * Then back onto the `ecall` with a0 restored, what the kernel does for
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
	const uint64_t args[6] = {r->gp.a0, r->gp.a1, r->gp.a2, r->gp.a3, r->gp.a4, r->gp.a5};
	long nr = (long)r->gp.a7;
	if (r->blocked_nr < 0 || nr != r->blocked_nr || (int64_t)args[0] != -EINTR ||
	    r->gp.sp != r->blocked_sp || r->gp.pc != r->blocked_pc)
		return 0;
	for (int k = 1; k < 6; k++)
		if (args[k] != r->blocked_args[k])
			return 0;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (nr == calls[i]) {
			r->gp.a0 = r->blocked_args[0];
			r->gp.pc -= 4;
			r->in_ecall = 1;
			r->blocked_nr = -1;
			return 1;
		}
	return 0;
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

/*
 * The system calls that loading the runtime and running it make on
 * riscv64, for the seccomp check before an attach (cli/seccomp.c), with
 * the arguments a filter may decide on. riscv64's calls are the generic
 * table's, as aarch64's (lib/arch/aarch64/inject.c, which says how the
 * list was found): the *at calls, ppoll, newfstatat, clone3; and one of
 * its own, riscv_flush_icache, after patching.
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
    /* riscv64's own: instruction fetch made coherent with the stores of
     * patching (arch_code_written), for all the process's threads. */
    PROBE(riscv_flush_icache, "", PATCH, P_ADDR, P_ADDR, 0),

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
	*audit_arch = AUDIT_ARCH_RISCV64;
	return runtime_syscalls;
}
