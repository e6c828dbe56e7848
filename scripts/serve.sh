#!/bin/sh
# Starts the server: `npm start` (sh scripts/serve.sh), `npm run dev` (with --watch) and the Dockerfile run
# this, and so do the tests, the cluster and the benches (serverCommand in server/testing/processes.ts).
# Arguments are Node options, given before the entry point.
#
# The young generation is capped at semi-spaces of 16 MB (V8's own maximum until Node 20): V8 sizes it from
# the heap limit, which it sizes from the machine's memory, and on a 24 GB machine let it grow to 128 MB
# under load, half the RSS of 1,000 open agent streams. 8 MB promoted more of a run's objects to the old
# generation, and 24 or 32 MB measured worse (README, target 3).
#
# Memory (README, Operating it): where the system has jemalloc (Debian's libjemalloc2, which its Redis
# package brings too), the server runs on it unless LD_PRELOAD is set (`LD_PRELOAD= npm start` runs on
# glibc's malloc): glibc keeps in its heaps most of the native memory a busy spell frees, and jemalloc
# gives freed pages back, here (unless MALLOC_CONF is set) after a second and from a thread of its own, so
# that an idle server does too. For glibc, the mmap threshold is fixed at its 128 kB default
# (unless GLIBC_TUNABLES is set) instead of rising as large blocks are freed.
set -e
if [ -z "${LD_PRELOAD+set}" ]; then
  for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 /usr/lib64/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do
    if [ -r "$lib" ]; then
      export LD_PRELOAD="$lib"
      export MALLOC_CONF="${MALLOC_CONF-background_thread:true,dirty_decay_ms:1000}"
      break
    fi
  done
fi
export GLIBC_TUNABLES="${GLIBC_TUNABLES-glibc.malloc.mmap_threshold=131072}"
exec node "$@" --max-semi-space-size=16 server/main.ts
