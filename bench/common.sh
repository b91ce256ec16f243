# Helpers shared by the bench scripts (sourced, not run).

# The contest's time limit in seconds of bundled problem N ("" when unknown).
time_limit() {
  case "$1" in 1) echo 2 ;; 5) echo 5 ;; 9) echo 15 ;; 13) echo 30 ;; 17) echo 60 ;; *) echo "" ;; esac
}
# The value of "key": in the JSON output of annealer (one key per line).
json_number() { sed -n "s/^ *\"$1\": *\([-0-9.eE+]*\),\{0,1\}$/\1/p" "$2" | head -n 1; }
# The annealer binary to measure: $ANNEALER when set, else <build_dir>/annealer, configured
# and built first when needed. Usage: annealer="$(annealer_binary "$repo" "$build_dir")".
annealer_binary() {
  if [[ -n "${ANNEALER:-}" ]]; then
    echo "$ANNEALER"
    return
  fi
  if [[ ! -f "$2/CMakeCache.txt" ]]; then
    cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release >/dev/null || return 1
  fi
  cmake --build "$2" --target annealer -j"$(nproc)" >/dev/null || return 1
  echo "$2/annealer"
}
