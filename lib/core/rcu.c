/* SPDX-License-Identifier: MIT */
/*
 * rcu.c - grace periods for the runtime's lock-free readers (liburcu's
 * "memb" flavour, written for this runtime).
 *
 * Readers are traced threads inside dispatch (callbacks included). A reader
 * stores the global counter into its TLS slot on entry and 0 on exit; no
 * fence on the read side. rcu_synchronize():
 *
 *   1. advance the counter (release);
 *   2. membarrier(PRIVATE_EXPEDITED): every running thread executes a full
 *      barrier, so each reader's slot store is visible or its later reads see
 *      the writer's updates (those made before step 1);
 *   3. wait for every registered thread whose slot is non-zero and older
 *      than the new counter, i.e. that entered before step 1.
 *
 * Threads register on first entry (rcu_register_self) and leave the registry
 * from a pthread key destructor. The registry is a list under reg_lock.
 *
 * | field       | protected by                                         |
 * |-------------|------------------------------------------------------|
 * | rcu_gp_ctr  | writers serialised by reg_lock; readers load acquire  |
 * | reg_head    | reg_lock                                             |
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "hooks.h"

__thread struct dft_thread dft_self __attribute__((tls_model("initial-exec")));

HIDDEN unsigned long rcu_gp_ctr = 2;	/* even, never 0 */
HIDDEN unsigned long rcu_grace_periods; /* written under reg_lock, read by stats (atomic) */
static struct dft_thread *reg_head;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t reg_key;
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;

static void reg_remove(struct dft_thread *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else if (reg_head == t)
		reg_head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->next = t->prev = NULL;
}

static void thread_exit(void *arg)
{
	struct dft_thread *t = arg;
	t->recursion++; /* no callbacks from here on */
	void (*exit_hook)(void) = CORE_HOOK(thread_exit);
	if (exit_hook)
		exit_hook();
	pthread_mutex_lock(&reg_lock);
	reg_remove(t);
	t->state = THREAD_EXITING; /* never registers again: its TLS dies soon */
	pthread_mutex_unlock(&reg_lock);
}

static void reg_key_init(void)
{
	pthread_key_create(&reg_key, thread_exit);
}

/* Called by the owner thread with its recursion guard set. */
void rcu_register_self(void)
{
	struct dft_thread *t = &dft_self;
	if (t->state != THREAD_NEW)
		return;
	pthread_once(&reg_once, reg_key_init);
	pthread_mutex_lock(&reg_lock);
	t->tid = (pid_t)syscall(SYS_gettid);
	t->prev = NULL;
	t->next = reg_head;
	if (reg_head)
		reg_head->prev = t;
	reg_head = t;
	t->state = THREAD_REGISTERED;
	pthread_mutex_unlock(&reg_lock);
	pthread_setspecific(reg_key, t);
}

int rcu_synchronize(void)
{
	struct dft_thread *self = &dft_self;
	if (self->rcu_nest)
		return -EDEADLK; /* a reader waiting for itself */
	pthread_mutex_lock(&reg_lock);
	unsigned long target = __atomic_add_fetch(&rcu_gp_ctr, 2, __ATOMIC_SEQ_CST);
	arch_sync_memory();
	for (struct dft_thread *t = reg_head; t; t = t->next) {
		for (;;) {
			unsigned long c = __atomic_load_n(&t->rcu_ctr, __ATOMIC_ACQUIRE);
			if (c == 0 || c >= target)
				break;
			sched_yield();
		}
	}
	__atomic_store_n(&rcu_grace_periods, rcu_grace_periods + 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

/* fork: only the calling thread survives in the child. */
void rcu_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	reg_lock = fresh;
	struct dft_thread *self = &dft_self;
	reg_head = NULL;
	if (self->state == THREAD_REGISTERED) {
		self->next = self->prev = NULL;
		reg_head = self;
		self->tid = (pid_t)syscall(SYS_gettid);
	}
}

HIDDEN void rcu_atfork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}

HIDDEN void rcu_atfork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

int rcu_for_each_thread_stopped(int (*fn)(struct dft_thread *t, void *ctx), void *ctx)
{
	if (pthread_mutex_trylock(&reg_lock))
		return -EAGAIN;
	int err = 0;
	for (struct dft_thread *t = reg_head; t && !err; t = t->next)
		err = fn(t, ctx);
	pthread_mutex_unlock(&reg_lock);
	return err;
}

void rcu_detach(void)
{
	/* The key's destructor is our code: a thread exiting after the
	 * unload must not call it. Threads keep their dft_self (static TLS
	 * the loader reclaims); nothing reads the registry any more. */
	pthread_once(&reg_once, reg_key_init);
	pthread_key_delete(reg_key);
	reg_head = NULL;
}
