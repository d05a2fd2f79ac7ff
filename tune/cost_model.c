/* The autotuner's learned cost model (include/xcomp/tune.h, docs/autotune.md
 * "The cost model"): gradient-boosted trees over schedule features, trained
 * through XGBoost's C API. XGBoost is loaded with dlopen on first use (no
 * link-time dependency, no build-time header: the device machines do not
 * have it), its functions resolved once per process into one table. A model
 * keeps every row it was given so each training starts from scratch on all
 * of them: the tuner's data set is small (hundreds to a few thousand
 * measurements) and a fresh fit is cheaper to reason about than boosting on
 * top of a model fitted to fewer rows.
 *
 * A model is not safe to use from several threads at once; distinct models
 * are. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xcomp/tune.h"

/* ---- the XGBoost C API, declared here (signatures of xgboost/c_api.h) ---- */

typedef uint64_t xgb_ulong; /* bst_ulong */
typedef void* DMatrixHandle;
typedef void* BoosterHandle;

#define XC_XGB_FUNCTIONS(X)                                                                                   \
  X(void, XGBoostVersion, (int* major, int* minor, int* patch))                                               \
  X(const char*, XGBGetLastError, (void))                                                                     \
  X(int, XGDMatrixCreateFromMat, (const float* data, xgb_ulong nrow, xgb_ulong ncol, float missing,           \
                                  DMatrixHandle* out))                                                        \
  X(int, XGDMatrixSetFloatInfo, (DMatrixHandle handle, const char* field, const float* array, xgb_ulong len)) \
  X(int, XGDMatrixFree, (DMatrixHandle handle))                                                               \
  X(int, XGBoosterCreate, (const DMatrixHandle dmats[], xgb_ulong len, BoosterHandle* out))                   \
  X(int, XGBoosterSetParam, (BoosterHandle handle, const char* name, const char* value))                      \
  X(int, XGBoosterUpdateOneIter, (BoosterHandle handle, int iter, DMatrixHandle dtrain))                      \
  X(int, XGBoosterPredictFromDMatrix, (BoosterHandle handle, DMatrixHandle dmat, const char* config,          \
                                       const xgb_ulong** out_shape, xgb_ulong* out_dim,                       \
                                       const float** out_result))                                             \
  X(int, XGBoosterFree, (BoosterHandle handle))

static struct {
#define XC_XGB_MEMBER(ret, name, params) ret(*name) params;
  XC_XGB_FUNCTIONS(XC_XGB_MEMBER)
#undef XC_XGB_MEMBER
} xgb;

#define XGB_HINT "the cost model needs XGBoost: install libxgboost0 (or set XCOMP_XGBOOST_LIB)"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_loaded;
static char g_why[512]; /* why loading failed (the status is made per call: callers free theirs) */
static char g_version[48]; /* "XGBoost 1.7.4": in every XGBoost error, for reports from other machines */

static void load_library(void) {
  const char* override = getenv("XCOMP_XGBOOST_LIB");
  /* An explicit path is taken alone: falling back to the system library
   * would hide a mistyped override. */
  const char* names[] = {"libxgboost.so.0", "libxgboost.so"};
  const char* tried = override && *override ? override : names[0];
  void* lib = NULL;
  if (override && *override) {
    lib = dlopen(override, RTLD_NOW | RTLD_LOCAL);
  } else {
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
      lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib) {
    const char* err = dlerror();
    snprintf(g_why, sizeof g_why, XGB_HINT ": %s", err ? err : tried);
    return;
  }
#define XC_XGB_RESOLVE(ret, name, params)                                                    \
  if (!(*(void**)&xgb.name = dlsym(lib, #name))) {                                           \
    const char* err = dlerror();                                                             \
    snprintf(g_why, sizeof g_why, XGB_HINT ": %s lacks %s (XGBoost 1.4 or newer is needed): %s", \
             tried, #name, err ? err : "");                                                  \
    dlclose(lib); /* nothing of it was used */                                               \
    return;                                                                                  \
  }
  XC_XGB_FUNCTIONS(XC_XGB_RESOLVE)
#undef XC_XGB_RESOLVE
  int major = 0, minor = 0, patch = 0;
  xgb.XGBoostVersion(&major, &minor, &patch);
  snprintf(g_version, sizeof g_version, "XGBoost %d.%d.%d", major, minor, patch);
  /* Never dlclose'd: XGBoost keeps process-wide state (its OpenMP thread
   * pool, registries filled by static constructors) that must not be
   * unloaded under a running process. */
  g_loaded = true;
}

static xc_status_t xgb_load(void) {
  pthread_once(&g_once, load_library);
  return g_loaded ? NULL : xc_error(XC_UNAVAILABLE, "%s", g_why);
}

/* Every XGBoost call returns 0 or -1; the reason is in its (thread-local)
 * last-error string. */
static xc_status_t xgb_check(int rc, const char* what) {
  if (rc == 0) return NULL;
  const char* err = xgb.XGBGetLastError();
  return xc_error(XC_INTERNAL, "cost model: %s failed (%s): %s", what, g_version,
                  err && *err ? err : "(no message)");
}

/* ---- the model ---- */

struct xc_cost_model {
  int num_features;
  int rows;      /* rows added */
  int capacity;  /* rows x and y have room for */
  float* x;      /* rows x num_features, row-major */
  float* y;      /* rows */
  BoosterHandle booster; /* NULL until the first successful training */
};

/* The boosting parameters (docs/autotune.md "The cost model"). Trees of depth
 * 6 with step 0.3 are XGBoost's defaults and fit the interactions between
 * tile sizes well; the number of rounds grows with the data (20 rounds on a
 * few dozen rows, 100 from 640 rows on): few rows overfit with many rounds
 * and train in no time anyway. */
enum { XGB_MAX_DEPTH = 6, XGB_MIN_ROUNDS = 20, XGB_MAX_ROUNDS = 100 };
#define XGB_ETA "0.3"

static int boosting_rounds(int rows) {
  int r = XGB_MIN_ROUNDS + rows / 8;
  return r > XGB_MAX_ROUNDS ? XGB_MAX_ROUNDS : r;
}

xc_status_t xc_cost_model_create(int num_features, xc_cost_model_t** out) {
  if (!out) return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_create: out is NULL");
  *out = NULL;
  if (num_features < 1)
    return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_create: num_features is %d (at least 1 is needed)",
                    num_features);
  XC_RETURN_IF_ERROR(xgb_load());
  xc_cost_model_t* m = calloc(1, sizeof *m);
  if (!m) return xc_error_oom();
  m->num_features = num_features;
  *out = m;
  return NULL;
}

void xc_cost_model_destroy(xc_cost_model_t* m) {
  if (!m) return;
  if (m->booster) xgb.XGBoosterFree(m->booster); /* nonzero only for a bad handle: nothing to report */
  free(m->x);
  free(m->y);
  free(m);
}

int xc_cost_model_rows(const xc_cost_model_t* m) { return m ? m->rows : 0; }

/* Grows x and y to hold at least `need` rows (doubling, sizes checked). */
static xc_status_t reserve_rows(xc_cost_model_t* m, int64_t need) {
  if (need <= m->capacity) return NULL;
  int64_t cap = m->capacity ? m->capacity : 64;
  while (cap < need) cap *= 2;
  if (cap > INT32_MAX) cap = need;
  int64_t x_count;
  if (need > INT32_MAX || !xc_mul_i64(cap, m->num_features, &x_count) ||
      x_count > (int64_t)(SIZE_MAX / sizeof(float)))
    return xc_error(XC_RESOURCE_EXHAUSTED, "cost model: %lld rows of %d features is too many", (long long)need,
                    m->num_features);
  float* x = realloc(m->x, (size_t)x_count * sizeof(float));
  if (!x) return xc_error_oom();
  m->x = x;
  float* y = realloc(m->y, (size_t)cap * sizeof(float));
  if (!y) return xc_error_oom();
  m->y = y;
  m->capacity = (int)cap;
  return NULL;
}

xc_status_t xc_cost_model_add(xc_cost_model_t* m, const float* features, const float* y, int n) {
  if (!m) return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_add: model is NULL");
  if (n < 0) return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_add: n is %d", n);
  if (n == 0) return NULL;
  if (!features || !y) return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_add: features or y is NULL");
  /* A NaN or infinite target would poison every tree; a NaN feature is
   * fine (XGBoost treats it as missing). */
  for (int i = 0; i < n; i++)
    if (!isfinite(y[i]))
      return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_add: y[%d] is %g (targets must be finite)", i,
                      (double)y[i]);
  XC_RETURN_IF_ERROR(reserve_rows(m, (int64_t)m->rows + n));
  size_t width = (size_t)m->num_features;
  memcpy(m->x + (size_t)m->rows * width, features, (size_t)n * width * sizeof(float));
  memcpy(m->y + m->rows, y, (size_t)n * sizeof(float));
  m->rows += n;
  return NULL;
}

/* A dense matrix of n rows over the caller's data (copied by XGBoost). */
static xc_status_t make_matrix(const xc_cost_model_t* m, const float* features, int n, DMatrixHandle* out) {
  *out = NULL;
  return xgb_check(xgb.XGDMatrixCreateFromMat(features, (xgb_ulong)n, (xgb_ulong)m->num_features, NAN, out),
                   "XGDMatrixCreateFromMat");
}

static xc_status_t set_params(BoosterHandle b) {
  char threads[32], depth[32];
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  snprintf(threads, sizeof threads, "%ld", cores > 0 ? cores : 1);
  snprintf(depth, sizeof depth, "%d", XGB_MAX_DEPTH);
  /* Regression on the target itself: the tuner ranks candidates by the
   * predicted score, and on schedule-like data squared error ranked held-out
   * rows as well as or better than rank:pairwise (docs/autotune.md). "hist"
   * with a fixed seed and no row or column sampling makes the fit the same
   * on every run of a machine (the test checks two fits agree bit for bit). */
  const char* params[][2] = {
      {"booster", "gbtree"},   {"objective", "reg:squarederror"},
      {"tree_method", "hist"}, {"max_depth", depth},
      {"eta", XGB_ETA},        {"min_child_weight", "1"},
      {"subsample", "1"},      {"colsample_bytree", "1"},
      {"seed", "0"},           {"nthread", threads},
      {"verbosity", "0"},
  };
  for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
    xc_status_t st = xgb_check(xgb.XGBoosterSetParam(b, params[i][0], params[i][1]), "XGBoosterSetParam");
    if (st) return xc_status_annotate(st, "%s=%s", params[i][0], params[i][1]);
  }
  return NULL;
}

xc_status_t xc_cost_model_train(xc_cost_model_t* m) {
  if (!m) return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_train: model is NULL");
  if (m->rows == 0) return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_train: no rows were added");
  DMatrixHandle train = NULL;
  BoosterHandle booster = NULL;
  xc_status_t st = make_matrix(m, m->x, m->rows, &train);
  if (!st) st = xgb_check(xgb.XGDMatrixSetFloatInfo(train, "label", m->y, (xgb_ulong)m->rows), "XGDMatrixSetFloatInfo");
  if (!st) st = xgb_check(xgb.XGBoosterCreate(&train, 1, &booster), "XGBoosterCreate");
  if (!st) st = set_params(booster);
  int rounds = boosting_rounds(m->rows);
  for (int i = 0; !st && i < rounds; i++)
    st = xgb_check(xgb.XGBoosterUpdateOneIter(booster, i, train), "XGBoosterUpdateOneIter");
  if (train) xgb.XGDMatrixFree(train);
  if (st) {
    if (booster) xgb.XGBoosterFree(booster);
    return xc_status_annotate(st, "training the cost model on %d rows", m->rows);
  }
  /* The previous model is replaced only by a complete one: a failed
   * training leaves the model predicting as before. */
  if (m->booster) xgb.XGBoosterFree(m->booster);
  m->booster = booster;
  return NULL;
}

xc_status_t xc_cost_model_predict(xc_cost_model_t* m, const float* features, int n, float* out) {
  if (!m) return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_predict: model is NULL");
  if (n < 0) return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_predict: n is %d", n);
  if (n == 0) return NULL;
  if (!features || !out) return xc_error(XC_INVALID_ARGUMENT, "xc_cost_model_predict: features or out is NULL");
  if (!m->booster) {
    memset(out, 0, (size_t)n * sizeof *out);
    return NULL;
  }
  DMatrixHandle data = NULL;
  XC_RETURN_IF_ERROR(make_matrix(m, features, n, &data));
  /* type 0: the plain prediction, every tree (iteration_end 0). */
  static const char config[] =
      "{\"type\": 0, \"training\": false, \"iteration_begin\": 0, \"iteration_end\": 0, \"strict_shape\": false}";
  const xgb_ulong* shape = NULL;
  xgb_ulong dim = 0;
  const float* result = NULL;
  xc_status_t st = xgb_check(xgb.XGBoosterPredictFromDMatrix(m->booster, data, config, &shape, &dim, &result),
                             "XGBoosterPredictFromDMatrix");
  if (!st && (dim < 1 || !shape || shape[0] != (xgb_ulong)n || !result))
    st = xc_error(XC_INTERNAL, "cost model: XGBoost returned %llu predictions for %d rows",
                  dim >= 1 && shape ? (unsigned long long)shape[0] : 0ULL, n);
  /* The result lives in the booster until its next call: copy it now. */
  if (!st) memcpy(out, result, (size_t)n * sizeof *out);
  xgb.XGDMatrixFree(data);
  return st;
}

/* ---- Spearman's rank correlation ---- */

typedef struct {
  double value;
  int index;
} ranked_t;

static int compare_ranked(const void* pa, const void* pb) {
  const ranked_t* a = pa;
  const ranked_t* b = pb;
  if (a->value != b->value) return a->value < b->value ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index); /* a total order: qsort is not stable */
}

/* Ranks 1..n of v into rank, ties sharing the average of their positions.
 * scratch holds n entries. */
static void average_ranks(const double* v, int n, ranked_t* scratch, double* rank) {
  for (int i = 0; i < n; i++) scratch[i] = (ranked_t){v[i], i};
  qsort(scratch, (size_t)n, sizeof *scratch, compare_ranked);
  for (int i = 0; i < n;) {
    int j = i + 1;
    while (j < n && scratch[j].value == scratch[i].value) j++;
    double r = (i + 1 + j) / 2.0; /* mean of positions i+1 .. j */
    for (int k = i; k < j; k++) rank[scratch[k].index] = r;
    i = j;
  }
}

double xc_spearman(const double* a, const double* b, int n) {
  if (!a || !b || n < 2) return NAN;
  for (int i = 0; i < n; i++)
    if (isnan(a[i]) || isnan(b[i])) return NAN; /* a NaN has no place in an order */
  ranked_t* scratch = malloc((size_t)n * sizeof *scratch);
  double* ranks = malloc(2 * (size_t)n * sizeof *ranks);
  if (!scratch || !ranks) {
    free(scratch);
    free(ranks);
    return NAN;
  }
  double* ra = ranks;
  double* rb = ranks + n;
  average_ranks(a, n, scratch, ra);
  average_ranks(b, n, scratch, rb);
  free(scratch);
  /* Pearson's correlation of the ranks; both have mean (n + 1) / 2. */
  double mean = (n + 1) / 2.0, cov = 0, var_a = 0, var_b = 0;
  for (int i = 0; i < n; i++) {
    double da = ra[i] - mean, db = rb[i] - mean;
    cov += da * db;
    var_a += da * da;
    var_b += db * db;
  }
  free(ranks);
  if (var_a == 0 || var_b == 0) return NAN; /* a constant series */
  return cov / sqrt(var_a * var_b);
}
