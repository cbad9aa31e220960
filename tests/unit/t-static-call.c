/* t-static-call: out-of-line trampolines and inline sites reach the new
 * target after an update, NULL/cond calls do nothing, far targets, the
 * trampoline's bytes, and updates under load with exact quiet counts. */
// (runs under ASan and TSan too)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <dynftrace/dynftrace.h>
#include <dynftrace/static_call.h>
#include "tap.h"
#include "insn.h"
#include "static_load.h"

#define NOINLINE __attribute__((noinline))

static int sink;
NOINLINE int f_a(int x)
{
	return x + 1;
}
NOINLINE int f_b(int x)
{
	return x + 2;
}
NOINLINE void v_a(int x)
{
	load_hit((unsigned long)x);
}
NOINLINE int my_abs(int x)
{
	return x < 0 ? -x - 1000 : x; /* distinguishable from libc's abs */
}

DEFINE_STATIC_CALL(sc, f_a);
DEFINE_STATIC_CALL_NULL(scn, v_a);
DEFINE_STATIC_CALL(scabs, my_abs);

NOINLINE int call_sc(int x)
{
	return static_call(sc)(x); /* a tail call at -O2 */
}
NOINLINE int call_sc2(int x)
{
	return static_call(sc)(x) * 2;
}
NOINLINE void call_scn(int x)
{
	static_call_cond(scn)(x);
}
NOINLINE void call_scn2(int x)
{
	static_call_cond(scn)(x);
	__atomic_fetch_add(&sink, 1, __ATOMIC_RELAXED);
}
NOINLINE int call_abs(int x)
{
	return static_call(scabs)(x) + 0 * sink;
}

static const unsigned char *tramp(void *t)
{
	return (const unsigned char *)t;
}

/* Does the trampoline jmp straight to F? */
static int tramp_jmps_to(void *t, void *f)
{
	return tinsn_jumps_to(tramp(t), f);
}

/* Inline sites of KEY whose instruction (found as the runtime does) calls
 * or jumps to F; -1 if a site of KEY has neither F nor the trampoline. */
static int sites_calling(struct dynftrace_static_call_key *key, void *f, int *nop_sites)
{
	int n = 0;
	*nop_sites = 0;
	for (const struct dynftrace_scsite_entry *e = __start_dynftrace_scsite;
	     e < __stop_dynftrace_scsite; e++) {
		struct dynftrace_static_call_key *k =
		    *(struct dynftrace_static_call_key *const *)((const char *)&e->keyref +
								 e->keyref);
		if (k != key)
			continue;
		const unsigned char *m = (const unsigned char *)&e->marker + e->marker;
		for (int i = 0; i < 256; i += TINSN_STEP) {
			const unsigned char *p = m + i;
			if (f && tinsn_branch(p, NULL) == f) {
				n++;
				break;
			}
			if (tinsn_is_nop(p) && !f) {
				++*nop_sites;
				break;
			}
		}
	}
	return n;
}

/* ---- load ---- */
static int which;

NOINLINE static void load_body(void)
{
	load_hit((unsigned long)call_sc2(0)); /* f_a: 2, f_b: 4 */
	call_scn(100);			      /* NULL: 0, v_a: 100 */
	call_scn2(1000);
}

static void load_toggle(int i)
{
	(void)i;
	which ^= 1;
	static_call_update(sc, which ? f_b : f_a);
	static_call_update(scn, which ? v_a : NULL);
}

static unsigned long load_settle(int round)
{
	which = round & 1;
	static_call_update(sc, which ? f_b : f_a);
	static_call_update(scn, which ? v_a : NULL);
	return which ? 4 + 1100 : 2;
}

int main(void)
{
	struct dynftrace_static_stats st;
	int nops;
	tap_plan(26);

	dynftrace_static_get_stats(&st);
	ok(st.calls == 3, "3 static calls registered (%lu)", st.calls);
	diag("sites: %lu recorded, %lu inline, %lu missed", st.call_sites, st.call_sites_inline,
	     st.call_sites_missed);
#if defined(__riscv)
	/* riscv64: only a call the linker relaxed to an aligned 4-byte `jal`
	 * can be patched with one store; the tail calls here became `c.j`
	 * (2 bytes), which keep going through the trampoline. */
	ok(st.call_sites_inline >= 2, "the aligned jal sites found their call instruction");
#else
	ok(st.call_sites_inline >= 4 && st.call_sites_missed == 0,
	   "every site found its call instruction");
#endif
	ok(DYNFTRACE_SCK(sc).tramp == (void *)DYNFTRACE_SCT(sc), "key knows its trampoline");

	ok(call_sc(1) == 2 && call_sc2(1) == 4, "initial target f_a");
	ok(tramp_jmps_to((void *)DYNFTRACE_SCT(sc), (void *)f_a), "trampoline: jmp f_a");
	ok(static_call_query(sc) == f_a, "query: f_a");
	ok(sites_calling(&DYNFTRACE_SCK(sc), (void *)f_a, &nops) == 2,
	   "both inline sites call f_a directly");

	ok(static_call_update(sc, f_b) == 0, "update to f_b");
	ok(call_sc(1) == 3 && call_sc2(1) == 6, "calls reach f_b");
	ok(DYNFTRACE_SCT(sc)(1) == 3, "the trampoline itself reaches f_b");
	ok(tramp_jmps_to((void *)DYNFTRACE_SCT(sc), (void *)f_b), "trampoline bytes: jmp f_b");
	ok(sites_calling(&DYNFTRACE_SCK(sc), (void *)f_b, &nops) == 2, "inline sites call f_b");
	ok(static_call_query(sc) == f_b, "query: f_b");

	/* NULL / cond */
	load_hits = 0;
	call_scn(5);
	call_scn2(5);
	ok(load_hits == 0 && tinsn_tramp_returns(tramp(DYNFTRACE_SCT(scn))),
	   "NULL call: nothing, ret");
	sites_calling(&DYNFTRACE_SCK(scn), NULL, &nops);
	ok(nops >= 1, "cond site with a call is a NOP while NULL (%d)", nops);
	ok(static_call_update(scn, v_a) == 0, "update NULL -> v_a");
	call_scn(5);
	call_scn2(7);
	ok(load_hits == 12, "cond calls reach v_a (%lu)", load_hits);
	ok(static_call_update(scn, NULL) == 0 && static_call_query(scn) == NULL,
	   "update back to NULL");
	load_hits = 0;
	call_scn(5);
	call_scn2(5);
	ok(load_hits == 0, "nothing called again");

	/* a target beyond rel32 reach: libc's abs */
	ok(call_abs(-5) == -995, "initial my_abs");
	ok(static_call_update(scabs, abs) == 0, "update to libc abs");
	ok(call_abs(-5) == 5, "far target reached (%d)", call_abs(-5));
	diag("trampoline of scabs: %02x %02x %02x %02x %02x (far path: e9 03 00 00 00 when "
	     "libc is beyond +-2 GiB)",
	     tramp(DYNFTRACE_SCT(scabs))[0], tramp(DYNFTRACE_SCT(scabs))[1],
	     tramp(DYNFTRACE_SCT(scabs))[2], tramp(DYNFTRACE_SCT(scabs))[3],
	     tramp(DYNFTRACE_SCT(scabs))[4]);
	ok(static_call_update(scabs, my_abs) == 0 && call_abs(-5) == -995, "and back");

	struct load_test lt = {
	    .what = "static call",
	    .rounds = 16,
	    .toggles = 120,
	    .body = load_body,
	    .toggle = load_toggle,
	    .settle = load_settle,
	};
	ok(load_run(&lt) == 0, "updates under load: exact counts in every quiet window");
	ok(lt.load_iters > 0, "workers ran during the updates (%lu)", lt.load_iters);
	dynftrace_static_get_stats(&st);
	ok(st.call_updates >= (unsigned long)lt.rounds * 120 * 2, "updates counted (%lu)",
	   st.call_updates);
	struct dynftrace_stats ds;
	dynftrace_get_stats(&ds);
	diag("engine: %lu batches, %lu syncs, %lu traps emulated", ds.batches, ds.syncs, ds.traps);
	return tap_done();
}
