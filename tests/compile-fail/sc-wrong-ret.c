/* A function whose return type differs. */
// expect: differs from the static call|invalid conversion|cannot initialize|cannot convert
#include "common.h"

static void wrong(int x)
{
	(void)x;
}

int main(void)
{
	return static_call_update(sc, wrong);
}
