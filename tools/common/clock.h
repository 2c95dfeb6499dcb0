/* clock.h - the one clock of the tools (nsearch, nsearch-bench, nsearch-ab):
 * a monotonic wall clock, for timing a search or a file, never the date. */
#ifndef NS_TOOL_CLOCK_H
#define NS_TOOL_CLOCK_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC: no jumps when the
 * date is set). */
double tool_seconds(void);

/* The same in milliseconds. */
static inline double tool_ms(void)
{
    return 1e3 * tool_seconds();
}

#endif /* NS_TOOL_CLOCK_H */
