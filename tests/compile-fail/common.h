/* Shared by the compile-fail cases: one static call of type int (int). */
#include <stddef.h>
#include <dynftrace/static_call.h>

static int good(int x)
{
	return x;
}
DEFINE_STATIC_CALL(sc, good);
