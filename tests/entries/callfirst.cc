// SPDX-License-Identifier: MIT
// callfirst.cc - mid() begins with a call (g++ -O2: sub $8,%rsp; call
// thrower): relocated, its callee returns into mid itself, so exceptions
// thrown in thrower() unwind through it (tests/sh/entries.sh).
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
__attribute__((noinline)) int thrower(int x) { if (x % 3 == 0) throw std::runtime_error("x"); return x; }
__attribute__((noinline)) int mid(int x) { return thrower(x) * 2 + 1; }
int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 9, s = 0, caught = 0;
	for (int i = 0; i < n; i++) {
		try { s += mid(i); } catch (const std::exception &) { caught++; }
	}
	printf("%d %d\n", s, caught);
	return 0;
}
