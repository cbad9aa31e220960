/* SPDX-License-Identifier: MIT */
/*
 * ring_int.h - what ring.c (buffers, writer, consumer) and ring_flush.c
 * (the emergency flush) share. Concurrency: ring.c's design comment and
 * field tables; the emergency flush takes over from the consumer through
 * emerg_enter/emerg_yield/emerg_leave.
 */
#ifndef DYNFTRACE_RING_INT_H
#define DYNFTRACE_RING_INT_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "internal.h"
#include "ring_fast.h"

struct ring_buf;

enum { RING_OFF = 0, RING_ON = 1, RING_STOPPING = 2 };

/* The emergency flush's hand-over with the consumer (ring.c, end): the
 * state machine, who holds it, and the info lines both write. */
enum { EM_IDLE = 0, EM_CONSUMER = 1, EM_WANT = 2, EM_DYING = 3 };
#define EMERG_WAIT_NS 5000000000ull /* for the consumer's hand-over */
extern uint32_t emerg_state HIDDEN;
extern pid_t emerg_owner HIDDEN;
extern pid_t emerg_by HIDDEN;
extern uint32_t emerg_done HIDDEN;
extern pid_t emerg_pid HIDDEN;
extern int emerg_disk_error HIDDEN;
void emerg_handover(void) HIDDEN;
uint64_t emerg_ns(void) HIDDEN;

/* ring.c: state, the buffer list, the session's paths */
extern int ring_state HIDDEN; /* RING_OFF, RING_ON, RING_STOPPING */
extern pthread_mutex_t list_lock HIDDEN;
extern struct ring_buf *ring_head HIDDEN;
extern char ctf_dir[PATH_MAX] HIDDEN;
extern char info_path[PATH_MAX] HIDDEN;
extern char image_key[32] HIDDEN; /* IMG of the stream files; "": the pid */
extern int have_info HIDDEN;
extern int cfg_overwrite HIDDEN;
extern int disk_error HIDDEN;
extern int ring_disk HIDDEN; /* a session directory (else the buffers are memory only) */
/* Readers (ring_read.c) walk the list and hold buffers (refs) under it;
 * the consumer unlinks and frees under it (inside list_lock). */
extern pthread_mutex_t read_lock HIDDEN;
extern unsigned long ring_fork_gen HIDDEN; /* bumped in a fork child */

/* ring.c: buffers, pages, streams, the consumer */
struct ring_buf *buf_create(void) HIDDEN;
void buf_flush(struct ring_buf *b, bool stuck) HIDDEN;
void *buf_map(size_t len, size_t head, pid_t tid, char *shm_path, uint64_t *populated) HIDDEN;
void consumer_final(void) HIDDEN;
uint8_t *page_addr(struct ring_buf *b, uint64_t vp) HIDDEN;
bool page_complete(struct ring_buf *b, uint64_t vp, uint64_t *cw) HIDDEN;
size_t page_len(struct ring_buf *b, uint8_t *page) HIDDEN;
void ring_quiesce(void) HIDDEN;
void ring_wake_force(void) HIDDEN;
int stream_open(struct ring_buf *b) HIDDEN;
/* Every event of B that is not in its stream (list_lock, or a quiet B). */
static inline uint64_t buf_total_lost(const struct ring_buf *b)
{
	return __atomic_load_n(&b->lost, __ATOMIC_RELAXED) +
	       __atomic_load_n(&b->overwritten, __ATOMIC_RELAXED) + b->lost_consumer;
}
long sys_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts) HIDDEN;
pid_t sys_gettid(void) HIDDEN;

/* ring.c: the hand-over's operations, and the async-signal-safe info
 * lines both use */
bool emerg_enter(void) HIDDEN;
bool emerg_yield(void) HIDDEN;
bool emerg_leave(void) HIDDEN;
void emerg_reset(bool all) HIDDEN;
void emerg_wait_done(void) HIDDEN;
bool emerg_cat(char **p, char *end, const char *s) HIDDEN;
bool emerg_cat_u64(char **p, char *end, uint64_t v) HIDDEN;
void emerg_info_line(const char *line, size_t len) HIDDEN;
void info_img_line(const char *key, bool has_n, uint64_t n) HIDDEN;
void info_started(void) HIDDEN;

/* ring_fork.c: the forking thread's events while it has no buffer. */
void fork_side_open(void) HIDDEN; /* ring_atfork_prepare (list_lock) */
/* ring_event_begin/end and lost events of the forking thread meanwhile. */
uint8_t *fork_side_begin(unsigned id, size_t payload, uint64_t *tsp) HIDDEN;
void fork_side_end(uint8_t *payload) HIDDEN;
void fork_side_lost(uint64_t n) HIDDEN;
pid_t fork_side_pid(void) HIDDEN; /* getpid(2) itself */
/* Process ME's next committed record from *POS (0: the first): its
 * payload, or NULL after the last. */
const uint8_t *fork_side_next(uint64_t *pos, pid_t me, unsigned *id, size_t *len,
			      uint64_t *ts) HIDDEN;
/* The events of ME that fork_side_next does not give (ALL: and those it
 * does): the losses, and records never committed. */
uint64_t fork_side_own_lost(pid_t me, bool all) HIDDEN;

#endif
