/* check.h - a minimal assertion kit for the nsearch tests.
 *
 * CHECK* macros record a failure (file:line, the expression, the values and
 * the current check_context) and carry on; REQUIRE* stops the test at once.
 * A test's main() ends with `return check_report(name);`, which exits
 * non-zero when any check failed. Only the first CHECK_PRINT_LIMIT failures
 * are printed in full; the rest are counted.
 */
#ifndef NS_TEST_CHECK_H
#define NS_TEST_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_PRINT_LIMIT 40

extern int check_failures;
extern int check_count;
/* What is being tested right now (kernel, workload, case); printed with
 * every failure. Set it with check_set_context(). */
extern char check_context[512];

void check_set_context(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Records a failure; returns non-zero when its details should be printed. */
int check_fail(const char *file, int line);
/* Prints a summary; returns the process exit status (0 = all passed). */
int check_report(const char *test_name);

#define CHECK_COUNT_() (check_count++)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        CHECK_COUNT_();                                                                            \
        if (!(cond) && check_fail(__FILE__, __LINE__))                                             \
            fprintf(stderr, "  CHECK(%s) failed\n", #cond);                                        \
    } while (0)

/* CHECK with a printf-style explanation. */
#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        CHECK_COUNT_();                                                                            \
        if (!(cond) && check_fail(__FILE__, __LINE__)) {                                           \
            fprintf(stderr, "  CHECK(%s) failed: ", #cond);                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_U(a, b)                                                                           \
    do {                                                                                           \
        unsigned long long check_a_ = (unsigned long long)(a);                                     \
        unsigned long long check_b_ = (unsigned long long)(b);                                     \
        CHECK_COUNT_();                                                                            \
        if (check_a_ != check_b_ && check_fail(__FILE__, __LINE__))                                \
            fprintf(stderr, "  CHECK_EQ(%s, %s) failed: %llu != %llu\n", #a, #b, check_a_,         \
                    check_b_);                                                                     \
    } while (0)

#define CHECK_EQ_I(a, b)                                                                           \
    do {                                                                                           \
        long long check_a_ = (long long)(a);                                                       \
        long long check_b_ = (long long)(b);                                                       \
        CHECK_COUNT_();                                                                            \
        if (check_a_ != check_b_ && check_fail(__FILE__, __LINE__))                                \
            fprintf(stderr, "  CHECK_EQ(%s, %s) failed: %lld != %lld\n", #a, #b, check_a_,         \
                    check_b_);                                                                     \
    } while (0)

/* Relational checks on unsigned values: op is <, <=, >, >=, != . */
#define CHECK_CMP_U(a, op, b)                                                                      \
    do {                                                                                           \
        unsigned long long check_a_ = (unsigned long long)(a);                                     \
        unsigned long long check_b_ = (unsigned long long)(b);                                     \
        CHECK_COUNT_();                                                                            \
        if (!(check_a_ op check_b_) && check_fail(__FILE__, __LINE__))                             \
            fprintf(stderr, "  CHECK(%s %s %s) failed: %llu vs %llu\n", #a, #op, #b, check_a_,     \
                    check_b_);                                                                     \
    } while (0)

#define CHECK_CMP_D(a, op, b)                                                                      \
    do {                                                                                           \
        double check_a_ = (double)(a);                                                             \
        double check_b_ = (double)(b);                                                             \
        CHECK_COUNT_();                                                                            \
        if (!(check_a_ op check_b_) && check_fail(__FILE__, __LINE__))                             \
            fprintf(stderr, "  CHECK(%s %s %s) failed: %.9g vs %.9g\n", #a, #op, #b, check_a_,     \
                    check_b_);                                                                     \
    } while (0)

/* Exact float equality including the sign of zero (bitwise). */
#define CHECK_EQ_F32_BITS(a, b)                                                                    \
    do {                                                                                           \
        float check_fa_ = (a), check_fb_ = (b);                                                    \
        uint32_t check_ua_, check_ub_;                                                             \
        memcpy(&check_ua_, &check_fa_, 4);                                                         \
        memcpy(&check_ub_, &check_fb_, 4);                                                         \
        CHECK_COUNT_();                                                                            \
        if (check_ua_ != check_ub_ && check_fail(__FILE__, __LINE__))                              \
            fprintf(stderr,                                                                        \
                    "  CHECK_EQ_F32_BITS(%s, %s) failed: %.9g (0x%08lx) != %.9g "                  \
                    "(0x%08lx)\n",                                                                 \
                    #a, #b, (double)check_fa_, (unsigned long)check_ua_, (double)check_fb_,        \
                    (unsigned long)check_ub_);                                                     \
    } while (0)

#define CHECK_STR_CONTAINS(haystack, needle)                                                       \
    do {                                                                                           \
        const char *check_h_ = (haystack);                                                         \
        const char *check_n_ = (needle);                                                           \
        CHECK_COUNT_();                                                                            \
        if ((check_h_ == NULL || strstr(check_h_, check_n_) == NULL) &&                            \
            check_fail(__FILE__, __LINE__))                                                        \
            fprintf(stderr, "  \"%s\" does not contain \"%s\"\n", check_h_ ? check_h_ : "(null)",  \
                    check_n_);                                                                     \
    } while (0)

/* Stops the test: for preconditions without which the rest is meaningless. */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        CHECK_COUNT_();                                                                            \
        if (!(cond)) {                                                                             \
            check_fail(__FILE__, __LINE__);                                                        \
            fprintf(stderr, "  REQUIRE(%s) failed; stopping\n", #cond);                            \
            exit(check_report("(stopped)"));                                                       \
        }                                                                                          \
    } while (0)

#endif /* NS_TEST_CHECK_H */
