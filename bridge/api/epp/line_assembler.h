#pragma once
// Puts a long line back together from the SessionInput.line_parts the shim sent while
// the host was still writing it and the `line` that ends it (bridge/api/grpc/epp_service.cc). A
// line whose first part reads as a files.write starts its upload at once
// (early_write.h); the line then grows under the early write's lock, since its upload
// reads it meanwhile. One thread at a time: the session's reader.

#include <memory>
#include <string>
#include <string_view>

namespace abx::epp {

class EarlyWrite;
class Session;

class LineAssembler {
 public:
  explicit LineAssembler(Session* session) : session_(session) {}
  ~LineAssembler() { Drop(); }
  LineAssembler(const LineAssembler&) = delete;
  LineAssembler& operator=(const LineAssembler&) = delete;

  // False when the parts alone pass the line limit (a shim never sends that).
  bool AddPart(std::string_view part);
  // The whole line: the parts so far followed by `end`, and its early write if any (for
  // Session::OnLine).
  std::string Complete(std::string end, std::shared_ptr<EarlyWrite>* early_write);
  // The line will not end (an oversized line, a host gone): its parts go, and its early
  // write writes nothing.
  void Drop();

 private:
  void Grow(std::string_view bytes);

  Session* session_;
  std::string pending_;
  size_t last_size_ = 0;
  std::shared_ptr<EarlyWrite> early_write_;
};

}  // namespace abx::epp
