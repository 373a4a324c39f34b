#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks fabtests/MANIFEST against what is built and run: every program
# that fabtests/Makefile.include builds (the MPI programs included) has
# one line, its source is fabtests/FOLDER/PROGRAM.c, and every script the
# line names runs it (names it as a word).  So nothing is built and never
# run, and no runner loses a program silently.
# Usage: contrib/check-tests.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
manifest=$top/fabtests/MANIFEST
bad=0
built=$(grep -oE '\bfabtests/(mpi/)?(fi|mpi)_rivet_[a-z_]+' \
	"$top/fabtests/Makefile.include" | grep -vE '_(SOURCES|CFLAGS|LDADD|LDFLAGS)$' |
	sed 's#.*/##' | sort -u)
listed=$(grep -vE '^[[:space:]]*(#|$)' "$manifest" | awk '{print $1}' | sort)
dups=$(printf '%s\n' "$listed" | uniq -d)
if [ -n "$dups" ]; then
	echo "check-tests: listed twice in MANIFEST: $dups"
	bad=1
fi
for p in $built; do
	if ! printf '%s\n' "$listed" | grep -qx "$p"; then
		echo "check-tests: $p is built but not in fabtests/MANIFEST"
		bad=1
	fi
done
n=0
while read -r p folder runners; do
	case $p in '' | '#'*) continue ;; esac
	n=$((n + 1))
	if ! printf '%s\n' "$built" | grep -qx "$p"; then
		echo "check-tests: $p is in fabtests/MANIFEST but not built"
		bad=1
	fi
	if [ ! -f "$top/fabtests/$folder/$p.c" ]; then
		echo "check-tests: no fabtests/$folder/$p.c"
		bad=1
	fi
	if [ -z "$runners" ]; then
		echo "check-tests: $p: no script runs it"
		bad=1
	fi
	for r in $runners; do
		if [ ! -f "$top/$r" ]; then
			echo "check-tests: $p: no runner $r"
			bad=1
		elif ! grep -qw -- "$p" "$top/$r"; then
			echo "check-tests: $p: $r does not run it"
			bad=1
		fi
	done
done < "$manifest"
[ "$bad" = 0 ] && echo "check-tests: ok ($n programs, each built, where" \
	"fabtests/MANIFEST says, and run by the scripts it names)"
exit "$bad"
