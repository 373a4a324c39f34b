#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs inside the VM (contrib/asan.sh), in the ASan-built copy: the MSG and
# RDM suites with LIBASAN preloaded into every process, leak checks on
# (but for the MPI steps). Sanitizer reports go to files (exitcode=0: a
# leak in bash or mpirun does not fail a step);
# fails on a failed step, on any AddressSanitizer error, and on a leak
# report with a frame in rivet's provider or test programs.
#
# usage: asan-guest.sh LIBASAN
set -u
rep=${VM_OUT:-/tmp}/asan
rm -rf "$rep"
mkdir -p "$rep"
asan="exitcode=0:log_path=$rep/report"
export LD_PRELOAD=$1
export ASAN_OPTIONS="detect_leaks=1:$asan"
bash fabtests/run_msg_tests.sh -o "$rep/msg" rivet
m=$?
bash fabtests/run_rdm_tests.sh -o "$rep/rdm" -x mpi -x osc rivet
r=$?
# the MPI steps without leak checks: a check at the exit of every rank,
# orted and mpirun takes minutes under TCG
export ASAN_OPTIONS="detect_leaks=0:$asan"
bash fabtests/run_rdm_tests.sh -o "$rep/mpi" -x rdm -x rdm_auto -x rdm_domain -x rdm_rma \
	-x atomic -x native -x offset -x multi -x mrcache -x mesh -x kill \
	-x pingpong rivet
r=$((r | $?))
unset LD_PRELOAD
reports=("$rep"/report.*)
[ -e "${reports[0]}" ] || reports=()
errors=() leaks=()
for f in "${reports[@]}"; do
	if grep -q 'ERROR: AddressSanitizer' "$f"; then
		errors+=("$f")
	elif grep -qE 'librivet-fi\.so|/fi_rivet_|prov/rivet/' "$f"; then
		leaks+=("$f")
	fi
done
echo "== sanitizers: ${#reports[@]} report(s); ${#errors[@]} with errors," \
	"${#leaks[@]} with leaks in rivet's code or tests" \
	"(the others: leaks in bash, Open MPI and the like)"
for f in "${errors[@]}" "${leaks[@]}"; do
	echo "-- $f"
	head -60 "$f"
done
[ $((m | r)) -eq 0 ] && [ ${#errors[@]} -eq 0 ] && [ ${#leaks[@]} -eq 0 ]
