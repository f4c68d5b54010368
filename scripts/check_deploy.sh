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

# The units checked (the worker's template as an instance), one a line, each with the most
# exposure `systemd-analyze security` may score for it, in tenths (it prints 0.0 best to 10.0
# worst; --threshold takes 0 to 100); the worker's commands are the operator's, so it keeps
# less hardening than the daemons.
UNITS=(
    "delayq-transfer.service 20"
    "delayq-work@orders.service 40"
    "delayq-gateway.service 20"
    "delayq-ui.service 20"
)

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
# A unit shipped but not listed would go unchecked.
for unit in "$units"/*.service; do
    case " ${UNITS[*]} " in
        *" $(basename "$unit") "*) ;;
        *) echo "deploy/systemd/$(basename "$unit"): add it to UNITS in $0" >&2; exit 1 ;;
    esac
done
names=()
for check in "${UNITS[@]}"; do
    names+=("./${check%% *}")
done
said=$(cd "$units" && systemd-analyze verify "${names[@]}" 2>&1) || {
    echo "$said" >&2
    exit 1
}
if [ -n "$said" ]; then
    echo "systemd-analyze verify warns:" >&2
    echo "$said" >&2
    exit 1
fi
echo "ok    systemd-analyze verify: ${names[*]#./}"
for check in "${UNITS[@]}"; do
    set -- $check
    if ! score=$(cd "$units" && systemd-analyze security --offline=yes --threshold="$2" "./$1" 2>&1); then
        echo "$score" | tail -5 >&2
        echo "$1: exposure above $2 tenths" >&2
        exit 1
    fi
    echo "ok    systemd-analyze security: $(echo "$score" | grep -o 'Overall exposure level.*')"
done
