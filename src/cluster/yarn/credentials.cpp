#include "cluster/yarn/credentials.h"

#include <cstdlib>

#include "cluster/yarn/sasl.h"  // for Base64Encode
#include "common/files.h"

namespace tarn::cluster::yarn {

namespace {

constexpr std::string_view kMagic = "HDTS";

// Reads the Writable layout with bounds checks.
class WritableReader {
 public:
  WritableReader(std::string_view data, size_t pos, const std::string& source)
      : data_(data), pos_(pos), source_(source) {}

  Result<int64_t> VInt(const char* what) {
    const size_t at = pos_;
    int64_t v;
    if (!GetHadoopVLong(data_, &pos_, &v)) {
      return Corrupt(source_ + ": truncated " + what + " at byte " + std::to_string(at));
    }
    return v;
  }

  Result<std::string> Bytes(const char* what) {
    const size_t at = pos_;
    TARN_ASSIGN_OR_RETURN(int64_t len, VInt(what));
    if (len < 0 || static_cast<uint64_t>(len) > data_.size() - pos_) {
      return Corrupt(source_ + ": " + what + " at byte " + std::to_string(at) + " claims " +
                     std::to_string(len) + " bytes, " + std::to_string(data_.size() - pos_) +
                     " remain");
    }
    std::string out(data_.substr(pos_, static_cast<size_t>(len)));
    pos_ += static_cast<size_t>(len);
    return out;
  }

  Result<size_t> Count(const char* what) {
    const size_t at = pos_;
    TARN_ASSIGN_OR_RETURN(int64_t n, VInt(what));
    // Every entry takes at least two bytes: a bound that rejects garbage early.
    if (n < 0 || static_cast<uint64_t>(n) > (data_.size() - pos_) / 2 + 1) {
      return Corrupt(source_ + ": implausible " + what + " " + std::to_string(n) + " at byte " +
                     std::to_string(at));
    }
    return static_cast<size_t>(n);
  }

  size_t pos() const { return pos_; }

 private:
  std::string_view data_;
  size_t pos_;
  const std::string& source_;
};

Result<Credentials> ParseWritable(std::string_view bytes, const std::string& source) {
  Credentials c;
  c.version = 0;
  WritableReader r(bytes, kMagic.size() + 1, source);
  TARN_ASSIGN_OR_RETURN(size_t n_tokens, r.Count("token count"));
  for (size_t i = 0; i < n_tokens; ++i) {
    TARN_ASSIGN_OR_RETURN(std::string alias, r.Bytes("token alias"));
    Token t;
    TARN_ASSIGN_OR_RETURN(t.identifier, r.Bytes("token identifier"));
    TARN_ASSIGN_OR_RETURN(t.password, r.Bytes("token password"));
    TARN_ASSIGN_OR_RETURN(t.kind, r.Bytes("token kind"));
    TARN_ASSIGN_OR_RETURN(t.service, r.Bytes("token service"));
    c.tokens.emplace_back(std::move(alias), std::move(t));
  }
  TARN_ASSIGN_OR_RETURN(size_t n_secrets, r.Count("secret count"));
  for (size_t i = 0; i < n_secrets; ++i) {
    TARN_ASSIGN_OR_RETURN(std::string alias, r.Bytes("secret alias"));
    TARN_ASSIGN_OR_RETURN(std::string value, r.Bytes("secret value"));
    c.secrets.emplace_back(std::move(alias), std::move(value));
  }
  if (r.pos() != bytes.size()) {
    return Corrupt(source + ": " + std::to_string(bytes.size() - r.pos()) +
                   " unexpected bytes after the secrets (byte " + std::to_string(r.pos()) + ")");
  }
  return c;
}

Result<Credentials> ParseProto(std::string_view bytes, const std::string& source) {
  size_t pos = kMagic.size() + 1;
  uint64_t len;
  if (!GetVarint(bytes, &pos, &len) || len != bytes.size() - pos) {
    return Corrupt(source + ": version 1 body is not one length-delimited CredentialsProto (" +
                   std::to_string(bytes.size() - kMagic.size() - 1) + " bytes)");
  }
  auto m = ProtoMessage::Parse(bytes.substr(pos), "CredentialsProto");
  if (!m.ok()) return m.status().WithContext(source);
  Credentials c;
  c.version = 1;
  for (int field : {1, 2}) {
    for (std::string_view kv : m->RepeatedBytes(field)) {
      auto e = ProtoMessage::Parse(kv, "CredentialsKVProto");
      if (!e.ok()) return e.status().WithContext(source);
      std::string alias = e->String(1);
      if (field == 1) {
        auto token = DecodeToken(e->Bytes(2));
        if (!token.ok()) return token.status().WithContext(source + ": token '" + alias + "'");
        c.tokens.emplace_back(std::move(alias), std::move(*token));
      } else {
        c.secrets.emplace_back(std::move(alias), e->String(3));
      }
    }
  }
  return c;
}

void PutText(std::string* out, std::string_view s) {
  PutHadoopVLong(out, static_cast<int64_t>(s.size()));
  out->append(s);
}

void PutToken(std::string* out, const Token& token) {
  PutText(out, token.identifier);
  PutText(out, token.password);
  PutText(out, token.kind);
  PutText(out, token.service);
}

}  // namespace

void PutHadoopVLong(std::string* out, int64_t v) {
  if (v >= -112 && v <= 127) {
    out->push_back(static_cast<char>(v));
    return;
  }
  int len = -112;
  if (v < 0) {
    v = ~v;  // one's complement: the magnitude bytes, the sign in the prefix
    len = -120;
  }
  for (uint64_t tmp = static_cast<uint64_t>(v); tmp != 0; tmp >>= 8) --len;
  out->push_back(static_cast<char>(len));
  const int bytes = len < -120 ? -(len + 120) : -(len + 112);
  for (int i = bytes; i > 0; --i) {
    out->push_back(static_cast<char>((static_cast<uint64_t>(v) >> ((i - 1) * 8)) & 0xFF));
  }
}

bool GetHadoopVLong(std::string_view data, size_t* pos, int64_t* v) {
  if (*pos >= data.size()) return false;
  const auto first = static_cast<int8_t>(data[(*pos)++]);
  if (first >= -112) {
    *v = first;
    return true;
  }
  const bool negative = first < -120;
  const int bytes = negative ? -(first + 120) : -(first + 112);
  if (bytes > 8 || data.size() - *pos < static_cast<size_t>(bytes)) return false;
  uint64_t x = 0;
  for (int i = 0; i < bytes; ++i) x = (x << 8) | static_cast<uint8_t>(data[(*pos)++]);
  *v = negative ? static_cast<int64_t>(~x) : static_cast<int64_t>(x);
  return true;
}

const Token* Credentials::FindByKind(std::string_view kind) const {
  for (const auto& [alias, token] : tokens) {
    if (token.kind == kind) return &token;
  }
  return nullptr;
}

const Token* Credentials::FindByAlias(std::string_view alias) const {
  for (const auto& [a, token] : tokens) {
    if (a == alias) return &token;
  }
  return nullptr;
}

const Token* Credentials::FindByService(std::string_view service) const {
  for (const auto& [alias, token] : tokens) {
    if (token.service == service) return &token;
  }
  return nullptr;
}

Result<Credentials> ParseCredentials(std::string_view bytes, const std::string& source) {
  if (bytes.size() < kMagic.size() + 1 || bytes.substr(0, kMagic.size()) != kMagic) {
    return Corrupt(source + ": not a Hadoop credentials file (no \"HDTS\" header)");
  }
  const auto version = static_cast<uint8_t>(bytes[kMagic.size()]);
  switch (version) {
    case 0:
      return ParseWritable(bytes, source);
    case 1:
      return ParseProto(bytes, source);
    default:
      return Unsupported(source + ": credentials file version " + std::to_string(version) +
                         " (tarn reads versions 0 and 1)");
  }
}

Result<Credentials> ReadCredentialsFile(const std::string& path) {
  TARN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ParseCredentials(bytes, path);
}

Result<std::string> ReadSecretFromEnvironment(const std::string& alias) {
  const char* path = std::getenv("HADOOP_TOKEN_FILE_LOCATION");
  if (!path || !*path) {
    return FailedPrecondition("HADOOP_TOKEN_FILE_LOCATION is not set (not in a YARN container)");
  }
  TARN_ASSIGN_OR_RETURN(Credentials c, ReadCredentialsFile(path));
  for (const auto& [a, value] : c.secrets) {
    if (a == alias) return value;
  }
  return NotFound(std::string(path) + " has no secret '" + alias + "'");
}

std::string SerializeCredentials(const Credentials& credentials) {
  std::string out(kMagic);
  out.push_back(0);
  PutHadoopVLong(&out, static_cast<int64_t>(credentials.tokens.size()));
  for (const auto& [alias, token] : credentials.tokens) {
    PutText(&out, alias);
    PutToken(&out, token);
  }
  PutHadoopVLong(&out, static_cast<int64_t>(credentials.secrets.size()));
  for (const auto& [alias, value] : credentials.secrets) {
    PutText(&out, alias);
    PutText(&out, value);
  }
  return out;
}

namespace {

// Base64 in either alphabet (+/ or -_), with or without '=' padding.
Result<std::string> DecodeBase64Any(std::string_view text, const std::string& source) {
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+' || c == '-') {
      v = 62;
    } else if (c == '/' || c == '_') {
      v = 63;
    } else if (c == '=') {
      break;
    } else {
      return InvalidArgument(source + ": not base64: character '" + std::string(1, c) + "' at " +
                             std::to_string(i));
    }
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xFF));
    }
  }
  return out;
}

}  // namespace

std::string TokenToUrlString(const Token& token) {
  std::string bytes;
  PutToken(&bytes, token);
  std::string out = Base64Encode(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

Result<Token> TokenFromUrlString(std::string_view text, const std::string& source) {
  TARN_ASSIGN_OR_RETURN(std::string bytes, DecodeBase64Any(text, source));
  WritableReader r(bytes, 0, source);
  Token t;
  TARN_ASSIGN_OR_RETURN(t.identifier, r.Bytes("token identifier"));
  TARN_ASSIGN_OR_RETURN(t.password, r.Bytes("token password"));
  TARN_ASSIGN_OR_RETURN(t.kind, r.Bytes("token kind"));
  TARN_ASSIGN_OR_RETURN(t.service, r.Bytes("token service"));
  if (r.pos() != bytes.size()) {
    return Corrupt(source + ": " + std::to_string(bytes.size() - r.pos()) +
                   " unexpected bytes after the token");
  }
  return t;
}

Result<DelegationTokenIdentifier> ParseDelegationTokenIdentifier(std::string_view identifier,
                                                                 const std::string& source) {
  if (identifier.empty()) return Corrupt(source + ": empty delegation token identifier");
  if (identifier[0] != 0) {
    return Corrupt(source + ": delegation token identifier version " +
                   std::to_string(static_cast<int>(identifier[0])) + " (tarn reads version 0)");
  }
  WritableReader r(identifier, 1, source);
  DelegationTokenIdentifier id;
  TARN_ASSIGN_OR_RETURN(id.owner, r.Bytes("owner"));
  TARN_ASSIGN_OR_RETURN(id.renewer, r.Bytes("renewer"));
  TARN_ASSIGN_OR_RETURN(id.real_user, r.Bytes("real user"));
  TARN_ASSIGN_OR_RETURN(id.issue_date_ms, r.VInt("issue date"));
  TARN_ASSIGN_OR_RETURN(id.max_date_ms, r.VInt("max date"));
  TARN_ASSIGN_OR_RETURN(id.sequence_number, r.VInt("sequence number"));
  TARN_ASSIGN_OR_RETURN(id.master_key_id, r.VInt("master key id"));
  return id;
}

}  // namespace tarn::cluster::yarn
