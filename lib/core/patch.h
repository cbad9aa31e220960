/* SPDX-License-Identifier: MIT */
/*
 * patch.h - the live code patching engine (generic part: lib/core/patch.c; the
 * instruction-level part is in lib/arch/<arch>/).
 *
 * Everything that rewrites code in a running process goes through here:
 * function sites, static keys, static calls. A batch changes any number of
 * instructions with the breakpoint protocol and exactly 3 cross-thread syncs
 * (see the protocol comment in patch.c).
 *
 * Locking: patch_lock() is one process-wide recursive mutex. Callers hold it
 * around patch_batch() and the point-set functions, and around their own
 * bookkeeping of what is patched.
 */
#ifndef DYNFTRACE_PATCH_H
#define DYNFTRACE_PATCH_H

#include <stddef.h>
#include <stdint.h>

#define PATCH_MAX_LEN 8

/* One instruction change. LEN bytes at ADDR go from OLD to NEW. NEW must be
 * one instruction the trap handler can emulate: call rel32 (e8), jmp rel32
 * (e9), ret (c3, padded), or NOPs. */
struct patch_entry {
	uintptr_t addr;
	uint8_t len; /* 1..PATCH_MAX_LEN; 5 for every current user */
	uint8_t old[PATCH_MAX_LEN];
	uint8_t new[PATCH_MAX_LEN];
};

void patch_lock(void);
/* 1 with the lock taken, 0 if another thread holds it (never waits). */
int patch_trylock(void);
void patch_unlock(void);

/* Is the calling thread holding patch_lock? */
int patch_lock_held(void);

/*
 * Declare instruction addresses that batches may patch (sorted or not). The
 * trap handler uses this set to recognise a late breakpoint hit after its
 * batch has finished. Caller holds patch_lock. 0 or -ENOMEM.
 */
int patch_points_add(const uintptr_t *addrs, size_t n);

/* Forget every point in [lo, hi) (an object was unloaded). Caller holds
 * patch_lock. */
void patch_points_remove_range(uintptr_t lo, uintptr_t hi);

/*
 * Apply N changes with the breakpoint protocol: 3 syncs whatever N. ENTRIES
 * may be in any order (the engine sorts its own copy); addresses must be
 * distinct and declared with patch_points_add. Every entry's current bytes are
 * compared with OLD first; on a mismatch nothing is written and -EFAULT is
 * returned with the reason in patch_last_error(). A write failure midway
 * rolls every entry back to OLD and returns -EIO (or the mprotect error).
 * Caller holds patch_lock. Safe while other threads run the code.
 */
int patch_batch(const struct patch_entry *entries, size_t n);

/*
 * Rewrite code that no other thread can be running yet (an object being
 * loaded): compare, then write all bytes directly under one protection
 * change, no breakpoint. Caller holds patch_lock.
 */
int patch_write_early(const struct patch_entry *entries, size_t n);

/*
 * The same write in two steps, for code that other threads may be running
 * but cannot be inside while the commit runs (every thread but the caller
 * stopped by a debugger-like agent, see attach.c). Prepare (allocates,
 * reads /proc/self/maps) while the program runs; commit compares again and
 * writes with no allocation and no lock but the caller's patch_lock, so it
 * cannot wait for a stopped thread. Free afterwards. Caller holds
 * patch_lock for all three.
 */
struct patch_prep;
int patch_early_prepare(const struct patch_entry *entries, size_t n, struct patch_prep **out);
/* The same for any code as NEW (a relocated entry's original bytes back):
 * the commit is the only write, so no breakpoint meets it. */
int patch_early_prepare_raw(const struct patch_entry *entries, size_t n, struct patch_prep **out);
int patch_early_commit(struct patch_prep *p);
void patch_early_free(struct patch_prep *p);

/*
 * Write data that lives in code pages but is never executed (CALL_OPS
 * literals): compare OLD, then store NEW; an aligned 8-byte entry is one
 * atomic store, so readers see the old or the new value whole. One
 * protection change for all entries; no breakpoint, no sync. Caller holds
 * patch_lock.
 */
int patch_write_data(const struct patch_entry *entries, size_t n);

/*
 * Code that threads may be running, each entry one instruction of at most
 * 8 bytes inside one aligned 8-byte word (ADDR 8-aligned, LEN 8: the
 * instruction, then the bytes after it unchanged): one atomic store per
 * word, then every core serialises (arch_sync_core). No breakpoint: a
 * thread that meets it with SIGTRAP blocked (the C library blocks every
 * signal in places: a new thread's start, fork) is never killed. Entries
 * sorted by address. -EOPNOTSUPP: the code can only be written through
 * /proc/self/mem, not in one store (use patch_batch). Caller holds
 * patch_lock.
 */
int patch_write_atomic(const struct patch_entry *entries, size_t n);

/* Detach: free the declared patch points (nothing will be patched). */
void patch_detach_free(void);

/* Text of the last patch error, for messages. */
const char *patch_last_error(void);
/* The address the last error is about (0 if none): lets callers name it. */
uintptr_t patch_last_error_addr(void);

/* Counters (read without the lock; approximate while a batch runs). */
struct patch_counters {
	unsigned long batches, syncs, sites_patched, traps, late_traps, early_writes;
	unsigned long last_batch_ns, last_batch_sites;
};
void patch_get_counters(struct patch_counters *c);

/* Set up the trap handler and the sync mechanism; idempotent. 0 or -errno. */
/* INSTALL puts the SIGTRAP handler in place (the signal layer's
 * dft_trap_handler_install); called again before every batch. */
int patch_init(int (*install)(int (*handle)(siginfo_t *si, void *uc)));

#endif
