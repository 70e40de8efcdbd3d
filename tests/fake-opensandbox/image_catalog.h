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
// "code-interpreter" also has its start script (CodeInterpreterScriptOf).

#include <string>
#include <vector>

namespace fake_opensandbox {

// `program` as the entrypoint's first word: a name looked up on the base PATH, or an
// absolute path. A relative path with a '/' depends on a working directory no image
// documents, and counts as missing.
bool ImageHasProgram(const std::string& image_uri, const std::string& program);

// The start script of the code-interpreter image: here from tag v1.1.0 on (and for a tag
// that is no version, such as latest); v1.0.2 and older keep it at the old path (each
// tag's Dockerfile).
inline constexpr char kCodeInterpreterScript[] = "/opt/code-interpreter/code-interpreter.sh";
inline constexpr char kOldCodeInterpreterScript[] = "/opt/opensandbox/code-interpreter.sh";
// The start script a code-interpreter image has; "" for any other image.
std::string CodeInterpreterScriptOf(const std::string& image_uri);

// Programs no image of this fake has (--without-program): the host's copies are hidden
// from every sandbox's commands. Set once, before the first sandbox.
void LeaveProgramsOut(std::vector<std::string> names);
// Where the host keeps them on the base PATH: what each sandbox's view covers.
std::vector<std::string> LeftOutProgramPaths();

// The repository name (no registry port, tag or digest) ends in "code-interpreter".
bool IsCodeInterpreterImage(const std::string& image_uri);

// What an entrypoint runs: `argv` itself, unless its first word is a shell script among
// the sandbox's files (under `root`) whose last `exec` line names another program (a
// launcher, such as the one a snapshot keeps its source's entrypoint in); then that
// line's words, followed the same way up to four levels.
std::vector<std::string> ProgramOf(const std::string& root, std::vector<std::string> argv);

// `path` (absolute, in the sandbox) is an executable file among the sandbox's own files.
bool FileInSandbox(const std::string& root, const std::string& path);

}  // namespace fake_opensandbox
