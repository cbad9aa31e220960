/* t-tracepoint: 0 -> 1 -> 2 -> 1 -> 0 callbacks with exact delivery, the
 * single-callback direct call, typed fields and raw records, errors,
 * unregister-then-free under load (run under ASan too), and register /
 * unregister under load with exact quiet counts. */
// (runs under ASan and TSan too)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <dynftrace/dynftrace.h>
#include <dynftrace/tracepoint.h>
#include "tap.h"
#include "insn.h"
#include "static_load.h"

#define NOINLINE __attribute__((noinline))

DYNFTRACE_TRACEPOINT_EVENT(tp_msg, TP_PROTO(int a, const char *s, unsigned long n),
			   TP_ARGS(a, s, n),
			   TP_FIELDS(tp_field(int, a) tp_field_string(s)
					 tp_field(unsigned long, n)))
DYNFTRACE_TRACEPOINT(tp_plain, TP_PROTO(int x), TP_ARGS(x))

NOINLINE void hit_msg(int a)
{
	trace_tp_msg(a, "hello", 7);
}
NOINLINE void hit_plain(int x)
{
	trace_tp_plain(x);
}

struct counter {
	unsigned long n, bad;
	int tag;
};
static struct counter ca = {.tag = 1}, cb = {.tag = 2};

static void cb_msg(void *data, int a, const char *s, unsigned long n)
{
	struct counter *c = data;
	if (strcmp(s, "hello") || n != 7 || (c->tag != 1 && c->tag != 2))
		c->bad++;
	c->n += (unsigned long)a;
}
static void cb_msg2(void *data, int a, const char *s, unsigned long n)
{
	cb_msg(data, a * 100, s, n);
}

static int deadlk;
static void cb_reenter(void *data, int x)
{
	(void)data;
	(void)x;
	deadlk = register_trace_tp_plain(cb_reenter, &deadlk);
}

/* raw records */
static unsigned long raw_hits;
static int raw_ok = 1;
static void raw_fn(void *data, const struct dynftrace_tracepoint *tp, const void *rec,
		   unsigned int size)
{
	unsigned int n;
	const struct dynftrace_tp_field *f = dynftrace_tracepoint_fields(tp, &n);
	int a;
	const char *s;
	unsigned long ul;
	memcpy(&a, (const char *)rec + f[0].offset, sizeof(a));
	memcpy(&s, (const char *)rec + f[1].offset, sizeof(s));
	memcpy(&ul, (const char *)rec + f[2].offset, sizeof(ul));
	if (data != &raw_hits || size != tp->rec_size || a != 3 || strcmp(s, "hello") || ul != 7)
		raw_ok = 0;
	raw_hits++;
}

static int count_tp(struct dynftrace_tracepoint *tp, void *data)
{
	(void)tp;
	++*(int *)data;
	return 0;
}

static void *call_target(void)
{
	const unsigned char *t = (const unsigned char *)DYNFTRACE_SCT(tp_func_tp_msg);
	int call = 1;
	const void *to = tinsn_branch(t, &call);
	return call ? NULL : (void *)to;
}

/* ---- unregister-then-free under load ---- */
struct heapcb {
	unsigned long x;
};
static void cb_heap(void *data, int x)
{
	__atomic_fetch_add(&((struct heapcb *)data)->x, (unsigned long)x,
			   __ATOMIC_RELAXED); /* a use after free under ASan/TSan */
}
static struct counter cpersist;
static void cb_persist(void *data, int x)
{
	__atomic_fetch_add(&((struct counter *)data)->n, (unsigned long)x, __ATOMIC_RELAXED);
}
static volatile int free_stop;
static void *free_worker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&free_stop, __ATOMIC_ACQUIRE))
		hit_plain(1);
	return NULL;
}

/* ---- quiet-window load ---- */
static void cb_la(void *data, int x)
{
	(void)data;
	load_hit((unsigned long)x);
}
static void cb_lb(void *data, int x)
{
	if (data != &cb)
		load_hit(1000000); /* wrong data pointer on the direct path */
	load_hit(10UL * (unsigned long)x);
}
static int la_on, lb_on;
static void set_state(int a, int b)
{
	if (a && !la_on)
		register_trace_tp_plain(cb_la, &ca);
	if (b && !lb_on)
		register_trace_tp_plain(cb_lb, &cb);
	if (!a && la_on)
		unregister_trace_tp_plain(cb_la, &ca);
	if (!b && lb_on)
		unregister_trace_tp_plain(cb_lb, &cb);
	la_on = a;
	lb_on = b;
}
static void load_body(void)
{
	hit_plain(1);
}
/* 0 -> A -> A+B -> B -> 0 ... */
static void load_toggle(int i)
{
	static const int st[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
	set_state(st[i & 3][0], st[i & 3][1]);
}
static unsigned long load_settle(int round)
{
	static const int st[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
	int k = round & 3;
	set_state(st[k][0], st[k][1]);
	return (unsigned long)(st[k][0] * 1 + st[k][1] * 10);
}

int main(void)
{
	tap_plan(35);
	int n = 0;
	dynftrace_tracepoint_for_each(count_tp, &n);
	ok(n == 2, "for_each sees 2 tracepoints (%d)", n);
	ok(dynftrace_tracepoint_find("tp_msg") == &__tracepoint_tp_msg, "find by name");

	unsigned int nf;
	const struct dynftrace_tp_field *f = dynftrace_tracepoint_fields(&__tracepoint_tp_msg, &nf);
	ok(nf == 3 && f, "3 fields");
	ok(f && !strcmp(f[0].name, "a") && !strcmp(f[0].type, "int") &&
	       f[0].kind == DYNFTRACE_FIELD_INT && f[0].size == 4 && f[0].is_signed &&
	       f[0].offset == 0,
	   "field a: int, signed, 4 bytes at 0");
	ok(f && !strcmp(f[1].name, "s") && f[1].kind == DYNFTRACE_FIELD_STRING && f[1].size == 8 &&
	       f[1].offset == 8,
	   "field s: string at 8");
	ok(f && !strcmp(f[2].name, "n") && f[2].kind == DYNFTRACE_FIELD_UINT && !f[2].is_signed &&
	       f[2].size == 8 && f[2].offset == 16,
	   "field n: unsigned long at 16");
	dynftrace_tracepoint_fields(&__tracepoint_tp_plain, &nf);
	ok(nf == 0, "untyped tracepoint has no fields");

	/* 0 callbacks */
	ok(!trace_tp_msg_enabled(), "disabled at start");
	hit_msg(1);
	ok(ca.n == 0 && cb.n == 0, "nothing delivered");

	/* 0 -> 1 */
	ok(register_trace_tp_msg(cb_msg, &ca) == 0, "register A");
	ok(trace_tp_msg_enabled(), "enabled");
	for (int i = 0; i < 10; i++)
		hit_msg(1);
	ok(ca.n == 10 && !ca.bad, "A got exactly 10 (%lu)", ca.n);
	ok(call_target() == (void *)cb_msg && static_call_query(tp_func_tp_msg) == cb_msg,
	   "one callback: the static call jumps to it directly");
	ok(register_trace_tp_msg(cb_msg, &ca) == -EEXIST, "duplicate: -EEXIST");

	/* 1 -> 2 */
	ok(register_trace_tp_msg(cb_msg2, &cb) == 0, "register B");
	for (int i = 0; i < 10; i++)
		hit_msg(1);
	ok(ca.n == 20 && cb.n == 1000, "both delivered exactly (A %lu, B %lu)", ca.n, cb.n);
	ok(call_target() == (void *)__traceiter_tp_msg, "two callbacks: the iterator");

	/* 2 -> 1 */
	ok(unregister_trace_tp_msg(cb_msg, &ca) == 0, "unregister A");
	for (int i = 0; i < 10; i++)
		hit_msg(1);
	ok(ca.n == 20 && cb.n == 2000 && !cb.bad, "only B, with its own data (A %lu, B %lu)", ca.n,
	   cb.n);
	ok(call_target() == (void *)cb_msg2, "one callback again: direct call of B");

	/* 1 -> 0 */
	ok(unregister_trace_tp_msg(cb_msg2, &cb) == 0, "unregister B");
	hit_msg(1);
	ok(ca.n == 20 && cb.n == 2000 && !trace_tp_msg_enabled(), "nothing delivered, disabled");
	ok(unregister_trace_tp_msg(cb_msg2, &cb) == -ENOENT, "unregister again: -ENOENT");

	/* raw records */
	ok(dynftrace_tracepoint_register_raw(&__tracepoint_tp_msg, raw_fn, &raw_hits) == 0,
	   "register raw");
	hit_msg(3);
	hit_msg(3);
	ok(raw_hits == 2 && raw_ok, "raw records carry the fields (%lu)", raw_hits);
	ok(dynftrace_tracepoint_unregister_raw(&__tracepoint_tp_msg, raw_fn, &raw_hits) == 0,
	   "unregister raw");
	ok(dynftrace_tracepoint_register_raw(&__tracepoint_tp_plain, raw_fn, NULL) == -EINVAL,
	   "raw on an untyped tracepoint: -EINVAL");

	/* from inside a callback */
	ok(register_trace_tp_plain(cb_reenter, NULL) == 0, "register a re-entering callback");
	hit_plain(1);
	ok(deadlk == -EDEADLK, "register from a callback: -EDEADLK (%d)", deadlk);
	ok(unregister_trace_tp_plain(cb_reenter, NULL) == 0, "unregister it");

	/* unregister-then-free while 2 threads hit the tracepoint */
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, free_worker, NULL);
	int errs = 0;
	const int cycles = tap_scaled(1500);
	for (int i = 0; i < cycles; i++) {
		if (i % 3 == 0)
			errs += register_trace_tp_plain(cb_persist, &cpersist) != 0;
		struct heapcb *h = calloc(1, sizeof(*h));
		errs += register_trace_tp_plain(cb_heap, h) != 0;
		errs += unregister_trace_tp_plain(cb_heap, h) != 0;
		free(h);
		if (i % 3 == 2)
			errs += unregister_trace_tp_plain(cb_persist, &cpersist) != 0;
	}
	__atomic_store_n(&free_stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ok(errs == 0, "%d register/unregister/free cycles under load, no error", cycles);
	ok(!trace_tp_plain_enabled(), "all gone");

	struct load_test lt = {
	    .what = "tracepoint",
	    .rounds = 24,
	    .toggles = 60,
	    .body = load_body,
	    .toggle = load_toggle,
	    .settle = load_settle,
	};
	ok(load_run(&lt) == 0, "0/1/2 callbacks changing under load: exact quiet counts");
	set_state(0, 0);
	ok(!trace_tp_plain_enabled(), "disabled at the end");
	struct dynftrace_static_stats st;
	dynftrace_static_get_stats(&st);
	ok(st.tracepoints == 2 && st.tracepoint_callbacks == 0,
	   "stats: 2 tracepoints, 0 callbacks");
	struct dynftrace_stats ds;
	dynftrace_get_stats(&ds);
	diag("engine: %lu batches, %lu syncs, %lu traps emulated, %lu grace periods", ds.batches,
	     ds.syncs, ds.traps, ds.grace_periods);
	return tap_done();
}
