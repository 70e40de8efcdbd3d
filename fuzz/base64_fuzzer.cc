// Base64 for files.read/files.write (bridge/base/base64.h). Invariants: decoding an
// encoding gives the bytes back; a text that decodes has as many decoded bytes as its
// length says, and re-encodes to a text of its length (whitespace aside); the groups
// decoded as text arrives (files.write's early upload) are the longest run of whole
// alphabet groups, decoded as the whole decoder decodes them.

#include <cstdint>
#include <string>
#include <string_view>

#include "bridge/base/base64.h"
#include "fuzz/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string encoded = abx::Base64Encode(bytes);
  FUZZ_CHECK(encoded.size() == (size + 2) / 3 * 4, "%zu bytes encoded to %zu", size,
             encoded.size());
  auto decoded = abx::Base64Decode(encoded);
  FUZZ_CHECK(decoded && *decoded == bytes, "%zu bytes do not round-trip", size);

  // The same bytes read as base64 text.
  if (auto text = abx::Base64Decode(bytes)) {
    std::string stripped;
    for (char c : bytes) {
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') stripped += c;
    }
    const size_t padding = stripped.size() - stripped.find_last_not_of('=') - 1;
    FUZZ_CHECK(stripped.size() % 4 == 0 && padding <= 2 &&
                   text->size() == stripped.size() / 4 * 3 - padding,
               "%zu characters (%zu padding) decoded to %zu bytes", stripped.size(), padding,
               text->size());
    FUZZ_CHECK(abx::Base64Encode(*text).size() == stripped.size(),
               "%zu decoded bytes re-encode to another length", text->size());
  }

  std::string groups(size / 4 * 3, '\0');
  const size_t used = abx::Base64DecodeGroups(bytes, groups.data());
  FUZZ_CHECK(used % 4 == 0 && used <= size, "%zu characters used of %zu", used, size);
  auto reference = abx::Base64Decode(bytes.substr(0, used));
  FUZZ_CHECK(reference && *reference == std::string_view(groups).substr(0, used / 4 * 3),
             "the %zu characters decoded in groups differ from the whole decoder's", used);
  if (used + 4 <= size) {
    bool outside = false;
    for (char c : bytes.substr(used, 4)) {
      outside |= !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                   c == '+' || c == '/');
    }
    FUZZ_CHECK(outside, "decoding in groups stopped at %zu before a whole group", used);
  }
  return 0;
}
