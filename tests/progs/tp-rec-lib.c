// SPDX-License-Identifier: MIT
/* tp-rec-lib.c - a dlopen'd library with its own tracepoint (tests/sh/tp-record.sh). */
#include <dynftrace/tracepoint.h>

DYNFTRACE_TRACEPOINT_EVENT(tp_lib, TP_PROTO(unsigned long v, const char *who), TP_ARGS(v, who),
			   TP_FIELDS(tp_field(unsigned long, v) tp_field_string(who)))

void lib_hit(unsigned long v)
{
	trace_tp_lib(v, "lib");
}
