#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks rivet's layering (docs/design.md, "Layers and files"): no file of
# the resource layer (fabric, domain, mr, cq, cntr, eq, av, wait and the
# progress seam) calls a function that an endpoint or protocol file
# defines, or includes an endpoint or protocol header; and no source file
# is over the size STYLE.md allows.  Endpoints reach resources through
# their APIs; resources reach endpoints only through what the endpoints
# registered (progress sources, completion hooks, AV listeners, the EQ's
# rdma_cm handler) and through the ops tables the libfabric core calls.
# Prints what it finds and exits non-zero on a violation.
# Usage: contrib/layers.sh [-v]   (-v: also list each file's layer)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=$top/prov/rivet/src
inc=$top/prov/rivet/include
max_lines=${RIVET_MAX_LINES:-800}
verbose=false
[ "${1:-}" = -v ] && verbose=true

# layer FILE: resource, endpoint (endpoints and the RDM protocol), or
# other (entry and discovery, pure helpers shared by every layer)
layer() {
	case ${1##*/} in
	rivet_fabric.c | rivet_domain*.c | rivet_mr*.c | rivet_cq*.c | \
	rivet_cntr*.c | rivet_eq*.c | rivet_av.c | rivet_wait*.c | \
	rivet_pollset.c | rivet_progress.c | rivet_av.h | rivet_set.h)
		echo resource ;;
	rivet_ep.c | rivet_msg*.c | rivet_rma.c | rivet_cm.c | rivet_pep.c | \
	rivet_rdm*.c | rivet_dgram*.c | rivet_conn*.c | rivet_proto*.c | \
	rivet_rx*.c | rivet_tx*.c | rivet_rndv*.c | rivet_eager*.c | \
	rivet_rdm.h | rivet_dgram.h | rivet_proto.h | rivet_match.h | \
	rivet_match.c)
		echo endpoint ;;
	*)
		echo other ;;
	esac
}

# the file without comments and string literals
strip() {
	gcc -fpreprocessed -dD -E -P -x c "$1" 2>/dev/null |
		sed -E 's/"([^"\\]|\\.)*"/""/g'
}

# defs FILE: the functions FILE defines for others to call: in a .c file
# the non-static ones, in a header its static inline ones
defs() {
	local f=$1
	strip "$f" | awk -v hdr="$([ "${f%.h}" != "$f" ] && echo 1)" '
	/^[A-Za-z_]/ && !/;[[:space:]]*$/ && !/^(typedef|extern|#)/ {
		if (!hdr && $1 == "static") next
		if (hdr && !($1 == "static" && $2 == "inline")) next
		if (match($0, /rivet_[A-Za-z0-9_]*\(/))
			print substr($0, RSTART, RLENGTH - 1)
	}' | sort -u
}

# calls FILE: every rivet_* name used as a call
calls() {
	strip "$1" | grep -oE '\brivet_[A-Za-z0-9_]+[[:space:]]*\(' |
		tr -d ' \t(' | sort -u
}

declare -A owner
for f in "$src"/*.c "$inc"/*.h; do
	for fn in $(defs "$f"); do
		owner[$fn]=${f##*/}
	done
done

bad=0
for f in "$src"/*.c; do
	name=${f##*/}
	l=$(layer "$f")
	$verbose && echo "$l $name"
	lines=$(wc -l < "$f")
	if [ "$lines" -gt "$max_lines" ]; then
		echo "layers: $name has $lines lines (over $max_lines)"
		bad=1
	fi
	[ "$l" = resource ] || continue
	for h in $(grep -oE '^#include "[^"]+"' "$f" | cut -d'"' -f2); do
		if [ "$(layer "$h")" = endpoint ]; then
			echo "layers: $name (resource) includes $h (endpoint)"
			bad=1
		fi
	done
	for fn in $(calls "$f"); do
		o=${owner[$fn]:-}
		[ -n "$o" ] && [ "$o" != "$name" ] || continue
		if [ "$(layer "$o")" = endpoint ]; then
			echo "layers: $name (resource) calls $fn ($o, endpoint)"
			bad=1
		fi
	done
done
for h in "$inc"/*.h; do
	[ "$(layer "$h")" = endpoint ] && continue
	for i in $(grep -oE '^#include "[^"]+"' "$h" | cut -d'"' -f2); do
		if [ "$(layer "$i")" = endpoint ]; then
			echo "layers: ${h##*/} includes $i (endpoint)"
			bad=1
		fi
	done
done
if [ "$bad" = 0 ]; then
	echo "layers: ok (${#owner[@]} functions; no resource file calls" \
		"or includes an endpoint or protocol file; every file" \
		"<= $max_lines lines)"
fi
exit "$bad"
