"""One fuzz target: a libFuzzer binary built with clang, and its corpus replayed with gcc.

fuzz_target(name = "x", deps = [...]) makes, from fuzz/x_fuzzer.cc:
  x_fuzzer       the libFuzzer binary; tagged manual, built only under --config=fuzz
                 (clang, in its own output base: tools/fuzz)
  x_replay_test  every seed of fuzz/corpus/x/ through the same entry point, built by the
                 normal toolchain and run by `bazel test //...`, so a seed that breaks an
                 invariant fails the ordinary test run too
"""

def fuzz_target(name, deps):
    native.cc_binary(
        name = name + "_fuzzer",
        srcs = [name + "_fuzzer.cc"],
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
        deps = deps + [":check"],
    )
    native.cc_test(
        name = name + "_replay_test",
        size = "small",
        srcs = [name + "_fuzzer.cc"],
        args = ["fuzz/corpus/" + name],
        data = native.glob(["corpus/" + name + "/*"]),
        deps = deps + [
            ":check",
            ":replay_main",
            "@llvm_fuzzer_headers//:fuzzed_data_provider",
        ],
    )
