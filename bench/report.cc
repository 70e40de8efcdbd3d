#include "bench/report.h"

#include <algorithm>
#include <cstdarg>

namespace abx::bench {
namespace {

std::string Format(const char* format, ...) {
  char text[128];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  return text;
}

// Display width: every byte except UTF-8 continuation bytes counts as one column.
size_t Width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string Pad(const std::string& s, size_t width) { return s + std::string(width - std::min(width, Width(s)), ' '); }

}  // namespace

bool Report::AnyMissed() const {
  return std::any_of(rows_.begin(), rows_.end(), [](const Row& r) { return r.met == "NO"; });
}

void Report::Print(FILE* out) const {
  const std::vector<std::string> header = {"scenario", "ours", "baseline", "ratio", "target", "met?"};
  std::vector<size_t> width(header.size());
  auto cells = [](const Row& r) {
    return std::vector<std::string>{r.scenario, r.ours, r.baseline, r.ratio, r.target, r.met};
  };
  for (size_t i = 0; i < header.size(); ++i) width[i] = Width(header[i]);
  for (const Row& r : rows_) {
    const auto c = cells(r);
    for (size_t i = 0; i < c.size(); ++i) width[i] = std::max(width[i], Width(c[i]));
  }
  auto line = [&](const std::vector<std::string>& c) {
    std::string text = "|";
    for (size_t i = 0; i < c.size(); ++i) text += " " + Pad(c[i], width[i]) + " |";
    std::fprintf(out, "%s\n", text.c_str());
  };
  line(header);
  std::vector<std::string> rule;
  for (size_t w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const Row& r : rows_) line(cells(r));
  if (!notes_.empty()) {
    std::fprintf(out, "\nDetails:\n");
    for (const std::string& n : notes_) std::fprintf(out, "%s\n", n.c_str());
  }
  std::fflush(out);
}

std::string Ms(double ms) { return ms < 1 ? Format("%.3f ms", ms) : ms < 100 ? Format("%.2f ms", ms) : Format("%.0f ms", ms); }
std::string MiBps(double bytes_per_s) { return Format("%.0f MiB/s", bytes_per_s / (1 << 20)); }
std::string Times(double ratio) { return ratio < 0.1 ? Format("%.3f×", ratio) : Format("%.2f×", ratio); }
std::string Mib(double bytes) { return Format("%.1f MiB", bytes / (1 << 20)); }
std::string Met(bool met) { return met ? "yes" : "NO"; }

}  // namespace abx::bench
