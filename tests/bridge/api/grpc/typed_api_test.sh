#!/bin/sh
# Runs typed_api_test.py with the system Python, which has Debian's python3-grpcio (a
# Python earlier on PATH, e.g. from pyenv, may not).
set -eu
python=/usr/bin/python3
[ -x "$python" ] || python=python3
exec "$python" tests/bridge/api/grpc/typed_api_test.py "$@"
