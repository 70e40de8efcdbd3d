#pragma once
// What the files methods do on an execd older than 1.0.19, where execd's own routes would
// change more than the call names or do not exist (docs/opensandbox.md, "execd
// releases"; docs/mapping.md, "Files on older execd"). Each works through a short script
// in the sandbox plus execd's /files/info, so the answer is the same as 1.0.19's.

#include <optional>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/opensandbox/execd_client.h"

namespace abx::core {

// GET /files/info with the entry's type. execd before 1.0.19 leaves `type` out (and
// describes what a symlink leads to); the sandbox's shell then says what the path is.
Result<opensandbox::FileInfo> StatWithType(opensandbox::ExecdClient& execd, const std::string& path,
                                           const CancelToken* cancel);

// GET /directories/list without the route: the entries under `path` down to `depth`
// levels, found by `find` in the sandbox and described by /files/info, in execd's order
// (each directory's entries in byte order, each directory's children right after it).
Result<std::vector<opensandbox::FileInfo>> ListWithoutListRoute(opensandbox::ExecdClient& execd,
                                                                const std::string& path, int depth,
                                                                const CancelToken* cancel);

// files.chmod by `chown`/`chgrp` and `chmod` in the sandbox: owner and group are checked
// (an unknown one is -32602 naming it) before anything changes, and nothing is chowned
// that the call does not name. `mode` < 0: leave the mode.
Status ChmodInSandbox(opensandbox::ExecdClient& execd, const std::string& path, int mode,
                      const std::string& owner, const std::string& group, const CancelToken* cancel);

// "user:group" as execd's FileInfo gives them (names, or ids where the sandbox has no
// name), back onto `path` after an upload that gave it to execd's own user.
Status RestoreOwner(opensandbox::ExecdClient& execd, const std::string& path, const std::string& owner,
                    const std::string& group, const CancelToken* cancel);

// The owner of the file a symlink leads to, as "uid" and "gid" (`stat -L` in the
// sandbox: execd's /files/info does not follow links); nullopt when it leads nowhere.
Result<std::optional<opensandbox::FileOwner>> OwnerBehindLink(opensandbox::ExecdClient& execd,
                                                              const std::string& path,
                                                              const CancelToken* cancel);

// The order of execd's listing: path components compared in byte order, so that a
// directory's children follow it before its next sibling.
bool ListingOrder(const std::string& a, const std::string& b);

}  // namespace abx::core
