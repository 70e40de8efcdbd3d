// Base64 for files.read/files.write (bridge/core/base64.h). Invariants: decoding an
// encoding gives the bytes back; a text that decodes has as many decoded bytes as its
// length says, and re-encodes to a text of its length (whitespace aside).

#include <cstdint>
#include <string>
#include <string_view>

#include "bridge/core/base64.h"
#include "fuzz/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string encoded = abx::core::Base64Encode(bytes);
  FUZZ_CHECK(encoded.size() == (size + 2) / 3 * 4, "%zu bytes encoded to %zu", size,
             encoded.size());
  auto decoded = abx::core::Base64Decode(encoded);
  FUZZ_CHECK(decoded && *decoded == bytes, "%zu bytes do not round-trip", size);

  // The same bytes read as base64 text.
  if (auto text = abx::core::Base64Decode(bytes)) {
    std::string stripped;
    for (char c : bytes) {
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') stripped += c;
    }
    const size_t padding = stripped.size() - stripped.find_last_not_of('=') - 1;
    FUZZ_CHECK(stripped.size() % 4 == 0 && padding <= 2 &&
                   text->size() == stripped.size() / 4 * 3 - padding,
               "%zu characters (%zu padding) decoded to %zu bytes", stripped.size(), padding,
               text->size());
    FUZZ_CHECK(abx::core::Base64Encode(*text).size() == stripped.size(),
               "%zu decoded bytes re-encode to another length", text->size());
  }
  return 0;
}
