// A shared object without device code, for manifests of CPU-only modules.
extern "C" int HostOnlyAnswer() { return 42; }
