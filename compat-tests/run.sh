#!/usr/bin/env bash
# The interop runner: builds delayq's compat peer, runs the Redisson suite (Maven + JUnit) once
# per Redisson version, and writes the matrix to compat-tests/RESULTS.md.
#
# Exits non-zero when any Maven run fails or any cell of the matrix is FAIL.
# COMPAT_VERSIONS="4.7.0 3.52.0" limits the run to some of the versions below.
# COMPAT_SERVER=/path/to/valkey-server runs the suites on that server program instead of
# redis-server; COMPAT_SCENARIOS="1 2 3 4" runs only those scenarios of the matrix (not the golden
# fixtures); COMPAT_RESULTS=FILE writes the matrix there instead of compat-tests/RESULTS.md.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

# version, Jackson and msgpack-jackson versions that Redisson release was built with (4.7.0 pins
# msgpack 0.9.12, which Maven Central lacks; 0.9.11 is the nearest), and the entry format.
matrix=(
  "4.7.0 2.21.3 0.9.11 current"
  "3.52.0 2.20.0 0.9.9 current"
  "3.21.0 2.14.2 0.9.1 legacy"
)
wanted="${COMPAT_VERSIONS:-}"
server="${COMPAT_SERVER:-redis-server}"
scenarios="${COMPAT_SCENARIOS:-}"
out="${COMPAT_RESULTS:-$here/RESULTS.md}"
only=()
if [[ -n "$scenarios" ]]; then
  filter=""
  for s in $scenarios; do filter+="${filter:++}s${s}*"; done
  only=("-Dtest=CompatMatrixTest#$filter" "-Dsurefire.failIfNoSpecifiedTests=false")
fi

for tool in cargo mvn java "$server"; do
  command -v "$tool" >/dev/null || { echo "compat-tests: $tool is not installed" >&2; exit 2; }
done

echo "== building delayq-compat-peer"
(cd "$root" && cargo build -q -p delayq-compat-peer) || { echo "compat-tests: peer build failed" >&2; exit 1; }
target_dir="${CARGO_TARGET_DIR:-$root/target}"
peer="$target_dir/debug/delayq-compat-peer"

server_banner="$("$server" --version | head -1)"
echo "== server: $server_banner"
results="$here/target/compat-results"
rm -rf "$results"
mkdir -p "$results"

status=0
ran=()
for row in "${matrix[@]}"; do
  read -r version jackson msgpack format <<<"$row"
  if [[ -n "$wanted" && " $wanted " != *" $version "* ]]; then
    continue
  fi
  legacy=false
  [[ "$format" == legacy ]] && legacy=true
  echo "== Redisson $version ($format entries)"
  mvn -B -f "$here/pom.xml" \
      -Dredisson.version="$version" -Djackson.version="$jackson" -Dmsgpack.version="$msgpack" \
      -Dlegacy.format="$legacy" -Dpeer.bin="$peer" -Dresults.dir="$results" \
      -Dredis.server="$server" "${only[@]}" \
      test >"$results/maven-$version.log" 2>&1
  rc=$?
  # Surefire's summary lines (CI reads "Tests run:") and the failures, without the noise.
  grep -E 'Tests run:|<<< FAIL|BUILD|\[ERROR\] Failed' "$results/maven-$version.log"
  if [[ "$rc" -ne 0 ]]; then
    echo "compat-tests: Redisson $version: Maven run failed (log: $results/maven-$version.log)" >&2
    status=1
  fi
  ran+=("$version")
done

java -Dcompat.server="$server_banner" -Dcompat.scenarios="$scenarios" \
  "$here/tools/Aggregate.java" "$results" "$out" "${ran[@]}" || status=1
cat "$out"
exit "$status"
