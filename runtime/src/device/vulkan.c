/*===- vulkan.c - kernels of a model on a Vulkan device -------------------===
 *
 * libvulkan.so.1 is opened at run time (dlopen): a model that is not
 * compiled for a GPU, or a machine without Vulkan, never loads it. The
 * device is the one KILN_VULKAN_DEVICE names (its index in the instance's
 * list), else the first discrete GPU, then integrated, virtual, CPU
 * (lavapipe). Every kernel becomes a compute pipeline at open; its buffers
 * are bound by push descriptors (VK_KHR_push_descriptor), so a launch
 * allocates nothing. Launches are recorded into one command buffer, with a
 * barrier between each two, and submitted at kiln_device_wait.
 *
 * Memory is host-visible and coherent (device-local too where a heap is
 * both): the host writes inputs and reads outputs in place.
 *===----------------------------------------------------------------------===*/
#include "device.h"
#include "memory.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

/* The entry points kiln uses, loaded from the instance or the device. */
#define KILN_VK_INSTANCE_FUNCTIONS(X)                                          \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkGetPhysicalDeviceFeatures)                                               \
  X(vkGetPhysicalDeviceFeatures2)                                              \
  X(vkEnumerateDeviceExtensionProperties)                                      \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)
#define KILN_VK_DEVICE_FUNCTIONS(X)                                            \
  X(vkDestroyDevice)                                                           \
  X(vkGetDeviceQueue)                                                          \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkResetCommandBuffer)                                                      \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdPushDescriptorSetKHR)                                                 \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCmdDispatch)                                                             \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkResetFences)                                                             \
  X(vkWaitForFences)                                                           \
  X(vkQueueSubmit)

typedef struct kernel {
  VkShaderModule module;
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout layout;
  VkPipeline pipeline;
  uint32_t num_buffers;
} kernel;

struct kiln_device {
  kiln_device_base base; /* first: see memory.h */
  void *library;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
#define X(name) PFN_##name name;
  KILN_VK_INSTANCE_FUNCTIONS(X)
  KILN_VK_DEVICE_FUNCTIONS(X)
#undef X
  VkInstance instance;
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  uint32_t memory_type;
  VkDeviceSize offset_alignment, max_range;
  uint32_t max_groups[3];
  VkCommandPool pool;
  VkCommandBuffer commands;
  VkFence fence;
  int recording; /* commands holds launches not yet submitted */
  kernel *kernels;
  uint32_t num_kernels;
};

static void vulkan_close(kiln_device *d);
static int vulkan_wait(kiln_device *d, char *error, size_t size);

static const char *device_type_name(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
  default: return "other";
  }
}

/* Lower is preferred when KILN_VULKAN_DEVICE does not choose. */
static int device_rank(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
  default: return 4;
  }
}

static int open_instance(kiln_device *d, char *error, size_t size) {
  d->library = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d->library)
    return kiln_device_fail(error, size,
                            "no Vulkan loader (libvulkan.so.1: %s); install one and a driver "
                            "(on Debian: libvulkan1 mesa-vulkan-drivers)",
                            dlerror());
  d->vkGetInstanceProcAddr =
      (PFN_vkGetInstanceProcAddr)dlsym(d->library, "vkGetInstanceProcAddr");
  PFN_vkCreateInstance create =
      d->vkGetInstanceProcAddr
          ? (PFN_vkCreateInstance)d->vkGetInstanceProcAddr(NULL, "vkCreateInstance")
          : NULL;
  if (!create)
    return kiln_device_fail(error, size, "libvulkan.so.1 has no vkCreateInstance");
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = "kiln",
                           .apiVersion = VK_API_VERSION_1_2};
  VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &app};
  VkResult r = create(&info, NULL, &d->instance);
  if (r != VK_SUCCESS)
    return kiln_device_fail(error, size, "vkCreateInstance failed (VkResult %d): no Vulkan driver?",
                            r);
#define X(name)                                                                                    \
  d->name = (PFN_##name)d->vkGetInstanceProcAddr(d->instance, #name);                              \
  if (!d->name)                                                                                    \
    return kiln_device_fail(error, size, "the Vulkan loader has no %s", #name);
  KILN_VK_INSTANCE_FUNCTIONS(X)
#undef X
  return 0;
}

static int has_extension(kiln_device *d, VkPhysicalDevice p, const char *name) {
  uint32_t n = 0;
  d->vkEnumerateDeviceExtensionProperties(p, NULL, &n, NULL);
  VkExtensionProperties *all = calloc(n ? n : 1, sizeof *all);
  if (!all)
    return 0;
  d->vkEnumerateDeviceExtensionProperties(p, NULL, &n, all);
  int found = 0;
  for (uint32_t i = 0; i < n && !found; ++i)
    found = !strcmp(all[i].extensionName, name);
  free(all);
  return found;
}

/* A queue family with compute, or UINT32_MAX. */
static uint32_t compute_family(kiln_device *d, VkPhysicalDevice p) {
  uint32_t n = 0;
  d->vkGetPhysicalDeviceQueueFamilyProperties(p, &n, NULL);
  VkQueueFamilyProperties families[32];
  if (n > 32)
    n = 32;
  d->vkGetPhysicalDeviceQueueFamilyProperties(p, &n, families);
  for (uint32_t i = 0; i < n; ++i)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
      return i;
  return UINT32_MAX;
}

static int pick_device(kiln_device *d, uint32_t *family, char *error, size_t size) {
  uint32_t n = 0;
  d->vkEnumeratePhysicalDevices(d->instance, &n, NULL);
  if (n == 0)
    return kiln_device_fail(error, size,
                            "no Vulkan device (the loader found no driver; on Debian, "
                            "mesa-vulkan-drivers gives the CPU device lavapipe)");
  VkPhysicalDevice devices[16];
  if (n > 16)
    n = 16;
  d->vkEnumeratePhysicalDevices(d->instance, &n, devices);
  const char *chosen = getenv("KILN_VULKAN_DEVICE");
  int best = -1, best_rank = 99;
  for (uint32_t i = 0; i < n; ++i) {
    VkPhysicalDeviceProperties props;
    d->vkGetPhysicalDeviceProperties(devices[i], &props);
    int usable = compute_family(d, devices[i]) != UINT32_MAX &&
                 has_extension(d, devices[i], VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    if (chosen && *chosen) {
      char *end;
      long index = strtol(chosen, &end, 10);
      if (*end || index < 0 || index >= (long)n)
        return kiln_device_fail(error, size, "KILN_VULKAN_DEVICE=%s is not a device index (0..%u)",
                                chosen, n - 1);
      if ((long)i != index)
        continue;
      if (!usable)
        return kiln_device_fail(error, size,
                                "Vulkan device %u (%s) has no compute queue or no "
                                "VK_KHR_push_descriptor",
                                i, props.deviceName);
    }
    if (usable && device_rank(props.deviceType) < best_rank) {
      best = (int)i;
      best_rank = device_rank(props.deviceType);
    }
  }
  if (best < 0)
    return kiln_device_fail(error, size,
                            "no Vulkan device has a compute queue and VK_KHR_push_descriptor");
  d->physical = devices[best];
  *family = compute_family(d, d->physical);
  VkPhysicalDeviceProperties props;
  d->vkGetPhysicalDeviceProperties(d->physical, &props);
  snprintf(d->base.name, sizeof d->base.name, "%s (%s, Vulkan %u.%u)", props.deviceName,
           device_type_name(props.deviceType), VK_API_VERSION_MAJOR(props.apiVersion),
           VK_API_VERSION_MINOR(props.apiVersion));
  d->offset_alignment = props.limits.minStorageBufferOffsetAlignment;
  d->max_range = props.limits.maxStorageBufferRange;
  memcpy(d->max_groups, props.limits.maxComputeWorkGroupCount, sizeof d->max_groups);
  return 0;
}

/* Host-visible, coherent memory, device-local too where a heap is both. */
static int pick_memory(kiln_device *d, char *error, size_t size) {
  VkPhysicalDeviceMemoryProperties mem;
  d->vkGetPhysicalDeviceMemoryProperties(d->physical, &mem);
  const VkMemoryPropertyFlags shared =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int found = -1;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = mem.memoryTypes[i].propertyFlags;
    if ((f & shared) != shared)
      continue;
    if (found < 0 || (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
      found = (int)i;
    if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
      break;
  }
  if (found < 0)
    return kiln_device_fail(error, size, "%s has no host-visible coherent memory", d->base.name);
  d->memory_type = (uint32_t)found;
  return 0;
}

/* The device features kernels may need, in a chain for vkCreateDevice. */
typedef struct feature_chain {
  VkPhysicalDeviceFeatures2 core;
  VkPhysicalDeviceVulkan11Features v11;
  VkPhysicalDeviceVulkan12Features v12;
} feature_chain;

static void chain_features(feature_chain *c) {
  memset(c, 0, sizeof *c);
  c->core.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  c->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  c->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  c->core.pNext = &c->v11;
  c->v11.pNext = &c->v12;
}

/* Enables in `enabled` what `program`'s kernels use (KILN_GPU_FEATURE_*),
 * or says which one the device lacks. */
static int enable_features(kiln_device *d, const kiln_gpu_program *program,
                           feature_chain *enabled, char *error, size_t size) {
  feature_chain has;
  chain_features(&has);
  chain_features(enabled);
  VkPhysicalDeviceProperties props;
  d->vkGetPhysicalDeviceProperties(d->physical, &props);
  int v12 = props.apiVersion >= VK_API_VERSION_1_2; /* the 1.1/1.2 structs */
  if (v12)
    d->vkGetPhysicalDeviceFeatures2(d->physical, &has.core);
  else
    d->vkGetPhysicalDeviceFeatures(d->physical, &has.core.features);
  struct {
    uint32_t bit;
    const char *what;
    VkBool32 *has, *enable;
  } features[] = {
      {KILN_GPU_FEATURE_INT64, "64-bit integers (shaderInt64)", &has.core.features.shaderInt64,
       &enabled->core.features.shaderInt64},
      {KILN_GPU_FEATURE_INT16, "16-bit integers (shaderInt16)", &has.core.features.shaderInt16,
       &enabled->core.features.shaderInt16},
      {KILN_GPU_FEATURE_FLOAT64, "f64 (shaderFloat64)", &has.core.features.shaderFloat64,
       &enabled->core.features.shaderFloat64},
      {KILN_GPU_FEATURE_INT8, "8-bit integers (shaderInt8)", &has.v12.shaderInt8,
       &enabled->v12.shaderInt8},
      {KILN_GPU_FEATURE_FLOAT16, "f16 (shaderFloat16)", &has.v12.shaderFloat16,
       &enabled->v12.shaderFloat16},
      {KILN_GPU_FEATURE_STORAGE16, "16-bit buffers (storageBuffer16BitAccess)",
       &has.v11.storageBuffer16BitAccess, &enabled->v11.storageBuffer16BitAccess},
      {KILN_GPU_FEATURE_STORAGE8, "8-bit buffers (storageBuffer8BitAccess)",
       &has.v12.storageBuffer8BitAccess, &enabled->v12.storageBuffer8BitAccess},
  };
  for (uint32_t i = 0; i < program->num_kernels; ++i) {
    const kiln_gpu_kernel *k = &program->kernels[i];
    for (size_t f = 0; f < sizeof features / sizeof *features; ++f) {
      if (!(k->features & features[f].bit))
        continue;
      if (!*features[f].has)
        return kiln_device_fail(error, size, "kernel %u ('%s') uses %s, which %s does not have", i,
                                k->name, features[f].what, d->base.name);
      *features[f].enable = VK_TRUE;
    }
  }
  return 0;
}

static int open_device(kiln_device *d, const kiln_gpu_program *program, char *error,
                       size_t size) {
  uint32_t family;
  feature_chain features;
  if (pick_device(d, &family, error, size) || pick_memory(d, error, size) ||
      enable_features(d, program, &features, error, size))
    return 1;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &priority};
  const char *extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &queue,
                             .enabledExtensionCount = 1,
                             .ppEnabledExtensionNames = extensions};
  /* The 1.1/1.2 feature structs exist from Vulkan 1.2 on; before, only the
   * core features (and kernels that need no more). */
  VkPhysicalDeviceProperties props;
  d->vkGetPhysicalDeviceProperties(d->physical, &props);
  if (props.apiVersion >= VK_API_VERSION_1_2)
    info.pNext = &features.core;
  else
    info.pEnabledFeatures = &features.core.features;
  VkResult r = d->vkCreateDevice(d->physical, &info, NULL, &d->device);
  if (r != VK_SUCCESS)
    return kiln_device_fail(error, size, "vkCreateDevice failed on %s (VkResult %d)", d->base.name,
                            r);
#define X(fn)                                                                                      \
  d->fn = (PFN_##fn)d->vkGetDeviceProcAddr(d->device, #fn);                                        \
  if (!d->fn)                                                                                      \
    return kiln_device_fail(error, size, "the Vulkan driver of %s has no %s", d->base.name, #fn);
  KILN_VK_DEVICE_FUNCTIONS(X)
#undef X
  d->vkGetDeviceQueue(d->device, family, 0, &d->queue);
  VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = family};
  VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  if (d->vkCreateCommandPool(d->device, &pool, NULL, &d->pool) != VK_SUCCESS ||
      d->vkCreateFence(d->device, &fence, NULL, &d->fence) != VK_SUCCESS)
    return kiln_device_fail(error, size, "%s: cannot create a command pool or a fence",
                            d->base.name);
  VkCommandBufferAllocateInfo commands = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = d->pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
  if (d->vkAllocateCommandBuffers(d->device, &commands, &d->commands) != VK_SUCCESS)
    return kiln_device_fail(error, size, "%s: cannot allocate a command buffer", d->base.name);
  return 0;
}

static int create_kernel(kiln_device *d, const kiln_gpu_kernel *k, kernel *out, char *error,
                         size_t size) {
  out->num_buffers = k->num_buffers;
  VkShaderModuleCreateInfo code = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = (size_t)k->code_bytes,
                                   .pCode = (const uint32_t *)k->code};
  if (d->vkCreateShaderModule(d->device, &code, NULL, &out->module) != VK_SUCCESS)
    return kiln_device_fail(error, size, "%s refused the SPIR-V of kernel '%s'", d->base.name,
                            k->name);
  VkDescriptorSetLayoutBinding bindings[64];
  if (k->num_buffers > 64)
    return kiln_device_fail(error, size, "kernel '%s' has %u buffers (at most 64)", k->name,
                            k->num_buffers);
  for (uint32_t i = 0; i < k->num_buffers; ++i)
    bindings[i] =
        (VkDescriptorSetLayoutBinding){.binding = i,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .descriptorCount = 1,
                                       .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
  VkDescriptorSetLayoutCreateInfo set = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
      .bindingCount = k->num_buffers,
      .pBindings = bindings};
  if (d->vkCreateDescriptorSetLayout(d->device, &set, NULL, &out->set_layout) != VK_SUCCESS)
    return kiln_device_fail(error, size, "%s: cannot lay out the %u buffers of kernel '%s'",
                            d->base.name, k->num_buffers, k->name);
  VkPipelineLayoutCreateInfo layout = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = 1,
                                       .pSetLayouts = &out->set_layout};
  if (d->vkCreatePipelineLayout(d->device, &layout, NULL, &out->layout) != VK_SUCCESS)
    return kiln_device_fail(error, size, "%s: cannot create the pipeline layout of kernel '%s'",
                            d->base.name, k->name);
  VkComputePipelineCreateInfo pipeline = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = out->module,
                .pName = k->name},
      .layout = out->layout};
  VkResult r =
      d->vkCreateComputePipelines(d->device, VK_NULL_HANDLE, 1, &pipeline, NULL, &out->pipeline);
  if (r != VK_SUCCESS)
    return kiln_device_fail(error, size, "%s cannot build kernel '%s' (VkResult %d)", d->base.name,
                            k->name, r);
  return 0;
}

static int create_region(void *device, kiln_region *r) {
  kiln_device *d = device;
  VkBuffer buffer;
  VkDeviceMemory memory;
  VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = r->bytes ? r->bytes : 4,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  if (d->vkCreateBuffer(d->device, &info, NULL, &buffer) != VK_SUCCESS)
    return 1;
  VkMemoryRequirements needs;
  d->vkGetBufferMemoryRequirements(d->device, buffer, &needs);
  VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = needs.size,
                                .memoryTypeIndex = d->memory_type};
  if (!(needs.memoryTypeBits & (1u << d->memory_type)) ||
      d->vkAllocateMemory(d->device, &alloc, NULL, &memory) != VK_SUCCESS) {
    d->vkDestroyBuffer(d->device, buffer, NULL);
    return 1;
  }
  r->buffer = (void *)buffer;
  r->memory = (void *)memory;
  void *mapped = NULL;
  if (d->vkBindBufferMemory(d->device, buffer, memory, 0) != VK_SUCCESS ||
      d->vkMapMemory(d->device, memory, 0, VK_WHOLE_SIZE, 0, &mapped) != VK_SUCCESS) {
    d->vkDestroyBuffer(d->device, buffer, NULL);
    d->vkFreeMemory(d->device, memory, NULL);
    return 1;
  }
  r->mapped = mapped;
  return 0;
}

static void destroy_region(void *device, kiln_region *r) {
  kiln_device *d = device;
  d->vkDestroyBuffer(d->device, (VkBuffer)r->buffer, NULL);
  d->vkFreeMemory(d->device, (VkDeviceMemory)r->memory, NULL); /* unmaps it */
}

static int drain(void *device, char *error, size_t size) {
  return vulkan_wait(device, error, size);
}

static kiln_device *vulkan_open(const kiln_gpu_program *program, char *error, size_t size) {
  kiln_device *d =
      kiln_device_new(sizeof *d, "the Vulkan device",
                      (kiln_region_api){.create = create_region, .destroy = destroy_region, .drain = drain},
                      error, size);
  if (!d)
    return NULL;
  d->kernels = calloc(program->num_kernels + 1, sizeof *d->kernels);
  if (!d->kernels || open_instance(d, error, size) || open_device(d, program, error, size)) {
    vulkan_close(d);
    return NULL;
  }
  d->base.regions.params_alignment = d->offset_alignment;
  d->num_kernels = program->num_kernels;
  for (uint32_t i = 0; i < program->num_kernels; ++i)
    if (create_kernel(d, &program->kernels[i], &d->kernels[i], error, size)) {
      vulkan_close(d);
      return NULL;
    }
  return d;
}

static void vulkan_close(kiln_device *d) {
  if (!d)
    return;
  if (d->device) {
    if (d->recording) {
      char ignored[64];
      vulkan_wait(d, ignored, sizeof ignored);
    }
    kiln_regions_clear(&d->base.regions);
    for (uint32_t i = 0; i < d->num_kernels; ++i) {
      kernel *k = &d->kernels[i];
      d->vkDestroyPipeline(d->device, k->pipeline, NULL);
      d->vkDestroyPipelineLayout(d->device, k->layout, NULL);
      d->vkDestroyDescriptorSetLayout(d->device, k->set_layout, NULL);
      d->vkDestroyShaderModule(d->device, k->module, NULL);
    }
    if (d->fence)
      d->vkDestroyFence(d->device, d->fence, NULL);
    if (d->pool)
      d->vkDestroyCommandPool(d->device, d->pool, NULL); /* frees the command buffer */
    d->vkDestroyDevice(d->device, NULL);
  }
  if (d->instance)
    d->vkDestroyInstance(d->instance, NULL);
  if (d->library)
    dlclose(d->library);
  free(d->kernels);
  free(d);
}

static void barrier(kiln_device *d, VkAccessFlags to, VkPipelineStageFlags stage) {
  VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                       .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                       .dstAccessMask = to};
  d->vkCmdPipelineBarrier(d->commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, stage, 0, 1, &b,
                          0, NULL, 0, NULL);
}

/* Where argument `i` of a launch of kernel `index` lives on the device. */
static int bind_arg(kiln_device *d, uint32_t index, uint32_t i, const kiln_gpu_arg *arg,
                    VkDescriptorBufferInfo *info, char *error, size_t size) {
  kiln_region *r;
  size_t offset;
  if (kiln_regions_locate(&d->base.regions, d->base.name, index, i, arg, &r, &offset, error,
                          size))
    return 1;
  if (offset % d->offset_alignment || arg->bytes > d->max_range)
    return kiln_device_fail(error, size,
                            "kernel %u: buffer %u (%llu bytes at offset %llu) breaks %s's "
                            "limits (offsets aligned to %llu, at most %llu bytes)",
                            index, i, (unsigned long long)arg->bytes, (unsigned long long)offset,
                            d->base.name, (unsigned long long)d->offset_alignment,
                            (unsigned long long)d->max_range);
  *info = (VkDescriptorBufferInfo){(VkBuffer)r->buffer, offset, arg->bytes ? arg->bytes : 4};
  return 0;
}

static int vulkan_launch(kiln_device *d, uint32_t index, const int64_t grid[3],
                         const kiln_gpu_arg *args, char *error, size_t size) {
  kernel *k = &d->kernels[index];
  for (int i = 0; i < 3; ++i)
    if (grid[i] < 0 || grid[i] > d->max_groups[i])
      return kiln_device_fail(error, size,
                              "kernel %u: a grid of %lld workgroups on axis %d exceeds %s's "
                              "limit of %u",
                              index, (long long)grid[i], i, d->base.name, d->max_groups[i]);
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return 0;
  VkDescriptorBufferInfo buffers[64];
  VkWriteDescriptorSet writes[64];
  for (uint32_t i = 0; i < k->num_buffers; ++i) {
    writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstBinding = i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &buffers[i]};
    if (bind_arg(d, index, i, &args[i], &buffers[i], error, size))
      return 1;
  }
  if (!d->recording) {
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    d->vkResetCommandBuffer(d->commands, 0);
    if (d->vkBeginCommandBuffer(d->commands, &begin) != VK_SUCCESS)
      return kiln_device_fail(error, size, "%s: cannot begin a command buffer", d->base.name);
    d->recording = 1;
  } else {
    barrier(d, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  }
  d->vkCmdBindPipeline(d->commands, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
  if (k->num_buffers)
    d->vkCmdPushDescriptorSetKHR(d->commands, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0,
                                 k->num_buffers, writes);
  d->vkCmdDispatch(d->commands, (uint32_t)grid[0], (uint32_t)grid[1], (uint32_t)grid[2]);
  return 0;
}

static int vulkan_wait(kiln_device *d, char *error, size_t size) {
  if (!d->recording)
    return 0;
  d->recording = 0;
  kiln_regions_drained(&d->base.regions);
  barrier(d, VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT);
  if (d->vkEndCommandBuffer(d->commands) != VK_SUCCESS)
    return kiln_device_fail(error, size, "%s: cannot end the command buffer", d->base.name);
  VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                         .commandBufferCount = 1,
                         .pCommandBuffers = &d->commands};
  VkResult r = d->vkQueueSubmit(d->queue, 1, &submit, d->fence);
  if (r == VK_SUCCESS)
    r = d->vkWaitForFences(d->device, 1, &d->fence, VK_TRUE, UINT64_MAX);
  d->vkResetFences(d->device, 1, &d->fence);
  if (r != VK_SUCCESS)
    return kiln_device_fail(error, size, "%s: the kernels failed (VkResult %d%s)", d->base.name, r,
                            r == VK_ERROR_DEVICE_LOST ? ", device lost" : "");
  return 0;
}

const kiln_device_ops kiln_vulkan_device = {.api = KILN_GPU_VULKAN,
                                            .name = "Vulkan",
                                            .open = vulkan_open,
                                            .close = vulkan_close,
                                            .launch = vulkan_launch,
                                            .wait = vulkan_wait};
