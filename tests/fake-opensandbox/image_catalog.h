#pragma once

// What the fake knows of an image's files, for one question a real container answers by
// starting or not: does the program a sandbox's entrypoint names exist in its image?
// The Docker runtime runs the entrypoint under execd's bootstrap; one that names a
// missing file exits at once with 127, and the sandbox turns Failed
// (docs/opensandbox.md §1.5 and §2.13).
//
// Every image has a Debian-like base: the programs this host has in /usr/local/bin,
// /usr/bin, /bin, /usr/sbin and /sbin (the fake runs commands as host processes, so a
// sandbox sees exactly those). An image whose repository name ends in
// "code-interpreter" also has its start script, /opt/code-interpreter/code-interpreter.sh.

#include <string>

namespace fake_opensandbox {

// `program` as the entrypoint's first word: a name looked up on the base PATH, or an
// absolute path. A relative path with a '/' depends on a working directory no image
// documents, and counts as missing.
bool ImageHasProgram(const std::string& image_uri, const std::string& program);

// The start script of the code-interpreter image.
inline constexpr char kCodeInterpreterScript[] = "/opt/code-interpreter/code-interpreter.sh";

// The repository name (no registry port, tag or digest) ends in "code-interpreter".
bool IsCodeInterpreterImage(const std::string& image_uri);

}  // namespace fake_opensandbox
