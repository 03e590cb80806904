#!/usr/bin/env bash
# What the browser test (tests/unit/test_api_page.py, marker `browser`) drives: Debian's
# chromium and the chromedriver built with it (same version, so Selenium downloads nothing).
# Installs them with apt-get when missing and this is root on a Debian-like machine; otherwise
# says what to install and fails, so that `make test` never skips the test silently.
set -euo pipefail

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "setup-browser: installing chromium and chromium-driver (Debian packages)"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver
  exit 0
fi
echo "setup-browser: the browser test needs chromium and chromedriver on PATH" \
     "(Debian/Ubuntu: sudo apt-get install chromium chromium-driver)" >&2
exit 1
