/* clock.c - see clock.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "clock.h"

#include <time.h>

double tool_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
