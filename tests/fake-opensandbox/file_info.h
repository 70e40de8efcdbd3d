#pragma once

// execd's FileInfo (docs/opensandbox.md §2.10): {path, type, size, modified_at, created_at, owner,
// group, mode} from lstat(2). `mode` is the permission bits written in octal digits read
// as a decimal number (0644 -> 644); times are Go RFC3339Nano; owner/group are names,
// or the numeric id as a string when there is no name.

#include <sys/stat.h>

#include <string>

#include "tests/fake-opensandbox/go_json.h"

namespace fake_opensandbox {

// Writes the FileInfo object of `host_path`, reported under `sandbox_path`. `typed`: as
// execd 1.0.19, with the entry's `type` and a symlink described as itself (lstat);
// before, no `type` and what a symlink leads to (stat). Returns false (errno set) if the
// stat fails.
bool WriteFileInfo(GoJsonWriter& writer, const std::string& host_path,
                   const std::string& sandbox_path, bool typed = true);
void WriteFileInfoFromStat(GoJsonWriter& writer, const struct stat& st,
                           const std::string& sandbox_path, bool typed = true);

// 0755 -> 755, and back ("mode":755 in requests means 0755).
int ModeToDecimalOctal(mode_t mode);
// Returns false for digits that are not octal (e.g. 788).
bool DecimalOctalToMode(long long decimal, mode_t* mode);

std::string UserName(uid_t uid);
std::string GroupName(gid_t gid);
// Name -> id, as Go's user.Lookup and user.LookupGroup: a number is not a name, so "1000"
// is unknown unless a user of that name exists. False when unknown.
bool LookupUser(const std::string& name, uid_t* uid);
bool LookupGroup(const std::string& name, gid_t* gid);

}  // namespace fake_opensandbox
