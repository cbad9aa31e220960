/* SPDX-License-Identifier: MIT */
/*
 * session.c - the recording session's state, which the tracers (trace.c)
 * and the tracepoint recorder (tp_record.c) both read: what is recorded
 * and where (trace_int.h says who writes each field when).
 */
#include "trace_int.h"

HIDDEN struct trace_cfg trace_cfg;
HIDDEN int trace_rec_on;
HIDDEN int trace_ring_on;
