/* xcomp tensor layouts a target may prefer for convolution networks. Shared
 * by the target interface (device capabilities) and the pass pipeline
 * (target traits). */
#ifndef XCOMP_LAYOUT_H
#define XCOMP_LAYOUT_H

typedef enum xc_layout {
  XC_LAYOUT_NCHW = 0,
  XC_LAYOUT_NHWC = 1,
} xc_layout_t;

#endif
