#pragma once

// The attached commands (exec.start without `detached`) of the current call whose
// exec.exit has not come yet. EPP/1 promises exactly one exec.exit per attached command;
// when the bridge dies mid-stream nobody else can send it, so the shim does, with
// exit_code null and an E8002 error, instead of leaving the host waiting forever.
//
// Cheap on the hot path: a request is parsed only when its method is exec.start, a
// response only when it answers one, and a notification only has its first bytes
// compared, and only while a command is being followed. Not thread-safe: the shim has
// one thread.

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "epp-shim/line_meta.h"

namespace abx {

class AttachedExecs {
 public:
  // A request line on its way to the bridge.
  void OnRequest(const LineMeta& meta, const std::string& line);
  // A line from the bridge; `response_id` as in SessionOutput (empty: not a response).
  void OnOutput(std::string_view response_id, std::string_view line);
  // The exec.exit lines owed for the commands still followed, which are then forgotten
  // (as are exec.start requests not answered yet: those get E8002 answers instead).
  std::vector<std::string> TakeLostExitLines(const std::string& message);

 private:
  // Ids (JSON text) of attached exec.start requests sent.
  std::set<std::string, std::less<>> starting_;
  std::set<std::string> running_;   // exec_ids answered, exec.exit not seen yet
};

}  // namespace abx
