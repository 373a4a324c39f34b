#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks rivet's layering (docs/design.md, "Layout and layers"): the
# folders of prov/rivet/src are layers, and a file calls a function (or
# includes a header) of its own layer or of one the table below allows;
# no source file is over the size STYLE.md allows.  Resources never call
# up: they reach endpoints only through what the endpoints registered
# (progress sources, completion hooks, the shared receive context's
# wc_ops, AV listeners, the EQ's rdma_cm handler) and through the ops
# tables the libfabric core calls.
# Prints what it finds and exits non-zero on a violation.
# Usage: contrib/layers.sh [-v]   (-v: also list each file's layer)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=$top/prov/rivet/src
inc=$top/prov/rivet/include
max_lines=${RIVET_MAX_LINES:-800}
verbose=false
[ "${1:-}" = -v ] && verbose=true

# What each layer may call besides itself.  The entry files may call any
# layer, and no file of rivet's calls them (the libfabric core does,
# through fi_prov_ini and the ops tables): core/rivet_init.c (fi_prov_ini,
# the provider's cleanup) and ep/rivet_ep.c (fi_endpoint and the other
# opens that pick an endpoint type).
# TODO(issue 40): msg and dgram share the verbs endpoint (struct rivet_ep,
# its rings and post path, in msg/), and msg/rivet_msg_srx.c serves both:
# they still call each other.
entries="core/rivet_init.c ep/rivet_ep.c"
# Every file reaches verbs only through the seam (verbs/), except for
# libibverbs' inline data-path calls, which go through the verbs
# object's own context ops (a test double sets those), and librdmacm's
# pure helpers (an event's name, an id's peer address): unit tests link
# a scripted seam (prov/rivet/test/mock_verbs_*.c).  Files that may still
# call verbs themselves (none now):
unseamed=""
inline_verbs="ibv_poll_cq ibv_req_notify_cq ibv_post_send ibv_post_recv"
inline_verbs+=" ibv_post_srq_recv ibv_wc_status_str rdma_get_peer_addr"
inline_verbs+=" rdma_event_str ibv_wr_start ibv_wr_send ibv_wr_post"
inline_verbs+=" ibv_wr_set_inline_data ibv_wr_complete ibv_send_wr"
inline_verbs+=" rdma_get_local_addr"
declare -A allowed=(
	[util]=""
	[verbs]="util"
	[core]="verbs util"
	[resource]="core verbs util"
	[ep]="resource core verbs util"
	[msg]="dgram ep resource core verbs util"
	[dgram]="msg ep resource core verbs util"
	[rdm]="ep resource core verbs util"
)

# layer FILE: the folder of a source file; for a header, the layer of
# what it declares (rivet.h and rivet_abi.h: every layer's)
layer() {
	case $1 in
	*.c) local d=${1%/*}; echo "${d##*/}" ;;
	*)
		case ${1##*/} in
		rivet_rdm.h | rivet_proto.h) echo rdm ;;
		rivet_dgram.h) echo dgram ;;
		rivet_av.h | rivet_av_shm.h | rivet_set.h | rivet_mr_cache.h | \
		rivet_cq_out.h | rivet_cntr.h) echo resource ;;
		rivet_info.h) echo core ;;
		rivet_map.h | rivet_iov.h | rivet_atomic.h | rivet_match.h) echo util ;;
		*) echo all ;;
		esac ;;
	esac
}

# may FROM TO: whether layer FROM may use layer TO
may() {
	[ "$1" = "$2" ] || [ "$2" = all ] && return 0
	case " ${allowed[$1]} " in *" $2 "*) return 0 ;; esac
	return 1
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

shopt -s nullglob
sources=("$src"/*/*.c)
stray=("$src"/*.c)
bad=0
if [ ${#stray[@]} -gt 0 ]; then
	echo "layers: source files outside a layer folder: ${stray[*]##*/}"
	bad=1
fi
declare -A owner
for f in "${sources[@]}" "$inc"/*.h; do
	for fn in $(defs "$f"); do
		owner[$fn]=$f
	done
done

for f in "${sources[@]}"; do
	name=${f#"$src"/}
	l=$(layer "$f")
	$verbose && echo "$l $name"
	if [ -z "${allowed[$l]+set}" ]; then
		echo "layers: $name is in no known layer ($l)"
		bad=1
		continue
	fi
	lines=$(wc -l < "$f")
	if [ "$lines" -gt "$max_lines" ]; then
		echo "layers: $name has $lines lines (over $max_lines)"
		bad=1
	fi
	case "$l: $(echo $unseamed) " in verbs:* | *" $name "*) ;;
	*)
		for fn in $(strip "$f" |
			grep -oE '\b(ibv|rdma)_[a-z_0-9]+[[:space:]]*\(' |
			tr -d ' \t(' | sort -u); do
			case " $inline_verbs " in *" $fn "*) continue ;; esac
			echo "layers: $name calls $fn past the verbs seam"
			bad=1
		done ;;
	esac
	entry=false
	case " $entries " in *" $name "*) entry=true ;; esac
	for h in $(grep -oE '^#include "[^"]+"' "$f" | cut -d'"' -f2); do
		if ! $entry && ! may "$l" "$(layer "$h")"; then
			echo "layers: $name ($l) includes $h ($(layer "$h"))"
			bad=1
		fi
	done
	for fn in $(calls "$f"); do
		o=${owner[$fn]:-}
		[ -n "$o" ] && [ "$o" != "$f" ] || continue
		case " $entries " in *" ${o#"$src"/} "*)
			echo "layers: $name calls $fn of the entry ${o#"$src"/}"
			bad=1 ;;
		esac
		$entry && continue
		if ! may "$l" "$(layer "$o")"; then
			echo "layers: $name ($l) calls $fn (${o#"$top"/}, $(layer "$o"))"
			bad=1
		fi
	done
done
for h in "$inc"/*.h; do
	hl=$(layer "$h")
	[ "$hl" = all ] && hl=util	# rivet.h and rivet_abi.h: below all
	for i in $(grep -oE '^#include "[^"]+"' "$h" | cut -d'"' -f2); do
		il=$(layer "$i")
		[ "$il" = all ] && continue
		if ! may "$hl" "$il"; then
			echo "layers: ${h##*/} ($hl) includes $i ($il)"
			bad=1
		fi
	done
done
# the files that call verbs themselves: the seam's
direct=0
for f in "${sources[@]}"; do
	name=${f#"$src"/}
	for fn in $(strip "$f" | grep -oE '\b(ibv|rdma)_[a-z_0-9]+[[:space:]]*\(' |
		tr -d ' \t(' | sort -u); do
		case " $inline_verbs " in *" $fn "*) continue ;; esac
		direct=$((direct + 1))
		break
	done
done
if [ "$bad" = 0 ]; then
	echo "layers: ok (${#sources[@]} files in" \
		"$(printf '%s\n' "${sources[@]}" | sed 's#/[^/]*$##' | sort -u | wc -l)" \
		"layers, ${#owner[@]} functions; every call and include" \
		"goes where its layer may; $direct files call libibverbs or" \
		"librdmacm directly ($(echo $unseamed | wc -w) outside verbs/);" \
		"every file <= $max_lines lines)"
fi
exit "$bad"
