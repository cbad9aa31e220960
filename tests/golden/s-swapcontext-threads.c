// SPDX-License-Identifier: MIT
/*
 * s-swapcontext-threads: one thread runs a generator by swapcontext while
 * another traces plain calls; they take turns (semaphores: each event
 * happens while the other thread waits), so the merged trace has one
 * order. Each thread's contexts are its own.
 */
#include <pthread.h>
#include <semaphore.h>
#include <ucontext.h>
#include "golden.h"

GOLDEN_SINK;
static ucontext_t main_uc, gen_uc;
static char gen_stack[256 * 1024] __attribute__((aligned(16)));
static sem_t turn_a, turn_b, a_started, b_finish;

NOINLINE void yield(void)
{
	swapcontext(&gen_uc, &main_uc);
	sink++;
}
NOINLINE void generator(void)
{
	for (int i = 0; i < 2; i++)
		yield();
	sink++;
}
NOINLINE void next(void)
{
	swapcontext(&main_uc, &gen_uc);
	sink++;
}
NOINLINE void plain(int n)
{
	sink += n;
}
NOINLINE void *gen_thread(void *arg)
{
	(void)arg;
	getcontext(&gen_uc);
	gen_uc.uc_stack.ss_sp = gen_stack;
	gen_uc.uc_stack.ss_size = sizeof(gen_stack);
	gen_uc.uc_link = &main_uc;
	makecontext(&gen_uc, generator, 0);
	sem_post(&a_started);
	for (int i = 0; i < 3; i++) {
		sem_wait(&turn_a);
		next();
		sem_post(&turn_b);
	}
	sem_wait(&turn_a);
	sink++;
	return 0;
}
NOINLINE void *plain_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++) {
		sem_post(&turn_a);
		sem_wait(&turn_b);
		plain(i);
	}
	sem_post(&turn_a);
	sem_wait(&b_finish);
	sink++;
	return 0;
}

int main(void)
{
	pthread_t a, b;

	sem_init(&turn_a, 0, 0);
	sem_init(&turn_b, 0, 0);
	sem_init(&a_started, 0, 0);
	sem_init(&b_finish, 0, 0);
	pthread_create(&a, 0, gen_thread, 0);
	sem_wait(&a_started);
	pthread_create(&b, 0, plain_thread, 0);
	pthread_join(a, 0);
	sem_post(&b_finish);
	pthread_join(b, 0);
	plain(9);
	return 0;
}
