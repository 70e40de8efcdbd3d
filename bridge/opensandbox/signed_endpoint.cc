// LifecycleClient::GetSignedEndpoint: GET /sandboxes/{id}/endpoints/{port}?expires=<Unix s>
// (docs/opensandbox.md §1.10). Only a Kubernetes server in ingress gateway mode with
// secure_access signing keys signs a route; every other server refuses with a 400 whose
// code and words say why, read here into what a caller can act on.

#include <rapidjson/document.h>

#include "bridge/base/json.h"
#include "bridge/opensandbox/error_body.h"
#include "bridge/opensandbox/lifecycle_client.h"
#include "common/percent_encoding.h"

namespace abx::opensandbox {
namespace {

constexpr char kWhat[] = "get signed endpoint";
constexpr char kNeeds[] =
    "signed URLs need a Kubernetes server in ingress gateway mode with secure_access signing keys";

Error CannotSign(const HttpAnswer& answer, const std::string& why) {
  Error e = MakeError(ErrorCode::kInvalidState, std::string(kWhat) + ": the server cannot sign URLs: " + why +
                                                    " (" + kNeeds + ")");
  e.http_status = answer.status;
  e.request_id = answer.Header("x-request-id");
  return e;
}

// A 400 of the server, or nothing when the answer is not one it reads.
Error Refusal(const HttpAnswer& answer) {
  Error upstream = FromHttpStatus(answer.status, answer.body, answer.Header("x-request-id"), kWhat);
  if (answer.status != 400) return upstream;
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(answer.body.c_str(), answer.body.size());
  if (doc.HasParseError() || !doc.IsObject()) return upstream;
  const std::string code = json::GetString(doc, "code").value_or("");
  const std::string message = json::GetString(doc, "message").value_or("");
  if (code == "SANDBOX::API_NOT_SUPPORTED") return CannotSign(answer, "its runtime is Docker");
  if (code != "SANDBOX::INVALID_PARAMETER") return upstream;
  if (message.find("ingress.mode") != std::string::npos || message.find("in gateway mode") != std::string::npos) {
    return CannotSign(answer, "its ingress is not in gateway mode");
  }
  if (message.find("ingress.secure_access") != std::string::npos) {
    return CannotSign(answer, "its gateway has no secure_access signing keys");
  }
  if (message.rfind("expires ", 0) == 0) {  // the expiry itself: "expires (…) must be…", "… exceeds…"
    Error e = InvalidParams("expires", std::string(kWhat) + ": the server refused the expiry: " + message);
    e.http_status = answer.status;
    e.request_id = answer.Header("x-request-id");
    return e;
  }
  return upstream;
}

}  // namespace

Result<Endpoint> LifecycleClient::GetSignedEndpoint(const std::string& id, int port, int64_t expires_unix_s,
                                                    const CancelToken* cancel) {
  HttpCall call = Call("GET", "/sandboxes/" + PercentEncode(id) + "/endpoints/" + std::to_string(port) +
                                  "?expires=" + std::to_string(expires_unix_s));
  call.idempotent = true;
  call.any_status = true;
  ABX_ASSIGN_OR_RETURN(HttpAnswer answer, http_->Send(call, cancel, kWhat));
  if (answer.status != 200) return Refusal(answer);
  return DecodeEndpoint(answer.body);
}

}  // namespace abx::opensandbox
