// SPDX-License-Identifier: MIT
/* s-recursion: a recursive function, and mutual recursion. */
#include "golden.h"

GOLDEN_SINK;

NOINLINE int fact(int n)
{
	int r = n <= 1 ? 1 : n * fact(n - 1);

	sink++;
	return r;
}

NOINLINE int is_odd(int n);
NOINLINE int is_even(int n)
{
	int r = n == 0 ? 1 : is_odd(n - 1);

	sink++;
	return r;
}
NOINLINE int is_odd(int n)
{
	int r = n == 0 ? 0 : is_even(n - 1);

	sink++;
	return r;
}

int main(void)
{
	int r = fact(4);

	r += is_even(3);
	return r == 24 ? 0 : 1;
}
