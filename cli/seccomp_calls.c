/* SPDX-License-Identifier: MIT */
/*
 * seccomp_calls.c - the system calls the runtime makes in a process, for
 * the seccomp check before an attach (seccomp.c).
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "seccomp.h"

/*
 * The system calls that loading the runtime and running it make, with the
 * arguments a filter may decide on, as this architecture's glibc makes
 * them: one table for all, as the calls differ only where an architecture
 * lacks the old call (aarch64 and riscv64, the generic system call table,
 * have no access, readlink, poll, mkdir, chmod, unlink or link; glibc makes
 * them faccessat, readlinkat, ppoll, mkdirat, fchmodat, unlinkat and
 * linkat), which SYS_name's presence says. Found in the runtime's code (its
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

static const struct seccomp_probe runtime_calls[] = {
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
#ifdef SYS_access
    PROBE(access, "F_OK", RT, P_ADDR, F_OK),
#else
    PROBE(faccessat, "AT_FDCWD, F_OK", RT, P_CWD, P_ADDR, F_OK, 0),
#endif
#ifdef SYS_readlink
    PROBE(readlink, "", RT, P_ADDR, P_ADDR, 4096),
#else
    PROBE(readlinkat, "AT_FDCWD", RT, P_CWD, P_ADDR, P_ADDR, 4096),
#endif
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
#ifdef SYS_riscv_flush_icache
    /* riscv64: instruction fetch made coherent after patching */
    PROBE(riscv_flush_icache, "", PATCH, P_ADDR, P_ADDR, 0),
#endif

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
#ifdef SYS_poll
    PROBE(poll, "", CTL, P_ADDR, 1, 1000),
#else
    PROBE(ppoll, "", CTL, P_ADDR, 1, P_ADDR, 0, 8),
#endif
    PROBE(shutdown, "SHUT_RDWR", CTL, P_FD, SHUT_RDWR),
    PROBE(fcntl, "F_DUPFD_CLOEXEC", CTL, P_FD, F_DUPFD_CLOEXEC, 900),
#ifdef SYS_mkdir
    PROBE(mkdir, "0700", CTL, P_ADDR, 0700),
#else
    PROBE(mkdirat, "AT_FDCWD, 0700", CTL, P_CWD, P_ADDR, 0700),
#endif
#ifdef SYS_chmod
    PROBE(chmod, "0600", CTL, P_ADDR, 0600),
#else
    PROBE(fchmodat, "AT_FDCWD, 0600", CTL, P_CWD, P_ADDR, 0600),
#endif
#ifdef SYS_unlink
    PROBE(unlink, "", CTL, P_ADDR),
#else
    PROBE(unlinkat, "AT_FDCWD", CTL, P_CWD, P_ADDR, 0),
#endif

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
#ifdef SYS_link
    PROBE(link, "", REC, P_ADDR, P_ADDR),
#else
    PROBE(linkat, "AT_FDCWD", REC, P_CWD, P_ADDR, P_CWD, P_ADDR, 0),
#endif
    PROBE(getrandom, "0", REC, P_ADDR, 16, 0),
    PROBE(getrandom, "GRND_NONBLOCK", "memory allocation (malloc)", P_ADDR, 8, GRND_NONBLOCK),
    PROBE(exit_group, "", "ending the process after a trap it cannot handle (_exit)", 0),
};

const struct seccomp_probe *seccomp_runtime_calls(size_t *n)
{
	*n = sizeof(runtime_calls) / sizeof(runtime_calls[0]);
	return runtime_calls;
}
