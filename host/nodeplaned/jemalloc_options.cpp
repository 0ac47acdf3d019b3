// jemalloc's options for nodeplaned (and the fleet benchmarks' simulated
// nodes, tests/bench), read at its first allocation; MALLOC_CONF in the
// environment is read after them and wins.
//
// Transparent huge pages for its arenas and metadata. A restart storm has
// every node's handshake in flight at once, and each touches fresh memory
// (OpenSSL zeroes a 16 KiB handshake buffer and the SSL object): faulting it
// in 4 KiB pages was a quarter of nodeplaned's CPU in the storm on a
// paravirtualised guest, where each fault passes the hypervisor. With 2 MiB
// pages the storm's median over five runs was 12.8 s against 17.3, for about
// 40 MiB more RSS at 10,000 nodes (docs/performance.md, "sixth pass"). Where
// the kernel's transparent_hugepage setting is "never" this changes nothing.
extern "C" {
const char* malloc_conf = "thp:always,metadata_thp:always";
}
