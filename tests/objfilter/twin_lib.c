/* The library half of tests/sh/filter-objects.sh: a twin() of its own,
 * called 5 times per lib_run(). */
#define NOINLINE __attribute__((noinline))

static NOINLINE int twin(int x)
{
	return x * 7 + 1;
}

NOINLINE int lib_run(void)
{
	int s = 0;
	for (int i = 0; i < 5; i++)
		s += twin(i);
	return s;
}
