#!/usr/bin/env bash
# Checks what deploy/ ships: the metric names of the Grafana dashboard and the alert rules
# (scripts/check_deploy.py), the rules with `promtool check rules` and their unit tests with
# `promtool test rules`, and the systemd units with `systemd-analyze verify` (any warning
# fails) and a ceiling on `systemd-analyze security`'s exposure score. (How `delayq ui` runs
# under its unit, credentials and environment file included, is tested by
# crates/delayq-cli/tests/it/units.rs.) Installs Debian's
# prometheus (promtool) and systemd when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

# The most exposure `systemd-analyze security` may score per unit, in tenths (it prints 0.0
# best to 10.0 worst; --threshold takes 0 to 100); the worker's commands are the operator's,
# so it keeps less hardening than the transfer daemon; the dashboard (it holds the role tokens)
# is hardened as the transfer daemon is.
TRANSFER_EXPOSURE_MAX=20
WORK_EXPOSURE_MAX=40
UI_EXPOSURE_MAX=20

missing=()
command -v promtool >/dev/null || missing+=(prometheus)
command -v systemd-analyze >/dev/null || missing+=(systemd)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "== installing ${missing[*]} from Debian" >&2
    apt_install --no-install-recommends "${missing[@]}"
fi

python3 scripts/check_deploy.py

promtool check rules deploy/prometheus/delayq-alerts.yml
(cd deploy/prometheus && promtool test rules delayq-alerts.test.yml)

# Test copies of the units whose ExecStart names an executable that exists (verify requires
# one), and an instance of the template.
units=$(mktemp -d)
trap 'rm -rf "$units"' EXIT
printf '#!/bin/sh\n' >"$units/delayq"
chmod +x "$units/delayq"
for unit in deploy/systemd/*.service; do
    sed "s|/usr/local/bin/delayq|$units/delayq|" "$unit" >"$units/$(basename "$unit")"
done
mv "$units/delayq-work@.service" "$units/delayq-work@orders.service"
said=$(cd "$units" && systemd-analyze verify ./delayq-transfer.service ./delayq-work@orders.service \
    ./delayq-ui.service 2>&1) || {
    echo "$said" >&2
    exit 1
}
if [ -n "$said" ]; then
    echo "systemd-analyze verify warns:" >&2
    echo "$said" >&2
    exit 1
fi
echo "ok    systemd-analyze verify: delayq-transfer.service, delayq-work@.service, delayq-ui.service"
for check in "delayq-transfer.service $TRANSFER_EXPOSURE_MAX" "delayq-work@orders.service $WORK_EXPOSURE_MAX" \
    "delayq-ui.service $UI_EXPOSURE_MAX"; do
    set -- $check
    if ! score=$(cd "$units" && systemd-analyze security --offline=yes --threshold="$2" "./$1" 2>&1); then
        echo "$score" | tail -5 >&2
        echo "$1: exposure above $2 tenths" >&2
        exit 1
    fi
    echo "ok    systemd-analyze security: $(echo "$score" | grep -o 'Overall exposure level.*')"
done
