// Files: 64 MiB in 4 MiB chunks, base64, through the shim; against the same bytes moved
// by direct libcurl uploads and Range downloads on one kept-alive connection.
//
// execd cannot append, so files.write with `append` uploads each chunk to a part file
// and runs one command to add it to the file (docs/mapping.md): one more round trip per
// chunk. It is measured as it is, and so is the alternative a host may use instead: 16
// separate 4 MiB files. The base64 text and the request lines are made before the clock
// starts, and the answers decoded and checked after it stops: the figures are the
// provider's, not this host's encoder's.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include <rapidjson/document.h>

#include "bench/clock.h"
#include "bench/cpu_meter.h"
#include "bench/scenarios.h"
#include "bench/transfer_floor.h"
#include "bridge/base/base64.h"

namespace abx::bench {
namespace {

std::string PseudoRandomBytes(size_t size, uint64_t seed) {
  std::string out(size, '\0');
  uint64_t x = seed;
  for (size_t i = 0; i + 8 <= size; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(&out[i], &x, 8);
  }
  return out;
}

std::string WriteLine(const BenchContext& ctx, int64_t id, const std::string& path, const std::string& b64,
                      bool append) {
  return "{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) +
         ",\"method\":\"files.write\",\"params\":{\"sandbox_id\":\"" + ctx.sandbox_id + "\",\"path\":\"" + path +
         "\",\"encoding\":\"base64\",\"append\":" + (append ? "true" : "false") + ",\"data\":\"" + b64 + "\"}}\n";
}

// Sends pre-made lines one at a time, each after the previous answer. Seconds, or -1.
double TimedWrites(ShimSession& s, const std::vector<std::string>& lines, int64_t first_id, std::string* error) {
  Stopwatch t;
  for (size_t k = 0; k < lines.size(); ++k) {
    s.SendLine(lines[k]);
    Answer a = s.Await(first_id + static_cast<int64_t>(k), 120000);
    if (!a.ok) {
      *error = "files.write chunk " + std::to_string(k) + ": " + a.error;
      return -1;
    }
  }
  return t.ElapsedS();
}

// CPU of one phase: the long-lived processes' counters plus the shim's own, read from
// /proc while it still runs (it is reaped only at the end).
class PhaseCpu {
 public:
  PhaseCpu(const BenchContext& ctx, pid_t shim) : ctx_(ctx), shim_(shim) {
    start_ = ReadCpu(ctx.bridge_pid, ctx.fake.pid());
    shim0_ = ProcessCpuSeconds(shim, false);
  }
  CpuUsage Stop() const {
    CpuUsage u = ReadCpu(ctx_.bridge_pid, ctx_.fake.pid()) - start_;
    u.children = shim_ > 0 ? ProcessCpuSeconds(shim_, false) - shim0_ : 0;
    return u;
  }

 private:
  const BenchContext& ctx_;
  pid_t shim_;
  CpuUsage start_;
  double shim0_ = 0;
};

// The figures of one round: each side's seconds (-1 = failed) and CPU.
struct FilesRound {
  double direct_write_s = -1, append_s = -1, separate_s = -1, read_s = -1, direct_read_s = -1;
  bool read_matches = false, direct_read_matches = false;
  std::string cpu_text;
};

// The chunks of one run, raw and as base64, made once before any clock runs.
struct FilesData {
  size_t chunk = 0, chunks = 0;
  std::vector<std::string> raw, b64;
};

// One round, in this order: 16 direct uploads, then through the shim: append, separate
// files, read (of the appended file), then 16 direct Range downloads of the same file.
FilesRound RunRound(BenchContext& ctx, ShimSession& s, DirectClient& direct, const FilesData& d,
                    std::string* error, std::string* direct_error) {
  const size_t chunk = d.chunk, chunks = d.chunks;
  FilesRound round;
  std::vector<std::string> cpu_text;
  PhaseCpu direct_write_cpu(ctx, -1);
  Stopwatch t;
  for (size_t k = 0; k < chunks && direct_error->empty(); ++k) {
    HttpResult r = direct.Upload(ctx.execd_base, "/bench/direct-" + std::to_string(k) + ".bin", d.raw[k]);
    if (!r.ok || r.status != 200) *direct_error = "upload: " + (r.ok ? "HTTP " + std::to_string(r.status) : r.error);
  }
  if (direct_error->empty()) round.direct_write_s = t.ElapsedS();
  cpu_text.push_back("direct upload " + direct_write_cpu.Stop().Text());

  int64_t id = s.TakeIds(static_cast<int64_t>(2 * chunks));
  std::vector<std::string> append_lines, separate_lines;
  for (size_t k = 0; k < chunks; ++k) {
    append_lines.push_back(WriteLine(ctx, id + k, "/bench/append.bin", d.b64[k], k > 0));
  }
  PhaseCpu append_cpu(ctx, s.pid());
  round.append_s = TimedWrites(s, append_lines, id, error);
  cpu_text.push_back("append " + append_cpu.Stop().Text());
  id += chunks;
  append_lines.clear();
  if (round.append_s <= 0) return round;
  for (size_t k = 0; k < chunks; ++k) {
    separate_lines.push_back(WriteLine(ctx, id + k, "/bench/part-" + std::to_string(k) + ".bin", d.b64[k], false));
  }
  PhaseCpu separate_cpu(ctx, s.pid());
  round.separate_s = TimedWrites(s, separate_lines, id, error);
  cpu_text.push_back("separate files " + separate_cpu.Stop().Text());
  separate_lines.clear();

  // The answer lines are only received while the clock runs (into buffers touched
  // beforehand); parsing them is the host's work and comes after, like the decoding.
  std::vector<std::string> raw(chunks);
  for (std::string& line : raw) line.assign(chunk / 3 * 4 + 8192, ' ');
  std::vector<int64_t> ids;
  PhaseCpu read_cpu(ctx, s.pid());
  Stopwatch tr;
  for (size_t k = 0; k < chunks; ++k) {
    ids.push_back(s.Send("files.read", ctx.Params("\"path\":\"/bench/append.bin\",\"encoding\":\"base64\",\"offset\":" +
                                         std::to_string(k * chunk) + ",\"length\":" + std::to_string(chunk))));
    if (!s.ReadRawLine(&raw[k], 120000)) {
      *error = "files.read chunk " + std::to_string(k) + ": no answer";
      break;
    }
  }
  const double read_s = tr.ElapsedS();
  cpu_text.push_back("read " + read_cpu.Stop().Text());
  std::vector<Answer> answers;
  for (size_t k = 0; k < ids.size() && error->empty(); ++k) {
    answers.push_back(ShimSession::ParseAnswer(std::move(raw[k]), ids[k]));
    if (!answers.back().ok) *error = "files.read chunk " + std::to_string(k) + ": " + answers.back().error;
  }
  round.read_matches = error->empty();
  for (size_t k = 0; k < answers.size() && round.read_matches; ++k) {
    const rapidjson::Value& r = *answers[k].result;
    auto found = r.FindMember("data");
    auto decoded = found != r.MemberEnd() && found->value.IsString()
                       ? Base64Decode(std::string_view(found->value.GetString(), found->value.GetStringLength()))
                       : std::nullopt;
    if (!decoded || *decoded != d.raw[k]) {
      round.read_matches = false;
      *error = "files.read chunk " + std::to_string(k) + " differs from what was written";
    }
  }
  if (round.read_matches) round.read_s = read_s;

  // The direct side receives into buffers touched beforehand too.
  std::vector<std::string> bodies(chunks);
  for (std::string& body : bodies) body.assign(chunk + 4096, ' ');
  PhaseCpu direct_read_cpu(ctx, -1);
  t.Restart();
  size_t received = 0;
  for (; received < chunks; ++received) {
    const size_t k = received;
    HttpResult r = direct.GetInto(ctx.execd_base + "/files/download?path=" + QueryEscape("/bench/append.bin"),
                                  {"Range: bytes=" + std::to_string(k * chunk) + "-" + std::to_string((k + 1) * chunk - 1)},
                                  &bodies[k]);
    if (!r.ok || r.status != 206) {
      *direct_error = "download: " + (r.ok ? "HTTP " + std::to_string(r.status) : r.error);
      break;
    }
  }
  const double direct_read_s = t.ElapsedS();
  cpu_text.push_back("direct download " + direct_read_cpu.Stop().Text());
  round.direct_read_matches = received == chunks;
  for (size_t k = 0; k < received; ++k) round.direct_read_matches &= bodies[k] == d.raw[k];
  if (round.direct_read_matches) round.direct_read_s = direct_read_s;
  for (const std::string& c : cpu_text) round.cpu_text += (round.cpu_text.empty() ? "" : "; ") + c;
  return round;
}

// The better of two figures in seconds, -1 meaning failed.
double Best(double a, double b) { return a <= 0 ? b : b <= 0 ? a : std::min(a, b); }

std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", s);
  return s > 0 ? text : "failed";
}

}  // namespace

void RunFiles(BenchContext& ctx) {
  FilesData d;
  d.chunk = static_cast<size_t>(ctx.options.chunk_bytes);
  d.chunks = static_cast<size_t>(ctx.options.file_bytes / ctx.options.chunk_bytes);
  const double total = static_cast<double>(d.chunk * d.chunks);
  for (size_t k = 0; k < d.chunks; ++k) {
    d.raw.push_back(PseudoRandomBytes(d.chunk, 0x9E3779B97F4A7C15ULL + k));
    d.b64.push_back(Base64Encode(d.raw[k]));
  }
  const std::string tag = "chunks of " + Mib(static_cast<double>(d.chunk));
  const std::string size_text = Mib(total);

  // Rounds, each side's best counting (as in the stream scenario): one round of 16 chunks
  // lasts a fraction of a second, so a single burst of other work on the machine would
  // decide a row.
  DirectClient direct;
  std::string error, direct_error;
  std::vector<FilesRound> rounds;
  ShimSession s;
  if (ctx.OpenSession(&s, &error)) {
    for (int r = 0; r < ctx.options.files_rounds && error.empty() && direct_error.empty(); ++r) {
      rounds.push_back(RunRound(ctx, s, direct, d, &error, &direct_error));
    }
    s.Close();
  }
  FilesRound best;
  best.read_matches = best.direct_read_matches = !rounds.empty();
  for (const FilesRound& r : rounds) {
    best.direct_write_s = Best(best.direct_write_s, r.direct_write_s);
    best.append_s = Best(best.append_s, r.append_s);
    best.separate_s = Best(best.separate_s, r.separate_s);
    best.read_s = Best(best.read_s, r.read_s);
    best.direct_read_s = Best(best.direct_read_s, r.direct_read_s);
    best.read_matches &= r.read_matches;
    best.direct_read_matches &= r.direct_read_matches;
  }

  auto row = [&](const std::string& name, double ours_s, double base_s, const std::string& base_what) {
    Row r{name, ours_s > 0 ? MiBps(total / ours_s) : "failed: " + error,
          base_s > 0 ? MiBps(total / base_s) + " (" + base_what + ")" : "failed: " + direct_error, "", "≥ 0.5×",
          "n/a"};
    if (ours_s > 0 && base_s > 0) {
      r.ratio = Times(base_s / ours_s);
      r.met = Met(base_s / ours_s >= 0.5);
    }
    ctx.report.Add(r);
  };
  const std::string n = std::to_string(d.chunks);
  row("files.write " + size_text + ", one file, append " + tag, best.append_s, best.direct_write_s, n + " uploads");
  row("files.write " + size_text + " as " + n + " separate files, " + tag, best.separate_s, best.direct_write_s,
      n + " uploads");
  row("files.read " + size_text + ", " + tag, best.read_matches ? best.read_s : -1,
      best.direct_read_matches ? best.direct_read_s : -1, n + " Range GETs");
  for (size_t i = 0; i < rounds.size(); ++i) {
    const FilesRound& r = rounds[i];
    ctx.report.Note("files", "round " + std::to_string(i + 1) + " of " + std::to_string(rounds.size()) +
                                 ", seconds: append " + Seconds(r.append_s) + ", separate files " +
                                 Seconds(r.separate_s) + ", read " + Seconds(r.read_s) + "; direct upload " +
                                 Seconds(r.direct_write_s) + ", direct download " + Seconds(r.direct_read_s) +
                                 "; read-back " + (r.read_matches ? "byte-exact" : "NOT checked or wrong") +
                                 " (direct " + (r.direct_read_matches ? "byte-exact" : "wrong") + ")");
    ctx.report.Note("files", "round " + std::to_string(i + 1) + " CPU s: " + r.cpu_text);
  }
  // The floor under ours that the direct client never pays: one chunk's line crossing
  // the host's pipe and the shim's socket, with nothing else to do.
  const size_t line_bytes = d.b64.empty() ? 0 : d.b64[0].size() + 200;
  const double pipe_default_ms = TransferMs(line_bytes, 64 << 10, 9);
  const double pipe_large_ms = TransferMs(line_bytes, 256 << 10, 9);
  const double socket_ms = TransferMs(line_bytes, -1, 9);
  const double direct_read_ms = best.direct_read_s * 1000 / d.chunks;
  char floor[600];
  std::snprintf(floor, sizeof floor,
                "this machine, a writer and a reader alone, one chunk's line (%s), median of 9: through a "
                "64 KiB pipe %.2f ms, a 256 KiB pipe (the shim's) %.2f ms, a Unix socket %.2f ms; per chunk "
                "in the best rounds: direct upload %.2f ms, direct download %.2f ms, ours %.2f (separate files) "
                "and %.2f ms (read). A read's answer line must cross the host's pipe whatever provider "
                "sends it, so none could read at more than %.2f× the direct download here (direct download "
                "per chunk / the 256 KiB pipe alone), before it downloads or encodes anything",
                Mib(static_cast<double>(line_bytes)).c_str(), pipe_default_ms, pipe_large_ms, socket_ms,
                best.direct_write_s * 1000 / d.chunks, direct_read_ms, best.separate_s * 1000 / d.chunks,
                best.read_s * 1000 / d.chunks, pipe_large_ms > 0 ? direct_read_ms / pipe_large_ms : -1.0);
  ctx.report.Note("files", floor);
}

}  // namespace abx::bench
