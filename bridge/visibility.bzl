"""Who may depend on each layer of the bridge (docs/ARCHITECTURE.md, Layout).

Each layer is visible to the layers that sit directly on it, and to the tests, fuzzers
and benchmarks that exercise it. tools/layering checks the same rules on the
dependency graph and on every #include.
"""

_TESTING = [
    "//tests:__subpackages__",
    "//fuzz:__subpackages__",
]

BASE_USERS = ["//bridge:__subpackages__", "//bench:__pkg__"] + _TESTING
HTTP_USERS = ["//bridge/opensandbox:__pkg__"] + _TESTING
OPENSANDBOX_USERS = ["//bridge/core:__subpackages__"] + _TESTING
_FRONT_DOORS = [
    "//bridge/api/epp:__pkg__",
    "//bridge/api/grpc:__pkg__",
]

# The core's root is used by its capability packages and the front doors; each capability
# by the capabilities above it (tools/layers) and the front doors that serve it; the
# daemon uses the warm pool alone (its orderly stop).
CORE_USERS = ["//bridge/core:__subpackages__"] + _FRONT_DOORS + _TESTING
EXEC_USERS = ["//bridge/core/files:__pkg__", "//bridge/core/sandboxes:__pkg__"] + _FRONT_DOORS + _TESTING
FILES_USERS = ["//bridge/core/sandboxes:__pkg__"] + _FRONT_DOORS + _TESTING
SANDBOXES_USERS = ["//bridge/daemon:__pkg__"] + _FRONT_DOORS + _TESTING
CODE_USERS = _FRONT_DOORS + _TESTING
TERMINALS_USERS = _FRONT_DOORS + _TESTING
NETWORK_USERS = _FRONT_DOORS + _TESTING
EPP_USERS = ["//bridge/api/grpc:__pkg__"] + _TESTING
GRPC_USERS = ["//bridge/daemon:__pkg__"] + _TESTING
SRCS_USERS = ["//bridge:__pkg__", "//tests/e2e/other_build:__pkg__"]
