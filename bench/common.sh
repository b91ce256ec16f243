# Helpers shared by the bench scripts (sourced, not run).

# The contest's time limit in seconds of bundled problem N ("" when unknown).
time_limit() {
  case "$1" in 1) echo 2 ;; 5) echo 5 ;; 9) echo 15 ;; 13) echo 30 ;; 17) echo 60 ;; *) echo "" ;; esac
}
# The value of "key": in the JSON output of annealer (one key per line).
json_number() { sed -n "s/^ *\"$1\": *\([-0-9.eE+]*\),\{0,1\}$/\1/p" "$2" | head -n 1; }
