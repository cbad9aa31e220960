/* SPDX-License-Identifier: MIT */
/*
 * session.c - the tracers' shared state, which the tracers (trace.c,
 * graph.c, the assembly) and the tracepoint recorder (tp_record.c) read:
 * what is recorded and where, the graph roots (trace_int.h says who writes
 * each field when).
 */
#include "trace_int.h"

HIDDEN struct trace_cfg trace_cfg;
HIDDEN int trace_rec_on;
HIDDEN int trace_ring_on;
HIDDEN int trace_ring_made;
HIDDEN struct root_map *trace_roots;
