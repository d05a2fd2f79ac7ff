/* The Vulkan runtime, second half: an opened device.
 *
 * Launches are recorded, in order, into the command buffer of the current
 * batch (pipeline, a descriptor set of the buffers, push constants, one or
 * more dispatches, then a memory barrier so the next launch sees the
 * results); the batch is submitted when the host needs results (synchronize,
 * copies, event times) or after SPV_VK_BATCH_LAUNCHES launches, and recycled
 * with its descriptor pools once its fence signals. All submissions go to one
 * queue, so the barriers order launches across batches and graphs as well.
 *
 * Buffers live in device-local memory; where that memory is also host-visible
 * and coherent (lavapipe, integrated GPUs) it is mapped and copies are
 * memcpy after a synchronize, else they go through a staging buffer.
 *
 * A launch graph is a command buffer recorded once (with descriptor sets that
 * live as long as it) and submitted again on every replay; a replay waits for
 * the previous submission of the same graph, never overlapping it.
 *
 * Test knobs: XCOMP_SPIRV_STAGING=1 copies through the staging buffer even
 * where memory is mappable; XCOMP_SPIRV_MAX_WORKGROUPS=N pretends the device
 * dispatches at most N work-groups per dimension (several dispatches per
 * launch); XCOMP_SPIRV_HOST_TIMING=1 times events on the host as on a device
 * without timestamps. They are read when a device is opened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spirv_vk.h"

#define SPV_VK_BATCH_LAUNCHES 256
#define SPV_VK_MAX_BATCHES 8
#define SPV_VK_QUERIES 1024
#define SPV_VK_SETS_PER_POOL 256
#define SPV_VK_BUFFERS_PER_POOL 2048
#define SPV_VK_STAGING_MIN ((VkDeviceSize)1 << 20)
#define SPV_VK_STAGING_MAX ((VkDeviceSize)64 << 20)

/* Descriptor pools that are reset together (a batch's, a graph's). */
typedef struct vk_descriptor_pools {
  VkDescriptorPool* pools;
  int count, capacity;
  int current;  /* the pool sets come from; earlier ones are full */
} vk_descriptor_pools_t;

typedef enum { BATCH_FREE = 0, BATCH_RECORDING, BATCH_IN_FLIGHT } batch_state_t;

typedef struct vk_batch {
  VkCommandBuffer cb;
  VkFence fence;
  vk_descriptor_pools_t descriptors;
  batch_state_t state;
  uint64_t serial;  /* order of opening */
  int launches;
} vk_batch_t;

typedef struct vk_graph {
  VkCommandBuffer cb;
  VkFence fence;
  vk_descriptor_pools_t descriptors;
  bool in_flight;
  struct vk_graph* next;  /* the device's ended graphs */
} vk_graph_t;

typedef struct vk_buffer {
  VkBuffer buffer;
  VkDeviceMemory memory;
  VkDeviceSize size;
  void* mapped;  /* NULL: copies go through staging */
} vk_buffer_t;

typedef struct vk_module {
  spv_kernel_info_t info;
  VkShaderModule shader;
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout layout;
  VkPipeline pipeline;
  uint32_t push_bytes;
} vk_module_t;

typedef struct vk_event {
  bool host;         /* the device has no timestamps: a host clock reading */
  double host_ms;
  uint32_t query;
  uint64_t serial;   /* the batch that writes the timestamp */
} vk_event_t;

typedef struct vk_device {
  const spv_vk_physical_t* phys;
  spv_vk_device_api_t vk;
  VkDevice device;
  VkQueue queue;
  VkCommandPool command_pool;
  VkPipelineCache pipeline_cache;
  int pipelines_built;  /* since open: the cache is written back at close when > 0 */
  VkQueryPool queries;  /* VK_NULL_HANDLE: no timestamps */
  bool query_used[SPV_VK_QUERIES];
  uint32_t query_next;
  double timestamp_period_ns;
  uint64_t timestamp_mask;
  uint32_t max_groups[2];
  bool force_staging;
  /* Memory types for buffers in order of preference (device-local first),
   * and the host-visible coherent type of the staging buffer (-1: none). */
  int buffer_types[VK_MAX_MEMORY_TYPES];
  int num_buffer_types;
  int staging_type;
  vk_buffer_t staging;
  vk_batch_t batches[SPV_VK_MAX_BATCHES];
  int num_batches;
  vk_batch_t* recording;
  uint64_t next_serial;
  uint64_t synced_serial;  /* batches up to this serial have completed */
  vk_graph_t* capturing;
  vk_graph_t* graphs;
} vk_device_t;

/* ---- descriptor pools ------------------------------------------------------ */

static xc_status_t descriptor_set_alloc(vk_device_t* d, vk_descriptor_pools_t* p, VkDescriptorSetLayout layout,
                                        VkDescriptorSet* out_set) {
  for (;;) {
    bool fresh = p->current == p->count;
    if (fresh) {
      if (p->count == p->capacity) {
        int cap = p->capacity ? 2 * p->capacity : 2;
        VkDescriptorPool* grown = realloc(p->pools, (size_t)cap * sizeof *grown);
        if (!grown) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory for descriptor pools");
        p->pools = grown;
        p->capacity = cap;
      }
      VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, SPV_VK_BUFFERS_PER_POOL};
      VkDescriptorPoolCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                         .maxSets = SPV_VK_SETS_PER_POOL,
                                         .poolSizeCount = 1,
                                         .pPoolSizes = &size};
      SPV_VK_TRY(vkCreateDescriptorPool, d->vk.vkCreateDescriptorPool(d->device, &info, NULL, &p->pools[p->count]));
      p->count++;
    }
    VkDescriptorSetAllocateInfo info = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                        .descriptorPool = p->pools[p->current],
                                        .descriptorSetCount = 1,
                                        .pSetLayouts = &layout};
    VkResult r = d->vk.vkAllocateDescriptorSets(d->device, &info, out_set);
    if (r == VK_SUCCESS) return NULL;
    /* A full pool: the sets go on in the next one (an empty pool holds any
     * set of at most XC_TARGET_MAX_ARGS buffers, so it cannot be full). */
    if (fresh || (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL))
      return spv_vk_fail(r, "vkAllocateDescriptorSets");
    p->current++;
  }
}

static void descriptor_pools_reset(vk_device_t* d, vk_descriptor_pools_t* p) {
  for (int i = 0; i < p->count; i++) d->vk.vkResetDescriptorPool(d->device, p->pools[i], 0);
  p->current = 0;
}

static void descriptor_pools_free(vk_device_t* d, vk_descriptor_pools_t* p) {
  for (int i = 0; i < p->count; i++) d->vk.vkDestroyDescriptorPool(d->device, p->pools[i], NULL);
  free(p->pools);
  memset(p, 0, sizeof *p);
}

/* ---- batches ------------------------------------------------------------------ */

static void batch_recycle(vk_device_t* d, vk_batch_t* b) {
  d->vk.vkResetCommandBuffer(b->cb, 0);
  descriptor_pools_reset(d, &b->descriptors);
  if (b->state == BATCH_IN_FLIGHT) d->vk.vkResetFences(d->device, 1, &b->fence);
  b->state = BATCH_FREE;
  b->launches = 0;
}

static xc_status_t batch_create(vk_device_t* d, vk_batch_t* b) {
  memset(b, 0, sizeof *b);
  VkCommandBufferAllocateInfo cb = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = d->command_pool,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  SPV_VK_TRY(vkAllocateCommandBuffers, d->vk.vkAllocateCommandBuffers(d->device, &cb, &b->cb));
  VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VkResult r = d->vk.vkCreateFence(d->device, &fence, NULL, &b->fence);
  if (r != VK_SUCCESS) {
    d->vk.vkFreeCommandBuffers(d->device, d->command_pool, 1, &b->cb);
    b->cb = VK_NULL_HANDLE;
    return spv_vk_fail(r, "vkCreateFence");
  }
  return NULL;
}

/* The batch launches are recorded into, opened when there is none: a free
 * batch, one whose fence has signaled, a new one, or else the oldest in
 * flight once it completes. */
static xc_status_t batch_current(vk_device_t* d, vk_batch_t** out) {
  *out = d->recording;
  if (d->recording) return NULL;
  vk_batch_t* b = NULL;
  for (int i = 0; i < d->num_batches && !b; i++) {
    vk_batch_t* c = &d->batches[i];
    if (c->state == BATCH_IN_FLIGHT && d->vk.vkGetFenceStatus(d->device, c->fence) == VK_SUCCESS) batch_recycle(d, c);
    if (c->state == BATCH_FREE) b = c;
  }
  if (!b && d->num_batches < SPV_VK_MAX_BATCHES) {
    XC_RETURN_IF_ERROR(batch_create(d, &d->batches[d->num_batches]));
    b = &d->batches[d->num_batches++];
  }
  if (!b) {
    for (int i = 0; i < d->num_batches; i++)
      if (!b || d->batches[i].serial < b->serial) b = &d->batches[i];
    SPV_VK_TRY(vkWaitForFences, d->vk.vkWaitForFences(d->device, 1, &b->fence, VK_TRUE, UINT64_MAX));
    batch_recycle(d, b);
  }
  VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  SPV_VK_TRY(vkBeginCommandBuffer, d->vk.vkBeginCommandBuffer(b->cb, &begin));
  b->state = BATCH_RECORDING;
  b->serial = ++d->next_serial;
  d->recording = b;
  *out = b;
  return NULL;
}

/* Device writes become visible to the host (mapped reads after the fence). */
static void record_host_barrier(vk_device_t* d, VkCommandBuffer cb) {
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                        .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
  d->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Later launches and copies see what `src_stage` wrote. */
static void record_barrier(vk_device_t* d, VkCommandBuffer cb, VkPipelineStageFlags src_stage, VkAccessFlags src) {
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                        .srcAccessMask = src,
                        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
  d->vk.vkCmdPipelineBarrier(cb, src_stage, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
                             1, &mb, 0, NULL, 0, NULL);
}

static xc_status_t batch_submit(vk_device_t* d) {
  vk_batch_t* b = d->recording;
  if (!b) return NULL;
  d->recording = NULL;
  record_host_barrier(d, b->cb);
  VkResult r = d->vk.vkEndCommandBuffer(b->cb);
  const char* what = "vkEndCommandBuffer";
  if (r == VK_SUCCESS) {
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &b->cb};
    r = d->vk.vkQueueSubmit(d->queue, 1, &submit, b->fence);
    what = "vkQueueSubmit";
  }
  if (r != VK_SUCCESS) {
    batch_recycle(d, b); /* the recorded work is lost with the error */
    return spv_vk_fail(r, what);
  }
  b->state = BATCH_IN_FLIGHT;
  return NULL;
}

xc_status_t spv_vk_synchronize(void* device) {
  vk_device_t* d = device;
  xc_status_t s = batch_submit(d);
  for (int i = 0; i < d->num_batches; i++) {
    vk_batch_t* b = &d->batches[i];
    if (b->state != BATCH_IN_FLIGHT) continue;
    VkResult r = d->vk.vkWaitForFences(d->device, 1, &b->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS && !s) s = spv_vk_fail(r, "vkWaitForFences");
    batch_recycle(d, b);
  }
  for (vk_graph_t* g = d->graphs; g; g = g->next) {
    if (!g->in_flight) continue;
    VkResult r = d->vk.vkWaitForFences(d->device, 1, &g->fence, VK_TRUE, UINT64_MAX);
    if (r != VK_SUCCESS && !s) s = spv_vk_fail(r, "vkWaitForFences");
    g->in_flight = false;
  }
  if (!s) d->synced_serial = d->next_serial;
  return s;
}

static bool device_busy(const vk_device_t* d) {
  if (d->recording) return true;
  for (int i = 0; i < d->num_batches; i++)
    if (d->batches[i].state == BATCH_IN_FLIGHT) return true;
  for (const vk_graph_t* g = d->graphs; g; g = g->next)
    if (g->in_flight) return true;
  return false;
}

/* Before destroying an object queued work may use. */
static void wait_idle(vk_device_t* d) {
  if (!device_busy(d)) return;
  xc_status_t s = spv_vk_synchronize(d);
  if (s) {
    spv_host->status_free(s);
    d->vk.vkDeviceWaitIdle(d->device);
  }
}

/* ---- devices ----------------------------------------------------------------------- */

static uint32_t env_u32(const char* name, uint32_t fallback) {
  const char* v = getenv(name);
  if (!v || !*v) return fallback;
  char* end = NULL;
  unsigned long n = strtoul(v, &end, 10);
  return end && *end == '\0' && n > 0 && n <= UINT32_MAX ? (uint32_t)n : fallback;
}

static void choose_memory_types(vk_device_t* d) {
  const VkPhysicalDeviceMemoryProperties* m = &d->phys->memory;
  d->num_buffer_types = 0;
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < m->memoryTypeCount; i++) {
      bool local = (m->memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
      if (local == (pass == 0)) d->buffer_types[d->num_buffer_types++] = (int)i;
    }
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  d->staging_type = -1;
  for (uint32_t i = 0; i < m->memoryTypeCount; i++) {
    VkMemoryPropertyFlags f = m->memoryTypes[i].propertyFlags;
    if ((f & host) != host) continue;
    /* Cached memory reads back faster; otherwise the first coherent type. */
    if (d->staging_type < 0 || ((f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) &&
                                !(m->memoryTypes[d->staging_type].propertyFlags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT)))
      d->staging_type = (int)i;
  }
}

static void buffer_destroy(vk_device_t* d, vk_buffer_t* b);

/* ---- the pipeline cache on disk ---------------------------------------------------
 * Pipelines are compiled by the driver from SPIR-V at module load; the
 * driver's pipeline cache is kept beside the compile cache
 * ($XCOMP_CACHE_DIR, default ~/.cache/xcomp), one file per device model and
 * driver (its pipelineCacheUUID), read at device open and written back (to
 * a temporary file, then renamed) at close when pipelines were built. The
 * driver checks the data's header itself and ignores what is not its own.
 * XCOMP_SPIRV_PIPELINE_CACHE=0 turns it off. Failures only cost speed. */
static bool pipeline_cache_path(const spv_vk_physical_t* p, char* out, size_t size, bool create_dir) {
  const char* off = getenv("XCOMP_SPIRV_PIPELINE_CACHE");
  if (off && strcmp(off, "0") == 0) return false;
  char dir[2048];
  const char* env = getenv("XCOMP_CACHE_DIR");
  const char* home = getenv("HOME");
  if (env && *env) snprintf(dir, sizeof dir, "%s", env);
  else if (home && *home) snprintf(dir, sizeof dir, "%s/.cache/xcomp", home);
  else return false;
  if (create_dir) {
    for (char* q = dir + 1; *q; q++) {
      if (*q != '/') continue;
      *q = '\0';
      mkdir(dir, 0755);
      *q = '/';
    }
    mkdir(dir, 0755);
  }
  char uuid[2 * VK_UUID_SIZE + 1];
  for (unsigned i = 0; i < VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", p->props.pipelineCacheUUID[i]);
  int n = snprintf(out, size, "%s/vulkan-pipelines-%04x-%04x-%s.bin", dir, p->props.vendorID, p->props.deviceID, uuid);
  return n > 0 && (size_t)n < size;
}

/* The cache file's bytes (malloc'd) or NULL. */
static void* pipeline_cache_read(const spv_vk_physical_t* p, size_t* out_size) {
  *out_size = 0;
  char path[2400];
  if (!pipeline_cache_path(p, path, sizeof path, false)) return NULL;
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  void* data = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n > 0 && n < (256L << 20) && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n)) != NULL) {
      if (fread(data, 1, (size_t)n, f) == (size_t)n) {
        *out_size = (size_t)n;
      } else {
        free(data);
        data = NULL;
      }
    }
  }
  fclose(f);
  return data;
}

static void pipeline_cache_write(vk_device_t* d) {
  if (!d->pipeline_cache || d->pipelines_built == 0) return;
  char path[2400], tmp[2500];
  if (!pipeline_cache_path(d->phys, path, sizeof path, true)) return;
  size_t n = 0;
  if (d->vk.vkGetPipelineCacheData(d->device, d->pipeline_cache, &n, NULL) != VK_SUCCESS || n == 0) return;
  void* data = malloc(n);
  if (!data) return;
  if (d->vk.vkGetPipelineCacheData(d->device, d->pipeline_cache, &n, data) == VK_SUCCESS) {
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE* f = fopen(tmp, "wb");
    bool ok = f && fwrite(data, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) == 0) ok = true;
    else unlink(tmp);
  }
  free(data);
}

void spv_vk_device_close(void* device) {
  vk_device_t* d = device;
  if (!d) return;
  if (d->device) {
    wait_idle(d);
    d->vk.vkDeviceWaitIdle(d->device);
    while (d->graphs) {
      vk_graph_t* g = d->graphs;
      d->graphs = g->next;
      g->next = NULL;
      spv_vk_graph_free(d, g);
    }
    if (d->capturing) {
      spv_vk_graph_free(d, d->capturing);
      d->capturing = NULL;
    }
    for (int i = 0; i < d->num_batches; i++) {
      descriptor_pools_free(d, &d->batches[i].descriptors);
      if (d->batches[i].fence) d->vk.vkDestroyFence(d->device, d->batches[i].fence, NULL);
    }
    buffer_destroy(d, &d->staging);
    if (d->queries) d->vk.vkDestroyQueryPool(d->device, d->queries, NULL);
    pipeline_cache_write(d);
    if (d->pipeline_cache) d->vk.vkDestroyPipelineCache(d->device, d->pipeline_cache, NULL);
    /* Destroying the pool frees its command buffers. */
    if (d->command_pool) d->vk.vkDestroyCommandPool(d->device, d->command_pool, NULL);
    d->vk.vkDestroyDevice(d->device, NULL);
  }
  free(d);
}

xc_status_t spv_vk_device_open(void* target, int index, void** out_device) {
  (void)target;
  *out_device = NULL;
  XC_RETURN_IF_ERROR(spv_vk_probe());
  const spv_vk_physical_t* p = spv_vk_physical(index);
  if (!p) return SPV_ERROR(XC_OUT_OF_RANGE, "spirv: no Vulkan device %d (%d present)", index, spv_vk_device_count());
  vk_device_t* d = calloc(1, sizeof *d);
  if (!d) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory opening a device");
  d->phys = p;
  xc_status_t s = spv_vk_create_device(p, &d->device, &d->vk);
  if (s) {
    free(d);
    return s;
  }
  d->vk.vkGetDeviceQueue(d->device, p->queue_family, 0, &d->queue);
  VkResult r;
  const char* what = "vkCreateCommandPool";
  VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = p->queue_family};
  r = d->vk.vkCreateCommandPool(d->device, &pool, NULL, &d->command_pool);
  if (r == VK_SUCCESS) {
    what = "vkCreatePipelineCache";
    size_t initial_size = 0;
    void* initial = pipeline_cache_read(p, &initial_size);
    VkPipelineCacheCreateInfo cache = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                       .initialDataSize = initial_size,
                                       .pInitialData = initial};
    r = d->vk.vkCreatePipelineCache(d->device, &cache, NULL, &d->pipeline_cache);
    if (r != VK_SUCCESS && initial) { /* data the driver refuses: start empty */
      cache.initialDataSize = 0;
      cache.pInitialData = NULL;
      r = d->vk.vkCreatePipelineCache(d->device, &cache, NULL, &d->pipeline_cache);
    }
    free(initial);
  }
  const char* host_timing = getenv("XCOMP_SPIRV_HOST_TIMING");
  if (r == VK_SUCCESS && p->has_timestamps && !(host_timing && strcmp(host_timing, "1") == 0)) {
    what = "vkCreateQueryPool";
    VkQueryPoolCreateInfo q = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                               .queryType = VK_QUERY_TYPE_TIMESTAMP,
                               .queryCount = SPV_VK_QUERIES};
    r = d->vk.vkCreateQueryPool(d->device, &q, NULL, &d->queries);
  }
  if (r != VK_SUCCESS) {
    spv_vk_device_close(d);
    return spv_vk_fail(r, what);
  }
  d->timestamp_period_ns = p->props.limits.timestampPeriod;
  d->timestamp_mask = p->timestamp_valid_bits >= 64 ? UINT64_MAX : (((uint64_t)1 << p->timestamp_valid_bits) - 1);
  uint32_t cap = env_u32("XCOMP_SPIRV_MAX_WORKGROUPS", UINT32_MAX);
  for (int i = 0; i < 2; i++) {
    uint32_t m = p->info.max_workgroup_count[i];
    d->max_groups[i] = m < cap ? m : cap;
    if (d->max_groups[i] == 0) d->max_groups[i] = 1;
  }
  const char* staging = getenv("XCOMP_SPIRV_STAGING");
  d->force_staging = staging && strcmp(staging, "1") == 0;
  choose_memory_types(d);
  *out_device = d;
  return NULL;
}

/* ---- buffers --------------------------------------------------------------------- */

static void buffer_destroy(vk_device_t* d, vk_buffer_t* b) {
  if (b->mapped) d->vk.vkUnmapMemory(d->device, b->memory);
  if (b->buffer) d->vk.vkDestroyBuffer(d->device, b->buffer, NULL);
  if (b->memory) d->vk.vkFreeMemory(d->device, b->memory, NULL);
  memset(b, 0, sizeof *b);
}

/* A buffer of `size` bytes in the first of `types` that has room; mapped
 * when `map` and the memory is host-visible and coherent. */
static xc_status_t buffer_create(vk_device_t* d, VkDeviceSize size, const int* types, int num_types, bool map,
                                 vk_buffer_t* b) {
  memset(b, 0, sizeof *b);
  b->size = size;
  VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size < 16 ? 16 : size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  SPV_VK_TRY(vkCreateBuffer, d->vk.vkCreateBuffer(d->device, &info, NULL, &b->buffer));
  VkMemoryRequirements req;
  d->vk.vkGetBufferMemoryRequirements(d->device, b->buffer, &req);
  VkResult r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  int chosen = -1, tried = 0;
  for (int i = 0; i < num_types && r != VK_SUCCESS; i++) {
    if (!(req.memoryTypeBits & (1u << types[i]))) continue;
    tried++;
    VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                  .allocationSize = req.size,
                                  .memoryTypeIndex = (uint32_t)types[i]};
    r = d->vk.vkAllocateMemory(d->device, &alloc, NULL, &b->memory);
    if (r == VK_SUCCESS) chosen = types[i];
    /* Out of one kind of memory: try the next kind. */
    else if (r != VK_ERROR_OUT_OF_DEVICE_MEMORY && r != VK_ERROR_OUT_OF_HOST_MEMORY)
      break;
  }
  if (r == VK_SUCCESS) r = d->vk.vkBindBufferMemory(d->device, b->buffer, b->memory, 0);
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (r == VK_SUCCESS && map && (d->phys->memory.memoryTypes[chosen].propertyFlags & host) == host)
    r = d->vk.vkMapMemory(d->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
  if (r != VK_SUCCESS) {
    b->mapped = NULL;
    buffer_destroy(d, b);
    if (!tried)
      return SPV_ERROR(XC_UNSUPPORTED, "spirv: %s has no memory type for storage buffers", d->phys->props.deviceName);
    if (chosen < 0 && (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY))
      return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of device memory allocating a buffer of %llu bytes",
                       (unsigned long long)size);
    return spv_vk_fail(r, chosen < 0 ? "vkAllocateMemory" : "vkBindBufferMemory/vkMapMemory");
  }
  return NULL;
}

xc_status_t spv_vk_buffer_alloc(void* device, size_t size, void** out_buffer) {
  vk_device_t* d = device;
  *out_buffer = NULL;
  vk_buffer_t* b = malloc(sizeof *b);
  if (!b) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory");
  xc_status_t s = buffer_create(d, size, d->buffer_types, d->num_buffer_types, !d->force_staging, b);
  if (s) {
    free(b);
    return s;
  }
  *out_buffer = b;
  return NULL;
}

/* A buffer in host-visible coherent memory (the staging memory type), mapped
 * for good: on devices whose buffers live in device-local memory the host
 * still reads small records (the index-error record) in place, after the
 * fence (submissions end with a device-to-host barrier). */
xc_status_t spv_vk_buffer_alloc_mapped(void* device, size_t size, void** out_buffer, void** out_host) {
  vk_device_t* d = device;
  *out_buffer = NULL;
  *out_host = NULL;
  if (d->staging_type < 0)
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: %s has no host-visible coherent memory", d->phys->props.deviceName);
  vk_buffer_t* b = malloc(sizeof *b);
  if (!b) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory");
  xc_status_t s = buffer_create(d, size, &d->staging_type, 1, true, b);
  if (!s && !b->mapped) {
    buffer_destroy(d, b);
    s = SPV_ERROR(XC_UNSUPPORTED, "spirv: host-visible memory of %s could not be mapped", d->phys->props.deviceName);
  }
  if (s) {
    free(b);
    return s;
  }
  *out_buffer = b;
  *out_host = b->mapped;
  return NULL;
}

void spv_vk_buffer_free(void* device, void* buffer) {
  vk_device_t* d = device;
  if (!buffer) return;
  wait_idle(d);
  buffer_destroy(d, buffer);
  free(buffer);
}

void* spv_vk_buffer_host_pointer(void* device, void* buffer) {
  (void)device;
  return ((vk_buffer_t*)buffer)->mapped;
}

/* The staging buffer, at least `want` bytes (up to SPV_VK_STAGING_MAX);
 * only called while the device is idle. */
static xc_status_t staging_reserve(vk_device_t* d, VkDeviceSize want) {
  if (want > SPV_VK_STAGING_MAX) want = SPV_VK_STAGING_MAX;
  if (d->staging.buffer && d->staging.size >= want) return NULL;
  if (d->staging_type < 0)
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: %s has no host-visible coherent memory for copies",
                     d->phys->props.deviceName);
  VkDeviceSize size = want < SPV_VK_STAGING_MIN ? SPV_VK_STAGING_MIN : want;
  buffer_destroy(d, &d->staging);
  XC_RETURN_IF_ERROR(buffer_create(d, size, &d->staging_type, 1, true, &d->staging));
  if (!d->staging.mapped) {
    buffer_destroy(d, &d->staging);
    return SPV_ERROR(XC_INTERNAL, "spirv: the staging buffer could not be mapped");
  }
  return NULL;
}

/* One copy command in the current batch, then everything up to it is run. */
static xc_status_t copy_and_wait(vk_device_t* d, VkBuffer src, VkBuffer dst, VkDeviceSize src_offset,
                                 VkDeviceSize dst_offset, VkDeviceSize size) {
  vk_batch_t* b = NULL;
  XC_RETURN_IF_ERROR(batch_current(d, &b));
  VkBufferCopy region = {src_offset, dst_offset, size};
  d->vk.vkCmdCopyBuffer(b->cb, src, dst, 1, &region);
  record_barrier(d, b->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
  return spv_vk_synchronize(d);
}

xc_status_t spv_vk_buffer_write(void* device, void* buffer, size_t offset, const void* src, size_t size) {
  vk_device_t* d = device;
  vk_buffer_t* b = buffer;
  if (size == 0) return NULL;
  if (b->mapped) {
    /* Queued launches may still read or write the buffer. */
    XC_RETURN_IF_ERROR(spv_vk_synchronize(d));
    memcpy((char*)b->mapped + offset, src, size);
    return NULL;
  }
  XC_RETURN_IF_ERROR(spv_vk_synchronize(d));
  XC_RETURN_IF_ERROR(staging_reserve(d, size));
  for (size_t done = 0; done < size;) {
    size_t n = size - done < d->staging.size ? size - done : (size_t)d->staging.size;
    memcpy(d->staging.mapped, (const char*)src + done, n);
    XC_RETURN_IF_ERROR(copy_and_wait(d, d->staging.buffer, b->buffer, 0, offset + done, n));
    done += n;
  }
  return NULL;
}

xc_status_t spv_vk_buffer_read(void* device, void* buffer, size_t offset, void* dst, size_t size) {
  vk_device_t* d = device;
  vk_buffer_t* b = buffer;
  if (size == 0) return NULL;
  if (b->mapped) {
    XC_RETURN_IF_ERROR(spv_vk_synchronize(d));
    memcpy(dst, (const char*)b->mapped + offset, size);
    return NULL;
  }
  /* The staging buffer may be replaced: nothing queued may use it. */
  XC_RETURN_IF_ERROR(spv_vk_synchronize(d));
  XC_RETURN_IF_ERROR(staging_reserve(d, size));
  for (size_t done = 0; done < size;) {
    size_t n = size - done < d->staging.size ? size - done : (size_t)d->staging.size;
    XC_RETURN_IF_ERROR(copy_and_wait(d, b->buffer, d->staging.buffer, offset + done, 0, n));
    memcpy((char*)dst + done, d->staging.mapped, n);
    done += n;
  }
  return NULL;
}

/* ---- modules ---------------------------------------------------------------------- */

static void feature_names(uint32_t f, char* out, size_t size) {
  static const char* const names[] = {"float16", "int8", "int16", "int64", "float64",
                                      "8-bit storage", "16-bit storage", "cooperative matrix",
                                      "subgroup arithmetic", "clustered subgroup operations"};
  size_t len = 0;
  out[0] = '\0';
  for (unsigned i = 0; i < 32 && len < size; i++) {
    if (!(f & (1u << i))) continue;
    char unknown[32];
    snprintf(unknown, sizeof unknown, "feature bit %u", i);
    const char* name = i < sizeof names / sizeof names[0] ? names[i] : unknown;
    int w = snprintf(out + len, size - len, "%s%s", len ? ", " : "", name);
    if (w < 0) break;
    len += (size_t)w;
  }
}

/* The module must declare a GLCompute entry point `entry` whose LocalSize
 * (when given as literals) is the blob's local size: the driver is not asked
 * to cope with a module that does not match its header. */
static xc_status_t check_entry(const uint32_t* code, size_t n, const spv_kernel_info_t* info) {
  if (n < 5 || code[0] != 0x07230203u)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: module of kernel '%s' is not SPIR-V", info->entry);
  uint32_t entry_id = 0;
  bool found = false;
  for (size_t i = 5; i < n;) {
    uint32_t words = code[i] >> 16, op = code[i] & 0xffffu;
    if (words == 0 || i + words > n)
      return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: module of kernel '%s' is truncated", info->entry);
    if (op == 15 /* OpEntryPoint */ && words >= 4 && code[i + 1] == 5 /* GLCompute */) {
      const char* name = (const char*)&code[i + 3];
      size_t max = (words - 3) * 4;
      if (strnlen(name, max) < max && strcmp(name, info->entry) == 0) {
        found = true;
        entry_id = code[i + 2];
      }
    }
    if (found && op == 16 /* OpExecutionMode */ && words == 6 && code[i + 1] == entry_id &&
        code[i + 2] == 17 /* LocalSize */) {
      uint64_t local = (uint64_t)code[i + 3] * code[i + 4] * code[i + 5];
      if (local != info->local_size)
        return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: kernel '%s' declares %llu work-items, its blob says %u",
                         info->entry, (unsigned long long)local, info->local_size);
    }
    i += words;
  }
  if (!found)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: the module has no GLCompute entry point '%s'", info->entry);
  return NULL;
}

void spv_vk_module_unload(void* device, void* module) {
  vk_device_t* d = device;
  vk_module_t* m = module;
  if (!m) return;
  wait_idle(d);
  if (m->pipeline) d->vk.vkDestroyPipeline(d->device, m->pipeline, NULL);
  if (m->layout) d->vk.vkDestroyPipelineLayout(d->device, m->layout, NULL);
  if (m->set_layout) d->vk.vkDestroyDescriptorSetLayout(d->device, m->set_layout, NULL);
  if (m->shader) d->vk.vkDestroyShaderModule(d->device, m->shader, NULL);
  free(m);
}

static xc_status_t module_check(const vk_device_t* d, const spv_kernel_info_t* info, uint32_t push_bytes) {
  const spv_vk_physical_t* p = d->phys;
  const VkPhysicalDeviceLimits* lim = &p->props.limits;
  uint32_t missing = info->features & ~p->info.features;
  if (missing) {
    char names[256];
    feature_names(missing, names, sizeof names);
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: kernel '%s' needs %s, which %s lacks", info->entry, names,
                     p->props.deviceName);
  }
  if (info->local_size > (uint32_t)p->info.caps.max_threads_per_group)
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: kernel '%s' has %u work-items per work-group, %s allows %d",
                     info->entry, info->local_size, p->props.deviceName, p->info.caps.max_threads_per_group);
  if (info->shared_bytes > lim->maxComputeSharedMemorySize)
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: kernel '%s' needs %u bytes of work-group memory, %s has %u",
                     info->entry, info->shared_bytes, p->props.deviceName, lim->maxComputeSharedMemorySize);
  if (info->num_buffers > lim->maxPerStageDescriptorStorageBuffers ||
      info->num_buffers > lim->maxDescriptorSetStorageBuffers)
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: kernel '%s' binds %u storage buffers, %s allows %u", info->entry,
                     info->num_buffers, p->props.deviceName, lim->maxPerStageDescriptorStorageBuffers);
  if (push_bytes > lim->maxPushConstantsSize)
    return SPV_ERROR(XC_UNSUPPORTED, "spirv: kernel '%s' needs %u bytes of push constants, %s has %u", info->entry,
                     push_bytes, p->props.deviceName, lim->maxPushConstantsSize);
  return NULL;
}

/* The SPIR-V validator's verdict as a status about the input. */
static xc_status_t validate(const uint32_t* code, size_t n, const char* entry) {
  xc_status_t s = spv_tools_validate(code, n, entry);
  if (!s) return NULL;
  xc_status_t wrapped = SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: invalid module: %s", spv_host->status_message(s));
  spv_host->status_free(s);
  return wrapped;
}

static xc_status_t module_create(vk_device_t* d, const uint32_t* code, size_t n, vk_module_t* m) {
  VkShaderModuleCreateInfo shader = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = n * 4,
                                     .pCode = code};
  SPV_VK_TRY(vkCreateShaderModule, d->vk.vkCreateShaderModule(d->device, &shader, NULL, &m->shader));
  VkDescriptorSetLayoutBinding bindings[XC_TARGET_MAX_ARGS];
  for (uint32_t i = 0; i < m->info.num_buffers; i++)
    bindings[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                                 .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                 .descriptorCount = 1,
                                                 .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  VkDescriptorSetLayoutCreateInfo set = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                         .bindingCount = m->info.num_buffers,
                                         .pBindings = bindings};
  SPV_VK_TRY(vkCreateDescriptorSetLayout, d->vk.vkCreateDescriptorSetLayout(d->device, &set, NULL, &m->set_layout));
  VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, m->push_bytes};
  VkPipelineLayoutCreateInfo layout = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = 1,
                                       .pSetLayouts = &m->set_layout,
                                       .pushConstantRangeCount = 1,
                                       .pPushConstantRanges = &push};
  SPV_VK_TRY(vkCreatePipelineLayout, d->vk.vkCreatePipelineLayout(d->device, &layout, NULL, &m->layout));
  VkComputePipelineCreateInfo pipeline = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = m->shader,
                .pName = m->info.entry},
      .layout = m->layout,
      .basePipelineIndex = -1};
  SPV_VK_TRY(vkCreateComputePipelines,
             d->vk.vkCreateComputePipelines(d->device, d->pipeline_cache, 1, &pipeline, NULL, &m->pipeline));
  d->pipelines_built++;
  return NULL;
}

xc_status_t spv_vk_module_load(void* device, const xc_blob_t* blob, void** out_module) {
  vk_device_t* d = device;
  *out_module = NULL;
  spv_kernel_info_t info;
  const uint32_t* code = NULL;
  size_t n = 0;
  XC_RETURN_IF_ERROR(spv_blob_unpack(blob, &info, &code, &n));
  uint32_t push_bytes = SPV_PUSH_SCALARS_OFFSET + 8 * info.num_scalars;
  XC_RETURN_IF_ERROR(module_check(d, &info, push_bytes));
  /* The blob's bytes need not be word-aligned (a model file's). */
  uint32_t* words = malloc(n * sizeof *words);
  vk_module_t* m = calloc(1, sizeof *m);
  if (!words || !m) {
    free(words);
    free(m);
    return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory loading kernel '%s'", info.entry);
  }
  memcpy(words, code, n * sizeof *words);
  m->info = info;
  m->push_bytes = push_bytes;
  xc_status_t s = check_entry(words, n, &info);
  if (!s) s = validate(words, n, info.entry);
  if (!s) s = module_create(d, words, n, m);
  free(words);
  if (s) {
    spv_vk_module_unload(d, m);
    return s;
  }
  *out_module = m;
  return NULL;
}

xc_status_t spv_vk_kernel_get(void* device, void* module, const char* name, void** out_kernel) {
  (void)device;
  vk_module_t* m = module;
  *out_kernel = NULL;
  if (strcmp(name, m->info.entry) != 0)
    return SPV_ERROR(XC_NOT_FOUND, "spirv: the module has no kernel '%s' (its entry point is '%s')", name,
                     m->info.entry);
  *out_kernel = m;
  return NULL;
}

/* ---- launches ---------------------------------------------------------------------- */

static xc_status_t record_launch(vk_device_t* d, VkCommandBuffer cb, vk_descriptor_pools_t* pools, vk_module_t* m,
                                 const xc_launch_args_t* args, const uint32_t grid[3], uint32_t total) {
  uint32_t x = total < d->max_groups[0] ? total : d->max_groups[0];
  uint64_t rows = ((uint64_t)total + x - 1) / x;
  /* Program ids of the last row must stay representable in 32 bits. */
  if (rows * x - 1 > UINT32_MAX)
    return SPV_ERROR(XC_OUT_OF_RANGE, "spirv: %u programs cannot be numbered in 32 bits", total);
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (m->info.num_buffers > 0) {
    XC_RETURN_IF_ERROR(descriptor_set_alloc(d, pools, m->set_layout, &set));
    VkDescriptorBufferInfo infos[XC_TARGET_MAX_ARGS];
    VkWriteDescriptorSet writes[XC_TARGET_MAX_ARGS];
    for (uint32_t i = 0; i < m->info.num_buffers; i++) {
      infos[i] = (VkDescriptorBufferInfo){((const vk_buffer_t*)args->buffers[i])->buffer, 0, VK_WHOLE_SIZE};
      writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                         .dstSet = set,
                                         .dstBinding = i,
                                         .descriptorCount = 1,
                                         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                         .pBufferInfo = &infos[i]};
    }
    d->vk.vkUpdateDescriptorSets(d->device, m->info.num_buffers, writes, 0, NULL);
  }
  uint8_t push[SPV_PUSH_SCALARS_OFFSET + 8 * SPV_MAX_SCALARS];
  memset(push, 0, sizeof push);
  memcpy(push, grid, 3 * sizeof(uint32_t));
  if (args->num_scalars > 0) memcpy(push + SPV_PUSH_SCALARS_OFFSET, args->scalars, 8 * (size_t)args->num_scalars);
  d->vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, m->pipeline);
  if (set) d->vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, m->layout, 0, 1, &set, 0, NULL);
  /* Rows of x work-groups, at most max_groups[1] rows per dispatch. */
  uint32_t base = 0;
  while (rows > 0) {
    uint32_t y = rows < d->max_groups[1] ? (uint32_t)rows : d->max_groups[1];
    memcpy(push + 12, &base, sizeof base);
    d->vk.vkCmdPushConstants(cb, m->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, m->push_bytes, push);
    d->vk.vkCmdDispatch(cb, x, y, 1);
    rows -= y;
    base += x * y;
  }
  record_barrier(d, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
  return NULL;
}

xc_status_t spv_vk_launch(void* device, void* kernel, const xc_launch_args_t* args) {
  vk_device_t* d = device;
  vk_module_t* m = kernel;
  if (args->num_buffers != (int)m->info.num_buffers || args->num_scalars != (int)m->info.num_scalars)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: kernel '%s' takes %u buffers and %u scalars, given %d and %d",
                     m->info.entry, m->info.num_buffers, m->info.num_scalars, args->num_buffers, args->num_scalars);
  uint32_t grid[3];
  uint64_t total = 1;
  for (int i = 0; i < 3; i++) {
    int64_t g = args->grid[i] < 1 ? 1 : args->grid[i];
    if ((uint64_t)g > UINT32_MAX || (total *= (uint64_t)g) > UINT32_MAX)
      return SPV_ERROR(XC_OUT_OF_RANGE, "spirv: grid %lld x %lld x %lld of kernel '%s' exceeds 2^32 programs",
                       (long long)args->grid[0], (long long)args->grid[1], (long long)args->grid[2], m->info.entry);
    grid[i] = (uint32_t)g;
  }
  if (d->capturing)
    return record_launch(d, d->capturing->cb, &d->capturing->descriptors, m, args, grid, (uint32_t)total);
  vk_batch_t* b = NULL;
  XC_RETURN_IF_ERROR(batch_current(d, &b));
  XC_RETURN_IF_ERROR(record_launch(d, b->cb, &b->descriptors, m, args, grid, (uint32_t)total));
  /* Long runs of launches start executing while more are recorded. */
  if (++b->launches >= SPV_VK_BATCH_LAUNCHES) return batch_submit(d);
  return NULL;
}

/* ---- events ---------------------------------------------------------------------- */

static double host_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

xc_status_t spv_vk_event_record(void* device, void** out_event) {
  vk_device_t* d = device;
  *out_event = NULL;
  vk_event_t* e = calloc(1, sizeof *e);
  if (!e) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory");
  if (!d->queries) {
    /* No timestamps on this queue: time on the host, after the work. */
    xc_status_t s = spv_vk_synchronize(d);
    if (s) {
      free(e);
      return s;
    }
    e->host = true;
    e->host_ms = host_now_ms();
    *out_event = e;
    return NULL;
  }
  uint32_t slot = SPV_VK_QUERIES;
  for (uint32_t i = 0; i < SPV_VK_QUERIES && slot == SPV_VK_QUERIES; i++) {
    uint32_t q = (d->query_next + i) % SPV_VK_QUERIES;
    if (!d->query_used[q]) slot = q;
  }
  if (slot == SPV_VK_QUERIES) {
    free(e);
    return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: more than %d events alive", SPV_VK_QUERIES);
  }
  vk_batch_t* b = NULL;
  xc_status_t s = batch_current(d, &b);
  if (s) {
    free(e);
    return s;
  }
  d->vk.vkCmdResetQueryPool(b->cb, d->queries, slot, 1);
  d->vk.vkCmdWriteTimestamp(b->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d->queries, slot);
  d->query_used[slot] = true;
  d->query_next = (slot + 1) % SPV_VK_QUERIES;
  e->query = slot;
  e->serial = b->serial;
  *out_event = e;
  return NULL;
}

xc_status_t spv_vk_event_elapsed_ms(void* device, void* start, void* end, double* out_ms) {
  vk_device_t* d = device;
  vk_event_t *a = start, *b = end;
  *out_ms = 0;
  if (a->host || b->host) {
    if (!(a->host && b->host)) return SPV_ERROR(XC_INTERNAL, "spirv: a host event timed against a device event");
    *out_ms = b->host_ms - a->host_ms;
    return NULL;
  }
  if (a->serial > d->synced_serial || b->serial > d->synced_serial) XC_RETURN_IF_ERROR(spv_vk_synchronize(d));
  /* Both batches have completed: the results are there, unless a batch was
   * lost to an error (then waiting for them would never end). */
  uint64_t ta = 0, tb = 0;
  VkResult r = d->vk.vkGetQueryPoolResults(d->device, d->queries, a->query, 1, sizeof ta, &ta, sizeof ta,
                                           VK_QUERY_RESULT_64_BIT);
  if (r == VK_SUCCESS)
    r = d->vk.vkGetQueryPoolResults(d->device, d->queries, b->query, 1, sizeof tb, &tb, sizeof tb,
                                    VK_QUERY_RESULT_64_BIT);
  if (r == VK_NOT_READY)
    return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: an event was never reached (its work failed to submit)");
  if (r != VK_SUCCESS) return spv_vk_fail(r, "vkGetQueryPoolResults");
  uint64_t ticks = (tb - ta) & d->timestamp_mask;
  *out_ms = (double)ticks * d->timestamp_period_ns / 1e6;
  return NULL;
}

void spv_vk_event_free(void* device, void* event) {
  vk_device_t* d = device;
  vk_event_t* e = event;
  if (!e) return;
  if (!e->host) d->query_used[e->query] = false;
  free(e);
}

/* ---- launch graphs ------------------------------------------------------------------ */

xc_status_t spv_vk_capture_begin(void* device) {
  vk_device_t* d = device;
  if (d->capturing) return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: a launch graph is already being captured");
  vk_graph_t* g = calloc(1, sizeof *g);
  if (!g) return SPV_ERROR(XC_RESOURCE_EXHAUSTED, "spirv: out of memory");
  VkCommandBufferAllocateInfo cb = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .commandPool = d->command_pool,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  VkResult r = d->vk.vkAllocateCommandBuffers(d->device, &cb, &g->cb);
  const char* what = "vkAllocateCommandBuffers";
  if (r == VK_SUCCESS) {
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    r = d->vk.vkCreateFence(d->device, &fence, NULL, &g->fence);
    what = "vkCreateFence";
  }
  if (r == VK_SUCCESS) {
    /* Submitted again on every replay: no ONE_TIME_SUBMIT. */
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    r = d->vk.vkBeginCommandBuffer(g->cb, &begin);
    what = "vkBeginCommandBuffer";
  }
  if (r != VK_SUCCESS) {
    spv_vk_graph_free(d, g);
    return spv_vk_fail(r, what);
  }
  d->capturing = g;
  return NULL;
}

xc_status_t spv_vk_capture_end(void* device, void** out_graph) {
  vk_device_t* d = device;
  *out_graph = NULL;
  vk_graph_t* g = d->capturing;
  if (!g) return SPV_ERROR(XC_INVALID_ARGUMENT, "spirv: capture end without capture begin");
  d->capturing = NULL;
  record_host_barrier(d, g->cb);
  VkResult r = d->vk.vkEndCommandBuffer(g->cb);
  if (r != VK_SUCCESS) {
    spv_vk_graph_free(d, g);
    return spv_vk_fail(r, "vkEndCommandBuffer");
  }
  g->next = d->graphs;
  d->graphs = g;
  *out_graph = g;
  return NULL;
}

xc_status_t spv_vk_graph_launch(void* device, void* graph) {
  vk_device_t* d = device;
  vk_graph_t* g = graph;
  /* Launches queued before the replay run before it. */
  XC_RETURN_IF_ERROR(batch_submit(d));
  if (g->in_flight) {
    SPV_VK_TRY(vkWaitForFences, d->vk.vkWaitForFences(d->device, 1, &g->fence, VK_TRUE, UINT64_MAX));
    g->in_flight = false;
  }
  SPV_VK_TRY(vkResetFences, d->vk.vkResetFences(d->device, 1, &g->fence));
  VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &g->cb};
  SPV_VK_TRY(vkQueueSubmit, d->vk.vkQueueSubmit(d->queue, 1, &submit, g->fence));
  g->in_flight = true;
  return NULL;
}

void spv_vk_graph_free(void* device, void* graph) {
  vk_device_t* d = device;
  vk_graph_t* g = graph;
  if (!g) return;
  if (g->in_flight) d->vk.vkWaitForFences(d->device, 1, &g->fence, VK_TRUE, UINT64_MAX);
  for (vk_graph_t** p = &d->graphs; *p; p = &(*p)->next) {
    if (*p == g) {
      *p = g->next;
      break;
    }
  }
  if (d->capturing == g) d->capturing = NULL;
  descriptor_pools_free(d, &g->descriptors);
  if (g->fence) d->vk.vkDestroyFence(d->device, g->fence, NULL);
  if (g->cb) d->vk.vkFreeCommandBuffers(d->device, d->command_pool, 1, &g->cb);
  free(g);
}
