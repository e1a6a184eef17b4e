#include "data/filter_expression.h"

#include <algorithm>  // for std::min
#include <cctype>
#include <charconv>  // for std::from_chars
#include <cmath>

#include "common/strings.h"  // for ParseDouble, Trim, EqualsIgnoreCase, FormatDouble

namespace tarn::data {
namespace {

constexpr int kMaxDepth = 100;

enum class Tok {
  kEnd,
  kIdent,
  kNumber,
  kString,
  kLParen,
  kRParen,
  kAnd,
  kOr,
  kNot,
  kCmp,
  kMinus,
  kOther,
};

struct Token {
  Tok type = Tok::kEnd;
  size_t pos = 0;     // byte offset in the expression
  std::string text;   // as written
  std::string value;  // kString: unescaped; kCmp: "==", "!=", "<", "<=", ">", ">="
  double number = 0;
};

bool IsIdentStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}
bool IsIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

}  // namespace

std::string ShifuColumnName(std::string_view name) {
  const size_t ns = name.rfind("::");
  if (ns != std::string_view::npos) name.remove_prefix(ns + 2);
  std::string out(name);
  for (auto& c : out) {
    if (c == '.' || c == ' ' || c == '/' || c == '-') c = '_';
  }
  return out;
}

class FilterExpression::Parser {
 public:
  Parser(const std::string& text, const std::vector<std::string>& columns, std::string_view setting,
         FilterExpression* out)
      : text_(text), columns_(columns), setting_(setting), out_(out) {}

  Status Run() {
    TARN_RETURN_IF_ERROR(Advance());
    TARN_ASSIGN_OR_RETURN(int root, ParseOr(0));
    if (tok_.type != Tok::kEnd) return Expected("'&&', '||' or end");
    out_->root_ = root;
    return Status::Ok();
  }

 private:
  Status Error(size_t pos, const std::string& what) const {
    return InvalidArgument(std::string(setting_) + " \"" + text_ + "\": at column " +
                           std::to_string(pos + 1) + ": " + what);
  }

  static std::string Describe(const Token& t) {
    return t.type == Tok::kEnd ? std::string("end") : "'" + t.text + "'";
  }

  Status Expected(const std::string& what) const {
    return Error(tok_.pos, "expected " + what + ", found " + Describe(tok_));
  }

  Status Advance() {
    const std::string& s = text_;
    size_t i = pos_;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    tok_ = Token();
    tok_.pos = i;
    if (i >= s.size()) {
      pos_ = i;
      return Status::Ok();
    }
    const char c = s[i];
    auto two = [&](const char* op) { return s.compare(i, 2, op) == 0; };
    size_t end = i + 1;
    if (IsIdentStart(c)) {
      while (end < s.size() && IsIdentChar(s[end])) ++end;
      tok_.text = s.substr(i, end - i);
      const std::string& w = tok_.text;
      if (w == "and") {
        tok_.type = Tok::kAnd;
      } else if (w == "or") {
        tok_.type = Tok::kOr;
      } else if (w == "not") {
        tok_.type = Tok::kNot;
      } else if (w == "eq" || w == "ne" || w == "lt" || w == "le" || w == "gt" || w == "ge") {
        tok_.type = Tok::kCmp;
        static const char* kOps[][2] = {{"eq", "=="}, {"ne", "!="}, {"lt", "<"},
                                        {"le", "<="}, {"gt", ">"},  {"ge", ">="}};
        for (const auto& op : kOps) {
          if (w == op[0]) tok_.value = op[1];
        }
      } else {
        tok_.type = Tok::kIdent;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
      if (end + 1 < s.size() && s[end] == '.' &&
          std::isdigit(static_cast<unsigned char>(s[end + 1]))) {
        ++end;
        while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
      }
      if (end < s.size() && (s[end] == 'e' || s[end] == 'E')) {
        size_t e = end + 1;
        if (e < s.size() && (s[e] == '+' || s[e] == '-')) ++e;
        if (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) {
          while (e < s.size() && std::isdigit(static_cast<unsigned char>(s[e]))) ++e;
          end = e;
        }
      }
      const size_t digits_end = end;
      if (end < s.size() && std::string_view("lLfFdDhHbB").find(s[end]) != std::string_view::npos) {
        ++end;
      }
      if (end < s.size() && IsIdentChar(s[end])) {
        while (end < s.size() && IsIdentChar(s[end])) ++end;
        return Error(i, "'" + s.substr(i, end - i) + "' is not a number");
      }
      tok_.type = Tok::kNumber;
      tok_.text = s.substr(i, end - i);
      auto [ptr, ec] = std::from_chars(s.data() + i, s.data() + digits_end, tok_.number);
      if (ec == std::errc::result_out_of_range) {
        tok_.number = HUGE_VAL;
      } else if (ec != std::errc() || ptr != s.data() + digits_end) {
        return Error(i, "'" + tok_.text + "' is not a number");
      }
    } else if (c == '\'' || c == '"') {
      std::string value;
      size_t j = i + 1;
      bool closed = false;
      while (j < s.size()) {
        char ch = s[j];
        if (ch == c) {
          closed = true;
          break;
        }
        if (ch == '\\' && j + 1 < s.size()) {
          ch = s[++j];
          if (ch == 'n') ch = '\n';
          if (ch == 't') ch = '\t';
        }
        value.push_back(ch);
        ++j;
      }
      if (!closed) return Error(i, "string not closed: no " + std::string(1, c) + " after it");
      end = j + 1;
      tok_.type = Tok::kString;
      tok_.text = s.substr(i, end - i);
      tok_.value = std::move(value);
    } else if (two("&&")) {
      tok_.type = Tok::kAnd;
      end = i + 2;
    } else if (two("||")) {
      tok_.type = Tok::kOr;
      end = i + 2;
    } else if (two("==") || two("!=") || two("<=") || two(">=")) {
      tok_.type = Tok::kCmp;
      end = i + 2;
      tok_.value = s.substr(i, 2);
    } else if (two("=~") || two("!~")) {
      tok_.type = Tok::kOther;
      end = i + 2;
    } else if (c == '<' || c == '>') {
      tok_.type = Tok::kCmp;
      tok_.value = std::string(1, c);
    } else if (c == '!') {
      tok_.type = Tok::kNot;
    } else if (c == '(') {
      tok_.type = Tok::kLParen;
    } else if (c == ')') {
      tok_.type = Tok::kRParen;
    } else if (c == '-') {
      tok_.type = Tok::kMinus;
    } else {
      tok_.type = Tok::kOther;
      // Keep a UTF-8 character whole in messages.
      while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) ++end;
    }
    if (tok_.text.empty()) tok_.text = s.substr(i, end - i);
    pos_ = end;
    return Status::Ok();
  }

  int Add(Node n) {
    out_->nodes_.push_back(std::move(n));
    return static_cast<int>(out_->nodes_.size()) - 1;
  }

  Result<int> ParseOr(int depth) {
    if (depth > kMaxDepth) return Error(tok_.pos, "expression nested too deeply");
    TARN_ASSIGN_OR_RETURN(int left, ParseAnd(depth));
    while (tok_.type == Tok::kOr) {
      TARN_RETURN_IF_ERROR(Advance());
      TARN_ASSIGN_OR_RETURN(int right, ParseAnd(depth));
      Node n;
      n.kind = Kind::kOr;
      n.left = left;
      n.right = right;
      left = Add(std::move(n));
    }
    return left;
  }

  Result<int> ParseAnd(int depth) {
    TARN_ASSIGN_OR_RETURN(int left, ParseUnary(depth));
    while (tok_.type == Tok::kAnd) {
      TARN_RETURN_IF_ERROR(Advance());
      TARN_ASSIGN_OR_RETURN(int right, ParseUnary(depth));
      Node n;
      n.kind = Kind::kAnd;
      n.left = left;
      n.right = right;
      left = Add(std::move(n));
    }
    return left;
  }

  static bool IsBoolWord(const Token& t) {
    return t.type == Tok::kIdent && (t.text == "true" || t.text == "false");
  }

  Result<int> ParseUnary(int depth) {
    if (depth > kMaxDepth) return Error(tok_.pos, "expression nested too deeply");
    if (tok_.type == Tok::kNot) {
      const std::string op = tok_.text;
      TARN_RETURN_IF_ERROR(Advance());
      if (tok_.type != Tok::kLParen && tok_.type != Tok::kNot && !IsBoolWord(tok_)) {
        return Error(tok_.pos, "expected '(' after '" + op + "' (write " + op +
                                   "(a == 1)), found " + Describe(tok_));
      }
      TARN_ASSIGN_OR_RETURN(int inner, ParseUnary(depth + 1));
      Node n;
      n.kind = Kind::kNot;
      n.left = inner;
      return Add(std::move(n));
    }
    if (tok_.type == Tok::kLParen) {
      TARN_RETURN_IF_ERROR(Advance());
      TARN_ASSIGN_OR_RETURN(int inner, ParseOr(depth + 1));
      if (tok_.type != Tok::kRParen) return Expected("'&&', '||' or ')'");
      TARN_RETURN_IF_ERROR(Advance());
      return inner;
    }
    return ParseComparison();
  }

  // One side of a comparison.
  struct Operand {
    enum Type { kColumn, kNumber, kString, kNull, kBool } type = kColumn;
    int column = -1;
    double number = 0;
    std::string text;
    bool value = false;
    size_t pos = 0;
    std::string written;
  };

  Result<int> ResolveColumn(const Token& t) {
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i] == t.text) return static_cast<int>(i);
    }
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (ShifuColumnName(columns_[i]) == t.text) return static_cast<int>(i);
    }
    std::string msg = "unknown column '" + t.text + "'";
    size_t best = 3;
    std::string suggestion;
    for (const auto& c : columns_) {
      const size_t d = EditDistance(t.text, ShifuColumnName(c));
      if (d < best) {
        best = d;
        suggestion = c;
      }
    }
    if (!suggestion.empty()) msg += " (did you mean '" + suggestion + "'?)";
    msg += "; the columns are: ";
    const size_t shown = std::min<size_t>(columns_.size(), 30);
    for (size_t i = 0; i < shown; ++i) msg += (i ? ", " : "") + columns_[i];
    if (shown < columns_.size()) msg += ", ... (" + std::to_string(columns_.size()) + " in all)";
    return Error(t.pos, msg);
  }

  Result<Operand> ParseOperand(const char* expected) {
    Operand o;
    o.pos = tok_.pos;
    o.written = tok_.text;
    switch (tok_.type) {
      case Tok::kIdent:
        if (tok_.text == "null") {
          o.type = Operand::kNull;
        } else if (IsBoolWord(tok_)) {
          o.type = Operand::kBool;
          o.value = tok_.text == "true";
        } else {
          // A name followed by '(' is a function call, which tarn does not support.
          size_t k = pos_;
          while (k < text_.size() && std::isspace(static_cast<unsigned char>(text_[k]))) ++k;
          if (k < text_.size() && text_[k] == '(') {
            return Error(tok_.pos, "function calls such as '" + tok_.text +
                                       "(...)' are not supported in tarn's filter subset");
          }
          TARN_ASSIGN_OR_RETURN(o.column, ResolveColumn(tok_));
          o.type = Operand::kColumn;
        }
        break;
      case Tok::kNumber:
        o.type = Operand::kNumber;
        o.number = tok_.number;
        break;
      case Tok::kMinus: {
        TARN_RETURN_IF_ERROR(Advance());
        if (tok_.type != Tok::kNumber) return Expected("a number after '-'");
        o.type = Operand::kNumber;
        o.number = -tok_.number;
        o.written = "-" + tok_.text;
        break;
      }
      case Tok::kString:
        o.type = Operand::kString;
        o.text = tok_.value;
        break;
      default:
        return Expected(expected);
    }
    TARN_RETURN_IF_ERROR(Advance());
    return o;
  }

  Result<int> ParseComparison() {
    TARN_ASSIGN_OR_RETURN(Operand a,
                          ParseOperand("a comparison such as age > 30, '(', '!' or a column name"));
    if (tok_.type != Tok::kCmp) {
      if (a.type == Operand::kBool) {
        Node n;
        n.kind = Kind::kConst;
        n.value = a.value;
        return Add(std::move(n));
      }
      return Expected("a comparison operator (==, !=, <, <=, >, >=) after '" + a.written + "'");
    }
    const std::string op_text = tok_.value;
    const size_t op_pos = tok_.pos;
    TARN_RETURN_IF_ERROR(Advance());
    TARN_ASSIGN_OR_RETURN(Operand b, ParseOperand("a number, a 'string', null, true or false"));
    Op op = op_text == "=="   ? Op::kEq
            : op_text == "!=" ? Op::kNe
            : op_text == "<"  ? Op::kLt
            : op_text == "<=" ? Op::kLe
            : op_text == ">"  ? Op::kGt
                              : Op::kGe;
    if (a.type == Operand::kColumn && b.type == Operand::kColumn) {
      return Error(b.pos,
                   "comparing two columns is not supported; compare a column with a literal");
    }
    if (a.type != Operand::kColumn && b.type != Operand::kColumn) {
      return Error(a.pos, "one side of '" + op_text + "' must be a column name");
    }
    if (b.type == Operand::kColumn) {  // literal op column: mirror it
      std::swap(a, b);
      if (op == Op::kLt) {
        op = Op::kGt;
      } else if (op == Op::kLe) {
        op = Op::kGe;
      } else if (op == Op::kGt) {
        op = Op::kLt;
      } else if (op == Op::kGe) {
        op = Op::kLe;
      }
    }
    Node n;
    n.column = a.column;
    n.op = op;
    switch (b.type) {
      case Operand::kNumber:
        n.kind = Kind::kNumber;
        n.number = b.number;
        break;
      case Operand::kString:
        n.kind = Kind::kString;
        n.text = b.text;
        break;
      case Operand::kNull:
      case Operand::kBool:
        if (op != Op::kEq && op != Op::kNe) {
          return Error(op_pos, b.written + " can only be compared with == or !=");
        }
        n.kind = b.type == Operand::kNull ? Kind::kNull : Kind::kBool;
        n.value = b.value;
        break;
      case Operand::kColumn:
        break;
    }
    return Add(std::move(n));
  }

  const std::string& text_;
  const std::vector<std::string>& columns_;
  std::string_view setting_;
  FilterExpression* out_;
  size_t pos_ = 0;
  Token tok_;
};

Result<FilterExpression> FilterExpression::Parse(const std::string& text,
                                                 const std::vector<std::string>& column_names,
                                                 std::string_view setting) {
  FilterExpression f;
  if (Trim(text).empty()) return f;
  f.text_ = text;
  Parser parser(text, column_names, setting, &f);
  TARN_RETURN_IF_ERROR(parser.Run());
  return f;
}

namespace {

template <typename T>
bool Compare(const T& a, const T& b, int op) {
  switch (op) {
    case 0:
      return a == b;
    case 1:
      return !(a == b);
    case 2:
      return a < b;
    case 3:
      return a <= b;
    case 4:
      return a > b;
    default:
      return a >= b;
  }
}

}  // namespace

bool FilterExpression::Matches(std::span<const std::string_view> fields,
                               const MissingValues& missing) const {
  if (root_ < 0) return true;
  return Eval(root_, fields, missing);
}

bool FilterExpression::Eval(int index, std::span<const std::string_view> fields,
                            const MissingValues& missing) const {
  const Node& n = nodes_[static_cast<size_t>(index)];
  switch (n.kind) {
    case Kind::kAnd:
      return Eval(n.left, fields, missing) && Eval(n.right, fields, missing);
    case Kind::kOr:
      return Eval(n.left, fields, missing) || Eval(n.right, fields, missing);
    case Kind::kNot:
      return !Eval(n.left, fields, missing);
    case Kind::kConst:
      return n.value;
    default:
      break;
  }
  const std::string_view field = static_cast<size_t>(n.column) < fields.size()
                                     ? fields[static_cast<size_t>(n.column)]
                                     : std::string_view();
  const int op = static_cast<int>(n.op);
  switch (n.kind) {
    case Kind::kNumber: {
      const auto v = ParseDouble(field);
      if (!v) return n.op == Op::kNe;
      return Compare(*v, n.number, op);
    }
    case Kind::kString:
      return Compare(field, std::string_view(n.text), op);
    case Kind::kNull:
      return missing.IsMissing(field) == (n.op == Op::kEq);
    case Kind::kBool:
      return EqualsIgnoreCase(Trim(field), n.value ? "true" : "false") == (n.op == Op::kEq);
    default:
      return false;
  }
}

std::string FilterExpression::DebugString() const {
  return root_ < 0 ? std::string("true") : NodeString(root_);
}

std::string FilterExpression::NodeString(int index) const {
  const Node& n = nodes_[static_cast<size_t>(index)];
  static const char* kOps[] = {"==", "!=", "<", "<=", ">", ">="};
  const std::string col = "$" + std::to_string(n.column);
  const std::string op = kOps[static_cast<int>(n.op)];
  switch (n.kind) {
    case Kind::kAnd:
      return "(" + NodeString(n.left) + " && " + NodeString(n.right) + ")";
    case Kind::kOr:
      return "(" + NodeString(n.left) + " || " + NodeString(n.right) + ")";
    case Kind::kNot:
      return "!" + NodeString(n.left);
    case Kind::kConst:
      return n.value ? "true" : "false";
    case Kind::kNumber:
      return "(" + col + " " + op + " " + FormatDouble(n.number) + ")";
    case Kind::kString:
      return "(" + col + " " + op + " '" + n.text + "')";
    case Kind::kNull:
      return "(" + col + " " + op + " null)";
    case Kind::kBool:
      return "(" + col + " " + op + " " + (n.value ? "true" : "false") + ")";
  }
  return "?";
}

}  // namespace tarn::data
