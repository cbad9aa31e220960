/* SPDX-License-Identifier: MIT */
/*
 * free.c - no thread ever runs a freed ops through a trampoline (
 * run by tests/sh/routes-free.sh, also under ASan).
 *
 * Stubs are never freed: an unregistered ops' stubs point at the runtime's
 * late_ops, which counts entries that arrive late (late_entries). CALL_OPS
 * literals are cleared before the grace period of unregister.
 *
 * Part 1, under load: two workers call co_f0..3 and tr_f0..3 (funcs.c)
 * while the main thread, for each route mask (TRAMP, CALL_OPS, both),
 * mallocs an ops and its private data, registers it (alone, filtered, or
 * beside a long-lived ops, sharing a function with it or not), waits until
 * a worker's call reached it, unregisters it, poisons both and frees them,
 * hundreds of times. The callback reads
 * and writes ops->private: a late callback reads poison (counted) or freed
 * memory (ASan).
 *
 * Part 2, a late entry made deterministic: a new thread's first callback
 * registers it for grace periods (rcu.c: rcu_register_self), which calls
 * pthread_setspecific() after the thread has entered the trampoline and
 * before it enters the RCU read side. This program defines
 * pthread_setspecific (the runtime's call binds to it) and parks that
 * thread there. Meanwhile the main thread unregisters the ops, which must
 * not wait for it (it is outside the read side), poisons and frees it; then
 * the thread goes on. Through a private trampoline (stub) it must land in
 * late_ops; through the CALL_OPS literal it must find the literal cleared;
 * through the common trampoline, the list without the ops: each a late
 * entry (late_entries + 1). Never the freed ops. If the hook is not
 * reached (the runtime changed how threads register), those checks are
 * skipped with a note.
 *
 * Part 3, stub reuse: a thread parked the same way in ops A's stub (for
 * tr_late) while A leaves and its stub is handed to another ops B: ops
 * come and go (each takes the next stub: fresh ones first, then the oldest
 * retired) until B's site calls the parked stub. When the thread goes on,
 * B must not be called for tr_late if B does not want it (a late entry),
 * and must be if B wants tr_late (tr_late calls that stub as B's now). And
 * when tr_late moved off A's stub to the list (B came to it too) while A
 * stays, the parked thread reaches A once, as the stub's owner that still
 * wants the site, not B.
 *
 * Part 4, a filter change in flight: this program also defines mprotect
 * and parks the thread that runs dynftrace_set_filter(A, ...) in the
 * engine's first mprotect of the page of a given site or literal, i.e.
 * after the new filter (without tr_late / co_late) was published and
 * before that site or literal changes. A call of the function meanwhile,
 * through A's stub or A's CALL_OPS literal, must not reach A (a late
 * entry). Skipped if the engine writes through /proc/self/mem. Parts 1 and
 * 4 also run ops with DYNFTRACE_OPS_FL_GPR_ONLY: the light bodies, whose
 * checks are written in assembly.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "common.h"

#define MAGIC  0x5ca1ab1e5ca1ab1eUL
#define POISON 0xdb

struct priv {
	unsigned long magic;
	unsigned long calls;
	unsigned long pad[6];
};

static unsigned long poisoned_seen, cb_total;
static double now(void);

static void cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
	       struct dynftrace_regs *r)
{
	(void)ip, (void)pip, (void)r;
	struct priv *p = o->private;
	if (__atomic_load_n(&p->magic, __ATOMIC_RELAXED) != MAGIC)
		__atomic_fetch_add(&poisoned_seen, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&p->calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&cb_total, 1, __ATOMIC_RELAXED);
}

static unsigned long other_calls;
static void other_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
		     struct dynftrace_regs *r)
{
	(void)ip, (void)pip, (void)o, (void)r;
	__atomic_fetch_add(&other_calls, 1, __ATOMIC_RELAXED);
}

/* ---- part 1 --------------------------------------------------------------- */

static int stop;
static unsigned long bad;

static void *worker(void *arg)
{
	unsigned long x = (unsigned long)arg << 40;
	static const int fns[] = {0, 1, 2, 3, 6, 7, 8, 9}; /* co_f*, tr_f* */
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		for (int k = 0; k < 8; k++) {
			unsigned long (*volatile f)(unsigned long) = rt_fn[fns[k]];
			if (f(x) != routes_expect(RT_FN_KIND(fns[k]), x))
				__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
		}
		x++;
	}
	return NULL;
}

static struct dynftrace_ops *ops_new(const char *glob)
{
	struct dynftrace_ops *ops = calloc(1, sizeof(*ops));
	struct priv *p = calloc(1, sizeof(*p));
	if (!ops || !p)
		abort();
	p->magic = MAGIC;
	ops->func = cb;
	ops->private = p;
	if (glob && dynftrace_set_filter(ops, glob, 1))
		ops->flags = 1; /* marks the failure; cleared before register */
	return ops;
}

/* Release the filter, poison and free. */
static void ops_free(struct dynftrace_ops *ops)
{
	struct priv *p = ops->private;
	dynftrace_free_filter(ops);
	memset(p, POISON, sizeof(*p));
	memset(ops, POISON, sizeof(*ops));
	free(p);
	free(ops);
}

struct round_stats {
	int errors, with_calls, rounds, timeouts;
	unsigned long calls;
};

static void hammer_rounds(unsigned mask, int rounds, struct round_stats *rs)
{
	static const char *const globs[] = {NULL, "*_f[01]", "*_f[12]", "*_f3"};
	struct dynftrace_ops other = {.func = other_cb};
	if (dynftrace_set_filter(&other, "*_f2", 1) || dynftrace_set_routes(mask))
		rs->errors++;
	for (int i = 0; i < rounds; i++) {
		/* 0: alone, all functions; 1: alone, filtered; 2: beside OTHER,
		 * sharing *_f2 with it (list or CALL_OPS list literal); 3: beside
		 * OTHER, each on its own functions (both on private routes) */
		int mode = i % 4;
		if (mode == 2 && dynftrace_register_ops(&other))
			rs->errors++;
		struct dynftrace_ops *ops = ops_new(globs[mode]);
		if (ops->flags)
			rs->errors++;
		/* every other four rounds GPR_ONLY: the light bodies (funcs.c's
		 * functions take no floating-point argument, so an ordinary C
		 * callback keeps the flag's promise for them) */
		ops->flags = (i / 4) % 2 ? DYNFTRACE_OPS_FL_GPR_ONLY : 0;
		struct priv *p = ops->private;
		if (dynftrace_register_ops(ops))
			rs->errors++;
		/* Until a worker reached it: the workers may not have run for a
		 * while on a loaded machine. Generous, so only a route that never
		 * calls the ops fails; once one round timed out, the others do
		 * not wait long. */
		double t0 = now();
		while (!__atomic_load_n(&p->calls, __ATOMIC_RELAXED) &&
		       now() - t0 < (rs->timeouts ? 0.001 : 10))
			sched_yield();
		rs->timeouts += !__atomic_load_n(&p->calls, __ATOMIC_RELAXED);
		if (dynftrace_unregister_ops(ops))
			rs->errors++;
		unsigned long n = __atomic_load_n(&p->calls, __ATOMIC_RELAXED);
		rs->with_calls += n > 0;
		rs->calls += n;
		ops_free(ops);
		if (mode == 3 && dynftrace_unregister_ops(&other))
			rs->errors++;
	}
	rs->rounds += rounds;
	dynftrace_free_filter(&other);
}

/* ---- part 2: a thread parked between the trampoline and the read side ----- */

static int (*real_setspecific)(pthread_key_t, const void *);
static __thread int park_me;
static int parked, release_parked;

/* The runtime's pthread_setspecific binds here (this program exports it),
 * as do the sanitizers' own calls: TSan's thread start calls it before the
 * thread's TSan state exists, so nothing here may be instrumented. */
#if defined(__SANITIZE_THREAD__)
#define NO_TSAN __attribute__((no_sanitize_thread))
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NO_TSAN __attribute__((no_sanitize("thread")))
#endif
#endif
#ifndef NO_TSAN
#define NO_TSAN
#endif
NO_TSAN int pthread_setspecific(pthread_key_t key, const void *val)
{
	if (park_me) {
		park_me = 0;
		__atomic_store_n(&parked, 1, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&release_parked, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	if (!real_setspecific)
		real_setspecific =
		    (int (*)(pthread_key_t, const void *))dlsym(RTLD_NEXT, "pthread_setspecific");
	return real_setspecific(key, val);
}

static unsigned long parked_result;
static void *parked_thread(void *arg)
{
	int fn = (int)(long)arg;
	park_me = 1;
	unsigned long (*volatile f)(unsigned long) = rt_fn[fn];
	parked_result = f(7) != routes_expect(RT_FN_KIND(fn), 7);
	park_me = 0;
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait up to SECS for *FLAG; 0 when it came. */
static int wait_flag(int *flag, double secs)
{
	double t0 = now();
	while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
		if (now() - t0 > secs)
			return -1;
		sched_yield();
	}
	return 0;
}

struct unreg_arg {
	struct dynftrace_ops *ops;
	int err, done;
};

static void *unreg_thread(void *arg)
{
	struct unreg_arg *u = arg;
	u->err = dynftrace_unregister_ops(u->ops);
	__atomic_store_n(&u->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct site_q {
	const char *name;
	struct rt_site s;
};

static int site_q_cb(const struct dynftrace_site_info *si, void *data)
{
	struct site_q *q = data;
	if (si->func && !strcmp(si->func, q->name)) {
		q->s.st = st_of(si->route);
		q->s.ip = si->ip;
		q->s.target = si->target;
	}
	return 0;
}

static int route_of(int fn, unsigned long *target)
{
	struct site_q q = {.name = rt_name[fn]};
	q.s.st = ST_OTHER;
	dynftrace_for_each_site_info(site_q_cb, &q);
	if (target)
		*target = q.s.target;
	return q.s.st;
}

/*
 * One late entry through function FN with route mask MASK, expecting route
 * WANT: park a new thread inside the trampoline, unregister, poison and free
 * the ops, let the thread go on. Returns the late_entries delta, or -1 when
 * the hook was not reached (*SKIPPED set), or -2 (something wrong,
 * diagnosed). *CBS: callbacks that ran meanwhile (must be 0).
 */
static long late_entry(int fn, unsigned mask, int want, int *skipped, unsigned long *cbs)
{
	struct dynftrace_stats st;
	*skipped = 0;
	*cbs = 0;
	__atomic_store_n(&parked, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&release_parked, 0, __ATOMIC_RELAXED);
	struct dynftrace_ops *ops = ops_new(rt_name[fn]);
	if (ops->flags || dynftrace_set_routes(mask) || dynftrace_register_ops(ops)) {
		diag("%s: cannot set up the ops", rt_name[fn]);
		return -2;
	}
	int route = route_of(fn, NULL);
	if (route != want) {
		diag("%s: route %s, want %s", rt_name[fn], st_name[route], st_name[want]);
		dynftrace_unregister_ops(ops);
		ops_free(ops);
		return -2;
	}
	pthread_t th;
	pthread_create(&th, NULL, parked_thread, (void *)(long)fn);
	if (wait_flag(&parked, 10)) {
		/* The thread ran through without reaching our hook. */
		pthread_join(th, NULL);
		dynftrace_unregister_ops(ops);
		ops_free(ops);
		*skipped = 1;
		return -1;
	}
	dynftrace_get_stats(&st);
	unsigned long late0 = st.late_entries, cb0 = __atomic_load_n(&cb_total, __ATOMIC_RELAXED);
	/* Unregister from another thread: if it waited for the parked thread
	 * (outside the read side, it must not), it would never return. */
	struct unreg_arg u = {.ops = ops};
	pthread_t ut;
	pthread_create(&ut, NULL, unreg_thread, &u);
	if (wait_flag(&u.done, 20)) {
		diag("%s: unregister waited for a thread outside the read side", rt_name[fn]);
		__atomic_store_n(&release_parked, 1, __ATOMIC_RELEASE);
		pthread_join(ut, NULL);
		pthread_join(th, NULL);
		return -2;
	}
	pthread_join(ut, NULL);
	if (u.err) {
		diag("%s: unregister failed: %d", rt_name[fn], u.err);
		__atomic_store_n(&release_parked, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
		return -2;
	}
	ops_free(ops); /* poisoned and freed while the thread is inside */
	__atomic_store_n(&release_parked, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	*cbs = __atomic_load_n(&cb_total, __ATOMIC_RELAXED) - cb0;
	dynftrace_get_stats(&st);
	if (parked_result) {
		diag("%s: the parked call returned a wrong value", rt_name[fn]);
		return -2;
	}
	return (long)(st.late_entries - late0);
}

/* ---- part 3: a parked thread whose stub changes hands -------------------- */

/* Callbacks by ops and function, for parts 3 and 4. */
static unsigned long tagged[2][NFUNC];
static void tag_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
		   struct dynftrace_regs *r)
{
	(void)pip, (void)r;
	for (int i = 0; i < NFUNC; i++) {
		unsigned long f = (unsigned long)rt_fn[i];
		if (ip == f || ip == f + 4)
			__atomic_fetch_add(&tagged[(long)o->private][i], 1, __ATOMIC_RELAXED);
	}
}

static unsigned long tag_count(int o, int fn)
{
	return __atomic_load_n(&tagged[o][fn], __ATOMIC_RELAXED);
}

/* An ops counting into tagged[IDX], on GLOB; freed poisoned. */
static struct dynftrace_ops *tag_ops_new(long idx, const char *glob)
{
	struct dynftrace_ops *ops = calloc(1, sizeof(*ops));
	if (!ops)
		abort();
	ops->func = tag_cb;
	ops->private = (void *)idx;
	if (dynftrace_set_filter(ops, glob, 1))
		ops->flags = 1; /* marks the failure; cleared before register */
	return ops;
}

static void tag_ops_free(struct dynftrace_ops *ops)
{
	dynftrace_free_filter(ops);
	memset(ops, POISON, sizeof(*ops));
	free(ops);
}

/* Park a new thread in tr_late's trampoline; 0 when parked. */
static int park_in(int fn, pthread_t *th)
{
	__atomic_store_n(&parked, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&release_parked, 0, __ATOMIC_RELAXED);
	pthread_create(th, NULL, parked_thread, (void *)(long)fn);
	if (wait_flag(&parked, 10)) {
		pthread_join(*th, NULL);
		return -1;
	}
	return 0;
}

static void unpark(pthread_t th)
{
	__atomic_store_n(&release_parked, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
}

enum { REUSE_UNWANTED, REUSE_WANTED, MOVED_TO_LIST };

/*
 * One part-3 case; returns 1 when right, 0 when wrong (diagnosed), -1 when
 * the thread could not be parked.
 */
static int stub_case(int kind)
{
	static const char *const what[] = {
	    "stub reused by an ops that does not want the parked thread's site",
	    "stub reused by an ops that wants the parked thread's site",
	    "site moved off the stub to the list while the stub's ops stays",
	};
	const int fn = 11; /* tr_late */
	struct dynftrace_stats st;
	struct dynftrace_ops *a = tag_ops_new(0, "tr_late");
	struct dynftrace_ops b = {.func = tag_cb, .private = (void *)1L};
	memset(tagged, 0, sizeof(tagged));
	if (a->flags || dynftrace_set_routes(DYNFTRACE_ROUTE_TRAMP) || dynftrace_register_ops(a) ||
	    dynftrace_set_filter(&b, kind == REUSE_UNWANTED ? "tr_f0" : "tr_late", 1)) {
		diag("%s: cannot set up", what[kind]);
		return 0;
	}
	unsigned long stub = 0, t = 0;
	if (route_of(fn, &stub) != ST_TRAMP) {
		diag("%s: tr_late is not on a private trampoline", what[kind]);
		return 0;
	}
	pthread_t th;
	if (park_in(fn, &th)) {
		dynftrace_unregister_ops(a);
		tag_ops_free(a);
		dynftrace_free_filter(&b);
		return -1;
	}
	int cycles = 0;
	if (kind == MOVED_TO_LIST) {
		if (dynftrace_register_ops(&b) || route_of(fn, &t) != ST_LIST) {
			diag("%s: tr_late did not go to the list", what[kind]);
			unpark(th);
			return 0;
		}
	} else {
		dynftrace_unregister_ops(a);
		tag_ops_free(a); /* poisoned and freed while the thread is parked */
		a = NULL;
		/* Go round the pool until B's site gets the parked stub. */
		int bfn = kind == REUSE_UNWANTED ? 6 : fn;
		for (cycles = 1; cycles <= 8192; cycles++) {
			if (dynftrace_register_ops(&b))
				break;
			route_of(bfn, &t);
			if (t == stub)
				break;
			dynftrace_unregister_ops(&b);
		}
		if (t != stub) {
			diag("%s: the parked thread's stub never came back", what[kind]);
			unpark(th);
			dynftrace_free_filter(&b);
			return 0;
		}
	}
	dynftrace_get_stats(&st);
	unsigned long late0 = st.late_entries;
	unpark(th);
	dynftrace_get_stats(&st);
	unsigned long late = st.late_entries - late0, na = tag_count(0, fn), nb = tag_count(1, fn);
	/* want: A's calls, B's calls, late entries for tr_late */
	static const unsigned long want[3][3] = {{0, 0, 1}, {0, 1, 0}, {1, 0, 0}};
	int good =
	    na == want[kind][0] && nb == want[kind][1] && late == want[kind][2] && !parked_result;
	diag("%s%s: %d ops lifetimes; tr_late reached A %lu, B %lu times; %lu late entries "
	     "(want %lu %lu %lu)",
	     good ? "" : "WRONG: ", what[kind], cycles, na, nb, late, want[kind][0], want[kind][1],
	     want[kind][2]);
	dynftrace_unregister_ops(&b);
	dynftrace_free_filter(&b);
	if (a) {
		dynftrace_unregister_ops(a);
		tag_ops_free(a);
	}
	return good;
}

/* ---- part 4: a filter change in flight -------------------------------------- */

static int (*real_mprotect)(void *, size_t, int);
static unsigned long mp_park_addr; /* park in an mprotect covering this */
static int mp_parked, mp_release;

/* The runtime's mprotect binds here (this program exports it). */
NO_TSAN int mprotect(void *addr, size_t len, int prot)
{
	unsigned long a = __atomic_load_n(&mp_park_addr, __ATOMIC_ACQUIRE);
	if (a && (prot & PROT_WRITE) && (prot & PROT_EXEC) && a >= (unsigned long)addr &&
	    a < (unsigned long)addr + len) {
		__atomic_store_n(&mp_park_addr, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&mp_parked, 1, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&mp_release, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	if (!real_mprotect)
		real_mprotect = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "mprotect");
	return real_mprotect(addr, len, prot);
}

struct refilter_arg {
	struct dynftrace_ops *ops;
	const char *glob;
	int err;
};

static void *refilter_thread(void *arg)
{
	struct refilter_arg *r = arg;
	r->err = dynftrace_set_filter(r->ops, r->glob, 1);
	return NULL;
}

/* 1 right, 0 wrong, -1 not reached (no mprotect: /proc/self/mem). */
static int filter_window(int fn, unsigned mask, const char *newglob, unsigned long flags)
{
	struct dynftrace_stats st;
	struct dynftrace_ops a = {.func = tag_cb, .flags = flags, .private = (void *)0L};
	memset(tagged, 0, sizeof(tagged));
	if (dynftrace_set_filter(&a, rt_name[fn], 1) || dynftrace_set_routes(mask) ||
	    dynftrace_register_ops(&a)) {
		diag("%s: cannot set up", rt_name[fn]);
		return 0;
	}
	unsigned long (*volatile f)(unsigned long) = rt_fn[fn];
	f(1); /* reaches A: the route works */
	unsigned long before = tag_count(0, fn);
	struct site_q q = {.name = rt_name[fn]};
	dynftrace_for_each_site_info(site_q_cb, &q);
	/* the literal (before the function, endbr64 or not) or the site */
	unsigned long lit = RT_IS_CO(fn) ? (unsigned long)rt_fn[fn] - 8 : q.s.ip;
	__atomic_store_n(&mp_parked, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&mp_release, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&mp_park_addr, lit, __ATOMIC_RELEASE);
	struct refilter_arg r = {.ops = &a, .glob = newglob};
	pthread_t th;
	/* The writer holds the runtime's mutex while parked, so the stats
	 * (which take it) are read before and after; nothing else calls FN. */
	dynftrace_get_stats(&st);
	unsigned long late0 = st.late_entries, n = 0;
	int res = -1, good_val = 0;
	pthread_create(&th, NULL, refilter_thread, &r);
	if (wait_flag(&mp_parked, 10)) {
		__atomic_store_n(&mp_park_addr, 0, __ATOMIC_RELEASE);
	} else {
		good_val = f(5) == routes_expect(RT_FN_KIND(fn), 5);
		n = tag_count(0, fn) - before;
		res = 0;
	}
	__atomic_store_n(&mp_release, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	dynftrace_get_stats(&st);
	if (res == 0) {
		unsigned long late = st.late_entries - late0;
		res = good_val && n == 0 && late == 1;
		diag("%s%s mid filter change: A called %lu times, %lu late entries (want 0, 1)",
		     res ? "" : "WRONG: ", rt_name[fn], n, late);
	}
	if (r.err) {
		diag("%s: set_filter failed: %d", rt_name[fn], r.err);
		res = 0;
	}
	dynftrace_unregister_ops(&a);
	dynftrace_free_filter(&a);
	return res;
}

int main(void)
{
	const int rounds = getenv("ROUTES_ROUNDS") ? atoi(getenv("ROUTES_ROUNDS")) : 600;
	const unsigned masks[3] = {DYNFTRACE_ROUTE_TRAMP, DYNFTRACE_ROUTE_CALL_OPS,
				   DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS};
	static const char *const mname[3] = {"tramp", "call_ops", "tramp+call_ops"};
	struct dynftrace_stats st;

	tap_plan(19);
	real_setspecific =
	    (int (*)(pthread_key_t, const void *))dlsym(RTLD_NEXT, "pthread_setspecific");

	/* part 1 */
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	struct round_stats rs[3] = {{0}};
	for (int m = 0; m < 3; m++)
		hammer_rounds(masks[m], rounds / 3, &rs[m]);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	dynftrace_get_stats(&st);
	int errors = 0;
	for (int m = 0; m < 3; m++) {
		errors += rs[m].errors;
		diag("%s: %d rounds, %d with callbacks, %lu callbacks on freed-after ops", mname[m],
		     rs[m].rounds, rs[m].with_calls, rs[m].calls);
	}
	diag("%lu callbacks on the long-lived ops, %lu traps, %lu grace periods, "
	     "%lu late stub entries",
	     other_calls, st.traps, st.grace_periods, st.late_entries);
	ok(errors == 0, "every register/unregister/filter/route call succeeded (%d failed)",
	   errors);
	ok(poisoned_seen == 0, "no callback saw poisoned private data (%lu)", poisoned_seen);
	for (int m = 0; m < 3; m++)
		ok(rs[m].with_calls > 0, "%s: %d of %d ops got callbacks before their unregister",
		   mname[m], rs[m].with_calls, rs[m].rounds);
	ok(bad == 0, "traced functions returned the right values (%lu wrong)", bad);
	ok(!st.killed, "not killed%s%s", st.killed ? ": " : "", st.killed ? st.kill_reason : "");

	/* part 2 */
	static const struct {
		int fn;
		unsigned mask;
		int route;
		long late;
		const char *what;
	} le[] = {
	    {10, DYNFTRACE_ROUTE_TRAMP, ST_TRAMP, 1, "a private trampoline: lands in late_ops"},
	    {5, DYNFTRACE_ROUTE_CALL_OPS, ST_CALLOPS, 1, "the CALL_OPS literal: finds it cleared"},
	    {11, DYNFTRACE_ROUTE_CALL_OPS, ST_OPS, 1,
	     "the common trampoline: the list without the ops"},
	};
	for (size_t k = 0; k < sizeof(le) / sizeof(le[0]); k++) {
		int skipped;
		unsigned long cbs;
		long d = late_entry(le[k].fn, le[k].mask, le[k].route, &skipped, &cbs);
		if (skipped) {
			skip("late entry: the runtime does not call pthread_setspecific between "
			     "trampoline and read side any more; cannot park a thread there");
			continue;
		}
		ok(d == le[k].late && cbs == 0,
		   "late entry through %s (%s: %ld late entries, want %ld; %lu callbacks)",
		   le[k].what, rt_name[le[k].fn], d, le[k].late, cbs);
	}
	dynftrace_get_stats(&st);
	ok(!st.killed && st.syncs == 3 * st.batches, "not killed, 3 syncs per batch (%lu, %lu)",
	   st.syncs, st.batches);

	/* part 3 */
	static const char *const sname[3] = {"reused by an ops that does not want the site",
					     "reused by an ops that wants the site",
					     "site moved to the list, the stub's ops stays"};
	for (int k = REUSE_UNWANTED; k <= MOVED_TO_LIST; k++) {
		int r = stub_case(k);
		if (r < 0)
			skip("stub reuse: cannot park a thread before the read side");
		else
			ok(r == 1, "parked in a stub %s: reaches just the ops wanting the site",
			   sname[k]);
	}
	/* part 4 */
	static const struct {
		int fn;
		unsigned mask;
		const char *glob, *what;
		unsigned long flags;
	} fw[] = {
	    {11, DYNFTRACE_ROUTE_TRAMP, "tr_f0", "a private trampoline", 0},
	    {5, DYNFTRACE_ROUTE_CALL_OPS, "co_f0", "a CALL_OPS literal", 0},
	    {11, DYNFTRACE_ROUTE_TRAMP, "tr_f0", "a light private trampoline (GPR_ONLY)",
	     DYNFTRACE_OPS_FL_GPR_ONLY},
	    {5, DYNFTRACE_ROUTE_CALL_OPS, "co_f0", "a light CALL_OPS body (GPR_ONLY)",
	     DYNFTRACE_OPS_FL_GPR_ONLY},
	};
	for (int k = 0; k < 4; k++) {
		int r = filter_window(fw[k].fn, fw[k].mask, fw[k].glob, fw[k].flags);
		if (r < 0)
			skip("filter change: the engine wrote without mprotect; cannot park it");
		else
			ok(r == 1,
			   "through %s during a filter change that drops the site: no "
			   "callback, a late entry",
			   fw[k].what);
	}
	dynftrace_get_stats(&st);
	ok(!st.killed, "not killed%s%s", st.killed ? ": " : "", st.killed ? st.kill_reason : "");
	dynftrace_set_routes(DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS);
	return tap_done();
}
