// SPDX-License-Identifier: MIT
/*
 * tp-rec.c - tracepoints recorded by `dynftrace record -e` (tests/sh/tp-record.sh).
 * Hits tp_msg (int, string, long, pointer) from main, a second thread and a
 * signal handler, once with a NULL string and once with a string too long for
 * one event (counted lost); tp_other is never selected; LIB (argv[1]) is
 * dlopen'd and hits its own tracepoint tp_lib.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <dynftrace/tracepoint.h>

DYNFTRACE_TRACEPOINT_EVENT(tp_msg, TP_PROTO(int fd, const char *buf, long len, void *ptr),
			   TP_ARGS(fd, buf, len, ptr),
			   TP_FIELDS(tp_field(int, fd) tp_field_string(buf) tp_field(long, len)
					 tp_field_ptr(void *, ptr)))
DYNFTRACE_TRACEPOINT_EVENT(tp_other, TP_PROTO(unsigned char c, short s), TP_ARGS(c, s),
			   TP_FIELDS(tp_field(unsigned char, c) tp_field(short, s)))

__attribute__((noinline)) void work(int i, const char *s)
{
	trace_tp_msg(i, s, -(long)i * 1000000000L, (void *)0x1234);
	trace_tp_other((unsigned char)i, (short)-i);
}

static void on_usr1(int sig)
{
	trace_tp_msg(sig, "in handler", 0, NULL);
}

static void *thread_main(void *arg)
{
	work(7, "thread");
	return arg;
}

int main(int argc, char **argv)
{
	static char big[400];
	pthread_t t;

	work(1, "hello");
	work(2, NULL);
	memset(big, 'x', sizeof(big) - 1);
	work(3, big); /* > RING_PAYLOAD_MAX: one lost event */
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	pthread_create(&t, NULL, thread_main, NULL);
	pthread_join(t, NULL);
	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW);
		void (*hit)(unsigned long) =
		    h ? (void (*)(unsigned long))dlsym(h, "lib_hit") : NULL;
		if (!hit) {
			fprintf(stderr, "tp-rec: %s\n", dlerror());
			return 1;
		}
		hit(42);
		dlclose(h);
	}
	work(4, "bye");
	return 0;
}
