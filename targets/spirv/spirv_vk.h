/* The Vulkan runtime's own declarations, shared by its two files:
 *   spirv_vk.c         the loader (libvulkan.so.1 opened at run time), the
 *                      instance, the devices and their capabilities, VkDevice
 *                      creation with the features the device has
 *   spirv_vk_device.c  an opened device: buffers, modules, launches recorded
 *                      into command buffers, events, launch graphs
 * Nothing links the Vulkan loader: every function comes from a table filled
 * with vkGetInstanceProcAddr / vkGetDeviceProcAddr (VK_NO_PROTOTYPES). */
#ifndef XCOMP_TARGETS_SPIRV_VK_H
#define XCOMP_TARGETS_SPIRV_VK_H

#include <vulkan/vulkan.h>

#include "spirv_plugin.h"

/* X(name) for every device-level function the runtime uses. */
#define SPV_VK_DEVICE_FUNCTIONS(X)                                                                      \
  X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) X(vkQueueSubmit)                          \
  X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkFreeCommandBuffers)    \
  X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkResetCommandBuffer)                                  \
  X(vkCreateFence) X(vkDestroyFence) X(vkResetFences) X(vkWaitForFences) X(vkGetFenceStatus)            \
  X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkBindBufferMemory)           \
  X(vkAllocateMemory) X(vkFreeMemory) X(vkMapMemory) X(vkUnmapMemory)                                   \
  X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateDescriptorSetLayout)                       \
  X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)                  \
  X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreatePipelineCache) X(vkDestroyPipelineCache)   \
  X(vkGetPipelineCacheData)                                                                           \
  X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkResetDescriptorPool)                         \
  X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets)                                                 \
  X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkGetQueryPoolResults)                                   \
  X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) X(vkCmdDispatch)                \
  X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdResetQueryPool) X(vkCmdWriteTimestamp)

typedef struct spv_vk_device_api {
#define SPV_VK_MEMBER(name) PFN_##name name;
  SPV_VK_DEVICE_FUNCTIONS(SPV_VK_MEMBER)
#undef SPV_VK_MEMBER
} spv_vk_device_api_t;

/* A physical device as enumerated once per process. */
typedef struct spv_vk_physical {
  VkPhysicalDevice handle;
  uint32_t api_version;    /* what may be used: min(device, instance) */
  uint32_t queue_family;   /* the first family with compute */
  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceMemoryProperties memory;
  spv_vk_device_info_t info;
  /* Features present (and enabled when the device is opened). */
  VkBool32 shader_int64, shader_int16, shader_float64;
  VkBool32 storage_16bit, storage_8bit, shader_float16, shader_int8, cooperative_matrix;
  /* Extensions to enable: the 1.2 features' extensions on 1.1 devices. */
  bool ext_8bit_storage, ext_float16_int8;
  bool has_timestamps;
  uint32_t timestamp_valid_bits;
} spv_vk_physical_t;

/* VkResult -> status naming the function and the result. */
xc_status_t spv_vk_fail(VkResult result, const char* function);
const char* spv_vk_result_name(VkResult result);

#define SPV_VK_TRY(function, call)                              \
  do {                                                          \
    VkResult spv_vk_result_ = (call);                           \
    if (spv_vk_result_ != VK_SUCCESS) return spv_vk_fail(spv_vk_result_, #function); \
  } while (0)

/* The enumerated device `index` (spv_vk_probe must have passed); NULL when
 * out of range. Lives until spv_vk_shutdown. */
const spv_vk_physical_t* spv_vk_physical(int index);

/* Creates the VkDevice of `phys` (one compute queue, the features it has)
 * and fills `api` with its functions. */
xc_status_t spv_vk_create_device(const spv_vk_physical_t* phys, VkDevice* out_device, spv_vk_device_api_t* api);

#endif
