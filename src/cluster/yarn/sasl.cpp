#include "cluster/yarn/sasl.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <random>

#include "common/strings.h"
#include "net/hmac.h"

namespace tarn::cluster::yarn {

namespace {

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// RFC 2831 section 2.3-2.4: the magic constants that derive each direction's keys.
constexpr const char* kClientSigning =
    "Digest session key to client-to-server signing key magic constant";
constexpr const char* kServerSigning =
    "Digest session key to server-to-client signing key magic constant";
constexpr const char* kClientSealing =
    "Digest H(A1) to client-to-server sealing key magic constant";
constexpr const char* kServerSealing =
    "Digest H(A1) to server-to-client sealing key magic constant";
constexpr size_t kMacBytes = 10;     // HMAC-MD5 truncated to its first 10 bytes
constexpr size_t kTrailerBytes = 6;  // message type 0x0001, then the 4-byte sequence number
constexpr size_t kDesBlock = 8;

std::string BigEndian32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

uint32_t ReadBigEndian32(std::string_view b) {
  return (uint32_t{static_cast<uint8_t>(b[0])} << 24) |
         (uint32_t{static_cast<uint8_t>(b[1])} << 16) |
         (uint32_t{static_cast<uint8_t>(b[2])} << 8) | uint32_t{static_cast<uint8_t>(b[3])};
}

// HMAC-MD5(key, seq || message), first 10 bytes.
std::string Mac(const std::string& key, uint32_t seq, std::string_view message) {
  const std::string data = BigEndian32(seq) + std::string(message);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_md5(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), kMacBytes);
}

// 56 key bits (7 bytes) spread over 8 bytes, 7 bits each from the top, the low bit of
// each byte set for odd parity: a DES key.
std::string DesKeyWithParity(std::string_view seven) {
  uint64_t bits = 0;
  for (char c : seven.substr(0, 7)) bits = (bits << 8) | static_cast<uint8_t>(c);
  std::string key(8, '\0');
  for (int i = 0; i < 8; ++i) {
    uint8_t b = static_cast<uint8_t>(((bits >> (49 - 7 * i)) & 0x7F) << 1);
    if (__builtin_popcount(b) % 2 == 0) b |= 1;
    key[i] = static_cast<char>(b);
  }
  return key;
}

}  // namespace

const char* QopName(SaslQop qop) {
  switch (qop) {
    case SaslQop::kAuth:
      return "auth";
    case SaslQop::kAuthInt:
      return "auth-int";
    case SaslQop::kAuthConf:
      return "auth-conf";
  }
  return "auth";
}

Result<std::vector<SaslQop>> ParseRpcProtection(std::string_view setting) {
  std::vector<SaslQop> out;
  for (const auto& item : Split(setting, ",")) {
    const std::string level = ToLower(Trim(item));
    if (level.empty()) continue;
    SaslQop qop;
    if (level == "authentication") {
      qop = SaslQop::kAuth;
    } else if (level == "integrity") {
      qop = SaslQop::kAuthInt;
    } else if (level == "privacy") {
      qop = SaslQop::kAuthConf;
    } else {
      return InvalidArgument(std::string(kRpcProtectionKey) + ": unknown level '" + level +
                             "' in '" + std::string(setting) +
                             "' (authentication, integrity or privacy)");
    }
    if (std::find(out.begin(), out.end(), qop) == out.end()) out.push_back(qop);
  }
  if (out.empty()) {
    return InvalidArgument(std::string(kRpcProtectionKey) +
                           " is empty (authentication, "
                           "integrity or privacy)");
  }
  return out;
}

struct DigestSecurityLayer::CipherState {
  EVP_CIPHER_CTX* ctx = nullptr;
  ~CipherState() { EVP_CIPHER_CTX_free(ctx); }
};

DigestSecurityLayer::~DigestSecurityLayer() = default;

Result<std::unique_ptr<DigestSecurityLayer>> DigestSecurityLayer::Create(Side side,
                                                                         std::string_view ha1,
                                                                         SaslQop qop) {
  if (qop == SaslQop::kAuth) return InvalidArgument("DIGEST-MD5: qop auth has no security layer");
  if (ha1.size() != 16) return InvalidArgument("DIGEST-MD5: H(A1) must be 16 bytes");
  std::unique_ptr<DigestSecurityLayer> layer(new DigestSecurityLayer());
  layer->qop_ = qop;
  const bool client = side == Side::kClient;
  const std::string h(ha1);
  layer->send_mac_key_ = Md5(h + (client ? kClientSigning : kServerSigning));
  layer->receive_mac_key_ = Md5(h + (client ? kServerSigning : kClientSigning));
  if (qop == SaslQop::kAuthConf) {
    // 3des: the key is the sealing key's first 14 bytes as two DES keys (k1 k2 k1), the IV
    // its last 8 bytes; the CBC state runs on from message to message.
    const auto make = [&](const char* magic, bool encrypt) -> Result<std::unique_ptr<CipherState>> {
      const std::string kc = Md5(h + magic);
      const std::string k1 = DesKeyWithParity(std::string_view(kc).substr(0, 7));
      const std::string k2 = DesKeyWithParity(std::string_view(kc).substr(7, 7));
      const std::string key = k1 + k2 + k1;
      auto state = std::make_unique<CipherState>();
      state->ctx = EVP_CIPHER_CTX_new();
      if (!state->ctx ||
          EVP_CipherInit_ex(state->ctx, EVP_des_ede3_cbc(), nullptr,
                            reinterpret_cast<const unsigned char*>(key.data()),
                            reinterpret_cast<const unsigned char*>(kc.data() + 8),
                            encrypt ? 1 : 0) != 1 ||
          EVP_CIPHER_CTX_set_padding(state->ctx, 0) != 1) {
        return Unsupported(
            "DIGEST-MD5 auth-conf needs 3DES (DES-EDE3-CBC), which this OpenSSL does not "
            "provide; set hadoop.rpc.protection to integrity or authentication");
      }
      return state;
    };
    TARN_ASSIGN_OR_RETURN(layer->send_cipher_, make(client ? kClientSealing : kServerSealing,
                                                    /*encrypt=*/true));
    TARN_ASSIGN_OR_RETURN(layer->receive_cipher_, make(client ? kServerSealing : kClientSealing,
                                                       /*encrypt=*/false));
  }
  return layer;
}

Result<std::string> DigestSecurityLayer::Wrap(std::string_view message) {
  const uint32_t seq = send_seq_++;
  std::string mac = Mac(send_mac_key_, seq, message);
  const std::string trailer = std::string("\x00\x01", 2) + BigEndian32(seq);
  if (qop_ == SaslQop::kAuthInt) return std::string(message) + mac + trailer;
  // Pad so that message, padding and MAC fill whole blocks; each pad byte is the pad length.
  const size_t pad = kDesBlock - (message.size() + kMacBytes) % kDesBlock;
  std::string plain = std::string(message) + std::string(pad, static_cast<char>(pad)) + mac;
  std::string sealed(plain.size(), '\0');
  int written = 0;
  if (EVP_CipherUpdate(send_cipher_->ctx, reinterpret_cast<unsigned char*>(sealed.data()), &written,
                       reinterpret_cast<const unsigned char*>(plain.data()),
                       static_cast<int>(plain.size())) != 1 ||
      static_cast<size_t>(written) != plain.size()) {
    return Internal("DIGEST-MD5: 3DES encryption failed");
  }
  return sealed + trailer;
}

Result<std::string> DigestSecurityLayer::Unwrap(std::string_view token) {
  const bool conf = qop_ == SaslQop::kAuthConf;
  const size_t min = conf ? kDesBlock + kTrailerBytes : kMacBytes + kTrailerBytes;
  if (token.size() < min || (conf && (token.size() - kTrailerBytes) % kDesBlock != 0)) {
    return Corrupt("DIGEST-MD5 " + std::string(QopName(qop_)) + ": a wrapped message of " +
                   std::to_string(token.size()) + " bytes is malformed");
  }
  const std::string_view trailer = token.substr(token.size() - kTrailerBytes);
  const uint32_t seq = ReadBigEndian32(trailer.substr(2));
  if (trailer[0] != 0 || trailer[1] != 1) {
    return Corrupt("DIGEST-MD5: a wrapped message has message type " +
                   HexEncode(trailer.substr(0, 2)) + ", not 0001");
  }
  if (seq != receive_seq_) {
    return PermissionDenied("DIGEST-MD5: a wrapped message has sequence number " +
                            std::to_string(seq) + ", expected " + std::to_string(receive_seq_) +
                            " (replayed, reordered or lost)");
  }
  std::string body(token.substr(0, token.size() - kTrailerBytes));
  if (conf) {
    std::string plain(body.size(), '\0');
    int written = 0;
    if (EVP_CipherUpdate(receive_cipher_->ctx, reinterpret_cast<unsigned char*>(plain.data()),
                         &written, reinterpret_cast<const unsigned char*>(body.data()),
                         static_cast<int>(body.size())) != 1 ||
        static_cast<size_t>(written) != body.size()) {
      return Internal("DIGEST-MD5: 3DES decryption failed");
    }
    body = std::move(plain);
  }
  if (body.size() < kMacBytes) return Corrupt("DIGEST-MD5: a wrapped message without its MAC");
  const std::string mac = body.substr(body.size() - kMacBytes);
  body.resize(body.size() - kMacBytes);
  if (conf) {
    const size_t pad = body.empty() ? 0 : static_cast<uint8_t>(body.back());
    bool padding_ok = pad >= 1 && pad <= kDesBlock && pad <= body.size();
    for (size_t i = 0; padding_ok && i < pad; ++i) {
      padding_ok = static_cast<uint8_t>(body[body.size() - 1 - i]) == pad;
    }
    if (!padding_ok) {
      return PermissionDenied(
          "DIGEST-MD5 auth-conf: a message does not decrypt (wrong key or "
          "altered)");
    }
    body.resize(body.size() - pad);
  }
  const std::string expected = Mac(receive_mac_key_, seq, body);
  if (!net::ConstantTimeEqual(expected.data(), mac.data(), kMacBytes)) {
    return PermissionDenied("DIGEST-MD5 " + std::string(QopName(qop_)) +
                            ": a wrapped message's MAC does not match (altered, or keyed "
                            "otherwise)");
  }
  ++receive_seq_;
  return body;
}

std::string Base64Encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out.push_back(kAlphabet[(n >> shift) & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    out.push_back(kDigits[static_cast<uint8_t>(c) >> 4]);
    out.push_back(kDigits[static_cast<uint8_t>(c) & 15]);
  }
  return out;
}

std::string Md5(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest fails only when the library cannot allocate; MD5 is built in.
  const int ok = EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_md5(), nullptr);
  assert(ok == 1 && len == 16);
  (void)ok;
  return std::string(reinterpret_cast<const char*>(digest), len);
}

Result<std::map<std::string, std::string>> ParseDigestDirectives(std::string_view text) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  const auto skip_blanks = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == ',')) ++i;
  };
  skip_blanks();
  while (i < text.size()) {
    const size_t key_start = i;
    while (i < text.size() && text[i] != '=' && text[i] != ',') ++i;
    if (i >= text.size() || text[i] != '=') {
      return InvalidArgument("DIGEST-MD5: directive without '=' at offset " +
                             std::to_string(key_start) + " of '" + std::string(text) + "'");
    }
    const std::string key = ToLower(Trim(text.substr(key_start, i - key_start)));
    ++i;  // '='
    std::string value;
    if (i < text.size() && text[i] == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        char c = text[i++];
        if (c == '\\' && i < text.size()) {
          value.push_back(text[i++]);
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          value.push_back(c);
        }
      }
      if (!closed) {
        return InvalidArgument("DIGEST-MD5: unterminated quoted value of '" + key + "'");
      }
    } else {
      const size_t start = i;
      while (i < text.size() && text[i] != ',') ++i;
      value = std::string(Trim(text.substr(start, i - start)));
    }
    out.emplace(key, std::move(value));  // keeps the first of repeated keys
    skip_blanks();
  }
  return out;
}

DigestMd5Client::DigestMd5Client(std::string username, std::string password, std::string protocol,
                                 std::string server_id, std::string cnonce)
    : username_(std::move(username)),
      password_(std::move(password)),
      digest_uri_(protocol + "/" + server_id),
      cnonce_(std::move(cnonce)) {
  if (cnonce_.empty()) {
    unsigned char random[18];
    if (RAND_bytes(random, sizeof(random)) != 1) {
      std::random_device rd;
      for (auto& b : random) b = static_cast<unsigned char>(rd());
    }
    cnonce_ = Base64Encode(std::string_view(reinterpret_cast<char*>(random), sizeof(random)));
  }
}

DigestMd5Client DigestMd5Client::ForToken(const Token& token, std::string protocol,
                                          std::string server_id) {
  return DigestMd5Client(Base64Encode(token.identifier), Base64Encode(token.password),
                         std::move(protocol), std::move(server_id));
}

Result<std::string> DigestMd5Client::Respond(std::string_view challenge) {
  TARN_ASSIGN_OR_RETURN(auto d, ParseDigestDirectives(challenge));
  if (!d.count("nonce") || d["nonce"].empty()) {
    return InvalidArgument("DIGEST-MD5 challenge without a nonce: '" + std::string(challenge) +
                           "'");
  }
  if (d.count("algorithm") && !EqualsIgnoreCase(d["algorithm"], "md5-sess")) {
    return Unsupported("DIGEST-MD5 challenge asks for algorithm '" + d["algorithm"] +
                       "' (RFC 2831 requires md5-sess)");
  }
  const std::string offered = d.count("qop") ? d["qop"] : "auth";
  std::vector<std::string> offered_qops;
  for (const auto& q : Split(offered, ",")) offered_qops.push_back(ToLower(Trim(q)));
  const auto offers = [&](SaslQop q) {
    return std::find(offered_qops.begin(), offered_qops.end(), QopName(q)) != offered_qops.end();
  };
  bool has_3des = false;
  for (const auto& c : Split(d.count("cipher") ? d["cipher"] : "", ",")) {
    has_3des |= ToLower(Trim(c)) == "3des";
  }
  std::string allowed_names;
  bool chosen = false;
  bool conf_without_3des = false;
  for (SaslQop q : allowed_) {
    allowed_names += std::string(allowed_names.empty() ? "" : ",") + QopName(q);
    if (chosen || !offers(q)) continue;
    if (q == SaslQop::kAuthConf && !has_3des) {
      conf_without_3des = true;
      continue;
    }
    qop_ = q;
    chosen = true;
  }
  if (!chosen) {
    if (conf_without_3des) {
      return Unsupported(
          "the server offers SASL auth-conf (hadoop.rpc.protection privacy) with "
          "ciphers '" +
          (d.count("cipher") ? d["cipher"] : std::string()) +
          "'; tarn's DIGEST-MD5 encrypts with 3des only");
    }
    return Unsupported("the server offers SASL qop '" + offered + "' and tarn's " +
                       kRpcProtectionKey + " allows '" + allowed_names + "': set " +
                       kRpcProtectionKey +
                       " (core-site.xml or -D) to the server's level "
                       "(authentication = auth, integrity = auth-int, privacy = auth-conf)");
  }
  if (d.count("maxbuf")) {
    const long long maxbuf = std::atoll(d["maxbuf"].c_str());
    if (maxbuf < 64) {
      return InvalidArgument("DIGEST-MD5 challenge with maxbuf '" + d["maxbuf"] + "'");
    }
    server_maxbuf_ = static_cast<size_t>(maxbuf);
  }
  nonce_ = d["nonce"];
  const std::string realm = d.count("realm") ? d["realm"] : "";
  const bool utf8 = d.count("charset") && EqualsIgnoreCase(d["charset"], "utf-8");

  const std::string user_hash = Md5(username_ + ":" + realm + ":" + password_);
  ha1_ = Md5(user_hash + ":" + nonce_ + ":" + cnonce_);
  const std::string ha2_hex = HexEncode(Md5("AUTHENTICATE:" + digest_uri_ + A2Suffix()));
  const std::string response = HexEncode(Md5(HexEncode(ha1_) + ":" + nonce_ + ":" + nc_ + ":" +
                                             cnonce_ + ":" + QopName(qop_) + ":" + ha2_hex));

  std::string out;
  if (utf8) out += "charset=utf-8,";
  out += "username=" + Quote(username_);
  if (d.count("realm")) out += ",realm=" + Quote(realm);
  out += ",nonce=" + Quote(nonce_) + ",nc=" + nc_ + ",cnonce=" + Quote(cnonce_) +
         ",digest-uri=" + Quote(digest_uri_) + ",response=" + response + ",qop=" + QopName(qop_);
  if (qop_ == SaslQop::kAuthConf) out += ",cipher=\"3des\"";
  return out;
}

// Integrity and confidentiality add a 32-zero "entity body hash" to A2.
std::string DigestMd5Client::A2Suffix() const {
  return qop_ == SaslQop::kAuth ? "" : ":00000000000000000000000000000000";
}

Result<std::unique_ptr<DigestSecurityLayer>> DigestMd5Client::SecurityLayer() const {
  if (!verified_) return FailedPrecondition("DIGEST-MD5: no security layer before rspauth");
  if (qop_ == SaslQop::kAuth) return std::unique_ptr<DigestSecurityLayer>();
  return DigestSecurityLayer::Create(DigestSecurityLayer::Side::kClient, ha1_, qop_);
}

Status DigestMd5Client::Verify(std::string_view server_final) const {
  if (ha1_.empty()) return FailedPrecondition("DIGEST-MD5: rspauth before a challenge");
  TARN_ASSIGN_OR_RETURN(auto d, ParseDigestDirectives(server_final));
  if (!d.count("rspauth")) {
    return InvalidArgument("DIGEST-MD5: the server's final message has no rspauth: '" +
                           std::string(server_final) + "'");
  }
  const std::string ha2_hex = HexEncode(Md5(":" + digest_uri_ + A2Suffix()));
  const std::string expected = HexEncode(Md5(HexEncode(ha1_) + ":" + nonce_ + ":" + nc_ + ":" +
                                             cnonce_ + ":" + QopName(qop_) + ":" + ha2_hex));
  if (!EqualsIgnoreCase(d["rspauth"], expected)) {
    return InvalidArgument(
        "DIGEST-MD5: the server's rspauth does not match (wrong server or "
        "token password)");
  }
  verified_ = true;
  return Status::Ok();
}

}  // namespace tarn::cluster::yarn
