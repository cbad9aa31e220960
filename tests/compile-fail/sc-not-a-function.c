/* Something that is not a function at all. */
// expect: differs from the static call|invalid conversion|cannot initialize|cannot convert
#include "common.h"

int main(void)
{
	long v = 42;
	return static_call_update(sc, v);
}
