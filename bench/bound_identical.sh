#!/bin/bash
# Whether two annealer binaries print the same `bound --json`, byte for byte, on every problem file
# of a directory (every *.json but *.map.json; default: the zoo's imported problems, /work/meas/zoo)
# and on problems/*.json.
#   bench/bound_identical.sh NEW_BINARY [REFERENCE_BINARY] [PROBLEM_DIR]
# Prints each file that differs and a count; exit status 1 when any differs.
new=${1:?usage: bound_identical.sh NEW_BINARY [REFERENCE_BINARY] [PROBLEM_DIR]}
ref=${2:-/work/main/build/annealer}
dir=${3:-/work/meas/zoo}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
bad=0
for f in $(ls "$dir"/*.json | grep -v '\.map\.json$') "$here"/problems/*.json; do
  "$ref" bound --json "$f" > "$tmp/a" 2>&1
  "$new" bound --json "$f" > "$tmp/b" 2>&1
  n=$((n + 1))
  if ! cmp -s "$tmp/a" "$tmp/b"; then
    echo "differs: $f"
    bad=$((bad + 1))
  fi
done
echo "compared $n files, $bad differ"
[ "$bad" -eq 0 ]
