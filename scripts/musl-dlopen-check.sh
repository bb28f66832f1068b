#!/usr/bin/env bash
# Loads a musl build of the addon with musl's dynamic loader (no Node involved): dlopen(RTLD_NOW) must
# resolve every relocation and find napi_register_module_v1, the entry point Node calls. This is the
# most this host can check: there is no musl Node.js here, so the addon's functions are not run.
#
# The addon needs libgcc_s.so.1 (Rust's unwinder on musl). Alpine ships a musl one; this Debian host has
# only glibc's, which musl cannot load, so a stand-in is built from the LLVM libunwind that Rust ships
# for the musl target. Usage: scripts/musl-dlopen-check.sh path/to/resilix.linux-x64-musl.node
set -euo pipefail
BIN=$(readlink -f "$1")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
UNWIND="$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-musl/lib/self-contained/libunwind.a"
musl-gcc -shared -fPIC -o "$WORK/libgcc_s.so.1" -Wl,-soname,libgcc_s.so.1 \
  -Wl,--whole-archive "$UNWIND" -Wl,--no-whole-archive
cat > "$WORK/dl.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "dlopen failed: %s\n", dlerror()); return 1; }
  if (!dlsym(h, "napi_register_module_v1")) { fprintf(stderr, "napi_register_module_v1 missing\n"); return 2; }
  printf("musl dlopen ok: %s exports napi_register_module_v1\n", argv[1]);
  return 0;
}
C
musl-gcc -o "$WORK/dl" "$WORK/dl.c"
LD_LIBRARY_PATH="$WORK" "$WORK/dl" "$BIN"
