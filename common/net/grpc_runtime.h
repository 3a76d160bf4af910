// Process-wide settings of the gRPC runtime that every farm binary makes before its first
// gRPC call.
#ifndef FARM_COMMON_NET_GRPC_RUNTIME_H_
#define FARM_COMMON_NET_GRPC_RUNTIME_H_

namespace farm::net {

// Turns off Abseil's lock-order graph for absl::Mutex, which gRPC takes for every call,
// completion queue and transport. Debian's Abseil is built without NDEBUG, so the graph is
// kept by default: each lock records an edge (sometimes with a stack trace) under one global
// lock, which costs farmd several percent of its CPU at a thousand workers and serializes
// its threads. The farm's own locks are std::mutex and unaffected; ThreadSanitizer builds
// still see lock inversions. Call once at the start of main; safe to call again.
void DisableMutexOrderGraph();

}  // namespace farm::net

#endif  // FARM_COMMON_NET_GRPC_RUNTIME_H_
