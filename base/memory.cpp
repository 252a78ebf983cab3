#include "base/memory.hpp"

namespace gcnpart {

const char* memory_category_name(MemoryCategory c) noexcept {
  switch (c) {
    case MemoryCategory::kGraph: return "graph";
    case MemoryCategory::kFeatures: return "features";
    case MemoryCategory::kActivations: return "activations";
    case MemoryCategory::kGradients: return "gradients";
    case MemoryCategory::kWeights: return "weights";
    case MemoryCategory::kOptimizer: return "optimizer";
    case MemoryCategory::kWorkspace: return "workspace";
    case MemoryCategory::kCommunication: return "communication";
    case MemoryCategory::kCount: break;
  }
  return "unknown";
}

}  // namespace gcnpart
