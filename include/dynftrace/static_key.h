/* SPDX-License-Identifier: MIT */
/*
 * static_key.h - static keys (jump labels) for user-space C, patched live by
 * the dynftrace runtime (libdynftrace.so).
 *
 *	DEFINE_STATIC_KEY_FALSE(verbose);
 *	...
 *	if (static_branch_unlikely(&verbose))
 *		log_slowly();
 *	...
 *	static_branch_enable(&verbose);   // from any thread, at any time
 *
 * A branch compiles to one instruction, a NOP or a jump (the architecture's
 * forms: <dynftrace/arch/ARCH/static_key.h>), and to an entry in the section
 * `dynftrace_jump` of the object (program, shared library, dlopen'd
 * library). Changing a key rewrites every branch of that key in every loaded
 * object in one patch batch: the breakpoint protocol with 3 cross-thread
 * syncs, safe while other threads run the branches.
 *
 * Which instruction a branch starts with follows from the key's initial
 * value and the branch's form:
 *
 *   | key         | static_branch_likely        | static_branch_unlikely      |
 *   |-------------|-----------------------------|-----------------------------|
 *   | ..._TRUE    | NOP (true path falls through)| JMP to the true path        |
 *   | ..._FALSE   | JMP to the false path       | NOP (false path falls through)|
 *
 * and every change of the key flips NOP <-> JMP. "likely" puts the true
 * block on the fall-through path, "unlikely" the false block.
 *
 * Semantics (differs from the kernel on one point, on purpose): enable and
 * disable NEST, like the kernel's static_key_slow_inc/dec. The key holds an
 * enable count; the branches are true while it is > 0. A ..._TRUE key starts
 * at 1, a ..._FALSE key at 0. static_branch_disable on a count of 0 fails
 * with -EINVAL. static_branch_inc/dec are the same operations.
 *
 * Contract of the functions (all return 0 or a negative errno):
 *  - may be called from any thread, also while other threads run branches
 *    of the key; they serialise on the runtime's patch lock;
 *  - -EINVAL: count would go below 0; -EOVERFLOW: count at INT_MAX;
 *    -EFAULT: a branch held unexpected bytes (nothing was written);
 *    -ENOMEM.
 *
 * Each translation unit including this header gets a hidden constructor that
 * registers its object's `dynftrace_jump` section with the runtime (once per
 * object: the runtime deduplicates by address) and a destructor that
 * unregisters it (dlclose). Branches registered while their key is already
 * enabled are brought to the key's state before the object's code can run.
 *
 * Restrictions: the key must be an object with static storage duration (its
 * address is recorded at build time); branches may be used in functions and
 * static inline functions (a static local records the key's address).
 */
#ifndef DYNFTRACE_STATIC_KEY_H
#define DYNFTRACE_STATIC_KEY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The key. Fields are the runtime's; read the state with static_key_enabled.
 *
 * | field    | written by                          | read by                 |
 * |----------|-------------------------------------|-------------------------|
 * | enabled  | runtime, under its lock (atomic)    | anyone (relaxed load)   |
 * | flags    | initializer, then runtime (lock)    | runtime                 |
 * | reserved | runtime (lock)                      | runtime                 |
 */
struct static_key {
	int enabled;	    /* enable count, > 0: branches are true */
	unsigned int flags; /* DYNFTRACE_KEY_F_* */
	unsigned long reserved[2];
};

#define DYNFTRACE_KEY_F_INIT_TRUE 0x1u /* defined with ..._TRUE */

/* The two typed keys. The array size carries the initial value into the
 * branch macros as a constant (sizeof - 1), in C and in C++. */
struct static_key_true {
	struct static_key key;
	char dft_init[2];
};
struct static_key_false {
	struct static_key key;
	char dft_init[1];
};

#define STATIC_KEY_TRUE_INIT                                                                       \
	{                                                                                          \
		{1, DYNFTRACE_KEY_F_INIT_TRUE, {0, 0}},                                            \
		{                                                                                  \
			0                                                                          \
		}                                                                                  \
	}
#define STATIC_KEY_FALSE_INIT                                                                      \
	{                                                                                          \
		{0, 0, {0, 0}},                                                                    \
		{                                                                                  \
			0                                                                          \
		}                                                                                  \
	}

#define DEFINE_STATIC_KEY_TRUE(name)   struct static_key_true name = STATIC_KEY_TRUE_INIT
#define DEFINE_STATIC_KEY_FALSE(name)  struct static_key_false name = STATIC_KEY_FALSE_INIT
#define DECLARE_STATIC_KEY_TRUE(name)  extern struct static_key_true name
#define DECLARE_STATIC_KEY_FALSE(name) extern struct static_key_false name

/*
 * One branch, as recorded in the section `dynftrace_jump`. Every field is an
 * offset from the field's own address, so the table needs no relocation.
 */
struct dynftrace_jump_entry {
	int32_t code;	/* the branch instruction */
	int32_t target; /* where the JMP form goes */
	int32_t keyref; /* a `struct static_key *const` holding the key's address */
	uint32_t flags; /* DYNFTRACE_JUMP_F_* */
};

#define DYNFTRACE_JUMP_F_JMP_WHEN_ENABLED 0x1u /* unlikely form: JMP while count > 0 */
#define DYNFTRACE_JUMP_F_COMPILED_JMP	  0x2u /* the instruction as compiled is the JMP */

/* Runtime entry points (libdynftrace.so). */
int dynftrace_jump_register(const struct dynftrace_jump_entry *start,
			    const struct dynftrace_jump_entry *stop);
void dynftrace_jump_unregister(const struct dynftrace_jump_entry *start,
			       const struct dynftrace_jump_entry *stop);
int dynftrace_static_key_inc(struct static_key *key);
int dynftrace_static_key_dec(struct static_key *key);

/* ---- the branch ----------------------------------------------------- */

/* DYNFTRACE_ARCH_JUMP_INSN: the branch instruction, in asm goto operands
 * (%c1: the flags, %l[dft_yes]: the jump's target). */
#if defined(__x86_64__)
#include <dynftrace/arch/x86_64/static_key.h>
#elif defined(__aarch64__)
#include <dynftrace/arch/aarch64/static_key.h>
#elif defined(__riscv) && __riscv_xlen == 64
#include <dynftrace/arch/riscv64/static_key.h>
#else
#error "dynftrace: static keys are not implemented for this architecture"
#endif
/* Operand 0, a symbol's address, printed bare for the assembler
 * (DYNFTRACE_ARCH_SYM's operand; %c0 where the compiler prints it so). */
#ifndef DYNFTRACE_ARCH_SYM0
#define DYNFTRACE_ARCH_SYM0 "%c0"
#endif

#define DYNFTRACE_KEY_INIT_OF(x) ((int)sizeof((x)->dft_init) - 1)

/*
 * dft_static_branch(x, jwe): 1 if the asm goto jumped. JWE is 1 for the
 * unlikely form (the JMP is the "enabled" state), 0 for the likely form.
 * The compiled instruction is the JMP iff init == jwe.
 */
#define DYNFTRACE_JUMP_FLAGS(x, jwe)                                                               \
	((jwe) | ((DYNFTRACE_KEY_INIT_OF(x) == (jwe)) ? DYNFTRACE_JUMP_F_COMPILED_JMP : 0))

#define dft_static_branch(x, jwe)                                                                  \
	(__extension__({                                                                           \
		__label__ dft_yes, dft_out;                                                        \
		int dft_r;                                                                         \
		static struct static_key *const dft_kp = &(x)->key;                                \
		__asm__ goto("1:\n\t" DYNFTRACE_ARCH_JUMP_INSN                                     \
			     ".pushsection dynftrace_jump, \"a\"\n\t"                              \
			     ".balign 4\n\t"                                                       \
			     ".long 1b - ., %l[dft_yes] - ., " DYNFTRACE_ARCH_SYM0 " - ., %c1\n\t" \
			     ".popsection"                                                         \
			     :                                                                     \
			     : DYNFTRACE_ARCH_SYM(&dft_kp), "i"(DYNFTRACE_JUMP_FLAGS(x, jwe))      \
			     :                                                                     \
			     : dft_yes);                                                           \
		dft_r = 0;                                                                         \
		goto dft_out;                                                                      \
	dft_yes:                                                                                   \
		dft_r = 1;                                                                         \
	dft_out:                                                                                   \
		dft_r;                                                                             \
	}))

/* True while the key's count is > 0; the true block is the fall-through. */
#define static_branch_likely(x) __builtin_expect(!dft_static_branch(x, 0), 1)
/* True while the key's count is > 0; the false block is the fall-through. */
#define static_branch_unlikely(x) __builtin_expect(dft_static_branch(x, 1), 0)

#define static_branch_inc(x)	 dynftrace_static_key_inc(&(x)->key)
#define static_branch_dec(x)	 dynftrace_static_key_dec(&(x)->key)
#define static_branch_enable(x)	 dynftrace_static_key_inc(&(x)->key)
#define static_branch_disable(x) dynftrace_static_key_dec(&(x)->key)

/* The key's count > 0 (a plain load: no ordering with the branches). */
#define static_key_enabled(x) (__atomic_load_n(&(x)->key.enabled, __ATOMIC_RELAXED) > 0)
#define static_key_count(x)   __atomic_load_n(&(x)->key.enabled, __ATOMIC_RELAXED)

/* ---- per-object registration ---------------------------------------- */

#ifndef DYNFTRACE_RUNTIME
extern const struct dynftrace_jump_entry __start_dynftrace_jump[]
    __attribute__((weak, visibility("hidden")));
extern const struct dynftrace_jump_entry __stop_dynftrace_jump[]
    __attribute__((weak, visibility("hidden")));

/* Runs before the object's other constructors (priority 101): the branches
 * hold their final bytes before any code of the object can run. An object
 * without branches passes NULL, NULL (weak hidden symbols), which the
 * runtime ignores. */
__attribute__((constructor(101), used)) static void dynftrace_jump_ctor_(void)
{
	dynftrace_jump_register(__start_dynftrace_jump, __stop_dynftrace_jump);
}

__attribute__((destructor(101), used)) static void dynftrace_jump_dtor_(void)
{
	dynftrace_jump_unregister(__start_dynftrace_jump, __stop_dynftrace_jump);
}
#endif

#ifdef __cplusplus
}
#endif
#endif /* DYNFTRACE_STATIC_KEY_H */
