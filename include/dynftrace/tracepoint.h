/* SPDX-License-Identifier: MIT */
/*
 * tracepoint.h - tracepoints for user-space C: one NOP while nothing is
 * registered, a direct call of the callback when exactly one is.
 *
 * In a header (or once in a .c file):
 *
 *	DYNFTRACE_TRACEPOINT(msg_sent, TP_PROTO(int fd, const char *buf, long len),
 *			     TP_ARGS(fd, buf, len))
 *
 * gives trace_msg_sent(fd, buf, len), register_trace_msg_sent(cb, data) and
 * unregister_trace_msg_sent(cb, data); a callback is
 * void cb(void *data, int fd, const char *buf, long len). For a tracepoint
 * used by several .c files, put DYNFTRACE_DECLARE_TRACEPOINT in the header
 * and DYNFTRACE_DEFINE_TRACEPOINT (same arguments) in one .c file.
 *
 * Typed events add a field description (for the trace recorder's metadata):
 *
 *	DYNFTRACE_TRACEPOINT_EVENT(msg_sent, TP_PROTO(int fd, const char *buf, long len),
 *				   TP_ARGS(fd, buf, len),
 *				   TP_FIELDS(tp_field(int, fd) tp_field_string(buf)
 *					     tp_field(long, len)))
 *
 * Field macros: tp_field(type, arg) for integer types (signedness and size
 * from the type), tp_field_string(arg) for a NUL-terminated const char *,
 * tp_field_ptr(type, arg) for a pointer recorded as its address. A field
 * names an argument. The record is a C struct of the fields in order, at the
 * offsets in the description (a string field holds the pointer: the
 * consumer copies the string while its raw callback runs).
 *
 * How trace_<name>() runs:
 *
 *	static branch (NOP while no callback) --+
 *	                                        v
 *	dynftrace_rcu_read_lock(); f = tp.funcs (acquire)
 *	static_call(tp_func_<name>)(f->f[0].data, args...)
 *	    1 callback : the static call targets the callback: a direct call,
 *	                 the data pointer comes from the array's first slot;
 *	    2 or more  : it targets __traceiter_<name>, which calls every
 *	                 callback of the array through its pointer;
 *	dynftrace_rcu_read_unlock();
 *
 * The array is replaced (copy, publish, wait for a grace period, free),
 * never modified in place. Whenever the static call targets a callback
 * directly, every array a reader can still hold starts with that callback
 * and its data: on 1 -> 2 the new callback is appended; on 2 -> 1 the
 * smaller array is published and a grace period passes before the static
 * call is pointed at the remaining callback.
 *
 * Contract (register/unregister; return 0 or a negative errno):
 *  - from any thread at any time, also while other threads hit the
 *    tracepoint; they serialise on one mutex and may wait for a grace period;
 *  - when unregister returns 0, the callback is not running anywhere and
 *    will not be called again: its data may be freed;
 *  - -EEXIST: (cb, data) already registered; -ENOENT: not registered;
 *    -EDEADLK: called from inside a tracepoint callback (a reader cannot
 *    wait for itself); -ENOMEM; -EFAULT: patching failed (see the log);
 *  - callbacks must not call functions of the runtime that patch code.
 */
#ifndef DYNFTRACE_TRACEPOINT_H
#define DYNFTRACE_TRACEPOINT_H

#include <dynftrace/static_key.h>
#include <dynftrace/static_call.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The callbacks of a tracepoint: replaced as a whole, read under RCU. */
struct dynftrace_tp_func {
	void *func;
	void *data;
};
struct dynftrace_tp_funcs {
	unsigned long n;
	struct dynftrace_tp_func f[1]; /* n of them (allocated to size) */
};

/* Field description of a typed event. */
enum dynftrace_field_kind {
	DYNFTRACE_FIELD_INT = 1,     /* signed integer */
	DYNFTRACE_FIELD_UINT = 2,    /* unsigned integer (bool included) */
	DYNFTRACE_FIELD_STRING = 3,  /* const char *, NUL-terminated */
	DYNFTRACE_FIELD_POINTER = 4, /* an address */
};
struct dynftrace_tp_field {
	const char *name;    /* the argument's name */
	const char *type;    /* its C type, as written */
	unsigned int kind;   /* enum dynftrace_field_kind */
	unsigned int size;   /* sizeof(type) */
	unsigned int offset; /* in the raw record */
	unsigned int is_signed;
};

/*
 * A tracepoint. Fields up to rec_size are constant; funcs is published by
 * the runtime (release) and read under dynftrace_rcu_read_lock (acquire).
 */
struct dynftrace_tracepoint {
	const char *name;
	struct static_key *key;			/* the "any callback" branch */
	struct dynftrace_static_call_key *call; /* callback or iterator */
	void *iterator;				/* __traceiter_<name> */
	void *raw;				/* record adapter, NULL: untyped */
	const struct dynftrace_tp_field *(*fields)(unsigned int *n); /* NULL: untyped */
	unsigned int rec_size;					     /* raw record size */
	struct dynftrace_tp_funcs *funcs;			     /* RCU; NULL: no callback */
	unsigned long reserved[4];
};

/* A consumer of raw records (typed events only). REC points to REC_SIZE
 * bytes laid out as the tracepoint's field description says; valid only
 * during the call. */
typedef void (*dynftrace_tp_raw_fn)(void *data, const struct dynftrace_tracepoint *tp,
				    const void *rec, unsigned int rec_size);
struct dynftrace_tp_raw_ctx {
	dynftrace_tp_raw_fn fn;
	void *data;
};

int dynftrace_tracepoint_register(struct dynftrace_tracepoint *tp, void *func, void *data);
int dynftrace_tracepoint_unregister(struct dynftrace_tracepoint *tp, void *func, void *data);
/* Typed events: receive every hit as a raw record. -EINVAL: untyped. */
int dynftrace_tracepoint_register_raw(struct dynftrace_tracepoint *tp, dynftrace_tp_raw_fn fn,
				      void *data);
int dynftrace_tracepoint_unregister_raw(struct dynftrace_tracepoint *tp, dynftrace_tp_raw_fn fn,
					void *data);
/* Every tracepoint of every loaded object, until CB returns non-zero (that
 * value is returned). CB runs under the tracepoint mutex: it must not
 * register or unregister. */
typedef int (*dynftrace_tp_iter_fn)(struct dynftrace_tracepoint *tp, void *data);
int dynftrace_tracepoint_for_each(dynftrace_tp_iter_fn cb, void *data);
/* The tracepoint called NAME (the first found), or NULL. */
struct dynftrace_tracepoint *dynftrace_tracepoint_find(const char *name);
/* The field description (NULL, *n = 0: untyped). */
const struct dynftrace_tp_field *dynftrace_tracepoint_fields(const struct dynftrace_tracepoint *tp,
							     unsigned int *n);
/* Read side of the runtime's RCU (nestable; for code run by tracepoints). */
void dynftrace_rcu_read_lock(void);
void dynftrace_rcu_read_unlock(void);

int dynftrace_tracepoint_table_register(struct dynftrace_tracepoint *const *start,
					struct dynftrace_tracepoint *const *stop);
void dynftrace_tracepoint_table_unregister(struct dynftrace_tracepoint *const *start,
					   struct dynftrace_tracepoint *const *stop);

#define TP_PROTO(...)	      __VA_ARGS__
#define TP_ARGS(...)	      __VA_ARGS__
#define TP_FIELDS(...)	      __VA_ARGS__
#define DYNFTRACE_PARAMS(...) __VA_ARGS__

#if defined(__has_attribute)
#if __has_attribute(patchable_function_entry)
#define DYNFTRACE_NOTRACE __attribute__((patchable_function_entry(0, 0)))
#endif
#endif
#ifndef DYNFTRACE_NOTRACE
#define DYNFTRACE_NOTRACE
#endif

/*
 * The dispatch. -DDYNFTRACE_TP_ITERATOR forces the callback-array iterator
 * (function pointers, as the kernel's tracepoints were before static
 * calls), for comparisons.
 */
#ifdef DYNFTRACE_TP_ITERATOR
#define DYNFTRACE_TP_DISPATCH(name, fs, ...) __traceiter_##name(0, __VA_ARGS__)
#else
#define DYNFTRACE_TP_DISPATCH(name, fs, ...)                                                       \
	static_call(tp_func_##name)((fs)->f[0].data, __VA_ARGS__)
#endif

#define DYNFTRACE_DECLARE_TRACEPOINT(name, proto, args)                                            \
	extern struct dynftrace_tracepoint __tracepoint_##name;                                    \
	DECLARE_STATIC_KEY_FALSE(__tp_key_##name);                                                 \
	void __traceiter_##name(void *__data, proto);                                              \
	DECLARE_STATIC_CALL(tp_func_##name, __traceiter_##name);                                   \
	static inline __attribute__((always_inline, unused)) void trace_##name(proto)              \
	{                                                                                          \
		if (static_branch_unlikely(&__tp_key_##name)) {                                    \
			struct dynftrace_tp_funcs *dft_fs;                                         \
			dynftrace_rcu_read_lock();                                                 \
			dft_fs = __atomic_load_n(&__tracepoint_##name.funcs, __ATOMIC_ACQUIRE);    \
			if (__builtin_expect(dft_fs != 0, 1))                                      \
				DYNFTRACE_TP_DISPATCH(name, dft_fs, args);                         \
			dynftrace_rcu_read_unlock();                                               \
		}                                                                                  \
	}                                                                                          \
	static inline __attribute__((unused)) int register_trace_##name(                           \
	    void (*dft_cb)(void *, proto), void *dft_data)                                         \
	{                                                                                          \
		return dynftrace_tracepoint_register(&__tracepoint_##name, (void *)dft_cb,         \
						     dft_data);                                    \
	}                                                                                          \
	static inline __attribute__((unused)) int unregister_trace_##name(                         \
	    void (*dft_cb)(void *, proto), void *dft_data)                                         \
	{                                                                                          \
		return dynftrace_tracepoint_unregister(&__tracepoint_##name, (void *)dft_cb,       \
						       dft_data);                                  \
	}                                                                                          \
	static inline __attribute__((unused)) int trace_##name##_enabled(void)                     \
	{                                                                                          \
		return static_key_enabled(&__tp_key_##name);                                       \
	}

#define DYNFTRACE_DEFINE_TRACEPOINT_(name, proto, args, raw, fieldsfn, recsize)                    \
	DEFINE_STATIC_KEY_FALSE(__tp_key_##name);                                                  \
	DYNFTRACE_NOTRACE void __traceiter_##name(void *__data, proto)                             \
	{                                                                                          \
		struct dynftrace_tp_funcs *dft_fs =                                                \
		    __atomic_load_n(&__tracepoint_##name.funcs, __ATOMIC_ACQUIRE);                 \
		unsigned long dft_i;                                                               \
		(void)__data;                                                                      \
		if (dft_fs)                                                                        \
			for (dft_i = 0; dft_i < dft_fs->n; dft_i++)                                \
				((void (*)(void *, proto))dft_fs->f[dft_i].func)(                  \
				    dft_fs->f[dft_i].data, args);                                  \
	}                                                                                          \
	DEFINE_STATIC_CALL(tp_func_##name, __traceiter_##name);                                    \
	struct dynftrace_tracepoint __tracepoint_##name = {#name,                                  \
							   &__tp_key_##name.key,                   \
							   &__SCK__tp_func_##name,                 \
							   (void *)__traceiter_##name,             \
							   raw,                                    \
							   fieldsfn,                               \
							   recsize,                                \
							   0,                                      \
							   {0, 0, 0, 0}};                          \
	__asm__(".pushsection dynftrace_tracepoints, \"aw\"\n\t"                                   \
		".balign 8\n\t"                                                                    \
		".quad __tracepoint_" #name "\n\t"                                                 \
		".popsection");

#define DYNFTRACE_DEFINE_TRACEPOINT(name, proto, args)                                             \
	DYNFTRACE_DEFINE_TRACEPOINT_(name, DYNFTRACE_PARAMS(proto), DYNFTRACE_PARAMS(args), 0, 0, 0)

#define DYNFTRACE_TRACEPOINT(name, proto, args)                                                    \
	DYNFTRACE_DECLARE_TRACEPOINT(name, DYNFTRACE_PARAMS(proto), DYNFTRACE_PARAMS(args))        \
	DYNFTRACE_DEFINE_TRACEPOINT(name, DYNFTRACE_PARAMS(proto), DYNFTRACE_PARAMS(args))

/* ---- typed events ------------------------------------------------------ */

/* Each field macro becomes a tuple (kind, type, arg); TP_FIELDS holds a
 * sequence of them, walked below with the alternating-macro idiom. */
#define tp_field(type, arg)	(DFTK_NUM, type, arg)
#define tp_field_string(arg)	(DFTK_STR, const char *, arg)
#define tp_field_ptr(type, arg) (DFTK_PTR, type, arg)

#define DFT_KIND_DFTK_NUM(t)   ((t)-1 < (t)1 ? DYNFTRACE_FIELD_INT : DYNFTRACE_FIELD_UINT)
#define DFT_KIND_DFTK_STR(t)   DYNFTRACE_FIELD_STRING
#define DFT_KIND_DFTK_PTR(t)   DYNFTRACE_FIELD_POINTER
#define DFT_SIGNED_DFTK_NUM(t) ((t)-1 < (t)1)
#define DFT_SIGNED_DFTK_STR(t) 0
#define DFT_SIGNED_DFTK_PTR(t) 0

#define DFT_CAT(a, b)  DFT_CAT_(a, b)
#define DFT_CAT_(a, b) a##b

#define DFT_MEM_A(k, t, n)                                                                         \
	t n;                                                                                       \
	DFT_MEM_B
#define DFT_MEM_B(k, t, n)                                                                         \
	t n;                                                                                       \
	DFT_MEM_A
#define DFT_MEM_A_END
#define DFT_MEM_B_END
/* Descriptors are assigned by statements (no commas: the sequence result
 * goes through DFT_CAT as one macro argument). */
#define DFT_DESC(k, t, n)                                                                          \
	dft_f[dft_i].name = #n;                                                                    \
	dft_f[dft_i].type = #t;                                                                    \
	dft_f[dft_i].kind = (unsigned int)DFT_KIND_##k(t);                                         \
	dft_f[dft_i].size = (unsigned int)sizeof(t);                                               \
	dft_f[dft_i].offset = (unsigned int)__builtin_offsetof(dft_rec_t, n);                      \
	dft_f[dft_i].is_signed = (unsigned int)DFT_SIGNED_##k(t);                                  \
	dft_i++;
#define DFT_DESC_A(k, t, n) DFT_DESC(k, t, n) DFT_DESC_B
#define DFT_DESC_B(k, t, n) DFT_DESC(k, t, n) DFT_DESC_A
#define DFT_DESC_A_END
#define DFT_DESC_B_END
#define DFT_CNT_A(k, t, n)                                                                         \
	char n;                                                                                    \
	DFT_CNT_B
#define DFT_CNT_B(k, t, n)                                                                         \
	char n;                                                                                    \
	DFT_CNT_A
#define DFT_CNT_A_END
#define DFT_CNT_B_END
#define DFT_FILL_A(k, t, n)                                                                        \
	dft_r.n = n;                                                                               \
	DFT_FILL_B
#define DFT_FILL_B(k, t, n)                                                                        \
	dft_r.n = n;                                                                               \
	DFT_FILL_A
#define DFT_FILL_A_END
#define DFT_FILL_B_END

#define DYNFTRACE_DEFINE_TRACEPOINT_EVENT(name, proto, args, fields)                               \
	struct __tp_rec_##name {                                                                   \
		DFT_CAT(DFT_MEM_A fields, _END)                                                    \
	};                                                                                         \
	struct __tp_cnt_##name { /* one char per field: sizeof is the count */                     \
		DFT_CAT(DFT_CNT_A fields, _END)                                                    \
	};                                                                                         \
	/* Called by the runtime under its tracepoint lock. */                                     \
	DYNFTRACE_NOTRACE static const struct dynftrace_tp_field *__tp_fields_##name(              \
	    unsigned int *dft_n)                                                                   \
	{                                                                                          \
		typedef struct __tp_rec_##name dft_rec_t;                                          \
		static struct dynftrace_tp_field dft_f[sizeof(struct __tp_cnt_##name)];            \
		unsigned int dft_i = 0;                                                            \
		DFT_CAT(DFT_DESC_A fields, _END)                                                   \
		*dft_n = dft_i;                                                                    \
		return dft_f;                                                                      \
	}                                                                                          \
	DYNFTRACE_NOTRACE static void __tp_raw_##name(void *__data, proto)                         \
	{                                                                                          \
		struct __tp_rec_##name dft_r;                                                      \
		const struct dynftrace_tp_raw_ctx *dft_c =                                         \
		    (const struct dynftrace_tp_raw_ctx *)__data;                                   \
		__builtin_memset(&dft_r, 0, sizeof(dft_r));                                        \
		DFT_CAT(DFT_FILL_A fields, _END)                                                   \
		dft_c->fn(dft_c->data, &__tracepoint_##name, &dft_r, (unsigned int)sizeof(dft_r)); \
	}                                                                                          \
	DYNFTRACE_DEFINE_TRACEPOINT_(name, DYNFTRACE_PARAMS(proto), DYNFTRACE_PARAMS(args),        \
				     (void *)__tp_raw_##name, __tp_fields_##name,                  \
				     (unsigned int)sizeof(struct __tp_rec_##name))

#define DYNFTRACE_TRACEPOINT_EVENT(name, proto, args, fields)                                      \
	DYNFTRACE_DECLARE_TRACEPOINT(name, DYNFTRACE_PARAMS(proto), DYNFTRACE_PARAMS(args))        \
	DYNFTRACE_DEFINE_TRACEPOINT_EVENT(name, DYNFTRACE_PARAMS(proto), DYNFTRACE_PARAMS(args),   \
					  fields)

/* ---- per-object registration ------------------------------------------- */

#ifndef DYNFTRACE_RUNTIME
extern struct dynftrace_tracepoint *const __start_dynftrace_tracepoints[]
    __attribute__((weak, visibility("hidden")));
extern struct dynftrace_tracepoint *const __stop_dynftrace_tracepoints[]
    __attribute__((weak, visibility("hidden")));

__attribute__((constructor(101), used)) static void dynftrace_tp_ctor_(void)
{
	dynftrace_tracepoint_table_register(__start_dynftrace_tracepoints,
					    __stop_dynftrace_tracepoints);
}

__attribute__((destructor(101), used)) static void dynftrace_tp_dtor_(void)
{
	dynftrace_tracepoint_table_unregister(__start_dynftrace_tracepoints,
					      __stop_dynftrace_tracepoints);
}
#endif

#ifdef __cplusplus
}
#endif
#endif /* DYNFTRACE_TRACEPOINT_H */
