#pragma once
// execd runs only shell strings (`bash -c`), never an argv (docs/opensandbox.md §2.3). These
// turn an argv into a string bash reads back as exactly those words.

#include <string>
#include <vector>

namespace abx::core {

// One word in single quotes; a `'` inside becomes `'\''`. Inside single quotes bash
// gives every byte its literal meaning — `$`, `\`, `"`, newlines, non-ASCII — so no
// other escaping is needed, and none is attempted.
std::string ShellQuote(const std::string& word);

// The words joined by spaces, each quoted; `exec` is not prepended, so the shell stays
// the parent and reports the program's exit code unchanged.
std::string ShellJoin(const std::vector<std::string>& argv);

}  // namespace abx::core
