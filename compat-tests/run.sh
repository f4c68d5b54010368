#!/usr/bin/env bash
# The interop runner: builds delayq's compat peer, runs the Redisson suite (Maven + JUnit) once
# per Redisson version, and writes the matrix to target/compat/RESULTS.md (the Maven logs beside
# it, in target/compat/results/). A run leaves the checkout as it was.
#
#   compat-tests/run.sh             # the matrix goes to target/compat/RESULTS.md
#   compat-tests/run.sh --update    # ... to the committed compat-tests/RESULTS.md
#
# Exits non-zero when any Maven run fails or any cell of the matrix is FAIL.
# COMPAT_VERSIONS="4.7.0 3.52.0" limits the run to some of the versions below.
# COMPAT_SERVER=/path/to/valkey-server runs the suites on that server program instead of
# redis-server; COMPAT_SCENARIOS="1 2 3 4" runs only those scenarios of the matrix (not the golden
# fixtures); COMPAT_RESULTS=FILE writes the matrix there (with or without --update).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

update=false
for arg in "$@"; do
  case "$arg" in
    --update) update=true ;;
    *) echo "compat-tests: unknown argument $arg" >&2; exit 2 ;;
  esac
done
# Cargo reads a relative CARGO_TARGET_DIR from where it runs: the workspace root, here.
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" == /* ]] || target_dir="$root/$target_dir"

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
if [[ -n "${COMPAT_RESULTS:-}" ]]; then
  out="$COMPAT_RESULTS"
elif [[ "$update" == true ]]; then
  out="$here/RESULTS.md"
else
  out="$target_dir/compat/RESULTS.md"
fi
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
peer="$target_dir/debug/delayq-compat-peer"

server_banner="$("$server" --version | head -1)"
echo "== server: $server_banner"
results="$target_dir/compat/results"
# The suite's temporary directories (each server's), kept after a failing run to read their logs.
tmp="$target_dir/compat/tmp"
rm -rf "$results" "$tmp"
mkdir -p "$results" "$tmp" "$(dirname "$out")"
# Maven builds the suite in compat-tests/target/ (its default): each version's test reports join
# the logs in $results, and the build is removed when the run ends.
status=0
finish() {
  rm -rf "$here/target"
  if [[ "$status" == 0 ]]; then rm -rf "$tmp"; fi
}
trap finish EXIT

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
      -Dredis.server="$server" -DargLine="-Djava.io.tmpdir=$tmp" "${only[@]}" \
      test >"$results/maven-$version.log" 2>&1
  rc=$?
  rm -rf "$results/surefire-$version"
  cp -r "$here/target/surefire-reports" "$results/surefire-$version" 2>/dev/null
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
