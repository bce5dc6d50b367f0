#!/usr/bin/env bash
# Instruction counts (callgrind) of the work `grammask bench` does on each
# vocabulary x case of a workload laid out like ../shared/bench: the
# inclusive instructions of CompiledGrammar::from_gbnf (compile) and of
# Matcher::fill_mask (every mask of the trace), one run each. Counts are
# stable from run to run, unlike times, so two builds compare exactly.
#
#   bench/callgrind_counts.sh TOOL SUITE_DIR [CASE...] > counts.tsv
#
# TOOL is a built grammask binary (build/examples/grammask). Prints one
# line per row: vocab, case, compile instructions, fill_mask instructions.
set -euo pipefail
tool=$1
suite=$2
shift 2
command -v valgrind >/dev/null || { echo "callgrind_counts.sh: needs valgrind" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cases=("$@")
if ((${#cases[@]} == 0)); then
  for dir in "$suite"/cases/*/; do cases+=("$(basename "$dir")"); done
fi
printf 'vocab\tcase\tcompile\tfill_mask\n'
for vocab in "$suite"/vocab/*; do
  name=$(basename "$vocab")
  name=${name%.*}
  for case in "${cases[@]}"; do
    dir=$suite/cases/$case
    trace=$suite/traces/$name/$case.ids
    [[ -f $trace ]] || continue
    if [[ -f $dir/grammar.gbnf ]]; then
      constraint=(--grammar "$dir/grammar.gbnf")
    else
      constraint=(--schema "$dir/schema.json")
    fi
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$tool" bench --vocab "$vocab" \
      "${constraint[@]}" --trace "$trace" --runs 1 >/dev/null 2>"$out/log"
    callgrind_annotate --inclusive=yes --threshold=100 "$out/cg" >"$out/annotated"
    count() {  # inclusive instructions of the first function matching $1
      grep -m1 -F "$1" "$out/annotated" | awk '{gsub(",", "", $1); print $1}'
    }
    printf '%s\t%s\t%s\t%s\n' "$name" "$case" "$(count 'grammask::CompiledGrammar::from_gbnf(')" \
      "$(count 'grammask::Matcher::fill_mask(')"
  done
done
