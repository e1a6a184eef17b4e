// SASL DIGEST-MD5 client (RFC 2831), as Hadoop uses it for token
// authentication: username = base64(token identifier), password =
// base64(token password), digest-uri = protocol "/" serverId ("/default").
// The qop is the first of hadoop.rpc.protection's levels the server offers:
// auth, auth-int (HMAC-MD5 integrity) or auth-conf (3DES confidentiality);
// after auth-int or auth-conf every message goes through a DigestSecurityLayer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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

// hadoop.rpc.protection's levels: authentication, integrity, privacy.
enum class SaslQop { kAuth, kAuthInt, kAuthConf };
inline constexpr const char* kRpcProtectionKey = "hadoop.rpc.protection";
inline constexpr const char* kDefaultRpcProtection = "authentication";
// "auth", "auth-int", "auth-conf".
const char* QopName(SaslQop qop);
// A hadoop.rpc.protection value: a comma list of authentication, integrity and
// privacy (any case), in the order of preference; an unknown level is an error
// naming the setting.
Result<std::vector<SaslQop>> ParseRpcProtection(std::string_view setting);

// RFC 2831 section 2.3 (integrity) and 2.4 (confidentiality with "3des", the
// two-key DES-EDE in CBC mode: the one cipher of Java's list that OpenSSL's
// default provider has). Each direction has its own keys, sequence number and
// cipher state, so messages must be wrapped and unwrapped in order.
class DigestSecurityLayer {
 public:
  enum class Side { kClient, kServer };
  // `ha1`: the raw 16-byte H(A1) of the exchange; `qop` auth-int or auth-conf.
  static Result<std::unique_ptr<DigestSecurityLayer>> Create(Side side, std::string_view ha1,
                                                             SaslQop qop);
  ~DigestSecurityLayer();
  DigestSecurityLayer(const DigestSecurityLayer&) = delete;
  DigestSecurityLayer& operator=(const DigestSecurityLayer&) = delete;

  SaslQop qop() const { return qop_; }
  Result<std::string> Wrap(std::string_view message);
  // Checks the MAC and the sequence number (and decrypts): a message that was
  // altered, replayed, reordered or keyed otherwise is refused.
  Result<std::string> Unwrap(std::string_view token);

 private:
  struct CipherState;
  DigestSecurityLayer() = default;

  SaslQop qop_ = SaslQop::kAuthInt;
  std::string send_mac_key_, receive_mac_key_;
  uint32_t send_seq_ = 0, receive_seq_ = 0;
  std::unique_ptr<CipherState> send_cipher_, receive_cipher_;  // auth-conf only
};

class DigestMd5Client {
 public:
  // `protocol` and `server_id` form the digest-uri ("imap" and
  // "elwood.innosoft.com" give "imap/elwood.innosoft.com"). `cnonce` is
  // random unless given (tests).
  DigestMd5Client(std::string username, std::string password, std::string protocol,
                  std::string server_id, std::string cnonce = "");
  // For a Hadoop token: base64 of its identifier and password.
  static DigestMd5Client ForToken(const Token& token, std::string protocol, std::string server_id);

  // The levels the client accepts, in preference order ({auth} by default).
  void SetAllowedQops(std::vector<SaslQop> allowed) { allowed_ = std::move(allowed); }
  // The response to the server's first challenge.
  Result<std::string> Respond(std::string_view challenge);
  // Checks the server's final "rspauth=..." (proves the server knew the password).
  Status Verify(std::string_view server_final) const;
  bool complete() const { return verified_; }
  // The negotiated level (after Respond), and the server's maxbuf (65536 unless it said).
  SaslQop qop() const { return qop_; }
  size_t server_maxbuf() const { return server_maxbuf_; }
  // The security layer for auth-int and auth-conf once complete(); nullptr for auth.
  Result<std::unique_ptr<DigestSecurityLayer>> SecurityLayer() const;

 private:
  std::string A2Suffix() const;

  std::string username_, password_, digest_uri_, cnonce_;
  std::vector<SaslQop> allowed_ = {SaslQop::kAuth};
  std::string ha1_, nonce_;  // kept for the rspauth check and the layer's keys
  SaslQop qop_ = SaslQop::kAuth;
  size_t server_maxbuf_ = 65536;
  std::string nc_ = "00000001";
  mutable bool verified_ = false;
};

}  // namespace tarn::cluster::yarn
