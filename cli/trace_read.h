/* SPDX-License-Identifier: MIT */
/*
 * trace_read.h - the reader of a session directory (docs/FORMAT.md), for
 * the commands that print one. Three layers, each using only those below:
 *
 *   trace_merge.h    streams merged in time order; a stream's call stack
 *   trace_stream.h   one stream decoded and checked (lib/ring/format.h);
 *                    the losses and first time known once streams are read
 *   trace_session.h  the directory opened: info, sites, maps, the stream
 *                    files mapped; function names
 *
 * Errors are negative errno values: -ENOENT (no such session), -EINVAL
 * (damaged file; the message says which and where), -ENOMEM. Not
 * thread-safe: one session per thread.
 */
#ifndef DYNFTRACE_TRACE_READ_H
#define DYNFTRACE_TRACE_READ_H

#include "trace_session.h"
#include "trace_stream.h"
#include "trace_merge.h"

#endif
