#pragma once

// Signed routes of the Kubernetes ingress gateway (upstream's OSEP-0011: the server's
// services/signing.py mints them, the gateway's pkg/signature verifies them). A route
// token is `{sandbox_id}-{port}-{expires_b36}-{signature}`:
//
//   expires_b36 = expires (Unix seconds) in base 36, lower case, no leading zero
//   canonical   = "v1\nshort\n{sandbox_id}\n{port}\n{expires_b36}\n"
//   inner       = BE32(len secret) || secret || BE32(len canonical) || canonical
//   signature   = first 8 hex digits of SHA-256(inner) + the key's one-character id
//
// Only the sandbox, the port and the expiry are signed: not the path, the query or the
// host. A plain SHA-256 of a length-prefixed concatenation, not an HMAC, as upstream's.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/fake-opensandbox/fake_config.h"

namespace fake_opensandbox {

// Base 36 as upstream writes an expiry ("0" for 0).
std::string Base36(uint64_t value);
// Nullopt unless `text` is base 36 as Base36 writes it (at most 13 digits, fits uint64).
std::optional<uint64_t> ParseBase36(const std::string& text);

// The 9-character signature of a route to `port` of `sandbox_id` until `expires`, with the
// key `key_id` whose secret (decoded bytes) is `secret`.
std::string RouteSignature(const std::string& secret, char key_id, const std::string& sandbox_id, int port,
                           uint64_t expires);

// `{sandbox_id}-{port}-{expires_b36}-{signature}`.
std::string SignedRouteToken(const std::string& secret, char key_id, const std::string& sandbox_id, int port,
                             uint64_t expires);

// A route token read back: split on '-' from the right (the id may hold '-'), the
// signature 8 hex digits and a key id, the expiry base 36, the port 1…65535 without a
// leading zero. `signed_route` false for a plain `{id}-{port}` token.
struct RouteToken {
  std::string sandbox_id;
  int port = 0;
  bool signed_route = false;
  uint64_t expires = 0;
  std::string expires_b36;
  std::string signature;
};
std::optional<RouteToken> ParseRouteToken(const std::string& token);

// A port as a route names it: 1…65535 in decimal, without a leading zero.
std::optional<int> ParsePortSegment(const std::string& text);

// Standard base64 with padding, as the gateway's --secure-access-keys wants it; nullopt
// when it is not.
std::optional<std::string> DecodeBase64(const std::string& text);

// Go's strings.TrimSpace for ASCII text, as the gateway trims keys, tokens and headers.
std::string TrimSpaces(const std::string& text);

// The gateway's --secure-access-keys, "a=BASE64,b=BASE64", read as its ParseKeys reads
// it (blank segments skipped, a key id given twice keeps the last secret); false with
// the gateway's reason in *error.
bool ParseSigningKeys(const std::string& text, std::vector<SigningKey>* keys, std::string* error);

}  // namespace fake_opensandbox
