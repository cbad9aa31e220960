/* The program half of tests/sh/filter-objects.sh: a twin() of its own,
 * called 3 times, and the library's lib_run() once (5 calls of the
 * library's twin()). Prints the sum, the same traced or not. */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

int lib_run(void);

static NOINLINE int twin(int x)
{
	return x * 3 + 2;
}

int main(void)
{
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += twin(i);
	s += lib_run();
	printf("sum %d\n", s);
	return 0;
}
