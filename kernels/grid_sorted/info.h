/* grid_sorted/info.h - part of grid_sorted.c: destroy(), which frees an
 * index, and info(), what it holds: its bytes (every array of every level,
 * used or not, and the query's buffers and records), the layout of its
 * coarsest level, its levels, cells and non-empty cells. */

static void destroy(void *p)
{
    state *S = p;
    for (int l = 0; l < LEVELS; l++)
        level_free(&S->level[l]);
    ns__u32s_free(&S->ids);
    ns__buf_free(&S->threads);
    ns__buf_free(&S->unit_total);
    ns__buf_free(&S->batch);
    ns__u32s_free(&S->records);
    ns__buf_free(&S->record_hits);
    ns__buf_free(&S->unit_record);
    ns__free(S);
}

static void info(const void *p, ns_index_info *info)
{
    const state *S = p;
    static const char *const names[] = {
        [DENSE] = "dense", [BLOCKED] = "blocked", [HASHED] = "hashed"};
    info->bytes += sizeof *S + S->unit_total.capacity * sizeof(size_t) +
                   S->batch.capacity * sizeof(ns_contact) + S->ids.capacity * sizeof(uint32_t) +
                   S->threads.capacity * sizeof(size_t) + S->records.capacity * sizeof(uint32_t) +
                   S->record_hits.capacity * sizeof(uint16_t) +
                   S->unit_record.capacity * sizeof(size_t);
    info->layout = names[S->level[0].layout];
    info->levels = S->levels;
    for (int l = 0; l < LEVELS; l++) { /* what every level holds, used or not */
        const level *s = &S->level[l];
        info->bytes +=
            s->soa.capacity * sizeof(float) +
            (s->start.capacity + s->order.capacity + s->key.capacity + s->bucket.capacity +
             s->group_first.capacity + s->coarse.capacity + s->unit_cell.capacity) *
                sizeof(uint32_t);
    }
    for (int l = 0; l < S->levels; l++) {
        const level *s = &S->level[l];
        info->cells += s->cells;
        info->table_size += s->layout == HASHED ? s->groups : 0;
        for (size_t c = 0; c < s->cells; c++)
            info->nonempty_buckets += s->start.a[c + 1] > s->start.a[c];
    }
}
