/* Minimal test harness: CHECK macros that record failures and keep going,
 * and a summary that sets the exit status. */
#ifndef XCOMP_TESTS_TEST_H
#define XCOMP_TESTS_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xcomp/status.h"

static int xc_test_failures = 0;
static int xc_test_checks = 0;

#define CHECK(cond)                                                         \
  do {                                                                      \
    xc_test_checks++;                                                       \
    if (!(cond)) {                                                          \
      xc_test_failures++;                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                       \
  } while (0)

#define CHECK_EQ_INT(a, b)                                                  \
  do {                                                                      \
    long long xa_ = (long long)(a), xb_ = (long long)(b);                   \
    xc_test_checks++;                                                       \
    if (xa_ != xb_) {                                                       \
      xc_test_failures++;                                                   \
      fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s = %lld, %s = %lld\n", \
              __FILE__, __LINE__, #a, xa_, #b, xb_);                        \
    }                                                                       \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                               \
  do {                                                                      \
    double xa_ = (double)(a), xb_ = (double)(b);                            \
    xc_test_checks++;                                                       \
    if (!(fabs(xa_ - xb_) <= (tol)) && !(isnan(xa_) && isnan(xb_))) {       \
      xc_test_failures++;                                                   \
      fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g\n",   \
              __FILE__, __LINE__, #a, xa_, #b, xb_);                        \
    }                                                                       \
  } while (0)

#define CHECK_STR(a, b)                                                     \
  do {                                                                      \
    const char *xa_ = (a), *xb_ = (b);                                      \
    xc_test_checks++;                                                       \
    if (!xa_ || !xb_ || strcmp(xa_, xb_) != 0) {                            \
      xc_test_failures++;                                                   \
      fprintf(stderr, "%s:%d: CHECK_STR failed: \"%s\" vs \"%s\"\n",        \
              __FILE__, __LINE__, xa_ ? xa_ : "(null)", xb_ ? xb_ : "(null)"); \
    }                                                                       \
  } while (0)

/* Expects success; prints the message and counts a failure otherwise. */
#define CHECK_OK(expr)                                                      \
  do {                                                                      \
    xc_status_t st_ = (expr);                                               \
    xc_test_checks++;                                                       \
    if (st_) {                                                              \
      xc_test_failures++;                                                   \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,  \
              xc_status_message(st_));                                      \
      xc_status_free(st_);                                                  \
    }                                                                       \
  } while (0)

/* Expects an error whose message contains `needle`. */
#define CHECK_ERR(expr, needle)                                             \
  do {                                                                      \
    xc_status_t st_ = (expr);                                               \
    xc_test_checks++;                                                       \
    if (!st_) {                                                             \
      xc_test_failures++;                                                   \
      fprintf(stderr, "%s:%d: %s unexpectedly succeeded\n", __FILE__,       \
              __LINE__, #expr);                                             \
    } else if (!strstr(xc_status_message(st_), (needle))) {                 \
      xc_test_failures++;                                                   \
      fprintf(stderr, "%s:%d: %s: message \"%s\" lacks \"%s\"\n", __FILE__, \
              __LINE__, #expr, xc_status_message(st_), (needle));           \
    }                                                                       \
    xc_status_free(st_);                                                    \
  } while (0)

static inline int xc_test_summary(const char* name) {
  fprintf(stderr, "%s: %d checks, %d failed\n", name, xc_test_checks,
          xc_test_failures);
  return xc_test_failures ? 1 : 0;
}

#endif
