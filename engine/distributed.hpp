// What each device of a partition plan trains on. The training loop itself (train_distributed, train_single and
// the one report type) is declared in engine/trainer.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/communicator.hpp"
#include "engine/nccl_communicator.hpp"
#include "engine/trainer.hpp"
#include "partition/plan.hpp"

namespace gcnpart::engine {

/// What one device of a plan trains on: its local nodes' features and labels, its local graph (drop / halo) or
/// gather matrices, normalisation from the plan, and the split rows among its own nodes.
LocalProblem device_problem(const datasets::Dataset& ds, const partition::Plan& plan, int device,
                            bool normalize_features);

}  // namespace gcnpart::engine
