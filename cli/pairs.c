/* pairs.c - `nsearch pairs`: a particle file in, its contacts out. */
#include "cli.h"
#include "clock.h"
#include "output.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char pairs_help[] =
    "Usage: nsearch pairs --kernel NAME --input FILE [--radius R] [--threads T]\n"
    "                     [--table-size M] [--max-contacts C] [--output FILE]\n"
    "                     [--format csv|bin] [--order sorted|any] [--check] [--stats]\n"
    "Reads particles, finds every contact with a kernel, writes the contacts.\n"
    "\n"
    "  --kernel NAME     the kernel (see 'nsearch kernels')\n"
    "  --input FILE      the particle file ('-': standard input): lines x,y,z or x,y,z,r\n"
    "                    (commas, spaces allowed around fields); blank and # lines skipped;\n"
    "                    an optional first line x,y,z or x,y,z,r; particles numbered from 0\n"
    "                    in file order\n"
    "  --radius R        every particle's radius: required for a 3-column file, an error\n"
    "                    for a 4-column one; read exactly as a number of the file; 0 or\n"
    "                    from 2^-60 to 2^60, the radii the library takes\n"
    "  --threads T       threads for parallel kernels (1 to 8 per processor; default:\n"
    "                    OpenMP's, i.e. OMP_NUM_THREADS, within the same limit)\n"
    "  --table-size M    buckets of the hash kernels' table (M >= 1; default 2n; more than\n"
    "                    the library's limit for n is reduced to it); accepted and ignored\n"
    "                    by the other kernels\n"
    "  --max-contacts C  stop with exit 1 when there are more than C contacts (1 to 2^31;\n"
    "                    default: a quarter of the machine's memory in contacts of 24 bytes,\n"
    "                    at most 2^31); kernels that count first (grid_sorted) stop before\n"
    "                    writing any\n"
    "  --output FILE     write to FILE instead of standard output ('-': standard output); a\n"
    "                    regular file is replaced only when complete, keeping its mode and\n"
    "                    owner; a device or FIFO is written directly (docs/cli.md, 'Output files')\n"
    "  --format csv|bin  csv (default): the line i,j,overlap,nx,ny,nz then one contact per\n"
    "                    line, i<j, sorted by i then j, numbers as %.9g. bin: little-endian,\n"
    "                    a 24-byte header (the 8 bytes NSCONTAC, uint32 version 1, uint32\n"
    "                    record size 24, uint64 record count), then per contact uint32 i,\n"
    "                    uint32 j, float overlap, nx, ny, nz\n"
    "  --order sorted|any sorted (default): by i then j, the same bytes from every kernel.\n"
    "                    any: in the kernel's own order, unsorted; a kernel with a streaming\n"
    "                    query (grid_sorted) writes the contacts batch by batch as it finds\n"
    "                    them, never holding the whole list (a binary header's count is\n"
    "                    counted first); --max-contacts then limits the total (by\n"
    "                    default only one batch is held to the default limit); not\n"
    "                    with --check\n"
    "  --check           also run naive and compare: prints VALID or INVALID (and the first\n"
    "                    differences) on standard error; exit 3 when they differ, and then\n"
    "                    an output file is left as it was\n"
    "  --stats           print counts, times (ms) and the index's memory on standard error\n";

/* The times --stats reports, in ms, the index's bytes and the threads the
 * search ran on. */
typedef struct pairs_times {
    double read, build, query, sort, write;
    size_t index_bytes;
    int threads;
    const char *layout; /* NULL: the kernel has one */
    int levels;         /* 0: the kernel has one */
} pairs_times;

/* Where a streamed query's blocks go: written as they come; the first
 * failure (a write, or more than max_total contacts) ends the stream. */
typedef struct block_writer {
    FILE *f;
    const char *name; /* the output, for messages */
    ns_format format;
    size_t written, max_total; /* max_total 0: no limit */
    bool streamed;             /* the search wrote the contacts through write_block */
    ns_status status;
    ns_error err;
} block_writer;

/* More contacts than --max-contacts allows (with --order any). */
static ns_status too_many(ns_error *err, size_t max_total)
{
    *err = (ns_error){.status = NS_ERR_TOO_MANY_CONTACTS, .particle = NS_NO_PARTICLE};
    snprintf(err->message, sizeof err->message, "more than %zu contacts (--max-contacts)",
             max_total);
    return NS_ERR_TOO_MANY_CONTACTS;
}

static bool write_block(const ns_contact *c, size_t count, void *user)
{
    block_writer *w = user;
    if (w->max_total && count > w->max_total - w->written) {
        w->status = too_many(&w->err, w->max_total);
        return false;
    }
    w->status = ns_contacts_write_records(w->f, c, count, w->format, &w->err);
    w->written += count;
    return w->status == NS_OK;
}

/* A kernel's index for cfg, made before the input is read so that a
 * configuration it refuses (threads, table size) is said then, naming the
 * kernel, not the file. 0 or the exit status. */
static int open_index(const ns_kernel *k, const ns_config *cfg, ns_index **index)
{
    ns_error err;
    ns_status s = ns_index_create(k, cfg, index, &err);
    if (s == NS_OK)
        return 0;
    cli_say("%s: %s (%s)", k->name, err.message, ns_status_str(s));
    return cli_exit_status(s);
}

/* Runs an index of kernel k (open_index) on p into contacts, or with `to`
 * (--order any) writes them to `to` as the kernel finds them: streamed where
 * the kernel can stream, else its whole list in its own order (then in
 * contacts). On failure says why (with the particle's line) and returns the
 * exit status, else 0. */
static int search(ns_index *index, const ns_kernel *k, const ns_particles *p,
                  ns_contact_list *contacts, block_writer *to, const char *path,
                  const ns_particle_file *file, pairs_times *t)
{
    ns_error err;
    double t0 = tool_ms();
    ns_status s = ns_index_build(index, p, &err);
    double t1 = tool_ms();
    if (to)
        to->streamed = ns_index_can_stream(index);
    if (s == NS_OK && to && to->streamed) {
        size_t total = 0; /* the binary header's count, counted first */
        if (to->format == NS_FORMAT_BIN)
            s = ns_index_count(index, &total, &err);
        if (s == NS_OK && to->max_total && total > to->max_total)
            s = too_many(&err, to->max_total);
        if (s == NS_OK)
            s = ns_contacts_write_header(to->f, to->format, total, &err);
        if (s == NS_OK)
            s = ns_index_query_stream(index, write_block, to, &err);
        if (s == NS_OK && to->status != NS_OK)
            s = to->status, err = to->err;
        contacts->count = to->written;
    } else if (s == NS_OK) {
        s = ns_index_query(index, contacts, &err);
        if (s == NS_OK && to && to->max_total && contacts->count > to->max_total)
            s = too_many(&err, to->max_total);
    }
    double t2 = tool_ms();
    if (s == NS_OK) {
        ns_index_info info;
        ns_index_get_info(index, &info);
        if (t)
            t->build = t1 - t0, t->query = t2 - t1, t->index_bytes = info.bytes,
            t->threads = info.threads, t->layout = info.layout, t->levels = info.levels;
        return 0;
    }
    if (s == NS_ERR_IO) /* a write failed: the output, not a particle, is at fault */
        cli_say("%s: %s", to->name, err.message);
    else
        cli_say_particle_error(path, file, k->name, &err);
    return cli_exit_status(s);
}

static void print_contact(const char *label, const ns_contact *c)
{
    fprintf(stderr, "  %s: %u,%u,%.9g,%.9g,%.9g,%.9g\n", label, (unsigned)c->i, (unsigned)c->j,
            (double)c->overlap, (double)c->nx, (double)c->ny, (double)c->nz);
}

/* --check: exact comparison of sorted lists (ref from the reference kernel
 * named reference); prints VALID or INVALID. */
static bool same_contacts(const char *kernel, const char *reference, const ns_contact_list *ref,
                          const ns_contact_list *got)
{
    char label[64];
    snprintf(label, sizeof label, "%-8s", reference);
    size_t shown = 0, differ = 0;
    size_t a = 0, b = 0;
    while (a < ref->count || b < got->count) {
        const ns_contact *x = a < ref->count ? &ref->items[a] : NULL;
        const ns_contact *y = b < got->count ? &got->items[b] : NULL;
        bool x_first = x && (!y || x->i < y->i || (x->i == y->i && x->j < y->j));
        bool y_first = y && (!x || y->i < x->i || (y->i == x->i && y->j < x->j));
        if (!x_first && !y_first && memcmp(x, y, sizeof *x) == 0) {
            a++, b++;
            continue;
        }
        if (differ++ == 0)
            fprintf(stderr, "INVALID: %s differs from %s\n", kernel, reference);
        if (shown++ < 5) {
            if (!y_first)
                print_contact(label, x);
            if (!x_first)
                print_contact(kernel, y);
        }
        a += !y_first;
        b += !x_first;
    }
    if (differ)
        fprintf(stderr, "INVALID: %zu differences (%s %zu contacts, %s %zu)\n", differ, reference,
                ref->count, kernel, got->count);
    else
        fprintf(stderr, "VALID: %s matches %s exactly (%zu contacts)\n", kernel, reference,
                ref->count);
    return differ == 0;
}

/* What the options ask for. */
typedef struct pairs_setup {
    const ns_kernel *kernel;
    const char *input, *output;
    ns_config cfg;
    ns_format format;
    bool radius_given, check, stats, any_order;
    size_t max_total; /* --order any: the most contacts written, 0 = no limit */
    float radius;
} pairs_setup;

static void parse_pairs(int argc, char **argv, pairs_setup *su)
{
    enum {
        KERNEL,
        INPUT,
        RADIUS,
        THREADS,
        TABLE,
        MAX_CONTACTS,
        OUTPUT,
        FORMAT,
        ORDER,
        CHECK,
        STATS,
        NOPTS
    };
    opt opts[NOPTS] = {OPT_TEXT_ENTRY("--kernel"),
                       OPT_TEXT_ENTRY("--input"),
                       OPT_FLOAT_ENTRY("--radius", 0.0f, 0x1p60f),
                       cli_threads_option(),
                       OPT_COUNT_ENTRY("--table-size", 1, UINT32_MAX),
                       OPT_COUNT_ENTRY("--max-contacts", 1, NS_MAX_CONTACTS),
                       OPT_TEXT_ENTRY("--output"),
                       OPT_TEXT_ENTRY("--format"),
                       OPT_TEXT_ENTRY("--order"),
                       OPT_FLAG_ENTRY("--check"),
                       OPT_FLAG_ENTRY("--stats")};
    cli_parse(argc, argv, opts, NOPTS, pairs_help);
    if (!opts[KERNEL].given || !opts[INPUT].given)
        cli_usage_error("%s is required", opts[KERNEL].given ? "--input" : "--kernel");
    su->kernel = cli_kernel(opts[KERNEL].text);
    su->cfg = ns_config_default();
    if (opts[THREADS].given) {
        su->cfg.threads = (int)opts[THREADS].count;
        omp_set_num_threads(su->cfg.threads);
    }
    su->cfg.table_size = (size_t)opts[TABLE].count;
    su->cfg.max_contacts = (size_t)opts[MAX_CONTACTS].count;
    su->format = NS_FORMAT_CSV;
    if (opts[FORMAT].given && strcmp(opts[FORMAT].text, "bin") == 0)
        su->format = NS_FORMAT_BIN;
    else if (opts[FORMAT].given && strcmp(opts[FORMAT].text, "csv") != 0) {
        char shown[96];
        opt_quote(shown, sizeof shown, opts[FORMAT].text, 40);
        cli_usage_error("--format '%s' is neither csv nor bin", shown);
    }
    su->any_order = opts[ORDER].given && strcmp(opts[ORDER].text, "any") == 0;
    if (opts[ORDER].given && !su->any_order && strcmp(opts[ORDER].text, "sorted") != 0) {
        char shown[96];
        opt_quote(shown, sizeof shown, opts[ORDER].text, 40);
        cli_usage_error("--order '%s' is neither sorted nor any", shown);
    }
    if (su->any_order && opts[CHECK].given)
        cli_usage_error("--check compares the sorted lists: not with --order any");
    /* --order any: the limit on the total, checked as blocks are written; the
     * search keeps it too (0: the library's default), so that no batch, and
     * no kernel's whole list, grows past it before the total is checked */
    su->max_total = su->any_order ? su->cfg.max_contacts : 0;
    su->input = opts[INPUT].text;
    su->output = opts[OUTPUT].text;
    su->radius_given = opts[RADIUS].given;
    su->radius = opts[RADIUS].number;
    if (su->radius_given && su->radius != 0.0f && su->radius < 0x1p-60f)
        cli_usage_error("--radius %g is below 2^-60 (the radii the library takes: 0, or 2^-60 "
                        "to 2^60)",
                        (double)su->radius);
    su->check = opts[CHECK].given;
    su->stats = opts[STATS].given;
}

/* --check: the reference's sorted contacts compared with contacts. Returns 0
 * (*valid says whether they are the same) or the exit status. */
static int check_contacts(const pairs_setup *su, const ns_particles *p,
                          const ns_particle_file *file, const ns_contact_list *contacts,
                          bool *valid)
{
    ns_contact_list ref;
    ns_contact_list_init(&ref);
    const ns_kernel *reference = ns_kernel_with_reference(1); /* naive */
    ns_index *index;
    int rc = open_index(reference, &su->cfg, &index);
    if (rc == 0) {
        rc = search(index, reference, p, &ref, NULL, su->input, file, NULL);
        ns_index_destroy(index);
    }
    if (rc == 0) {
        ns_contact_list_sort(&ref);
        *valid = same_contacts(su->kernel->name, reference->name, &ref, contacts);
    }
    ns_contact_list_free(&ref);
    return rc;
}

static void print_stats(const pairs_setup *su, size_t n, size_t contacts, const pairs_times *t)
{
    fprintf(stderr,
            "particles          %zu\n"
            "contacts           %zu\n"
            "contacts/particle  %.3f\n"
            "read ms            %.3f\n"
            "build ms           %.3f\n"
            "query ms           %.3f\n"
            "sort ms            %.3f\n"
            "write ms           %.3f\n"
            "index bytes        %zu\n"
            "index layout       %s\n"
            "index levels       %d\n"
            "kernel             %s (%d threads)\n",
            n, contacts, n ? 2.0 * (double)contacts / (double)n : 0.0, t->read, t->build, t->query,
            t->sort, t->write, t->index_bytes, t->layout ? t->layout : "-", t->levels,
            su->kernel->name, t->threads);
}

/* Reads the particles into file; 0 or the exit status. */
static int read_input(const pairs_setup *su, ns_particle_file *file, double *read_ms)
{
    double t0 = tool_ms();
    int rc = cli_read_particles(su->input, file);
    if (rc)
        return rc;
    *read_ms = tool_ms() - t0;
    if (file->columns == 3 && !su->radius_given) {
        cli_say("%s: the particles have no radius column (x,y,z): give --radius R", su->input);
        return EXIT_USAGE;
    }
    if (file->columns == 4 && su->radius_given) {
        cli_say("%s: the particles have radii (x,y,z,r): --radius is only for x,y,z files",
                su->input);
        return EXIT_USAGE;
    }
    return 0;
}

int cli_pairs(int argc, char **argv)
{
    pairs_setup su;
    parse_pairs(argc, argv, &su);
    /* where the contacts go: checked before anything is read or searched */
    output out;
    int rc = output_open(&out, su.output);
    if (rc)
        return rc;
    ns_index *index;
    if ((rc = open_index(su.kernel, &su.cfg, &index)) != 0) {
        output_discard(&out);
        return rc;
    }
    pairs_times t = {0};
    ns_particle_file file = {0};
    ns_contact_list contacts;
    ns_contact_list_init(&contacts);
    rc = read_input(&su, &file, &t.read);
    ns_particles p = {file.n, file.pos, file.radius, su.radius};
    block_writer to = {
        .f = out.f, .name = output_name(&out), .format = su.format, .max_total = su.max_total};
    if (rc == 0)
        rc =
            search(index, su.kernel, &p, &contacts, su.any_order ? &to : NULL, su.input, &file, &t);
    ns_index_destroy(index); /* before the sort and the write: its memory is theirs */
    if (rc)
        goto done;
    double t1 = tool_ms();
    if (!su.any_order)
        ns_contact_list_sort(&contacts);
    t.sort = tool_ms() - t1;
    /* For the tests of --check (tests/cli): NSEARCH_TEST_CORRUPT=1 changes one
     * contact, as a wrong kernel would. */
    const char *corrupt = getenv("NSEARCH_TEST_CORRUPT");
    if (corrupt && strcmp(corrupt, "1") == 0 && contacts.count && contacts.items)
        contacts.items[0].overlap = nextafterf(contacts.items[0].overlap, INFINITY);
    bool valid = true;
    if (su.check && (rc = check_contacts(&su, &p, &file, &contacts, &valid)) != 0)
        goto done;

    /* write (a streamed query has written already): a difference found by
     * --check leaves an output file as it was */
    double t2 = tool_ms();
    ns_error err;
    if (!valid && out.replace) {
        rc = EXIT_INVALID;
    } else if (!to.streamed && ns_contacts_write(out.f, &contacts, su.format, &err) != NS_OK) {
        cli_say("%s: %s", output_name(&out), err.message);
        rc = EXIT_FAIL;
    } else if (!output_commit(&out, true)) {
        rc = EXIT_FAIL;
    } else {
        rc = valid ? 0 : EXIT_INVALID;
    }
    t.write = tool_ms() - t2;
    if (su.stats && rc != EXIT_FAIL)
        print_stats(&su, p.n, contacts.count, &t);
done:
    output_discard(&out); /* nothing left to drop after a commit */
    ns_contact_list_free(&contacts);
    ns_particle_file_free(&file);
    return rc;
}
