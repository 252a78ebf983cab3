// DATA as typed on a command line -> the path to load: datasets by name from a data folder (GCNPART_DATA or
// --data-dir in the CLI; the library is handed the folder, it reads no environment).
#pragma once

#include <string>
#include <vector>

namespace gcnpart::datasets {

/// The file endings a dataset name may leave off, in the order they are tried.
inline const std::vector<std::string>& dataset_name_suffixes() {
  static const std::vector<std::string> kSuffixes = {".gcsr", ".txt.gz", ".txt", ".edges", ".graph", ".metis",
                                                     ".mtx.gz", ".mtx"};
  return kSuffixes;
}

/// Resolves DATA: "demo", any path that exists and any DATA with a '/' are returned as they are (a missing path is
/// the loader's to report). Otherwise a bare name is looked
/// up in `data_dir`: DATA_DIR/NAME, then NAME with each of dataset_name_suffixes(), then the same one folder down
/// (DATA_DIR/*/NAME[.suffix]; e.g. "cora" -> DATA_DIR/cora, "email-Enron" -> DATA_DIR/snap/email-Enron.txt.gz).
/// @throws IoError naming DATA, the data folder (or that none is set) and where it looked when nothing is found;
///         InvalidInput when DATA is empty or a name matches more than one file (listing them).
std::string resolve_dataset_path(const std::string& data, const std::string& data_dir);

}  // namespace gcnpart::datasets
