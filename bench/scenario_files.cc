// Files: 64 MiB in 4 MiB chunks, base64, through the shim; against the same bytes moved
// by direct libcurl uploads and Range downloads on one kept-alive connection.
//
// execd cannot append, so files.write with `append` uploads each chunk to a part file
// and runs one command to add it to the file (docs/mapping.md): one more round trip per
// chunk. It is measured as it is, and so is the alternative a host may use instead: 16
// separate 4 MiB files. The base64 text and the request lines are made before the clock
// starts, and the answers decoded and checked after it stops: the figures are the
// provider's, not this host's encoder's.
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include <rapidjson/document.h>

#include "bench/base64.h"
#include "bench/clock.h"
#include "bench/cpu_meter.h"
#include "bench/scenarios.h"

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

}  // namespace

void RunFiles(BenchContext& ctx) {
  const size_t chunk = static_cast<size_t>(ctx.options.chunk_bytes);
  const size_t chunks = static_cast<size_t>(ctx.options.file_bytes / ctx.options.chunk_bytes);
  const double total = static_cast<double>(chunk * chunks);
  std::vector<std::string> data(chunks), b64(chunks);
  for (size_t k = 0; k < chunks; ++k) {
    data[k] = PseudoRandomBytes(chunk, 0x9E3779B97F4A7C15ULL + k);
    b64[k] = Base64Encode(data[k]);
  }
  const std::string tag = "chunks of " + Mib(static_cast<double>(chunk));
  const std::string size_text = Mib(total);

  // Baselines first: 16 uploads, then 16 Range downloads of the file the shim appended
  // to (read after the shim's writes, below).
  DirectClient direct;
  std::string direct_error;
  std::vector<std::string> cpu_text;
  PhaseCpu direct_write_cpu(ctx, -1);
  Stopwatch t;
  for (size_t k = 0; k < chunks && direct_error.empty(); ++k) {
    HttpResult r = direct.Upload(ctx.execd_base, "/bench/direct-" + std::to_string(k) + ".bin", data[k]);
    if (!r.ok || r.status != 200) direct_error = "upload: " + (r.ok ? "HTTP " + std::to_string(r.status) : r.error);
  }
  const double direct_write_s = direct_error.empty() ? t.ElapsedS() : -1;
  cpu_text.push_back("direct upload " + direct_write_cpu.Stop().Text());

  ShimSession s;
  std::string error;
  double append_s = -1, separate_s = -1, read_s = -1;
  bool read_matches = false;
  if (ctx.OpenSession(&s, &error)) {
    int64_t id = s.TakeIds(static_cast<int64_t>(2 * chunks));
    std::vector<std::string> append_lines, separate_lines;
    for (size_t k = 0; k < chunks; ++k) append_lines.push_back(WriteLine(ctx, id + k, "/bench/append.bin", b64[k], k > 0));
    PhaseCpu append_cpu(ctx, s.pid());
    append_s = TimedWrites(s, append_lines, id, &error);
    cpu_text.push_back("append " + append_cpu.Stop().Text());
    id += chunks;
    append_lines.clear();
    if (append_s > 0) {
      for (size_t k = 0; k < chunks; ++k) {
        separate_lines.push_back(WriteLine(ctx, id + k, "/bench/part-" + std::to_string(k) + ".bin", b64[k], false));
      }
      PhaseCpu separate_cpu(ctx, s.pid());
      separate_s = TimedWrites(s, separate_lines, id, &error);
      cpu_text.push_back("separate files " + separate_cpu.Stop().Text());
      separate_lines.clear();
    }
    if (append_s > 0) {
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
          error = "files.read chunk " + std::to_string(k) + ": no answer";
          break;
        }
      }
      if (error.empty()) read_s = tr.ElapsedS();
      cpu_text.push_back("read " + read_cpu.Stop().Text());
      std::vector<Answer> answers;
      for (size_t k = 0; k < ids.size() && error.empty(); ++k) {
        answers.push_back(ShimSession::ParseAnswer(std::move(raw[k]), ids[k]));
        if (!answers.back().ok) error = "files.read chunk " + std::to_string(k) + ": " + answers.back().error;
      }
      read_matches = error.empty();
      for (size_t k = 0; k < answers.size() && read_matches; ++k) {
        const rapidjson::Value& r = *answers[k].result;
        auto d = r.FindMember("data");
        auto decoded = d != r.MemberEnd() && d->value.IsString()
                           ? Base64Decode(std::string_view(d->value.GetString(), d->value.GetStringLength()))
                           : std::nullopt;
        if (!decoded || *decoded != data[k]) {
          read_matches = false;
          error = "files.read chunk " + std::to_string(k) + " differs from what was written";
        }
      }
    }
    s.Close();
  }

  double direct_read_s = -1;
  bool direct_read_matches = true;
  if (append_s > 0) {
    PhaseCpu direct_read_cpu(ctx, -1);
    t.Restart();
    std::vector<std::string> bodies;
    for (size_t k = 0; k < chunks; ++k) {
      HttpResult r = direct.Get(ctx.execd_base + "/files/download?path=" + QueryEscape("/bench/append.bin"),
                                {"Range: bytes=" + std::to_string(k * chunk) + "-" + std::to_string((k + 1) * chunk - 1)});
      if (!r.ok || r.status != 206) {
        direct_error = "download: " + (r.ok ? "HTTP " + std::to_string(r.status) : r.error);
        break;
      }
      bodies.push_back(std::move(r.body));
    }
    if (bodies.size() == chunks) direct_read_s = t.ElapsedS();
    cpu_text.push_back("direct download " + direct_read_cpu.Stop().Text());
    for (size_t k = 0; k < bodies.size(); ++k) direct_read_matches &= bodies[k] == data[k];
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
  row("files.write " + size_text + ", one file, append " + tag, append_s, direct_write_s,
      std::to_string(chunks) + " uploads");
  const std::string n = std::to_string(chunks);
  row("files.write " + size_text + " as " + n + " separate files, " + tag, separate_s, direct_write_s, n + " uploads");
  row("files.read " + size_text + ", " + tag, read_matches ? read_s : -1, direct_read_matches ? direct_read_s : -1,
      std::to_string(chunks) + " Range GETs");
  char note[400];
  std::snprintf(note, sizeof note,
                "seconds: append %.2f, separate files %.2f, read %.2f; direct upload %.2f, direct download %.2f; "
                "read-back %s (direct %s)",
                append_s, separate_s, read_s, direct_write_s, direct_read_s,
                read_matches ? "byte-exact" : "NOT checked or wrong", direct_read_matches ? "byte-exact" : "wrong");
  ctx.report.Note("files", note);
  std::string cpu;
  for (const std::string& c : cpu_text) cpu += (cpu.empty() ? "" : "; ") + c;
  ctx.report.Note("files", cpu);
}

}  // namespace abx::bench
