/* Forced into the cpu target's kernels by tests/cli/test_cli_opsuite.sh
 * (-include): pow two ulp toward zero, the error bound CUDA documents for
 * its pow, so integer Pow must not rely on pow being exact. */
#include <math.h>
static inline double xc_test_pow_2ulp_low(double a, double b) {
  double r = pow(a, b);
  return nextafter(nextafter(r, 0.0), 0.0);
}
#define pow xc_test_pow_2ulp_low
