#!/usr/bin/env bash
# The shipped Prometheus alerting rules (daemon/prometheus/trainwatch-alerts.yml): valid for
# the real `promtool check rules`, and behaving as their own unit tests say (`promtool test
# rules`: input series, the alerts expected at each time). Exits 77 (a skip) without promtool.
set -euo pipefail
dir="$1/daemon/prometheus"
if ! command -v promtool >/dev/null; then
  echo "promtool is not installed (.ci/install-deps takes it out of Debian's prometheus package)"
  exit 77
fi
promtool check rules "$dir/trainwatch-alerts.yml"
cd "$dir"
promtool test rules trainwatch-alerts.test.yml
