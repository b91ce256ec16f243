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
# "12.3k" / "4.56M" / "950" -> a plain number
plain() { awk -v v="$1" 'BEGIN { m = 1; if (v ~ /k$/) m = 1e3; if (v ~ /M$/) m = 1e6; sub(/[kM]$/, "", v); printf "%.0f", v * m }'; }
# Milliseconds from bash's own clock, and a 5 ms sleep without starting a process (read on a
# pipe nobody writes times out), so that polling for the first file costs the machine little.
now_ms() { local t=${EPOCHREALTIME/./}; echo $(( t / 1000 )); }
nap() {
  [[ -n ${never_fd:-} ]] || exec {never_fd}<> <(:)
  read -r -t 0.005 -u "$never_fd" || true
}
# Usage: run_polling OUT LOG TIMEFILE FORMAT -- COMMAND...
# Runs COMMAND with stderr to LOG (under GNU time, writing FORMAT to TIMEFILE, when
# /usr/bin/time takes -f), polls every 5 ms for OUT and sets first_ms: milliseconds from the
# start until OUT existed (until the end when it never did). Returns COMMAND's status.
run_polling() {
  local out=$1 log=$2 timefile=$3 format=$4 start pid status=0
  shift 5
  start=$(now_ms)
  if /usr/bin/time -f %e true >/dev/null 2>&1; then
    /usr/bin/time -o "$timefile" -f "$format" "$@" 2>"$log" &
  else
    "$@" 2>"$log" &
  fi
  pid=$!
  first_ms=""
  while kill -0 "$pid" 2>/dev/null; do
    if [[ -z $first_ms && -e $out ]]; then first_ms=$(( $(now_ms) - start )); fi
    nap
  done
  wait "$pid" || status=$?
  [[ -n $first_ms ]] || first_ms=$(( $(now_ms) - start ))
  return $status
}
