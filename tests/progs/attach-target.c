/*
 * attach-target: a service that was not started under dynftrace (built
 * with entry sites, not linked with the runtime), for tests/sh/attach.sh.
 * Workers compute a result whose exact value is known; other threads wait
 * in read, nanosleep, a futex, epoll_wait, or run with every signal
 * blocked. Anything wrong is printed as a line starting with "BAD"; "ready"
 * once everything runs. Options: --seccomp (an allow-all filter),
 * --seccomp=NAME (a filter of install_filter below, for every thread),
 * --seccomp-thread=NAME (for one thread only: the sleeper), --nondumpable,
 * --fork (a thread forks and execs every 100 ms).
 * SIGUSR2 makes the main thread print "heap N": the bytes malloc has handed
 * out and not got back (every arena, mmapped blocks included), so a test
 * can tell a leak from where malloc happens to keep its heap's top.
 */
#include <errno.h>
#include <malloc.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
static volatile unsigned long rounds;
static volatile unsigned long zero; /* read every round: no call can be hoisted */

NOINLINE unsigned long at_leaf(unsigned long x)
{
	return x * 3 + 1;
}

NOINLINE unsigned long at_mid(unsigned long x)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < 10; i++)
		s += at_leaf(x + i);
	return s;
}

NOINLINE unsigned long at_round(unsigned long base)
{
	unsigned long s = 0;
	for (unsigned long x = base; x < base + 1000; x++)
		s += at_mid(x);
	return s;
}

static void bad(const char *what)
{
	printf("BAD %s\n", what);
	fflush(stdout);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		/* sum over x < 1000 of 30x + 145 */
		if (at_round(zero) != 15130000ul)
			bad("wrong result");
		__atomic_add_fetch(&rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *blocker(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		if (at_round(zero) != 15130000ul)
			bad("wrong result with all signals blocked");
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

#define LD_NR	  BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define LD_ARG(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define RET(v)	  BPF_STMT(BPF_RET | BPF_K, (v))
/* Anything but x86-64 system calls is killed (as real filters do). */
#define ARCH_X86_64                                                                                \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),                   \
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),                          \
	    RET(SECCOMP_RET_KILL_PROCESS)

/*
 * The filters of tests/sh/attach-seccomp.sh:
 *   allow            every call allowed;
 *   kill-membarrier  membarrier kills the process;
 *   kill-socket      socket(AF_UNIX, ...) kills the process;
 *   errno-membarrier membarrier fails with EPERM;
 *   errno-socket     socket fails with EACCES;
 *   mdwe             mmap, mprotect and pkey_mprotect asking for memory both
 *                    writable and executable fail with EPERM (systemd's
 *                    MemoryDenyWriteExecute= refuses those, and more);
 *   mdwe-exec        as systemd's: also mprotect and pkey_mprotect with
 *                    PROT_EXEC at all.
 * 0, or -1 with errno.
 */
static int install_filter(const char *name)
{
	struct sock_filter allow[] = {RET(SECCOMP_RET_ALLOW)};
	struct sock_filter kill_membarrier[] = {
	    ARCH_X86_64,
	    LD_NR,
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
	    RET(SECCOMP_RET_KILL_PROCESS),
	    RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter errno_membarrier[] = {
	    ARCH_X86_64,
	    LD_NR,
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
	    RET(SECCOMP_RET_ERRNO | EPERM),
	    RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter errno_socket[] = {
	    ARCH_X86_64,
	    LD_NR,
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 1),
	    RET(SECCOMP_RET_ERRNO | EACCES),
	    RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter kill_socket[] = {
	    ARCH_X86_64,
	    LD_NR,
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 3),
	    LD_ARG(0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1),
	    RET(SECCOMP_RET_KILL_PROCESS),
	    RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter mdwe[] = {
	    ARCH_X86_64,
	    LD_NR,
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 2, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mprotect, 1, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pkey_mprotect, 0, 4),
	    LD_ARG(2),
	    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1),
	    RET(SECCOMP_RET_ERRNO | EPERM),
	    RET(SECCOMP_RET_ALLOW),
	};
	struct sock_filter mdwe_exec[] = {
	    ARCH_X86_64,
	    LD_NR,
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 3),
	    LD_ARG(2),
	    BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 4, 5),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mprotect, 1, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pkey_mprotect, 0, 3),
	    LD_ARG(2),
	    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),
	    RET(SECCOMP_RET_ERRNO | EPERM),
	    RET(SECCOMP_RET_ALLOW),
	};
	struct {
		const char *name;
		struct sock_filter *f;
		unsigned short len;
	} tab[] = {
	    {"allow", allow, sizeof(allow) / sizeof(allow[0])},
	    {"kill-membarrier", kill_membarrier, sizeof(kill_membarrier) / sizeof(allow[0])},
	    {"errno-membarrier", errno_membarrier, sizeof(errno_membarrier) / sizeof(allow[0])},
	    {"errno-socket", errno_socket, sizeof(errno_socket) / sizeof(allow[0])},
	    {"kill-socket", kill_socket, sizeof(kill_socket) / sizeof(allow[0])},
	    {"mdwe", mdwe, sizeof(mdwe) / sizeof(allow[0])},
	    {"mdwe-exec", mdwe_exec, sizeof(mdwe_exec) / sizeof(allow[0])},
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(name, tab[i].name)) {
			struct sock_fprog prog = {tab[i].len, tab[i].f};
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
				return -1;
			return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
		}
	errno = EINVAL;
	return -1;
}

static const char *thread_filter; /* --seccomp-thread=NAME: the sleeper's */
static volatile int sleeper_ready;

static void *sleeper(void *arg)
{
	(void)arg;
	if (thread_filter && install_filter(thread_filter))
		bad("seccomp filter of the sleeper");
	__atomic_store_n(&sleeper_ready, 1, __ATOMIC_RELEASE);
	for (;;) {
		struct timespec ts = {0, 20000000};
		if (nanosleep(&ts, NULL))
			bad(errno == EINTR ? "EINTR in nanosleep" : "nanosleep failed");
	}
	return NULL;
}

static int pfd[2];
static void *reader(void *arg)
{
	(void)arg;
	char c;
	for (;;) {
		ssize_t r = read(pfd[0], &c, 1);
		if (r < 0)
			bad(errno == EINTR ? "EINTR in read" : "read failed");
	}
	return NULL;
}

static int futex_word;
static void *futexer(void *arg)
{
	(void)arg;
	for (;;) {
		long r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		if (r < 0 && errno != EAGAIN)
			bad(errno == EINTR ? "EINTR in futex" : "futex failed");
	}
	return NULL;
}

static void *epoller(void *arg)
{
	(void)arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};
	int q[2];
	if (pipe(q) || epoll_ctl(ep, EPOLL_CTL_ADD, q[0], &ev))
		bad("epoll setup");
	for (;;) {
		struct epoll_event out;
		if (epoll_wait(ep, &out, 1, -1) < 0)
			bad(errno == EINTR ? "EINTR in epoll_wait" : "epoll_wait failed");
	}
	return NULL;
}

static void *forker(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
		pid_t p = fork();
		if (p == 0) {
			if (at_round(zero) != 15130000ul)
				_exit(3);
			execl("/bin/true", "true", (char *)NULL);
			_exit(4);
		}
		int st;
		if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
			bad("forked child failed");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int do_fork = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seccomp")) {
			if (install_filter("allow"))
				bad("seccomp");
		} else if (!strncmp(argv[i], "--seccomp=", 10)) {
			if (install_filter(argv[i] + 10))
				bad("seccomp filter");
		} else if (!strncmp(argv[i], "--seccomp-thread=", 17)) {
			thread_filter = argv[i] + 17;
		} else if (!strcmp(argv[i], "--nondumpable")) {
			prctl(PR_SET_DUMPABLE, 0);
		} else if (!strcmp(argv[i], "--fork")) {
			do_fork = 1;
		} else if (!strcmp(argv[i], "--title")) {
			/* A title over the arguments, as redis and nginx set
			 * theirs: the rest of the argument area NULs. */
			char *end = argv[argc - 1] + strlen(argv[argc - 1]);
			memset(argv[0], 0, (size_t)(end - argv[0]));
			snprintf(argv[0], (size_t)(end - argv[0]), "target: titled");
			break;
		}
	}
	if (pipe(pfd))
		return 1;
	/* Blocked in every thread (they inherit it), taken by sigwait below. */
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	void *(*fns[])(void *) = {worker, worker, blocker, sleeper, reader, futexer, epoller};
	pthread_t t;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (pthread_create(&t, NULL, fns[i], NULL))
			return 1;
	if (do_fork && pthread_create(&t, NULL, forker, NULL))
		return 1;
	while (__atomic_load_n(&rounds, __ATOMIC_RELAXED) < 4 ||
	       !__atomic_load_n(&sleeper_ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int sig;
		if (sigwait(&usr2, &sig))
			continue;
		struct mallinfo2 mi = mallinfo2();
		printf("heap %zu\n", mi.uordblks + mi.hblkhd);
		fflush(stdout);
	}
}
