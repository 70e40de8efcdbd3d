#pragma once
// The first bytes of a files.write line, read while the rest of it still arrives, so that
// its upload can start before the line ends (early_write.h). Only what the line says
// before its `data` string counts; whatever comes later is checked once the whole line is
// parsed, and a line that turns out otherwise is answered the ordinary way.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace abx::epp {

struct WritePrefix {
  std::string sandbox_id;
  std::string path;
  std::optional<std::string> mode;      // as written, when it comes before `data`
  std::optional<std::string> encoding;  // the same
  std::optional<bool> append;           // the same
  size_t data_begin = 0;                // where the characters of `data` begin in the line
};

// A request object whose "method" comes before its params and is "files.write", read
// with RapidJSON up to the opening quote of params' "data": params must name sandbox_id
// and path before it, and they, mode and encoding must be strings and append a boolean.
// nullopt for anything else, or when `prefix` ends before `data` begins.
std::optional<WritePrefix> ReadWritePrefix(std::string_view prefix);

}  // namespace abx::epp
