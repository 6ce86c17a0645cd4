#include "protocol/channel.h"

#include <gtest/gtest.h>

#include <cstring>

#include "protocol/codec.h"

namespace dfx::protocol {
namespace {

Result<Polled> ReceiveWithin(RouterChannel& router, int ms) {
  for (int waited = 0; waited < ms; waited += 50) {
    auto r = router.Receive(50);
    if (!r.ok() || r->frame) return r;
  }
  return Polled{};
}

TEST(ChannelTest, DealerAndRouterExchangeMessages) {
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok()) << router.status().ToString();
  EXPECT_NE(router->endpoint().find("tcp://127.0.0.1:"), std::string::npos);
  EXPECT_EQ(router->endpoint().find(":0"), std::string::npos) << "ephemeral port not resolved";

  auto dealer = DealerChannel::Connect(context, router->endpoint(), AgentIdentity(7, 1));
  ASSERT_TRUE(dealer.ok());
  Message hello{Header{kProtocolVersion, 0, 7, 1}, Hello{{7}, 1, kProtocolVersion, 0, "h", 1}};
  auto sent = dealer->Send(hello);
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, SendResult::kSent);

  auto got = ReceiveWithin(*router, 10000);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->frame.has_value()) << "no frame within the deadline";
  EXPECT_EQ(got->frame->identity, "rank-7.00000001");
  auto decoded = Decode(got->frame->bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(std::holds_alternative<Hello>(decoded->body));

  auto reply =
      router->Send(got->frame->identity, Message{Header{kProtocolVersion, 5, 7, 1}, Credit{4}});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(*reply, SendResult::kSent);
  std::optional<Frame> back;
  for (int i = 0; i < 200 && !back; ++i) {
    auto r = dealer->Receive(50);
    ASSERT_TRUE(r.ok());
    back = r->frame;
  }
  ASSERT_TRUE(back.has_value());
  auto credit = Decode(back->bytes);
  ASSERT_TRUE(credit.ok());
  EXPECT_EQ(std::get<Credit>(credit->body).chunks, 4u);
}

// The gather's zero-copy path: a full-size chunk sent without a copy
// arrives word-aligned inside its ZeroMQ message, so the receiver decodes it
// in place (DecodeChunkView) and the data is never copied.
TEST(ChannelTest, LargeChunksArriveDecodableInPlace) {
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok());
  auto dealer = DealerChannel::Connect(context, router->endpoint(), AgentIdentity(1, 2));
  ASSERT_TRUE(dealer.ok());
  const std::string payload(kDefaultChunkBytes, 'q');
  auto frame = EncodeChunk(Header{kProtocolVersion, 5, 1, 1}, 3, 0, payload.size(),
                           [&](char* dst, size_t size) -> Result<size_t> {
                             std::memcpy(dst, payload.data(), size);
                             return size;
                           });
  ASSERT_TRUE(frame.ok());
  auto sent = dealer->SendEncoded(std::move(*frame));
  ASSERT_TRUE(sent.ok());
  EXPECT_EQ(*sent, SendResult::kSent);
  auto got = ReceiveWithin(*router, 10000);
  ASSERT_TRUE(got.ok() && got->frame.has_value());
  FrameBytes bytes = got->frame->bytes;  // a copy shares the message
  auto view = DecodeChunkView(bytes);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_TRUE(view->has_value()) << "the frame is not word-aligned: the zero-copy path is lost";
  EXPECT_EQ((*view)->transfer_id, 3u);
  EXPECT_EQ((*view)->data, payload);
  EXPECT_GE((*view)->data.data(), bytes.data());
  EXPECT_LT((*view)->data.data(), bytes.data() + bytes.size());
}

TEST(ChannelTest, SendingToAnUnknownPeerIsAValueNotAnError) {
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok());
  auto r = router->SendRaw("nobody", "xxxxxxxx");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, SendResult::kUnroutable);
}

TEST(ChannelTest, WakePipeInterruptsAWait) {
  Context context;
  auto router = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(router.ok());
  WakePipe wake;
  wake.Notify();
  auto r = router->Receive(10000, wake.read_fd());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->woken);
  EXPECT_FALSE(r->frame.has_value());
  wake.Drain();
}

TEST(ChannelTest, BindingABusyEndpointNamesIt) {
  Context context;
  auto first = RouterChannel::Bind(context, "tcp://127.0.0.1:0");
  ASSERT_TRUE(first.ok());
  auto second = RouterChannel::Bind(context, first->endpoint());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(first->endpoint()), std::string::npos);
}

}  // namespace
}  // namespace dfx::protocol
