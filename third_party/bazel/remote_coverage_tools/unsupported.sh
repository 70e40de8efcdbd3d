#!/bin/sh
echo "bazel coverage is not supported by this offline build" >&2
exit 1
