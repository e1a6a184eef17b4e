// A small JSON reader for request bodies on the serving hot path: parses into
// a flat node array that is reused from request to request (no allocation
// once warm), with strings and numbers left as views into the body.
//
// RFC 8259 grammar plus the literals NaN, Infinity and -Infinity (numbers
// with non_finite set), which TF Serving accepts and Python's json module and
// tritonclient write; bounded nesting (JsonDoc::kMaxDepth); errors say what
// was expected and at which byte. Strings are checked for control
// characters and escapes but not for valid UTF-8 (their bytes are compared
// with column names and category values as they are).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tarn::serving {

enum class JsonType : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };

const char* JsonTypeName(JsonType t);

struct JsonNode {
  JsonType type = JsonType::kNull;
  bool escaped = false;  // a string with backslash escapes (see JsonDoc::StringValue)
  bool boolean = false;
  bool non_finite = false;   // a number written NaN, Infinity or -Infinity
  uint32_t next = 0;         // next sibling (0: none)
  uint32_t first_child = 0;  // arrays and objects (0: none)
  uint32_t count = 0;        // children of arrays and objects
  std::string_view key;      // member name, raw (members of objects only)
  bool key_escaped = false;
  std::string_view text;  // numbers: the literal; strings: the raw text between the quotes
};

class JsonDoc {
 public:
  static constexpr int kMaxDepth = 64;
  // Values in one document (each node takes ~56 bytes).
  static constexpr uint32_t kMaxNodes = 1u << 19;

  // Parses `text` (which must outlive the views). Returns false with error()
  // set when it is not one complete JSON value.
  bool Parse(std::string_view text);
  const std::string& error() const { return error_; }
  // Releases the node array when it grew past `bytes`.
  void Trim(size_t bytes);

  const JsonNode& root() const { return nodes_[0]; }
  const JsonNode& node(uint32_t i) const { return nodes_[i]; }
  uint32_t index(const JsonNode& n) const { return static_cast<uint32_t>(&n - nodes_.data()); }

  // Iteration: for (uint32_t c = n.first_child; c; c = doc.node(c).next).
  // The member `key` of object `n`, or nullptr. Keys with escapes compare
  // after unescaping.
  const JsonNode* Find(const JsonNode& object, std::string_view key) const;

  // The value of a string node (unescaped into *scratch when needed).
  static std::string_view StringValue(const JsonNode& n, std::string* scratch);
  static std::string_view KeyValue(const JsonNode& n, std::string* scratch);
  // Decodes a JSON string body (between the quotes) that holds escapes.
  static void Unescape(std::string_view raw, std::string* out);

 private:
  bool Fail(const char* what);
  bool ParseValue(uint32_t slot, int depth);
  bool ParseString(std::string_view* out, bool* escaped);
  bool ParseNumber(std::string_view* out);
  bool ParseNonFinite(uint32_t slot);
  void SkipSpace();
  uint32_t NewNode();
  void Grow();

  std::vector<JsonNode> nodes_;
  uint32_t used_ = 0;
  const char* begin_ = nullptr;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  std::string error_;
};

// Appends `s` as a JSON string literal (with quotes) to *out.
void AppendJsonString(std::string* out, std::string_view s);
// Appends the shortest text that reads back as exactly `v` (JSON has no
// NaN/Infinity: those become null).
void AppendJsonNumber(std::string* out, double v);
void AppendJsonNumber(std::string* out, float v);
void AppendJsonInt(std::string* out, int64_t v);

}  // namespace tarn::serving
