#include "protocol/channel.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "protocol/codec.h"

namespace dfx::protocol {

namespace {

std::atomic<uint64_t> g_next_id{0};

// Makes one ZeroMQ call again for as long as a signal the process handles
// (an agent's SIGTERM or SIGINT) interrupts it. libzmq reports EINTR from
// its mailbox check (or zmq_poll's own poll) before the call has done
// anything: the part is not queued, the frame not taken, the endpoint not
// bound, so making the same call again is exact, in the middle of a
// multi-part message too. Unhandled, it failed sends ("zmq send failed:
// Interrupted system call"), left a ROUTER's payload to be read as the next
// identity, and ended the ZAP handler's thread.
template <typename Call>
auto RetryOnEintr(Call&& call) -> decltype(call()) {
  for (;;) {
    try {
      return call();
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

// libzmq's ZAP handler (RFC 27): one REP socket on inproc://zeromq.zap.01
// of the context, answered by its own thread. Every CURVE router registers
// a domain with the client keys it admits; anything else is denied.
class ZapHandler {
 public:
  explicit ZapHandler(zmq::context_t& context) : socket_(context, zmq::socket_type::rep) {
    socket_.set(zmq::sockopt::linger, 0);
    RetryOnEintr([&] { socket_.bind("inproc://zeromq.zap.01"); });
    thread_ = std::thread([this] { Loop(); });
  }
  ~ZapHandler() {
    stop_.store(true);
    stop_wake_.Notify();  // ends its wait now, not at the next poll timeout
    thread_.join();
  }
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Registers the keys one router admits; returns its ZAP domain.
  std::string AddDomain(const std::vector<std::string>& z85_keys) {
    std::set<std::string> keys;
    for (const std::string& k : z85_keys) {
      uint8_t raw[32];
      if (IsCurveKey(k) && zmq_z85_decode(raw, k.c_str()) != nullptr) {
        keys.insert(std::string(reinterpret_cast<const char*>(raw), 32));
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    const std::string domain = fmt::format("dfx-{}", ++g_next_id);
    domains_[domain].keys = std::move(keys);
    return domain;
  }
  // A domain for local_peers_only routers: PLAIN users of AdmitLocal, this uid.
  std::string AddLocalDomain() {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string domain = fmt::format("dfx-{}", ++g_next_id);
    domains_[domain].local = true;
    return domain;
  }
  void AdmitLocal(const std::string& domain, const std::string& user, const std::string& token,
                  uint32_t pid) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = domains_.find(domain);
    if (it != domains_.end()) it->second.local_peers[user] = {token, pid};
  }
  void RemoveDomain(const std::string& domain) {
    std::lock_guard<std::mutex> lock(mu_);
    domains_.erase(domain);
  }
  // The last denial of `domain` ("key <Z85> from 127.0.0.1"), and clears it.
  std::string TakeLastDenial(const std::string& domain) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = domains_.find(domain);
    if (it == domains_.end()) return "";
    return std::exchange(it->second.last_denial, "");
  }

 private:
  struct Domain {
    std::set<std::string> keys;  // 32-byte binary public keys
    std::string last_denial;
    bool local = false;  // local_peers_only: PLAIN users below, this uid only
    std::map<std::string, std::pair<std::string, uint32_t>> local_peers;  // user -> token, pid
  };

  // A local_peers_only domain's verdict ("" = admitted). `address` is what
  // libzmq read from the kernel for an ipc connection: "...:uid:gid:pid"
  // (SO_PEERCRED; stream_engine_base.cpp, get_peer_address).
  static std::string LocalVerdict(const Domain& d, const std::string& mechanism,
                                  const std::string& address, const std::string& user,
                                  const std::string& password) {
    if (mechanism != "PLAIN") return fmt::format("a {} client (PLAIN is required)", mechanism);
    // The last three ':'-separated fields.
    uint64_t ids[3] = {0, 0, 0};
    size_t end = address.size();
    for (int i = 2; i >= 0; --i) {
      const size_t colon = end == 0 ? std::string::npos : address.rfind(':', end - 1);
      const std::string field =
          colon == std::string::npos ? "" : address.substr(colon + 1, end - colon - 1);
      if (field.empty() || field.size() > 10 ||
          field.find_first_not_of("0123456789") != std::string::npos) {
        return fmt::format("no kernel credentials in the peer address '{}'", address);
      }
      ids[i] = std::stoull(field);
      end = colon;
    }
    if (ids[0] != ::geteuid()) {
      return fmt::format("uid {} (pid {}) is not this coordinator's uid {}", ids[0], ids[2],
                         ::geteuid());
    }
    auto it = d.local_peers.find(user);
    if (it == d.local_peers.end()) {
      return fmt::format("pid {} presented no token this coordinator offered", ids[2]);
    }
    unsigned char diff = it->second.first.size() == password.size() ? 0 : 1;
    for (size_t i = 0; i < password.size() && i < it->second.first.size(); ++i) {
      diff |= password[i] ^ it->second.first[i];  // constant time
    }
    if (diff != 0) return fmt::format("pid {} presented a wrong token", ids[2]);
    if (it->second.second != 0 && it->second.second != ids[2]) {
      return fmt::format("pid {} presented the token of pid {}", ids[2], it->second.second);
    }
    return "";
  }

  void Loop() {
    while (!stop_.load()) {
      try {
        zmq::pollitem_t items[2] = {{socket_.handle(), 0, ZMQ_POLLIN, 0},
                                    {nullptr, stop_wake_.read_fd(), ZMQ_POLLIN, 0}};
        if (RetryOnEintr([&] { return zmq::poll(items, 2, std::chrono::milliseconds(1000)); }) <=
                0 ||
            !(items[0].revents & ZMQ_POLLIN))
          continue;
        std::vector<zmq::message_t> frames;
        do {
          frames.emplace_back();
          if (!RetryOnEintr([&] { return socket_.recv(frames.back(), zmq::recv_flags::none); }))
            break;
        } while (frames.back().more() && frames.size() < 16);
        Answer(frames);
      } catch (const zmq::error_t&) {
        return;  // the context is going away
      }
    }
  }

  void Answer(const std::vector<zmq::message_t>& f) {
    auto text = [&](size_t i) {
      return i < f.size() ? std::string(static_cast<const char*>(f[i].data()), f[i].size())
                          : std::string();
    };
    // version, request id, domain, address, routing id, mechanism, credentials...
    const std::string request_id = text(1);
    const std::string domain = text(2);
    const std::string address = text(3);
    const std::string mechanism = text(5);
    std::string status = "400";
    std::string user;
    std::string status_text = "not admitted";
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = domains_.find(domain);
      if (it != domains_.end()) {
        const std::string key = text(6);
        char z85[kCurveKeyChars + 1] = {};
        if (key.size() == 32) {
          zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(key.data()), 32);
        }
        if (it->second.local) {
          std::string why = LocalVerdict(it->second, mechanism, address, text(6), text(7));
          if (why.empty()) {
            status = "200";
            status_text = "OK";
            user = text(6);
          } else {
            it->second.last_denial = "local bulk peer refused: " + why;
          }
        } else if (mechanism == "CURVE" && it->second.keys.count(key)) {
          status = "200";
          status_text = "OK";
          user = z85;
        } else {
          it->second.last_denial =
              mechanism == "CURVE"
                  ? fmt::format("CURVE key {} from {} is not an admitted agent key", z85, address)
                  : fmt::format("a {} client from {} (CURVE is required)", mechanism, address);
        }
      }
    }
    const std::string reply[6] = {"1.0", request_id, status, status_text, user, ""};
    for (int i = 0; i < 6; ++i) {
      RetryOnEintr([&] {
        return socket_.send(zmq::buffer(reply[i]),
                            i < 5 ? zmq::send_flags::sndmore : zmq::send_flags::none);
      });
    }
  }

  zmq::socket_t socket_;
  std::mutex mu_;
  std::map<std::string, Domain> domains_;
  std::atomic<bool> stop_{false};
  WakePipe stop_wake_;  // wakes the handler's poll when it is told to stop
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace

struct Context::Impl {
  zmq::context_t context{1};
  std::mutex zap_mu;
  std::unique_ptr<ZapHandler> zap;  // after the context: destroyed (joined) before it

  ZapHandler& Zap() {
    std::lock_guard<std::mutex> lock(zap_mu);
    if (!zap) zap = std::make_unique<ZapHandler>(context);
    return *zap;
  }
};

Context::Context() : impl_(std::make_unique<Impl>()) {}
Context::~Context() = default;
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;

namespace {

void ApplyOptions(zmq::socket_t& socket, const SocketOptions& options) {
  socket.set(zmq::sockopt::linger, options.linger_ms);
  socket.set(zmq::sockopt::sndhwm, options.send_high_water);
  socket.set(zmq::sockopt::rcvhwm, options.receive_high_water);
  socket.set(zmq::sockopt::maxmsgsize, options.max_message_bytes);
  socket.set(zmq::sockopt::handshake_ivl, options.handshake_ms);
}

// A socket's handshake failures and closed connections (zmq_socket_monitor)
// on an inproc PAIR socket, read by the socket's owner thread when it asks.
class SocketMonitor {
 public:
  SocketMonitor(zmq::context_t& context, zmq::socket_t& socket)
      : pair_(context, zmq::socket_type::pair) {
    const std::string address = fmt::format("inproc://dfx-monitor-{}", ++g_next_id);
    const int events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                       ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED |
                       ZMQ_EVENT_HANDSHAKE_SUCCEEDED;
    RetryOnEintr([&] {
      if (zmq_socket_monitor(socket.handle(), address.c_str(), events) != 0) throw zmq::error_t();
    });
    pair_.set(zmq::sockopt::linger, 0);
    RetryOnEintr([&] { pair_.connect(address); });
  }

  // Reads every queued event without waiting.
  void Drain() {
    zmq::message_t head, address;
    while (Recv(head)) {
      if (head.more()) (void)Recv(address);
      if (head.size() < 6) continue;
      uint16_t event = 0;
      uint32_t value = 0;
      std::memcpy(&event, head.data(), 2);
      std::memcpy(&value, static_cast<const char*>(head.data()) + 2, 4);
      if (std::getenv("DFX_DEBUG_MONITOR"))
        std::fprintf(stderr, "DEBUG event %d value %u\n", event, value);
      if (event == ZMQ_EVENT_DISCONNECTED) {
        // Bounded: an owner that never asks keeps only the latest closes.
        if (disconnects_.size() >= 4096) disconnects_.erase(disconnects_.begin());
        disconnects_.push_back(static_cast<int>(value));
        continue;
      }
      if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        ++handshakes_;
        continue;
      }
      ++refusals_.count;
      refusals_.last_denied_key = event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
      if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
        refusals_.last = fmt::format("the peer refused the credentials (ZAP status {})", value);
      } else if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
        refusals_.last =
            value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
                ? "the peer speaks another security mechanism (one side uses CURVE keys, the "
                  "other does not)"
                : fmt::format("the handshake broke the protocol (ZMTP error 0x{:x}: a wrong key?)",
                              value);
      } else {
        refusals_.last = fmt::format(
            "the handshake did not complete ({}; a peer holding another key, or no answer "
            "within the handshake deadline)",
            value == 0 ? std::string("connection closed") : std::string(zmq_strerror(value)));
      }
    }
  }
  HandshakeRefusals Take(bool drain = true) {
    if (drain) Drain();
    return std::exchange(refusals_, HandshakeRefusals{});
  }
  std::vector<int> TakeDisconnects(bool drain = true) {
    if (drain) Drain();
    return std::exchange(disconnects_, {});
  }
  uint64_t Handshakes() {
    Drain();
    return handshakes_;
  }
  uint64_t HandshakesRead() const { return handshakes_; }

 private:
  // One frame if one is queued (an EINTR once threw out of Drain and ended
  // the process: std::terminate). Any other error ends the drain.
  bool Recv(zmq::message_t& frame) {
    try {
      return RetryOnEintr([&] { return pair_.recv(frame, zmq::recv_flags::dontwait); }).has_value();
    } catch (const zmq::error_t&) {
      return false;
    }
  }

  zmq::socket_t pair_;
  HandshakeRefusals refusals_;
  std::vector<int> disconnects_;
  uint64_t handshakes_ = 0;  // completed handshakes, ever
};

// A zmq message over `bytes`. Large payloads (artifact chunks) are handed
// over without a copy: zmq frees the string from its I/O thread once sent.
zmq::message_t OwnedMessage(std::string&& bytes) {
  if (bytes.size() < 4096) return zmq::message_t(bytes.data(), bytes.size());
  auto* owned = new std::string(std::move(bytes));
  return zmq::message_t(
      owned->data(), owned->size(),
      [](void*, void* hint) { delete static_cast<std::string*>(hint); }, owned);
}

Result<SendResult> SendMessage(zmq::socket_t& socket, const std::string* identity,
                               zmq::message_t payload, bool mandatory_router) {
  try {
    if (identity != nullptr) {
      auto sent = RetryOnEintr([&] {
        return socket.send(zmq::buffer(*identity),
                           zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      });
      if (!sent) return SendResult::kWouldBlock;
    }
    auto sent = RetryOnEintr([&] { return socket.send(payload, zmq::send_flags::dontwait); });
    if (!sent) return SendResult::kWouldBlock;
    return SendResult::kSent;
  } catch (const zmq::error_t& e) {
    if (mandatory_router && e.num() == EHOSTUNREACH) return SendResult::kUnroutable;
    return Unavailable(fmt::format("zmq send failed: {}", e.what()));
  }
}

// SendMessage of a copy of `bytes` (what zmq_send of a buffer makes).
Result<SendResult> SendParts(zmq::socket_t& socket, const std::string* identity,
                             std::string_view bytes, bool mandatory_router) {
  return SendMessage(socket, identity, zmq::message_t(bytes.data(), bytes.size()),
                     mandatory_router);
}

// The socket's monitor is not waited for: its events are read whenever
// its owner asks (Take*, Handshaken; the coordinator's event loop does on
// every turn, and its turns are 20 ms at most). Polling it as a second
// ZeroMQ socket cost four system calls per wait (its ZMQ_EVENTS before and
// after the poll), on every message either side receives.
Result<Polled> ReceiveFrame(zmq::socket_t& socket, bool router, int timeout_ms, int wake_fd) {
  Polled out;
  try {
    // Draining what is queued (no wait, no wake-up pipe) needs no poll: a
    // zmq_poll costs several system calls (each zmq socket's mailbox is
    // checked), and the event loops drain after every frame.
    const bool drain_only = timeout_ms == 0 && wake_fd < 0;
    if (!drain_only) {
      zmq::pollitem_t items[2] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                                  {nullptr, wake_fd, ZMQ_POLLIN, 0}};
      const int count = wake_fd >= 0 ? 2 : 1;
      int rc = zmq::poll(items, count, std::chrono::milliseconds(timeout_ms));  // EINTR: nothing
      if (rc <= 0) return out;
      if (wake_fd >= 0 && (items[1].revents & ZMQ_POLLIN)) out.woken = true;
      if (!(items[0].revents & ZMQ_POLLIN)) return out;
    }
    Frame frame;
    zmq::message_t part;
    if (router) {
      if (!socket.recv(part, zmq::recv_flags::dontwait)) return out;
      frame.identity.assign(static_cast<const char*>(part.data()), part.size());
      if (!part.more()) {  // identity without payload: cannot come from a DEALER
        frame.had_extra_parts = true;
        out.frame = std::move(frame);
        return out;
      }
    }
    // The payload stays in its zmq message (no copy): the FrameBytes owns it.
    // A DEALER's payload is the first part: never wait for it. A ROUTER's
    // follows its identity part (a message arrives whole).
    auto payload = std::make_shared<zmq::message_t>();
    // Once a ROUTER's identity part is read, its payload must be too (left
    // queued, it would be read as the next frame's identity).
    if (!RetryOnEintr([&] {
          return socket.recv(*payload, router ? zmq::recv_flags::none : zmq::recv_flags::dontwait);
        })) {
      return out;
    }
    const std::string_view view(static_cast<const char*>(payload->data()), payload->size());
    const bool more = payload->more();
    if (router) {
      if (const char* peer = zmq_msg_gets(payload->handle(), "Peer-Address")) {
        frame.peer_address = peer;
      }
      if (const char* user = zmq_msg_gets(payload->handle(), "User-Id")) frame.user_id = user;
      frame.connection_fd = zmq_msg_get(payload->handle(), ZMQ_SRCFD);
    }
    frame.bytes = FrameBytes(std::shared_ptr<const void>(payload, payload.get()), view);
    if (more) {  // drain and flag any further parts
      frame.had_extra_parts = true;
      do {
        if (!RetryOnEintr([&] { return socket.recv(part, zmq::recv_flags::none); })) break;
      } while (part.more());
    }
    out.frame = std::move(frame);
    return out;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return out;
    return Unavailable(fmt::format("zmq receive failed: {}", e.what()));
  }
}

}  // namespace

FrameBytes::FrameBytes(std::string bytes) {
  auto owned = std::make_shared<const std::string>(std::move(bytes));
  view_ = *owned;
  owner_ = std::move(owned);
}

struct RouterChannel::Impl {
  zmq::socket_t socket;
  std::unique_ptr<SocketMonitor> monitor;
  Context::Impl* context = nullptr;
  std::string zap_domain;  // set when CURVE is on
  // The ZAP handler's word on a denial can arrive before the monitor's
  // event for it: held until the event it explains is taken.
  std::string pending_denial;
  ~Impl() {
    if (!zap_domain.empty()) context->Zap().RemoveDomain(zap_domain);
  }
};

RouterChannel::RouterChannel() = default;
RouterChannel::~RouterChannel() = default;
RouterChannel::RouterChannel(RouterChannel&&) noexcept = default;
RouterChannel& RouterChannel::operator=(RouterChannel&&) noexcept = default;

Result<RouterChannel> RouterChannel::Bind(Context& context, const std::string& endpoint,
                                          const SocketOptions& options) {
  RouterChannel channel;
  try {
    channel.impl_ = std::make_unique<Impl>();
    channel.impl_->socket = zmq::socket_t(context.impl_->context, zmq::socket_type::router);
    channel.impl_->context = context.impl_.get();
    zmq::socket_t& socket = channel.impl_->socket;
    ApplyOptions(socket, options);
    socket.set(zmq::sockopt::router_mandatory, 1);
    socket.set(zmq::sockopt::router_handover, 1);
    if (options.curve_server) {
      if (!CurveAvailable()) return Unavailable("CURVE is not available in this libzmq");
      // The ZAP handler exists before the first connection can arrive.
      channel.impl_->zap_domain =
          context.impl_->Zap().AddDomain(options.curve_server->allowed_clients);
      socket.set(zmq::sockopt::curve_server, 1);
      socket.set(zmq::sockopt::curve_secretkey, options.curve_server->keys.secret_key);
      socket.set(zmq::sockopt::zap_domain, channel.impl_->zap_domain);
    } else if (options.local_peers_only) {
      channel.impl_->zap_domain = context.impl_->Zap().AddLocalDomain();
      socket.set(zmq::sockopt::plain_server, 1);
      socket.set(zmq::sockopt::zap_domain, channel.impl_->zap_domain);
    }
    channel.impl_->monitor =
        std::make_unique<SocketMonitor>(context.impl_->context, channel.impl_->socket);
    RetryOnEintr([&] { socket.bind(endpoint); });
    channel.endpoint_ = socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Unavailable(fmt::format("cannot bind {}: {}", endpoint, e.what()));
  }
  return channel;
}

namespace {
Status ClosedRouter() { return Unavailable("the coordinator's socket is closed"); }
}  // namespace

Result<SendResult> RouterChannel::Send(const std::string& identity, const Message& message) {
  if (!impl_) return ClosedRouter();
  DFX_ASSIGN_OR_RETURN(std::string bytes, Encode(message));
  return SendMessage(impl_->socket, &identity, OwnedMessage(std::move(bytes)),
                     /*mandatory_router=*/true);
}

Result<SendResult> RouterChannel::SendRaw(const std::string& identity, std::string_view bytes) {
  if (!impl_) return ClosedRouter();
  return SendParts(impl_->socket, &identity, bytes, /*mandatory_router=*/true);
}

Result<SendResult> RouterChannel::SendEncoded(const std::string& identity, std::string&& bytes) {
  if (!impl_) return ClosedRouter();
  return SendMessage(impl_->socket, &identity, OwnedMessage(std::move(bytes)),
                     /*mandatory_router=*/true);
}

Result<Polled> RouterChannel::Receive(int timeout_ms, int wake_fd) {
  if (!impl_) {
    if (timeout_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return Polled{};
  }
  return ReceiveFrame(impl_->socket, /*router=*/true, timeout_ms, wake_fd);
}

HandshakeRefusals RouterChannel::TakeRefusals(bool read_monitor) {
  if (!impl_) return {};
  HandshakeRefusals r = impl_->monitor->Take(read_monitor);
  if (!impl_->zap_domain.empty()) {
    // The ZAP handler knows who was denied; the monitor only that someone was.
    std::string denial = impl_->context->Zap().TakeLastDenial(impl_->zap_domain);
    if (!denial.empty()) impl_->pending_denial = std::move(denial);
    if (r.count > 0 && !impl_->pending_denial.empty())
      r.last = std::exchange(impl_->pending_denial, "");
  }
  return r;
}

std::vector<int> RouterChannel::TakeDisconnects(bool read_monitor) {
  return impl_ ? impl_->monitor->TakeDisconnects(read_monitor) : std::vector<int>{};
}

void RouterChannel::ReadMonitor() {
  if (impl_) impl_->monitor->Drain();
}

void RouterChannel::Close() { impl_.reset(); }

bool RouterChannel::authenticated() const { return impl_ && !impl_->zap_domain.empty(); }

void RouterChannel::AdmitLocalPeer(const std::string& user, const std::string& token,
                                   uint32_t pid) {
  if (!impl_ || impl_->zap_domain.empty()) return;
  impl_->context->Zap().AdmitLocal(impl_->zap_domain, user, token, pid);
}

Status RouterChannel::WaitAny(RouterChannel& a, RouterChannel& b, int timeout_ms, int wake_fd) {
  std::vector<zmq::pollitem_t> items;
  for (RouterChannel* c : {&a, &b}) {
    if (c->impl_) items.push_back({c->impl_->socket.handle(), 0, ZMQ_POLLIN, 0});
  }
  if (wake_fd >= 0) items.push_back({nullptr, wake_fd, ZMQ_POLLIN, 0});
  if (items.empty()) {
    if (timeout_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return Status::Ok();
  }
  try {
    (void)zmq::poll(items.data(), items.size(), std::chrono::milliseconds(timeout_ms));
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) return Unavailable(fmt::format("zmq poll failed: {}", e.what()));
  }
  return Status::Ok();
}

struct DealerChannel::Impl {
  zmq::socket_t socket;
  std::unique_ptr<SocketMonitor> monitor;
};

DealerChannel::DealerChannel() = default;
DealerChannel::~DealerChannel() = default;
DealerChannel::DealerChannel(DealerChannel&&) noexcept = default;
DealerChannel& DealerChannel::operator=(DealerChannel&&) noexcept = default;

Result<DealerChannel> DealerChannel::Connect(Context& context, const std::string& endpoint,
                                             const std::string& identity,
                                             const SocketOptions& options) {
  DealerChannel channel;
  try {
    channel.impl_ = std::make_unique<Impl>();
    channel.impl_->socket = zmq::socket_t(context.impl_->context, zmq::socket_type::dealer);
    zmq::socket_t& socket = channel.impl_->socket;
    ApplyOptions(socket, options);
    socket.set(zmq::sockopt::routing_id, zmq::buffer(identity));
    if (options.curve_client) {
      if (!CurveAvailable()) return Unavailable("CURVE is not available in this libzmq");
      socket.set(zmq::sockopt::curve_serverkey, options.curve_client->server_public_key);
      socket.set(zmq::sockopt::curve_publickey, options.curve_client->keys.public_key);
      socket.set(zmq::sockopt::curve_secretkey, options.curve_client->keys.secret_key);
    } else if (options.plain_client) {
      socket.set(zmq::sockopt::plain_username, options.plain_client->first);
      socket.set(zmq::sockopt::plain_password, options.plain_client->second);
    }
    channel.impl_->monitor =
        std::make_unique<SocketMonitor>(context.impl_->context, channel.impl_->socket);
    // An EINTR here once failed an agent's start-up ("cannot connect ...:
    // Interrupted system call").
    RetryOnEintr([&] { socket.connect(endpoint); });
    return channel;
  } catch (const zmq::error_t& e) {
    return InvalidArgument(fmt::format("cannot connect to {}: {}", endpoint, e.what()));
  }
}

Result<SendResult> DealerChannel::Send(const Message& message) {
  DFX_ASSIGN_OR_RETURN(std::string bytes, Encode(message));
  return SendMessage(impl_->socket, nullptr, OwnedMessage(std::move(bytes)),
                     /*mandatory_router=*/false);
}

Result<SendResult> DealerChannel::SendRaw(std::string_view bytes) {
  return SendParts(impl_->socket, nullptr, bytes, /*mandatory_router=*/false);
}

Result<SendResult> DealerChannel::SendEncoded(std::string&& bytes) {
  return SendMessage(impl_->socket, nullptr, OwnedMessage(std::move(bytes)),
                     /*mandatory_router=*/false);
}

Result<Polled> DealerChannel::Receive(int timeout_ms, int wake_fd) {
  return ReceiveFrame(impl_->socket, /*router=*/false, timeout_ms, wake_fd);
}

HandshakeRefusals DealerChannel::TakeRefusals() { return impl_->monitor->Take(); }

bool DealerChannel::Handshaken() { return impl_->monitor->Handshakes() > 0; }

size_t DealerChannel::TakeDisconnects() {
  return impl_ ? impl_->monitor->TakeDisconnects().size() : 0;
}

uint64_t DealerChannel::HandshakesRead() const {
  return impl_ && impl_->monitor ? impl_->monitor->HandshakesRead() : 0;
}

std::string AgentIdentity(int32_t first_rank, uint32_t nonce) {
  return fmt::format("rank-{}.{:08x}", first_rank, nonce);
}

WakePipe::WakePipe() { DFX_CHECK(::pipe2(fds_, O_NONBLOCK | O_CLOEXEC) == 0); }

WakePipe::~WakePipe() {
  ::close(fds_[0]);
  ::close(fds_[1]);
}

void WakePipe::Notify() {
  const char byte = 1;
  // A full pipe already wakes the reader: ignore EAGAIN.
  [[maybe_unused]] ssize_t n = ::write(fds_[1], &byte, 1);
}

void WakePipe::Drain() {
  char buf[256];
  while (::read(fds_[0], buf, sizeof(buf)) > 0) {
  }
}

}  // namespace dfx::protocol
