/* grid_sorted/sort.h - part of grid_sorted.c: the counting sorts that put a
 * level's particles into cell order. sort_by_key() sorts them by
 * particle_key() (geometry.h) into order[], group[k] the first particle of
 * key k. It is stable (sort_stable(): one table of counts per share of the
 * particles, no atomics) where those tables fit in the memory the sorted
 * positions take next; else it counts with atomics, and its scatter leaves
 * each key's particles in no set order, so sort_group() then sorts each
 * group (layout.h: each cell, or each hash group's blocks and cells) and
 * the result never depends on the threads' race. */

/* Sorting the caller's indices inside a group (a dense cell, or a hash
 * group of blocks whose cells must become contiguous runs): when by_block,
 * by block (z, then y, then x), then by cell inside it likewise; then by
 * index, so the order never depends on the threads' race in the scatter. */
typedef struct sorter {
    const ns__input *in;
    bool by_block;
    int shift;
} sorter;

static bool before(const sorter *so, uint32_t a, uint32_t b)
{
    if (so->by_block) {
        const float *pa = so->in->pos + 3 * (size_t)a, *pb = so->in->pos + 3 * (size_t)b;
        int64_t ca[3], cb[3];
        cell_of(&so->in->grid, pa[0], pa[1], pa[2], ca);
        cell_of(&so->in->grid, pb[0], pb[1], pb[2], cb);
        for (int k = 2; k >= 0; k--) {
            int64_t ba = block_coord(ca[k], so->shift), bb = block_coord(cb[k], so->shift);
            if (ba != bb)
                return ba < bb;
        }
        for (int k = 2; k >= 0; k--)
            if (ca[k] != cb[k])
                return ca[k] < cb[k];
    }
    return a < b;
}

static void sift_down(const sorter *so, uint32_t *a, size_t root, size_t len)
{
    for (size_t child; (child = 2 * root + 1) < len; root = child) {
        if (child + 1 < len && before(so, a[child], a[child + 1]))
            child++;
        if (!before(so, a[root], a[child]))
            return;
        uint32_t t = a[root];
        a[root] = a[child];
        a[child] = t;
    }
}

/* Insertion sort for the usual handful, heapsort (no allocation, no
 * recursion) for a crowded cell. */
static void sort_group(const sorter *so, uint32_t *a, size_t len)
{
    if (len <= (so->by_block ? SMALL : SMALL_INDEX)) {
        for (size_t i = 1; i < len; i++) {
            uint32_t v = a[i];
            size_t k = i;
            for (; k > 0 && before(so, v, a[k - 1]); k--)
                a[k] = a[k - 1];
            a[k] = v;
        }
        return;
    }
    for (size_t i = len / 2; i-- > 0;)
        sift_down(so, a, i, len);
    for (size_t end = len; end-- > 1;) {
        uint32_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(so, a, 0, end);
    }
}

/* Stable parallel counting sort of the particles by key into order[] (see
 * sort_by_key()), with one table of counts per share of the particles in
 * table[shares x keys]: each share counts its keys, the offsets run key by
 * key and share by share (the keys cut in one range per share, summed
 * first), and each share scatters its particles through its own table. */
static void sort_stable(level *s, const ns__input *in, uint32_t *group, size_t keys,
                        long long shares, uint32_t *table)
{
    uint32_t *key = s->key.a, *order = s->order.a;
    long long n = (long long)in->n, nk = (long long)keys;
    size_t sum[SHARES + 1];
#pragma omp parallel num_threads(in->threads)
    {
#pragma omp for schedule(static, 1)
        for (long long t = 0; t < shares; t++) {
            uint32_t *mine = table + (size_t)t * keys;
            memset(mine, 0, keys * sizeof *mine);
            for (long long i = n * t / shares; i < n * (t + 1) / shares; i++) {
                uint32_t k = particle_key(s, in, (size_t)i);
                key[i] = k;
                mine[k]++;
            }
        }
#pragma omp for schedule(static, 1)
        for (long long t = 0; t < shares; t++) {
            size_t total = 0;
            for (long long k = nk * t / shares; k < nk * (t + 1) / shares; k++)
                for (long long u = 0; u < shares; u++)
                    total += table[(size_t)u * keys + (size_t)k];
            sum[t + 1] = total;
        }
#pragma omp single
        {
            sum[0] = 0;
            for (long long t = 0; t < shares; t++)
                sum[t + 1] += sum[t];
        }
#pragma omp for schedule(static, 1)
        for (long long t = 0; t < shares; t++) {
            size_t at = sum[t];
            for (long long k = nk * t / shares; k < nk * (t + 1) / shares; k++) {
                group[k] = (uint32_t)at;
                for (long long u = 0; u < shares; u++) {
                    uint32_t *c = table + (size_t)u * keys + (size_t)k, here = *c;
                    *c = (uint32_t)at;
                    at += here;
                }
            }
        }
#pragma omp for schedule(static, 1)
        for (long long t = 0; t < shares; t++) {
            uint32_t *mine = table + (size_t)t * keys;
            for (long long i = n * t / shares; i < n * (t + 1) / shares; i++)
                order[mine[key[i]]++] = (uint32_t)caller_index(s, (size_t)i);
        }
    }
    group[keys] = (uint32_t)n;
}

/* Parallel counting sort of the particles by key into order[], with
 * group[k] = the first particle of key k and group[keys] = n. True: the
 * sort is stable, each key's particles in the caller's order (sort_stable(),
 * its tables in soa, which gather() fills only later). Where those tables
 * do not fit there (more than about 3 n / T keys): atomic counts stored one
 * place up, an exclusive scan, then a scatter through the same counters,
 * which leaves each key's particles in no set order (false). */
static bool sort_by_key(level *s, const ns__input *in, uint32_t *group, size_t keys)
{
    long long shares = in->threads < SHARES ? in->threads : SHARES;
    if ((size_t)shares * keys <= 3 * in->n) {
        sort_stable(s, in, group, keys, shares, s->soa.a);
        return true;
    }
    uint32_t *key = s->key.a, *order = s->order.a;
    long long n = (long long)in->n, nk = (long long)keys;
#pragma omp parallel num_threads(in->threads)
    {
#pragma omp for schedule(static)
        for (long long k = 0; k <= nk; k++)
            group[k] = 0;
#pragma omp for schedule(static)
        for (long long i = 0; i < n; i++) {
            uint32_t k = particle_key(s, in, (size_t)i);
            key[i] = k;
#pragma omp atomic update
            group[k + 1]++;
        }
    }
    ns__parallel_exclusive_scan_u32(group, keys + 1, in->threads);
#pragma omp parallel for num_threads(in->threads) schedule(static)
    for (long long i = 0; i < n; i++) {
        uint32_t at;
#pragma omp atomic capture
        at = group[key[i] + 1]++;
        order[at] = (uint32_t)caller_index(s, (size_t)i);
    }
    return false;
}
