/* SPDX-License-Identifier: MIT */
/* clock.h - the trace clock (clock.c). */
#ifndef DYNFTRACE_CLOCK_H
#define DYNFTRACE_CLOCK_H

#include <stdint.h>

#include "internal.h"

/* CLOCK_MONOTONIC from the vDSO, in ns. */
uint64_t clock_mono_ns(void) HIDDEN;
/* ring_init: the source (DYNFTRACE_CLOCK, else the counter when it ticks
 * at a constant rate), and calibration started. */
void clock_configure(void) HIDDEN;
/* The consumer, on every wake-up: calibrate and re-synchronise the
 * counter's scale; ns until it wants to run again (UINT64_MAX: never). */
uint64_t clock_tick(void) HIDDEN;

#endif
