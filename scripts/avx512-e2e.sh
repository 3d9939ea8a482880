#!/usr/bin/env bash
# avx512-e2e.sh - the engine-level checks of the AVX-512 int8 kernels, on an
# emulated Tiger Lake (scripts/avx512-emu.sh), for a CPU that lacks them
# (`make test-avx512-e2e`). `make test-avx512` holds the kernels to Dot and
# the oracle inside quant; this runs whole models through each kernel as
# the engine's default, which is what a CPU running it would do:
#   engine   TestInt8Kernels (every int8 kernel against the float64 reference,
#            decoding two architectures)
#   verify   TestBatchedPrefillMatchesSteps, TestStepBatchMatchesAlone
#            (batched prefill and server ticks against token by token, every
#            architecture, TRACE.md's replay rule on int8 kernels)
#   ppl      TestQuantizationQuality (TRACE.md's quantization-quality table
#            for both trained models on held-out text; only when PACKAGES
#            names it: on the Zen 3 VM one of its four comparisons took
#            ~35 minutes of emulation and the run did not end in 90)
# with CFLOW_KERNEL set to each of KERNELS in turn (engine's test covers all
# kernels in one run). Before a kernel becomes a VNNI CPU's default, this
# says it computes what the default would have to.
#
# Usage: avx512-e2e.sh   (no arguments)
# Environment: KERNELS ("vnni vnnipair vnnirl"), PACKAGES ("engine verify";
#   add ppl for the quality table), OUT (bin/avx512-e2e: test binaries and one
#   log per run).
# Time on the Zen 3 VM (2 vCPUs): engine ~1 minute, verify 9–13 minutes a
#   kernel (boot included): 28m39s for the default lists at 5518a09.
# Exit status: 0 if every run passed, 1 if any failed, 2 on usage errors,
#   3 if staging or a test binary's build failed, or the emulator failed or
#   timed out.
set -uo pipefail

[ $# -eq 0 ] || { sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'; exit 2; }
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/bin/avx512-e2e}"
kernels="${KERNELS:-vnni vnnipair vnnirl}"
packages="${PACKAGES:-engine verify}"
mkdir -p "$out"

# The guest gets the packages' testdata and the parts of golden/ their
# tests read, side by side as in the repository, so ../golden resolves.
stage=$(mktemp -d "${TMPDIR:-/tmp}/avx512e2e.XXXXXX") || exit 3
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/golden/train"
for g in trained fixtures families gemma4_text traces testdata; do
	cp -rL "$root/golden/$g" "$stage/golden/" || exit 3
done
cp -rL "$root/golden/train/text" "$stage/golden/train/" || exit 3

declare -A run=(
	[engine]='^TestInt8Kernels$'
	[verify]='^(TestBatchedPrefillMatchesSteps|TestStepBatchMatchesAlone)$'
	[ppl]='^TestQuantizationQuality$'
)
status=0
for p in $packages; do
	[ -n "${run[$p]:-}" ] || { echo "avx512-e2e: no tests listed for package $p" >&2; exit 2; }
	mkdir -p "$stage/$p"
	[ -d "$root/$p/testdata" ] && cp -rL "$root/$p/testdata" "$stage/$p/"
	(cd "$root" && CGO_ENABLED=0 go test -c -o "$out/$p.test" "./$p") || exit 3
	ks="$kernels"
	[ "$p" = engine ] && ks=all # TestInt8Kernels walks every kernel itself
	for k in $ks; do
		env=()
		[ "$k" = all ] || env=(-e "CFLOW_KERNEL=$k")
		log="$out/$p-$k.log"
		start=$(date +%s)
		"$root/scripts/avx512-emu.sh" -t 7200 -C "$stage" --cwd "$p" "${env[@]}" \
			"$out/$p.test" -test.v -test.run "${run[$p]}" > "$log" 2>&1
		rc=$?
		verdict=PASS
		if [ $rc -eq 3 ]; then verdict="EMULATOR FAILED"; status=3
		elif [ $rc -ne 0 ]; then verdict=FAIL; [ $status -eq 0 ] && status=1
		fi
		echo "$p, kernel $k: $verdict in $(( $(date +%s) - start )) s ($log)"
	done
done
exit $status
