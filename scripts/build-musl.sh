#!/usr/bin/env bash
# Builds the linux x64 musl binary (resilix.linux-x64-musl.node) on an x86_64 glibc Linux host.
#
# Why a script and not `npm run build -- --target ...`: a musl cdylib needs musl's C toolchain as the
# linker (musl-gcc); with the host's glibc `cc` the .so links glibc's libc.so.6 and fails on Alpine.
# napi build already adds `-C target-feature=-crt-static` for musl targets (a static CRT cannot make a
# cdylib), so the only extra is the linker. CI (release.yml) builds musl with `napi build -x` (zig) instead.
#
# Needs: rustup, and musl-gcc (Debian/Ubuntu package musl-tools). As root with apt-get, this script
# installs what is missing; otherwise it says what to install and stops.
# This builds the binary only: the build host has no musl Node.js, so it is not loaded or tested
# here. It is tested in CI on node:<version>-alpine (release.yml, job test-linux).
set -euo pipefail

TARGET=x86_64-unknown-linux-musl
OUT=.tmp/build-musl
cd "$(dirname "$0")/.."

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "build-musl.sh: expects an x86_64 Linux host (got $(uname -s)-$(uname -m))" >&2
  exit 1
fi

if ! rustup target list --installed | grep -qx "$TARGET"; then
  rustup target add "$TARGET"
fi

if ! command -v musl-gcc >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y musl-tools || { apt-get update && apt-get install -y musl-tools; }
  else
    echo "build-musl.sh: musl-gcc not found. Install it (Debian/Ubuntu: sudo apt-get install musl-tools) and rerun." >&2
    exit 1
  fi
fi

export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER=musl-gcc
# Rust links a musl cdylib with -lgcc_s (unwinding). musl-gcc drops the host library path (-nostdlib), so
# gcc's libgcc_s.so linker script cannot find libgcc_s.so.1. Give the linker a directory holding only that
# file: resolving symbols against it records NEEDED libgcc_s.so.1, which Alpine provides (package libgcc,
# a dependency of Node itself there). A broader -L/lib/x86_64-linux-gnu would let glibc's libc win over musl's.
GCC_S=$(gcc -print-file-name=libgcc_s.so.1)
mkdir -p "$OUT/libgcc"
ln -sf "$GCC_S" "$OUT/libgcc/libgcc_s.so.1"
export RUSTFLAGS="${RUSTFLAGS:-} -L native=$PWD/$OUT/libgcc"
# --output-dir keeps the generated loader/typings away from the committed native.js / native.d.ts
# (and napi's default dts name, index.d.ts, away from the hand-written one).
npx napi build --platform --release --target "$TARGET" --output-dir "$OUT" --no-js --dts native.d.ts
# Into its platform package, where `napi artifacts` puts CI builds (not the repo root: the root's
# resilix.*.node is the dev binary that scripts/ensure-built.mjs keeps fresh).
BIN=npm/linux-x64-musl/resilix.linux-x64-musl.node
cp "$OUT/resilix.linux-x64-musl.node" "$BIN"

# Check what we can without a musl Node: an x86-64 shared object whose only libc is musl's libc.so.
if command -v readelf >/dev/null 2>&1; then
  NEEDED=$(readelf -d "$BIN" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); print $5}')
  echo "$BIN NEEDED: $(echo $NEEDED)"
  if echo "$NEEDED" | grep -q 'libc\.so\.6'; then
    echo "build-musl.sh: $BIN links glibc (libc.so.6); the musl linker was not used" >&2
    exit 1
  fi
  readelf -h "$BIN" | grep -q 'Advanced Micro Devices X86-64' || { echo "build-musl.sh: $BIN is not x86-64" >&2; exit 1; }
  if readelf --dyn-syms -W "$BIN" | grep -q '@GLIBC_'; then
    echo "build-musl.sh: $BIN references glibc-versioned symbols" >&2
    exit 1
  fi
fi
ls -l "$BIN"
echo "built $BIN (not loaded by Node: no musl Node.js on this host). Pack it with: (cd npm/linux-x64-musl && npm pack)"

# And load it with musl's dynamic loader (no Node): every relocation resolves, the napi entry point exists.
scripts/musl-dlopen-check.sh "$BIN"
