/* A dlopen'd library with its own static key, static call and tracepoint,
 * and a branch on a key defined in the program. */
#include <dynftrace/tracepoint.h>

DEFINE_STATIC_KEY_FALSE(lib_key);
DECLARE_STATIC_KEY_FALSE(prog_key);

static int lib_f1(int x)
{
	return x + 10;
}
static int lib_f2(int x)
{
	return x + 20;
}
DEFINE_STATIC_CALL(lib_call, lib_f1);
DYNFTRACE_TRACEPOINT(lib_tp, TP_PROTO(int x), TP_ARGS(x))

int lib_branch(void)
{
	return static_branch_unlikely(&lib_key) ? 1 : 0;
}
int lib_prog_branch(void)
{
	return static_branch_likely(&prog_key) ? 1 : 0;
}
int lib_key_set(int on)
{
	return on ? static_branch_enable(&lib_key) : static_branch_disable(&lib_key);
}
int lib_callit(int x)
{
	return static_call(lib_call)(x) + 0;
}
int lib_call_set(int which)
{
	return static_call_update(lib_call, which ? lib_f2 : lib_f1);
}
void lib_trace(int x)
{
	trace_lib_tp(x);
}
