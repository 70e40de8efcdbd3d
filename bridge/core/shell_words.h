#pragma once
// A command line as a person writes it (`tail -f /dev/null`, `python3 "my app.py"`),
// split into the words a POSIX shell would pass, without expanding anything: the
// `entrypoint` configuration form (docs/epp1.md §6). The inverse of shell_quote.h.

#include <optional>
#include <string>
#include <vector>

namespace abx::core {

// Blanks (space, tab, newline) separate words; `'…'` keeps every byte, `"…"` keeps
// every byte but `\` before `"`, `\`, `$`, `` ` `` or a newline; a `\` outside quotes
// takes the next byte literally, and `\` + newline joins lines. `''` is an empty word.
// nullopt for an unterminated quote or a trailing backslash.
std::optional<std::vector<std::string>> SplitShellWords(const std::string& line);

}  // namespace abx::core
