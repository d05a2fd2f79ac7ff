/* Pieces shared by the runtime's files (not a public interface). */
#ifndef XCOMP_RUNTIME_INTERNAL_H
#define XCOMP_RUNTIME_INTERNAL_H

#include <stdio.h>

#include "xcomp/module.h"
#include "xcomp/runtime.h"

#ifndef XCOMP_VERSION
#define XCOMP_VERSION "unknown"
#endif

#endif
