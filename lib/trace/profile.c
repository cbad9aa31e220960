/* SPDX-License-Identifier: MIT */
/*
 * profile.c - the profile tracer's tables: per-thread counts by site id
 * (calls, total, self, sum and sum of squares of the durations), merged into
 * the process's table at thread and process exit and written to
 * profile-IMG.txt; read live by trace_stat/function; dumped by the
 * fatal-signal path. The frames come from the graph tracer's shadow stack
 * (trace.c calls profile_account when a profile frame closes).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ring.h"
#include "sbuf.h"
#include "sites.h"
#include "trace.h"
#include "trace_int.h"
#include "func_names.h"

/* Counters: written by the owner with relaxed atomic stores, read by the
 * control thread (trace_stat/function) with relaxed loads. */
struct prof_ent {
	uint64_t calls, total, self;
	double sumsq;
	uint64_t sum;	 /* of every call's duration; total: outermost calls only */
	uint32_t active; /* the owner's frames of the function open now (not merged) */
};

/*
 * Profile tables of live threads, so that trace_stat/function can read
 * them while they count.
 *
 * | prof_all, prof_all_n          | prof_lock                               |
 * | prof_threads, g->prof_next/prev, g->prof_linked | prof_lock             |
 * | g->prof, g->prof_n (pointer)  | owner, replaced only under prof_lock    |
 * | g->prof_gen                   | owner under prof_lock                   |
 * | prof_gen                      | control thread (atomic), under prof_lock|
 *
 * Nothing under prof_lock calls what may be traced (the tables are mmap'd,
 * never malloc'd: a program's own allocator may be traced), so a traced
 * thread may wait for it; only a thread that already holds it (a traced
 * signal handler interrupting the section) drops its sample, counted.
 */
static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
/* This thread holds prof_lock: the fatal-signal dump (prof_fatal_dump)
 * must then not wait for it, nor read what the interrupted section changes.
 * The owner's, set right after taking the lock and cleared before dropping it. */
static __thread int prof_lock_mine __attribute__((tls_model("initial-exec")));
static struct prof_ent *prof_all;
static uint32_t prof_all_n;
static struct fg_thread *prof_threads;
static uint64_t prof_gen = 1;

static void prof_lock_take(void)
{
	pthread_mutex_lock(&prof_lock);
	prof_lock_mine = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* seen by this thread's handler */
}

static int prof_lock_try(void)
{
	if (pthread_mutex_trylock(&prof_lock))
		return 0;
	prof_lock_mine = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return 1;
}

static void prof_lock_drop(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	prof_lock_mine = 0;
	pthread_mutex_unlock(&prof_lock);
}

/* A zeroed table of N entries (mmap: see prof_lock), or NULL. */
static struct prof_ent *prof_mem_alloc(uint32_t n)
{
	void *p = mmap(NULL, (size_t)n * sizeof(struct prof_ent), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void prof_mem_free(struct prof_ent *p, uint32_t n)
{
	if (p)
		munmap(p, (size_t)n * sizeof(*p));
}

/* Owner: make g->prof hold ID for profile session GEN. Waits for prof_lock
 * (no holder waits for a traced thread), unless this thread holds it
 * already, in a section a traced signal handler interrupted: the sample is
 * then dropped (0). Dropping on contention lost thousands of samples when
 * threads started together. */
static int prof_prepare(struct fg_thread *g, uint32_t id, uint64_t gen)
{
	if (prof_lock_mine)
		return 0;
	prof_lock_take();
	int ok = 1;
	if (g->prof && g->prof_gen != gen) /* a new session: start from zero */
		memset(g->prof, 0, g->prof_n * sizeof(*g->prof));
	g->prof_gen = gen;
	if (!g->prof || id >= g->prof_n) {
		uint32_t n = site_next_id + 1024;
		if (n <= id)
			n = id + 1024;
		struct prof_ent *np = prof_mem_alloc(n);
		if (!np) {
			ok = 0;
		} else {
			if (g->prof) {
				memcpy(np, g->prof, g->prof_n * sizeof(*np));
				munmap(g->prof, g->prof_n * sizeof(*np));
			}
			g->prof = np;
			g->prof_n = n;
		}
	}
	if (ok && !g->prof_linked) {
		g->prof_prev = NULL;
		g->prof_next = prof_threads;
		if (prof_threads)
			prof_threads->prof_prev = g;
		prof_threads = g;
		g->prof_linked = 1;
	}
	prof_lock_drop();
	return ok;
}

/* A profile frame of ID opens: 1 when no other frame of ID is open in
 * this thread (its duration then counts in the total, once: a recursive
 * function's inner calls are inside its outer one). */
int profile_enter(struct fg_thread *g, uint32_t id)
{
	uint64_t gen = __atomic_load_n(&prof_gen, __ATOMIC_RELAXED);
	if (unlikely(!g->prof || id >= g->prof_n || g->prof_gen != gen)) {
		if (!prof_prepare(g, id, gen))
			return 1; /* its exit will try again */
	}
	return g->prof[id].active++ == 0;
}

void profile_account(struct fg_thread *g, const struct shadow_ent *e, uint64_t dur)
{
	uint64_t gen = __atomic_load_n(&prof_gen, __ATOMIC_RELAXED);
	if (unlikely(!g->prof || e->id >= g->prof_n || g->prof_gen != gen)) {
		if (!prof_prepare(g, e->id, gen)) {
			ring_count_lost(1);
			return;
		}
	}
	struct prof_ent *p = &g->prof[e->id];
	uint64_t self = dur > e->child_ns ? dur - e->child_ns : 0;
	double sq = p->sumsq + (double)dur * (double)dur;
	if (p->active) /* 0: opened before a new session's table */
		p->active--;
	__atomic_store_n(&p->calls, p->calls + 1, __ATOMIC_RELAXED);
	if (e->fl2 & SE2_PROF_OUTER)
		__atomic_store_n(&p->total, p->total + dur, __ATOMIC_RELAXED);
	__atomic_store_n(&p->self, p->self + self, __ATOMIC_RELAXED);
	__atomic_store_n(&p->sum, p->sum + dur, __ATOMIC_RELAXED);
	__atomic_store(&p->sumsq, &sq, __ATOMIC_RELAXED);
}

/* Merge this thread's profile into the process total (of its session). */
void profile_thread_merge(void)
{
	struct fg_thread *g = fg_self;
	if (!g || !g->prof)
		return;
	prof_lock_take();
	if (g->prof_gen != prof_gen) {
		prof_lock_drop();
		return; /* counts of an old session */
	}
	if (g->prof_n > prof_all_n) {
		struct prof_ent *n = prof_mem_alloc(g->prof_n);
		if (n) {
			if (prof_all)
				memcpy(n, prof_all, prof_all_n * sizeof(*n));
			prof_mem_free(prof_all, prof_all_n);
			prof_all = n;
			prof_all_n = g->prof_n;
		}
	}
	for (uint32_t i = 0; i < g->prof_n && i < prof_all_n; i++) {
		prof_all[i].calls += g->prof[i].calls;
		prof_all[i].total += g->prof[i].total;
		prof_all[i].self += g->prof[i].self;
		prof_all[i].sum += g->prof[i].sum;
		prof_all[i].sumsq += g->prof[i].sumsq;
	}
	memset(g->prof, 0, g->prof_n * sizeof(*g->prof));
	prof_lock_drop();
}

/* Add thread T's counts (read while it may count: atomically) into ALL[N]. */
static void pf_add(struct prof_ent *all, uint32_t n, const struct fg_thread *t)
{
	for (uint32_t i = 0; t->prof && i < t->prof_n && i < n; i++) {
		const struct prof_ent *p = &t->prof[i];
		uint64_t c = __atomic_load_n(&p->calls, __ATOMIC_RELAXED);
		if (!c)
			continue;
		double sq;
		__atomic_load(&p->sumsq, &sq, __ATOMIC_RELAXED);
		all[i].calls += c;
		all[i].total += __atomic_load_n(&p->total, __ATOMIC_RELAXED);
		all[i].self += __atomic_load_n(&p->self, __ATOMIC_RELAXED);
		all[i].sum += __atomic_load_n(&p->sum, __ATOMIC_RELAXED);
		all[i].sumsq += sq;
	}
}

/* The current session's totals: exited threads plus live ones (prof_lock
 * held). An array of *N entries to free with prof_mem_free, or NULL. */
static struct prof_ent *prof_collect(uint32_t *np)
{
	uint32_t n = prof_all_n;
	for (struct fg_thread *t = prof_threads; t; t = t->prof_next)
		if (t->prof_gen == prof_gen && t->prof_n > n)
			n = t->prof_n;
	*np = n;
	struct prof_ent *all = n ? prof_mem_alloc(n) : NULL;
	if (!all)
		return NULL;
	for (uint32_t i = 0; i < prof_all_n; i++)
		all[i] = prof_all[i];
	for (struct fg_thread *t = prof_threads; t; t = t->prof_next)
		if (t->prof_gen == prof_gen)
			pf_add(all, n, t);
	return all;
}

void profile_dump(void)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/profile-%s.txt", trace_cfg.dir, trace_cfg.img);
	FILE *f = fopen(path, "we");
	if (!f) {
		dft_log("cannot write %s: %s", path, strerror(errno));
		return;
	}
	uint32_t n;
	prof_lock_take();
	struct prof_ent *all = prof_collect(&n); /* threads still running too */
	prof_lock_drop();
	for (uint32_t i = 0; all && i < n; i++)
		if (all[i].calls)
			fprintf(f, "%u %lu %lu %lu %.0f %lu\n", i, (unsigned long)all[i].calls,
				(unsigned long)all[i].total, (unsigned long)all[i].self,
				all[i].sumsq, (unsigned long)all[i].sum);
	prof_mem_free(all, n);
	fclose(f);
}

/*
 * The profile table on a fatal signal: ring_emergency_flush() calls this on
 * the one thread that flushes, in its signal handler, before the process
 * dies (ring_fatal_hook). Like dump_profile, but async-signal-safe: no
 * malloc or stdio (mmap, write), static buffers (only that thread is here;
 * the handler may run on a small alternate stack), and never waiting for
 * prof_lock for long, as the holder may be this very thread, interrupted:
 *   - lock taken (other holders let go within PROF_FATAL_WAIT_MS): all of
 *     it, as at exit;
 *   - this thread holds it: everybody else waits for it (or drops samples,
 *     prof_prepare), so only the interrupted section moves: every other
 *     live thread's table (the list, walked forward, is consistent at any
 *     point of a head insert or an unlink), not its own table nor the
 *     totals of exited threads, which that section may be changing;
 *   - another thread keeps it: its own table only, which only its owner
 *     changes.
 * The file then starts with "# " lines saying so, which report shows.
 * Calls still open at the signal (main, the one that faulted) are not
 * counted, as calls still open at exit are not.
 */
#define PROF_FATAL_WAIT_MS 200

static struct {
	char path[4200];
	char buf[4096];
	size_t len;
	int fd, failed;
} pf; /* the flushing thread's only (ring.c lets one thread in) */

static void pf_flush(void)
{
	size_t off = 0;
	while (!pf.failed && off < pf.len) {
		ssize_t w = write(pf.fd, pf.buf + off, pf.len - off);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			pf.failed = 1;
		} else {
			off += (size_t)w;
		}
	}
	pf.len = 0;
}

static void pf_str(const char *s)
{
	for (; *s; s++) {
		if (pf.len == sizeof(pf.buf))
			pf_flush();
		pf.buf[pf.len++] = *s;
	}
}

static void pf_u64(uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	char out[24];
	for (int i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = 0;
	pf_str(out);
}

/* A sum of squares as "%.0f" would print it, without printf: beyond 64 bits
 * the leading 18 digits (more than a double holds), then zeros. */
static void pf_sumsq(double v)
{
	if (!(v > 0)) {
		pf_str("0");
		return;
	}
	int e = 0;
	while (v >= 1e18) {
		v /= 10;
		e++;
	}
	pf_u64((uint64_t)(v + 0.5));
	while (e--)
		pf_str("0");
}

/* Add T's table (of the current session) into ALL (N entries). */

void profile_fatal_dump(int sig)
{
	if (READ_ONCE(trace_cfg.kind) != TR_PROFILE || !trace_rec_on)
		return;
	enum { ALL, OTHERS, OWN } what = ALL;
	int locked = 0;
	if (prof_lock_mine) {
		what = OTHERS;
	} else {
		for (int i = 0; i < PROF_FATAL_WAIT_MS && !(locked = prof_lock_try()); i++) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
		if (!locked)
			what = OWN;
	}
	const struct fg_thread *me = fg_self;
	uint64_t gen = __atomic_load_n(&prof_gen, __ATOMIC_RELAXED);
	uint32_t n = 0, skipped = 0;
	if (what == ALL)
		n = prof_all_n;
	if (what != OWN) {
		for (const struct fg_thread *t = prof_threads; t; t = t->prof_next)
			if (t->prof_gen == gen && t->prof_n > n && (what == ALL || t != me))
				n = t->prof_n;
	}
	if (what != OTHERS && me && me->prof_gen == gen && me->prof_n > n)
		n = me->prof_n;
	struct prof_ent *all = NULL;
	size_t size = (size_t)n * sizeof(*all);
	if (n) {
		all = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (all == MAP_FAILED)
			all = NULL;
	}
	if (all) {
		if (what == ALL)
			for (uint32_t i = 0; i < prof_all_n && i < n; i++)
				all[i] = prof_all[i];
		if (what != OWN) {
			for (const struct fg_thread *t = prof_threads; t; t = t->prof_next)
				if (t->prof_gen == gen && (what == ALL || t != me))
					pf_add(all, n, t);
		} else if (me && me->prof_gen == gen) {
			pf_add(all, n, me);
		}
	} else if (n) {
		skipped = 1; /* no memory: nothing but the note */
	}
	if (locked)
		prof_lock_drop();

	pf.len = 0;
	pf.failed = 0;
	size_t k = 0;
	const char *parts[] = {trace_cfg.dir, "/profile-", trace_cfg.img, ".txt"};
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
		for (const char *c = parts[i]; *c && k + 1 < sizeof(pf.path); c++)
			pf.path[k++] = *c;
	pf.path[k] = 0;
	pf.fd = open(pf.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (pf.fd < 0)
		goto out;
	pf_str("# written at fatal signal ");
	pf_u64((uint64_t)sig);
	pf_str(": calls still open then are not counted\n");
	if (what == OTHERS)
		pf_str("# incomplete: the dying thread was inside the profile's lock, its own "
		       "counts and those of threads that had exited are missing\n");
	else if (what == OWN)
		pf_str("# incomplete: another thread held the profile's lock, only the dying "
		       "thread's counts are here\n");
	if (skipped)
		pf_str("# incomplete: no memory to sum the counts\n");
	for (uint32_t i = 0; all && i < n; i++) {
		if (!all[i].calls)
			continue;
		pf_u64(i);
		pf_str(" ");
		pf_u64(all[i].calls);
		pf_str(" ");
		pf_u64(all[i].total);
		pf_str(" ");
		pf_u64(all[i].self);
		pf_str(" ");
		pf_sumsq(all[i].sumsq);
		pf_str(" ");
		pf_u64(all[i].sum);
		pf_str("\n");
	}
	pf_flush();
	close(pf.fd);
out:
	if (all)
		munmap(all, size);
}

struct prof_row {
	uint32_t id;
	const struct prof_ent *e;
};

static int prof_row_cmp(const void *a, const void *b)
{
	const struct prof_row *x = a, *y = b;
	if (x->e->total != y->e->total)
		return x->e->total < y->e->total ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

void trace_read_profile(struct sbuf *out)
{
	uint32_t n = 0;
	prof_lock_take();
	struct prof_ent *all = prof_collect(&n);
	prof_lock_drop();
	sb_printf(out, "  %-30s %10s    %-15s %-15s %s\n", "Function", "Hit", "Time", "Avg", "s^2");
	sb_printf(out, "  %-30s %10s    %-15s %-15s %s\n", "--------", "---", "----", "---", "---");
	struct prof_row *rows = all ? calloc(n, sizeof(*rows)) : NULL;
	size_t k = 0;
	for (uint32_t i = 0; rows && i < n; i++)
		if (all[i].calls)
			rows[k++] = (struct prof_row){i, &all[i]};
	if (k)
		qsort(rows, k, sizeof(*rows), prof_row_cmp);
	for (size_t i = 0; i < k; i++) {
		const struct prof_ent *e = rows[i].e;
		const char *nm = func_name(rows[i].id);
		double c = (double)e->calls, avg = (double)e->sum / c, var = 0;
		if (e->calls > 1) {
			var = (e->sumsq - (double)e->sum * (double)e->sum / c) / (c - 1);
			if (var < 0)
				var = 0;
		}
		char name[64];
		if (nm)
			snprintf(name, sizeof(name), "%s", nm);
		else
			snprintf(name, sizeof(name), "<id %u>", rows[i].id);
		sb_printf(out, "  %-30s %10lu    %12.3f us  %12.3f us  %12.3f us\n", name,
			  (unsigned long)e->calls, (double)e->total / 1000.0, avg / 1000.0,
			  var / 1e6);
	}
	free(rows);
	prof_mem_free(all, n);
}

/* The thread leaves for good (no frame open): off the list, table freed. */
void profile_thread_gone(struct fg_thread *g)
{
	prof_lock_take();
	if (g->prof_linked) {
		if (g->prof_prev)
			g->prof_prev->prof_next = g->prof_next;
		else
			prof_threads = g->prof_next;
		if (g->prof_next)
			g->prof_next->prof_prev = g->prof_prev;
		g->prof_linked = 0;
	}
	prof_lock_drop();
	if (g->prof)
		munmap(g->prof, g->prof_n * sizeof(*g->prof));
	g->prof = NULL;
}

/* The fork child: only thread G survives, its table is the only one left,
 * and a parent thread may have held prof_lock. */
void profile_atfork_child(struct fg_thread *g)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	prof_lock = fresh;
	prof_lock_mine = 0;
	if (g && g->prof)
		memset(g->prof, 0, g->prof_n * sizeof(*g->prof));
	prof_threads = NULL;
	if (g && g->prof_linked) {
		g->prof_next = g->prof_prev = NULL;
		prof_threads = g;
	}
	prof_mem_free(prof_all, prof_all_n);
	prof_all = NULL;
	prof_all_n = 0;
}

/* A new profile session (the tracer was switched to profile). */
void profile_restart(void)
{
	prof_lock_take();
	__atomic_store_n(&prof_gen, prof_gen + 1, __ATOMIC_RELAXED);
	prof_mem_free(prof_all, prof_all_n);
	prof_all = NULL;
	prof_all_n = 0;
	prof_lock_drop();
}
