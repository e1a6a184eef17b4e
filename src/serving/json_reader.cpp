#include "serving/json_reader.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace tarn::serving {

const char* JsonTypeName(JsonType t) {
  switch (t) {
    case JsonType::kNull:
      return "null";
    case JsonType::kBool:
      return "boolean";
    case JsonType::kNumber:
      return "number";
    case JsonType::kString:
      return "string";
    case JsonType::kArray:
      return "array";
    case JsonType::kObject:
      return "object";
  }
  return "?";
}

namespace {

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Bytes that end the fast scan of a string: the closing quote, a backslash
// and the control characters.
constexpr auto kStringStop = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = true;
  t['"'] = t['\\'] = true;
  return t;
}();

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

uint32_t Hex4(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = v * 16 + static_cast<uint32_t>(Hex(p[i]));
  return v;
}

}  // namespace

bool JsonDoc::Fail(const char* what) {
  error_ = "malformed JSON at byte ";
  error_ += std::to_string(p_ - begin_);
  error_ += ": ";
  error_ += what;
  return false;
}

void JsonDoc::Grow() { nodes_.resize(nodes_.empty() ? 64 : nodes_.size() * 2); }

// Inline (used only in this file), with the rare growth kept out of line.
inline uint32_t JsonDoc::NewNode() {
  if (used_ == nodes_.size()) [[unlikely]]
    Grow();
  nodes_[used_] = JsonNode();
  return used_++;
}

void JsonDoc::Trim(size_t bytes) {
  if (nodes_.capacity() * sizeof(JsonNode) > bytes) {
    std::vector<JsonNode>().swap(nodes_);
    used_ = 0;
  }
}

void JsonDoc::SkipSpace() {
  const char* p = p_;
  while (p < end_ && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
  p_ = p;
}

bool JsonDoc::Parse(std::string_view text) {
  begin_ = p_ = text.data();
  end_ = text.data() + text.size();
  used_ = 0;
  error_.clear();
  uint32_t root = NewNode();
  SkipSpace();
  if (!ParseValue(root, 0)) return false;
  SkipSpace();
  if (p_ != end_) return Fail("unexpected text after the JSON value");
  return true;
}

bool JsonDoc::ParseString(std::string_view* out, bool* escaped) {
  // *p_ == '"'
  ++p_;
  const char* start = p_;
  *escaped = false;
  while (true) {
    // Fast scan for the closing quote, a backslash or a control character,
    // on a local pointer (cheaper than stepping the member).
    const char* p = p_;
    while (p < end_ && !kStringStop[static_cast<unsigned char>(*p)]) ++p;
    p_ = p;
    if (p_ >= end_) return Fail("unterminated string");
    char c = *p_;
    if (c == '"') break;
    if (c != '\\') return Fail("control character in string");
    *escaped = true;
    if (p_ + 1 >= end_) return Fail("unterminated string");
    char e = p_[1];
    switch (e) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':  // NOLINT
        p_ += 2;
        break;
      case 'u': {
        if (end_ - p_ < 6) return Fail("truncated \\u escape");
        for (int i = 2; i < 6; ++i)
          if (Hex(p_[i]) < 0) return Fail("bad \\u escape");
        uint32_t cp = Hex4(p_ + 2);
        p_ += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate needs its low half
          if (end_ - p_ < 6 || p_[0] != '\\' || p_[1] != 'u') {
            return Fail("unpaired surrogate in \\u escape");
          }
          for (int i = 2; i < 6; ++i)
            if (Hex(p_[i]) < 0) return Fail("bad \\u escape");
          uint32_t lo = Hex4(p_ + 2);
          if (lo < 0xDC00 || lo > 0xDFFF) return Fail("unpaired surrogate in \\u escape");
          p_ += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return Fail("unpaired surrogate in \\u escape");
        }
        break;
      }
      default:
        return Fail("bad escape in string");
    }
  }
  *out = std::string_view(start, static_cast<size_t>(p_ - start));
  ++p_;  // the closing quote
  return true;
}

bool JsonDoc::ParseNumber(std::string_view* out) {
  // A local pointer, written back before every return (Fail reports p_).
  const char* start = p_;
  const char* p = p_;
  auto fail = [&](const char* what) {
    p_ = p;
    return Fail(what);
  };
  if (p < end_ && *p == '-') ++p;
  if (p >= end_) return fail("bad number");
  if (*p == '0') {
    ++p;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end_ && IsDigit(*p)) ++p;
  } else {
    return fail("bad number");
  }
  if (p < end_ && *p == '.') {
    ++p;
    if (p >= end_ || !IsDigit(*p)) return fail("bad number: digits must follow '.'");
    while (p < end_ && IsDigit(*p)) ++p;
  }
  if (p < end_ && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end_ && (*p == '+' || *p == '-')) ++p;
    if (p >= end_ || !IsDigit(*p)) return fail("bad number: bad exponent");
    while (p < end_ && IsDigit(*p)) ++p;
  }
  p_ = p;
  *out = std::string_view(start, static_cast<size_t>(p - start));
  return true;
}

bool JsonDoc::ParseValue(uint32_t slot, int depth) {
  if (p_ >= end_) return Fail("expected a value");
  char c = *p_;
  switch (c) {
    case '{':
    case '[': {
      if (depth >= kMaxDepth) return Fail("nested too deeply");
      const bool is_object = c == '{';
      nodes_[slot].type = is_object ? JsonType::kObject : JsonType::kArray;
      ++p_;
      SkipSpace();
      const char close = is_object ? '}' : ']';
      if (p_ < end_ && *p_ == close) {
        ++p_;
        return true;
      }
      uint32_t prev = 0, count = 0;
      while (true) {
        std::string_view key;
        bool key_escaped = false;
        if (is_object) {
          if (p_ >= end_ || *p_ != '"') return Fail("expected a member name in quotes");
          if (!ParseString(&key, &key_escaped)) return false;
          SkipSpace();
          if (p_ >= end_ || *p_ != ':') return Fail("expected ':' after a member name");
          ++p_;
          SkipSpace();
        }
        if (used_ >= kMaxNodes) {
          return Fail("too many values in one document (limit 524288): split the request");
        }
        uint32_t child = NewNode();
        nodes_[child].key = key;
        nodes_[child].key_escaped = key_escaped;
        if (!ParseValue(child, depth + 1)) return false;
        if (prev) {
          nodes_[prev].next = child;
        } else {
          nodes_[slot].first_child = child;
        }
        prev = child;
        ++count;
        SkipSpace();
        if (p_ < end_ && *p_ == ',') {
          ++p_;
          SkipSpace();
          continue;
        }
        if (p_ < end_ && *p_ == close) {
          ++p_;
          break;
        }
        return Fail(is_object ? "expected ',' or '}'" : "expected ',' or ']'");
      }
      nodes_[slot].count = count;
      return true;
    }
    case '"': {
      std::string_view s;
      bool escaped;
      if (!ParseString(&s, &escaped)) return false;
      nodes_[slot].type = JsonType::kString;
      nodes_[slot].text = s;
      nodes_[slot].escaped = escaped;
      return true;
    }
    case 't':
      if (end_ - p_ >= 4 && std::memcmp(p_, "true", 4) == 0) {
        p_ += 4;
        nodes_[slot].type = JsonType::kBool;
        nodes_[slot].boolean = true;
        nodes_[slot].text = "true";
        return true;
      }
      return Fail("expected a value");
    case 'f':
      if (end_ - p_ >= 5 && std::memcmp(p_, "false", 5) == 0) {
        p_ += 5;
        nodes_[slot].type = JsonType::kBool;
        nodes_[slot].text = "false";
        return true;
      }
      return Fail("expected a value");
    case 'n':
      if (end_ - p_ >= 4 && std::memcmp(p_, "null", 4) == 0) {
        p_ += 4;
        nodes_[slot].type = JsonType::kNull;
        return true;
      }
      return Fail("expected a value");
    case 'N':
    case 'I':
      return ParseNonFinite(slot);
    default:
      if (c == '-' && end_ - p_ >= 2 && p_[1] == 'I') return ParseNonFinite(slot);
      if (c == '-' || (c >= '0' && c <= '9')) {
        std::string_view num;
        if (!ParseNumber(&num)) return false;
        nodes_[slot].type = JsonType::kNumber;
        nodes_[slot].text = num;
        return true;
      }
      return Fail("expected a value");
  }
}

bool JsonDoc::ParseNonFinite(uint32_t slot) {
  for (std::string_view literal : {"NaN", "Infinity", "-Infinity"}) {
    if (static_cast<size_t>(end_ - p_) >= literal.size() &&
        std::memcmp(p_, literal.data(), literal.size()) == 0) {
      nodes_[slot].type = JsonType::kNumber;
      nodes_[slot].non_finite = true;
      nodes_[slot].text = std::string_view(p_, literal.size());
      p_ += literal.size();
      return true;
    }
  }
  return Fail("expected a value");
}

void JsonDoc::Unescape(std::string_view raw, std::string* out) {
  out->clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\' || i + 1 >= raw.size()) {
      out->push_back(c);
      continue;
    }
    char e = raw[++i];
    switch (e) {
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        if (i + 4 >= raw.size()) return;  // validated by the parser
        uint32_t cp = Hex4(raw.data() + i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < raw.size() && raw[i + 1] == '\\' &&
            raw[i + 2] == 'u') {
          uint32_t lo = Hex4(raw.data() + i + 3);
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
        AppendUtf8(out, cp);
        break;
      }
      default:
        out->push_back(e);
        break;  // " \ /
    }
  }
}

std::string_view JsonDoc::StringValue(const JsonNode& n, std::string* scratch) {
  if (!n.escaped) return n.text;
  Unescape(n.text, scratch);
  return *scratch;
}

std::string_view JsonDoc::KeyValue(const JsonNode& n, std::string* scratch) {
  if (!n.key_escaped) return n.key;
  Unescape(n.key, scratch);
  return *scratch;
}

const JsonNode* JsonDoc::Find(const JsonNode& object, std::string_view key) const {
  if (object.type != JsonType::kObject) return nullptr;
  std::string scratch;
  for (uint32_t c = object.first_child; c; c = nodes_[c].next) {
    const JsonNode& m = nodes_[c];
    if (!m.key_escaped) {
      if (m.key == key) return &m;
    } else if (KeyValue(m, &scratch) == key) {
      return &m;
    }
  }
  return nullptr;
}

void AppendJsonString(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

namespace {

// The shortest text that reads back as v (to_chars); non-finite as null.
template <typename T>
void AppendChars(std::string* out, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) {
      out->append("null");
      return;
    }
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;
  out->append(buf, static_cast<size_t>(end - buf));
}

}  // namespace

void AppendJsonNumber(std::string* out, double v) { AppendChars(out, v); }
void AppendJsonNumber(std::string* out, float v) { AppendChars(out, v); }
void AppendJsonInt(std::string* out, int64_t v) { AppendChars(out, v); }

}  // namespace tarn::serving
