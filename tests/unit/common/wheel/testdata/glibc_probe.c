// Shared objects for the platform checks, compiled at test build time for x86_64 and, with
// the cross compiler, for aarch64. Without FARM_NEEDS_NEW_GLIBC the object needs only
// strlen, which every glibc of its CPU has (GLIBC_2.2.5 on x86_64, GLIBC_2.17 on aarch64);
// with it, pthread_create, whose default version is GLIBC_2.34 (libpthread merged into libc).
#include <string.h>
#ifdef FARM_NEEDS_NEW_GLIBC
#include <pthread.h>
static void* Run(void* arg) { return arg; }
int StartThread(void) {
  pthread_t thread;
  return pthread_create(&thread, 0, Run, 0);
}
#endif
size_t Length(const char* s) { return strlen(s); }
