/* counting_sort.c - bucketing particles by a key (cell or hash bucket):
 * the serial counting sort and prefix sums. */
#include "core.h"

#include <string.h>

/* count per key, partial sums as entry points, fill by decrementing */
void ns__counting_sort(const uint32_t *key, size_t n, size_t nkeys, uint32_t *start,
                       uint32_t *entries)
{
    memset(start, 0, (nkeys + 1) * sizeof *start);
    for (size_t i = 0; i < n; i++)
        start[key[i]]++;
    for (size_t k = 1; k <= nkeys; k++)
        start[k] += start[k - 1];
    for (size_t i = n; i-- > 0;)
        entries[--start[key[i]]] = (uint32_t)i;
}

size_t ns__exclusive_scan_u32(uint32_t *a, size_t n)
{
    size_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = a[i];
        a[i] = (uint32_t)sum;
        sum += v;
    }
    return sum;
}

/* Blocked two-pass scan: each thread sums its block, the block sums are
 * scanned serially, then each thread scans its block from its offset. */
size_t ns__parallel_exclusive_scan_u32(uint32_t *a, size_t n, int threads)
{
    if (threads <= 1 || n < 4096)
        return ns__exclusive_scan_u32(a, n);
    enum { MAX_BLOCKS = 256 };
    size_t block_sum[MAX_BLOCKS + 1];
    int blocks = threads < MAX_BLOCKS ? threads : MAX_BLOCKS;
    size_t len = (n + (size_t)blocks - 1) / (size_t)blocks;
#pragma omp parallel num_threads(blocks)
    {
        /* block sums */
#pragma omp for schedule(static, 1)
        for (int b = 0; b < blocks; b++) {
            size_t lo = (size_t)b * len, hi = lo + len < n ? lo + len : n, s = 0;
            for (size_t i = lo; i < hi; i++)
                s += a[i];
            block_sum[b] = s;
        }
        /* block offsets */
#pragma omp single
        {
            size_t s = 0;
            for (int b = 0; b < blocks; b++) {
                size_t v = block_sum[b];
                block_sum[b] = s;
                s += v;
            }
            block_sum[blocks] = s;
        }
        /* scan each block from its offset */
#pragma omp for schedule(static, 1)
        for (int b = 0; b < blocks; b++) {
            size_t lo = (size_t)b * len, hi = lo + len < n ? lo + len : n, s = block_sum[b];
            for (size_t i = lo; i < hi; i++) {
                uint32_t v = a[i];
                a[i] = (uint32_t)s;
                s += v;
            }
        }
    }
    return block_sum[blocks];
}
