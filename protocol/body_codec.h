// The message bodies between the wire's Cap'n Proto structs
// (protocol/dfx.capnp) and the C++ ones (messages.h): one encoder, one
// decoder, a case per message type. Internal to protocol/: codec.cc frames
// the envelope around them and checks the size limits first.
#pragma once

#include "common/status.h"
#include "protocol/dfx.capnp.h"
#include "protocol/messages.h"

namespace dfx::protocol {

// Writes `body` into the envelope's body union.
void EncodeBody(const Body& body, wire::Envelope::Body::Builder b);

// Reads the envelope's body union. Error: an enum value or a list length
// out of range, a missing struct, or a message type this build does not know.
Result<Body> DecodeBody(wire::Envelope::Body::Reader b);

}  // namespace dfx::protocol
