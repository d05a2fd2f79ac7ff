/* xcomp tensor files: numpy .npy and ONNX TensorProto .pb, read and written
 * defensively (bad headers, truncated bodies and size mismatches are clear
 * errors naming the file).
 *
 * .npy: format 1.0/2.0/3.0; big-endian descrs are byte-swapped and
 * fortran_order files transposed on reading. numpy has no bfloat16: bf16 is
 * written as the 2-byte void type '<V2' and '<V2'/'|V2' reads back as bf16.
 * fp8 has no numpy spelling and is refused (use .pb).
 * .pb: raw_data or any typed field on reading; raw_data on writing. */
#ifndef XCOMP_TENSOR_IO_H
#define XCOMP_TENSOR_IO_H

#include "xcomp/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

xc_status_t xc_npy_read(const char* path, xc_tensor_t** out);
xc_status_t xc_npy_read_buffer(const void* data, size_t size, const char* what,
                               xc_tensor_t** out);
xc_status_t xc_npy_write(const char* path, const xc_tensor_t* t);

/* TensorProto. out_name (may be NULL) receives the tensor's name, malloc'd. */
xc_status_t xc_pb_read(const char* path, xc_tensor_t** out, char** out_name);
xc_status_t xc_pb_read_buffer(const void* data, size_t size, const char* what,
                              xc_tensor_t** out, char** out_name);
xc_status_t xc_pb_write(const char* path, const xc_tensor_t* t, const char* name);

/* Picks the reader by extension (.npy or .pb). */
xc_status_t xc_tensor_read_file(const char* path, xc_tensor_t** out, char** out_name);

#ifdef __cplusplus
}
#endif
#endif
