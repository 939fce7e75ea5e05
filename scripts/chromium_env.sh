#!/usr/bin/env bash
# A headless Chromium for the report page's browser test (tests/test_report_html.py), from the Debian
# packages, so a clean CI machine needs no manual step.
#   bash scripts/chromium_env.sh          # installs it when missing (as root); prints the path of the binary
# fonts-wqy-zenhei: a CJK font, so the Chinese example texts in a screenshot are glyphs, not boxes.
set -euo pipefail
find_chromium() {
  local c
  for c in "${CHROMIUM_BIN:-}" chromium chromium-browser google-chrome-stable google-chrome; do
    [ -n "$c" ] && command -v "$c" >/dev/null && { command -v "$c"; return 0; }
  done
  return 1
}
BIN="$(find_chromium || true)"
if [ -z "$BIN" ] || ! fc-list 2>/dev/null | grep -qi "wenquanyi\|noto sans cjk"; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[chromium] installing chromium and fonts-wqy-zenhei with apt-get" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-wqy-zenhei >&2
    BIN="$(find_chromium || true)"
  fi
fi
[ -n "$BIN" ] || { echo "[chromium] ERROR: no Chromium found and it could not be installed: run 'apt-get install chromium' as root, or set CHROMIUM_BIN" >&2; exit 1; }
echo "$BIN"
