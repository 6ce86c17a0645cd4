#include "protocol/channel.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <zmq.hpp>

#include "protocol/codec.h"

namespace dfx::protocol {

struct Context::Impl {
  zmq::context_t context{1};
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
}

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
      auto sent =
          socket.send(zmq::buffer(*identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      if (!sent) return SendResult::kWouldBlock;
    }
    auto sent = socket.send(payload, zmq::send_flags::dontwait);
    if (!sent) return SendResult::kWouldBlock;
    return SendResult::kSent;
  } catch (const zmq::error_t& e) {
    if (mandatory_router && e.num() == EHOSTUNREACH) return SendResult::kUnroutable;
    return Unavailable(fmt::format("zmq send failed: {}", e.what()));
  }
}

Result<SendResult> SendParts(zmq::socket_t& socket, const std::string* identity,
                             std::string_view bytes, bool mandatory_router) {
  try {
    if (identity != nullptr) {
      auto sent =
          socket.send(zmq::buffer(*identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      if (!sent) return SendResult::kWouldBlock;
    }
    auto sent = socket.send(zmq::buffer(bytes.data(), bytes.size()), zmq::send_flags::dontwait);
    if (!sent) return SendResult::kWouldBlock;
    return SendResult::kSent;
  } catch (const zmq::error_t& e) {
    if (mandatory_router && e.num() == EHOSTUNREACH) return SendResult::kUnroutable;
    return Unavailable(fmt::format("zmq send failed: {}", e.what()));
  }
}

Result<Polled> ReceiveFrame(zmq::socket_t& socket, bool router, int timeout_ms, int wake_fd) {
  Polled out;
  try {
    zmq::pollitem_t items[2] = {{socket.handle(), 0, ZMQ_POLLIN, 0},
                                {nullptr, wake_fd, ZMQ_POLLIN, 0}};
    const int count = wake_fd >= 0 ? 2 : 1;
    int rc = zmq::poll(items, count, std::chrono::milliseconds(timeout_ms));
    if (rc <= 0) return out;
    if (count == 2 && (items[1].revents & ZMQ_POLLIN)) out.woken = true;
    if (!(items[0].revents & ZMQ_POLLIN)) return out;
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
    auto payload = std::make_shared<zmq::message_t>();
    if (!socket.recv(*payload, zmq::recv_flags::none)) return out;
    const std::string_view view(static_cast<const char*>(payload->data()), payload->size());
    const bool more = payload->more();
    frame.bytes = FrameBytes(std::shared_ptr<const void>(payload, payload.get()), view);
    if (more) {  // drain and flag any further parts
      frame.had_extra_parts = true;
      do {
        if (!socket.recv(part, zmq::recv_flags::none)) break;
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
};

RouterChannel::RouterChannel() = default;
RouterChannel::~RouterChannel() = default;
RouterChannel::RouterChannel(RouterChannel&&) noexcept = default;
RouterChannel& RouterChannel::operator=(RouterChannel&&) noexcept = default;

Result<RouterChannel> RouterChannel::Bind(Context& context, const std::string& endpoint,
                                          const SocketOptions& options) {
  RouterChannel channel;
  try {
    channel.impl_ = std::make_unique<Impl>(
        Impl{zmq::socket_t(context.impl_->context, zmq::socket_type::router)});
    zmq::socket_t& socket = channel.impl_->socket;
    ApplyOptions(socket, options);
    socket.set(zmq::sockopt::router_mandatory, 1);
    socket.set(zmq::sockopt::router_handover, 1);
    socket.bind(endpoint);
    channel.endpoint_ = socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Unavailable(fmt::format("cannot bind {}: {}", endpoint, e.what()));
  }
  return channel;
}

Result<SendResult> RouterChannel::Send(const std::string& identity, const Message& message) {
  DFX_ASSIGN_OR_RETURN(std::string bytes, Encode(message));
  return SendMessage(impl_->socket, &identity, OwnedMessage(std::move(bytes)),
                     /*mandatory_router=*/true);
}

Result<SendResult> RouterChannel::SendRaw(const std::string& identity, std::string_view bytes) {
  return SendParts(impl_->socket, &identity, bytes, /*mandatory_router=*/true);
}

Result<SendResult> RouterChannel::SendEncoded(const std::string& identity, std::string&& bytes) {
  return SendMessage(impl_->socket, &identity, OwnedMessage(std::move(bytes)),
                     /*mandatory_router=*/true);
}

Result<Polled> RouterChannel::Receive(int timeout_ms, int wake_fd) {
  return ReceiveFrame(impl_->socket, /*router=*/true, timeout_ms, wake_fd);
}

struct DealerChannel::Impl {
  zmq::socket_t socket;
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
    channel.impl_ = std::make_unique<Impl>(
        Impl{zmq::socket_t(context.impl_->context, zmq::socket_type::dealer)});
    zmq::socket_t& socket = channel.impl_->socket;
    ApplyOptions(socket, options);
    socket.set(zmq::sockopt::routing_id, zmq::buffer(identity));
    socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    return InvalidArgument(fmt::format("cannot connect to {}: {}", endpoint, e.what()));
  }
  return channel;
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

std::string AgentIdentity(int32_t first_rank) { return fmt::format("rank-{}", first_rank); }

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
