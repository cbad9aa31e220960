/* SPDX-License-Identifier: MIT */
/*
 * hackbench_tp - the static call experiment of the kernel's tracepoints, in user space: a
 * hackbench-like workload (groups of sender and receiver threads passing fixed-size messages over
 * pipes) with one tracepoint in the hot message path and one callback doing a small fixed amount of
 * work.
 *
 * One source, one variant per build (bench/static_call.sh builds them all):
 *   -DHB_NONE                     no tracepoint at all
 *   -DHB_DISABLED                 tracepoint compiled in, nothing registered
 *   -DHB_ITER -DDYNFTRACE_TP_ITERATOR
 *                                 one callback, called by the iterator through
 *                                 a function pointer (add -mindirect-branch=thunk
 *                                 -mfunction-return=thunk for retpolines)
 *   -DDYNFTRACE_STATIC_CALL_NO_INLINE
 *                                 one callback through the out-of-line static
 *                                 call (trampoline with a direct jmp)
 *   (nothing)                     one callback through the inline static call
 *
 * Usage: hackbench_tp [GROUPS [LOOPS]]       prints "Time: S" like hackbench
 *        hackbench_tp --micro N              microbenchmark loops for callgrind:
 *          runs N direct calls of the callback (micro_direct), N static
 *          calls of it (micro_static_call) and N tracepoint hits
 *          (micro_trace); count each function with --toggle-collect.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dynftrace/tracepoint.h>

#define NOINLINE      __attribute__((noinline))
#define FDS_PER_GROUP 20 /* senders = receivers = 20 per group, as hackbench */
#define MSG_SIZE      100

#ifndef HB_NONE
DYNFTRACE_TRACEPOINT(hb_msg, TP_PROTO(int group, int sender, long len), TP_ARGS(group, sender, len))
#endif

/* The callback: a small fixed amount of work on per-thread data. */
static __thread unsigned long tl_msgs, tl_hash;
NOINLINE void hb_callback(void *data, int group, int sender, long len)
{
	(void)data;
	tl_msgs++;
	tl_hash =
	    (tl_hash ^ (unsigned long)(group * 31 + sender)) * 0x100000001b3UL + (unsigned long)len;
}

/* For the microbenchmark: the same callback behind a static call. */
DEFINE_STATIC_CALL(hb_direct, hb_callback);

static inline void hot_trace(int group, int sender, long len)
{
#ifndef HB_NONE
	trace_hb_msg(group, sender, len);
#else
	(void)group;
	(void)sender;
	(void)len;
#endif
}

struct sender_arg {
	int group, id, loops;
	int *wfds; /* FDS_PER_GROUP receivers' pipes */
};
struct receiver_arg {
	int rfd, msgs;
};

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start_cond = PTHREAD_COND_INITIALIZER;
static int started, go;

static void wait_start(void)
{
	pthread_mutex_lock(&start_lock);
	started++;
	pthread_cond_broadcast(&start_cond);
	while (!go)
		pthread_cond_wait(&start_cond, &start_lock);
	pthread_mutex_unlock(&start_lock);
}

static void fatal(const char *what)
{
	perror(what);
	exit(1);
}

NOINLINE static void *sender(void *p)
{
	struct sender_arg *a = p;
	char msg[MSG_SIZE];
	memset(msg, a->id, sizeof(msg));
	wait_start();
	for (int i = 0; i < a->loops; i++) {
		for (int j = 0; j < FDS_PER_GROUP; j++) {
			hot_trace(a->group, a->id, MSG_SIZE);
			ssize_t done = 0;
			while (done < MSG_SIZE) {
				ssize_t r = write(a->wfds[j], msg + done, MSG_SIZE - (size_t)done);
				if (r <= 0)
					fatal("write");
				done += r;
			}
		}
	}
	return NULL;
}

NOINLINE static void *receiver(void *p)
{
	struct receiver_arg *a = p;
	char buf[MSG_SIZE];
	wait_start();
	for (int i = 0; i < a->msgs; i++) {
		ssize_t done = 0;
		while (done < MSG_SIZE) {
			ssize_t r = read(a->rfd, buf + done, MSG_SIZE - (size_t)done);
			if (r <= 0)
				fatal("read");
			done += r;
		}
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int hackbench(int groups, int loops)
{
	int nthreads = groups * FDS_PER_GROUP * 2;
	pthread_t *th = calloc((size_t)nthreads, sizeof(*th));
	struct sender_arg *sa = calloc((size_t)(groups * FDS_PER_GROUP), sizeof(*sa));
	struct receiver_arg *ra = calloc((size_t)(groups * FDS_PER_GROUP), sizeof(*ra));
	int *wfds = calloc((size_t)(groups * FDS_PER_GROUP), sizeof(int));
	pthread_attr_t attr;
	int t = 0;
	if (!th || !sa || !ra || !wfds)
		fatal("calloc");
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int g = 0; g < groups; g++) {
		for (int r = 0; r < FDS_PER_GROUP; r++) {
			int fds[2];
			if (pipe(fds))
				fatal("pipe");
			struct receiver_arg *a = &ra[g * FDS_PER_GROUP + r];
			a->rfd = fds[0];
			a->msgs = FDS_PER_GROUP * loops;
			wfds[g * FDS_PER_GROUP + r] = fds[1];
			if (pthread_create(&th[t++], &attr, receiver, a))
				fatal("pthread_create");
		}
		for (int s = 0; s < FDS_PER_GROUP; s++) {
			struct sender_arg *a = &sa[g * FDS_PER_GROUP + s];
			a->group = g;
			a->id = s;
			a->loops = loops;
			a->wfds = &wfds[g * FDS_PER_GROUP];
			if (pthread_create(&th[t++], &attr, sender, a))
				fatal("pthread_create");
		}
	}
	pthread_mutex_lock(&start_lock);
	while (started < nthreads)
		pthread_cond_wait(&start_cond, &start_lock);
	double t0 = now();
	go = 1;
	pthread_cond_broadcast(&start_cond);
	pthread_mutex_unlock(&start_lock);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("Time: %.3f\n", now() - t0);
	return 0;
}

/* ---- microbenchmark (callgrind counts these functions) ---- */
NOINLINE void micro_direct(long n)
{
	for (long i = 0; i < n; i++)
		hb_callback(NULL, 1, (int)i, MSG_SIZE);
}

NOINLINE void micro_static_call(long n)
{
	for (long i = 0; i < n; i++)
		static_call(hb_direct)(NULL, 1, (int)i, MSG_SIZE);
}

NOINLINE void micro_trace(long n)
{
	for (long i = 0; i < n; i++)
		hot_trace(1, (int)i, MSG_SIZE);
}

int main(int argc, char **argv)
{
#if !defined(HB_NONE) && !defined(HB_DISABLED)
	if (register_trace_hb_msg(hb_callback, NULL)) {
		fprintf(stderr, "register_trace_hb_msg failed\n");
		return 1;
	}
#endif
	if (argc > 2 && !strcmp(argv[1], "--micro")) {
		long n = atol(argv[2]);
		micro_direct(n);
		micro_static_call(n);
		micro_trace(n);
		printf("micro: %ld iterations, %lu callbacks\n", n, tl_msgs);
		return 0;
	}
	int groups = argc > 1 ? atoi(argv[1]) : 10;
	int loops = argc > 2 ? atoi(argv[2]) : 100;
	return hackbench(groups, loops);
}
