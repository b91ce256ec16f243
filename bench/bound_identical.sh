#!/bin/bash
# Whether two annealer binaries print the same `bound --json`, byte for byte, on every problem file
# of a directory (every *.json but *.map.json: e.g. bench/models.sh's OUT_DIR of imported problems)
# and on problems/*.json.
#   bench/bound_identical.sh NEW_BINARY REFERENCE_BINARY PROBLEM_DIR
# Prints each file that differs and a count; exit status 1 when any differs.
usage='usage: bench/bound_identical.sh NEW_BINARY REFERENCE_BINARY PROBLEM_DIR'
new=${1:?$usage}
ref=${2:?$usage}
dir=${3:?$usage}
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
