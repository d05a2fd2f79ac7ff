/* Pieces shared by the runtime's files (not a public interface). */
#ifndef XCOMP_RUNTIME_INTERNAL_H
#define XCOMP_RUNTIME_INTERNAL_H

#include <stdio.h>

#include "xcomp/module.h"
#include "xcomp/runtime.h"

#ifndef XCOMP_VERSION
#define XCOMP_VERSION "unknown"
#endif

/* xc_write_file_atomic / xc_compiled_module_write with the file's mode
 * (the cache writes 0600: its entries are code the next compile runs). */
xc_status_t xc_write_file_atomic_mode(const char* path, const void* bytes, size_t size, unsigned mode);
xc_status_t xc_compiled_module_write_mode(const xc_compiled_module_t* m, const char* path, unsigned mode);

/* runtime/module_check.c: the plan against the graph's value types; every
 * kernel access against the values a step binds, under a binding of the
 * symbols; whether a module has no symbols (then the empty binding is its
 * only one). `what` names the module in messages. */
xc_status_t xc_cm_check_values(const xc_compiled_module_t* m, const char* what);
xc_status_t xc_cm_check_accesses(const xc_compiled_module_t* m, const xc_symbind_t* binds, const char* what);
bool xc_cm_is_static(const xc_compiled_module_t* m);

/* runtime/memplan.c: gives every planned root value a slot of its own (no
 * reuse; aliases keep sharing their root's), for runs that keep every
 * intermediate value readable. */
xc_status_t xc_memplan_unshare(xc_memplan_t* p);

#endif
