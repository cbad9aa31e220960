/* SPDX-License-Identifier: MIT */
/*
 * ring_fork.c - what the forking thread traces while it has no buffer.
 *
 * From ring_atfork_prepare to the parent's or the child's fork handler the
 * forking thread writes into no buffer: the child shares its parent's
 * until it unmaps them (ring.c, section 6). The runtime's fork bracket
 * (init.c: its handlers and the C library's work between them run as the
 * runtime's own, untraced) still leaves the exits of frames entered before
 * it: with the C library patched, the function that runs the prepare
 * handlers returns inside the window. Exits carry no function, so one lost
 * exit made the reader close the wrong frame at every fork.
 *
 * Here each event of the window is kept with its time and the id of the
 * process that wrote it (the fork happens in the middle of the window).
 * The parent's handler (ring.c) writes the parent's records into its
 * buffer, in order and with their own times. In the child, whose stream
 * starts after its handler, its own are counted lost; the rest are the
 * parent's.
 *
 * One area per process, owned by the forking thread and its signal
 * handlers: forks are serialised by ring.c's list_lock, held from
 * ring_atfork_prepare (fork_side_open) to the end of the parent's
 * handler; the child's handler runs in the only thread of the child, on
 * its own copy. Records are reserved by
 * local_cmpxchg on used: a signal handler of the owner may write one.
 */
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "clock.h"
#include "ring.h"
#include "ring_fast.h"
#include "ring_int.h"

/* One event: its payload follows, padded to 8 bytes. */
struct side_rec {
	uint64_t ts;
	int32_t pid;
	uint16_t id;
	uint16_t len;
	uint32_t done; /* committed (fork_side_end) */
	uint32_t unused;
};

#define SIDE_BYTES 4096 /* the window holds a few exits; ~150 events */

static struct {
	pid_t fork_pid;	   /* the parent's id: set by fork_side_open */
	uint64_t used;	   /* bytes of rec[] reserved (local_cmpxchg) */
	uint64_t lost_par; /* events of the parent that did not fit */
	uint64_t lost_chi; /* events of the child that did not fit */
	_Alignas(8) uint8_t rec[SIDE_BYTES];
} side;

pid_t fork_side_pid(void)
{
	return (pid_t)syscall(SYS_getpid);
}

/* Count N events lost in the window, for the process that lost them. */
void fork_side_lost(uint64_t n)
{
	local_add(fork_side_pid() == side.fork_pid ? &side.lost_par : &side.lost_chi, n);
}

void fork_side_open(void)
{
	side.fork_pid = fork_side_pid();
	side.used = side.lost_par = side.lost_chi = 0;
}

uint8_t *fork_side_begin(unsigned id, size_t payload, uint64_t *tsp)
{
	uint64_t size = sizeof(struct side_rec) + ((payload + 7) & ~(size_t)7);
	pid_t me = fork_side_pid();
	uint64_t off, ts;
	/* The offset before the clock, as the ring does: a handler's record
	 * in between fails our cmpxchg, so times never go back in rec[]. */
	do {
		off = __atomic_load_n(&side.used, __ATOMIC_RELAXED);
		if (id > UINT16_MAX || payload > RING_PAYLOAD_MAX || off + size > SIDE_BYTES) {
			local_add(me == side.fork_pid ? &side.lost_par : &side.lost_chi, 1);
			return NULL;
		}
		barrier();
		ts = ring_now();
	} while (!local_cmpxchg(&side.used, off, off + size));
	struct side_rec *r = (void *)(side.rec + off);
	r->ts = *tsp = ts;
	r->pid = me;
	r->id = (uint16_t)id;
	r->len = (uint16_t)payload;
	r->done = 0;
	return (uint8_t *)(r + 1);
}

void fork_side_end(uint8_t *payload)
{
	if (payload < side.rec + sizeof(struct side_rec) || payload > side.rec + SIDE_BYTES)
		return; /* not ours: nothing to commit */
	barrier();	/* the payload before done: a handler's flush reads both */
	((struct side_rec *)payload - 1)->done = 1;
}

const uint8_t *fork_side_next(uint64_t *pos, pid_t me, unsigned *id, size_t *len, uint64_t *ts)
{
	while (*pos < side.used) {
		const struct side_rec *r = (const void *)(side.rec + *pos);
		*pos += sizeof(*r) + ((r->len + 7u) & ~7u);
		if (r->pid != me || !r->done)
			continue; /* the other process's, or never committed */
		*id = r->id;
		*len = r->len;
		*ts = r->ts;
		return (const uint8_t *)(r + 1);
	}
	return NULL;
}

uint64_t fork_side_own_lost(pid_t me, bool all)
{
	uint64_t n = me == side.fork_pid ? side.lost_par : side.lost_chi;
	for (uint64_t off = 0; off < side.used;) {
		const struct side_rec *r = (const void *)(side.rec + off);
		n += r->pid == me && (all || !r->done);
		off += sizeof(*r) + ((r->len + 7u) & ~7u);
	}
	return n;
}
