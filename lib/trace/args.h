/* SPDX-License-Identifier: MIT */
/*
 * args.h - function arguments and return values for the function_graph
 * tracer: uftrace's -A/-R specifications (argspec.h) by site, captured
 * from the trampoline's saved registers at entry and from the return
 * trampoline's at return, written as entry_args and exit_retval events
 * (format.h).
 *
 * Only the sites with a specification pay: they leave the graph shortcut
 * (ops.c asks args_site_generic, through trace.c's route question) and
 * take the per-ops stub or CALL_OPS, whose full trampoline body saves the
 * argument registers (integer and vector) in struct dynftrace_regs;
 * trace_graph_func then writes entry_args instead of entry, and marks the
 * frame SE_RETVAL when the return value is wanted, which keeps its return
 * off the fast exits (they take SE_RING frames only) so that
 * dft_graph_return writes exit_retval from the registers dft_return_tramp
 * saved. Every other site keeps its route and its cost.
 *
 * | state      | written by                              | read by              |
 * |------------|-----------------------------------------|----------------------|
 * | args_set   | patch_lock holder (args_set_spec)       | patch_lock holders   |
 * | trace_args | patch_lock holder (args_rebuild), old   | callbacks (RCU)      |
 * |            | map and its set freed after a grace     |                      |
 * |            | period                                  |                      |
 */
#ifndef DYNFTRACE_ARGS_H
#define DYNFTRACE_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "argspec.h"
#include "internal.h"

/* By site id: 0, or an index into pool (merged specifications). */
struct args_map {
	uint32_t n;
	uint32_t npool;
	struct arg_spec *pool; /* pool[0] unused */
	uint16_t idx[];
};
extern struct args_map *trace_args HIDDEN;

/*
 * Replace the specifications with SPEC ("PAT@items;PAT@items", items as
 * argspec_parse takes them, retval included; "" for none), rebuild the
 * map and re-route the sites whose need changed. patch_lock held. 0,
 * -EINVAL with one sentence in WHY, -ENOMEM.
 */
int __args_set_spec(const char *spec, char *why, size_t whylen) HIDDEN;
/* The specifications as set, one "PAT@items" a line, into BUF (patch_lock held). */
int __args_spec_text(char *buf, size_t size) HIDDEN;
/* Any specification? */
int args_any(void) HIDDEN;
/* Rebuild trace_args from the site table (patch_lock held): new objects. */
void args_rebuild(void) HIDDEN;
/* ops.c's question, through trace.c: must S leave the graph shortcut? */
struct site;
int args_site_generic(const struct site *s) HIDDEN;

/* The specification of site ID, or NULL (callbacks, under RCU). */
static inline const struct arg_spec *args_of(uint32_t id)
{
	const struct args_map *m = __atomic_load_n(&trace_args, __ATOMIC_ACQUIRE);
	if (__builtin_expect(m == NULL, 1) || id >= m->n || !m->idx[id])
		return NULL;
	return &m->pool[m->idx[id]];
}

/* Encode the arguments of SPEC from REGS into BUF (FMT_ARGS_BUF bytes):
 * the payload's values after its len (format.h: the count, the items),
 * their length returned. The largest item is a string: kind, slot, the
 * bytes kept and a NUL. */
#define FMT_ARGS_BUF (1 + FMT_ARGS_MAX * (2 + FMT_ARG_STR_MAX + 1))
struct dynftrace_regs;
size_t args_encode_entry(const struct arg_spec *spec, const struct dynftrace_regs *regs,
			 uint8_t *buf) HIDDEN;
/* The same from the integer arguments INTS[NINTS] of a call the runtime
 * makes itself (an exec wrapper's): floating-point ones are 0. */
size_t args_encode_values(const struct arg_spec *spec, const unsigned long *ints, unsigned nints,
			  uint8_t *buf) HIDDEN;
/* The return value of SPEC from RETVAL, the return trampoline's saved
 * results (ALL: dft_return_tramp_all's frame), into BUF: its length. */
size_t args_encode_ret(const struct arg_spec *spec, const unsigned long *retval, int all,
		       uint8_t *buf) HIDDEN;

#endif
