#!/usr/bin/env bash
# Run the whole test suite on a fresh machine: bash scripts/test.sh [pytest args]
# (lint first: ruff with the configuration in pyproject.toml; then pytest)
source "$(dirname "$0")/_env.sh"
"$VENV/bin/ruff" check --quiet "$ROOT" || die "ruff found problems (above): fix them, or run $VENV/bin/ruff check --fix"
exec "$VENV/bin/python" -m pytest "$@"
