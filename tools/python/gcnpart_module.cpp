// gcnpart._core: the nanobind module under the Python package (tools/python/gcnpart/). It converts Python values
// into the library's requests, calls the library entry points (load_data, engine::train, engine::compare,
// engine::predict, partition::advise) with the GIL released, and converts the reports back. No engine logic here.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "datasets/csr.hpp"
#include "datasets/dataset.hpp"
#include "datasets/generators.hpp"
#include "datasets/loaders.hpp"
#include "engine/compare.hpp"
#include "engine/report_json.hpp"
#include "engine/resources.hpp"
#include "engine/train.hpp"
#include "base/atomic_file.hpp"
#include "base/enum_names.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "partition/fit/advise.hpp"
#include "partition/fit/cards.hpp"
#include "partition/strategy.hpp"
#include "tools/cli_common.hpp"
#include "tools/frontend/request.hpp"
#include "tools/report/report_html.hpp"

#ifndef GCNPART_GIT_COMMIT
#define GCNPART_GIT_COMMIT "unknown"
#endif

namespace nb = nanobind;
using namespace nb::literals;
using gcnpart::InvalidInput;
using gcnpart::datasets::Dataset;
using gcnpart::NodeId;
using json = nlohmann::json;

namespace {

// ---- JSON <-> Python

nb::object to_py(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return nb::none();
    case json::value_t::boolean: return nb::bool_(j.get<bool>());
    case json::value_t::number_integer: return nb::int_(j.get<std::int64_t>());
    case json::value_t::number_unsigned: return nb::int_(j.get<std::uint64_t>());
    case json::value_t::number_float: return nb::float_(j.get<double>());
    case json::value_t::string: return nb::str(j.get_ref<const std::string&>().c_str());
    case json::value_t::array: {
      nb::list l;
      for (const auto& v : j) l.append(to_py(v));
      return l;
    }
    case json::value_t::object: {
      nb::dict d;
      for (const auto& [k, v] : j.items()) d[nb::str(k.c_str())] = to_py(v);
      return d;
    }
    default: return nb::none();
  }
}

// ---- options: a dict of keyword arguments, every key read once, unknown keys refused

class Options {
 public:
  explicit Options(nb::dict d) : d_(std::move(d)) {}

  /// Sets `out` from key `name` when present; `expected` names the type in the error.
  template <typename T>
  void get(const char* name, T& out, const char* expected) {
    used_.insert(name);
    if (!d_.contains(name)) return;
    nb::handle v = d_[name];
    if (v.is_none()) return;
    if (!nb::try_cast<T>(v, out))
      throw InvalidInput::parameter(name, nb::cast<std::string>(nb::repr(v)), expected);
  }
  template <typename T>
  T value(const char* name, T fallback, const char* expected) {
    get(name, fallback, expected);
    return fallback;
  }
  bool has(const char* name) const { return d_.contains(name) && !d_[name].is_none(); }
  nb::handle raw(const char* name) {
    used_.insert(name);
    return d_.contains(name) ? nb::handle(d_[name]) : nb::handle();
  }
  /// @throws InvalidInput naming a key nobody read.
  void finish() const {
    std::string known;
    for (const auto& k : used_) known += (known.empty() ? "" : ", ") + k;
    for (auto [k, v] : d_) {
      const auto key = nb::cast<std::string>(k);
      if (!used_.count(key)) throw InvalidInput::parameter(key, nb::cast<std::string>(nb::repr(v)), "one of " + known);
    }
  }

 private:
  nb::dict d_;
  std::set<std::string> used_;
};

// ---- long calls: on a worker thread, the GIL released; progress and Ctrl-C handled on the calling thread

/// What the worker hands to the calling thread: progress events (run there with the GIL) and a cancel flag the
/// library checks between epochs.
struct Interrupts {
  std::atomic<bool> cancel{false};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::function<void()>> events;
  bool done = false;

  void post(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(std::move(f));
    }
    cv.notify_one();
  }
};

constexpr auto kSignalPoll = std::chrono::milliseconds(50);

/// Runs work(interrupts) on a worker thread with the GIL released. The calling thread wakes on every progress
/// event and every 50 ms: with the GIL it delivers the events and checks for signals (PyErr_CheckSignals). A
/// KeyboardInterrupt (or an exception from a progress callback) sets the cancel flag, waits for the library to stop
/// at its next epoch boundary (everything it allocated is freed as its objects unwind) and is then raised.
template <typename Work>
auto run_interruptible(Work&& work) -> decltype(work(std::declval<Interrupts&>())) {
  using Result = decltype(work(std::declval<Interrupts&>()));
  Interrupts in;
  std::optional<Result> result;
  std::exception_ptr error;
  std::optional<nb::python_error> raised;
  {
    nb::gil_scoped_release release;
    std::thread worker([&] {
      try {
        result.emplace(work(in));
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(in.mu);
        in.done = true;
      }
      in.cv.notify_one();
    });
    for (bool finished = false; !finished;) {
      std::vector<std::function<void()>> batch;
      {
        std::unique_lock<std::mutex> lock(in.mu);
        in.cv.wait_for(lock, kSignalPoll, [&] { return in.done || !in.events.empty(); });
        batch.swap(in.events);
        finished = in.done;
      }
      nb::gil_scoped_acquire acquire;
      if (raised) continue;  // already stopping: drop further progress
      try {
        for (auto& f : batch) f();
        if (PyErr_CheckSignals() != 0) throw nb::python_error();
      } catch (nb::python_error& e) {
        raised.emplace(std::move(e));
        in.cancel.store(true);
      }
    }
    worker.join();
  }
  if (raised) throw std::move(*raised);
  if (error) std::rethrow_exception(error);
  return std::move(*result);
}

// ---- arrays

template <typename T>
nb::ndarray<nb::numpy, T> owned_array(std::vector<T>&& v, std::initializer_list<std::size_t> shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(heap->data(), shape, owner);
}

using IdArray = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

/// int64 ids -> NodeId with the range check build_csr makes, before narrowing (never truncated).
std::vector<NodeId> narrow_ids(const IdArray& a, std::int64_t num_nodes, const std::string& what) {
  std::vector<NodeId> out(a.shape(0));
  const std::int64_t* p = a.data();
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (p[i] < 0 || p[i] >= num_nodes)
      throw InvalidInput(gcnpart::InputLocation{what, 0, 0}, "node id out of range at index " + std::to_string(i),
                         std::to_string(p[i]), "0 <= id < num_nodes = " + std::to_string(num_nodes));
    out[i] = static_cast<NodeId>(p[i]);
  }
  return out;
}

/// A Dataset from arrays already converted by the Python side (gcnpart.Dataset.from_arrays): edges as two int64
/// id arrays, features float32 row-major (N x F) or none, labels int64 (-1 = none) or none, splits as int64 ids.
Dataset dataset_from_arrays(const std::string& name, std::int64_t num_nodes, const IdArray& src, const IdArray& dst,
                            std::optional<nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>> x,
                            std::optional<IdArray> y, const std::vector<std::pair<std::string, IdArray>>& splits,
                            bool symmetrize) {
  if (num_nodes < 0 || num_nodes > std::numeric_limits<NodeId>::max())
    throw InvalidInput::parameter("num_nodes", std::to_string(num_nodes),
                                  "0 <= num_nodes <= " + std::to_string(std::numeric_limits<NodeId>::max()));
  if (src.shape(0) != dst.shape(0))
    throw InvalidInput::parameter("edge_index", std::to_string(src.shape(0)) + " sources, " +
                                                    std::to_string(dst.shape(0)) + " targets",
                                  "shape (2, E)");
  Dataset ds;
  ds.name = name;
  ds.provenance = "arrays (Python)";
  gcnpart::datasets::EdgeList edges;
  edges.num_nodes = num_nodes;
  edges.src = narrow_ids(src, num_nodes, "edge_index[0]");
  edges.dst = narrow_ids(dst, num_nodes, "edge_index[1]");
  gcnpart::datasets::BuildOptions bo;
  bo.symmetrize = symmetrize;
  ds.graph = gcnpart::datasets::build_csr(edges, bo, &ds.build_stats);
  if (x) {
    if (static_cast<std::int64_t>(x->shape(0)) != num_nodes)
      throw InvalidInput::parameter("x", "shape (" + std::to_string(x->shape(0)) + ", " + std::to_string(x->shape(1)) + ")",
                                    "one row per node: shape (" + std::to_string(num_nodes) + ", F)");
    ds.num_features = static_cast<std::int64_t>(x->shape(1));
    ds.features.assign(x->data(), x->data() + x->size());
  }
  if (y) {
    if (static_cast<std::int64_t>(y->shape(0)) != num_nodes)
      throw InvalidInput::parameter("y", "shape (" + std::to_string(y->shape(0)) + ",)",
                                    "one label per node: shape (" + std::to_string(num_nodes) + ",)");
    ds.labels.resize(y->shape(0));
    std::int64_t classes = 0;
    for (std::size_t i = 0; i < ds.labels.size(); ++i) {
      const std::int64_t l = y->data()[i];
      if (l < -1 || l >= std::numeric_limits<std::int32_t>::max())
        throw InvalidInput(gcnpart::InputLocation{"y", 0, 0}, "label out of range at node " + std::to_string(i),
                           std::to_string(l), "a class id >= 0, or -1 for unlabelled");
      ds.labels[i] = static_cast<std::int32_t>(l);
      classes = std::max(classes, l + 1);
    }
    // Labels are class ids 0..C-1: the largest sets C, and C past any model's width is refused here with the label,
    // not later as an allocation failure.
    constexpr std::int64_t kMaxClasses = std::int64_t{1} << 24;
    if (classes > kMaxClasses)
      throw InvalidInput(gcnpart::InputLocation{"y", 0, 0},
                         "the largest label makes " + std::to_string(classes) + " classes", std::to_string(classes - 1),
                         "class ids 0..C-1 with C at most 16,777,216");
    ds.num_classes = static_cast<std::int32_t>(classes);
  }
  for (const auto& [split, ids] : splits) {
    // The engine trains, evaluates and reports train / valid / test; another name would fail only later, in train().
    if (split != "train" && split != "valid" && split != "test")
      throw InvalidInput::parameter("splits", "'" + split + "'", "'train', 'valid' ('val') or 'test'");
    ds.splits[split] = narrow_ids(ids, num_nodes, "splits['" + split + "']");
  }
  ds.validate();
  // The file loaders' check, so that arrays meet the same rules: a node twice in a split or in two splits (leakage),
  // more classes than nodes.
  gcnpart::datasets::check_splits_and_labels(ds);
  return ds;
}

// ---- requests

gcnpart::engine::Device parse_device(const std::string& spec) {
  return gcnpart::frontend::parse_device(spec, gcnpart::frontend::Spelling::kPython);
}

std::string metis_sample_text(Options& o) {
  nb::handle v = o.raw("metis_sample");
  if (!v.is_valid() || v.is_none()) return "auto";
  return nb::isinstance<nb::str>(v) ? nb::cast<std::string>(v) : nb::cast<std::string>(nb::str(v));
}

/// The model options train and compare share (GcnConfig, names as the CLI's options with underscores); compare
/// reads `layers` as a list itself.
void read_model(Options& o, gcnpart::engine::GcnConfig& m, bool layers = true) {
  if (layers) o.get("layers", m.layers, "an int");
  o.get("hidden", m.hidden, "an int");
  o.get("dropout", m.dropout, "a float");
  o.get("lr", m.lr, "a float");
  o.get("weight_decay", m.weight_decay, "a float");
  o.get("weight_decay_all_layers", m.weight_decay_all_layers, "a bool");
  o.get("seed", m.seed, "a non-negative int");
  o.get("boundary_overlap", m.boundary_overlap, "a bool");
  o.get("gather_chunks", m.gather_chunks, "an int");
  o.get("spmm_long_row", m.spmm_tuning.long_row, "an int");
  o.get("spmm_segment", m.spmm_tuning.segment, "an int");
  o.get("spmm_lanes", m.spmm_tuning.lanes, "an int");
  m.cuda_graph = gcnpart::from_string<gcnpart::CudaGraphMode>(o.value<std::string>("cuda_graph", "auto", "a str"), "cuda_graph");
  m.spmm = gcnpart::from_string<gcnpart::SpmmAlgo>(o.value<std::string>("spmm", "auto", "a str"), "spmm");
  m.precision =
      gcnpart::from_string<gcnpart::Precision>(o.value<std::string>("precision", "fp32", "a str"), "precision");
}

/// Keyword arguments into `s` through the train options' table (tools/frontend/request.hpp): each row's Python
/// name, converted as its field's type says; None leaves the default.
void read_train_settings(Options& o, gcnpart::frontend::TrainSettings& s) {
  namespace frontend = gcnpart::frontend;
  for (const frontend::TrainOption& row : frontend::train_options()) {
    if (row.python == nullptr) continue;  // CLI only
    nb::handle v = o.raw(row.python);
    if (!v.is_valid() || v.is_none()) continue;
    const frontend::Target target = row.field(s);
    const char* expected = row.py_expected != nullptr ? row.py_expected : frontend::python_type_name(target);
    std::visit(
        [&](auto* field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, std::string>) {
            if (row.py == frontend::PyValue::kAnyAsText && !nb::isinstance<nb::str>(v)) {
              *field = nb::cast<std::string>(nb::str(v));
              return;
            }
            std::int64_t bytes = 0;
            if (row.py == frontend::PyValue::kIntOrText && !nb::isinstance<nb::str>(v) && nb::try_cast(v, bytes)) {
              *field = std::to_string(bytes);
              return;
            }
          }
          if (!nb::try_cast<T>(v, *field))
            throw InvalidInput::parameter(row.python, nb::cast<std::string>(nb::repr(v)), expected);
        },
        target);
    if (row.given) *row.given(s) = true;  // as CLI11 marks an option it was given
  }
}

/// What `gcnpart train` asks of the library, from keyword arguments: the CLI's translation
/// (frontend::make_train_request), parameters spelled as Python spells them.
gcnpart::engine::TrainRequest train_request(const Dataset& ds, Options& o) {
  gcnpart::frontend::TrainSettings s;
  read_train_settings(o, s);
  o.finish();
  return gcnpart::frontend::make_train_request(s, ds.graph.num_edges(), gcnpart::frontend::Spelling::kPython);
}

/// What `gcnpart compare` asks of the library (tools/cmd_compare.cpp's make_request).
gcnpart::engine::CompareRequest compare_request(const Dataset& ds, Options& o) {
  namespace partition = gcnpart::partition;
  gcnpart::engine::CompareRequest q;
  o.get("parts", q.parts, "a list of ints");
  o.get("layers", q.layers, "a list of ints");
  std::vector<std::string> strategies = partition::strategy_names_where(
      [](const partition::StrategyTraits& t) { return !partition::one_device(t.value); });
  o.get("strategies", strategies, "a list of strategy names");
  for (const auto& s : strategies) q.strategies.push_back(gcnpart::from_string<partition::Strategy>(s, "strategies"));
  q.partition.method =
      gcnpart::from_string<partition::Partitioner>(o.value<std::string>("partitioner", "metis", "a str"), "partitioner");
  o.get("partition_seed", q.partition.seed, "an int");
  o.get("imbalance", q.partition.imbalance, "a float");
  q.partition.objective =
      gcnpart::from_string<partition::Objective>(o.value<std::string>("objective", "cut", "'cut' or 'vol'"), "objective");
  q.partition.metis_edge_sample =
      gcnpart::frontend::metis_sample(metis_sample_text(o), ds.graph.num_edges(), "metis_sample");
  q.partition.balance =
      gcnpart::from_string<partition::Balance>(o.value<std::string>("balance", "work", "a str"), "balance");
  o.get("train", q.train, "a bool");
  o.get("epochs", q.config.epochs, "an int");
  o.get("measure_epochs", q.measure_epochs, "an int");
  read_model(o, q.config.model, false);
  q.backend = gcnpart::from_string<gcnpart::Backend>(o.value<std::string>("device", "cpu", "'cpu' or 'cuda'"), "device");
  if (q.backend == gcnpart::Backend::kCuda) (void)parse_device("cuda:0");
  o.finish();
  q.validate();
  return q;
}

/// What `gcnpart fit` asks of partition::advise (tools/cmd_fit.cpp), for a dataset or statistics alone.
gcnpart::partition::FitRequest fit_request(const Dataset* ds, Options& o) {
  namespace partition = gcnpart::partition;
  partition::FitRequest req;
  req.catalogue = partition::load_cards(o.value<std::string>("cards_file", "", "a str"));
  o.get("rank_gpus", req.rank_gpus, "a list of ints");
  std::vector<std::string> strategies;  // default: the library's (what `gcnpart fit` prices)
  for (const auto s : req.strategies) strategies.emplace_back(gcnpart::to_string(s));
  o.get("strategies", strategies, "a list of strategy names");
  req.strategies.clear();
  for (const auto& s : strategies) {
    const auto v = gcnpart::from_string<partition::Strategy>(s, "strategies");
    if (!partition::priced_for_many(v))
      throw InvalidInput::parameter("strategies", s,
                                    "one of " + gcnpart::or_list(partition::strategy_names_where([](const auto& t) {
                                      return partition::priced_for_many(t.value);
                                    })));
    req.strategies.push_back(v);
  }
  o.get("configs", req.configs, "a list of (card id, GPUs) pairs");
  req.dataset = ds;
  if (ds == nullptr) {
    partition::GraphStats& s = req.stats;
    s.name = "the graph";
    o.get("name", s.name, "a str");
    o.get("nodes", s.nodes, "an int");
    o.get("edges", s.edges, "an int");
    o.get("features", s.features, "an int");
    o.get("classes", s.classes, "an int");
    o.get("feature_density", s.feature_density, "a float");
    o.get("degree_m2", s.degree_second_moment, "a float");
    o.get("isolated", s.isolated, "an int");
    const std::int64_t train_nodes = o.value<std::int64_t>("train_nodes", -1, "an int");
    if (train_nodes >= 0) s.split_sizes = {train_nodes, 0, 0};
  }
  partition::ModelSpec& m = req.model;
  o.get("layers", m.layers, "an int");
  o.get("hidden", m.hidden, "an int");
  m.dropout = o.value<double>("dropout", 0.5, "a float") > 0;
  o.get("sparse_features_below", m.sparse_features_below, "a float");
  m.precision = gcnpart::from_string<gcnpart::Precision>(o.value<std::string>("precision", "fp32", "a str"), "precision");
  m.spmm = gcnpart::from_string<gcnpart::SpmmAlgo>(o.value<std::string>("spmm", "auto", "a str"), "spmm");
  o.get("tf32", req.tf32, "a bool");
  req.partitioner =
      gcnpart::from_string<partition::Partitioner>(o.value<std::string>("partitioner", "metis", "a str"), "partitioner");
  o.get("samples", req.samples, "an int");
  o.get("seed", req.seed, "an int");
  o.finish();
  return req;
}

/// A finished engine::train: the summary (the report, weights) and what predict() needs.
struct TrainResult {
  gcnpart::engine::TrainSummary summary;
};

// ---- exceptions

struct PyErrors {
  PyObject *error, *invalid_input, *io_error, *out_of_memory, *device_error, *logic_error, *cancelled;
} g_errors{};

PyObject* new_exception(nb::module_& m, const char* name, std::initializer_list<PyObject*> bases, const char* doc) {
  nb::tuple t = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(bases.size())));
  Py_ssize_t i = 0;
  for (PyObject* b : bases) {
    Py_INCREF(b);
    PyTuple_SET_ITEM(t.ptr(), i++, b);
  }
  const std::string full = std::string("gcnpart.") + name;
  PyObject* e = PyErr_NewExceptionWithDoc(full.c_str(), doc, t.ptr(), nullptr);
  if (e == nullptr) throw nb::python_error();
  m.attr(name) = nb::borrow(e);
  return e;  // one reference kept for the translator, for the life of the process
}

void register_exceptions(nb::module_& m) {
  auto& e = g_errors;
  e.error = new_exception(m, "Error", {PyExc_RuntimeError}, "Base of every gcnpart error (C++ gcnpart::Error).");
  e.invalid_input = new_exception(m, "InvalidInput", {e.error, PyExc_ValueError},
                                  "Malformed data or an out-of-range argument; the message names where, the value "
                                  "and what was expected (C++ gcnpart::InvalidInput, CLI exit code 3).");
  e.io_error = new_exception(m, "IoError", {e.error, PyExc_OSError},
                             "A file is missing, unreadable or unwritable (C++ gcnpart::IoError, exit code 4).");
  e.out_of_memory = new_exception(m, "OutOfMemory", {e.error, PyExc_MemoryError},
                                  "A device, or the emulated cap memory_limit, ran out of memory; the message gives "
                                  "the bytes asked, in use and the peak (C++ gcnpart::OutOfMemory, exit code 5).");
  e.device_error = new_exception(m, "DeviceError", {e.error},
                                 "A CUDA, cuBLAS, cuSPARSE or NCCL call failed (C++ gcnpart::DeviceError, exit code 6).");
  e.logic_error = new_exception(m, "LogicError", {e.error},
                                "A violated precondition: a bug (C++ gcnpart::LogicError).");
  e.cancelled = new_exception(m, "Cancelled", {e.error},
                              "The library stopped a run between epochs because it was asked to (C++ "
                              "gcnpart::engine::Cancelled); Ctrl-C surfaces as KeyboardInterrupt instead.");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const gcnpart::InvalidInput& x) {
      PyErr_SetString(g_errors.invalid_input, x.what());
    } catch (const gcnpart::IoError& x) {
      PyErr_SetString(g_errors.io_error, x.what());
    } catch (const gcnpart::OutOfMemory& x) {
      PyErr_SetString(g_errors.out_of_memory, x.what());
    } catch (const gcnpart::DeviceError& x) {
      PyErr_SetString(g_errors.device_error, x.what());
    } catch (const gcnpart::LogicError& x) {
      PyErr_SetString(g_errors.logic_error, x.what());
    } catch (const gcnpart::engine::Cancelled& x) {
      PyErr_SetString(g_errors.cancelled, x.what());
    } catch (const gcnpart::Error& x) {
      PyErr_SetString(g_errors.error, x.what());
    } catch (const std::bad_alloc&) {  // an allocation outside the tracked memory: still gcnpart.OutOfMemory
      PyErr_SetString(g_errors.out_of_memory,
                      "out of host memory: an allocation failed (std::bad_alloc); the model or the data is larger than "
                      "the memory this process may use (see gcnpart.fit for the bytes a model needs)");
    }
  });
}

}  // namespace

NB_MODULE(_core, m) {
  namespace engine = gcnpart::engine;
  m.doc() = "gcnpart's C++ engine (nanobind). Use the package `gcnpart`, not this module.";
  register_exceptions(m);
  m.attr("commit") = GCNPART_GIT_COMMIT;
  m.attr("cuda_device_count") = nb::cpp_function([] { return engine::cuda_device_count(); });

  nb::class_<Dataset>(m, "Dataset", "A dataset held by the engine (gcnpart.Dataset wraps it).")
      .def_prop_ro("name", [](const Dataset& d) { return d.name; })
      .def_prop_ro("provenance", [](const Dataset& d) { return d.provenance; })
      .def_prop_ro("num_nodes", [](const Dataset& d) { return d.num_nodes(); })
      .def_prop_ro("num_edges", [](const Dataset& d) { return d.graph.num_edges(); })
      .def_prop_ro("num_features", [](const Dataset& d) { return d.num_features; })
      .def_prop_ro("num_classes", [](const Dataset& d) { return d.num_classes; })
      .def("info", [](const Dataset& d) { return to_py(engine::dataset_info_json(d)); })
      .def("edge_index",
           [](const Dataset& d) {
             const auto& g = d.graph;
             const std::size_t e = g.col_ids.size();
             std::vector<std::int64_t> out(2 * e);
             for (std::int64_t u = 0; u < g.num_nodes; ++u)
               for (auto k = g.row_offsets[u]; k < g.row_offsets[u + 1]; ++k) {
                 out[k] = u;
                 out[e + k] = g.col_ids[k];
               }
             return owned_array(std::move(out), {2, e});
           })
      .def(
          "features",
          [](nb::handle self) {
            const Dataset& d = nb::cast<const Dataset&>(self);
            return nb::ndarray<nb::numpy, const float, nb::ndim<2>>(
                d.features.data(), {static_cast<std::size_t>(d.num_nodes()), static_cast<std::size_t>(d.num_features)},
                self);
          },
          "Read-only view of the features (N x F float32), no copy.")
      .def(
          "labels",
          [](nb::handle self) {
            const Dataset& d = nb::cast<const Dataset&>(self);
            return nb::ndarray<nb::numpy, const std::int32_t, nb::ndim<1>>(d.labels.data(), {d.labels.size()}, self);
          },
          "Read-only view of the labels (int32, -1 = none), no copy.")
      .def("splits", [](const Dataset& d) {
        nb::dict out;
        for (const auto& [name, ids] : d.splits) {
          std::vector<std::int64_t> v(ids.begin(), ids.end());
          out[nb::str(name.c_str())] = owned_array(std::move(v), {ids.size()});
        }
        return out;
      });

  m.def(
      "load",
      [](const std::string& path, const std::string& format, const std::string& split, bool symmetrize,
         std::int64_t synthetic_features, std::int32_t synthetic_classes, std::uint64_t seed) {
        gcnpart::cli::DataOptions o;
        o.path = path;
        o.format = format;
        o.split = split;
        o.no_symmetrize = !symmetrize;
        o.synthetic_features = synthetic_features;
        o.synthetic_classes = synthetic_classes;
        o.seed = seed;
        static const char* kFormats[] = {"auto", "ogb", "snap", "metis", "mtx", "gcsr", "demo"};
        if (std::find_if(std::begin(kFormats), std::end(kFormats), [&](const char* f) { return format == f; }) ==
            std::end(kFormats))
          throw InvalidInput::parameter("format", format, "auto, ogb, snap, metis, mtx, gcsr or demo");
        return run_interruptible([&](Interrupts&) { return gcnpart::cli::load_data(o); });
      },
      "path"_a, "format"_a, "split"_a, "symmetrize"_a, "synthetic_features"_a, "synthetic_classes"_a, "seed"_a);

  m.def("rmat", [](int scale, double edge_factor, std::int64_t features, std::int32_t classes, std::uint64_t seed) {
    gcnpart::datasets::RmatParams p;
    p.scale = scale;
    p.edge_factor = edge_factor;
    p.features = features;
    p.classes = classes;
    p.seed = seed;
    if (scale < 1 || scale > 30) throw InvalidInput::parameter("scale", std::to_string(scale), "1..30");
    return run_interruptible([&](Interrupts&) { return gcnpart::datasets::generate_rmat(p); });
  }, "scale"_a, "edge_factor"_a, "features"_a, "classes"_a, "seed"_a);

  m.def("from_arrays", &dataset_from_arrays, "name"_a, "num_nodes"_a, "src"_a, "dst"_a, "x"_a.none(), "y"_a.none(),
        "splits"_a, "symmetrize"_a);

  nb::class_<TrainResult>(m, "TrainResult", "What engine::train returned (gcnpart.TrainReport wraps it).")
      .def("to_json", [](const TrainResult& r) {
        json j = {{"command", "train"}, {"date", gcnpart::now_iso()}, {"commit", GCNPART_GIT_COMMIT}};
        j.update(r.summary.to_json());
        return to_py(j);
      })
      .def_prop_ro("dims", [](const TrainResult& r) { return r.summary.dims; })
      .def("parameters", [](const TrainResult& r, int run) {
        const auto& runs = r.summary.runs;
        if (run < 0 || run >= static_cast<int>(runs.size()))
          throw InvalidInput::parameter("run", std::to_string(run), "0 <= run < " + std::to_string(runs.size()));
        const auto& params = runs[static_cast<std::size_t>(run)].parameters;
        const auto& dims = r.summary.dims;
        nb::list out;
        for (std::size_t i = 0; i < params.size(); ++i) {
          const std::size_t layer = i / 2;
          std::vector<float> v = params[i];
          if (i % 2 == 0) out.append(owned_array(std::move(v), {static_cast<std::size_t>(dims[layer]),
                                                                static_cast<std::size_t>(dims[layer + 1])}));
          else out.append(owned_array(std::move(v), {static_cast<std::size_t>(dims[layer + 1])}));
        }
        return out;
      }, "run"_a = 0);

  m.def("train", [](const Dataset& ds, nb::dict options, nb::object progress) {
    Options o(std::move(options));
    engine::TrainRequest q = train_request(ds, o);
    TrainResult r = run_interruptible([&](Interrupts& in) {
      q.config.cancel = &in.cancel;
      engine::TrainProgress cb;
      if (!progress.is_none())
        cb = [&in, &progress](int run, int epoch, double loss, double vloss, double vacc) {
          in.post([=, &progress] { progress(run, epoch, loss, vloss, vacc); });
        };
      return TrainResult{engine::train(ds, q, cb)};
    });
    r.summary.request.config.cancel = nullptr;  // the flag is gone
    return r;
  }, "dataset"_a, "options"_a, "progress"_a.none());

  m.def("predict", [](const Dataset& ds, const TrainResult& r, int run, const std::string& device) {
    const auto& runs = r.summary.runs;
    if (run < 0 || run >= static_cast<int>(runs.size()))
      throw InvalidInput::parameter("run", std::to_string(run), "0 <= run < " + std::to_string(runs.size()));
    const auto dev = parse_device(device);
    const auto& cfg = r.summary.request.config;
    std::vector<float> logits = run_interruptible([&](Interrupts&) {
      return engine::predict(ds, cfg.model, cfg.normalize_features, runs[static_cast<std::size_t>(run)].parameters, dev);
    });
    return owned_array(std::move(logits), {static_cast<std::size_t>(ds.num_nodes()),
                                           static_cast<std::size_t>(std::max<std::int32_t>(ds.num_classes, 0))});
  }, "dataset"_a, "result"_a, "run"_a, "device"_a);

  m.def("compare", [](const Dataset& ds, nb::dict options, nb::object progress) {
    Options o(std::move(options));
    engine::CompareRequest q = compare_request(ds, o);
    engine::CompareReport report = run_interruptible([&](Interrupts& in) {
      q.config.cancel = &in.cancel;
      engine::CompareProgress cb;
      if (!progress.is_none())
        cb = [&in, &progress](const json& row, std::int64_t done, std::int64_t total) {
          in.post([row, done, total, &progress] { progress(to_py(row), done, total); });
        };
      return engine::compare(ds, q, cb);
    });
    json j = {{"command", "compare"}, {"date", gcnpart::now_iso()}, {"commit", GCNPART_GIT_COMMIT}};
    j.update(report.to_json());
    return to_py(j);
  }, "dataset"_a, "options"_a, "progress"_a.none());

  m.def("compare_total", [](const Dataset& ds, nb::dict options) {
    Options o(std::move(options));
    return engine::compare_configurations(compare_request(ds, o));
  });

  m.def("fit", [](const Dataset* ds, nb::dict options) {
    Options o(std::move(options));
    const gcnpart::partition::FitRequest req = fit_request(ds, o);
    const auto report = run_interruptible([&](Interrupts&) { return gcnpart::partition::advise(req); });
    return to_py(report.to_json());
  }, "dataset"_a.none(), "options"_a);

  m.def("compare_html", [](const std::string& report_json) {
    json j = json::parse(report_json, nullptr, false);
    if (j.is_discarded()) throw InvalidInput::parameter("report", report_json.substr(0, 40), "a JSON document");
    return gcnpart::report::compare_html(j);
  });
  m.def("write_file_atomic", [](const std::string& path, const std::string& text) { gcnpart::write_file_atomic(path, text); },
        "Writes text to path atomically (temporary file, fsync, rename).");
  m.def("invalid_input", [](const std::string& name, const std::string& value, const std::string& expected) {
    throw InvalidInput::parameter(name, value, expected);
  }, "Raises gcnpart.InvalidInput for a bad argument, worded as every other (the Python side's checks).");
}
