#include "datasets/dataset_path.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "base/error.hpp"

namespace gcnpart::datasets {

namespace fs = std::filesystem;

namespace {

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

/// DIR/NAME, else the first DIR/NAME<suffix> that exists; "" when none does.
std::string find_in(const fs::path& dir, const std::string& name) {
  if (path_exists(dir / name)) return (dir / name).string();
  for (const auto& suffix : dataset_name_suffixes())
    if (path_exists(dir / (name + suffix))) return (dir / (name + suffix)).string();
  return {};
}

}  // namespace

std::string resolve_dataset_path(const std::string& data, const std::string& data_dir) {
  if (data.empty()) throw InvalidInput::parameter("DATA", data, "a dataset path, a dataset name or 'demo'");
  if (data == "demo" || path_exists(data)) return data;
  const bool bare_name = data.find('/') == std::string::npos && data != "." && data != "..";
  if (!bare_name) return data;  // a path: the loader reports it missing
  if (data_dir.empty())
    throw IoError(data, "no such file or directory; to find datasets by name, set GCNPART_DATA (or --data-dir) "
                        "to the folder that holds them");
  std::error_code ec;
  if (!fs::is_directory(data_dir, ec))
    throw IoError(data, "no such file or directory, and the data folder " + data_dir + " is not a folder");
  if (auto top = find_in(data_dir, data); !top.empty()) return top;
  std::vector<std::string> found;
  std::vector<fs::path> subdirs;
  for (fs::directory_iterator it(data_dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec)) subdirs.push_back(it->path());
  std::sort(subdirs.begin(), subdirs.end());  // directory order is arbitrary: report matches in a fixed order
  for (const auto& sub : subdirs)
    if (auto hit = find_in(sub, data); !hit.empty()) found.push_back(hit);
  if (found.size() == 1) return found.front();
  if (found.empty())
    throw IoError(data, "no such file or directory, and no dataset of that name in the data folder " + data_dir +
                            " (looked for " + data + "[.gcsr|.txt.gz|.txt|.edges|.graph|.metis|.mtx.gz|.mtx] there "
                            "and one folder down)");
  std::string list;
  for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
  throw InvalidInput::parameter("DATA", data, "a name that matches one dataset in " + data_dir + ", but it matches " +
                                                  std::to_string(found.size()) + ": " + list + " (give the path)");
}

}  // namespace gcnpart::datasets
