# Linker options that link gRPC, protobuf and abseil (the archives Debian ships) statically
# into a binary, as one group so the archives' order does not matter; everything after
# them is linked only where needed (--as-needed), so the shared objects that
# //third_party:grpc names drop out.

ABSL_STATIC_LIBS = [
    "bad_optional_access",
    "bad_variant_access",
    "base",
    "city",
    "civil_time",
    "cord",
    "cord_internal",
    "cordz_functions",
    "cordz_handle",
    "cordz_info",
    "debugging_internal",
    "demangle_internal",
    "exponential_biased",
    "graphcycles_internal",
    "hash",
    "hashtablez_sampler",
    "int128",
    "log_severity",
    "low_level_hash",
    "malloc_internal",
    "random_distributions",
    "random_internal_platform",
    "random_internal_pool_urbg",
    "random_internal_randen",
    "random_internal_randen_hwaes",
    "random_internal_randen_hwaes_impl",
    "random_internal_randen_slow",
    "random_internal_seed_material",
    "random_seed_gen_exception",
    "random_seed_sequences",
    "raw_hash_set",
    "raw_logging_internal",
    "spinlock_wait",
    "stacktrace",
    "status",
    "statusor",
    "str_format_internal",
    "strerror",
    "strings",
    "strings_internal",
    "symbolize",
    "synchronization",
    "throw_delegate",
    "time",
    "time_zone",
]

def grpc_static_linkopts(grpc_libs, extra_static = [], dynamic_after = []):
    """`grpc_libs`: the gRPC archives (-l names), most dependent first; `extra_static`:
    further -l options inside the static group; `dynamic_after`: shared libraries the
    archives need (e.g. OpenSSL for gRPC with TLS)."""
    return [
        "-Wl,-Bstatic",
        "-Wl,--start-group",
    ] + grpc_libs + [
        "-lgpr",
        "-lupb",
        "-lre2",
        "-lcares",
        "-laddress_sorting",
        "-lprotobuf",
    ] + extra_static + ["-labsl_" + lib for lib in ABSL_STATIC_LIBS] + [
        "-Wl,--end-group",
        "-Wl,-Bdynamic",
    ] + dynamic_after + [
        "-Wl,--as-needed",
    ]

# Less and denser code is less resident memory: what of a binary's text is resident is
# what it touches plus the kernel's fault-around (64 KiB) at every touch. Unused sections
# dropped, identical functions folded (gold's --icf: the toolchain links with gold).
COMPACT_LINKOPTS = [
    "-Wl,--gc-sections",
    "-Wl,--icf=safe",
    "-Wl,-O1",
]
