#pragma once

// Where the bridge of a build lives: its socket, its start lock and its log. The shim
// and the bridge both derive every path from here, so they always agree.
//
// One bridge per build: the socket name carries the build id, so a shim never talks to
// a bridge built from other sources, and an upgraded shim simply starts its own bridge
// beside the old one (which idles out) instead of replacing it under live sessions.

#include <string>

namespace abx {

// Environment variable that overrides the socket path (tests, unusual setups).
inline constexpr char kBridgeSocketEnv[] = "ABX_OPENSANDBOX_BRIDGE_SOCKET";

// $XDG_RUNTIME_DIR/abx-opensandbox when XDG_RUNTIME_DIR is set, absolute, a directory we
// own and can write, and short enough for a socket path beneath it; otherwise
// /tmp/abx-opensandbox-<uid>. The directory is not created here (EnsurePrivateDir does).
std::string DefaultSocketDir();

// <DefaultSocketDir()>/bridge-<first 12 characters of build_id>.sock
std::string DefaultSocketPath(const std::string& build_id);

// $ABX_OPENSANDBOX_BRIDGE_SOCKET when set and not empty, else DefaultSocketPath(build_id).
std::string ResolveSocketPath(const std::string& build_id);

// The socket a shim moves to when the bridge at an explicitly configured `socket_path`
// is of another build: "<socket_path without .sock>-<first 12 of build_id>.sock".
std::string SocketPathForBuild(const std::string& socket_path, const std::string& build_id);

// The lock the bridge holds for its whole life: socket_path + ".lock".
std::string LockPathFor(const std::string& socket_path);

// The bridge's log: socket_path with ".sock" replaced by ".log" (or + ".log").
std::string LogPathFor(const std::string& socket_path);

// The directory part of a socket path ("." when it has none).
std::string SocketDirOf(const std::string& socket_path);

}  // namespace abx
