/* The autotuner's cost model (tune/cost_model.c): Spearman's correlation on
 * series whose value is known (ties by hand); on synthetic schedule-like
 * data (log2 tile sizes, a vector width, pipeline stages, features that do
 * not matter; a nonlinear target with noise) a model trained on 200 rows
 * ranks 100 held-out rows with Spearman > 0.8, and again after retraining
 * on more rows; two models trained on the same rows predict the same bits;
 * an untrained model predicts 0; bad arguments are refused. A missing
 * XGBoost (XCOMP_XGBOOST_LIB=/nonexistent, in a forked child because the
 * library is loaded once per process) is XC_UNAVAILABLE naming the package.
 * Without libxgboost.so.0 on this machine everything but that check is
 * skipped. */
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "xcomp/tune.h"

enum { FEATURES = 8, TRAIN = 200, HELD_OUT = 100, MORE = 100 };

static void test_spearman(void) {
  const double a[] = {1, 2, 3, 4, 5};
  const double up[] = {10, 20, 30, 40, 50};
  const double curved[] = {1, 4, 9, 16, 1000}; /* monotone: ranks alike */
  const double down[] = {5, 4, 3, 2, 1};
  CHECK_NEAR(xc_spearman(a, up, 5), 1.0, 1e-12);
  CHECK_NEAR(xc_spearman(a, curved, 5), 1.0, 1e-12);
  CHECK_NEAR(xc_spearman(a, down, 5), -1.0, 1e-12);
  /* Ties: ranks of {1, 2, 2, 3} are {1, 2.5, 2.5, 4}, of {1, 3, 2, 4}
   * {1, 3, 2, 4}; deviations from 2.5 give cov 4.5, variances 4.5 and 5:
   * 4.5 / sqrt(22.5) = 3 / sqrt(10). */
  const double tied[] = {1, 2, 2, 3};
  const double other[] = {1, 3, 2, 4};
  CHECK_NEAR(xc_spearman(tied, other, 4), 3.0 / sqrt(10.0), 1e-12);
  CHECK_NEAR(xc_spearman(other, tied, 4), 3.0 / sqrt(10.0), 1e-12);
  /* Order of the input does not matter, only the pairing. */
  const double tied_shuffled[] = {3, 2, 1, 2};
  const double other_shuffled[] = {4, 2, 1, 3};
  CHECK_NEAR(xc_spearman(tied_shuffled, other_shuffled, 4), 3.0 / sqrt(10.0), 1e-12);
  const double constant[] = {7, 7, 7, 7, 7};
  CHECK(isnan(xc_spearman(a, constant, 5)));
  CHECK(isnan(xc_spearman(constant, a, 5)));
  CHECK(isnan(xc_spearman(a, up, 1)));
  CHECK(isnan(xc_spearman(a, up, 0)));
  const double with_nan[] = {1, NAN, 3, 4, 5};
  CHECK(isnan(xc_spearman(a, with_nan, 5)));
}

/* A small deterministic generator (xorshift64*): the data are the same on
 * every machine. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static uint64_t rng_next(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}
static int rng_int(int lo, int hi) { return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1)); }
static double rng_unit(void) { return (double)(rng_next() >> 11) / 9007199254740992.0; }

/* One schedule-like row: x0..x2 log2 tile sizes (3..7), x3 a vector width
 * (1, 2, 4), x4 pipeline stages (1..3), x5 log2 unroll (0..3) and x6, x7
 * noise features the target ignores. Higher y is better: a best tile of
 * 2^5 along x0, matched tiles along x1 and x2, wider vectors. */
static void make_row(float* x, float* y) {
  static const int widths[] = {1, 2, 4};
  x[0] = (float)rng_int(3, 7);
  x[1] = (float)rng_int(3, 7);
  x[2] = (float)rng_int(3, 7);
  x[3] = (float)widths[rng_int(0, 2)];
  x[4] = (float)rng_int(1, 3);
  x[5] = (float)rng_int(0, 3);
  x[6] = (float)rng_unit();
  x[7] = (float)rng_int(0, 9);
  double noise = (rng_unit() - 0.5) * 0.2;
  *y = (float)(-(x[0] - 5) * (x[0] - 5) - 0.5 * fabs(x[1] - x[2]) + 0.3 * x[3] + noise);
}

static void make_rows(float* x, float* y, int n) {
  for (int i = 0; i < n; i++) make_row(x + (size_t)i * FEATURES, y + i);
}

/* Spearman between the model's predictions of rows x and their targets y. */
static double held_out_spearman(xc_cost_model_t* m, const float* x, const float* y, int n) {
  float pred[HELD_OUT];
  double p[HELD_OUT], t[HELD_OUT];
  CHECK_OK(xc_cost_model_predict(m, x, n, pred));
  for (int i = 0; i < n; i++) {
    p[i] = pred[i];
    t[i] = y[i];
  }
  return xc_spearman(p, t, n);
}

static void test_arguments(xc_cost_model_t* m) {
  xc_cost_model_t* none = (xc_cost_model_t*)&none;
  CHECK_ERR(xc_cost_model_create(0, &none), "num_features");
  CHECK(none == NULL);
  CHECK_ERR(xc_cost_model_create(-3, &none), "num_features");
  CHECK_ERR(xc_cost_model_create(4, NULL), "out");
  float x[FEATURES] = {0}, y = 1, pred = 42;
  CHECK_ERR(xc_cost_model_add(NULL, x, &y, 1), "NULL");
  CHECK_ERR(xc_cost_model_add(m, NULL, &y, 1), "NULL");
  CHECK_ERR(xc_cost_model_add(m, x, NULL, 1), "NULL");
  CHECK_ERR(xc_cost_model_add(m, x, &y, -1), "n is");
  float bad_y = NAN;
  CHECK_ERR(xc_cost_model_add(m, x, &bad_y, 1), "finite");
  CHECK_ERR(xc_cost_model_predict(m, NULL, 1, &pred), "NULL");
  CHECK_ERR(xc_cost_model_predict(m, x, 1, NULL), "NULL");
  CHECK_ERR(xc_cost_model_predict(NULL, x, 1, &pred), "NULL");
  CHECK_ERR(xc_cost_model_train(NULL), "NULL");
  CHECK_ERR(xc_cost_model_train(m), "no rows");
  CHECK_EQ_INT(xc_cost_model_rows(NULL), 0);
  xc_cost_model_destroy(NULL);
  /* n == 0 is a no-op, with or without buffers. */
  CHECK_OK(xc_cost_model_add(m, NULL, NULL, 0));
  CHECK_OK(xc_cost_model_predict(m, NULL, 0, NULL));
  CHECK_EQ_INT(xc_cost_model_rows(m), 0);
  /* Untrained: every prediction is 0. */
  float xs[3 * FEATURES] = {1, 2, 3};
  float preds[3] = {5, 5, 5};
  CHECK_OK(xc_cost_model_predict(m, xs, 3, preds));
  CHECK(preds[0] == 0 && preds[1] == 0 && preds[2] == 0);
}

static void test_learns_ranking(void) {
  static float train_x[(TRAIN + MORE) * FEATURES], train_y[TRAIN + MORE];
  static float test_x[HELD_OUT * FEATURES], test_y[HELD_OUT];
  make_rows(train_x, train_y, TRAIN + MORE);
  make_rows(test_x, test_y, HELD_OUT);

  xc_cost_model_t* m = NULL;
  CHECK_OK(xc_cost_model_create(FEATURES, &m));
  if (!m) return;
  test_arguments(m);

  /* Added in two batches: the kept rows grow across calls. */
  CHECK_OK(xc_cost_model_add(m, train_x, train_y, TRAIN / 2));
  CHECK_OK(xc_cost_model_add(m, train_x + (TRAIN / 2) * FEATURES, train_y + TRAIN / 2, TRAIN / 2));
  CHECK_EQ_INT(xc_cost_model_rows(m), TRAIN);
  CHECK_OK(xc_cost_model_train(m));
  double rho = held_out_spearman(m, test_x, test_y, HELD_OUT);
  fprintf(stderr, "held-out Spearman after %d rows: %.4f\n", TRAIN, rho);
  CHECK(rho > 0.8);

  /* A second model on the same rows predicts the same bits. */
  xc_cost_model_t* twin = NULL;
  CHECK_OK(xc_cost_model_create(FEATURES, &twin));
  if (twin) {
    CHECK_OK(xc_cost_model_add(twin, train_x, train_y, TRAIN));
    CHECK_OK(xc_cost_model_train(twin));
    float a[HELD_OUT], b[HELD_OUT];
    CHECK_OK(xc_cost_model_predict(m, test_x, HELD_OUT, a));
    CHECK_OK(xc_cost_model_predict(twin, test_x, HELD_OUT, b));
    CHECK(memcmp(a, b, sizeof a) == 0);
    /* Training again on the same rows refits to the same model. */
    CHECK_OK(xc_cost_model_train(twin));
    CHECK_OK(xc_cost_model_predict(twin, test_x, HELD_OUT, b));
    CHECK(memcmp(a, b, sizeof a) == 0);
    xc_cost_model_destroy(twin);
  }

  /* Retraining after more rows replaces the model and still ranks well. */
  CHECK_OK(xc_cost_model_add(m, train_x + TRAIN * FEATURES, train_y + TRAIN, MORE));
  CHECK_EQ_INT(xc_cost_model_rows(m), TRAIN + MORE);
  CHECK_OK(xc_cost_model_train(m));
  double rho_more = held_out_spearman(m, test_x, test_y, HELD_OUT);
  fprintf(stderr, "held-out Spearman after %d rows: %.4f\n", TRAIN + MORE, rho_more);
  CHECK(rho_more > 0.8);

  /* A single-row predict agrees with the batch (row order plays no part). */
  float one = 0, batch[HELD_OUT];
  CHECK_OK(xc_cost_model_predict(m, test_x + 7 * FEATURES, 1, &one));
  CHECK_OK(xc_cost_model_predict(m, test_x, HELD_OUT, batch));
  CHECK(one == batch[7]);
  xc_cost_model_destroy(m);
}

/* In a child: the library named by XCOMP_XGBOOST_LIB does not exist, so the
 * model is unavailable and says what to install. Exits with the number of
 * failed checks. */
static void check_unavailable_in_child(void) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid < 0) return;
  if (pid == 0) {
    setenv("XCOMP_XGBOOST_LIB", "/nonexistent/libxgboost.so.0", 1);
    xc_cost_model_t* m = (xc_cost_model_t*)&m;
    xc_status_t st = xc_cost_model_create(4, &m);
    int failures = 0;
    if (xc_status_code(st) != XC_UNAVAILABLE) failures++;
    if (!strstr(xc_status_message(st), "libxgboost0")) failures++;
    if (!strstr(xc_status_message(st), "XCOMP_XGBOOST_LIB")) failures++;
    if (!strstr(xc_status_message(st), "/nonexistent")) failures++; /* dlerror names the path */
    if (m != NULL) failures++;
    if (failures) fprintf(stderr, "child: unexpected status %s: %s\n", xc_code_name(xc_status_code(st)),
                          xc_status_message(st));
    xc_status_free(st);
    /* A second call reports the same (the load is remembered, not retried). */
    st = xc_cost_model_create(4, &m);
    if (xc_status_code(st) != XC_UNAVAILABLE) failures++;
    xc_status_free(st);
    fflush(stderr);
    _exit(failures);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK_EQ_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

int main(void) {
  test_spearman();
  /* Before this process loads XGBoost (its thread pool must not be forked). */
  check_unavailable_in_child();

  xc_cost_model_t* probe = NULL;
  xc_status_t st = xc_cost_model_create(FEATURES, &probe);
  if (st) {
    CHECK_EQ_INT(xc_status_code(st), XC_UNAVAILABLE);
    fprintf(stderr, "skipped: %s\n", xc_status_message(st));
    xc_status_free(st);
    return xc_test_summary("test_cost_model");
  }
  xc_cost_model_destroy(probe);
  test_learns_ranking();
  return xc_test_summary("test_cost_model");
}
