// A progress bar on stderr for long work: drawn only when stderr is a terminal and the work has run ~2 s.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gcnpart {

class Progress {
 public:
  /// `total` = 0 means unknown (a counter is shown instead of a bar).
  Progress(std::string label, std::int64_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Sets the amount done and an optional status text (e.g. "loss 0.53 acc 81.2%"). Cheap when not drawing.
  void update(std::int64_t done, const std::string& status = {});
  /// Clears the bar's line.
  void finish();
  /// Globally disable bars (e.g. --quiet).
  static void set_enabled(bool enabled);

 private:
  std::string label_;
  std::int64_t total_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false, finished_ = false, tty_;
};

}  // namespace gcnpart
