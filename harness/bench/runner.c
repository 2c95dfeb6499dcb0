/* runner.c - a configuration's run, for one repetition: run_config, the
 * function registered for every configuration, prepares the (workload, n)
 * (reference.c) and runs write (write.c) or run_search here: a kernel, a
 * peer, bound or oneshot through the searcher (build, then query or
 * count), validated by its first, untimed search, then the timed loop, its
 * counters (docs/harness.md, "What is timed", "Counters") and the check of
 * the last timed search. A peer's search state is kept from one repetition
 * to the next (the run's kept_runs). How each configuration ends is
 * counted in the run's tally, which main reports.
 *
 * The timed loop calls searcher_build and searcher_query, defined here
 * beside it, so the compiler sees them where it compiles the loop. */
#include "bench.h"

#include "clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_refusal(ns_status s)
{
    return s == NS_ERR_TOO_LARGE || s == NS_ERR_TOO_MANY_CONTACTS || s == NS_ERR_OUT_OF_MEMORY;
}

/* A configuration that cannot be timed: refused (documented in
 * docs/design.md), wrong (INVALID) or failed with another error. Its later
 * repetitions are skipped with the same message; one that was VALID until
 * then counts only as what ended it. */
void fail_config(nsb_state *st, tally *t, config *c, failure why)
{
    if (c->checked == 1)
        t->n_valid--;
    if (why == REFUSED)
        t->n_refused++;
    else if (why == INVALID)
        t->any_invalid = true, t->n_invalid++;
    else
        t->n_failed++;
    c->checked = -1;
    nsb_skip_with_error(st, c->verdict);
}

static failure failure_of(ns_status s)
{
    return is_refusal(s) ? REFUSED : FAILED;
}

/* The searcher (bench.h): what a configuration searches with, a kernel's
 * index (bound's too), nothing for oneshot, or a peer's state. */
static ns_status searcher_create(searcher *s, ns_error *err)
{
    if (s->c->kind == KIND_PEER) {
        s->peer = s->c->peer->create();
        if (s->peer)
            return s->c->peer->prepare ? s->c->peer->prepare(s->peer, s->p, err) : NS_OK;
        *err = (ns_error){.status = NS_ERR_OUT_OF_MEMORY, .particle = NS_NO_PARTICLE};
        snprintf(err->message, sizeof err->message, "out of memory for %s's state",
                 s->c->peer->name);
        return NS_ERR_OUT_OF_MEMORY;
    }
    if (s->c->kind == KIND_ONESHOT)
        return NS_OK; /* ns_find_contacts makes its own index */
    ns_config cfg = ns_config_default();
    cfg.threads = s->c->threads;
    return ns_index_create(s->c->kernel, &cfg, &s->index, err);
}

/* oneshot: nothing (the query is the whole search) */
static ns_status searcher_build(searcher *s, ns_error *err)
{
    if (s->c->kind == KIND_PEER)
        return s->c->peer->build(s->peer, s->p, s->c->threads, err);
    if (s->c->kind == KIND_ONESHOT)
        return NS_OK;
    return ns_index_build(s->index, s->p, err);
}

/* The contacts into out, or for bound only their number into *counted. */
static ns_status searcher_query(searcher *s, ns_contact_list *out, size_t *counted, ns_error *err)
{
    if (s->c->kind == KIND_PEER)
        return s->c->peer->query(s->peer, s->p, s->c->threads, out, &s->candidates, err);
    if (s->c->kind == KIND_BOUND)
        return ns_index_count(s->index, counted, err);
    if (s->c->kind == KIND_ONESHOT) {
        ns_config cfg = ns_config_default();
        cfg.threads = s->c->threads;
        return ns_find_contacts(s->c->kernel, s->p, &cfg, out, err);
    }
    return ns_index_query(s->index, out, err);
}

static void searcher_destroy(searcher *s)
{
    if (s->peer)
        s->c->peer->destroy(s->peer);
    ns_index_destroy(s->index);
}

/* Whether a search's result is the reference's: bound's by its count, the
 * others' sorted contacts (sorted here) byte for byte; else the verdict says
 * how, `which` naming the search. */
static bool matches_reference(const reference_cache *cache, config *c, size_t counted,
                              ns_contact_list *contacts, const char *which)
{
    if (c->kind == KIND_BOUND) {
        if (counted == cache->reference.count)
            return true;
        snprintf(c->verdict, sizeof c->verdict, "INVALID%s: %s counts %zu contacts, %s found %zu",
                 which, c->kernel->name, counted, cache->reference_name, cache->reference.count);
        return false;
    }
    ns_contact_list_sort(contacts);
    size_t k = first_difference(&cache->reference, contacts);
    if (k == SIZE_MAX)
        return true;
    describe_difference(c->verdict, sizeof c->verdict, cache->reference_name, &cache->reference,
                        config_search_name(c), contacts, k);
    size_t len = strlen(c->verdict);
    snprintf(c->verdict + len, sizeof c->verdict - len, "%s", which);
    return false;
}

/* The index and the first, untimed search of a configuration: its
 * validation (once, before any timing) and warm memory for the timed loop;
 * *seconds = its build and query. False when the configuration fails
 * (refused, an error, INVALID): its verdict says why. */
static bool first_search(bench *b, nsb_state *st, config *c, searcher *se,
                         ns_contact_list *contacts, double *seconds)
{
    char *msg = c->verdict;
    size_t msg_size = sizeof c->verdict;
    bool bound = c->kind == KIND_BOUND;
    size_t counted = 0;
    ns_error err;
    ns_status s = searcher_create(se, &err);
    double t0 = tool_seconds();
    if (s == NS_OK)
        s = searcher_build(se, &err);
    if (s == NS_OK)
        s = searcher_query(se, contacts, &counted, &err);
    *seconds = tool_seconds() - t0;
    if (s != NS_OK) {
        snprintf(msg, msg_size, "%s: %s (%s)", is_refusal(s) ? "refused" : "error", err.message,
                 ns_status_str(s));
        fail_config(st, &b->tally, c, failure_of(s));
        return false;
    }
    if (!c->checked && !matches_reference(&b->cache, c, counted, contacts, "")) {
        fail_config(st, &b->tally, c, INVALID);
        return false;
    }
    if (!c->checked) {
        b->tally.n_valid++;
        c->checked = 1;
        snprintf(msg, msg_size, "VALID vs %s%s", b->cache.reference_name,
                 bound ? " (contact count)" : "");
    }
    nsb_set_label(st, msg);
    return true;
}

/* The timed loop's sums. */
typedef struct timed {
    double build, query; /* seconds over all iterations */
    int64_t iterations;
    size_t found; /* contacts of the last iteration (counted, for bound) */
    disturbance before, after;
} timed;

/* The counters of a timed configuration (docs/harness.md, "Counters"). */
static void set_counters(nsb_state *st, mem_probe *probe, const config *c, const searcher *se,
                         const timed *t)
{
    ns_index_info info = {0};
    if (se->index)
        ns_index_get_info(se->index, &info);
    else
        info.candidates = se->candidates;
    /* oneshot keeps no index to ask */
    double bytes = se->index ? (double)info.bytes : c->peer ? c->peer->bytes(se->peer) : -1.0;
    double seconds = (t->build + t->query) / (double)t->iterations;
    double per = c->n ? 1.0 / (double)c->n : 0.0;
    double found = (double)t->found;
    nsb_set_counter(st, "n", (double)c->n, NSB_PLAIN);
    nsb_set_counter(st, "contacts", found, NSB_PLAIN);
    nsb_set_counter(st, "contacts_per_particle", 2.0 * found * per, NSB_PLAIN);
    nsb_set_counter(st, "contacts_per_s", found, NSB_PER_ITERATION_RATE);
    nsb_set_counter(st, "ns_per_particle", seconds * 1e9 * per, NSB_PLAIN);
    nsb_set_counter(st, "build_ms", t->build / (double)t->iterations * 1e3, NSB_PLAIN);
    nsb_set_counter(st, "query_ms", t->query / (double)t->iterations * 1e3, NSB_PLAIN);
    if (bytes >= 0.0) /* a peer's library may not tell */
        nsb_set_counter(st, "index_bytes", bytes, NSB_PLAIN);
    /* the threads the search ran on: fewer than asked for at small n */
    nsb_set_counter(st, "omp_threads",
                    se->index   ? info.threads
                    : c->kernel ? ns_kernel_threads(c->kernel, c->n, c->threads)
                                : c->threads,
                    NSB_PLAIN);
    if (c->kind != KIND_BOUND && c->kind != KIND_ONESHOT)
        nsb_set_counter(st, "candidates_per_contact",
                        t->found ? (double)info.candidates / found : 0.0, NSB_PLAIN);
    if (c->kernel && c->kernel->uses_table_size) {
        nsb_set_counter(st, "table_size", (double)info.table_size, NSB_PLAIN);
        nsb_set_counter(st, "nonempty_bucket_fraction",
                        info.table_size ? (double)info.nonempty_buckets / (double)info.table_size
                                        : 0.0,
                        NSB_PLAIN);
    }
    set_disturbance_counters(st, probe, &t->before, &t->after);
    nsb_set_counter(st, "peak_rss_bytes", (double)peak_rss_bytes(), NSB_PLAIN);
}

/* A peer's search state lives from one repetition of its configuration to
 * the next (in this process): its untimed first search - validation, warm
 * memory and, for LAMMPS, starting it and loading the atoms - is made once
 * per process, not before every repetition, as a peer's search can take
 * seconds. The repetitions of a process are interleaved (the sweep asks
 * for Google Benchmark's random interleaving), so every peer's state of the
 * current particles is kept at once, while their contact lists and indexes
 * (as far as a peer tells) take at most KEPT_BYTES together (past that, the
 * next peer to start releases the others first). A kernel keeps the
 * protocol of a new index per repetition. The states are the run's
 * kept_runs (bench.h), at most KEPT_MAX of them. */
#define KEPT_BYTES ((size_t)1 << 30)

static void search_run_free(search_run *r)
{
    searcher_destroy(&r->se);
    ns_contact_list_free(&r->contacts);
}

static void kept_release(struct kept_run *k)
{
    if (k->c)
        search_run_free(&k->run);
    k->c = NULL;
}

void kept_release_all(kept_runs *kept)
{
    for (int i = 0; i < KEPT_MAX; i++)
        kept_release(&kept->place[i]);
}

/* Releases the states of particles made before the current ones. */
static void kept_release_stale(kept_runs *kept, unsigned generation)
{
    for (int i = 0; i < KEPT_MAX; i++)
        if (kept->place[i].c && kept->place[i].generation != generation)
            kept_release(&kept->place[i]);
}

static struct kept_run *kept_find(kept_runs *kept, const config *c)
{
    for (int i = 0; i < KEPT_MAX; i++)
        if (kept->place[i].c == c)
            return &kept->place[i];
    return NULL;
}

/* A place for c's state (not yet filled), within the limits above. */
static struct kept_run *kept_add(kept_runs *kept, const config *c, unsigned generation)
{
    size_t bytes = 0;
    struct kept_run *free_place = NULL;
    for (int i = 0; i < KEPT_MAX; i++) {
        if (kept->place[i].c) {
            const search_run *r = &kept->place[i].run;
            double index = r->se.peer ? kept->place[i].c->peer->bytes(r->se.peer) : -1.0;
            bytes += r->contacts.capacity * sizeof(ns_contact) + (index > 0.0 ? (size_t)index : 0);
        } else if (!free_place)
            free_place = &kept->place[i];
    }
    if (!free_place || bytes > KEPT_BYTES) {
        kept_release_all(kept);
        free_place = &kept->place[0];
    }
    free_place->c = c;
    free_place->generation = generation;
    return free_place;
}

/* A kernel, bound or a peer: build + query (or count), timed. */
static void run_search(bench *b, nsb_state *st, config *c)
{
    bool bound = c->kind == KIND_BOUND, peer = c->kind == KIND_PEER;
    ns_error err;
    struct kept_run *k = peer ? kept_find(&b->kept, c) : NULL;
    bool fresh = !k;
    if (peer && fresh)
        k = kept_add(&b->kept, c, b->cache.generation); /* kept from here on; released on failure */
    search_run local, *r = peer ? &k->run : &local;
    ns_status s = NS_OK;
    if (fresh) {
        *r = (search_run){.p = {c->n, b->cache.pos, b->cache.radius, 0.0f}};
        r->se = (searcher){.c = c, .p = &r->p};
        ns_contact_list_init(&r->contacts);
        double first_s;
        if (!first_search(b, st, c, &r->se, &r->contacts, &first_s)) {
            s = NS_ERR_INVALID_ARGUMENT; /* the verdict says why */
            goto done;
        }
        if (peer && first_s > b->opt.peer_limit_s) {
            snprintf(c->verdict, sizeof c->verdict,
                     "skipped: VALID, but one search took %.3g s, over --peer-limit %g s", first_s,
                     b->opt.peer_limit_s);
            b->tally.n_skipped++;
            c->checked = -1;
            nsb_skip_with_error(st, c->verdict);
            s = NS_ERR_INVALID_ARGUMENT;
            goto done;
        }
    } else {
        nsb_set_label(st, c->verdict); /* a later repetition of a kept peer */
    }

    /* the timed loop */
    timed t = {.build = 0.0};
    size_t counted = 0;
    t.before = disturbance_now();
    while (nsb_keep_running(st)) {
        if (c->kind == KIND_ONESHOT)
            ns_contact_list_free(&r->contacts); /* untimed: the call starts from nothing */
        double t0 = tool_seconds();
        s = searcher_build(&r->se, &err);
        double t1 = tool_seconds();
        if (s == NS_OK)
            s = searcher_query(&r->se, &r->contacts, &counted, &err);
        double t2 = tool_seconds();
        nsb_set_iteration_time(st, t2 - t0);
        t.build += t1 - t0;
        t.query += t2 - t1;
        t.iterations++;
        if (s != NS_OK) {
            snprintf(c->verdict, sizeof c->verdict, "%s while timing: %s (%s)",
                     is_refusal(s) ? "refused" : "error", err.message, ns_status_str(s));
            fail_config(st, &b->tally, c, failure_of(s));
            break;
        }
    }
    t.after = disturbance_now();
    t.found = bound ? counted : r->contacts.count;
    if (s == NS_OK && t.iterations > 0)
        set_counters(st, &b->probe, c, &r->se, &t);
    /* The timed iterations may run another path than the first search
     * (grid_sorted records its counting pass from an index's second query
     * on), so the last one's contacts are checked too: once per
     * configuration, untimed, after the counters (the memory probe stays
     * right behind the timed loop). */
    if (s == NS_OK && t.iterations > 0 && !c->timed_checked) {
        c->timed_checked = true;
        if (getenv("NSEARCH_BENCH_TEST_CORRUPT_TIMED")) { /* smoke/bench_timed_check: a
                                                           * kernel wrong only when timed */
            if (bound)
                counted++;
            else if (r->contacts.count)
                r->contacts.items[0].overlap = nextafterf(r->contacts.items[0].overlap, INFINITY);
        }
        if (!matches_reference(&b->cache, c, counted, &r->contacts, " (in a timed search)")) {
            fail_config(st, &b->tally, c, INVALID);
            s = NS_ERR_INVALID_INPUT; /* a peer's kept state goes too */
        }
    }
done:
    if (!peer)
        search_run_free(r);
    else if (s != NS_OK)
        kept_release(k);
}

/* Google Benchmark's function of every configuration: arg is the config,
 * and the run is the config's bench (registration.c). */
void run_config(nsb_state *st, void *arg)
{
    config *c = arg;
    bench *b = c->bench;
    if (c->checked < 0) { /* a later repetition of a configuration that failed */
        nsb_skip_with_error(st, c->verdict);
        return;
    }
    prepare(&b->cache, &b->opt, &b->tally, c->workload, c->n);
    kept_release_stale(&b->kept, b->cache.generation);
    if (b->cache.reference_status != NS_OK) { /* nothing to check the configuration against */
        snprintf(c->verdict, sizeof c->verdict, "%s", b->cache.reference_error);
        fail_config(st, &b->tally, c, failure_of(b->cache.reference_status));
        return;
    }
    if (c->kind == KIND_WRITE)
        run_write(b, st, c);
    else
        run_search(b, st, c);
}
