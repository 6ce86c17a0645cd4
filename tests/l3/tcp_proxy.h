// A TCP proxy a test controls (header-only, loopback only): it listens on a
// free 127.0.0.1 port and forwards every connection to a target port, byte
// for byte, on a thread of its own. Cut() closes every connection it
// carries and its listener (a peer's connect is refused, as when a link is
// down); Restore() listens again on the same port. Used to drop an agent's
// connection to its coordinator for a while (tests/l3/reconnect_test.cc).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dfx::e2e {

class TcpProxy {
 public:
  // `target_port`: where each connection is forwarded (127.0.0.1).
  explicit TcpProxy(int target_port) : target_port_(target_port) {
    if (::pipe(control_) != 0 || ::pipe(ack_) != 0) return;
    Listen(0);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TcpProxy() {
    Command('q');
    if (thread_.joinable()) thread_.join();
    for (int fd : {control_[0], control_[1], ack_[0], ack_[1]}) ::close(fd);
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  // 0 when it could not listen.
  int port() const { return port_; }
  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  // Closes every connection and the listener; returns once done.
  void Cut() { Command('c'); }
  // Listens again on the same port; returns once listening (false: it could not).
  bool Restore() { return Command('r') == 'y'; }
  // Connections accepted so far.
  int accepted() const { return accepted_; }

 private:
  struct Pair {
    int a = -1;  // the client's side
    int b = -1;  // the target's side
  };

  char Command(char c) {
    char reply = 0;
    if (::write(control_[1], &c, 1) != 1) return 0;
    if (::read(ack_[0], &reply, 1) != 1) return 0;
    return reply;
  }

  bool Listen(int port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    socklen_t len = sizeof addr;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ::close(listener_);
      listener_ = -1;
      return false;
    }
    port_ = ntohs(addr.sin_port);
    return true;
  }

  int ConnectTarget() const {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(target_port_));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }

  void CloseAll() {
    for (Pair& p : pairs_) {
      ::close(p.a);
      ::close(p.b);
    }
    pairs_.clear();
    if (listener_ >= 0) ::close(listener_);
    listener_ = -1;
  }

  // Copies what `from` has to `to`; false when either side is done.
  static bool Forward(int from, int to) {
    char buf[65536];
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n <= 0) return n < 0 && errno == EINTR;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(to, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      done += w;
    }
    return true;
  }

  void Loop() {
    for (;;) {
      std::vector<pollfd> fds{{control_[0], POLLIN, 0}};
      if (listener_ >= 0) fds.push_back({listener_, POLLIN, 0});
      const size_t first_pair = fds.size();
      for (const Pair& p : pairs_) {
        fds.push_back({p.a, POLLIN, 0});
        fds.push_back({p.b, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 100) < 0) continue;
      if (fds[0].revents & POLLIN) {
        char c = 0;
        if (::read(control_[0], &c, 1) != 1) continue;
        char reply = 'y';
        if (c == 'c' || c == 'q') CloseAll();
        if (c == 'r' && listener_ < 0 && !Listen(port_)) reply = 'n';
        (void)!::write(ack_[1], &reply, 1);
        if (c == 'q') return;
        continue;  // the descriptors polled may be closed now
      }
      if (listener_ >= 0 && (fds[1].revents & POLLIN)) {
        const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client >= 0) {
          const int target = ConnectTarget();
          if (target < 0) {
            ::close(client);
          } else {
            pairs_.push_back({client, target});
            ++accepted_;
          }
        }
      }
      std::vector<Pair> keep;
      for (size_t i = 0; i < (fds.size() - first_pair) / 2; ++i) {
        const Pair p = pairs_[i];
        bool alive = true;
        if (fds[first_pair + 2 * i].revents & (POLLIN | POLLHUP | POLLERR))
          alive &= Forward(p.a, p.b);
        if (alive && (fds[first_pair + 2 * i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
          alive &= Forward(p.b, p.a);
        }
        if (alive) {
          keep.push_back(p);
        } else {
          ::close(p.a);
          ::close(p.b);
        }
      }
      for (size_t i = (fds.size() - first_pair) / 2; i < pairs_.size(); ++i)
        keep.push_back(pairs_[i]);
      pairs_ = std::move(keep);
    }
  }

  const int target_port_;
  int port_ = 0;
  int listener_ = -1;
  int control_[2] = {-1, -1};
  int ack_[2] = {-1, -1};
  std::vector<Pair> pairs_;
  std::atomic<int> accepted_{0};  // written by the proxy thread
  std::thread thread_;
};

}  // namespace dfx::e2e
