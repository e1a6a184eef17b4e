#include "data/filter_expression.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tarn::data {
namespace {

const std::vector<std::string> kColumns = {"age", "name", "score", "flag", "pig::my-col"};

FilterExpression Compile(const std::string& text) {
  auto f = FilterExpression::Parse(text, kColumns);
  EXPECT_TRUE(f.ok()) << text << ": " << f.status().message();
  return f.ok() ? std::move(f).value() : FilterExpression();
}

std::string ParseError(const std::string& text) {
  auto f = FilterExpression::Parse(text, kColumns);
  EXPECT_FALSE(f.ok()) << text;
  if (f.ok()) return "";
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  return f.status().message();
}

bool Match(const std::string& text, std::vector<std::string_view> row) {
  static const MissingValues missing({"", "?", "null"});
  return Compile(text).Matches(row, missing);
}

const std::vector<std::string_view> kRow = {"30", "Bob", "7.5", "TRUE", "x"};

TEST(FilterExpressionTest, EmptyAcceptsEverything) {
  for (const char* t : {"", "   ", "\t\n"}) {
    FilterExpression f = Compile(t);
    EXPECT_TRUE(f.empty());
    EXPECT_TRUE(f.Matches(kRow, MissingValues()));
  }
  EXPECT_TRUE(FilterExpression().Matches(kRow, MissingValues()));
}

TEST(FilterExpressionTest, NumericComparisons) {
  EXPECT_TRUE(Match("age == 30", kRow));
  EXPECT_TRUE(Match("age == 30.0", kRow));
  EXPECT_FALSE(Match("age != 30", kRow));
  EXPECT_TRUE(Match("age != 31", kRow));
  EXPECT_TRUE(Match("age < 31", kRow));
  EXPECT_FALSE(Match("age < 30", kRow));
  EXPECT_TRUE(Match("age <= 30", kRow));
  EXPECT_TRUE(Match("age > 29.5", kRow));
  EXPECT_FALSE(Match("age > 30", kRow));
  EXPECT_TRUE(Match("age >= 30", kRow));
  EXPECT_TRUE(Match("score > -1e1", kRow));
  EXPECT_TRUE(Match("score == 75e-1", kRow));
  EXPECT_TRUE(Match("age == 30L", kRow));  // JEXL type suffix
  // JEXL word operators.
  EXPECT_TRUE(Match("age eq 30 and score lt 8 and score le 7.5", kRow));
  EXPECT_TRUE(Match("age ne 3 or age gt 100", kRow));
  EXPECT_TRUE(Match("age ge 30 && not (age gt 30)", kRow));
  // Blanks around a number are trimmed, as Shifu's parse does.
  EXPECT_TRUE(Match("age == 30", {" 30 ", "", "", "", ""}));
}

TEST(FilterExpressionTest, ColumnMayBeOnEitherSide) {
  EXPECT_TRUE(Match("31 > age", kRow));
  EXPECT_FALSE(Match("30 > age", kRow));
  EXPECT_TRUE(Match("30 >= age", kRow));
  EXPECT_TRUE(Match("29 < age", kRow));
  EXPECT_TRUE(Match("30 <= age", kRow));
  EXPECT_TRUE(Match("'Bob' == name", kRow));
  EXPECT_EQ(Compile("3 < age").DebugString(), "($0 > 3)");
}

TEST(FilterExpressionTest, NonNumericFieldFailsNumericComparisonsExceptNotEquals) {
  const std::vector<std::string_view> row = {"abc", "", "", "", ""};
  EXPECT_FALSE(Match("age == 3", row));
  EXPECT_FALSE(Match("age < 3", row));
  EXPECT_FALSE(Match("age >= 3", row));
  EXPECT_TRUE(Match("age != 3", row));
  EXPECT_FALSE(Match("name > 0", row));  // empty
  EXPECT_TRUE(Match("name != 0", row));
}

TEST(FilterExpressionTest, StringComparisonsAreExact) {
  EXPECT_TRUE(Match("name == 'Bob'", kRow));
  EXPECT_TRUE(Match("name == \"Bob\"", kRow));
  EXPECT_FALSE(Match("name == 'bob'", kRow));
  EXPECT_FALSE(Match("name == 'Bob '", kRow));
  EXPECT_TRUE(Match("name != 'Alice'", kRow));
  EXPECT_TRUE(Match("name > 'Alice' && name < 'Carl'", kRow));
  EXPECT_FALSE(Match("name == 'Bob'", {"", " Bob", "", "", ""}));  // no trimming
  EXPECT_TRUE(Match(R"(name == 'it\'s')", {"", "it's", "", "", ""}));
  EXPECT_TRUE(Match(R"(name == "a\"b\\c")", {"", "a\"b\\c", "", "", ""}));
  // A number written as a string compares as text.
  EXPECT_FALSE(Match("age == '30.0'", kRow));
  EXPECT_TRUE(Match("age == '30'", kRow));
}

TEST(FilterExpressionTest, AndBindsTighterThanOr) {
  FilterExpression f = Compile("age == 1 || name == 'Bob' && score == 0");
  EXPECT_EQ(f.DebugString(), "(($0 == 1) || (($1 == 'Bob') && ($2 == 0)))");
  EXPECT_FALSE(f.Matches(kRow, MissingValues()));
  EXPECT_TRUE(Match("age == 30 || name == 'x' && score == 0", kRow));
  EXPECT_TRUE(Match("name == 'x' && score == 0 || age == 30", kRow));
  EXPECT_EQ(Compile("age == 1 or age == 2 and age == 3").DebugString(),
            "(($0 == 1) || (($0 == 2) && ($0 == 3)))");
}

TEST(FilterExpressionTest, ParenthesesAndNot) {
  EXPECT_FALSE(Match("(age == 30 || name == 'x') && score == 0", kRow));
  EXPECT_TRUE(Match("(age == 30 || name == 'x') && (score == 7.5)", kRow));
  EXPECT_TRUE(Match("!(age == 1)", kRow));
  EXPECT_FALSE(Match("!(age == 30)", kRow));
  EXPECT_TRUE(Match("!!(age == 30)", kRow));
  EXPECT_TRUE(Match("not (age == 1) and ((((score > 7))))", kRow));
  EXPECT_EQ(Compile("!(age == 1 || age == 2)").DebugString(), "!(($0 == 1) || ($0 == 2))");
}

TEST(FilterExpressionTest, NullMeansMissing) {
  EXPECT_TRUE(Match("name == null", {"1", "", "", "", ""}));
  EXPECT_TRUE(Match("name == null", {"1", " ? ", "", "", ""}));
  EXPECT_TRUE(Match("name == null", {"1", "NULL", "", "", ""}));
  EXPECT_FALSE(Match("name == null", kRow));
  EXPECT_TRUE(Match("name != null", kRow));
  EXPECT_TRUE(Match("null != name", kRow));
}

TEST(FilterExpressionTest, TrueAndFalse) {
  EXPECT_TRUE(Match("flag == true", kRow));
  EXPECT_FALSE(Match("flag == false", kRow));
  EXPECT_TRUE(Match("flag != false", kRow));
  EXPECT_TRUE(Match("true", kRow));
  EXPECT_FALSE(Match("false", kRow));
  EXPECT_TRUE(Match("false || age == 30", kRow));
  EXPECT_TRUE(Match("!false", kRow));
}

TEST(FilterExpressionTest, ColumnsByShifuName) {
  EXPECT_TRUE(Match("my_col == 'x'", kRow));
  EXPECT_EQ(ShifuColumnName("a::b::my-col.x y/z"), "my_col_x_y_z");
}

TEST(FilterExpressionTest, SyntaxErrorsNamePositionAndExpectation) {
  EXPECT_EQ(ParseError("age > 3 + 4"),
            "filterExpressions \"age > 3 + 4\": at column 9: expected '&&', '||' or end, found "
            "'+'");
  EXPECT_EQ(ParseError("age >"),
            "filterExpressions \"age >\": at column 6: expected a number, a 'string', null, true "
            "or false, found end");
  EXPECT_NE(ParseError("(age > 3").find("at column 9: expected '&&', '||' or ')', found end"),
            std::string::npos);
  EXPECT_NE(ParseError("age 3").find("at column 5: expected a comparison operator"),
            std::string::npos);
  EXPECT_NE(ParseError("name == 'abc").find("at column 9: string not closed"), std::string::npos);
  EXPECT_NE(ParseError("name =~ 'a.*'").find("found '=~'"), std::string::npos);
  EXPECT_NE(ParseError("age = 3").find("found '='"), std::string::npos);
  EXPECT_NE(ParseError("!age == 3").find("expected '(' after '!'"), std::string::npos);
  EXPECT_NE(ParseError("age > score").find("comparing two columns"), std::string::npos);
  EXPECT_NE(ParseError("1 == 1").find("must be a column name"), std::string::npos);
  EXPECT_NE(ParseError("age < null").find("null can only be compared with == or !="),
            std::string::npos);
  EXPECT_NE(ParseError("size(name) > 3").find("function calls"), std::string::npos);
  EXPECT_NE(ParseError("age > 3abc").find("'3abc' is not a number"), std::string::npos);
  EXPECT_NE(ParseError("age > 3 &&").find("found end"), std::string::npos);
  EXPECT_NE(ParseError("age > 3 & age < 4").find("found '&'"), std::string::npos);
  EXPECT_NE(ParseError(std::string(200, '(') + "age > 1" + std::string(200, ')'))
                .find("nested too deeply"),
            std::string::npos);
}

TEST(FilterExpressionTest, UnknownColumnIsNamedWithTheColumns) {
  const std::string m = ParseError("agee > 3");
  EXPECT_NE(m.find("at column 1: unknown column 'agee'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'age'?"), std::string::npos) << m;
  EXPECT_NE(m.find("age, name, score, flag, pig::my-col"), std::string::npos) << m;
}

TEST(FilterExpressionTest, SettingNameInMessages) {
  auto f = FilterExpression::Parse("x >", kColumns, "validationFilterExpressions");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message().rfind("validationFilterExpressions \"x >\"", 0), 0u)
      << f.status().message();
}

}  // namespace
}  // namespace tarn::data
