// The `requires` expression language: evaluation, error columns, and
// hostile input that must end in RequiresSyntaxError, never in a crash.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "spec/requires.h"

using assay::DType;
using assay::Requirement;
using assay::RequiresSyntaxError;
using assay::TensorGeom;

namespace {

struct TestContext : assay::EvalContext {
  std::map<std::string, double, std::less<>> vars{{"m", 4}, {"n", 3}, {"k", 64}, {"alpha", 1.5}, {"beta", 0}};
  std::map<std::string, TensorGeom, std::less<>> tensors;

  TestContext() {
    // A: 4x64 f16 row-major, ld 72, offset 8 (16 bytes).
    tensors["A"] = TensorGeom::matrix(DType::f16, 4, 64, 72, 1, 8);
    // B: 64x3 f32 column-major, ld 65 (260 bytes: 4-aligned, not 16).
    tensors["B"] = TensorGeom::matrix(DType::f32, 64, 3, 1, 65, 0);
    // C: 4x3 f64 compact row-major, offset 1.
    tensors["C"] = TensorGeom::matrix(DType::f64, 4, 3, 3, 1, 1);
  }
  std::optional<double> variable(std::string_view name) const override {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }
  std::optional<TensorGeom> tensor(std::string_view name) const override {
    auto it = tensors.find(name);
    if (it == tensors.end()) return std::nullopt;
    return it->second;
  }
};

bool holds(const std::string& text, const TestContext& ctx = TestContext()) {
  return Requirement::parse(text).holds(ctx);
}

// Column of the syntax error `text` raises, or 0 if it parses.
int error_column(const std::string& text) {
  try {
    Requirement::parse(text);
  } catch (const RequiresSyntaxError& e) {
    return e.column;
  }
  return 0;
}

std::string error_message(const std::string& text) {
  try {
    Requirement r = Requirement::parse(text);
    r.check_names(TestContext());
  } catch (const RequiresSyntaxError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("requires: arithmetic and precedence", "[requires]") {
  CHECK(holds("1 + 2 * 3 == 7"));
  CHECK(holds("(1 + 2) * 3 == 9"));
  CHECK(holds("10 - 2 - 3 == 5"));  // left associative
  CHECK(holds("8 / 2 / 2 == 2"));
  CHECK(holds("2.5 * 2 == 5"));
  CHECK(holds("0.1 + 0.2 > 0.3"));  // doubles, not decimals
  CHECK(holds("--3 == 3"));
  CHECK(holds("-2 * -3 == 6"));
  CHECK(holds("7 % 3 == 1"));
  CHECK(holds("-7 % 3 == -1"));     // C++ integer remainder
  CHECK(holds("7.9 % 3 == 1"));     // operands truncated to integers
  CHECK(holds("2 + 3 * 4 % 5 == 4"));
  CHECK_FALSE(holds("1 + 1 == 3"));
  CHECK_FALSE(holds("0"));
  CHECK(holds("0.5"));
}

TEST_CASE("requires: logic and comparisons", "[requires]") {
  CHECK(holds("1 < 2 && 2 <= 2 && 3 > 2 && 3 >= 3 && 1 != 2 && 2 == 2"));
  CHECK_FALSE(holds("1 > 2 || 2 < 2 || 3 != 3"));
  CHECK(holds("1 && 0 || 1"));   // && binds tighter than ||
  CHECK_FALSE(holds("0 && (0 || 1)"));
  CHECK(holds("!0"));
  CHECK(holds("!!5"));
  CHECK_FALSE(holds("!7"));
  CHECK(holds("!1 == 0"));       // '!' applies to the whole comparison: !(1 == 0)
  CHECK(holds("(1 < 2) + (3 < 4) == 2"));  // booleans are 1 and 0
}

TEST_CASE("requires: variables", "[requires]") {
  TestContext ctx;
  CHECK(holds("k % 8 == 0", ctx));
  CHECK(holds("m * n == 12", ctx));
  CHECK(holds("alpha == 1.5 && beta == 0", ctx));
  CHECK(holds("m<n||k>=64", ctx));  // no spaces needed
  ctx.vars["k"] = 65;
  CHECK_FALSE(holds("k % 8 == 0", ctx));
  CHECK(holds("k % 8 == 1", ctx));
}

TEST_CASE("requires: division and modulo by zero give 0", "[requires]") {
  CHECK(holds("1 / 0 == 0"));
  CHECK(holds("k % 0 == 0"));
  CHECK_FALSE(holds("k % 0"));
  CHECK(holds("k / (m - 4) == 0"));
  // Saturated, not undefined, conversions of huge values to int64.
  CHECK_NOTHROW(holds("100000000000000000000000000 % 7 >= 0"));
  CHECK(holds("-9223372036854775808 % -1 == 0"));
  CHECK(holds("(0 - 9223372036854775808) % -1 == 0"));
}

TEST_CASE("requires: tensor functions", "[requires]") {
  CHECK(holds("row_major(A) && !col_major(A) && !contiguous(A)"));
  CHECK(holds("col_major(B) && !row_major(B) && !contiguous(B)"));
  CHECK(holds("contiguous(C) && row_major(C)"));
  CHECK(holds("ld(A) == 72 && ld(B) == 65 && ld(C) == 3"));
  CHECK(holds("offset(A) == 8 && offset(B) == 0 && offset(C) == 1"));
  CHECK(holds("rows(A) == 4 && cols(A) == 64 && rows(B) == k && cols(B) == n"));
  CHECK(holds("aligned(A, 16)"));        // offset 16 bytes, ld 144 bytes
  CHECK_FALSE(holds("aligned(A, 32)"));  // offset is 16 bytes
  CHECK(holds("aligned(B, 4)"));
  CHECK_FALSE(holds("aligned(B, 16)"));  // ld 260 bytes
  CHECK_FALSE(holds("aligned(C, 16)"));  // offset 8 bytes
  CHECK(holds("aligned(C, 8)"));
  CHECK(holds("aligned(A, 8 * 2)"));     // the byte count is an expression
  CHECK_FALSE(holds("aligned(A, 0)"));
  CHECK_FALSE(holds("aligned(A, -16)"));
}

TEST_CASE("requires: aligned ignores unit strides", "[requires]") {
  TestContext ctx;
  ctx.tensors["A"] = TensorGeom::matrix(DType::f16, 1, 5, 1, 1, 0);  // a single row: both strides 1
  CHECK(holds("aligned(A, 16)", ctx));
  ctx.tensors["A"].strides[0] = 0;  // broadcast row
  CHECK(holds("aligned(A, 16)", ctx));
  ctx.tensors["A"].strides[0] = int64_t(1) << 60;  // no overflow in stride * bytes
  CHECK(holds("aligned(A, 16)", ctx));
}

TEST_CASE("requires: syntax errors report 1-based columns", "[requires]") {
  CHECK(error_column("k % 8 == 0)") == 11);
  CHECK(error_column("(k % 8 == 0") == 12);
  CHECK(error_column("k %") == 4);
  CHECK(error_column("&&&&") == 1);
  CHECK(error_column("k = 8") == 3);
  CHECK(error_column("k & 8") == 3);
  CHECK(error_column("k | 8") == 3);
  CHECK(error_column("foo(A)") == 1);
  CHECK(error_column("k + aligned(A)") == 5);
  CHECK(error_column("rows(A, 2)") == 1);
  CHECK(error_column("rows(1)") == 6);
  CHECK(error_column("rows()") == 6);
  CHECK(error_column("rows(A") == 7);
  CHECK(error_column("1 < 2 < 3") == 7);
  CHECK(error_column("") == 1);
  CHECK(error_column("   ") == 4);
  CHECK(error_column("k # 2") == 3);
  CHECK(error_column("1.") == 3);
  CHECK(error_column("1.5.2") == 4);
  CHECK(error_column("k 8") == 3);
  CHECK(error_column("()") == 2);
  CHECK(error_column(std::string("k\0", 2)) == 2);
  CHECK(error_column(std::string(400, '9')) == 1);  // 1e400 is not a double
  CHECK(error_column("k % 8 == 0") == 0);
}

TEST_CASE("requires: messages say what is wrong", "[requires]") {
  CHECK_THAT(error_message("k % 8 == 0)"), Catch::Contains("')'") && Catch::Contains("column 11"));
  CHECK_THAT(error_message("foo(A)"), Catch::Contains("unknown function 'foo'"));
  CHECK_THAT(error_message("aligned(A)"), Catch::Contains("takes 2 arguments, got 1"));
  CHECK_THAT(error_message("k = 8"), Catch::Contains("'=='"));
  CHECK_THAT(error_message(std::string("k\0", 2)), Catch::Contains("\\x00"));
  CHECK_THAT(error_message("aligned(Z,16)"), Catch::Contains("unknown tensor 'Z'") && Catch::Contains("column 9"));
}

TEST_CASE("requires: check_names reports the first unknown name", "[requires]") {
  TestContext ctx;
  auto column_of_unknown = [&](const std::string& text) {
    Requirement r = Requirement::parse(text);
    try {
      r.check_names(ctx);
    } catch (const RequiresSyntaxError& e) {
      return e.column;
    }
    return 0;
  };
  CHECK(column_of_unknown("k % 8 == 0 && aligned(A, 16) && ld(B) > n") == 0);
  CHECK(column_of_unknown("q + k") == 1);
  CHECK(column_of_unknown("k + q") == 5);
  CHECK(column_of_unknown("aligned(Z,16)") == 9);
  CHECK(column_of_unknown("rows(Z) + q") == 6);
  CHECK(column_of_unknown("q + rows(Z)") == 1);
  CHECK(column_of_unknown("aligned(A, q)") == 12);
  CHECK(column_of_unknown("rows") == 1);  // a function name alone is a variable
  CHECK_THAT(error_message("k + q"), Catch::Contains("unknown variable 'q'"));
  // holds() refuses unknown names the same way instead of guessing.
  CHECK_THROWS_AS(Requirement::parse("q > 1").holds(ctx), RequiresSyntaxError);
}

TEST_CASE("requires: text is kept and an empty Requirement holds", "[requires]") {
  CHECK(Requirement::parse("  k % 8 == 0 ").text() == "  k % 8 == 0 ");
  Requirement none;
  CHECK(none.holds(TestContext()));
  CHECK_NOTHROW(none.check_names(TestContext()));
}

TEST_CASE("requires: length and nesting limits", "[requires]") {
  std::string sum = "1";
  while (sum.size() + 2 <= 4096) sum += "+1";
  REQUIRE(sum.size() <= 4096);
  CHECK(holds(sum + std::string(4096 - sum.size(), ' ')));  // exactly 4096: fine, and flat chains are not nesting
  CHECK(error_column(sum + std::string(4097 - sum.size(), ' ')) == 4097);
  CHECK(error_column(std::string(10'000'000, '(')) == 4097);  // 10 MB: refused up front

  auto nested = [](int depth) { return std::string(depth, '(') + "1" + std::string(depth, ')'); };
  CHECK(holds(nested(64)));
  CHECK(error_column(nested(65)) == 65);
  CHECK(holds(std::string(64, '!') + "1"));
  CHECK(error_column(std::string(65, '!') + "1") == 65);
  CHECK(holds(std::string(64, '-') + "1"));
  CHECK(error_column(std::string(2000, '-') + "1") == 65);
  CHECK(error_column(std::string(4000, '(')) == 65);
  std::string calls;
  for (int i = 0; i < 100; ++i) calls += "aligned(A, ";
  CHECK(error_column(calls) > 0);
}

// Random token soup: every input either parses (and then evaluates without
// throwing anything but RequiresSyntaxError) or raises RequiresSyntaxError.
TEST_CASE("requires: random input never escapes as anything else", "[requires]") {
  const std::vector<std::string> pieces = {
      "k", "m", "q", "A", "Z", "(", ")", ",", "!", "-", "+", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||",
      "&", "|", "=", "0", "8", "1.5", "1.", "aligned", "rows", "ld(", "contiguous(", " ", "\t", "#", "\xc3\xa9",
      std::string(1, '\0')};
  std::mt19937_64 rng(12345);
  TestContext ctx;
  int parsed = 0, bad_columns = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    int len = int(rng() % 24);
    for (int j = 0; j < len; ++j) text += pieces[rng() % pieces.size()];
    try {
      Requirement r = Requirement::parse(text);
      ++parsed;
      try {
        r.check_names(ctx);
        (void)r.holds(ctx);
      } catch (const RequiresSyntaxError&) {
      }
    } catch (const RequiresSyntaxError& e) {
      if (e.column < 1 || e.column > int(text.size()) + 1) ++bad_columns;
    }
  }
  CHECK(bad_columns == 0);
  CHECK(parsed > 100);  // the soup is not all garbage
}
