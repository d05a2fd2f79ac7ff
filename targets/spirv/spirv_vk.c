/* The Vulkan runtime, first half: libvulkan.so.1 opened at run time, one
 * instance per process (created on first use under a mutex, destroyed by
 * spv_vk_shutdown), the physical devices that have a compute queue with
 * their capabilities, and VkDevice creation with exactly the features the
 * emitted code may use. spirv_vk_device.c runs work on an opened device. */
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spirv_vk.h"

#define INSTALL_HINT \
  "install a Vulkan driver and loader: apt-get install libvulkan1 mesa-vulkan-drivers (lavapipe, Vulkan on the CPU)"

/* X(name, required) for the instance-level functions. */
#define SPV_VK_INSTANCE_FUNCTIONS(X)                                                                \
  X(vkDestroyInstance, 1) X(vkEnumeratePhysicalDevices, 1) X(vkGetPhysicalDeviceProperties, 1)      \
  X(vkGetPhysicalDeviceProperties2, 1) X(vkGetPhysicalDeviceFeatures2, 1)                           \
  X(vkGetPhysicalDeviceMemoryProperties, 1) X(vkGetPhysicalDeviceQueueFamilyProperties, 1)          \
  X(vkEnumerateDeviceExtensionProperties, 1) X(vkCreateDevice, 1) X(vkGetDeviceProcAddr, 1)         \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV, 0)

typedef struct spv_vk_instance_api {
#define SPV_VK_MEMBER(name, required) PFN_##name name;
  SPV_VK_INSTANCE_FUNCTIONS(SPV_VK_MEMBER)
#undef SPV_VK_MEMBER
} spv_vk_instance_api_t;

/* Process-wide state. `error_code` != XC_OK keeps why Vulkan is unusable. */
static struct {
  pthread_mutex_t lock;
  bool initialized;
  xc_code_t error_code;
  char error_message[1024];
  void* library;
  PFN_vkGetInstanceProcAddr get_instance_proc;
  spv_vk_instance_api_t vk;
  VkInstance instance;
  uint32_t instance_version;
  spv_vk_physical_t* devices;
  int num_devices;
  pid_t pid; /* the process that initialized (a forked child starts over) */
} g_vk = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- results ---------------------------------------------------------------- */

const char* spv_vk_result_name(VkResult r) {
  switch (r) {
#define NAME(x) \
  case x: return #x;
    NAME(VK_SUCCESS)
    NAME(VK_NOT_READY)
    NAME(VK_TIMEOUT)
    NAME(VK_INCOMPLETE)
    NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
    NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    NAME(VK_ERROR_INITIALIZATION_FAILED)
    NAME(VK_ERROR_DEVICE_LOST)
    NAME(VK_ERROR_MEMORY_MAP_FAILED)
    NAME(VK_ERROR_LAYER_NOT_PRESENT)
    NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
    NAME(VK_ERROR_FEATURE_NOT_PRESENT)
    NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
    NAME(VK_ERROR_TOO_MANY_OBJECTS)
    NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
    NAME(VK_ERROR_FRAGMENTED_POOL)
    NAME(VK_ERROR_UNKNOWN)
    NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
    NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    NAME(VK_ERROR_FRAGMENTATION)
    NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    NAME(VK_PIPELINE_COMPILE_REQUIRED)
    NAME(VK_ERROR_INVALID_SHADER_NV)
#undef NAME
    default: return "unknown VkResult";
  }
}

xc_status_t spv_vk_fail(VkResult r, const char* function) {
  xc_code_t code = XC_INTERNAL;
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTATION:
      code = XC_RESOURCE_EXHAUSTED;
      break;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_INITIALIZATION_FAILED:
      code = XC_UNAVAILABLE;
      break;
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      code = XC_UNSUPPORTED;
      break;
    case VK_ERROR_INVALID_SHADER_NV:
      code = XC_INVALID_ARGUMENT;
      break;
    default:
      break;
  }
  return SPV_ERROR(code, "spirv: %s failed: %s (%d)", function, spv_vk_result_name(r), (int)r);
}

/* ---- loading and enumerating (once) --------------------------------------------- */

static void set_error(xc_code_t code, const char* fmt, const char* detail) {
  g_vk.error_code = code;
  char what[300];
  snprintf(what, sizeof what, fmt, detail);
  snprintf(g_vk.error_message, sizeof g_vk.error_message, "target spirv unavailable: %s — " INSTALL_HINT, what);
}

static bool load_library(void) {
  /* XCOMP_VULKAN_LIBRARY names the one loader to use (tests, unusual installs). */
  const char* override = getenv("XCOMP_VULKAN_LIBRARY");
  const char* name = override && *override ? override : "libvulkan.so.1";
  if (!g_vk.library) g_vk.library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!g_vk.library) {
    set_error(XC_UNAVAILABLE, "the Vulkan loader %s cannot be loaded", name);
    return false;
  }
  *(void**)&g_vk.get_instance_proc = dlsym(g_vk.library, "vkGetInstanceProcAddr");
  if (!g_vk.get_instance_proc) {
    set_error(XC_UNAVAILABLE, "%s has no vkGetInstanceProcAddr", name);
    return false;
  }
  return true;
}

static bool create_instance(void) {
  PFN_vkEnumerateInstanceVersion enumerate_version =
      (PFN_vkEnumerateInstanceVersion)g_vk.get_instance_proc(NULL, "vkEnumerateInstanceVersion");
  PFN_vkCreateInstance create = (PFN_vkCreateInstance)g_vk.get_instance_proc(NULL, "vkCreateInstance");
  uint32_t version = VK_API_VERSION_1_0;
  if (enumerate_version && enumerate_version(&version) != VK_SUCCESS) version = VK_API_VERSION_1_0;
  if (!create || version < VK_API_VERSION_1_1) {
    set_error(XC_UNAVAILABLE, "%s", "the Vulkan loader is older than Vulkan 1.1");
    return false;
  }
  /* The newest version this code knows of; a device's own version caps it. */
  g_vk.instance_version = version < VK_API_VERSION_1_3 ? version : VK_API_VERSION_1_3;
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = "xcomp",
                           .pEngineName = "xcomp",
                           .apiVersion = g_vk.instance_version};
  VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
  VkResult r = create(&info, NULL, &g_vk.instance);
  if (r != VK_SUCCESS) {
    g_vk.instance = VK_NULL_HANDLE;
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) /* what the loader says when it finds no driver */
      set_error(XC_UNAVAILABLE, "no Vulkan driver is installed (vkCreateInstance: %s)", spv_vk_result_name(r));
    else
      set_error(XC_UNAVAILABLE, "vkCreateInstance failed: %s", spv_vk_result_name(r));
    return false;
  }
#define SPV_VK_RESOLVE(name, required)                                                         \
  *(void**)&g_vk.vk.name = (void*)g_vk.get_instance_proc(g_vk.instance, #name);               \
  if ((required) && !g_vk.vk.name) {                                                          \
    set_error(XC_UNAVAILABLE, "the Vulkan loader lacks %s", #name);                          \
    return false;                                                                             \
  }
  SPV_VK_INSTANCE_FUNCTIONS(SPV_VK_RESOLVE)
#undef SPV_VK_RESOLVE
  return true;
}

static bool has_extension(const VkExtensionProperties* exts, uint32_t n, const char* name) {
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(exts[i].extensionName, name) == 0) return true;
  return false;
}

static const char* vendor_name(uint32_t id) {
  switch (id) {
    case 0x10de: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x1022: return "AMD";
    case 0x8086: return "Intel";
    case 0x13b5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x1010: return "Imagination";
    case 0x106b: return "Apple";
    case 0x14e4: return "Broadcom";
    case 0x10002: return "VeriSilicon";
    case 0x10004: return "Codeplay";
    case 0x10005: return "Mesa";
    case 0x10006: return "PoCL";
    default: return NULL;
  }
}

/* Truncating copy of a fixed-size driver string. */
static void copy_string(char* dst, size_t dst_size, const char* src, size_t src_size) {
  size_t n = strnlen(src, src_size);
  if (n >= dst_size) n = dst_size - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* pNext chains: appends s (whose second member is pNext) after *tail. */
static void chain(void*** tail, void* s) {
  **tail = s;
  *tail = (void**)&((VkBaseOutStructure*)s)->pNext;
}

/* Cooperative-matrix shapes (VK_NV_cooperative_matrix) with f16 inputs and
 * f32 accumulation at subgroup scope, as caps records them: the emitter's
 * SPIR-V is SPV_NV_cooperative_matrix. */
static int coopmat_shapes(VkPhysicalDevice pd, xc_mma_shape_t* out, int max) {
  if (!g_vk.vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) return 0;
  uint32_t n = 0;
  if (g_vk.vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, NULL) != VK_SUCCESS || n == 0) return 0;
  VkCooperativeMatrixPropertiesNV* props = calloc(n, sizeof *props);
  if (!props) return 0;
  for (uint32_t i = 0; i < n; i++) props[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  int count = 0;
  VkResult r = g_vk.vk.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, props);
  for (uint32_t i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n && count < max; i++) {
    const VkCooperativeMatrixPropertiesNV* p = &props[i];
    if (p->scope != VK_SCOPE_SUBGROUP_NV || p->AType != VK_COMPONENT_TYPE_FLOAT16_NV ||
        p->BType != VK_COMPONENT_TYPE_FLOAT16_NV || p->CType != VK_COMPONENT_TYPE_FLOAT32_NV ||
        p->DType != VK_COMPONENT_TYPE_FLOAT32_NV)
      continue;
    out[count++] = (xc_mma_shape_t){(int)p->MSize, (int)p->NSize, (int)p->KSize, XC_F16, XC_F32};
  }
  free(props);
  return count;
}

/* Fills everything of p from the device's properties and features; false
 * when the device cannot run compute shaders for us (skipped). */
static bool describe_device(VkPhysicalDevice pd, spv_vk_physical_t* p) {
  memset(p, 0, sizeof *p);
  p->handle = pd;
  g_vk.vk.vkGetPhysicalDeviceProperties(pd, &p->props);
  p->api_version = p->props.apiVersion < g_vk.instance_version ? p->props.apiVersion : g_vk.instance_version;
  if (p->api_version < VK_API_VERSION_1_1) return false;

  uint32_t num_families = 0;
  g_vk.vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &num_families, NULL);
  VkQueueFamilyProperties* families = calloc(num_families ? num_families : 1, sizeof *families);
  if (!families) return false;
  g_vk.vk.vkGetPhysicalDeviceQueueFamilyProperties(pd, &num_families, families);
  bool found = false;
  for (uint32_t i = 0; i < num_families && !found; i++) {
    if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && families[i].queueCount > 0) {
      found = true;
      p->queue_family = i;
      p->timestamp_valid_bits = families[i].timestampValidBits;
    }
  }
  free(families);
  if (!found) return false;
  p->has_timestamps = p->props.limits.timestampComputeAndGraphics && p->timestamp_valid_bits > 0;

  uint32_t num_exts = 0;
  VkExtensionProperties* exts = NULL;
  if (g_vk.vk.vkEnumerateDeviceExtensionProperties(pd, NULL, &num_exts, NULL) == VK_SUCCESS && num_exts) {
    exts = calloc(num_exts, sizeof *exts);
    if (!exts || g_vk.vk.vkEnumerateDeviceExtensionProperties(pd, NULL, &num_exts, exts) != VK_SUCCESS)
      num_exts = 0;
  }
  bool v12 = p->api_version >= VK_API_VERSION_1_2;
  bool has_8bit = v12 || has_extension(exts, num_exts, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  bool has_f16i8 = v12 || has_extension(exts, num_exts, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  bool has_driver_props = v12 || has_extension(exts, num_exts, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  bool has_sm = has_extension(exts, num_exts, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  bool has_amd_cores = has_extension(exts, num_exts, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
  bool has_coopmat = has_extension(exts, num_exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  free(exts);

  /* Features: the individual structs (valid on 1.2+ devices as well), so that
   * 1.1 devices with the extensions are read the same way. */
  VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDevice8BitStorageFeatures s8 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16i8 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  void** tail = &f2.pNext;
  chain(&tail, &s16);
  if (has_8bit) chain(&tail, &s8);
  if (has_f16i8) chain(&tail, &f16i8);
  if (has_coopmat) chain(&tail, &cm);
  g_vk.vk.vkGetPhysicalDeviceFeatures2(pd, &f2);
  p->shader_int64 = f2.features.shaderInt64;
  p->shader_int16 = f2.features.shaderInt16;
  p->shader_float64 = f2.features.shaderFloat64;
  p->storage_16bit = s16.storageBuffer16BitAccess;
  p->storage_8bit = s8.storageBuffer8BitAccess;
  p->shader_float16 = f16i8.shaderFloat16;
  p->shader_int8 = f16i8.shaderInt8;
  p->cooperative_matrix = cm.cooperativeMatrix;
  p->ext_8bit_storage = !v12 && p->storage_8bit;
  p->ext_float16_int8 = !v12 && (p->shader_float16 || p->shader_int8);

  VkPhysicalDeviceSubgroupProperties subgroup = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
  VkPhysicalDeviceShaderCorePropertiesAMD amd = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
  VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  tail = &p2.pNext;
  chain(&tail, &subgroup);
  chain(&tail, &m3);
  if (has_driver_props) chain(&tail, &driver);
  if (has_sm) chain(&tail, &sm);
  if (has_amd_cores) chain(&tail, &amd);
  g_vk.vk.vkGetPhysicalDeviceProperties2(pd, &p2);
  g_vk.vk.vkGetPhysicalDeviceMemoryProperties(pd, &p->memory);

  spv_vk_device_info_t* info = &p->info;
  xc_device_caps_t* caps = &info->caps;
  const VkPhysicalDeviceLimits* lim = &p->props.limits;
  copy_string(caps->name, sizeof caps->name, p->props.deviceName, sizeof p->props.deviceName);
  const char* vendor = vendor_name(p->props.vendorID);
  if (vendor)
    snprintf(caps->vendor, sizeof caps->vendor, "%s", vendor);
  else
    snprintf(caps->vendor, sizeof caps->vendor, "vendor 0x%04x", p->props.vendorID);
  uint32_t dv = p->props.driverVersion;
  if (has_driver_props && driver.driverInfo[0])
    copy_string(caps->version, sizeof caps->version, driver.driverInfo, sizeof driver.driverInfo);
  else if (p->props.vendorID == 0x10de) /* NVIDIA packs 10.8.8.6 bits */
    snprintf(caps->version, sizeof caps->version, "%u.%u.%u", dv >> 22, (dv >> 14) & 0xffu, (dv >> 6) & 0xffu);
  else
    snprintf(caps->version, sizeof caps->version, "%u.%u.%u", VK_API_VERSION_MAJOR(dv), VK_API_VERSION_MINOR(dv),
             VK_API_VERSION_PATCH(dv));
  /* The programming model is a GPU's (work-groups, shared memory), whatever
   * runs it: lavapipe reports itself as a CPU. */
  caps->kind = XC_DEVICE_GPU;
  caps->compute_units = 1;
  if (has_sm && sm.shaderSMCount > 0) caps->compute_units = (int)sm.shaderSMCount;
  if (has_amd_cores && amd.shaderEngineCount > 0)
    caps->compute_units =
        (int)(amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray);
  caps->simd_width = subgroup.subgroupSize > 0 ? (int)subgroup.subgroupSize : 1;
  uint32_t threads = lim->maxComputeWorkGroupInvocations;
  if (lim->maxComputeWorkGroupSize[0] < threads) threads = lim->maxComputeWorkGroupSize[0];
  caps->max_threads_per_group = (int)threads;
  caps->local_memory_bytes = lim->maxComputeSharedMemorySize;
  VkDeviceSize largest = 0;
  for (uint32_t i = 0; i < p->memory.memoryHeapCount; i++) {
    const VkMemoryHeap* heap = &p->memory.memoryHeaps[i];
    if ((heap->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && heap->size > largest) largest = heap->size;
  }
  caps->global_memory_bytes = (int64_t)largest;
  uint64_t max_buffer = lim->maxStorageBufferRange;
  if (m3.maxMemoryAllocationSize > 0 && m3.maxMemoryAllocationSize < max_buffer)
    max_buffer = m3.maxMemoryAllocationSize;
  caps->max_buffer_bytes = (int64_t)max_buffer;
  /* channels-last on a CPU device (lavapipe), as the opencl target does on
   * one: a conv's window tile is then a run of channels per pixel, which the
   * device reads as vectors, where NCHW gathered it */
  caps->preferred_layout =
      p->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? XC_LAYOUT_NHWC : XC_LAYOUT_NCHW;
  caps->has_vendor_blas = false;

  uint32_t f = 0;
  if (p->shader_float16) f |= SPV_FEATURE_FLOAT16;
  if (p->shader_int8) f |= SPV_FEATURE_INT8;
  if (p->shader_int16) f |= SPV_FEATURE_INT16;
  if (p->shader_int64) f |= SPV_FEATURE_INT64;
  if (p->shader_float64) f |= SPV_FEATURE_FLOAT64;
  if (p->storage_8bit) f |= SPV_FEATURE_STORAGE8;
  if (p->storage_16bit) f |= SPV_FEATURE_STORAGE16;
  if (has_coopmat && p->cooperative_matrix) f |= SPV_FEATURE_COOPMAT;
  if (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) {
    if (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) f |= SPV_FEATURE_SUBGROUP_ARITH;
    if (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_CLUSTERED_BIT) f |= SPV_FEATURE_SUBGROUP_CLUSTERED;
  }
  info->features = f;
  uint32_t dt = XC_DT(XC_F32) | XC_DT(XC_I32) | XC_DT(XC_U32);
  if (p->shader_int64) dt |= XC_DT(XC_I64) | XC_DT(XC_U64);
  if (p->shader_float64) dt |= XC_DT(XC_F64);
  if (p->shader_float16 && p->storage_16bit && p->shader_int16) dt |= XC_DT(XC_F16);
  if (p->shader_int16 && p->storage_16bit) dt |= XC_DT(XC_I16) | XC_DT(XC_U16) | XC_DT(XC_BF16);
  if (p->shader_int8 && p->storage_8bit) dt |= XC_DT(XC_I8) | XC_DT(XC_U8) | XC_DT(XC_BOOL);
  caps->dtypes = dt;
  if (f & SPV_FEATURE_COOPMAT) {
    /* XCOMP_SPIRV_COOPMAT=0 hides them (dots then take the generic loop). */
    const char* want = getenv("XCOMP_SPIRV_COOPMAT");
    caps->num_mma_shapes =
        want && strcmp(want, "0") == 0 ? 0 : coopmat_shapes(pd, caps->mma_shapes, XC_TARGET_MAX_MMA_SHAPES);
  }
  for (int i = 0; i < 3; i++) info->max_workgroup_count[i] = lim->maxComputeWorkGroupCount[i];
  info->subgroup_size = subgroup.subgroupSize;
  info->api_version = p->props.apiVersion;
  return true;
}

/* Discrete GPUs first, then integrated, virtual, others, CPUs (lavapipe): the
 * first device is the one a user most likely means. */
static int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
    default: return 3;
  }
}

static bool enumerate_devices(void) {
  uint32_t n = 0;
  VkResult r = g_vk.vk.vkEnumeratePhysicalDevices(g_vk.instance, &n, NULL);
  VkPhysicalDevice* handles = NULL;
  if (r == VK_SUCCESS && n > 0) {
    handles = calloc(n, sizeof *handles);
    g_vk.devices = calloc(n, sizeof *g_vk.devices);
    if (!handles || !g_vk.devices) {
      free(handles);
      set_error(XC_RESOURCE_EXHAUSTED, "%s", "out of memory listing the Vulkan devices");
      return false;
    }
    r = g_vk.vk.vkEnumeratePhysicalDevices(g_vk.instance, &n, handles);
    if (r == VK_INCOMPLETE) r = VK_SUCCESS;
  }
  if (r != VK_SUCCESS) {
    free(handles);
    set_error(XC_UNAVAILABLE, "vkEnumeratePhysicalDevices failed: %s", spv_vk_result_name(r));
    return false;
  }
  for (uint32_t i = 0; i < n; i++)
    if (describe_device(handles[i], &g_vk.devices[g_vk.num_devices])) g_vk.num_devices++;
  free(handles);
  /* Stable insertion sort by type rank (a handful of devices). */
  for (int i = 1; i < g_vk.num_devices; i++) {
    spv_vk_physical_t d = g_vk.devices[i];
    int j = i;
    while (j > 0 && type_rank(g_vk.devices[j - 1].props.deviceType) > type_rank(d.props.deviceType)) {
      g_vk.devices[j] = g_vk.devices[j - 1];
      j--;
    }
    g_vk.devices[j] = d;
  }
  if (g_vk.num_devices == 0) {
    set_error(XC_UNAVAILABLE, "%s",
              "the Vulkan loader lists no Vulkan 1.1 device with a compute queue (no driver is installed, or "
              "none is registered in /usr/share/vulkan/icd.d)");
    return false;
  }
  return true;
}

/* Loads and enumerates on first use; the result (devices or the reason
 * there are none) stays until spv_vk_shutdown. Caller holds the lock. */
static void initialize_locked(void) {
  if (g_vk.initialized && g_vk.pid != getpid()) {
    /* A child of fork (the conformance runner's tests): Vulkan objects of
     * the parent are not usable here, and destroying them is not ours to
     * do. Forget them and start over. */
    g_vk.initialized = false;
    g_vk.instance = VK_NULL_HANDLE;
    g_vk.devices = NULL;
    g_vk.num_devices = 0;
    memset(&g_vk.vk, 0, sizeof g_vk.vk);
  }
  if (g_vk.initialized) return;
  g_vk.pid = getpid();
  g_vk.initialized = true;
  g_vk.error_code = XC_OK;
  if (load_library() && create_instance()) enumerate_devices();
}

xc_status_t spv_vk_probe(void) {
  pthread_mutex_lock(&g_vk.lock);
  initialize_locked();
  xc_status_t s = g_vk.error_code == XC_OK ? NULL : SPV_ERROR(g_vk.error_code, "%s", g_vk.error_message);
  pthread_mutex_unlock(&g_vk.lock);
  return s;
}

int spv_vk_device_count(void) {
  pthread_mutex_lock(&g_vk.lock);
  initialize_locked();
  int n = g_vk.error_code == XC_OK ? g_vk.num_devices : 0;
  pthread_mutex_unlock(&g_vk.lock);
  return n;
}

const spv_vk_physical_t* spv_vk_physical(int index) {
  pthread_mutex_lock(&g_vk.lock);
  initialize_locked();
  const spv_vk_physical_t* p =
      g_vk.error_code == XC_OK && index >= 0 && index < g_vk.num_devices ? &g_vk.devices[index] : NULL;
  pthread_mutex_unlock(&g_vk.lock);
  return p;
}

xc_status_t spv_vk_device_info(int index, spv_vk_device_info_t* out) {
  memset(out, 0, sizeof *out);
  xc_status_t s = spv_vk_probe();
  if (s) return s;
  const spv_vk_physical_t* p = spv_vk_physical(index);
  if (!p)
    return SPV_ERROR(XC_OUT_OF_RANGE, "spirv: no Vulkan device %d (%d present)", index, spv_vk_device_count());
  *out = p->info;
  return NULL;
}

void spv_vk_shutdown(void) {
  pthread_mutex_lock(&g_vk.lock);
  if (g_vk.instance) g_vk.vk.vkDestroyInstance(g_vk.instance, NULL);
  free(g_vk.devices);
  /* The loader stays mapped (g_vk.library is kept): drivers (LLVM in
   * lavapipe) register process-exit handlers that must not outlive their code. */
  memset(&g_vk.vk, 0, sizeof g_vk.vk);
  g_vk.instance = VK_NULL_HANDLE;
  g_vk.devices = NULL;
  g_vk.num_devices = 0;
  g_vk.initialized = false;
  pthread_mutex_unlock(&g_vk.lock);
}

/* ---- logical devices ------------------------------------------------------------ */

xc_status_t spv_vk_create_device(const spv_vk_physical_t* p, VkDevice* out_device, spv_vk_device_api_t* api) {
  *out_device = VK_NULL_HANDLE;
  memset(api, 0, sizeof *api);
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = p->queue_family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &priority};
  /* Exactly the features the capabilities promise, no more (each costs the
   * driver nothing when unused, but a feature the device lacks fails). */
  VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                                              .storageBuffer16BitAccess = p->storage_16bit};
  VkPhysicalDevice8BitStorageFeatures s8 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                                            .storageBuffer8BitAccess = p->storage_8bit};
  VkPhysicalDeviceShaderFloat16Int8Features f16i8 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
      .shaderFloat16 = p->shader_float16,
      .shaderInt8 = p->shader_int8};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .cooperativeMatrix = VK_TRUE};
  VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.features.shaderInt64 = p->shader_int64;
  f2.features.shaderInt16 = p->shader_int16;
  f2.features.shaderFloat64 = p->shader_float64;
  void** tail = &f2.pNext;
  const char* exts[4];
  uint32_t num_exts = 0;
  if (p->storage_16bit) chain(&tail, &s16);
  if (p->storage_8bit) {
    chain(&tail, &s8);
    if (p->ext_8bit_storage) exts[num_exts++] = VK_KHR_8BIT_STORAGE_EXTENSION_NAME;
  }
  if (p->shader_float16 || p->shader_int8) {
    chain(&tail, &f16i8);
    if (p->ext_float16_int8) exts[num_exts++] = VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
  }
  if (p->info.features & SPV_FEATURE_COOPMAT) {
    chain(&tail, &cm);
    exts[num_exts++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
  }
  VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = &f2,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &queue,
                             .enabledExtensionCount = num_exts,
                             .ppEnabledExtensionNames = exts};
  VkDevice device = VK_NULL_HANDLE;
  SPV_VK_TRY(vkCreateDevice, g_vk.vk.vkCreateDevice(p->handle, &info, NULL, &device));
  PFN_vkGetDeviceProcAddr get = g_vk.vk.vkGetDeviceProcAddr;
  const char* missing = NULL;
#define SPV_VK_RESOLVE(name)                                          \
  *(void**)&api->name = (void*)get(device, #name);                    \
  if (!api->name && !missing) missing = #name;
  SPV_VK_DEVICE_FUNCTIONS(SPV_VK_RESOLVE)
#undef SPV_VK_RESOLVE
  if (missing) {
    PFN_vkDestroyDevice destroy = (PFN_vkDestroyDevice)get(device, "vkDestroyDevice");
    if (destroy) destroy(device, NULL);
    memset(api, 0, sizeof *api);
    return SPV_ERROR(XC_UNAVAILABLE, "spirv: the Vulkan driver of %s lacks %s", p->props.deviceName, missing);
  }
  *out_device = device;
  return NULL;
}
