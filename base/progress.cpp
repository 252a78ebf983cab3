#include "base/progress.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>

namespace gcnpart {

namespace {
std::atomic<bool> g_enabled{true};
constexpr auto kDelay = std::chrono::milliseconds(2000);
constexpr auto kInterval = std::chrono::milliseconds(100);
}  // namespace

void Progress::set_enabled(bool enabled) { g_enabled = enabled; }

Progress::Progress(std::string label, std::int64_t total)
    : label_(std::move(label)), total_(total), start_(std::chrono::steady_clock::now()), last_draw_(start_),
      tty_(g_enabled && ::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() { finish(); }

void Progress::update(std::int64_t done, const std::string& status) {
  if (!tty_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < kDelay || now - last_draw_ < kInterval) return;
  last_draw_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  char line[256];
  if (total_ > 0) {
    const double frac = static_cast<double>(done) / static_cast<double>(total_);
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<std::size_t>(filled > kWidth ? kWidth : filled), '#');
    bar.resize(kWidth, '.');
    std::snprintf(line, sizeof line, "\r%s [%s] %3.0f%% %.1fs %s\x1b[K", label_.c_str(), bar.c_str(), 100 * frac, secs,
                  status.c_str());
  } else {
    std::snprintf(line, sizeof line, "\r%s %lld %.1fs %s\x1b[K", label_.c_str(), static_cast<long long>(done), secs,
                  status.c_str());
  }
  std::fputs(line, stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (drawn_) std::fputs("\r\x1b[K", stderr);
}

}  // namespace gcnpart
