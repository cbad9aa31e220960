// SPDX-License-Identifier: MIT
/* s-regex-replay: the call graph of calls.h replayed with the options of s-regex-replay.ropts. */
#include "calls.h"
