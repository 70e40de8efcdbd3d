"""One end-to-end test: the real shim, bridge and fake as processes (tests/e2e/BUILD.bazel)."""

E2E_BINARIES = [
    "//bridge/daemon:abx-opensandbox-bridge",
    "//epp-shim:abx-opensandbox-shim",
    "//tests/fake-opensandbox:fake-opensandbox",
]

# Suites that load the machine hard (sixteen kernels at once) reserve both cores, so two
# of them never run side by side (Bazel's cpu:N test tag).
HEAVY_SUITES = ["code_test", "pool_test"]

def e2e_test(name, src, env = {}):
    native.cc_test(
        name = name,
        size = "medium",
        timeout = "moderate",
        srcs = [src],
        data = E2E_BINARIES,
        env = env,
        # Which allocator the bridge under test runs on (bridge_ops_test checks it).
        local_defines = select({
            "//bridge/daemon:system_allocator": ["ABX_BRIDGE_SYSTEM_ALLOCATOR"],
            "//conditions:default": [],
        }),
        tags = ["local"] + (["cpu:2"] if src[:-len(".cc")] in HEAVY_SUITES else []),
        deps = [
            ":harness",
            "//common:build_info",
            "//third_party:gtest_main",
            "//third_party:rapidjson",
        ],
    )
