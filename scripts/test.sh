#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: bash scripts/test.sh [pytest args]
source "$(dirname "$0")/_env.sh"
exec "$VENV/bin/python" -m pytest "$@"
