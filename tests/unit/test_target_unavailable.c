/* A target whose vendor library is missing is listed as unavailable with
 * what to install, refuses selection with that reason, and leaves the other
 * targets usable (XCOMP_OPENCL_LIBRARY points the opencl target at a library
 * that does not exist). */
#include <stdlib.h>

#include "test.h"
#include "xcomp/target.h"

int main(void) {
  setenv("XCOMP_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so.1", 1);
  unsetenv("XCOMP_PLUGIN_PATH");
  CHECK_OK(xc_targets_init());
  xc_target_t* opencl = xc_target_at(1);
  CHECK_STR(xc_target_name(opencl), "opencl");
  xc_status_t st = xc_target_availability(opencl);
  CHECK(st && xc_status_code(st) == XC_UNAVAILABLE);
  CHECK(st && strstr(xc_status_message(st),
                     "target opencl unavailable: /nonexistent/libOpenCL.so.1 not found — install "
                     "ocl-icd-libopencl1 and a driver such as pocl-opencl-icd") != NULL);
  xc_status_free(st);
  int count = -1;
  CHECK_ERR(xc_target_device_count(opencl, &count), "pocl-opencl-icd");
  CHECK_EQ_INT(count, 0);
  xc_target_t* t = NULL;
  CHECK_ERR(xc_target_find("opencl:0", &t, NULL), "unavailable");
  xc_device_t* dev = NULL;
  CHECK_ERR(xc_device_open("opencl", &dev), "ocl-icd-libopencl1");
  CHECK(dev == NULL);
  /* A device-name search skips the unavailable target. */
  CHECK_ERR(xc_target_find("no-such-device", &t, NULL), "no target or device matches");
  CHECK_OK(xc_device_open("cpu", &dev));
  xc_device_close(dev);
  CHECK_EQ_INT(xc_target_plugin_error_count(), 0);
  return xc_test_summary("test_target_unavailable");
}
