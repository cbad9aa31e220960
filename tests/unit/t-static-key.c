/* t-static-key: the four {TRUE,FALSE} x {likely,unlikely} branches, their
 * compiled bytes, nesting, and toggling under load with exact quiet counts. */
// (runs under ASan and TSan too)
#include <errno.h>
#include <string.h>
#include <dynftrace/static_key.h>
#include <dynftrace/static_call.h>
#include <dynftrace/dynftrace.h>
#include "tap.h"
#include "insn.h"
#include "static_load.h"

#define NOINLINE __attribute__((noinline))

DEFINE_STATIC_KEY_TRUE(kt);
DEFINE_STATIC_KEY_FALSE(kf);
DEFINE_STATIC_KEY_FALSE(kload);

NOINLINE int kt_likely(void)
{
	return static_branch_likely(&kt) ? 1 : 0;
}
NOINLINE int kt_unlikely(void)
{
	return static_branch_unlikely(&kt) ? 1 : 0;
}
NOINLINE int kf_likely(void)
{
	return static_branch_likely(&kf) ? 1 : 0;
}
NOINLINE int kf_unlikely(void)
{
	return static_branch_unlikely(&kf) ? 1 : 0;
}

/* All four as one bit mask: kt_likely=1, kt_unlikely=2, kf_likely=4, kf_unlikely=8 */
static int probes(void)
{
	return kt_likely() | kt_unlikely() << 1 | kf_likely() << 2 | kf_unlikely() << 3;
}

/* Check the bytes of every branch of KEY in this program: NOP or JMP as
 * "count > 0" and the form (flags) say. Returns the number checked, -1 on a
 * mismatch. */
static int check_bytes(struct static_key *key)
{
	int n = 0;
	for (const struct dynftrace_jump_entry *e = __start_dynftrace_jump;
	     e < __stop_dynftrace_jump; e++) {
		struct static_key *k =
		    *(struct static_key *const *)((const char *)&e->keyref + e->keyref);
		if (k != key)
			continue;
		const unsigned char *code = (const unsigned char *)&e->code + e->code;
		int on = key->enabled > 0;
		int jwe = e->flags & DYNFTRACE_JUMP_F_JMP_WHEN_ENABLED;
		int want_jmp = on ? jwe : !jwe;
		if (want_jmp) {
			const char *tgt = (const char *)&e->target + e->target;
			if (!tinsn_jumps_to(code, tgt))
				return -1;
		} else if (!tinsn_is_nop(code)) {
			return -1;
		}
		n++;
	}
	return n;
}

/* The compiled form of the first branch of KEY with form JWE: 1 JMP, 0 NOP. */
static int compiled_jmp(struct static_key *key, int jwe)
{
	for (const struct dynftrace_jump_entry *e = __start_dynftrace_jump;
	     e < __stop_dynftrace_jump; e++) {
		struct static_key *k =
		    *(struct static_key *const *)((const char *)&e->keyref + e->keyref);
		if (k == key && (int)(e->flags & DYNFTRACE_JUMP_F_JMP_WHEN_ENABLED) == jwe)
			return (e->flags & DYNFTRACE_JUMP_F_COMPILED_JMP) ? 1 : 0;
	}
	return -1;
}

/* ---- load ---- */

NOINLINE static void load_body(void)
{
	if (static_branch_unlikely(&kload))
		load_hit(1);
	if (!static_branch_likely(&kload))
		load_hit(100);
}

static void load_toggle(int i)
{
	(void)i;
	if (static_key_enabled(&kload))
		static_branch_disable(&kload);
	else
		static_branch_enable(&kload);
}

static unsigned long load_settle(int round)
{
	/* after an even number of toggles the key is back at 0 */
	if (round & 1) {
		static_branch_enable(&kload);
		return 1;
	}
	if (static_key_enabled(&kload))
		static_branch_disable(&kload);
	return 100;
}

int main(void)
{
	struct dynftrace_static_stats st;
	tap_plan(24);

	dynftrace_static_get_stats(&st);
	ok(st.jump_tables >= 1 && st.jump_entries >= 6,
	   "jump table registered (%lu tables, %lu entries)", st.jump_tables, st.jump_entries);

	/* compiled defaults: TRUE likely NOP, TRUE unlikely JMP, FALSE likely JMP,
	 * FALSE unlikely NOP */
	ok(compiled_jmp(&kt.key, 0) == 0, "TRUE key, likely branch compiled as NOP");
	ok(compiled_jmp(&kt.key, 1) == 1, "TRUE key, unlikely branch compiled as JMP");
	ok(compiled_jmp(&kf.key, 0) == 1, "FALSE key, likely branch compiled as JMP");
	ok(compiled_jmp(&kf.key, 1) == 0, "FALSE key, unlikely branch compiled as NOP");

	ok(probes() == 0x3, "initial: TRUE key branches true, FALSE key branches false (%#x)",
	   probes());
	ok(static_key_enabled(&kt) && !static_key_enabled(&kf), "static_key_enabled initial");
	ok(check_bytes(&kt.key) >= 2 && check_bytes(&kf.key) >= 2, "bytes match the state");

	ok(static_branch_enable(&kf) == 0, "enable FALSE key");
	ok(probes() == 0xf, "all four true (%#x)", probes());
	ok(check_bytes(&kf.key) >= 2, "FALSE key's branches flipped");

	ok(static_branch_disable(&kt) == 0, "disable TRUE key");
	ok(probes() == 0xc, "TRUE key branches false, FALSE key true (%#x)", probes());
	ok(check_bytes(&kt.key) >= 2, "TRUE key's branches flipped");

	/* nesting */
	int r1 = static_branch_enable(&kt), r2 = static_branch_enable(&kt);
	ok(r1 == 0 && r2 == 0 && static_key_count(&kt) == 2, "enable nests (count %d)",
	   static_key_count(&kt));
	ok(static_branch_disable(&kt) == 0 && probes() == 0xf, "one disable of two: still true");
	ok(static_branch_disable(&kt) == 0 && probes() == 0xc, "second disable: false");
	ok(static_branch_disable(&kt) == -EINVAL && static_key_count(&kt) == 0,
	   "disable below 0: -EINVAL");
	r1 = static_branch_disable(&kf);
	r2 = static_branch_enable(&kt);
	ok(r1 == 0 && r2 == 0 && probes() == 0x3, "back to the initial state");
	ok(static_branch_inc(&kf) == 0 && static_branch_dec(&kf) == 0 && probes() == 0x3,
	   "inc/dec aliases");

	struct load_test lt = {
	    .what = "static key",
	    .rounds = 20,
	    .toggles = 200,
	    .body = load_body,
	    .toggle = load_toggle,
	    .settle = load_settle,
	};
	ok(load_run(&lt) == 0, "toggling under load: exact counts in every quiet window");
	ok(lt.load_iters > 0, "workers ran during the toggling (%lu)", lt.load_iters);
	dynftrace_static_get_stats(&st);
	ok(st.key_changes >= (unsigned long)lt.rounds * lt.toggles, "key changes counted (%lu)",
	   st.key_changes);
	ok(check_bytes(&kload.key) == 2, "load key bytes consistent");
	struct dynftrace_stats ds;
	dynftrace_get_stats(&ds);
	diag("engine: %lu batches, %lu syncs, %lu traps emulated", ds.batches, ds.syncs, ds.traps);
	return tap_done();
}
