# The memory every run starts with, shared by wire.sh and chunking.sh
# (sourced, not run).
#
# On a VM whose balloon driver reports free memory to the host (virtio free
# page reporting, in 2 MiB blocks), memory that has stayed free for about
# two seconds goes back to the host, and the next process to touch it waits
# while the host backs it again. Under mimalloc, which asks for transparent
# huge pages, a wire run (N = 50,000, S = 1) started six seconds after the
# last one spent about 4 s more in the kernel, zeroing huge pages, than one
# started right after another run: initial sync 3.7 s against 1.0 s for
# kube-informer, 6.0 s against 1.8-2.2 s for kube-runtime. glibc's malloc
# was not affected. So the first run after the server started, or after any
# pause, paid for it, whichever runner it was.
#
# `settle_memory` fills and frees SETTLE_MB of memory (default 3072, more
# than any runner's peak at N = 50,000; 0 turns it off) just before a run,
# so every runner starts with free memory the host has just backed, as a
# run right after another run does.
settle_memory() {
  local mb="${SETTLE_MB:-3072}"
  [[ $mb -gt 0 ]] || return 0
  # One buffer of that size, filled by reads from /dev/zero: every page of
  # it is touched once, then freed when dd exits.
  dd if=/dev/zero of=/dev/null bs="${mb}M" count=1 iflag=fullblock status=none
}
