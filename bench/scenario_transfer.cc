// files.transfer: a file of 256 MiB between the sandbox and this host's disk, through the
// shim (files.download, files.upload), against a direct libcurl client moving the same
// file the same way: a Range GET written to disk as it arrives (curl -o), and a form
// read from disk as it is sent (curl -F). Also the bridge's and the shim's peak RSS
// while ours runs, sampled from /proc: the bytes stream, nothing holds the file.
//
// Rounds, each side's best counting, as in the files scenario. Every copy is compared
// with the source after the clocks stop.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "bench/clock.h"
#include "bench/scenarios.h"

namespace abx::bench {
namespace {

constexpr size_t kPieceBytes = 4 << 20;

// The source file, written piece by piece (never whole in memory).
bool WriteSource(const std::string& path, long long size, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  std::string piece(kPieceBytes, '\0');
  uint64_t x = 0x2545F4914F6CDD1DULL;
  for (long long written = 0; written < size; written += static_cast<long long>(piece.size())) {
    for (size_t i = 0; i + 8 <= piece.size(); i += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(&piece[i], &x, 8);
    }
    out.write(piece.data(), static_cast<std::streamsize>(std::min<long long>(kPieceBytes, size - written)));
  }
  if (!out) *error = "cannot write " + path;
  return static_cast<bool>(out);
}

bool SameFile(const std::string& a, const std::string& b) {
  std::ifstream x(a, std::ios::binary), y(b, std::ios::binary);
  std::string p(kPieceBytes, '\0'), q(kPieceBytes, '\0');
  while (x && y) {
    x.read(&p[0], static_cast<std::streamsize>(p.size()));
    y.read(&q[0], static_cast<std::streamsize>(q.size()));
    if (x.gcount() != y.gcount() || std::memcmp(p.data(), q.data(), static_cast<size_t>(x.gcount())) != 0) {
      return false;
    }
  }
  return x.eof() && y.eof();
}

long long RssBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return 0;
}

// The largest RSS each of two processes had while it ran, sampled every 5 ms.
class PeakRss {
 public:
  PeakRss(pid_t a, pid_t b) : thread_([=] {
      while (!stop_) {
        peak_a_ = std::max(peak_a_.load(), RssBytes(a));
        peak_b_ = std::max(peak_b_.load(), RssBytes(b));
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }) {}
  ~PeakRss() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  long long a() const { return peak_a_; }
  long long b() const { return peak_b_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<long long> peak_a_{0}, peak_b_{0};
  std::thread thread_;
};

struct TransferRound {
  double up_s = -1, direct_up_s = -1, down_s = -1, direct_down_s = -1;
  long long bridge_peak = 0, shim_peak = 0;
};

std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", s);
  return s > 0 ? text : "failed";
}

double Best(double a, double b) { return a <= 0 ? b : b <= 0 ? a : std::min(a, b); }

}  // namespace

void RunTransfer(BenchContext& ctx) {
  const long long size = ctx.options.transfer_bytes;
  const std::string dir = ctx.work_dir + "/transfer";
  const std::string source = dir + "/source.bin";
  std::string error, direct_error;
  mkdir(dir.c_str(), 0700);
  if (!WriteSource(source, size, &error)) {
    ctx.report.Add({"files.transfer", "failed: " + error, "", "", "", "n/a"});
    return;
  }
  DirectClient direct;
  std::vector<TransferRound> rounds;
  ShimSession s;
  if (ctx.OpenSession(&s, &error)) {
    for (int r = 0; r < ctx.options.files_rounds && error.empty() && direct_error.empty(); ++r) {
      TransferRound round;
      const std::string ours_copy = dir + "/ours.bin", direct_copy = dir + "/direct.bin";
      unlink(ours_copy.c_str());
      unlink(direct_copy.c_str());
      PeakRss peaks(ctx.bridge_pid, s.pid());
      Stopwatch t;
      Answer up = s.Call("files.upload", ctx.Params("\"local_path\":\"" + source + "\",\"path\":\"/bench/t-up.bin\""),
                         300000);
      if (up.ok) round.up_s = t.ElapsedS(); else error = "files.upload: " + up.error;
      t.Restart();
      Answer down = s.Call("files.download", ctx.Params("\"path\":\"/bench/t-up.bin\",\"local_path\":\"" +
                                                        ours_copy + "\""), 300000);
      if (down.ok) round.down_s = t.ElapsedS(); else error = "files.download: " + down.error;
      peaks.Stop();
      round.bridge_peak = peaks.a();
      round.shim_peak = peaks.b();

      t.Restart();
      HttpResult r1 = direct.UploadFile(ctx.execd_base, "/bench/t-direct-up.bin", source);
      if (r1.ok && r1.status == 200) round.direct_up_s = t.ElapsedS();
      else direct_error = "upload: " + (r1.ok ? "HTTP " + std::to_string(r1.status) : r1.error);
      const int fd = open(direct_copy.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      t.Restart();
      HttpResult r2 = direct.GetToFile(ctx.execd_base + "/files/download?path=" + QueryEscape("/bench/t-direct-up.bin"),
                                       {"Range: bytes=0-"}, fd);
      close(fd);
      if (r2.ok && r2.status == 206) round.direct_down_s = t.ElapsedS();
      else direct_error = "download: " + (r2.ok ? "HTTP " + std::to_string(r2.status) : r2.error);
      if (error.empty() && !SameFile(source, ours_copy)) error = "the downloaded copy differs from the source";
      if (direct_error.empty() && !SameFile(source, direct_copy)) direct_error = "the direct copy differs";
      if (!error.empty()) round.up_s = round.down_s = -1;
      rounds.push_back(round);
      ctx.report.Note("transfer", "round " + std::to_string(rounds.size()) + ", seconds: upload " +
                                      Seconds(round.up_s) + ", download " + Seconds(round.down_s) +
                                      "; direct form " + Seconds(round.direct_up_s) + ", direct Range GET " +
                                      Seconds(round.direct_down_s) + "; copies compared byte for byte");
      unlink(ours_copy.c_str());
      unlink(direct_copy.c_str());
    }
    s.Close();
  }
  unlink(source.c_str());
  TransferRound best;
  for (const TransferRound& r : rounds) {
    best.up_s = Best(best.up_s, r.up_s);
    best.down_s = Best(best.down_s, r.down_s);
    best.direct_up_s = Best(best.direct_up_s, r.direct_up_s);
    best.direct_down_s = Best(best.direct_down_s, r.direct_down_s);
    best.bridge_peak = std::max(best.bridge_peak, r.bridge_peak);
    best.shim_peak = std::max(best.shim_peak, r.shim_peak);
  }
  const double total = static_cast<double>(size);
  const std::string size_text = Mib(total);
  auto row = [&](const std::string& name, double ours_s, double base_s, const std::string& base_what) {
    Row r{name, ours_s > 0 ? MiBps(total / ours_s) : "failed: " + error,
          base_s > 0 ? MiBps(total / base_s) + " (" + base_what + ")" : "failed: " + direct_error, "", "≥ 0.8×",
          "n/a"};
    if (ours_s > 0 && base_s > 0) {
      r.ratio = Times(base_s / ours_s);
      r.met = Met(base_s / ours_s >= 0.8);
    }
    ctx.report.Add(r);
  };
  row("files.download " + size_text + " to local disk", best.down_s, best.direct_down_s, "curl Range GET to disk");
  row("files.upload " + size_text + " from local disk", best.up_s, best.direct_up_s, "curl form from disk");
  auto rss_row = [&](const std::string& who, long long peak) {
    Row r{who + " peak RSS during files.upload and files.download of " + size_text,
          peak > 0 ? Mib(static_cast<double>(peak)) : "n/a", "—", "", "≤ 64 MiB", "n/a"};
    if (peak > 0 && !rounds.empty()) r.met = Met(peak <= (64LL << 20));
    ctx.report.Add(r);
  };
  rss_row("bridge", best.bridge_peak);
  rss_row("shim", best.shim_peak);
}

}  // namespace abx::bench
