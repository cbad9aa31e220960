/* SPDX-License-Identifier: MIT */
/*
 * function.c - the function tracer: one event per call, the site's id and
 * the caller's return address, into the thread's ring.
 */
#include <stdint.h>
#include <string.h>

#include "dynftrace/dynftrace.h"
#include "ring.h"
#include "sites.h"
#include "trace_int.h"

void trace_function_func(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
			 struct dynftrace_regs *regs)
{
	(void)ops;
	(void)regs;
	uint32_t id = site_id_lookup(ip);
	if (unlikely(id == UINT32_MAX))
		return;
	uint64_t ts;
	uint8_t *p = trace_ring_on ? ring_event_begin(RING_EV_FUNCTION, 12, &ts) : NULL;
	if (p) {
		memcpy(p, &id, 4);
		uint64_t pip = parent_ip;
		memcpy(p + 4, &pip, 8);
		ring_event_end(p);
	}
}
