/* testlib.h - helpers shared by the nsearch tests: particle sets, running a
 * kernel, exact comparison of contact lists, contact property checks and an
 * independent O(n^2) reference written from docs/design.md's predicate. */
#ifndef NS_TESTLIB_H
#define NS_TESTLIB_H

#include "check.h"
#include "nsearch.h"

#include <stddef.h>
#include <stdint.h>

/* Status check that prints both names and the error message. */
#define CHECK_STATUS(got, want, errp)                                                              \
    do {                                                                                           \
        ns_status check_sg_ = (got), check_sw_ = (want);                                           \
        const ns_error *check_e_ = (errp);                                                         \
        CHECK_COUNT_();                                                                            \
        if (check_sg_ != check_sw_ && check_fail(__FILE__, __LINE__))                              \
            fprintf(stderr, "  status %s: got %d (%s), want %d (%s); message: %s\n", #got,         \
                    (int)check_sg_, ns_status_str(check_sg_), (int)check_sw_,                      \
                    ns_status_str(check_sw_), check_e_ ? check_e_->message : "(no ns_error)");     \
    } while (0)

/* A particle set owned by the test (plain malloc, never the library's hook).
 * pos and radius are never NULL, even for n = 0. */
typedef struct tl_set {
    size_t n;
    float *pos;
    float *radius;
} tl_set;

void tl_set_init(tl_set *s, size_t n);
void tl_set_free(tl_set *s);
void tl_set_put(tl_set *s, size_t i, float x, float y, float z, float r);
/* Appends the particles of b to a (a grows). */
void tl_set_append(tl_set *a, const tl_set *b);
/* Appends one particle to s. */
void tl_add_particle(tl_set *s, float x, float y, float z, float r);
/* dst = a copy of src's contacts (dst grows as needed). */
void tl_copy_list(ns_contact_list *dst, const ns_contact_list *src);
/* Appends count >= 1 contacts to *list (REQUIREs the memory). */
void tl_append_contacts(ns_contact_list *list, const ns_contact *c, size_t count);
/* Fills err with values no call leaves there, so a call that forgets to
 * set it is seen. */
void tl_poison_error(ns_error *err);
/* Per-particle radii view of the set. */
ns_particles tl_particles(const tl_set *s);
/* Fills s (re-initialised to n particles) from a workload generator, with
 * one thread; REQUIREs it succeeds. */
void tl_generate(const ns_workload *w, size_t n, uint64_t seed, tl_set *s);
/* Whether a test sweeping sizes takes workload w at n: a costly workload
 * (cache_version > 0: it runs a simulation) only up to TL_COSTLY_MAX_N. */
#define TL_COSTLY_MAX_N 2000
bool tl_affordable(const ns_workload *w, size_t n);

const ns_kernel *tl_kernel(const char *name);     /* REQUIREs it exists */
const ns_kernel *tl_reference_kernel(void);       /* the table's reference 1 (naive) */
const ns_workload *tl_workload(const char *name); /* REQUIREs it exists */

float tl_radius(const ns_particles *p, size_t i);
uint32_t tl_bits(float f);

/* splitmix64 */
uint64_t tl_rng(uint64_t *state);
float tl_rng_float(uint64_t *state, float lo, float hi);

/* The error half of the failure contract, for any call: err->status equals a
 * failed st and the message is non-empty and terminated. Nothing for NS_OK. */
void tl_check_error(ns_status st, const ns_error *err);

/* Runs ns_find_contacts and, on NS_OK, sorts the list. On failure it checks
 * the documented failure contract: err->status == returned status, a
 * non-empty message, and contacts->count == 0. err may be NULL (a local one
 * is used). */
ns_status tl_find(const ns_kernel *k, const ns_particles *p, const ns_config *cfg,
                  ns_contact_list *contacts, ns_error *err);
/* The same through create / build / query / destroy. */
ns_status tl_find_index(const ns_kernel *k, const ns_particles *p, const ns_config *cfg,
                        ns_contact_list *contacts, ns_error *err);

/* Index of the first contact where a and b differ (bitwise, including the
 * sign of zero), or SIZE_MAX when they are identical. Count differences
 * give min(count) when the common prefix is equal. */
size_t tl_first_difference(const ns_contact_list *a, const ns_contact_list *b);
/* Exact comparison; on a difference records a failure, prints the first
 * differing contact and returns 0. */
int tl_lists_equal(const ns_contact_list *ref, const ns_contact_list *got, const char *what);
void tl_print_contact(const char *label, const ns_contact *c);

/* Properties of a sorted contact list for particles p:
 * i < j < n, strictly increasing (i, j) (no duplicates), overlap finite and
 * in [0, r_i + r_j], normal finite with no -0, unit length within float
 * rounding, and (0, 0, 0) exactly when the centres coincide (d2 < FLT_MIN,
 * the smallest normal float). */
void tl_check_contacts(const ns_particles *p, const ns_contact_list *c, const char *what);

/* The test's own O(n^2) search, written from docs/design.md's predicate
 * (dx = x_j - x_i, d2 = dx*dx + dy*dy + dz*dz, contact iff d2 < (r_i+r_j)^2;
 * the normal (0, 0, 0) when d2 < FLT_MIN, else (dx, dy, dz) / sqrt(d2)).
 * Fills out (a list from ns_contact_list_init) in (i, j) order. */
void tl_reference(const ns_particles *p, ns_contact_list *out);
/* Compares a kernel's sorted list with tl_reference's: same pairs, overlap
 * bitwise equal, normal within 1e-6 of (dx, dy, dz) / d (the normal is
 * checked exactly between kernels by tl_lists_equal). */
void tl_compare_reference(const ns_contact_list *ref, const ns_contact_list *got, const char *what);

/* A test program's cases. `prog CASE [ARGS...]` runs one case and reports
 * it; `prog` alone lists the case names; `prog --ctest` lists the program's
 * ctests, one per line: name, labels (separated by commas), OMP_NUM_THREADS
 * ("-": unset), then the program's arguments, separated by tabs. tests/discover.cmake turns that
 * list into the ctests when the program is built, so a case is registered
 * once: in its program's table. */
typedef struct tl_case {
    const char *name;
    void (*run)(void);                       /* a case without arguments, or */
    void (*run_args)(int argc, char **argv); /* one that takes them */
    /* Its ctests when they are not the one SUITE/NAME without arguments:
     * calls tl_ctest() for each. */
    void (*ctests)(void);
    const char *ctest_name; /* the name of its one ctest; NULL: SUITE/NAME */
    bool each_kernel;       /* one ctest per kernel of the table instead:
                               SUITE/NAME/KERNEL, running `prog NAME KERNEL` */
    const char *label;      /* its ctests' label; NULL: the suite's */
    int threads;            /* OMP_NUM_THREADS of its ctests: 0 the suite's, -1 unset */
} tl_case;

typedef struct tl_suite {
    const char *name;  /* reports and default ctest names: SUITE/CASE */
    const char *label; /* the ctest label of its cases */
    int threads;       /* OMP_NUM_THREADS of its ctests; -1: unset */
    int every_path;    /* its ctests again on each other code path this CPU runs
                          (nsearch.h, ns_isa): NAME/isa-PATH, label isa, run as
                          `prog --isa PATH ...`, which sets NS_ISA. 0: not; -1:
                          every ctest; N > 0: those with N threads (the threads
                          run the same code on every path) */
} tl_suite;

/* One ctest: its name, label (NULL: the suite's), OMP_NUM_THREADS (0: the
 * suite's, -1: unset) and the program's arguments (up to three, the case
 * name first; NULL ends them). */
void tl_ctest(const char *name, const char *label, int threads, const char *arg0, const char *arg1,
              const char *arg2);
/* The label of a kernel's ctest: label (NULL: the suite's), and "serial"
 * too for a kernel that uses no threads, which ThreadSanitizer's runs leave
 * out. For the ctests() functions. */
const char *tl_kernel_label(const ns_kernel *K, const char *label);
int tl_main(const tl_suite *suite, const tl_case *cases, size_t ncases, int argc, char **argv);
/* The exit status of a test that cannot run here (ctest's SKIP_RETURN_CODE). */
#define TL_SKIP 77
/* The build's most portable code path (the last of ns_isa_paths()): the
 * reference kernel's searches in tl_find run on it. */
const char *tl_portable_path(void);

#endif /* NS_TESTLIB_H */
