// Preconditions a kernel declares in its spec (`k % 8 == 0`, `row_major(B)`,
// `aligned(A, 16)`): a tiny expression language over the case's dimensions,
// scalars and tensors. Cases are drawn inside them.
#pragma once
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/tensor_geom.h"

namespace assay {

struct Expr;  // parsed expression tree (requires.cpp)

struct RequiresSyntaxError : std::runtime_error {
  int column;  // 1-based column in the expression text
  RequiresSyntaxError(const std::string& what, int col) : std::runtime_error(what), column(col) {}
};

// What an expression can ask of a case. Op families implement it.
struct EvalContext {
  virtual ~EvalContext() = default;
  virtual std::optional<double> variable(std::string_view name) const = 0;   // m, n, k, alpha, beta
  virtual std::optional<TensorGeom> tensor(std::string_view name) const = 0; // A, B, C
};

class Requirement {
 public:
  // Parses `text`; throws RequiresSyntaxError. Unknown variable or tensor
  // names are reported by check_names against a context, not here.
  static Requirement parse(std::string text);
  // Throws RequiresSyntaxError naming the first unknown identifier.
  void check_names(const EvalContext& ctx) const;
  bool holds(const EvalContext& ctx) const;
  // The expression's number (comparisons and logic give 1 or 0): shape
  // expressions (`rows*n`) use the same language. Throws RequiresSyntaxError
  // for an unknown name.
  double value(const EvalContext& ctx) const;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::shared_ptr<const Expr> root_;
};

}  // namespace assay
