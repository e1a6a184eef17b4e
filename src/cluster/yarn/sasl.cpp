#include "cluster/yarn/sasl.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cassert>
#include <random>

#include "common/strings.h"

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

}  // namespace

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
  bool has_auth = false;
  for (const auto& q : Split(offered, ",")) has_auth |= Trim(q) == "auth";
  if (!has_auth) {
    return Unsupported("the server requires SASL qop '" + offered +
                       "' (hadoop.rpc.protection integrity or privacy); tarn's DIGEST-MD5 "
                       "client supports authentication only");
  }
  qop_ = "auth";
  nonce_ = d["nonce"];
  const std::string realm = d.count("realm") ? d["realm"] : "";
  const bool utf8 = d.count("charset") && EqualsIgnoreCase(d["charset"], "utf-8");

  const std::string user_hash = Md5(username_ + ":" + realm + ":" + password_);
  ha1_hex_ = HexEncode(Md5(user_hash + ":" + nonce_ + ":" + cnonce_));
  const std::string ha2_hex = HexEncode(Md5("AUTHENTICATE:" + digest_uri_));
  const std::string response = HexEncode(
      Md5(ha1_hex_ + ":" + nonce_ + ":" + nc_ + ":" + cnonce_ + ":" + qop_ + ":" + ha2_hex));

  std::string out;
  if (utf8) out += "charset=utf-8,";
  out += "username=" + Quote(username_);
  if (d.count("realm")) out += ",realm=" + Quote(realm);
  out += ",nonce=" + Quote(nonce_) + ",nc=" + nc_ + ",cnonce=" + Quote(cnonce_) +
         ",digest-uri=" + Quote(digest_uri_) + ",response=" + response + ",qop=" + qop_;
  return out;
}

Status DigestMd5Client::Verify(std::string_view server_final) const {
  if (ha1_hex_.empty()) return FailedPrecondition("DIGEST-MD5: rspauth before a challenge");
  TARN_ASSIGN_OR_RETURN(auto d, ParseDigestDirectives(server_final));
  if (!d.count("rspauth")) {
    return InvalidArgument("DIGEST-MD5: the server's final message has no rspauth: '" +
                           std::string(server_final) + "'");
  }
  const std::string ha2_hex = HexEncode(Md5(":" + digest_uri_));
  const std::string expected = HexEncode(
      Md5(ha1_hex_ + ":" + nonce_ + ":" + nc_ + ":" + cnonce_ + ":" + qop_ + ":" + ha2_hex));
  if (!EqualsIgnoreCase(d["rspauth"], expected)) {
    return InvalidArgument(
        "DIGEST-MD5: the server's rspauth does not match (wrong server or "
        "token password)");
  }
  verified_ = true;
  return Status::Ok();
}

}  // namespace tarn::cluster::yarn
