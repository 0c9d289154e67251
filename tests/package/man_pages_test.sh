#!/usr/bin/env bash
# trainwatch(1) cannot drift from --help: every command, option and positional that --help
# lists (recursively) has its entry in `trainwatch manual`, the Markdown the page is rendered
# from, and the hidden `manual` command itself is not listed. The rendered pages are
# checked with man --warnings and groff -ww where those exist.
# Usage: man_pages_test.sh TRAINWATCH MAN_DIR
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trainwatch=$1 man_dir=$2
make_work_dir
"$trainwatch" manual >"$work/manual.md"

# The indented entries of one section ("Subcommands:", "Options:", "Positionals:") of a
# CLI11 help text: the first word of each line.
entries() {
  awk -v section="$1" '/^[^ ].*:$/ {inside = ($0 == section); next}
    inside && /^  [^ ]/ {print $1}' "$2"
}

checked=0
check_command() {
  local path=("$@")
  local heading="# OPTIONS"  # trainwatch's own options
  "$trainwatch" "${path[@]}" --help >"$work/help.txt"
  if [ ${#path[@]} -gt 0 ]; then
    heading="### trainwatch ${path[*]}"
    grep -qxF -- "$heading" "$work/manual.md" || fail "manual lacks the section '$heading'"
  fi
  local names
  for names in $(entries "Options:" "$work/help.txt"); do
    local name
    for name in ${names//,/ }; do
      case $name in
        -h | --help) continue ;;  # said once for every command
        --version) [ ${#path[@]} -eq 0 ] || continue ;;
      esac
      # In this command's own section, up to the next heading.
      awk -v heading="$heading" -v name="**$name**" '
        $0 == heading {inside = 1; next}
        inside && /^#/ {inside = 0}
        inside && index($0, name) {found = 1}
        END {exit !found}' "$work/manual.md" ||
        fail "manual lacks $name of 'trainwatch ${path[*]}'"
      checked=$((checked + 1))
    done
  done
  local positional
  for positional in $(entries "Positionals:" "$work/help.txt"); do
    grep -qF -- "*$positional*" "$work/manual.md" ||
      fail "manual lacks the positional $positional of 'trainwatch ${path[*]}'"
    checked=$((checked + 1))
  done
  local sub
  for sub in $(entries "Subcommands:" "$work/help.txt"); do
    [ "$sub" != manual ] || fail "the hidden 'manual' command is listed in --help"
    check_command "${path[@]}" "$sub"
  done
}
check_command
[ "$checked" -ge 20 ] || fail "only $checked options found in --help: its format changed?"
grep -q "TRAINWATCH_LOG_FORMAT\|TRAINWATCH\\\\_LOG\\\\_FORMAT" "$work/manual.md" ||
  fail "manual lacks TRAINWATCH_LOG_FORMAT"
for section in NAME SYNOPSIS DESCRIPTION COMMANDS FILES ENVIRONMENT "EXIT STATUS" SIGNALS "SEE ALSO"; do
  grep -qx "# $section" "$work/manual.md" || fail "manual lacks the section $section"
done
echo "manual lists all $checked options of --help"

pages=("$man_dir/trainwatch.1" "$man_dir/trainwatch-rules.5")
[ -e "${pages[0]}" ] || skip "no rendered man pages in $man_dir (TRAINWATCH_MAN_PAGES=OFF?)"
grep -q '^\.TH TRAINWATCH 1 ' "${pages[0]}" || fail "trainwatch.1 has no .TH title"
grep -q '^\.TH TRAINWATCH-RULES 5 ' "${pages[1]}" || fail "trainwatch-rules.5 has no .TH title"
grep -q 'progress' "${pages[1]}" || fail "trainwatch-rules.5 lacks the rule format"
linted=0
for page in "${pages[@]}"; do
  if command -v man >/dev/null; then
    # man renders through groff; --warnings reports roff problems on stderr.
    MANWIDTH=80 man --warnings -l "$page" 2>"$work/warnings" >/dev/null
    [ ! -s "$work/warnings" ] || { cat "$work/warnings"; fail "man --warnings on $page"; }
    linted=1
  fi
  if command -v groff >/dev/null; then
    # -k: the pages are UTF-8 (preconv), -Tutf8: as man renders them on a terminal.
    groff -k -Tutf8 -t -man -ww -z "$page" 2>"$work/warnings"
    [ ! -s "$work/warnings" ] || { cat "$work/warnings"; fail "groff -ww on $page"; }
    linted=1
  fi
done
[ "$linted" -eq 1 ] || skip "neither man nor groff installed: pages rendered but not linted"
echo "man pages OK"
