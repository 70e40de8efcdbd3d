#pragma once
// The one table the benchmark prints (scenario, ours, baseline, ratio, target, met?),
// followed by the details each scenario noted (sample counts, spreads, counters).

#include <cstdio>
#include <string>
#include <vector>

namespace abx::bench {

struct Row {
  std::string scenario;
  std::string ours;
  std::string baseline;
  std::string ratio;
  std::string target;
  std::string met;  // "yes", "NO", "—" (no target), or "n/a" (could not be measured)
};

class Report {
 public:
  void Add(Row row) { rows_.push_back(std::move(row)); }
  void Note(const std::string& scenario, const std::string& text) {
    notes_.push_back("- " + scenario + ": " + text);
  }
  bool AnyMissed() const;

  // A Markdown table (aligned, readable as plain text too), then the notes.
  void Print(FILE* out) const;

 private:
  std::vector<Row> rows_;
  std::vector<std::string> notes_;
};

// Formatting helpers shared by the scenarios.
std::string Ms(double ms);               // "12.3 ms" / "0.456 ms"
std::string MiBps(double bytes_per_s);   // "123 MiB/s"
std::string Times(double ratio);         // "0.12×"
std::string Mib(double bytes);           // "12.3 MiB"
std::string Met(bool met);               // "yes" / "NO"

}  // namespace abx::bench
