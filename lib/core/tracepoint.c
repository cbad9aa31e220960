/* SPDX-License-Identifier: MIT */
/*
 * tracepoint.c - tracepoints: the runtime side of include/dynftrace/tracepoint.h.
 *
 * A tracepoint is a static key (is anything registered?), a static call
 * (whom to call) and an RCU-protected array of {callback, data}. The reader
 * (trace_<name>, inlined in the traced object) is:
 *
 *	if (static_branch_unlikely(key)) {          NOP while 0 callbacks
 *		rcu_read_lock(); f = funcs (acquire);
 *		if (f) static_call(call)(f->f[0].data, args);
 *		rcu_read_unlock();
 *	}
 *
 * Writers serialise on tp_lock and keep this invariant: while the static
 * call targets a callback C directly, every array a reader may hold has
 * f[0] == C with C's data. The transitions:
 *
 *   0 -> 1   publish [A]; call := A; key 0 -> 1
 *   1 -> 2   publish [A,B]; call := iterator        (f[0] is still A)
 *   n -> n+1 publish the longer array
 *   n -> n-1 publish the shorter array; grace period; if 1 is left:
 *            call := that callback (no reader holds a longer array now)
 *   1 -> 0   key 1 -> 0; publish NULL; grace period; call := iterator
 *
 * and the old array is freed after the grace period, so when unregister
 * returns, the removed callback is not running anywhere. Grace periods are
 * the runtime's RCU (lib/core/rcu.c: per-thread reader counters plus
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)); its read side is exported
 * as dynftrace_rcu_read_lock/unlock for the inlined readers.
 *
 * Lock order: tp_lock -> patch_lock (taken inside the static key and static
 * call functions). No grace period is ever waited for under patch_lock.
 * tptab_lock is a leaf: dlclose runs destructors under patch_lock.
 *
 * | data                  | protected by                          |
 * |-----------------------|---------------------------------------|
 * | tp->funcs             | tp_lock (writers); RCU (readers)      |
 * | tp_callbacks          | tp_lock                               |
 * | tptables, tp_count    | tptab_lock                            |
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "jump_internal.h"
#include <dynftrace/tracepoint.h>

struct tptable {
	struct dynftrace_tracepoint *const *start, *const *stop;
	int refs;
	struct tptable *next;
};
static struct tptable *tptables;
static unsigned long tp_count, tp_callbacks;
/* Callback changes: held across patching (patch_lock) and grace periods. */
static pthread_mutex_t tp_lock = PTHREAD_MUTEX_INITIALIZER;
/* The table list: taken by constructors/destructors, which run under
 * patch_lock during dlclose, so it is never held while taking patch_lock. */
static pthread_mutex_t tptab_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_table_hook table_added_hook; /* written once (release), read acquire */

HIDDEN void tracepoint_on_table_added(tp_table_hook fn)
{
	__atomic_store_n(&table_added_hook, fn, __ATOMIC_RELEASE);
}

__attribute__((visibility("default"))) void dynftrace_rcu_read_lock(void)
{
	struct dft_thread *t = &dft_self;
	if (__builtin_expect(t->state == THREAD_NEW, 0)) {
		t->recursion++;
		rcu_register_self();
		t->recursion--;
	}
	rcu_read_lock();
}

__attribute__((visibility("default"))) void dynftrace_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

HIDDEN unsigned long tracepoint_count(unsigned long *callbacks)
{
	pthread_mutex_lock(&tp_lock);
	*callbacks = tp_callbacks;
	pthread_mutex_unlock(&tp_lock);
	pthread_mutex_lock(&tptab_lock);
	unsigned long n = tp_count;
	pthread_mutex_unlock(&tptab_lock);
	return n;
}

__attribute__((visibility("default"))) int
dynftrace_tracepoint_table_register(struct dynftrace_tracepoint *const *start,
				    struct dynftrace_tracepoint *const *stop)
{
	if (!start || !stop || stop <= start)
		return 0;
	int err = 0;
	pthread_mutex_lock(&tptab_lock);
	struct tptable *t;
	for (t = tptables; t; t = t->next)
		if (t->start == start)
			break;
	if (t) {
		t->refs++;
	} else if ((t = malloc(sizeof(*t)))) {
		t->start = start;
		t->stop = stop;
		t->refs = 1;
		t->next = tptables;
		tptables = t;
		tp_count += (unsigned long)(stop - start);
	} else {
		err = -ENOMEM;
	}
	int added = !err && t->refs == 1;
	pthread_mutex_unlock(&tptab_lock);
	tp_table_hook hook = __atomic_load_n(&table_added_hook, __ATOMIC_ACQUIRE);
	if (added && hook) /* dynftrace record -e GLOB */
		hook(start, stop);
	return err;
}

__attribute__((visibility("default"))) void
dynftrace_tracepoint_table_unregister(struct dynftrace_tracepoint *const *start,
				      struct dynftrace_tracepoint *const *stop)
{
	if (!start || !stop || stop <= start)
		return;
	pthread_mutex_lock(&tptab_lock);
	for (struct tptable **pp = &tptables; *pp; pp = &(*pp)->next) {
		struct tptable *t = *pp;
		if (t->start != start)
			continue;
		if (--t->refs == 0) {
			*pp = t->next;
			tp_count -= (unsigned long)(stop - start);
			/* The object goes away with its code: nobody can run
			 * its tracepoints any more. Arrays still attached are
			 * not freed (that would need a grace period, and
			 * dlclose holds patch_lock): a caller that unloads an
			 * object with callbacks attached leaks them. */
			for (struct dynftrace_tracepoint *const *p = start; p < stop; p++)
				if (__atomic_load_n(&(*p)->funcs, __ATOMIC_RELAXED))
					dft_debug("tracepoint %s unloaded with callbacks attached",
						  (*p)->name);
			free(t);
		}
		break;
	}
	pthread_mutex_unlock(&tptab_lock);
}

static struct dynftrace_tp_funcs *funcs_alloc(unsigned long n)
{
	struct dynftrace_tp_funcs *f =
	    malloc(sizeof(*f) + (n ? n - 1 : 0) * sizeof(struct dynftrace_tp_func));
	if (f)
		f->n = n;
	return f;
}

static void funcs_publish(struct dynftrace_tracepoint *tp, struct dynftrace_tp_funcs *f)
{
	__atomic_store_n(&tp->funcs, f, __ATOMIC_RELEASE);
}

/* Wait until no reader can hold anything published before now. */
static void grace_period(void)
{
	int err = rcu_synchronize();
	if (err)
		dft_kill("tracepoint: grace period failed: %d", err);
}

__attribute__((visibility("default"))) int
dynftrace_tracepoint_register(struct dynftrace_tracepoint *tp, void *func, void *data)
{
	if (!tp || !func)
		return -EINVAL;
	if (dft_self.rcu_nest)
		return -EDEADLK;
	int err = 0;
	pthread_mutex_lock(&tp_lock);
	struct dynftrace_tp_funcs *old = tp->funcs, *nf;
	unsigned long n = old ? old->n : 0;
	for (unsigned long i = 0; i < n; i++) {
		if (old->f[i].func == func && old->f[i].data == data) {
			err = -EEXIST;
			goto out;
		}
	}
	nf = funcs_alloc(n + 1);
	if (!nf) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned long i = 0; i < n; i++)
		nf->f[i] = old->f[i];
	nf->f[n].func = func;
	nf->f[n].data = data;
	funcs_publish(tp, nf);
	if (n == 0) {
		err = dynftrace_static_call_update(tp->call, func);
		if (!err)
			err = dynftrace_static_key_inc(tp->key);
	} else if (n == 1) {
		err = dynftrace_static_call_update(tp->call, tp->iterator);
	}
	if (err) {
		/* Back to the old array; the call keeps a safe target: the
		 * iterator handles any array. */
		funcs_publish(tp, old);
		dynftrace_static_call_update(tp->call, tp->iterator);
		grace_period();
		free(nf);
		goto out;
	}
	tp_callbacks++;
	if (old) {
		grace_period();
		free(old);
	}
out:
	pthread_mutex_unlock(&tp_lock);
	return err;
}

__attribute__((visibility("default"))) int
dynftrace_tracepoint_unregister(struct dynftrace_tracepoint *tp, void *func, void *data)
{
	if (!tp || !func)
		return -EINVAL;
	if (dft_self.rcu_nest)
		return -EDEADLK;
	int err = 0;
	pthread_mutex_lock(&tp_lock);
	struct dynftrace_tp_funcs *old = tp->funcs, *nf = NULL;
	unsigned long n = old ? old->n : 0, idx;
	for (idx = 0; idx < n; idx++)
		if (old->f[idx].func == func && old->f[idx].data == data)
			break;
	if (idx == n) {
		err = -ENOENT;
		goto out;
	}
	if (n == 1) {
		/* Stop new readers first; the grace period covers the rest. */
		err = dynftrace_static_key_dec(tp->key);
		if (err)
			dft_log("tracepoint %s: disabling its branch failed (%d)", tp->name, err);
		err = 0;
		funcs_publish(tp, NULL);
		grace_period();
		dynftrace_static_call_update(tp->call, tp->iterator);
	} else {
		nf = funcs_alloc(n - 1);
		if (!nf) {
			err = -ENOMEM;
			goto out;
		}
		for (unsigned long i = 0, k = 0; i < n; i++)
			if (i != idx)
				nf->f[k++] = old->f[i];
		funcs_publish(tp, nf);
		grace_period();
		if (nf->n == 1) {
			err = dynftrace_static_call_update(tp->call, nf->f[0].func);
			if (err) /* the iterator stays: slower, still right */
				dft_log("tracepoint %s: direct call failed (%d)", tp->name, err);
			err = 0;
		}
	}
	tp_callbacks--;
	free(old);
out:
	pthread_mutex_unlock(&tp_lock);
	return err;
}

__attribute__((visibility("default"))) int
dynftrace_tracepoint_register_raw(struct dynftrace_tracepoint *tp, dynftrace_tp_raw_fn fn,
				  void *data)
{
	if (!tp || !fn || !tp->raw)
		return -EINVAL;
	/* Refuse a duplicate before allocating a context. */
	pthread_mutex_lock(&tp_lock);
	struct dynftrace_tp_funcs *f = tp->funcs;
	for (unsigned long i = 0; f && i < f->n; i++) {
		const struct dynftrace_tp_raw_ctx *c = f->f[i].data;
		if (f->f[i].func == tp->raw && c->fn == fn && c->data == data) {
			pthread_mutex_unlock(&tp_lock);
			return -EEXIST;
		}
	}
	pthread_mutex_unlock(&tp_lock);
	struct dynftrace_tp_raw_ctx *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fn = fn;
	c->data = data;
	int err = dynftrace_tracepoint_register(tp, tp->raw, c);
	if (err)
		free(c);
	return err;
}

__attribute__((visibility("default"))) int
dynftrace_tracepoint_unregister_raw(struct dynftrace_tracepoint *tp, dynftrace_tp_raw_fn fn,
				    void *data)
{
	if (!tp || !fn || !tp->raw)
		return -EINVAL;
	struct dynftrace_tp_raw_ctx *ctx = NULL;
	pthread_mutex_lock(&tp_lock);
	struct dynftrace_tp_funcs *f = tp->funcs;
	for (unsigned long i = 0; f && i < f->n; i++) {
		struct dynftrace_tp_raw_ctx *c = f->f[i].data;
		if (f->f[i].func == tp->raw && c->fn == fn && c->data == data) {
			ctx = c;
			break;
		}
	}
	pthread_mutex_unlock(&tp_lock);
	if (!ctx)
		return -ENOENT;
	int err = dynftrace_tracepoint_unregister(tp, tp->raw, ctx);
	if (!err)
		free(ctx); /* unregister waited for the grace period */
	return err;
}

__attribute__((visibility("default"))) int dynftrace_tracepoint_for_each(dynftrace_tp_iter_fn cb,
									 void *data)
{
	int r = 0;
	pthread_mutex_lock(&tptab_lock);
	for (struct tptable *t = tptables; t && !r; t = t->next)
		for (struct dynftrace_tracepoint *const *p = t->start; p < t->stop && !r; p++)
			r = cb(*p, data);
	pthread_mutex_unlock(&tptab_lock);
	return r;
}

__attribute__((visibility("default"))) struct dynftrace_tracepoint *
dynftrace_tracepoint_find(const char *name)
{
	struct dynftrace_tracepoint *found = NULL;
	pthread_mutex_lock(&tptab_lock);
	for (struct tptable *t = tptables; t && !found; t = t->next)
		for (struct dynftrace_tracepoint *const *p = t->start; p < t->stop; p++)
			if (!strcmp((*p)->name, name)) {
				found = *p;
				break;
			}
	pthread_mutex_unlock(&tptab_lock);
	return found;
}

__attribute__((visibility("default"))) const struct dynftrace_tp_field *
dynftrace_tracepoint_fields(const struct dynftrace_tracepoint *tp, unsigned int *n)
{
	const struct dynftrace_tp_field *f = NULL;
	*n = 0;
	if (!tp || !tp->fields)
		return NULL;
	pthread_mutex_lock(&tptab_lock);
	f = tp->fields(n);
	pthread_mutex_unlock(&tptab_lock);
	return f;
}

/* The counters of the static layer (jump.c, static_call.c, this file):
 * here, the file that sees all three. */
__attribute__((visibility("default"))) void
dynftrace_static_get_stats(struct dynftrace_static_stats *st)
{
	memset(st, 0, sizeof(*st));
	patch_lock();
	st->jump_tables = jump_ctr.jump_tables;
	st->jump_entries = jump_ctr.jump_entries;
	st->key_changes = jump_ctr.key_changes;
	st->call_tables = jump_ctr.call_tables;
	st->calls = jump_ctr.calls;
	st->call_sites = jump_ctr.call_sites;
	st->call_sites_inline = jump_ctr.call_sites_inline;
	st->call_sites_missed = jump_ctr.call_sites_missed;
	st->call_updates = jump_ctr.call_updates;
	patch_unlock();
	st->tracepoints = tracepoint_count(&st->tracepoint_callbacks);
}
