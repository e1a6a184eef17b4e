// Row filters: the subset of JEXL that Shifu's dataSet.filterExpressions use in practice.
//
// Supported:
//  - comparisons of a column with a literal: ==  !=  <  <=  >  >=  (also JEXL's eq ne lt le gt
//    ge); the column may be on either side (3 < age is age > 3);
//  - && || ! and the JEXL words and, or, not; parentheses; && binds tighter than ||;
//    ! must be followed by '(' (write !(a == 1)): JEXL reads !a == 1 as (!a) == 1, which is an
//    error on text columns, so tarn refuses it rather than guess;
//  - literals: numbers (123, -4.5, 1e-3; JEXL's type suffixes l f d h b are accepted and
//    ignored), strings in '...' or "..." (backslash escapes \\ \' \" \n \t), null, true, false.
//
// Meaning:
//  - number literal: the field is parsed as a number (blanks trimmed, as Shifu's
//    Double.parseDouble after trim). A field that is not a number makes the comparison false,
//    and != true. Shifu's JEXL raises an error there, which drops the row whatever the operator;
//    tarn keeps "x != 3" true for x = "abc", which is what the expression says.
//  - string literal: exact, case-sensitive comparison of the untrimmed field (< and > compare
//    bytes), as JEXL compares two strings.
//  - null: "col == null" is true when the field is missing by dataSet.missingOrInvalidValues
//    (Shifu's reader never sees a null for a present field; tarn gives null that useful meaning).
//  - true/false: "col == true" compares the trimmed field with "true" ignoring case; a bare
//    true or false is a constant.
//  - A column is named as in the header, or by its Shifu name (ShifuColumnName below), so
//    "a::b-c" can be written b_c.
//
// Anything else (arithmetic, functions, =~, column-to-column comparisons, ...) is an error at
// parse time that names the setting, the expression, the 1-based column and what was expected:
//   filterExpressions "age > 3 + 4": at column 9: expected '&&', '||' or end, found '+'
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "data/record_parser.h"  // for MissingValues

namespace tarn::data {

class FilterExpression {
 public:
  /// An empty filter: accepts every row.
  FilterExpression() = default;

  /// Compiles `text` against the header. Empty or blank text gives an empty filter. `setting`
  /// names the ModelConfig key in error messages (e.g. "validationFilterExpressions").
  static Result<FilterExpression> Parse(const std::string& text,
                                        const std::vector<std::string>& column_names,
                                        std::string_view setting = "filterExpressions");

  /// Whether the row passes. `fields` holds one value per header column. Thread-safe, and
  /// allocates nothing.
  bool Matches(std::span<const std::string_view> fields, const MissingValues& missing) const;

  bool empty() const { return nodes_.empty(); }
  const std::string& text() const { return text_; }
  /// Fully parenthesised form with resolved column indexes, e.g. "(($0 > 3) || ($1 == 'x'))";
  /// shows how the expression was understood (tests, logs).
  std::string DebugString() const;

 private:
  enum class Kind : uint8_t { kAnd, kOr, kNot, kConst, kNumber, kString, kNull, kBool };
  enum class Op : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
  struct Node {
    Kind kind = Kind::kConst;
    Op op = Op::kEq;
    bool value = false;  // kConst, kBool
    int column = -1;
    int left = -1, right = -1;
    double number = 0;
    std::string text;  // kString
  };
  class Parser;

  bool Eval(int node, std::span<const std::string_view> fields, const MissingValues& missing) const;
  std::string NodeString(int node) const;

  std::vector<Node> nodes_;
  int root_ = -1;
  std::string text_;
};

/// The name Shifu gives a header column in ColumnConfig.json: the part after the last "::"
/// (Pig's namespace) with '.', ' ', '/' and '-' replaced by '_'.
std::string ShifuColumnName(std::string_view header_name);

}  // namespace tarn::data
