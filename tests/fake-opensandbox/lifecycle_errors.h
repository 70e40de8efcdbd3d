#pragma once

// Error bodies of the lifecycle server (docs/opensandbox.md §1.2):
//   * service errors: {"code":"<NS>::<CODE>","message":"..."} (exactly two keys);
//   * request validation: FastAPI's 422 {"detail":[{"type","loc","msg","input","ctx"?}]}.

#include <string>
#include <variant>
#include <vector>

#include "rapidjson/document.h"

namespace fake_opensandbox {

std::string CodeMessageBody(const std::string& code, const std::string& message);

// Collects pydantic-style validation errors in the order they are found.
class ValidationErrors {
 public:
  using Loc = std::vector<std::variant<std::string, int>>;

  ValidationErrors();

  // `input` may be null (rendered as JSON null). `ctx_json` is a JSON object text or "".
  // Values of keys named "password" or "accessKeySecret" in the echoed input are masked:
  // the real server echoes them, but a test double should not put a secret into error
  // bodies.
  void Add(const std::string& type, const Loc& loc, const std::string& msg,
           const rapidjson::Value* input, const std::string& ctx_json = "");
  // Same with a string input (query and path parameters arrive as strings).
  void AddWithStringInput(const std::string& type, const Loc& loc, const std::string& msg,
                          const std::string& input, const std::string& ctx_json = "");

  bool empty() const { return count_ == 0; }
  std::string ToJson() const;

 private:
  rapidjson::Document detail_;
  int count_ = 0;
};

}  // namespace fake_opensandbox
