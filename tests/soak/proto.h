/* SPDX-License-Identifier: MIT */
/*
 * proto.h - the soak test's request/response protocol and the reference
 * answer (tests/soak/server.c computes it through traced functions; the
 * load generator, tests/soak/client.c, checks every answer against this).
 *
 *   request:  "GET <seq> <key>\n"      key: 1..64 of [a-z0-9]
 *   response: "VAL <seq> <16 hex digits>\n", or "ERR <seq>\n" for a bad request
 */
#ifndef SOAK_PROTO_H
#define SOAK_PROTO_H
#include <stdint.h>
#include <string.h>

/* FNV-1a, 4 rounds with a different seed each: a little work per request. */
static inline uint64_t soak_reference(const char *key, size_t len)
{
	uint64_t v = 0;
	for (int round = 0; round < 4; round++) {
		uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)round;
		for (size_t i = 0; i < len; i++) {
			h ^= (unsigned char)key[i];
			h *= 0x100000001b3ull;
		}
		v ^= h + (v << 6) + (v >> 2);
	}
	return v;
}

#endif
