#include "serving/json_reader.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace tarn::serving {
namespace {

// Rebuilds a document as nlohmann JSON (to compare with a reference parse).
nlohmann::json ToNlohmann(const JsonDoc& doc, const JsonNode& n) {
  std::string scratch;
  switch (n.type) {
    case JsonType::kNull:
      return nullptr;
    case JsonType::kBool:
      return n.boolean;
    case JsonType::kNumber:
      if (n.non_finite) return nullptr;  // the reference reads the text with null in its place
      return nlohmann::json::parse(n.text);
    case JsonType::kString:
      return std::string(JsonDoc::StringValue(n, &scratch));
    case JsonType::kArray: {
      auto a = nlohmann::json::array();
      for (uint32_t c = n.first_child; c; c = doc.node(c).next) {
        a.push_back(ToNlohmann(doc, doc.node(c)));
      }
      return a;
    }
    case JsonType::kObject: {
      auto o = nlohmann::json::object();
      for (uint32_t c = n.first_child; c; c = doc.node(c).next) {
        o[std::string(JsonDoc::KeyValue(doc.node(c), &scratch))] = ToNlohmann(doc, doc.node(c));
      }
      return o;
    }
  }
  return nullptr;
}

TEST(JsonReaderTest, ParsesValuesAsViews) {
  JsonDoc doc;
  std::string text =
      R"( {"instances": [{"age": 39, "name": "a\"b\u00e9\ud83d\ude00", "n": null, "t": true},
                         [1.5e3, -0, 2]], "empty": {}, "list": []} )";
  ASSERT_TRUE(doc.Parse(text)) << doc.error();
  const JsonNode& root = doc.root();
  ASSERT_EQ(root.type, JsonType::kObject);
  EXPECT_EQ(root.count, 3u);
  const JsonNode* inst = doc.Find(root, "instances");
  ASSERT_NE(inst, nullptr);
  ASSERT_EQ(inst->count, 2u);
  const JsonNode& rec = doc.node(inst->first_child);
  const JsonNode* age = doc.Find(rec, "age");
  ASSERT_NE(age, nullptr);
  EXPECT_EQ(age->type, JsonType::kNumber);
  EXPECT_EQ(age->text, "39");
  // The number's literal is a view into the text, not a copy.
  EXPECT_GE(age->text.data(), text.data());
  EXPECT_LT(age->text.data(), text.data() + text.size());
  std::string scratch;
  const JsonNode* name = doc.Find(rec, "name");
  EXPECT_TRUE(name->escaped);
  EXPECT_EQ(JsonDoc::StringValue(*name, &scratch), "a\"b\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(doc.Find(rec, "n")->type, JsonType::kNull);
  EXPECT_TRUE(doc.Find(rec, "t")->boolean);
  const JsonNode& vec = doc.node(rec.next);
  EXPECT_EQ(vec.type, JsonType::kArray);
  EXPECT_EQ(doc.node(vec.first_child).text, "1.5e3");
  EXPECT_EQ(doc.Find(root, "empty")->count, 0u);
  EXPECT_EQ(doc.Find(root, "missing"), nullptr);
  // A key with an escape matches its unescaped form.
  ASSERT_TRUE(doc.Parse(R"({"a\u0062": 1})"));
  EXPECT_NE(doc.Find(doc.root(), "ab"), nullptr);
}

TEST(JsonReaderTest, RejectsMalformedInputWithItsPosition) {
  JsonDoc doc;
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"", "expected a value"},
      {"{", "expected a member name"},
      {"{\"a\" 1}", "expected ':'"},
      {"{\"a\": 1,}", "expected a member name"},
      {"[1, 2", "expected ',' or ']'"},
      {"[1 2]", "expected ',' or ']'"},
      {"01", "unexpected text"},
      {"1.", "digits must follow"},
      {"1e", "bad exponent"},
      {"-", "bad number"},
      {"+1", "expected a value"},
      {"\"abc", "unterminated string"},
      {"\"a\x01\"", "control character"},
      {"\"\\x\"", "bad escape"},
      {"\"\\u12\"", "\\u escape"},
      {"\"\\u12xy\"", "bad \\u escape"},
      {"\"\\ud800\"", "unpaired surrogate"},
      {"\"\\udc00\"", "unpaired surrogate"},
      {"tru", "expected a value"},
      {"nul", "expected a value"},
      {"{} {}", "unexpected text"},
      {"Nan", "expected a value"},
      {"-NaN", "bad number"},
  };
  for (const auto& c : cases) {
    EXPECT_FALSE(doc.Parse(c.text)) << c.text;
    EXPECT_NE(doc.error().find(c.error), std::string::npos) << c.text << " -> " << doc.error();
    EXPECT_NE(doc.error().find("at byte"), std::string::npos);
  }
  // Nesting is bounded.
  std::string deep(JsonDoc::kMaxDepth + 1, '[');
  deep += std::string(JsonDoc::kMaxDepth + 1, ']');
  EXPECT_FALSE(doc.Parse(deep));
  EXPECT_NE(doc.error().find("nested too deeply"), std::string::npos);
  std::string ok_depth(JsonDoc::kMaxDepth, '[');
  ok_depth += std::string(JsonDoc::kMaxDepth, ']');
  EXPECT_TRUE(doc.Parse(ok_depth)) << doc.error();
  // So is the number of values.
  std::string many = "[";
  for (uint32_t i = 0; i <= JsonDoc::kMaxNodes; ++i) many += "0,";
  many += "0]";
  EXPECT_FALSE(doc.Parse(many));
  EXPECT_NE(doc.error().find("too many values"), std::string::npos);
}

TEST(JsonReaderTest, WritesStringsAndNumbersThatReadBack) {
  std::string out;
  AppendJsonString(&out, std::string("q\"b\\n\n\t\x01\x7f"));
  EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(), std::string("q\"b\\n\n\t\x01\x7f"));
  for (double v : {0.0, -1.5, 1e-300, 0.1, 123456789.125, 3.4028234663852886e38}) {
    out.clear();
    AppendJsonNumber(&out, v);
    EXPECT_EQ(std::stod(out), v) << out;
  }
  out.clear();
  AppendJsonNumber(&out, 0.1f);
  EXPECT_EQ(std::stof(out), 0.1f);
  out.clear();
  AppendJsonNumber(&out, std::nan(""));
  EXPECT_EQ(out, "null");
}

// A seeded mutator: bytes flipped, inserted, deleted, duplicated, and JSON
// tokens spliced in. Every mutant must parse or fail cleanly, and (for ASCII
// text) agree with nlohmann's strict parser on validity and on the value.
std::string Mutate(std::string s, std::mt19937_64& rng) {
  static const char* kTokens[] = {"{",    "}",    "[",      "]",       ",",   ":",
                                  "\"",   "\\",   "\\u",    "\\ud83d", "1e9", "-0.5",
                                  "null", "true", "\"k\":", " ",       "\n",  "0"};
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:
        if (!s.empty() && pos < s.size()) s[pos] = static_cast<char>(rng() % 128);
        break;
      case 1:
        s.insert(pos, 1, static_cast<char>(rng() % 128));
        break;
      case 2:
        if (pos < s.size()) s.erase(pos, 1 + rng() % 4);
        break;
      case 3:
        s.insert(pos, kTokens[rng() % (sizeof(kTokens) / sizeof(kTokens[0]))]);
        break;
      case 4:
        s.resize(pos);
        break;
      default:
        if (pos < s.size()) s.insert(pos, s.substr(pos, 1 + rng() % 16));
        break;
    }
  }
  return s;
}

// `text` with NaN, Infinity and -Infinity outside strings replaced by null:
// what a strict parser should read where tarn's reader reads a non-finite
// number.
std::string NonFiniteAsNull(const std::string& text) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < text.size()) {
        out.push_back(text[i + 1]);
        i += 2;
        continue;
      }
      if (c == '"') in_string = false;
      ++i;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (std::string_view lit : {"-Infinity", "Infinity", "NaN"}) {
      if (text.compare(i, lit.size(), lit) == 0) {
        out += "null";
        i += lit.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out.push_back(text[i++]);
  }
  return out;
}

TEST(JsonReaderTest, NonFiniteLiteralsAreNumbers) {
  JsonDoc doc;
  ASSERT_TRUE(doc.Parse(R"([NaN, Infinity, -Infinity, 1, "NaN"])")) << doc.error();
  std::vector<std::string_view> texts;
  std::vector<bool> flags;
  for (uint32_t c = doc.root().first_child; c; c = doc.node(c).next) {
    texts.push_back(doc.node(c).text);
    flags.push_back(doc.node(c).non_finite);
  }
  EXPECT_EQ(texts, (std::vector<std::string_view>{"NaN", "Infinity", "-Infinity", "1", "NaN"}));
  EXPECT_EQ(flags, (std::vector<bool>{true, true, true, false, false}));
  EXPECT_EQ(doc.node(doc.root().first_child).type, JsonType::kNumber);
  for (const char* bad : {"[nan]", "[-NaN]", "[Inf]", "[NaNa]", "[+Infinity]", "[Infinit]"}) {
    EXPECT_FALSE(doc.Parse(bad)) << bad;
  }
}

TEST(JsonReaderTest, FuzzAgreesWithAReferenceParser) {
  const std::vector<std::string> seeds = {
      R"({"instances": [{"Age": 39, "Work_Class": "State-gov", "x": null}]})",
      R"({"inputs": {"Age": [39, 50], "Gender": ["Male", "Fe\"male"]}})",
      R"({"inputs": [{"name": "input", "shape": [1, 3], "datatype": "FP32", "data": [0.5, -1e-3, 2]}]})",
      R"([[1, 2, 3], [4.5, 6e10, -7], [], {}, "s\u00e9\n", true, false, null])",
      R"({"a": {"b": {"c": [1, {"d": "\ud83d\ude00"}]}}})",
      R"({"inputs": [{"name": "x", "datatype": "FP64", "data": [NaN, -Infinity, Infinity, 1]}]})",
  };
  std::mt19937_64 rng(20240501);
  JsonDoc doc;
  int valid = 0, invalid = 0;
  for (int iter = 0; iter < 30000; ++iter) {
    std::string text = seeds[rng() % seeds.size()];
    if (iter % 7 != 0) text = Mutate(text, rng);
    const bool ok = doc.Parse(text);
    if (!ok) {
      EXPECT_FALSE(doc.error().empty());
    }
    bool ascii = true;
    for (char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
    if (!ascii) continue;
    const std::string reference = NonFiniteAsNull(text);
    bool ref;
    try {
      const auto parsed = nlohmann::json::parse(reference);
      (void)parsed;
      ref = true;
    } catch (const nlohmann::json::out_of_range&) {
      continue;  // a number too large for a double: valid JSON that nlohmann cannot hold
    } catch (const nlohmann::json::parse_error&) {
      ref = false;
    }
    ASSERT_EQ(ok, ref) << "mutant #" << iter << ": " << text << "\nours: " << doc.error();
    if (ok) {
      ++valid;
      ASSERT_EQ(ToNlohmann(doc, doc.root()), nlohmann::json::parse(reference)) << text;
    } else {
      ++invalid;
    }
  }
  // The mutator reaches both sides.
  EXPECT_GT(valid, 1000);
  EXPECT_GT(invalid, 1000);
}

}  // namespace
}  // namespace tarn::serving
