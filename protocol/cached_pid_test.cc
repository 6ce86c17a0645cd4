// protocol/cached_pid.cc, linked into this test as into the executables.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

pid_t KernelPid() { return static_cast<pid_t>(::syscall(SYS_getpid)); }

// What libzmq (and every other shared library) calls is the first getpid
// in the global scope: this executable's, only if it exports it.
TEST(CachedPid, SharedLibrariesBindToTheExecutablesGetpid) {
  void* bound = ::dlsym(RTLD_DEFAULT, "getpid");
  ASSERT_NE(bound, nullptr);
  Dl_info where{}, self{};
  ASSERT_NE(::dladdr(bound, &where), 0);
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&KernelPid), &self), 0);
  EXPECT_EQ(where.dli_fbase, self.dli_fbase)
      << "getpid binds to " << where.dli_fname
      << ", not to this executable: libzmq would make a system call per check";
  EXPECT_EQ(::getpid(), KernelPid());
}

TEST(CachedPid, AForkedChildSeesItsOwnPid) {
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit codes: 0 right, 1 the parent's pid, 2 another wrong one.
    const pid_t seen = ::getpid();
    ::_exit(seen == KernelPid() ? 0 : seen == parent ? 1 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the child saw its parent's pid";
  EXPECT_EQ(::getpid(), parent);
  EXPECT_EQ(::getpid(), KernelPid());
}

}  // namespace
