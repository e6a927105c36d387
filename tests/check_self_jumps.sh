#!/bin/sh
# check_self_jumps.sh OBJDUMP PLUGIN.so...: fails if a plugin contains a jump
# to its own address, an endless loop with no way out. GCC 12 at -O3 with
# -fsanitize=address and the bool check of -fsanitize=undefined compiled
# Open MPI's volatile spin-wait (WAIT_SYNC_RELEASE, inlined into every
# blocking send and receive) into one (pml/dr/core/meson.build): a thread
# that met its completer mid-signal spun forever under MPI_THREAD_MULTIPLE.
objdump=$1
shift
status=0
for so in "$@"; do
    hits=$("$objdump" -d --no-show-raw-insn -C "$so" |
        awk '$2 ~ /^jmp/ && $1 == $3 ":" { print }')
    if [ -n "$hits" ]; then
        echo "$so: jumps to themselves:"
        echo "$hits"
        status=1
    fi
done
exit $status
