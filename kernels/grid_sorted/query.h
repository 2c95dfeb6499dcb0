/* grid_sorted/query.h - part of grid_sorted.c: the search. cell_contacts()
 * finds the contacts of a cell (or of a span of sparse cells) in its
 * level: its candidates gathered into the scratch and each of its
 * particles tested against them by one loop (own_contacts(), or the code
 * path's simd_write_gathered()), or, crowded, run by run. units_pass() runs
 * over units of cells in parallel, level after level: each cell's
 * contacts in its level, then those of its particles with every finer
 * level (cross.h). query() runs it twice: a counting pass (recording the
 * contacts from an index's second query on), then a writing pass that puts
 * each unit's contacts at its offset in the caller's list. count() is the
 * counting pass alone; stream() runs both over batches of units. */

/* The contacts of the cell's own particle q (the first sorted particle of
 * the cell is first) with the later candidates in the blocks: recorded when
 * rc is on and has room, else counted (and the unit no longer recorded). */
static inline uint32_t own_contacts(scratch *sc, const view *v, uint32_t q, uint64_t blocks,
                                    uint32_t first, recorder *rc)
{
    if (rc && rc->on && rc->end - rc->at >= sc->padded + LANES) {
        uint32_t h = simd_record_gathered(sc, v, q, blocks, rc->k + rc->at);
        rc->hits[(size_t)(first + q) * (size_t)rc->levels] = (uint16_t)h;
        rc->at += h;
        return h;
    }
    if (rc)
        rc->on = false; /* out of room: the unit is tested again */
    return blocks == EVERY_BLOCK ? test_range(sc, v, q, 0, sc->padded, NULL)
                                 : simd_count_gathered(sc, v, q, blocks);
}

/* The contacts of a gathered cell whose particles test only the cells
 * within their reach (see cell_reach), counted, recorded when rc is on.
 * Every particle's blocks are found first, then tested: the reach of one
 * particle (a chain of dependent operations, then a reduction) no longer
 * waits behind the tests of the one before, and the reaches of the cell's
 * particles overlap. Kept out of cell_contacts() (noinline): inlined there,
 * it slowed the cells that test every candidate (both measured:
 * docs/optimisation-log.md, "Cutting a crowded cell's candidates by
 * reach"). */
__attribute__((noinline)) static size_t reach_contacts(scratch *sc, const view *v,
                                                       const cell_reach *re, uint32_t first,
                                                       recorder *rc, size_t *tested)
{
    size_t hits = 0;
    uint64_t *blocks = sc->blocks;
    size_t listed = 0; /* blocks of LANES candidates */
    for (uint32_t q = 0; q < sc->own; q++) {
        blocks[q] = blocks_after(reach_blocks(re, sc->x[q], sc->y[q], sc->z[q], sc->r[q]), q);
        listed += (size_t)__builtin_popcountll(blocks[q]);
    }
    *tested += listed * LANES;
    for (uint32_t q = 0; q < sc->own; q++)
        hits += own_contacts(sc, v, q, blocks[q], first, rc);
    return hits;
}

/* The contacts of the cells c .. c + m - 1 (see span_of()), counted (out
 * NULL; recorded too when rc is on) or written from out on (some perhaps
 * still pending in fd: flush() writes them); *tested += the pairs it
 * tested. A count stops early once it is over limit: a crowded cell may
 * hold billions of contacts, and a search that will be refused need not
 * count them all. */
static size_t cell_contacts(const level *s, const view *v, size_t c, size_t m, around *ar,
                            scratch *sc, found *fd, ns_contact **out, recorder *rc, size_t *tested,
                            size_t limit)
{
    runs r;
    cell_runs(s, v, &s->grid, c, m, ar, &r);
    size_t hits = 0;
    uint32_t first = v->start[c], last = v->start[c + m];
    sc->record = rc && rc->on;
    if (gather_cell(v, c, m, &r, sc)) {
        cell_reach re;
        if (!*out && sc->own >= LANES && s->layout == DENSE && v->r && reach_of_cell(s, v, c, &re))
            return reach_contacts(sc, v, &re, first, rc, tested);
        for (uint32_t q = 0; q < sc->own; q++) {
            if (*out)
                *out = simd_write_gathered(sc, fd, v, q, *out);
            else
                hits += own_contacts(sc, v, q, EVERY_BLOCK, first, rc);
        }
        *tested += (size_t)sc->own * sc->padded;
        return hits;
    }
    if (rc)
        rc->on = false;
    /* crowded: run by run, after what is pending */
    if (*out)
        *out = flush(fd, v, *out);
    for (uint32_t p = first; p < last && hits <= limit; p++) {
        probe pp = probe_of(v, p);
        if (*out) {
            *out = write_run(v, &pp, p + 1, r.own_end, *out);
            for (int q = 0; q < r.count; q++)
                *out = write_run(v, &pp, r.begin[q], r.end[q], *out);
        } else {
            hits += count_run(v, &pp, p + 1, r.own_end);
            for (int q = 0; q < r.count; q++)
                hits += count_run(v, &pp, r.begin[q], r.end[q]);
        }
        *tested += r.own_end - p - 1;
        for (int q = 0; q < r.count; q++)
            *tested += r.end[q] - r.begin[q];
    }
    return hits;
}

/* The level of unit u (u < all the units). */
static inline int unit_level(const state *S, size_t u)
{
    int l = 0;
    while (u >= S->unit_first[l + 1])
        l++;
    return l;
}

/* Over the units [u0, u1) (runs of cells, see plan_units()), level after level, in parallel:
 * each cell's contacts in its level, then those of its particles with every
 * finer level. Pass 1 (items NULL) counts each unit's contacts into
 * S->unit_total and returns the sum, or some number over limit once it is
 * clear the sum is, and the pairs it tested in *tested; with record, it
 * also records the contacts (see recorder) in S->records. Pass 2 writes each
 * unit's contacts at the offset S->unit_total then holds: with record, those
 * that pass 1 recorded without testing again, the others tested. */
static size_t units_pass(state *S, const ns__input *in, size_t u0, size_t u1, ns_contact *items,
                         bool sparse, bool record, size_t limit, size_t *tested)
{
    view views[LEVELS];
    for (int l = 0; l < S->levels; l++)
        views[l] = view_of(&S->level[l]);
    size_t *total = S->unit_total.a, sum = 0, pairs = 0;
    long long first = (long long)u0, last = (long long)u1;
    int over = 0; /* set once one thread's count alone is over limit */
#pragma omp parallel num_threads(in->threads) reduction(+ : sum, pairs)
    {
        scratch sc;
        found fd;
        fd.count = 0;
        fd.sparse = sparse;
        around ar[LEVELS];
        for (int l = 0; l < LEVELS; l++)
            ar[l].block = SIZE_MAX;
        recorder rc = {0}, *rec = NULL;
        size_t *unit_record = S->unit_record.a;
        if (record && !items) { /* this thread's slice of the records */
            size_t all = S->records.capacity, t = (size_t)omp_get_thread_num(),
                   T = (size_t)omp_get_num_threads();
            rc = (recorder){S->records.a, NULL, S->levels, all * t / T, all * (t + 1) / T, false};
            rec = &rc;
        }
        const uint16_t *record_hits = S->record_hits.a;
#pragma omp for schedule(dynamic, 1)
        for (long long u = first; u < last; u++) {
            int stop;
#pragma omp atomic read
            stop = over;
            if (stop)
                continue;
            int l = unit_level(S, (size_t)u);
            const level *s = &S->level[l];
            const view *v = &views[l];
            const uint32_t *unit_cell = s->unit_cell.a + ((size_t)u - S->unit_first[l]);
            size_t c0 = unit_cell[0], c1 = unit_cell[1];
            size_t hits = 0, unit_tested = 0;
            ns_contact *out = items ? items + total[u] : NULL;
            size_t level_hits = S->particle_first[l] * (size_t)S->levels;
            if (items && record && unit_record[u] != UNRECORDED) {
                out = expand_unit(views, l, S->levels, c0, c1, record_hits + level_hits,
                                  S->records.a + unit_record[u], &fd, out);
                flush(&fd, v, out);
                continue;
            }
            size_t first_record = rc.at;
            rc.on = rec != NULL;
            rc.hits = rec ? (uint16_t *)S->record_hits.a + level_hits : NULL;
            for (size_t c = c0, m; c < c1 && hits <= limit; c += m) {
                m = 1;
                if (v->start[c] == v->start[c + 1])
                    continue;
                m = l + 1 == S->levels ? span_of(s, v, c, c1) : 1;
                hits += cell_contacts(s, v, c, m, &ar[l], &sc, &fd, &out, rec, &unit_tested,
                                      limit - hits);
                for (uint32_t q = v->start[c]; q < v->start[c + m] && hits <= limit; q++) {
                    probe pp = probe_of(v, q);
                    for (int f = l + 1; f < S->levels; f++) {
                        size_t h = cross_contacts(&S->level[f], &views[f], &pp, &fd, &out, rec,
                                                  &unit_tested);
                        if (rc.on && h > UINT16_MAX)
                            rc.on = false;
                        if (rc.on)
                            rc.hits[(size_t)q * (size_t)S->levels + (size_t)(f - l)] = (uint16_t)h;
                        hits += h;
                    }
                }
            }
            if (rec) {
                unit_record[u] = rc.on ? first_record : UNRECORDED;
                if (!rc.on)
                    rc.at = first_record; /* its records are of no use */
            }
            if (items)
                flush(&fd, v, out);
            else
                total[u] = hits;
            sum += hits;
            pairs += unit_tested;
            if (!items && sum > limit) {
#pragma omp atomic write
                over = 1;
            }
        }
    }
    if (tested)
        *tested = pairs;
    return sum;
}

static size_t units_of(const state *S)
{
    return S->unit_first[S->levels];
}

static ns_status count(void *p, const ns__input *in, size_t *total, ns_error *err)
{
    (void)err;
    state *S = p;
    *total = units_pass(S, in, 0, units_of(S), NULL, false, false, SIZE_MAX, NULL);
    return NS_OK;
}

/* The units [u0, u1) counted (at most in->max_contacts, else refused),
 * their counts turned into offsets from u0's first contact; *tested = the
 * pairs tested. */
static ns_status count_units(state *S, const ns__input *in, size_t u0, size_t u1, bool record,
                             size_t *total, size_t *tested, ns_error *err)
{
    *total = units_pass(S, in, u0, u1, NULL, false, record, in->max_contacts, tested);
    if (*total > in->max_contacts)
        return ns__too_many_contacts(err, in->max_contacts);
    size_t *offset = S->unit_total.a, at = 0;
    for (size_t u = u0; u < u1; u++) {
        size_t k = offset[u];
        offset[u] = at;
        at += k;
    }
    return NS_OK;
}

/* Whether the write pass should store only the indices of the candidates
 * that touch and gather their fields afterwards (the AVX-512 path's
 * simd_write_gathered(); the other paths always store the fields): when
 * there are more than SPARSE pairs tested per contact, most vectors of
 * candidates hold no contact, and storing six compacted fields for each
 * costs more than gathering them for the few contacts; where most vectors
 * hold contacts, the gathers cost more (docs/optimisation-log.md, "Sorting
 * and layouts", "Compacting only the indices"). */
enum { SPARSE = 12 };
static bool sparse(size_t contacts, size_t pairs)
{
    return pairs / SPARSE > contacts;
}

/* Room to record a query's contacts (see recorder), at least as many as
 * the last query found with a scratch's worth per thread to spare (grown to
 * that and an eighth): false (nothing recorded, every unit tested again) for
 * the first query of an index, or when the memory is not there. */
static bool reserve_records(state *S, const ns__input *in)
{
    if (S->records_last == 0 || in->n > SIZE_MAX / LEVELS)
        return false;
    size_t spare = (size_t)in->threads * (SCRATCH + 2 * LANES);
    return ns__u32s_grow(&S->records, S->records_last + spare) &&
           ns__buf_reserve(&S->record_hits, in->n * (size_t)S->levels, sizeof(uint16_t)) &&
           ns__buf_reserve(&S->unit_record, units_of(S), sizeof(size_t));
}

static ns_status query(void *p, const ns__input *in, ns_contact_list *list, size_t *candidates,
                       ns_error *err)
{
    state *S = p;
    size_t total, pairs = 0;
    bool recorded = reserve_records(S, in);
    ns_status st = count_units(S, in, 0, units_of(S), recorded, &total, &pairs, err);
    if (st == NS_OK) /* a refused count is some number over the limit */
        S->records_last = total;
    *candidates += pairs;
    if (st == NS_OK)
        st = ns__contact_list_grow(list, total, in->max_contacts, in->threads, err);
    if (st != NS_OK)
        return st;
    if (total > 0)
        units_pass(S, in, 0, units_of(S), list->items, sparse(total, pairs), recorded, SIZE_MAX,
                   NULL);
    list->count = total;
    return NS_OK;
}

/* The particles in the units before u, over all levels. */
static size_t particles_before(const state *S, size_t u)
{
    if (u == units_of(S))
        return S->n;
    int l = unit_level(S, u);
    const level *s = &S->level[l];
    return S->particle_first[l] + s->start.a[s->unit_cell.a[u - S->unit_first[l]]];
}

/* The query in batches of units, each of at least an eighth of the
 * particles, clamped to [STREAM_MIN, STREAM_MAX] (so small sets stream in
 * several batches too, and large ones in bounded memory): counted, written
 * into S->batch, handed to sink, in unit order, so the contacts and their
 * order are the query's. */
enum { STREAM_MIN = 1 << 10, STREAM_MAX = 1 << 16 };
static ns_status stream(void *p, const ns__input *in, ns_contact_sink sink, void *user,
                        size_t *candidates, ns_error *err)
{
    state *S = p;
    size_t batch = in->n / 8 < STREAM_MIN   ? STREAM_MIN
                   : in->n / 8 > STREAM_MAX ? STREAM_MAX
                                            : in->n / 8;
    size_t units = units_of(S);
    for (size_t u0 = 0, u1; u0 < units; u0 = u1) {
        size_t first = particles_before(S, u0);
        for (u1 = u0 + 1; u1 < units && particles_before(S, u1) - first < batch; u1++)
            ;
        size_t total, pairs = 0;
        ns_status st = count_units(S, in, u0, u1, false, &total, &pairs, err);
        *candidates += pairs;
        if (st != NS_OK)
            return st;
        if (total == 0)
            continue;
        if (!ns__buf_reserve(&S->batch, total, sizeof(ns_contact)))
            return ns__fail_oom(err, "a batch of the streamed contacts");
        units_pass(S, in, u0, u1, S->batch.a, sparse(total, pairs), false, SIZE_MAX, NULL);
        if (!sink(S->batch.a, total, user))
            break;
    }
    return NS_OK;
}
