// getpid() answered from memory, for the executables that use ZeroMQ.
//
// libzmq checks `getpid()` against the pid it recorded on every mailbox
// check and signal (its guard against use after fork): 25 of the ~73
// system calls of a dispatch round trip (coordinator, agent and both
// ZeroMQ I/O threads; `strace -c -f`, 1 agent x 3000 dispatches). glibc
// no longer caches the pid, and on a virtual machine a system call costs
// about a microsecond (`getpid` 0.97 us here), so those checks were ~10%
// of a round trip's CPU.
//
// This definition lives in the executable (linked as an object library,
// exported with --export-dynamic-symbol, see CMakeLists.txt): the dynamic
// linker binds libzmq's calls to it before libc's. It is exact across
// fork(): the child refreshes the value in a pthread_atfork handler before
// any of its code runs. posix_spawn and vfork children do not run those
// handlers, but they share or replace the parent's image until exec and
// call nothing here; threads share the pid.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace {

std::atomic<pid_t> g_pid{0};

pid_t ReadPid() { return static_cast<pid_t>(::syscall(SYS_getpid)); }

void RefreshInChild() { g_pid.store(ReadPid(), std::memory_order_relaxed); }

struct Install {
  Install() {
    RefreshInChild();
    ::pthread_atfork(nullptr, nullptr, RefreshInChild);
  }
} g_install;

}  // namespace

extern "C" pid_t getpid() noexcept {
  pid_t pid = g_pid.load(std::memory_order_relaxed);
  if (pid == 0) {  // called by a static constructor that ran before ours
    pid = ReadPid();
    g_pid.store(pid, std::memory_order_relaxed);
  }
  return pid;
}
