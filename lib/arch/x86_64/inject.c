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

int arch_inj_undo_eintr(struct arch_inj_regs *r)
{
	static const long calls[] = {SYS_epoll_wait,	  SYS_epoll_pwait, SYS_epoll_pwait2,
				     SYS_rt_sigtimedwait, SYS_semop,	   SYS_semtimedop};
	long nr = (long)r->gp.orig_rax;
	if (nr < 0 || (long long)r->gp.rax != -EINTR)
		return 0;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (nr == calls[i]) {
			/* Back onto the 2-byte syscall instruction, number in rax:
			 * what the kernel does for -ERESTARTNOHAND. A wait with a
			 * time-out starts it again whole. */
			r->gp.rax = r->gp.orig_rax;
			r->gp.rip -= 2;
			return 1;
		}
	return 0;
}

/* Not needed: orig_rax and the argument registers survive the stop. */
void arch_inj_blocked_call(struct arch_inj_regs *r, long nr, const uint64_t *args, uint64_t sp,
			   uint64_t pc)
{
	(void)r, (void)nr, (void)args, (void)sp, (void)pc;
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

/*
 * The system calls that loading the runtime and running it make on x86-64,
 * for the seccomp check before an attach (cli/seccomp.c), with the
 * arguments a filter may decide on. Found in the runtime's code (its
 * undefined symbols, `nm -D --undefined-only libdynftrace.so`, and its raw
 * syscall() uses) and checked against what an attach, tracing through
 * `ctl`, `record -p` and a detach make (perf trace). As glibc 2.34 and
 * later (what the runtime is linked against) make them: stat, lstat and
 * fstat are newfstatat, nanosleep is clock_nanosleep, sysconf reads
 * /sys (openat, read), qsort asks sysinfo, a thread is made by clone3 (by
 * clone where clone3 fails with ENOSYS, as container profiles make it).
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
    PROBE(access, "F_OK", RT, P_ADDR, F_OK),
    PROBE(readlink, "", RT, P_ADDR, P_ADDR, 4096),
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
    PROBE(poll, "", CTL, P_ADDR, 1, 1000),
    PROBE(shutdown, "SHUT_RDWR", CTL, P_FD, SHUT_RDWR),
    PROBE(fcntl, "F_DUPFD_CLOEXEC", CTL, P_FD, F_DUPFD_CLOEXEC, 900),
    PROBE(mkdir, "0700", CTL, P_ADDR, 0700),
    PROBE(chmod, "0600", CTL, P_ADDR, 0600),
    PROBE(unlink, "", CTL, P_ADDR),

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
    PROBE(link, "", REC, P_ADDR, P_ADDR),
    PROBE(getrandom, "0", REC, P_ADDR, 16, 0),
    PROBE(getrandom, "GRND_NONBLOCK", "memory allocation (malloc)", P_ADDR, 8, GRND_NONBLOCK),
    PROBE(exit_group, "", "ending the process after a trap it cannot handle (_exit)", 0),
};

const struct arch_syscall_probe *arch_runtime_syscalls(size_t *n, uint32_t *audit_arch)
{
	*n = sizeof(runtime_syscalls) / sizeof(runtime_syscalls[0]);
	*audit_arch = AUDIT_ARCH_X86_64;
	return runtime_syscalls;
}
