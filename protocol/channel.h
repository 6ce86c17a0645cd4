// ZeroMQ channel helpers (docs/design.md §7): the coordinator binds one ROUTER,
// agents connect DEALER sockets whose identity is derived from their rank.
//
// Thin RAII wrappers: cppzmq never leaves protocol/. Ownership: a Context is
// shared by the sockets of one process and must outlive them. A socket
// (RouterChannel, DealerChannel) is move-only and must be used by ONE thread
// at a time (the thread that owns its event loop). Would-block is a value
// (SendResult::kWouldBlock), not an error. Every receive has a timeout.
// Receivers cap the frame size (ZMQ_MAXMSGSIZE, kMaxFrameBytes unless the
// owner asks for less): a peer that sends more is disconnected by ZeroMQ
// before anything is buffered. A connection that has not completed its
// handshake within SocketOptions::handshake_ms is closed (ZMQ_HANDSHAKE_IVL),
// so half-open connections cannot hold descriptors for long.
//
// Access (docs/design.md §7): a RouterChannel bound with a CurveServer speaks
// CURVE and admits only the client keys it was given (a ZAP handler thread
// owned by the Context answers libzmq's requests); a DealerChannel with a
// CurveClient pins the server's key. A refused peer learns nothing: its
// handshake fails before any message is read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "protocol/curve.h"
#include "protocol/messages.h"

namespace dfx::protocol {

// One ZeroMQ context; it also owns the ZAP handler (started by the first
// RouterChannel bound with a CurveServer), which must end before the
// context does.
class Context {
 public:
  Context();
  ~Context();
  Context(Context&&) noexcept;
  Context& operator=(Context&&) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  friend class RouterChannel;
  friend class DealerChannel;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

enum class SendResult {
  kSent,
  kWouldBlock,  // the peer's queue is full (high-water mark); try later
  kUnroutable,  // ROUTER: no connected peer has that identity
};

// The bytes of one received frame. They stay in the ZeroMQ message they
// were received in (no copy); a FrameBytes shares ownership of that message,
// so copies are cheap and any copy keeps the bytes alive. Immutable: safe to
// read from any thread (e.g. handed to a writer thread).
class FrameBytes {
 public:
  FrameBytes() = default;
  explicit FrameBytes(std::string bytes);  // owns a copy (tests, in-memory frames)
  FrameBytes(std::shared_ptr<const void> owner, std::string_view view)
      : owner_(std::move(owner)), view_(view) {}
  const char* data() const { return view_.data(); }
  size_t size() const { return view_.size(); }
  bool empty() const { return view_.empty(); }
  std::string_view view() const { return view_; }
  operator std::string_view() const { return view_; }  // NOLINT: pass to Decode as is
  std::string str() const { return std::string(view_); }

 private:
  std::shared_ptr<const void> owner_;
  std::string_view view_;
};

// One received frame: the raw bytes (decode them with protocol::Decode, or
// protocol::DecodeChunkView for artifact data) and, on a ROUTER, the
// sender's identity.
struct Frame {
  std::string identity;
  FrameBytes bytes;
  bool had_extra_parts = false;  // a multipart message (never sent by our peers): reject it
  // ROUTER only: the address the sender's connection comes from (ZeroMQ's
  // "Peer-Address", e.g. "10.0.0.2"; empty when unknown) and that
  // connection's descriptor (ZMQ_SRCFD), which ties the sender to a later
  // disconnect event (RouterChannel::TakeDisconnects).
  std::string peer_address;
  int connection_fd = -1;
  // ROUTER only: the user the ZAP handler admitted the connection as
  // ("User-Id"; a local_peers_only router: the PLAIN user name); empty
  // without ZAP.
  std::string user_id;
};

// What one wait produced.
struct Polled {
  std::optional<Frame> frame;  // set when a frame arrived
  bool woken = false;          // the wake fd became readable
};

struct SocketOptions {
  int linger_ms = 2000;        // how long close() waits to flush queued messages
  int send_high_water = 1000;  // messages queued per peer before send would block
  int receive_high_water = 1000;
  int64_t max_message_bytes = static_cast<int64_t>(kMaxFrameBytes);
  // ZMQ_HANDSHAKE_IVL: a connection whose ZMTP/CURVE handshake has not
  // completed by then is closed.
  int handshake_ms = 5000;
  // RouterChannel::Bind only: speak CURVE as this server and admit only its
  // allowed clients. Unset: no authentication (loopback-only use).
  std::optional<CurveServer> curve_server;
  // DealerChannel::Connect only: speak CURVE with this pair and pin the
  // server's key. Unset: no authentication.
  std::optional<CurveClient> curve_client;
  // RouterChannel::Bind only, for an ipc:// endpoint in a 0700 directory
  // (the local bulk path, docs/design.md §7): admit only peers whose kernel
  // credentials (SO_PEERCRED, which libzmq puts into the ZAP request's
  // address as ":uid:gid:pid") carry this process's uid, and whose PLAIN
  // user name and password are a pair given to AdmitLocalPeer, from the
  // pid given with it. Nothing is admitted until then.
  bool local_peers_only = false;
  // DealerChannel::Connect only: PLAIN user name and password (the local
  // bulk path: the agent's identity and the token it was offered).
  std::optional<std::pair<std::string, std::string>> plain_client;
};

// Connections refused at the handshake since the last TakeRefusals: no
// CURVE, a key the server does not admit, a server that is not the one
// pinned, a handshake that timed out. `last` says what the last one was.
struct HandshakeRefusals {
  uint64_t count = 0;
  std::string last;
  // The last one was the server's ZAP handler denying this socket's key
  // (ZMQ_EVENT_HANDSHAKE_FAILED_AUTH): the server is the pinned one, but
  // it does not admit this key (yet).
  bool last_denied_key = false;
};

class RouterChannel {
 public:
  // Binds `endpoint` (e.g. "tcp://127.0.0.1:0" for an ephemeral port).
  static Result<RouterChannel> Bind(Context& context, const std::string& endpoint,
                                    const SocketOptions& options = {});
  RouterChannel();
  ~RouterChannel();
  RouterChannel(RouterChannel&&) noexcept;
  RouterChannel& operator=(RouterChannel&&) noexcept;

  // The bound endpoint with the real port, e.g. "tcp://127.0.0.1:41235".
  const std::string& endpoint() const { return endpoint_; }

  Result<SendResult> Send(const std::string& identity, const Message& message);
  Result<SendResult> SendRaw(const std::string& identity, std::string_view bytes);
  // Sends an already encoded frame without copying it (ZeroMQ frees it once
  // sent). On kWouldBlock the bytes are gone: encode again to retry.
  Result<SendResult> SendEncoded(const std::string& identity, std::string&& bytes);
  // Waits up to `timeout_ms` (0 = poll) for a frame or for `wake_fd` (-1 =
  // none) to become readable. The caller drains the wake fd. Connection
  // events (TakeRefusals, TakeDisconnects) do not end the wait: they are
  // read when asked for.
  Result<Polled> Receive(int timeout_ms, int wake_fd = -1);
  // Peers turned away at the handshake since the last call (never a
  // message: they were not admitted); the owner logs them.
  // `read_monitor`: read the socket monitor first (a system call); false
  // takes only what ReadMonitor or an earlier Take* read.
  HandshakeRefusals TakeRefusals(bool read_monitor = true);
  // The descriptors of connections that closed since the last call (the
  // socket monitor's ZMQ_EVENT_DISCONNECTED), in order: a sender whose
  // Frame::connection_fd is among them is gone at once, whatever its
  // heartbeat deadline says. `read_monitor` as for TakeRefusals.
  std::vector<int> TakeDisconnects(bool read_monitor = true);
  // Reads the socket monitor's queued events for the Take* calls after it:
  // an event loop reads it once a turn, not once per Take*.
  void ReadMonitor();
  // True when bound with a CurveServer.
  bool authenticated() const;
  // local_peers_only: admits the peer that presents `user` and `token`
  // from process `pid` (0 = any pid of this uid); replaces an earlier pair
  // of the same user.
  void AdmitLocalPeer(const std::string& user, const std::string& token, uint32_t pid);
  // Waits up to `timeout_ms` until `a` or `b` has a frame to read or
  // `wake_fd` (-1 = none) is readable; Receive(0) on each takes what came.
  static Status WaitAny(RouterChannel& a, RouterChannel& b, int timeout_ms, int wake_fd);
  // Stops listening: the socket and every connection it holds (admitted or
  // half-open) are closed and their descriptors freed. Sends fail and
  // receives time out from then on; endpoint() still names where it was.
  void Close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string endpoint_;
};

class DealerChannel {
 public:
  // Connects to `endpoint` with routing identity `identity`. Returns at once:
  // ZeroMQ connects (and reconnects) in the background.
  static Result<DealerChannel> Connect(Context& context, const std::string& endpoint,
                                       const std::string& identity,
                                       const SocketOptions& options = {});
  DealerChannel();
  ~DealerChannel();
  DealerChannel(DealerChannel&&) noexcept;
  DealerChannel& operator=(DealerChannel&&) noexcept;

  Result<SendResult> Send(const Message& message);
  Result<SendResult> SendRaw(std::string_view bytes);
  // As RouterChannel::SendEncoded.
  Result<SendResult> SendEncoded(std::string&& bytes);
  Result<Polled> Receive(int timeout_ms, int wake_fd = -1);
  // Handshakes with the server that failed since the last call (a server
  // that does not admit this key, or that is not the one pinned).
  HandshakeRefusals TakeRefusals();
  // Whether a handshake with the server has completed (the server admitted
  // this socket: messages sent now are delivered). Drains the events, so
  // call TakeRefusals first to keep the refusals among them.
  bool Handshaken();
  // How many times its connection to the server closed since the last call
  // (ZeroMQ reconnects by itself; what was in flight may be lost).
  size_t TakeDisconnects();

  // Handshakes completed on this socket so far (its first connection and
  // every reconnection), as far as the monitor was read (TakeRefusals,
  // Handshaken); 0 for a socket not connected.
  uint64_t HandshakesRead() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "rank-<R>.<nonce hex>": the DEALER identity of the agent whose first rank
// is R. The nonce (random per agent process) keeps two agents that claim the
// same rank apart, so the second is answered (and refused) instead of taking
// over the first one's route.
std::string AgentIdentity(int32_t first_rank, uint32_t nonce);

// A pipe to wake a thread blocked in Receive from another thread.
// Thread-safe: Notify from any thread; Drain from the owning thread.
class WakePipe {
 public:
  WakePipe();
  ~WakePipe();
  WakePipe(const WakePipe&) = delete;
  WakePipe& operator=(const WakePipe&) = delete;
  int read_fd() const { return fds_[0]; }
  void Notify();
  void Drain();

 private:
  int fds_[2] = {-1, -1};
};

}  // namespace dfx::protocol
