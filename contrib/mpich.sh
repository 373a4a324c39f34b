#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MPICH's ch4:ofi on rivet: builds MPICH from its source against the
# system libfabric, then runs it in Soft-RoCE guests with FI_PROVIDER=rivet
# and MPICH's defaults.  Not in CI (CI cannot fetch MPICH): the command
# behind docs/conformance.md's MPICH section.
#
# usage: contrib/mpich.sh SRCDIR [WORKDIR] [STEP...]
#   SRCDIR   an MPICH source tree at a release tag (v4.3.x) with
#            modules/json-c and modules/hwloc filled in (a release tarball
#            has them; a git checkout: git submodule update --init
#            modules/json-c modules/hwloc)
#   WORKDIR  where MPICH is built and installed, and the tests built
#            (default /var/tmp/rivet-mpich-VERSION)
#   STEP     smoke: one guest, 4 ranks, defaults, then 4 VCIs;
#            nodes: the same across two guests;
#            suite: a sample of MPICH's own tests (pt2pt, coll, rma, comm:
#            every SAMPLE_EVERY-th test of at most 4 processes, default 8)
#            on rivet and on libfabric's tcp provider, in one guest.
#            Default: smoke nodes suite.
# Environment: SAMPLE_EVERY, VM_LIMIT (a step's guest, default 7200 s),
# TEST_TIMEOUT (per test, default 180 s; a suite test gets its testlist's
# timeLimit where that is longer).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
prog=mpich.sh
die() { echo "$prog: error: $*" >&2; exit 1; }

[ $# -ge 1 ] || { sed -n 's/^# usage: //p' "$0" >&2; exit 2; }
src=$(cd "$1" && pwd) || die "no such folder: $1"
shift
[ -f "$src/maint/version.m4" ] && [ -f "$src/modules/json-c/json_object.c" ] ||
	die "$src is not an MPICH source tree with modules/json-c"
version=$(sed -n 's/^m4_define(\[MPICH_VERSION_m4\],\[\([^]]*\)\].*/\1/p' \
	"$src/maint/version.m4")
[ -n "$version" ] || die "cannot read the version from $src/maint/version.m4"
work=/var/tmp/rivet-mpich-$version
if [ $# -gt 0 ] && [ "${1#/}" != "$1" ]; then work=$1; shift; fi
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(smoke nodes suite)
every=${SAMPLE_EVERY:-8}
tmo=${TEST_TIMEOUT:-180}
mkdir -p "$work"
work=$(cd "$work" && pwd)
inst=$work/inst build=$work/build

"$top/contrib/deps.sh" build test vm
command -v python3 >/dev/null || die "python3 is needed (MPICH's autogen)"
dpkg -s libhwloc-dev >/dev/null 2>&1 ||
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q libhwloc-dev >/dev/null

# Debian's libfabric.pc names the PSM libraries in Libs.private, which
# MPICH's configure links, but no -dev package of Debian installs them.
unpsm() { sed -i 's/ -lpsm_infinipath//g; s/ -lpsm2//g' "$@"; }

# MPICH: ch4:ofi over the system's libfabric, its own hydra launcher, no
# Fortran, ROMIO, UCX or yaksa (dataloop datatypes).
if [ ! -x "$inst/bin/mpicc" ]; then
	if [ ! -x "$src/configure" ]; then
		echo "$prog: autogen of MPICH $version" >&2
		(cd "$src" && ./autogen.sh -without-ofi -without-ucx \
			-without-yaksa -without-romio) >"$work/autogen.log" 2>&1 ||
			die "autogen failed (log: $work/autogen.log)"
	fi
	echo "$prog: building MPICH $version into $inst" >&2
	mkdir -p "$build"
	(cd "$build" && "$src/configure" --prefix="$inst" \
		--with-device=ch4:ofi --with-libfabric=/usr --disable-fortran \
		--disable-romio --without-ucx --with-datatype-engine=dataloop \
		--with-hwloc=/usr --enable-fast=O2 --enable-g=none &&
		unpsm Makefile test/Makefile test/commands/Makefile \
			examples/Makefile src/packaging/pkgconfig/mpich.pc &&
		make -j"$(nproc)" && make install) >"$work/mpich.log" 2>&1 ||
		die "building MPICH failed (log: $work/mpich.log)"
fi
echo "$prog: building rivet into $work/rivet" >&2
"$top/contrib/build.sh" "$work/rivet" >"$work/rivet.log" 2>&1 ||
	die "building rivet failed (log: $work/rivet.log)"

# The sample: every $every-th test of at most 4 processes of each folder's
# testlist (as configure wrote it), not expected to fail, built here.
sample=$work/sample.txt
if [ ! -f "$build/test/mpi/Makefile" ]; then
	echo "$prog: configuring MPICH's tests" >&2
	mkdir -p "$build/test/mpi"
	(cd "$build/test/mpi" && "$src/test/mpi/configure" --with-mpi="$inst" \
		--disable-fortran --disable-cxx) >"$work/tests.log" 2>&1 ||
		die "configuring the tests failed (log: $work/tests.log)"
fi
if [[ " ${steps[*]} " == *" suite "* ]]; then
	: >"$sample"
	for d in pt2pt coll rma comm; do
		awk -v every="$every" -v d="$d" '
			/^[ \t]*#/ || NF < 1 { next }
			{ np = (NF >= 2 && $2 ~ /^[0-9]+$/) ? $2 : 2 }
			np > 4 || /xfail=/ { next }
			{ n++ }
			(n - 1) % every == 0 { print d, $0 }' \
			"$build/test/mpi/$d/testlist" >>"$sample"
	done
fi
# The smoke steps' programs, then the sample's.
smoke="pt2pt/sendrecv2 pt2pt/anyall pt2pt/bsendfrag pt2pt/mprobe
	coll/allred coll/alltoall1 rma/fetch_and_op_long rma/compare_and_swap
	rma/test1 rma/transpose3 rma/manyrma2"
{ printf '%s\n' $smoke | tr / ' '; [ ! -s "$sample" ] || cat "$sample"; } |
while read -r d name _; do
	[ -x "$build/test/mpi/$d/$name" ] && continue
	make -C "$build/test/mpi/$d" "$name" >>"$work/tests.log" 2>&1 ||
		die "building test $d/$name failed (log: $work/tests.log)"
done
echo "$prog: tests built ($(wc -l <"$sample" 2>/dev/null || echo 0) sampled)" >&2

cat >"$work/guest.sh" <<'EOF'
#!/usr/bin/env bash
# In a guest: $1 = step, then the paths.
set -u
step=$1 inst=$2 work=$3 build=$4 tmo=$5 smoke=$6
export PATH=$inst/bin:$PATH
export FI_PROVIDER_PATH=$work/rivet/lib/libfabric
export MPIR_CVAR_NOLOCAL=1
cpi=$build/examples/cpi
run() {	# label, provider, extra env..., -- mpiexec args
	local label=$1 prov=$2 out rc t0=$SECONDS
	shift 2
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	out=$(env FI_PROVIDER="$prov" "${envs[@]}" timeout -k 5 "${limit:-$tmo}" \
		mpiexec "$@" 2>&1 </dev/null)
	rc=$?
	label="$label [$((SECONDS - t0)) s]"
	# MPICH's tests print "No Errors", cpi "Error is" its deviation
	if [ $rc -eq 0 ] && grep -q "$want" <<<"$out" &&
	   ! grep -v "No Errors\|Error is" <<<"$out" | grep -qi "error\|abort"
	then
		echo "PASS $label"
	else
		echo "FAIL $label (status $rc)"
		tail -n 15 <<<"$out" | sed 's/^/    /'
	fi
}
case $step in
smoke|nodes)
	if [ "$step" = nodes ]; then
		hosts=(-hosts node0,node1 -ppn 2)
	else
		hosts=(-hosts localhost)
	fi
	# what MPICH made of rivet (its capability set, MR modes)
	FI_PROVIDER=rivet MPIR_CVAR_CH4_OFI_CAPABILITY_SETS_DEBUG=1 \
		timeout -k 5 "$tmo" mpiexec "${hosts[@]}" -n 2 "$cpi" 2>&1 |
		grep -E "provider:|_MR_|SCALABLE_ENDPOINTS|ENABLE_(RMA|ATOMICS|TAGGED|DATA)\b" |
		sort -u | sed 's/^/    /'
	want="pi is approximately"
	run "cpi 4 ranks" rivet -- "${hosts[@]}" -n 4 "$cpi"
	run "cpi 4 ranks, 4 VCIs" rivet MPIR_CVAR_CH4_NUM_VCIS=4 -- \
		"${hosts[@]}" -n 4 "$cpi"
	want="No Errors"
	for t in $smoke; do
		args=()
		[ "$t" != coll/allred ] || args=(-count=100)
		for v in 1 4; do
			(cd "$build/test/mpi/${t%/*}" &&
			 run "$t 4 ranks, $v VCI" rivet \
				MPIR_CVAR_CH4_NUM_VCIS=$v -- "${hosts[@]}" -n 4 \
				"./${t#*/}" "${args[@]}")
		done
	done
	;;
suite)
	want="No Errors"
	for prov in rivet tcp; do
		while read -r d name np rest; do
			[[ $np =~ ^[0-9]+$ ]] || { rest="$np $rest"; np=2; }
			args=() envs=() limit=$tmo
			for kv in $rest; do
				case $kv in
				arg=*) args+=("${kv#arg=}") ;;
				env=*) envs+=("${kv#env=}") ;;
				timeLimit=*)
					[ "${kv#timeLimit=}" -le "$tmo" ] ||
						limit=${kv#timeLimit=} ;;
				esac
			done
			(cd "$build/test/mpi/$d" &&
			 run "$prov $d/$name $np $rest" "$prov" "${envs[@]}" -- \
				-hosts localhost -n "$np" "./$name" "${args[@]}")
		done <"$work/sample.txt"
	done
	;;
esac
EOF
chmod +x "$work/guest.sh"

out=$work/out
mkdir -p "$out"
rc=0
for step in "${steps[@]}"; do
	echo "$prog: step $step" >&2
	case $step in
	smoke|suite) n=() ;;
	nodes) n=(-N 2) ;;
	*) die "no such step: $step" ;;
	esac
	"$top/contrib/vm/rivet-vm" "${n[@]}" -t "${VM_LIMIT:-7200}" -o "$out" -- \
		"$work/guest.sh" "$step" "$inst" "$work" "$build" "$tmo" \
		"$(echo $smoke)" |
		tee "$out/$step.txt" || rc=1
	grep -q '^FAIL' "$out/$step.txt" && rc=1
done
for step in "${steps[@]}"; do
	echo "== $step: $(grep -c '^PASS' "$out/$step.txt" || true) pass," \
		"$(grep -c '^FAIL' "$out/$step.txt" || true) fail"
done
exit $rc
