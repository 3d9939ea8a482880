#!/usr/bin/env bash
# avx512-emu.sh - run a static x86-64 Linux binary (e.g. a `CGO_ENABLED=0 go
# test -c` binary) on an emulated Intel Tiger Lake CPU (AVX-512 F/BW/VL/DQ +
# AVX512_VNNI) under Bochs, print its output and exit with its exit code.
#
# Usage: avx512-emu.sh [options] BINARY [ARGS...]
#   -t, --timeout SECS   wall-clock limit for the whole emulation (default 1800)
#   -m, --mem MB         guest RAM (default 2048)
#   -C, --dir DIR        copy DIR (e.g. the package dir with testdata/) into the
#                        guest and run BINARY with it as the working directory
#       --cwd SUB        run BINARY in DIR's subdirectory SUB instead, so that
#                        a package test's ../golden paths resolve (DIR holds
#                        SUB and golden/ side by side, as the repository does)
#   -e, --env NAME=VAL   set an environment variable for BINARY (repeatable)
#   -k, --keep           keep the work dir (ISO, bochsrc, serial/bochs logs)
#   -v, --verbose        also print kernel/boot messages and timings to stderr
#       --cpu MODEL      Bochs CPU model (default tigerlake)
#   -h, --help
# Environment: AVX512EMU_TIMEOUT, AVX512EMU_MEM, AVX512EMU_KERNEL (a bzImage
#   to use instead of Debian's cloud kernel), AVX512EMU_CMDLINE (extra kernel
#   parameters), AVX512EMU_IPS (Bochs ips, default 50000000),
#   AVX512EMU_DISPLAY (term, the default, or rfb = VNC on :5900+), XDG_CACHE_HOME.
# Exit status: BINARY's exit status (128+N if killed by signal N), or
#   3 if the emulator failed or timed out, 2 on usage errors.
#
# How it works: the guest is Debian's linux-image-cloud-amd64 kernel booted
# by isolinux from an ISO; the initramfs holds /init (avx512-emu/guestinit,
# a static Go program that mounts proc/sys/devtmpfs/tmpfs, runs /test.bin with the args
# from /args, prints EMU-BEGIN / EMU-EXIT <code> on ttyS0 and powers off).
# Kernel command-line workarounds for Bochs 2.7's tigerlake model:
#   clearcpuid=xsaves,xsavec  Bochs reports the standard-format XSAVE size in
#                      CPUID(0xD,1).EBX, so the kernel's compacted-format
#                      check fails and it would disable XSAVE (no AVX at all).
#   clearcpuid=pku     Bochs returns zeros for CPUID(0xD,9) (PKRU state), so
#                      the kernel's xstate check fails likewise.
#   clearcpuid=fsrm    Bochs does not set the fast-strings bit of
#                      IA32_MISC_ENABLE, so the kernel drops ERMS but keeps
#                      FSRM; its memmove then copies 32-byte chunks for short
#                      moves and corrupts memory (boot hangs after "LSM:").
# These only change what the kernel uses; user space still sees the raw CPUID
# (AVX512F, AVX512_VNNI, ...).
# Go programs get GODEBUG=cpu.avx512bw=off by default: Bochs 2.7 computes
# VGF2P8AFFINEQB wrongly and Go 1.26's GC uses it (see below). Do not trust
# GFNI instructions under this emulator.
set -uo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$SCRIPT_DIR/.." && pwd)
RUNNER_SRC=$SCRIPT_DIR/avx512-emu/guestinit
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/cflow-avx512-emu
TIMEOUT=${AVX512EMU_TIMEOUT:-1800}
MEM=${AVX512EMU_MEM:-2048}
CPU_MODEL=tigerlake
KEEP=0 VERBOSE=0 WORKDIR_SRC= WORKDIR_SUB=
ENVS=()

usage() { sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'; exit "${1:-2}"; }
die() { echo "avx512-emu: $*" >&2; exit 3; }
vlog() { [ "$VERBOSE" = 1 ] && echo "avx512-emu: $*" >&2; return 0; }

while [ $# -gt 0 ]; do
	case $1 in
	-t|--timeout) TIMEOUT=$2; shift 2 ;;
	-m|--mem) MEM=$2; shift 2 ;;
	-C|--dir) WORKDIR_SRC=$2; shift 2 ;;
	--cwd) WORKDIR_SUB=$2; shift 2 ;;
	-e|--env) ENVS+=("$2"); shift 2 ;;
	-k|--keep) KEEP=1; shift ;;
	-v|--verbose) VERBOSE=1; shift ;;
	--cpu) CPU_MODEL=$2; shift 2 ;;
	-h|--help) usage 0 ;;
	--) shift; break ;;
	-*) echo "avx512-emu: unknown option $1" >&2; usage 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage 2
BIN=$1; shift
[ -f "$BIN" ] || { echo "avx512-emu: no such file: $BIN" >&2; exit 2; }
case $TIMEOUT in ''|*[!0-9]*) echo "avx512-emu: bad timeout" >&2; exit 2 ;; esac
case $MEM in ''|*[!0-9]*) echo "avx512-emu: bad mem" >&2; exit 2 ;; esac
for a in "$@"; do
	case $a in *$'\n'*) echo "avx512-emu: arguments must not contain newlines" >&2; exit 2 ;; esac
done
if file -b "$BIN" 2>/dev/null | grep -q 'dynamically linked'; then
	echo "avx512-emu: $BIN is dynamically linked; build it with CGO_ENABLED=0" >&2; exit 2
fi

T0=$(date +%s.%N)
elapsed() { echo "$(date +%s.%N) $T0" | awk '{printf "%.1f", $1-$2}'; }

# --- host packages -------------------------------------------------------
need=()
for p in bochs bochsbios vgabios bochs-term bsdutils isolinux syslinux-common xorriso cpio; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	vlog "installing ${need[*]}"
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null 2>&1; then
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get update -qq >/dev/null 2>&1
		DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 ||
			die "apt-get install ${need[*]} failed"
	fi
fi
command -v bochs >/dev/null || die "bochs not installed"

mkdir -p "$CACHE" || die "cannot create $CACHE"

# --- kernel (cached) -----------------------------------------------------
KERNEL=${AVX512EMU_KERNEL:-}
if [ -z "$KERNEL" ]; then
	KERNEL=$(ls -1 "$CACHE"/vmlinuz-*-cloud-amd64 2>/dev/null | sort -V | tail -1)
fi
if [ -z "$KERNEL" ]; then
	pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	[ -n "$pkg" ] || die "cannot resolve linux-image-cloud-amd64 (try apt-get update)"
	vlog "downloading $pkg"
	dl=$(mktemp -d "$CACHE/dl.XXXXXX")
	chmod 755 "$dl"
	(cd "$dl" && apt-get download "$pkg" >/dev/null 2>&1) || { rm -rf "$dl"; die "apt-get download $pkg failed"; }
	dpkg-deb -x "$dl"/*.deb "$dl/x" || { rm -rf "$dl"; die "cannot unpack $pkg"; }
	k=$(ls "$dl"/x/boot/vmlinuz-* | head -1)
	[ -n "$k" ] || { rm -rf "$dl"; die "no vmlinuz in $pkg"; }
	cp "$k" "$CACHE/$(basename "$k")"
	KERNEL=$CACHE/$(basename "$k")
	rm -rf "$dl"
fi
[ -f "$KERNEL" ] || die "kernel $KERNEL missing"
vlog "kernel $KERNEL"

# --- runner (/init), cached by source hash --------------------------------
[ -f "$RUNNER_SRC/main.go" ] || die "runner source missing: $RUNNER_SRC"
rhash=$(cat "$RUNNER_SRC"/*.go | sha256sum | cut -c1-16)
RUNNER=$CACHE/runner-$rhash
if [ ! -x "$RUNNER" ]; then
	vlog "building runner"
	(cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags=-s -o "$RUNNER.tmp" ./scripts/avx512-emu/guestinit) ||
		die "go build of runner failed"
	mv "$RUNNER.tmp" "$RUNNER"
fi

# --- initramfs + ISO -----------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/avx512emu.XXXXXX") || die "mktemp failed"
BOCHS_PID=
cleanup() {
	[ -n "$BOCHS_PID" ] && kill "$BOCHS_PID" 2>/dev/null
	if [ "$KEEP" = 1 ]; then echo "avx512-emu: work dir kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 3' INT TERM HUP

R=$WORK/initrd
mkdir -p "$R" "$WORK/iso"
cp "$RUNNER" "$R/init"
cp "$BIN" "$R/test.bin"
chmod 755 "$R/init" "$R/test.bin"
if [ $# -gt 0 ]; then printf '%s\n' "$@" > "$R/args"; else : > "$R/args"; fi
# Bochs 2.7 computes VGF2P8AFFINEQB wrongly (every result bit inverted), and
# Go >= 1.26's garbage collector scans with VGF2P8AFFINEQB when the CPU has
# AVX512BW+VL+VBMI+BITALG+GFNI, which corrupts the heap ("found pointer to free
# object"). Hiding AVX512BW from Go's internal/cpu turns that path off; code
# that reads CPUID itself (klauspost/cpuid, hand-written asm) is unaffected.
# -e GODEBUG=... replaces this default (the last NAME= wins).
{ echo "GODEBUG=cpu.avx512bw=off"; [ ${#ENVS[@]} -gt 0 ] && printf '%s\n' "${ENVS[@]}"; } > "$R/env"
if [ -n "$WORKDIR_SRC" ]; then
	[ -d "$WORKDIR_SRC" ] || die "no such directory: $WORKDIR_SRC"
	mkdir -p "$R/work"
	cp -rL "$WORKDIR_SRC"/. "$R/work/" || die "cannot copy $WORKDIR_SRC"
	if [ -n "$WORKDIR_SUB" ]; then
		[ -d "$WORKDIR_SRC/$WORKDIR_SUB" ] || die "--cwd $WORKDIR_SUB: no such directory in $WORKDIR_SRC"
		echo "/work/$WORKDIR_SUB" > "$R/workdir"
	fi
elif [ -n "$WORKDIR_SUB" ]; then
	echo "avx512-emu: --cwd needs -C DIR" >&2; exit 2
fi
(cd "$R" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 > "$WORK/iso/initrd.img") ||
	die "cpio failed"
cp "$KERNEL" "$WORK/iso/vmlinuz"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$WORK/iso/"
CMDLINE="console=ttyS0,115200 rdinit=/init panic=-1 nokaslr mitigations=off"
CMDLINE+=" clearcpuid=xsaves,xsavec,pku,fsrm lpj=1000000 tsc=reliable nowatchdog"
# Every console byte costs ~87us of emulated time, so stay quiet unless -v.
[ "$VERBOSE" = 1 ] || CMDLINE+=" quiet loglevel=3"
CMDLINE+=${AVX512EMU_CMDLINE:+ $AVX512EMU_CMDLINE}
cat > "$WORK/iso/isolinux.cfg" <<EOF
DEFAULT linux
PROMPT 0
TIMEOUT 0
LABEL linux
  KERNEL vmlinuz
  INITRD initrd.img
  APPEND $CMDLINE
EOF
xorriso -as mkisofs -quiet -o "$WORK/boot.iso" -b isolinux.bin -c boot.cat \
	-no-emul-boot -boot-load-size 4 -boot-info-table "$WORK/iso" >/dev/null 2>&1 || die "xorriso failed"
rm -rf "$R" "$WORK/iso"

# --- bochs ---------------------------------------------------------------
DISPLAY_MODE=${AVX512EMU_DISPLAY:-term}
case $DISPLAY_MODE in
term) DISPLAY_LIB=term ;;
rfb) DISPLAY_LIB='rfb, options="timeout=0"' ;;
*) die "AVX512EMU_DISPLAY must be term or rfb" ;;
esac
# Debian's bochs has no "nogui" display; rfb (VNC) with timeout=0 runs
# headless without waiting for a client. Its debugger is compiled in, so a
# debugger rc file with "c" starts the simulation.
cat > "$WORK/bochsrc" <<EOF
megs: $MEM
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
cpu: model=$CPU_MODEL, count=1, ips=${AVX512EMU_IPS:-50000000}, reset_on_triple_fault=0
display_library: $DISPLAY_LIB
vga: extension=vbe, update_freq=1
ata0: enabled=1, ioaddr1=0x1f0, ioaddr2=0x3f0, irq=14
ata0-master: type=cdrom, path=$WORK/boot.iso, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=$WORK/serial.out
log: $WORK/bochs.log
panic: action=fatal
error: action=report
info: action=report
debug: action=ignore
clock: sync=none, time0=local
pci: enabled=1, chipset=i440fx
speaker: enabled=0
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
EOF
printf 'c\n' > "$WORK/dbg.rc"
: > "$WORK/serial.out"
if [ "$DISPLAY_MODE" = term ]; then
	# The curses display needs a terminal: give it a pty via script(1).
	(cd "$WORK" && exec script -qfec "exec bochs -q -f bochsrc -rc dbg.rc" /dev/null < /dev/null > bochs.stdout 2>&1) &
else
	(cd "$WORK" && exec bochs -q -f bochsrc -rc dbg.rc < /dev/null > bochs.stdout 2>&1) &
fi
BOCHS_PID=$!
vlog "bochs pid $BOCHS_PID, work dir $WORK"

# Stream the serial log: print the program's output (between EMU-BEGIN and
# EMU-EXIT), stop at EMU-EXIT or when bochs dies or the timeout passes.
deadline=$(( $(date +%s) + TIMEOUT ))
state=boot pos=0 partial= code= boot_s=
while :; do
	size=$(stat -c %s "$WORK/serial.out" 2>/dev/null || echo 0)
	if [ "$size" -gt "$pos" ]; then
		chunk=$(tail -c +$((pos + 1)) "$WORK/serial.out" | head -c $((size - pos)) | tr -d '\r'; echo x)
		chunk=${chunk%x}
		pos=$size
		data=$partial$chunk
		partial=
		while [ -n "$data" ]; do
			if [[ $data != *$'\n'* ]]; then partial=$data; break; fi
			line=${data%%$'\n'*}
			data=${data#*$'\n'}
			case $state in
			boot)
				if [ "$line" = EMU-BEGIN ]; then
					state=run boot_s=$(elapsed)
					vlog "guest booted after ${boot_s}s"
				else
					vlog "[guest] $line"
				fi ;;
			run)
				if [[ $line =~ ^EMU-EXIT\ (-?[0-9]+)$ ]]; then
					code=${BASH_REMATCH[1]} state=done
				elif [[ $line == EMU-GUEST-SECONDS* || $line == EMU-WARN* ]]; then
					vlog "$line"
					[[ $line == EMU-WARN* ]] && echo "avx512-emu: $line" >&2
				else
					printf '%s\n' "$line"
				fi ;;
			esac
		done
		# Unterminated output at the end of the run still gets printed.
		if [ "$state" = run ] && [ -n "$partial" ] && ! kill -0 "$BOCHS_PID" 2>/dev/null; then
			printf '%s' "$partial"; partial=
		fi
	fi
	[ "$state" = done ] && break
	if ! kill -0 "$BOCHS_PID" 2>/dev/null; then
		# One last read in case output landed just before exit.
		size=$(stat -c %s "$WORK/serial.out" 2>/dev/null || echo 0)
		[ "$size" -gt "$pos" ] && continue
		break
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "avx512-emu: timeout after ${TIMEOUT}s (state: $state)" >&2
		break
	fi
	sleep 0.5
done

if [ "$state" = done ]; then
	# The guest powers off via ACPI, which ends bochs; give it a moment.
	for _ in $(seq 20); do kill -0 "$BOCHS_PID" 2>/dev/null || break; sleep 0.25; done
	kill "$BOCHS_PID" 2>/dev/null
	wait "$BOCHS_PID" 2>/dev/null
	BOCHS_PID=
	vlog "total ${boot_s:-?}s boot, $(elapsed)s wall in all; exit code $code"
	exit $(( code & 255 ))
fi

kill "$BOCHS_PID" 2>/dev/null
wait "$BOCHS_PID" 2>/dev/null
brc=$?
BOCHS_PID=
echo "avx512-emu: emulation ended without EMU-EXIT (state: $state, bochs status $brc); last guest lines:" >&2
tr -d '\r' < "$WORK/serial.out" | tail -20 >&2
echo "avx512-emu: bochs messages:" >&2
{ cat "$WORK/bochs.log"; tr -d '\r' < "$WORK/bochs.stdout" | grep -aE 'PANIC|exit|quit|signal|<bochs'; } 2>/dev/null | tail -8 >&2
KEEP=1
exit 3
