/* SPDX-License-Identifier: MIT */
/*
 * calltree.h - the calls of a session aggregated by call path (a calling
 * context tree): one node per distinct path of function names from a
 * thread's outermost call, with its calls, total and self time. The flame
 * graphs (dump --flame-graph, --svg) and `graph` print it.
 *
 * It is built by walking each selected stream's call stack (trace_merge.h,
 * tr_walk) from the reader's decoded events: memory grows with the number
 * of distinct call paths and the threads' nesting depth, not with the
 * session's length. Threads and processes are merged by function name.
 *
 * Time is counted inside the selected range only (cli_select): a call
 * counts the part of it that lies in the range, and is counted as a call
 * when any part does. Calls still open when their thread's trace ended end
 * there. Whole calls of -t recordings (TR_CALL) carry no nesting: each
 * counts at the stack of entries open around it, all its time as its own.
 * Function-tracer events (TR_FUNCTION) have no duration: they count as
 * calls without time, at that stack.
 */
#ifndef DYNFTRACE_CALLTREE_H
#define DYNFTRACE_CALLTREE_H

#include <stdint.h>

#include "cli.h"
#include "strtab.h"
#include "trace_read.h"

struct ct_node {
	uint32_t name;	      /* id in calltree.names */
	uint32_t parent;      /* node index; node 0 is the root (no name) */
	uint32_t child, next; /* first child, next sibling; 0 for none */
	uint64_t calls;
	uint64_t total_ns; /* inside the call, callees included */
	uint64_t self_ns;  /* total_ns minus the callees' */
};

struct calltree {
	struct ct_node *node;
	size_t n, cap;
	uint32_t *slot; /* (parent, name) -> node index + 1 */
	size_t nslot;
	struct strtab names;
};

/*
 * What to build. FOCUS (graph FUNC): only the calls made inside a call of a
 * function it matches, that call's outermost activation becoming a child
 * of the root; the paths that led to those calls go into BACKTRACES (its
 * nodes' calls and total_ns are set on the matched function's node, the
 * end of each path). Without FOCUS every call counts.
 */
struct ct_build {
	const struct cli_select *sel;
	const struct cli_globs *focus;
	struct calltree *backtraces;
};

int ct_init(struct calltree *t);
void ct_free(struct calltree *t);
/* The child of node PARENT named NAME, added when new: its index, or
 * -ENOMEM. The node array may move. */
int64_t ct_child(struct calltree *t, uint32_t parent, uint32_t name);
/* Build T (initialised, possibly holding nodes already) from the streams of
 * S: 0, a damaged stream leaves what came before it (the view reports it
 * with views_finish), -ENOMEM. */
int ct_build(struct calltree *t, struct tr_session *s, const struct ct_build *b);
/* Sort every node's children: by name when BY_NAME, else by total time,
 * longest first (ties by name). -ENOMEM. */
int ct_sort(struct calltree *t, int by_name);
/* The depth of the deepest node with calls (the root is depth 0). */
unsigned ct_depth(const struct calltree *t);

#endif
