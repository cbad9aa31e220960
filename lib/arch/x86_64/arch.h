/* SPDX-License-Identifier: MIT */
/* arch.h - what the generic runtime asks of an architecture backend. */
#ifndef DYNFTRACE_ARCH_H
#define DYNFTRACE_ARCH_H
#include <stdint.h>
#include "internal.h"

uintptr_t arch_trap_addr(void *uc) HIDDEN;
void arch_set_ip(void *uc, uintptr_t ip) HIDDEN;
void arch_emulate(void *uc, uintptr_t addr, const uint8_t *insn, int len) HIDDEN;
int arch_insn_emulatable(const uint8_t *insn, int len) HIDDEN;
unsigned arch_vec_kind(void) HIDDEN; /* VEC_SSE, VEC_AVX or VEC_AVX512 (regs.h) */

/* Trampoline template (tramp.S) */
extern const char dft_caller_tmpl[] HIDDEN;
extern const char dft_caller_tmpl_end[] HIDDEN;
extern const char dft_caller_tmpl_slot[] HIDDEN;
extern const char dft_caller_tmpl_vec[] HIDDEN;
extern const char dft_ops_tmpl[] HIDDEN;
extern const char dft_ops_tmpl_end[] HIDDEN;
extern const char dft_ops_tmpl_slot[] HIDDEN;
extern const char dft_ops_tmpl_vec[] HIDDEN;
extern const char dft_ops_light_tmpl[] HIDDEN;
extern const char dft_ops_light_tmpl_end[] HIDDEN;
extern const char dft_ops_light_tmpl_full[] HIDDEN;
extern const char dft_ops_light_tmpl_table[] HIDDEN;
extern const char dft_ops_light_tmpl_stub0[] HIDDEN;
extern const char dft_ops_light_tmpl_tls[] HIDDEN;
extern const char dft_ops_light_tmpl_seq[] HIDDEN;
extern const char dft_ops_light_tmpl_gp[] HIDDEN;
extern const char dft_callops_light_tmpl[] HIDDEN;
extern const char dft_callops_light_tmpl_end[] HIDDEN;
extern const char dft_callops_light_tmpl_full[] HIDDEN;
extern const char dft_callops_light_tmpl_tls[] HIDDEN;
extern const char dft_callops_light_tmpl_seq[] HIDDEN;
extern const char dft_callops_light_tmpl_gp[] HIDDEN;
extern const char dft_gentry_tmpl[] HIDDEN;
extern const char dft_gentry_tmpl_end[] HIDDEN;
extern const char dft_gentry_tmpl_fast[] HIDDEN;
extern const char dft_graph_entry[] HIDDEN;
extern const char dft_gexit_tmpl[] HIDDEN;
extern const char dft_gexit_tmpl_end[] HIDDEN;
extern const char dft_gexit_tmpl_fast[] HIDDEN;
extern const char dft_graph_exit[] HIDDEN;
#endif
