// SASL DIGEST-MD5 client (RFC 2831), as Hadoop uses it for token
// authentication: username = base64(token identifier), password =
// base64(token password), digest-uri = protocol "/" serverId ("/default"),
// qop "auth". Integrity and privacy (auth-int, auth-conf) are refused with a
// clear error: they need SASL wrapping of every frame, which tarn does not do.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "cluster/yarn/protobuf_records.h"
#include "common/status.h"

namespace tarn::cluster::yarn {

std::string Base64Encode(std::string_view bytes);
std::string HexEncode(std::string_view bytes);
std::string Md5(std::string_view bytes);  // the raw 16-byte digest

// Parses a DIGEST-MD5 challenge or response: comma-separated key=value or
// key="quoted value" directives (backslash escapes). Keys are lower-cased; a
// repeated key (realm) keeps the first value.
Result<std::map<std::string, std::string>> ParseDigestDirectives(std::string_view text);

class DigestMd5Client {
 public:
  // `protocol` and `server_id` form the digest-uri ("imap" and
  // "elwood.innosoft.com" give "imap/elwood.innosoft.com"). `cnonce` is
  // random unless given (tests).
  DigestMd5Client(std::string username, std::string password, std::string protocol,
                  std::string server_id, std::string cnonce = "");
  // For a Hadoop token: base64 of its identifier and password.
  static DigestMd5Client ForToken(const Token& token, std::string protocol, std::string server_id);

  // The response to the server's first challenge.
  Result<std::string> Respond(std::string_view challenge);
  // Checks the server's final "rspauth=..." (proves the server knew the password).
  Status Verify(std::string_view server_final) const;
  bool complete() const { return verified_; }

 private:
  std::string username_, password_, digest_uri_, cnonce_;
  std::string ha1_hex_, nonce_, qop_;  // kept for the rspauth check
  std::string nc_ = "00000001";
  mutable bool verified_ = false;
};

}  // namespace tarn::cluster::yarn
