// The `requires` expression language: tokenizer, recursive-descent parser and
// evaluator. The parser is fed untrusted text (specs, fuzzers), so it bounds
// the input length and the nesting depth, and evaluation never divides by
// zero or converts an out-of-range double to an integer.
#include "spec/requires.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace assay {

// One node of the parsed tree. Chains of the same precedence level
// (`a + b - c`, `x && y && z`) are stored flat in one node, so the tree depth
// is bounded by the nesting depth (parens, unary operators, calls), never by
// the length of the text.
struct Expr {
  enum class Kind { number, variable, call, neg, logical_not, chain, compare };
  Kind kind = Kind::number;
  double value = 0;        // number
  std::string name;        // variable, or the function of a call
  std::string tensor;      // call: the tensor argument
  int column = 1;          // 1-based column of the token that starts the node
  int tensor_column = 1;   // call: column of the tensor argument
  std::vector<std::string> ops;  // chain/compare: ops[i] joins args[i] and args[i + 1]
  std::vector<std::unique_ptr<Expr>> args;  // operands; call: the arguments after the tensor
};

namespace {

constexpr size_t kMaxLength = 4096;
constexpr int kMaxDepth = 64;

// Quotes text for an error message, escaping bytes that would not print.
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (unsigned char ch : s) {
    if (ch >= 0x20 && ch < 0x7f) {
      out += char(ch);
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out + "'";
}

[[noreturn]] void fail(const std::string& what, int column) {
  throw RequiresSyntaxError(what + " at column " + std::to_string(column), column);
}

enum class Tok { number, ident, op, lparen, rparen, comma, end };

struct Token {
  Tok kind = Tok::end;
  std::string text;
  int column = 1;
};

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Splits the text into tokens; every byte is either consumed or reported.
std::vector<Token> tokenize(std::string_view s) {
  std::vector<Token> toks;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    int col = int(i) + 1;
    if (is_space(c)) {
      ++i;
      continue;
    }
    size_t start = i;
    if (is_digit(c)) {
      while (i < s.size() && is_digit(s[i])) ++i;
      if (i < s.size() && s[i] == '.') {
        ++i;
        if (i >= s.size() || !is_digit(s[i])) fail("expected digits after '.'", int(i) + 1);
        while (i < s.size() && is_digit(s[i])) ++i;
      }
      toks.push_back({Tok::number, std::string(s.substr(start, i - start)), col});
      continue;
    }
    if (is_ident_start(c)) {
      while (i < s.size() && is_ident_char(s[i])) ++i;
      toks.push_back({Tok::ident, std::string(s.substr(start, i - start)), col});
      continue;
    }
    if (c == '(' || c == ')' || c == ',') {
      toks.push_back({c == '(' ? Tok::lparen : c == ')' ? Tok::rparen : Tok::comma, std::string(1, c), col});
      ++i;
      continue;
    }
    std::string_view two = s.substr(i, 2);
    if (two == "==" || two == "!=" || two == "<=" || two == ">=" || two == "&&" || two == "||") {
      toks.push_back({Tok::op, std::string(two), col});
      i += 2;
      continue;
    }
    if (std::string_view("+-*/%<>!").find(c) != std::string_view::npos) {
      toks.push_back({Tok::op, std::string(1, c), col});
      ++i;
      continue;
    }
    if (c == '=') fail("'=' is not an operator (use '==')", col);
    if (c == '&') fail("'&' is not an operator (use '&&')", col);
    if (c == '|') fail("'|' is not an operator (use '||')", col);
    fail("unexpected character " + quoted(s.substr(i, 1)), col);
  }
  toks.push_back({Tok::end, "", int(s.size()) + 1});
  return toks;
}

struct FunctionInfo {
  std::string_view name;
  int arity;  // including the tensor
};
constexpr FunctionInfo kFunctions[] = {
    {"contiguous", 1}, {"row_major", 1}, {"col_major", 1}, {"aligned", 2},
    {"ld", 1},         {"offset", 1},    {"rows", 1},      {"cols", 1},
};

const FunctionInfo* find_function(std::string_view name) {
  for (const auto& f : kFunctions)
    if (f.name == name) return &f;
  return nullptr;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : toks_(std::move(toks)) {}

  std::unique_ptr<Expr> parse_all() {
    if (peek().kind == Tok::end) fail("empty expression", peek().column);
    auto e = parse_or();
    if (peek().kind == Tok::rparen) fail("unbalanced ')'", peek().column);
    if (peek().kind != Tok::end) fail("unexpected " + describe(peek()), peek().column);
    return e;
  }

 private:
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;

  // Counts one level of recursion; the parser recurses only through these.
  struct DepthGuard {
    int& d;
    DepthGuard(int& depth, int column) : d(depth) {
      if (++d > kMaxDepth) {
        --d;
        fail("expression nested deeper than " + std::to_string(kMaxDepth) + " levels", column);
      }
    }
    ~DepthGuard() { --d; }
  };

  const Token& peek() const { return toks_[pos_]; }
  Token take() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  bool at_op(std::string_view op) const { return peek().kind == Tok::op && peek().text == op; }

  static std::string describe(const Token& t) {
    return t.kind == Tok::end ? std::string("end of expression") : quoted(t.text);
  }

  // Parses `next (op next)*` for the given operators into one chain node.
  template <class Next>
  std::unique_ptr<Expr> chain(std::initializer_list<std::string_view> ops, Next next) {
    auto first = (this->*next)();
    std::unique_ptr<Expr> node;
    for (;;) {
      bool found = false;
      for (auto op : ops) found = found || at_op(op);
      if (!found) break;
      if (!node) {
        node = std::make_unique<Expr>();
        node->kind = Expr::Kind::chain;
        node->column = first->column;
        node->args.push_back(std::move(first));
      }
      node->ops.push_back(take().text);
      node->args.push_back((this->*next)());
    }
    return node ? std::move(node) : std::move(first);
  }

  std::unique_ptr<Expr> parse_or() { return chain({"||"}, &Parser::parse_and); }
  std::unique_ptr<Expr> parse_and() { return chain({"&&"}, &Parser::parse_not); }
  std::unique_ptr<Expr> parse_sum() { return chain({"+", "-"}, &Parser::parse_term); }
  std::unique_ptr<Expr> parse_term() { return chain({"*", "/", "%"}, &Parser::parse_unary); }

  std::unique_ptr<Expr> parse_not() {
    if (!at_op("!")) return parse_cmp();
    Token t = take();
    DepthGuard g(depth_, t.column);
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::logical_not;
    e->column = t.column;
    e->args.push_back(parse_not());
    return e;
  }

  // Comparisons do not chain: `a < b < c` stops after `a < b` and the
  // leftover `< c` is reported as unexpected.
  std::unique_ptr<Expr> parse_cmp() {
    auto lhs = parse_sum();
    for (auto op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (!at_op(op)) continue;
      auto e = std::make_unique<Expr>();
      e->kind = Expr::Kind::compare;
      e->column = lhs->column;
      e->ops.push_back(take().text);
      e->args.push_back(std::move(lhs));
      e->args.push_back(parse_sum());
      return e;
    }
    return lhs;
  }

  std::unique_ptr<Expr> parse_unary() {
    if (!at_op("-")) return parse_primary();
    Token t = take();
    DepthGuard g(depth_, t.column);
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::neg;
    e->column = t.column;
    e->args.push_back(parse_unary());
    return e;
  }

  std::unique_ptr<Expr> parse_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::number: return parse_number();
      case Tok::ident: return parse_ident();
      case Tok::lparen: {
        Token open = take();
        DepthGuard g(depth_, open.column);
        auto e = parse_or();
        expect_rparen(open);
        return e;
      }
      default:
        fail("expected a number, name or '(' but found " + describe(t), t.column);
    }
  }

  void expect_rparen(const Token& open) {
    if (peek().kind == Tok::rparen) {
      take();
      return;
    }
    if (peek().kind == Tok::end)
      fail("missing ')' for the '(' at column " + std::to_string(open.column), peek().column);
    fail("expected ')' but found " + describe(peek()), peek().column);
  }

  std::unique_ptr<Expr> parse_number() {
    Token t = take();
    double v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size() || !std::isfinite(v))
      fail("number " + quoted(t.text.substr(0, 40)) + " is out of range", t.column);
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::number;
    e->value = v;
    e->column = t.column;
    return e;
  }

  std::unique_ptr<Expr> parse_ident() {
    Token t = take();
    auto e = std::make_unique<Expr>();
    e->name = t.text;
    e->column = t.column;
    if (peek().kind != Tok::lparen) {
      e->kind = Expr::Kind::variable;
      return e;
    }
    e->kind = Expr::Kind::call;
    parse_call(*e);
    return e;
  }

  // name '(' TENSOR (',' expr)* ')', checked against the function table.
  void parse_call(Expr& e) {
    const FunctionInfo* f = find_function(e.name);
    if (!f) fail("unknown function " + quoted(e.name), e.column);
    Token open = take();
    DepthGuard g(depth_, open.column);
    if (peek().kind != Tok::ident)
      fail(std::string(f->name) + "() takes a tensor name first, found " + describe(peek()), peek().column);
    Token tensor = take();
    e.tensor = tensor.text;
    e.tensor_column = tensor.column;
    while (peek().kind == Tok::comma) {
      take();
      e.args.push_back(parse_or());
    }
    expect_rparen(open);
    int given = 1 + int(e.args.size());
    if (given != f->arity)
      fail(std::string(f->name) + "() takes " + std::to_string(f->arity) + " argument" +
               (f->arity == 1 ? "" : "s") + ", got " + std::to_string(given),
           e.column);
  }
};

// ---- evaluation ----

bool truthy(double v) { return v == v && v != 0; }  // NaN counts as false

// Truncates toward zero, saturating instead of the undefined out-of-range cast.
int64_t to_int64(double v) {
  if (!(v == v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return int64_t(v);
}

double int_mod(double a, double b) {
  int64_t x = to_int64(a), y = to_int64(b);
  if (y == 0 || y == -1) return 0;  // x % -1 is 0, and INT64_MIN % -1 would trap
  return double(x % y);
}

// (value * elem_bytes) % bytes == 0 without overflowing.
bool multiple_of(int64_t value, int elem_bytes, int64_t bytes) {
  __int128 p = __int128(value) * elem_bytes;
  return p % bytes == 0;
}

bool aligned(const TensorGeom& g, double bytes_arg) {
  int64_t bytes = to_int64(bytes_arg);
  if (bytes <= 0) return false;
  int eb = dtype_bytes(g.dtype);
  if (!multiple_of(g.offset, eb, bytes)) return false;
  for (int64_t s : {g.row_stride(), g.col_stride()})
    if (s > 1 && !multiple_of(s, eb, bytes)) return false;
  return true;
}

double eval(const Expr& e, const EvalContext& ctx);

double eval_call(const Expr& e, const EvalContext& ctx) {
  auto g = ctx.tensor(e.tensor);
  if (!g) fail("unknown tensor " + quoted(e.tensor), e.tensor_column);
  const std::string& f = e.name;
  if (f == "contiguous") return g->contiguous();
  if (f == "row_major") return g->row_major();
  if (f == "col_major") return g->col_major();
  if (f == "aligned") return aligned(*g, eval(*e.args.at(0), ctx));
  if (f == "ld") return double(g->leading());
  if (f == "offset") return double(g->offset);
  if (f == "rows") return double(g->rows());
  return double(g->cols());  // "cols": the parser admits nothing else
}

double apply(std::string_view op, double a, double b) {
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") return b == 0 ? 0 : a / b;
  if (op == "%") return int_mod(a, b);
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  return a >= b;  // ">="
}

double eval_chain(const Expr& e, const EvalContext& ctx) {
  double acc = eval(*e.args[0], ctx);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    const std::string& op = e.ops[i];
    // && and || short-circuit; their operands have no side effects, so this
    // only saves work.
    if (op == "&&") {
      acc = truthy(acc) && truthy(eval(*e.args[i + 1], ctx));
    } else if (op == "||") {
      acc = truthy(acc) || truthy(eval(*e.args[i + 1], ctx));
    } else {
      acc = apply(op, acc, eval(*e.args[i + 1], ctx));
    }
  }
  return acc;
}

double eval(const Expr& e, const EvalContext& ctx) {
  switch (e.kind) {
    case Expr::Kind::number: return e.value;
    case Expr::Kind::variable: {
      auto v = ctx.variable(e.name);
      if (!v) fail("unknown variable " + quoted(e.name), e.column);
      return *v;
    }
    case Expr::Kind::call: return eval_call(e, ctx);
    case Expr::Kind::neg: return -eval(*e.args[0], ctx);
    case Expr::Kind::logical_not: return !truthy(eval(*e.args[0], ctx));
    case Expr::Kind::compare: return apply(e.ops[0], eval(*e.args[0], ctx), eval(*e.args[1], ctx));
    case Expr::Kind::chain: return eval_chain(e, ctx);
  }
  return 0;
}

// Visits names in text order and reports the first one ctx does not know.
void check(const Expr& e, const EvalContext& ctx) {
  if (e.kind == Expr::Kind::variable && !ctx.variable(e.name))
    fail("unknown variable " + quoted(e.name), e.column);
  if (e.kind == Expr::Kind::call && !ctx.tensor(e.tensor))
    fail("unknown tensor " + quoted(e.tensor), e.tensor_column);
  for (const auto& a : e.args) check(*a, ctx);
}

}  // namespace

Requirement Requirement::parse(std::string text) {
  if (text.size() > kMaxLength)
    fail("expression longer than " + std::to_string(kMaxLength) + " characters", int(kMaxLength) + 1);
  Requirement r;
  r.root_ = Parser(tokenize(text)).parse_all();
  r.text_ = std::move(text);
  return r;
}

void Requirement::check_names(const EvalContext& ctx) const {
  if (root_) check(*root_, ctx);
}

bool Requirement::holds(const EvalContext& ctx) const { return !root_ || truthy(eval(*root_, ctx)); }

double Requirement::value(const EvalContext& ctx) const { return root_ ? eval(*root_, ctx) : 0.0; }

}  // namespace assay
