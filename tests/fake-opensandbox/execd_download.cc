// GET /files/download (docs/opensandbox.md §2.10): plain bytes (Go's http.ServeContent headers), a
// single byte Range -> 206, or offset/limit line mode.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <thread>

#include "common/percent_encoding.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/server_clock.h"

namespace fake_opensandbox {
namespace {

constexpr size_t kChunkBytes = 1 << 20;

std::string ContentDisposition(const std::string& base) {
  bool ascii = true;
  for (unsigned char c : base) ascii = ascii && c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  if (ascii) return "attachment; filename=\"" + base + "\"";
  std::string encoded = abx::PercentEncode(base);
  return "attachment; filename=\"" + encoded + "\"; filename*=UTF-8''" + encoded;
}

bool ParseDecimal(const std::string& text, long long* out) {
  if (text.empty() || text.size() > 18) return false;
  for (char c : text) {
    if (!isdigit(static_cast<unsigned char>(c))) return false;
  }
  *out = atoll(text.c_str());
  return true;
}

enum class RangeResult { kOk, kMalformed, kUnsatisfiable };

// The first range of a "bytes=" header, clamped to `size`.
RangeResult ParseFirstRange(const std::string& header, long long size, long long* first,
                            long long* last) {
  const std::string prefix = "bytes=";
  if (header.compare(0, prefix.size(), prefix) != 0) return RangeResult::kMalformed;
  std::string spec = header.substr(prefix.size());
  size_t comma = spec.find(',');
  if (comma != std::string::npos) spec = spec.substr(0, comma);
  while (!spec.empty() && isspace(static_cast<unsigned char>(spec.front()))) spec.erase(0, 1);
  while (!spec.empty() && isspace(static_cast<unsigned char>(spec.back()))) spec.pop_back();
  size_t dash = spec.find('-');
  if (dash == std::string::npos) return RangeResult::kMalformed;
  std::string a = spec.substr(0, dash), b = spec.substr(dash + 1);
  long long start, end;
  if (a.empty()) {  // suffix: the last N bytes
    if (!ParseDecimal(b, &end)) return RangeResult::kMalformed;
    if (end == 0 || size == 0) return RangeResult::kUnsatisfiable;
    if (end > size) end = size;
    *first = size - end;
    *last = size - 1;
    return RangeResult::kOk;
  }
  if (!ParseDecimal(a, &start)) return RangeResult::kMalformed;
  if (b.empty()) {
    end = size - 1;
  } else {
    if (!ParseDecimal(b, &end) || end < start) return RangeResult::kMalformed;
    if (end >= size) end = size - 1;
  }
  if (start >= size) return RangeResult::kUnsatisfiable;
  *first = start;
  *last = end;
  return RangeResult::kOk;
}

// offset (1-based first line) / limit (line count) mode: lines joined with '\n',
// terminators stripped, no trailing newline.
bool ReadLines(const std::string& host_path, long long offset, long long limit,
               std::string* out) {
  FILE* file = fopen(host_path.c_str(), "rb");
  if (!file) return false;
  char* line = nullptr;
  size_t capacity = 0;
  ssize_t length;
  long long number = 0, taken = 0;
  bool first = true;
  while ((length = getline(&line, &capacity, file)) >= 0) {
    ++number;
    if (number < offset) continue;
    if (limit > 0 && taken >= limit) break;
    while (length > 0 && (line[length - 1] == '\n' || line[length - 1] == '\r')) --length;
    if (!first) out->push_back('\n');
    first = false;
    out->append(line, static_cast<size_t>(length));
    ++taken;
  }
  free(line);
  fclose(file);
  return true;
}

void HandleDownload(const httplib::Request& req, httplib::Response& res,
                    ExecdContext* context) {
  if (!req.has_param("path") || req.get_param_value("path").empty()) {
    SendExecdError(res, 400, "MISSING_QUERY", "missing query parameter 'path'");
    return;
  }
  std::string path = req.get_param_value("path");
  SandboxPaths::Mapped mapped;
  if (!MapPathOrReject(context, path, &mapped, res)) return;
  struct stat st;
  if (stat(mapped.host.c_str(), &st) != 0) {
    SendExecdError(res, 404, "FILE_NOT_FOUND", "file not found: " + path);
    return;
  }
  if (S_ISDIR(st.st_mode)) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", "path is a directory: " + path);
    return;
  }
  bool line_mode = req.has_param("offset") || req.has_param("limit");
  bool has_range = req.has_header("Range");
  if (line_mode && has_range) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY",
                   "offset/limit cannot be combined with a Range header");
    return;
  }
  if (line_mode) {
    long long offset = 1, limit = 0;
    if (req.has_param("offset") && (!ParseDecimal(req.get_param_value("offset"), &offset) ||
                                    offset < 1)) {
      SendExecdError(res, 400, "INVALID_REQUEST_BODY", "invalid offset");
      return;
    }
    if (req.has_param("limit") && (!ParseDecimal(req.get_param_value("limit"), &limit) ||
                                   limit < 1)) {
      SendExecdError(res, 400, "INVALID_REQUEST_BODY", "invalid limit");
      return;
    }
    std::string body;
    if (!ReadLines(mapped.host, offset, limit, &body)) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error reading " + path);
      return;
    }
    res.status = 200;
    res.set_content(body, "text/plain; charset=utf-8");
    return;
  }

  long long size = st.st_size, first = 0, last = size - 1;
  res.status = 200;
  if (has_range) {
    switch (ParseFirstRange(req.get_header_value("Range"), size, &first, &last)) {
      case RangeResult::kMalformed:
        res.status = 416;
        res.set_content("{\"code\":\"UNKNOWN\"}", "application/json; charset=utf-8");
        return;
      case RangeResult::kUnsatisfiable:
        res.status = 416;
        res.set_header("Content-Range", "bytes */" + std::to_string(size));
        res.set_content("invalid range: failed to overlap\n", "text/plain; charset=utf-8");
        return;
      case RangeResult::kOk:
        res.status = 206;
        res.set_header("Content-Range", "bytes " + std::to_string(first) + "-" +
                                            std::to_string(last) + "/" + std::to_string(size));
        break;
    }
  }
  size_t slash = mapped.sandbox.find_last_of('/');
  res.set_header("Content-Disposition", ContentDisposition(mapped.sandbox.substr(slash + 1)));
  res.set_header("Accept-Ranges", "bytes");
  res.set_header("Last-Modified",
                 FormatHttpDate(TimePoint(std::chrono::seconds(st.st_mtim.tv_sec))));
  long long length = size == 0 ? 0 : last - first + 1;
  if (length == 0) {
    res.set_content("", "application/octet-stream");
    return;
  }
  int fd = open(mapped.host.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    SendExecdError(res, 500, "RUNTIME_ERROR", "error opening " + path);
    return;
  }
  auto file = std::shared_ptr<int>(new int(fd), [](int* f) {
    close(*f);
    delete f;
  });
  const Faults faults = context->faults->Get();
  const int64_t cut_after = faults.download_cut_after_bytes;  // the fault
  const std::string change_path = faults.download_change_on_cut ? mapped.host : "";
  const int64_t ms_per_mib = faults.transfer_ms_per_mib;  // the pace fault
  res.set_content_provider(
      static_cast<size_t>(length), "application/octet-stream",
      [file, first, cut_after, change_path, ms_per_mib](size_t offset, size_t want, httplib::DataSink& sink) {
        if (cut_after > 0 && static_cast<int64_t>(offset) >= cut_after) {
          if (!change_path.empty()) {  // download_change_on_cut: the file grows meanwhile
            if (FILE* grown = std::fopen(change_path.c_str(), "ab")) {
              std::fputc('+', grown);
              std::fclose(grown);
            }
          }
          return false;
        }
        std::unique_ptr<char[]> buf(new char[kChunkBytes]);
        size_t n = want < kChunkBytes ? want : kChunkBytes;
        if (cut_after > 0) n = std::min<size_t>(n, static_cast<size_t>(cut_after) - offset);
        ssize_t got = pread(*file, buf.get(), n, static_cast<off_t>(first + offset));
        if (got <= 0) return false;  // file shrank under us: cut the answer
        if (ms_per_mib > 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(ms_per_mib * 1000 * got / (1 << 20)));
        }
        return sink.write(buf.get(), static_cast<size_t>(got));
      },
      [file](bool) {});
}

}  // namespace

void RegisterDownloadRoute(httplib::Server& server, ExecdContext* context) {
  server.Get(std::string(kExecdRoutePrefix) + "/files/download",
             [context](const httplib::Request& req, httplib::Response& res) {
               HandleDownload(req, res, context);
             });
}

}  // namespace fake_opensandbox
