#include "datasets/dataset_path.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>
#include <filesystem>
#include <system_error>

#include "base/error.hpp"
#include "base/format.hpp"

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

/// A file name without the first known dataset suffix it ends with ("email-Enron.txt.gz" -> "email-Enron").
std::string strip_suffix(std::string name) {
  for (const auto& suffix : dataset_name_suffixes())
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      name.resize(name.size() - suffix.size());
      break;
    }
  return name;
}

/// Every entry of DIR and of its subfolders, in a fixed order: (name without a known suffix, path).
std::vector<std::pair<std::string, std::string>> dataset_entries(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  auto sorted_entries = [](const fs::path& folder) {
    std::vector<fs::path> entries;
    std::error_code ec;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
    std::sort(entries.begin(), entries.end());
    return entries;
  };
  for (const auto& e : sorted_entries(dir)) {
    out.emplace_back(strip_suffix(e.filename().string()), e.string());
    std::error_code ec;
    if (fs::is_directory(e, ec))
      for (const auto& f : sorted_entries(e)) out.emplace_back(strip_suffix(f.filename().string()), f.string());
  }
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
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
  if (found.empty()) {
    // Names are matched case-insensitively next ("Cora", PyG's spelling, finds cora), then the nearest names are
    // offered ("coar": did you mean cora?).
    const auto entries = dataset_entries(data_dir);
    std::vector<std::string> same;
    for (const auto& [name, path] : entries)
      if (lower(name) == lower(data)) same.push_back(path);
    if (same.size() == 1) return same.front();
    std::vector<std::string> near;
    const std::size_t limit = data.size() >= 4 ? 2 : 1;  // "coar" -> "cora" is two edits
    for (const auto& [name, path] : entries)
      if (edit_distance(name, data) <= limit && std::find(near.begin(), near.end(), name) == near.end())
        near.push_back(name);
    std::string hint;
    if (!near.empty()) {
      hint = "; did you mean ";
      for (std::size_t i = 0; i < near.size() && i < 3; ++i) hint += (i == 0 ? "'" : " or '") + near[i] + "'";
      hint += "?";
    }
    throw IoError(data, "no such file or directory, and no dataset of that name in the data folder " + data_dir +
                            " (looked for " + data + "[.gcsr|.txt.gz|.txt|.edges|.graph|.metis|.mtx.gz|.mtx] there "
                            "and one folder down)" + hint);
  }
  std::string list;
  for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
  throw InvalidInput::parameter("DATA", data, "a name that matches one dataset in " + data_dir + ", but it matches " +
                                                  std::to_string(found.size()) + ": " + list + " (give the path)");
}

}  // namespace gcnpart::datasets
