#include "data/record_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tarn::data {
namespace {

std::vector<std::string> SplitToStrings(RecordParser& p, std::string_view record) {
  std::vector<std::string_view> fields;
  p.Split(record, &fields);
  return {fields.begin(), fields.end()};
}

using Strings = std::vector<std::string>;

TEST(RecordParserTest, SplitsOnSingleAndMultiCharDelimiters) {
  RecordParser pipe("|");
  EXPECT_EQ(SplitToStrings(pipe, "a|b|c"), (Strings{"a", "b", "c"}));
  EXPECT_EQ(SplitToStrings(pipe, ""), (Strings{""}));
  EXPECT_EQ(SplitToStrings(pipe, "|"), (Strings{"", ""}));
  EXPECT_EQ(SplitToStrings(pipe, "a||b|"), (Strings{"a", "", "b", ""}));
  RecordParser tab("\t");
  EXPECT_EQ(SplitToStrings(tab, "1\t2\t"), (Strings{"1", "2", ""}));
  RecordParser two("||");
  EXPECT_EQ(SplitToStrings(two, "a||b|c||"), (Strings{"a", "b|c", ""}));
  EXPECT_EQ(SplitToStrings(two, "a|||b"), (Strings{"a", "|b"}));
}

TEST(RecordParserTest, DoesNotTrim) {
  RecordParser p(",");
  EXPECT_EQ(SplitToStrings(p, " a , b ,"), (Strings{" a ", " b ", ""}));
}

TEST(RecordParserTest, QuotedFieldsFollowRfc4180) {
  RecordParser p(",");
  EXPECT_EQ(SplitToStrings(p, R"("a,b",c)"), (Strings{"a,b", "c"}));
  EXPECT_EQ(SplitToStrings(p, "\"line1\nline2\",x"), (Strings{"line1\nline2", "x"}));
  EXPECT_EQ(SplitToStrings(p, R"("say ""hi""",2)"), (Strings{"say \"hi\"", "2"}));
  EXPECT_EQ(SplitToStrings(p, R"("",x,"")"), (Strings{"", "x", ""}));
  EXPECT_EQ(SplitToStrings(p, R"("""")"), (Strings{"\""}));
  // A quote that does not start the field is an ordinary character.
  EXPECT_EQ(SplitToStrings(p, R"(5" screen,b"c")"), (Strings{"5\" screen", "b\"c\""}));
  // Text after the closing quote is kept; an unclosed quote runs to the end of the record.
  EXPECT_EQ(SplitToStrings(p, R"("ab"c,d)"), (Strings{"abc", "d"}));
  EXPECT_EQ(SplitToStrings(p, R"(x,"open,end)"), (Strings{"x", "open,end"}));
  // A blank before the quote makes the field unquoted (no trimming).
  EXPECT_EQ(SplitToStrings(p, R"(a, "b,c")"), (Strings{"a", " \"b", "c\""}));
  RecordParser two("||");
  EXPECT_EQ(SplitToStrings(two, R"("a||b"||"c""d")"), (Strings{"a||b", "c\"d"}));
}

TEST(RecordParserTest, SplitInPlaceUnescapesInsideTheRecord) {
  RecordParser p("|");
  std::string rec = R"(x|"a""b"|"c|d")";
  std::vector<std::string_view> fields;
  EXPECT_EQ(p.SplitInPlace(rec.data(), rec.size(), &fields), 3u);
  ASSERT_EQ(fields.size(), 3u);
  EXPECT_EQ(fields[0], "x");
  EXPECT_EQ(fields[1], "a\"b");
  EXPECT_EQ(fields[2], "c|d");
  for (auto f : fields) {
    EXPECT_GE(f.data(), rec.data());
    EXPECT_LE(f.data() + f.size(), rec.data() + rec.size());
  }
}

TEST(RecordParserTest, NextRecordHandlesQuotedNewlinesAndCrLf) {
  RecordParser p(",");
  std::string text = "a,b\r\n\"x\ny\",z\n\nlast,1";
  std::string_view rest(text), rec;
  uint64_t lines = 0;
  ASSERT_TRUE(p.NextRecord(&rest, &rec, &lines));
  EXPECT_EQ(rec, "a,b");
  EXPECT_EQ(lines, 1u);
  ASSERT_TRUE(p.NextRecord(&rest, &rec, &lines));
  EXPECT_EQ(rec, "\"x\ny\",z");
  EXPECT_EQ(lines, 2u);
  ASSERT_TRUE(p.NextRecord(&rest, &rec, &lines));
  EXPECT_EQ(rec, "");
  ASSERT_TRUE(p.NextRecord(&rest, &rec, &lines));
  EXPECT_EQ(rec, "last,1");
  EXPECT_FALSE(p.NextRecord(&rest, &rec, &lines));
}

TEST(RecordParserTest, FindRecordEndNeedsMoreInputInsideQuotes) {
  RecordParser p(",");
  EXPECT_EQ(p.FindRecordEnd("a,b\nc"), 4u);
  EXPECT_EQ(p.FindRecordEnd("a,\"b\nc"), std::string_view::npos);
  EXPECT_EQ(p.FindRecordEnd("a,\"b\nc\"\nd"), 8u);
  // A closing quote at the very end might still be half of "".
  EXPECT_EQ(p.FindRecordEnd("a,\"b\""), std::string_view::npos);
  EXPECT_EQ(p.FindRecordEnd("no newline"), std::string_view::npos);
  // Quote parity when there is no delimiter.
  RecordParser parity("");
  EXPECT_EQ(parity.FindRecordEnd("x\"a\nb\"\nc"), 7u);
}

// Builds random records, joins them and checks SplitChunk against the expected fields.
TEST(RecordParserTest, SplitChunkMatchesReferenceOnRandomInput) {
  std::mt19937 rng(7);
  const char* delimiters[] = {",", "|", "\t", "||"};
  for (int round = 0; round < 400; ++round) {
    const std::string delim = delimiters[round % 4];
    const size_t ncols = 1 + rng() % 5;
    std::string text;
    std::vector<Strings> expected_rows;
    std::vector<uint64_t> expected_lines;
    std::vector<uint64_t> expected_bad_lines;
    uint64_t line = 1;
    const int nrec = static_cast<int>(rng() % 60);
    for (int r = 0; r < nrec; ++r) {
      if (rng() % 15 == 0) {  // a blank line
        text += (rng() % 2) ? "\r\n" : "\n";
        ++line;
        continue;
      }
      size_t n = ncols;
      if (rng() % 10 == 0) n = 1 + rng() % 6;  // maybe a wrong count
      Strings fields;
      std::string rec;
      uint64_t rec_lines = 1;
      for (size_t i = 0; i < n; ++i) {
        std::string value;
        const int len = static_cast<int>(rng() % 6);
        const bool quoted = rng() % 4 == 0;
        for (int k = 0; k < len; ++k) {
          const char* alphabet = quoted ? "ab,|\t\"\nx" : "abc 12";
          const size_t alen = std::char_traits<char>::length(alphabet);
          value.push_back(alphabet[rng() % alen]);
        }
        if (!quoted && n == 1 && value.empty()) value = "v";  // not a blank line
        if (i) rec += delim;
        if (quoted) {
          rec += '"';
          for (char c : value) {
            if (c == '"') rec += '"';
            if (c == '\n') ++rec_lines;
            rec += c;
          }
          rec += '"';
        } else {
          rec += value;
        }
        fields.push_back(value);
      }
      text += rec;
      text += (rng() % 3 == 0) ? "\r\n" : "\n";
      if (n == ncols) {
        expected_rows.push_back(fields);
        expected_lines.push_back(line);
      } else {
        expected_bad_lines.push_back(line);
      }
      line += rec_lines;
    }
    RecordParser p(delim);
    SplitResult out;
    std::string buf = text;
    p.SplitChunk(buf.data(), buf.size(), 1, ncols, &out);
    ASSERT_EQ(out.lines, expected_lines) << "round " << round;
    ASSERT_EQ(out.num_fields, expected_rows.size() * ncols);
    for (size_t r = 0; r < expected_rows.size(); ++r) {
      for (size_t c = 0; c < ncols; ++c) {
        ASSERT_EQ(out.fields[r * ncols + c], expected_rows[r][c])
            << "round " << round << " row " << r << " col " << c << "\n"
            << text;
      }
    }
    std::vector<uint64_t> bad_lines;
    for (const auto& b : out.bad) bad_lines.push_back(b.line);
    ASSERT_EQ(bad_lines, expected_bad_lines) << "round " << round;
  }
}

TEST(RecordParserTest, SplitChunkHandlesLongRecordsAndMissingFinalNewline) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += std::to_string(i) + ",x" + std::string(i % 97, 'y') + "\n";
  text += "last,\"q\nq\"";  // no final newline, with a quoted newline
  RecordParser p(",");
  SplitResult out;
  p.SplitChunk(text.data(), text.size(), 10, 2, &out);
  ASSERT_EQ(out.lines.size(), 1001u);
  EXPECT_EQ(out.lines[0], 10u);
  EXPECT_EQ(out.lines[1000], 1010u);
  EXPECT_EQ(out.fields[2 * 999], "999");
  EXPECT_EQ(out.fields[2 * 1000 + 1], "q\nq");
  EXPECT_TRUE(out.bad.empty());
}

TEST(RecordParserTest, SplitChunkReportsBadRecords) {
  std::string text = "a,b\nc\nd,e,f\n\"m\nn\"\n";
  RecordParser p(",");
  SplitResult out;
  p.SplitChunk(text.data(), text.size(), 1, 2, &out);
  ASSERT_EQ(out.lines.size(), 1u);
  ASSERT_EQ(out.bad.size(), 3u);
  EXPECT_EQ(out.bad[0].line, 2u);
  EXPECT_EQ(out.bad[0].num_fields, 1u);
  EXPECT_EQ(out.bad[1].line, 3u);
  EXPECT_EQ(out.bad[1].num_fields, 3u);
  EXPECT_EQ(out.bad[2].line, 4u);
  EXPECT_EQ(out.bad[2].num_lines, 2u);
}

TEST(RecordParserTest, CountNewlines) {
  std::string s(1000, 'a');
  for (size_t i = 0; i < s.size(); i += 7) s[i] = '\n';
  size_t expected = 0;
  for (char c : s) expected += c == '\n';
  for (size_t len : {0, 1, 15, 16, 33, 64, 999, 1000}) {
    size_t e = 0;
    for (size_t i = 0; i < len; ++i) e += s[i] == '\n';
    EXPECT_EQ(CountNewlines(s.data(), len), e) << len;
  }
  EXPECT_EQ(CountNewlines(s.data(), s.size()), expected);
}

TEST(MissingValuesTest, TrimmedAndCaseInsensitive) {
  MissingValues m;  // "", "?"
  EXPECT_TRUE(m.IsMissing(""));
  EXPECT_TRUE(m.IsMissing("   "));
  EXPECT_TRUE(m.IsMissing("?"));
  EXPECT_TRUE(m.IsMissing(" ? "));
  EXPECT_FALSE(m.IsMissing("0"));
  EXPECT_FALSE(m.IsMissing("??"));
  MissingValues n({"NULL", "n/a", " * "});
  EXPECT_TRUE(n.IsMissing("null"));
  EXPECT_TRUE(n.IsMissing("Null "));
  EXPECT_TRUE(n.IsMissing("N/A"));
  EXPECT_TRUE(n.IsMissing("*"));
  EXPECT_FALSE(n.IsMissing(""));  // "" is not in this list
  EXPECT_FALSE(n.IsMissing("nullx"));
  MissingValues none(std::vector<std::string>{});
  EXPECT_FALSE(none.IsMissing(""));
  MissingValues long_value({std::string(100, 'z')});
  EXPECT_TRUE(long_value.IsMissing(std::string(100, 'Z')));
  EXPECT_FALSE(long_value.IsMissing(std::string(99, 'z')));
}

}  // namespace
}  // namespace tarn::data
