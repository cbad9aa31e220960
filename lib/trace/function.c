/* SPDX-License-Identifier: MIT */
/*
 * function.c - the function tracer: one event per call, the site's id and
 * the caller's return address, into the thread's ring: a function_near
 * event (8 bytes) when the caller lies near the function, else a
 * `function` event (14, format.h). Its sites take the graph shortcut's
 * thunks like function_graph's (tramp.S: GRAPH_ENTRY writes the near
 * event itself); trace_function_write is the rest of the work.
 */
#include <stdint.h>
#include <string.h>

#include "dynftrace/dynftrace.h"
#include "ring.h"
#include "sites.h"
#include "trace_int.h"

/* The event of a call of site ID at address IP (0: unknown) from PARENT. */
HIDDEN void trace_function_write(uint32_t id, uintptr_t ip, uintptr_t parent)
{
	uint64_t ts, near;
	if (!trace_ring_is_on())
		return;
	if (ip && fmt_near_pack(id, ip, parent, &near)) {
		uint8_t *p = ring_event_begin(RING_EV_FUNCTION_NEAR, 6, &ts);
		if (p) {
			memcpy(p, &near, 6);
			ring_event_end(p);
		}
		return;
	}
	uint8_t *p = ring_event_begin(RING_EV_FUNCTION, 12, &ts);
	if (p) {
		memcpy(p, &id, 4);
		uint64_t pip = parent;
		memcpy(p + 4, &pip, 8);
		ring_event_end(p);
	}
}

void trace_function_func(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
			 struct dynftrace_regs *regs)
{
	(void)ops;
	(void)regs;
	uint32_t id = site_id_lookup(ip);
	if (unlikely(id == UINT32_MAX))
		return;
	trace_function_write(id, ip, parent_ip);
}
