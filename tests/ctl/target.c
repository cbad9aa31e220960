/* SPDX-License-Identifier: MIT */
/*
 * target.c - the program the control tests (the .tc scripts in tests/ctl) steer.
 *
 * Worker threads call a small tree of traced functions forever and check
 * every result against the same formula computed without a call, so a
 * tracer that disturbed the program would be caught ("WRONG" and exit 3).
 * Commands, one per line on stdin (answers on stdout, one line each):
 *   fork          fork; the child starts its own workers: "child PID",
 *                 the parent says "forked PID"
 *   dlopen PATH   load a library with dl_one(), call it from the workers:
 *                 "opened"
 *   dlclose       stop calling it, unload it: "closed"
 *   exec          exec this program again (same pid): "ready PID" again
 *   closefds      close every descriptor above 2, as daemons do: "closed fds"
 *   tp N          hit the tracepoint ctl_tp N times (n = 0..N-1, s = "live",
 *                 p = 0x10): "tp N"
 *   calls N       call work_a N times from the main thread (with -t 0, the
 *                 only traced calls: 4 functions each): "calls N"
 *   sort N        qsort N numbers with the traced comparator cmp_ul, called
 *                 by the C library (a caller in an object without sites):
 *                 "sorted N"
 *   exit          exit() normally (end of input too)
 * Start-up prints "ready PID". Options: -t N worker threads (default 2).
 *
 *   work_a(x) = work_b(x + 1) + leaf_c(x)     every iteration
 *   work_b(x) = leaf_c(x) ^ (x >> 3)
 *   slow_d()  sleeps 2 ms                     every 64th iteration
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dynftrace/tracepoint.h>

DYNFTRACE_TRACEPOINT_EVENT(ctl_tp, TP_PROTO(int n, const char *s, void *p), TP_ARGS(n, s, p),
			   TP_FIELDS(tp_field(int, n) tp_field_string(s) tp_field_ptr(void *, p)))

#define NOINLINE  __attribute__((noinline))
#define LEAF(x)	  ((unsigned long)(x)*2654435761ul)
#define WORK_B(x) (LEAF(x) ^ ((unsigned long)(x) >> 3))
#define WORK_A(x) (WORK_B((x) + 1) + LEAF(x))

static unsigned long sink;
static pthread_mutex_t dl_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long (*dl_fn)(unsigned long); /* dl_lock */
static void *dl_handle;			      /* main thread */
static char **saved_argv;

NOINLINE unsigned long leaf_c(unsigned long x)
{
	__atomic_fetch_add(&sink, 1, __ATOMIC_RELAXED);
	return LEAF(x);
}

NOINLINE int cmp_ul(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
	return x < y ? -1 : x > y;
}

NOINLINE unsigned long work_b(unsigned long x)
{
	return leaf_c(x) ^ (x >> 3);
}

NOINLINE unsigned long work_a(unsigned long x)
{
	return work_b(x + 1) + leaf_c(x);
}

NOINLINE void slow_d(void)
{
	struct timespec ts = {0, 2000000};
	nanosleep(&ts, NULL);
}

NOINLINE static void call_dl(unsigned long i)
{
	pthread_mutex_lock(&dl_lock);
	if (dl_fn && dl_fn(i) != i * 3 + 1) {
		printf("WRONG dl_one(%lu)\n", i);
		fflush(stdout);
		exit(3);
	}
	pthread_mutex_unlock(&dl_lock);
}

static void *worker(void *arg)
{
	(void)arg;
	for (unsigned long i = 0;; i++) {
		unsigned long r = work_a(i);
		if (r != WORK_A(i)) {
			printf("WRONG work_a(%lu) = %lu, expected %lu\n", i, r, WORK_A(i));
			fflush(stdout);
			exit(3);
		}
		if (i % 64 == 0)
			slow_d();
		call_dl(i);
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void start_workers(int n)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL)) {
			printf("cannot start a worker\n");
			exit(2);
		}
		pthread_detach(t);
	}
}

int main(int argc, char **argv)
{
	int nthreads = 2;
	saved_argv = argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "-t"))
		nthreads = atoi(argv[2]);
	start_workers(nthreads);
	printf("ready %d\n", (int)getpid());
	char line[4096];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (!strcmp(line, "fork")) {
			pid_t p = fork();
			if (p == 0) {
				start_workers(nthreads);
				printf("child %d\n", (int)getpid());
				for (;;)
					pause();
			}
			printf("forked %d\n", (int)p);
		} else if (!strncmp(line, "dlopen ", 7)) {
			dl_handle = dlopen(line + 7, RTLD_NOW);
			void *f = dl_handle ? dlsym(dl_handle, "dl_one") : NULL;
			if (!f) {
				printf("dlopen failed: %s\n", dlerror());
				continue;
			}
			pthread_mutex_lock(&dl_lock);
			dl_fn = (unsigned long (*)(unsigned long))f;
			pthread_mutex_unlock(&dl_lock);
			printf("opened\n");
		} else if (!strcmp(line, "dlclose")) {
			pthread_mutex_lock(&dl_lock);
			dl_fn = NULL;
			pthread_mutex_unlock(&dl_lock);
			if (dl_handle)
				dlclose(dl_handle);
			dl_handle = NULL;
			printf("closed\n");
		} else if (!strcmp(line, "exec")) {
			execv("/proc/self/exe", saved_argv);
			printf("exec failed\n");
		} else if (!strcmp(line, "closefds")) {
			for (int fd = 3; fd < 65536; fd++)
				close(fd);
			printf("closed fds\n");
		} else if (!strncmp(line, "tp ", 3)) {
			int n = atoi(line + 3);
			for (int i = 0; i < n; i++)
				trace_ctl_tp(i, "live", (void *)0x10);
			printf("tp %d\n", n);
		} else if (!strncmp(line, "calls ", 6)) {
			long n = atol(line + 6);
			for (long i = 0; i < n; i++)
				if (work_a((unsigned long)i) != WORK_A(i)) {
					printf("WRONG work_a(%ld)\n", i);
					exit(3);
				}
			printf("calls %ld\n", n);
		} else if (!strncmp(line, "sort ", 5)) {
			long n = atol(line + 5);
			unsigned long *v = n > 0 ? malloc((size_t)n * sizeof(*v)) : NULL;
			for (long i = 0; v && i < n; i++)
				v[i] = LEAF(i);
			if (v)
				qsort(v, (size_t)n, sizeof(*v), cmp_ul);
			for (long i = 1; v && i < n; i++)
				if (v[i - 1] > v[i]) {
					printf("WRONG sort at %ld\n", i);
					exit(3);
				}
			free(v);
			printf("sorted %ld\n", n);
		} else if (!strcmp(line, "exit")) {
			break;
		} else {
			printf("unknown command '%s'\n", line);
		}
	}
	exit(0);
}
