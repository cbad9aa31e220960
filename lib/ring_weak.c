/* TEMPORARY: weak stand-ins until lib/ring.c lands (same session). */
#include <time.h>
#include "ring.h"
__attribute__((weak)) int ring_init(const struct ring_config *cfg) { (void)cfg; return -38; }
__attribute__((weak)) void ring_shutdown(void) {}
__attribute__((weak)) uint8_t *ring_event_begin(unsigned id, size_t payload, uint64_t *ts) { (void)id; (void)payload; *ts = 0; return 0; }
__attribute__((weak)) void ring_event_end(uint8_t *p) { (void)p; }
__attribute__((weak)) void ring_count_lost(uint64_t n) { (void)n; }
__attribute__((weak)) uint64_t ring_now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec; }
__attribute__((weak)) void ring_thread_exit(void) {}
__attribute__((weak)) void ring_atfork_child(void) {}
