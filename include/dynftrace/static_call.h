/* SPDX-License-Identifier: MIT */
/*
 * static_call.h - static calls for user-space C (the kernel's "dynamic
 * functions"), patched live by the dynftrace runtime.
 *
 *	int fast_hash(const void *p, size_t n);
 *	DEFINE_STATIC_CALL(hash, fast_hash);
 *	...
 *	h = static_call(hash)(buf, len);       // a direct call, no pointer
 *	...
 *	static_call_update(hash, careful_hash); // any thread, any time
 *
 * Out-of-line form. DEFINE_STATIC_CALL emits a 16-byte trampoline
 * `__SCT__<name>` in the defining object:
 *
 *	+0  e9 <rel32>      jmp  <target>        (the patched instruction)
 *	    or c3 cc cc cc cc  ret               (target NULL)
 *	+5  cc cc cc
 *	+8  ff 25 <rel32>   jmp  *key.far(%rip)  (targets beyond +-2 GiB)
 *	+14 cc cc
 *
 * static_call(name)(args) is a direct call of the trampoline, whose direct
 * jmp is rewritten by static_call_update. Until the object's constructor has
 * registered it, the trampoline goes through key.far (= the initial target),
 * so a call made even before that works. A target out of rel32 reach of the
 * trampoline (another object far away) is reached through key.far.
 *
 * Inline form (C only; the default in C, off with
 * -DDYNFTRACE_STATIC_CALL_NO_INLINE and in C++). static_call(name) also
 * records a marker just before the call in the section `dynftrace_scsite`.
 * At registration the runtime looks, from the marker, for the first
 * `call rel32` / `jmp rel32` (a tail call) whose destination is exactly the
 * trampoline, within 256 bytes, and from then on patches that instruction to
 * call (jmp to) the target directly, so the trampoline is skipped. Limits,
 * in which case the site simply stays a call of the trampoline (correct,
 * one extra direct jmp): the call goes through a PLT (the static call is
 * defined in another object), the compiler placed the call more than 256
 * bytes after the marker, or the target is beyond rel32 reach of the site.
 * A site that is found is a verified e8/e9 whose rel32 lands exactly on the
 * trampoline, so a wrong match needs the code to contain those 5 exact bytes
 * at a non-instruction boundary between the marker and the real call.
 * dynftrace_static_get_stats() counts found and missed sites.
 *
 * NULL targets: DEFINE_STATIC_CALL_NULL(name, type_func) starts with `ret`;
 * static_call_cond(name)(args) is for void functions and does nothing while
 * the target is NULL (its inline sites become a 5-byte NOP, or `ret` for a
 * tail call). static_call() of a NULL non-void call returns garbage.
 *
 * Updates: static_call_update(name, func) checks the type at compile time
 * (a function of another type does not compile; NULL is accepted), then
 * rewrites the trampoline and every found inline site of the call in ONE
 * patch batch, safe while other threads call it. When it returns, new calls
 * reach FUNC; a thread that was already past the patched instruction may
 * still be running the old target (synchronise yourself if you free it,
 * as tracepoints do).
 *
 * Contract of dynftrace_static_call_update (what static_call_update returns):
 * 0, -ENOENT (the defining object has not registered the call), -EFAULT (an
 * instruction held unexpected bytes; nothing written), -ENOMEM.
 */
#ifndef DYNFTRACE_STATIC_CALL_H
#define DYNFTRACE_STATIC_CALL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * | field    | written by                               | read by            |
 * |----------|------------------------------------------|--------------------|
 * | func     | initializer, runtime (lock, atomic)      | static_call_query  |
 * | far      | initializer, runtime (lock, atomic)      | the trampoline     |
 * | tramp    | runtime at registration (lock)           | runtime            |
 * | state... | runtime (lock)                           | runtime            |
 */
struct dynftrace_static_call_key {
	void *func;  /* current target, NULL: none */
	void *far;   /* the trampoline's indirect path (offset 8: used by the asm) */
	void *tramp; /* the trampoline, once registered */
	unsigned long state;
	unsigned long reserved[2];
};

/* Section records (self-relative offsets). */
struct dynftrace_scall_entry {
	int32_t tramp; /* the trampoline */
	int32_t key;   /* its key */
};
struct dynftrace_scsite_entry {
	int32_t marker; /* just before the call instruction */
	int32_t keyref; /* a `struct dynftrace_static_call_key *const` */
	uint32_t flags; /* DYNFTRACE_SCSITE_F_* */
};
#define DYNFTRACE_SCSITE_F_COND 0x1u /* static_call_cond: NOP while NULL */

struct dynftrace_static_stats {
	unsigned long jump_tables, jump_entries, key_changes;
	unsigned long call_tables, calls, call_sites, call_sites_inline, call_sites_missed;
	unsigned long call_updates;
	unsigned long tracepoints, tracepoint_callbacks;
};

int dynftrace_static_call_register(const struct dynftrace_scall_entry *cs,
				   const struct dynftrace_scall_entry *ce,
				   const struct dynftrace_scsite_entry *ss,
				   const struct dynftrace_scsite_entry *se);
void dynftrace_static_call_unregister(const struct dynftrace_scall_entry *cs,
				      const struct dynftrace_scall_entry *ce,
				      const struct dynftrace_scsite_entry *ss,
				      const struct dynftrace_scsite_entry *se);
int dynftrace_static_call_update(struct dynftrace_static_call_key *key, void *func);
void dynftrace_static_get_stats(struct dynftrace_static_stats *st);

#define DYNFTRACE_SCT(name) __SCT__##name
#define DYNFTRACE_SCK(name) __SCK__##name

/* C linkage in C++ too: the trampoline's name is written in assembler. */
#ifdef __cplusplus
#define DYNFTRACE_EXTERN_C extern "C"
#else
#define DYNFTRACE_EXTERN_C extern
#endif

#define DECLARE_STATIC_CALL(name, func)                                                            \
	DYNFTRACE_EXTERN_C struct dynftrace_static_call_key __SCK__##name;                         \
	DYNFTRACE_EXTERN_C __typeof__(func) __SCT__##name

/* The trampoline, in the defining object (DYNFTRACE_SC_TRAMP_ASM,
 * DYNFTRACE_SC_TRAMP_JMP_FAR, DYNFTRACE_SC_TRAMP_RET): the architecture's
 * instructions. */
#if defined(__x86_64__)
#include <dynftrace/arch/x86_64/static_call.h>
#elif defined(__aarch64__)
#include <dynftrace/arch/aarch64/static_call.h>
#elif defined(__riscv) && __riscv_xlen == 64
#include <dynftrace/arch/riscv64/static_call.h>
#else
#error "dynftrace: static calls are not implemented for this architecture"
#endif
/* Operand 0, a symbol's address, printed bare for the assembler
 * (DYNFTRACE_ARCH_SYM's operand; %c0 where the compiler prints it so). */
#ifndef DYNFTRACE_ARCH_SYM0
#define DYNFTRACE_ARCH_SYM0 "%c0"
#endif

#define DYNFTRACE_SC_DEFINE_(name, func_init, first)                                               \
	struct dynftrace_static_call_key __SCK__##name = {                                         \
	    (void *)(func_init), (void *)(func_init), 0, 0, {0, 0}};                               \
	DYNFTRACE_EXTERN_C struct dynftrace_static_call_key __SCKL__##name                         \
	    __attribute__((alias("__SCK__" #name), visibility("hidden")));                         \
	DYNFTRACE_SC_TRAMP_ASM(name, first)

#define DEFINE_STATIC_CALL(name, func)                                                             \
	DECLARE_STATIC_CALL(name, func);                                                           \
	DYNFTRACE_SC_DEFINE_(name, func, DYNFTRACE_SC_TRAMP_JMP_FAR)

/* A static call that starts with no target (its trampoline returns). */
#define DEFINE_STATIC_CALL_NULL(name, type_func)                                                   \
	DECLARE_STATIC_CALL(name, type_func);                                                      \
	DYNFTRACE_SC_DEFINE_(name, 0, DYNFTRACE_SC_TRAMP_RET)

/* ---- calling ------------------------------------------------------------ */

#if defined(__cplusplus) || defined(DYNFTRACE_STATIC_CALL_NO_INLINE)
#define DYNFTRACE_SC_INLINE    0
#define static_call(name)      (__SCT__##name)
#define static_call_cond(name) (__SCT__##name)
#else
#define DYNFTRACE_SC_INLINE 1
/* Marker before the call; "memory" keeps it ahead of the call. */
#define DYNFTRACE_SC_SITE(name, flags)                                                             \
	(__extension__({                                                                           \
		static struct dynftrace_static_call_key *const dft_scp = &__SCK__##name;           \
		__asm__ __volatile__("1:\n\t"                                                      \
				     ".pushsection dynftrace_scsite, \"a\"\n\t"                    \
				     ".balign 4\n\t"                                               \
				     ".long 1b - ., " DYNFTRACE_ARCH_SYM0 " - ., %c1\n\t"          \
				     ".popsection"                                                 \
				     :                                                             \
				     : DYNFTRACE_ARCH_SYM(&dft_scp), "i"(flags)                    \
				     : "memory");                                                  \
	}))
#define static_call(name) ((void)DYNFTRACE_SC_SITE(name, 0), __SCT__##name)
#define static_call_cond(name)                                                                     \
	((void)DYNFTRACE_SC_SITE(name, DYNFTRACE_SCSITE_F_COND), __SCT__##name)
#endif

/* The current target (NULL: none), typed. */
#define static_call_query(name)                                                                    \
	((__typeof__(&__SCT__##name))__atomic_load_n(&__SCK__##name.func, __ATOMIC_RELAXED))

/* ---- updating ------------------------------------------------------------ */

#ifdef __cplusplus
/* C++: the typed initialisation refuses any other function type. */
#define static_call_update(name, func)                                                             \
	(__extension__({                                                                           \
		__typeof__(&__SCT__##name) dft_f_ = (func);                                        \
		dynftrace_static_call_update(&__SCK__##name, (void *)dft_f_);                      \
	}))
#else
#define DYNFTRACE_SC_TYPE_OK(name, func)                                                           \
	(__builtin_types_compatible_p(__typeof__(func), __typeof__(__SCT__##name)) ||              \
	 __builtin_types_compatible_p(__typeof__(func), __typeof__(&__SCT__##name)) ||             \
	 __builtin_types_compatible_p(__typeof__(func), void *))
#define static_call_update(name, func)                                                             \
	(__extension__({                                                                           \
		_Static_assert(DYNFTRACE_SC_TYPE_OK(name, func),                                   \
			       "static_call_update(" #name ", " #func                              \
			       "): the function's type differs from the static call's");           \
		__typeof__(&__SCT__##name) dft_f_ = (func);                                        \
		dynftrace_static_call_update(&__SCK__##name, (void *)dft_f_);                      \
	}))
#endif

/* ---- per-object registration ---------------------------------------------- */

#ifndef DYNFTRACE_RUNTIME
extern const struct dynftrace_scall_entry __start_dynftrace_scall[]
    __attribute__((weak, visibility("hidden")));
extern const struct dynftrace_scall_entry __stop_dynftrace_scall[]
    __attribute__((weak, visibility("hidden")));
extern const struct dynftrace_scsite_entry __start_dynftrace_scsite[]
    __attribute__((weak, visibility("hidden")));
extern const struct dynftrace_scsite_entry __stop_dynftrace_scsite[]
    __attribute__((weak, visibility("hidden")));

__attribute__((constructor(101), used)) static void dynftrace_scall_ctor_(void)
{
	dynftrace_static_call_register(__start_dynftrace_scall, __stop_dynftrace_scall,
				       __start_dynftrace_scsite, __stop_dynftrace_scsite);
}

__attribute__((destructor(101), used)) static void dynftrace_scall_dtor_(void)
{
	dynftrace_static_call_unregister(__start_dynftrace_scall, __stop_dynftrace_scall,
					 __start_dynftrace_scsite, __stop_dynftrace_scsite);
}
#endif

#ifdef __cplusplus
}
#endif
#endif /* DYNFTRACE_STATIC_CALL_H */
