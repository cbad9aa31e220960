// SPDX-License-Identifier: MIT
/*
 * coro-stress.c - coroutines for tests/sh/contexts.sh: THREADS threads each
 * run COROS coroutines (makecontext, their own malloc'd stacks) round-robin
 * for ROUNDS rounds by swapcontext; every coroutine step() switches away
 * inside a traced function and returns after it is resumed; half of the
 * coroutines switch by setjmp/longjmp instead of swapcontext once started. Each
 * coroutine then returns through uc_link. Prints "steps N".
 *
 *   coro-stress [THREADS [COROS [ROUNDS]]]
 *
 * With ROUNDS < 0 it runs until killed and says "ready" after a first
 * round (a target to attach to).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define STACK (128 * 1024)

struct sched {
	ucontext_t main_uc;
	jmp_buf main_jb;
	int ncoros, rounds;
	struct coro *coros;
	long steps;
};

struct coro {
	struct sched *s;
	ucontext_t uc;
	jmp_buf jb;
	int by_jump, jumped, done; /* jumped: it yielded by longjmp */
};

static __attribute__((noinline)) void yield_swap(struct coro *c)
{
	swapcontext(&c->uc, &c->s->main_uc);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void yield_jump(struct coro *c)
{
	if (!setjmp(c->jb))
		longjmp(c->s->main_jb, 1);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void step(struct coro *c)
{
	c->s->steps++;
	c->jumped = c->by_jump;
	if (c->jumped)
		yield_jump(c);
	else
		yield_swap(c);
}

static __thread struct coro *current;
static int started; /* threads past their first round (ROUNDS < 0) */

static void coro_main(void)
{
	struct coro *c = current;
	for (int i = 0; c->s->rounds < 0 || i < c->s->rounds; i++)
		step(c);
	c->done = 1;
	if (c->by_jump) /* main_uc is stale: it switched to main by jumps */
		longjmp(c->s->main_jb, 1);
}

static __attribute__((noinline)) void resume(struct coro *c)
{
	current = c;
	if (!setjmp(c->s->main_jb)) {
		if (c->jumped)
			longjmp(c->jb, 1);
		swapcontext(&c->s->main_uc, &c->uc);
	}
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void *run(void *arg)
{
	struct sched *s = arg;
	s->coros = calloc((size_t)s->ncoros, sizeof(*s->coros));
	for (int i = 0; i < s->ncoros; i++) {
		struct coro *c = &s->coros[i];
		c->s = s;
		c->by_jump = i & 1;
		getcontext(&c->uc);
		c->uc.uc_stack.ss_sp = malloc(STACK);
		c->uc.uc_stack.ss_size = STACK;
		c->uc.uc_link = &s->main_uc;
		makecontext(&c->uc, coro_main, 0);
	}
	/* ROUNDS steps each, then one more resume to let it return; for
	 * ever with ROUNDS < 0 */
	for (int r = 0; s->rounds < 0 || r <= s->rounds; r++) {
		for (int i = 0; i < s->ncoros; i++)
			if (!s->coros[i].done)
				resume(&s->coros[i]);
		if (r == 0 && s->rounds < 0 &&
		    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST) == 1) {
			printf("ready\n");
			fflush(stdout);
		}
	}
	for (int i = 0; i < s->ncoros; i++)
		free(s->coros[i].uc.uc_stack.ss_sp);
	free(s->coros);
	return NULL;
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 2;
	int ncoros = argc > 2 ? atoi(argv[2]) : 8;
	int rounds = argc > 3 ? atoi(argv[3]) : 100;
	pthread_t *t = calloc((size_t)nthreads, sizeof(*t));
	struct sched *s = calloc((size_t)nthreads, sizeof(*s));
	long steps = 0;

	for (int i = 0; i < nthreads; i++) {
		s[i].ncoros = ncoros;
		s[i].rounds = rounds;
		pthread_create(&t[i], NULL, run, &s[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		steps += s[i].steps;
	}
	printf("steps %ld\n", steps);
	free(s);
	free(t);
	return 0;
}
