// Evaluator of the chat-template engine (see jinja_eval.h). A tree walk over the AST: statements
// append to an output string, expressions produce Values. Runtime errors get the line/column of
// the innermost expression or statement once; `raise_exception` messages pass through untouched.
#include "text/jinja/jinja_eval.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <memory>

#include "text/jinja/jinja_budget.h"
#include "text/jinja/jinja_builtins.h"
#include "text/jinja/jinja_ops.h"

namespace qwenrt::jinja {
namespace {

// Variables of one scope; lookups walk to the parent (template -> globals).
struct Scope {
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<std::string, Value>> vars;

  const Value* Find(std::string_view name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      SpendWork(s->vars.size());  // a template may set thousands of names in one scope
      for (const auto& [k, v] : s->vars) {
        if (k == name) return &v;
      }
    }
    return nullptr;
  }
  void Set(std::string_view name, Value v) {
    SpendWork(vars.size());
    for (auto& [k, old] : vars) {
      if (k == name) {
        old = std::move(v);
        return;
      }
    }
    vars.emplace_back(std::string(name), std::move(v));
  }
};
using ScopePtr = std::shared_ptr<Scope>;

ScopePtr ChildScope(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

// `namespace(...)`: the one mutable object, shared by reference.
class NamespaceObject : public Object {
 public:
  const char* TypeName() const override { return "Namespace"; }
  Value GetAttr(std::string_view name) const override {
    const Value* v = attrs_.FindStr(name);
    return v ? *v : Value();
  }
  Status SetAttr(std::string_view name, Value value) override {
    attrs_.Set(Value::String(std::string(name)), std::move(value));
    return OkStatus();
  }
  // Drops the attributes, breaking reference cycles such as `{% set ns.me = ns %}`.
  void Release() { attrs_.items.clear(); }

 private:
  Dict attrs_;
};

// The `loop` variable of a for loop; `index0` advances as the loop runs.
class LoopObject : public Object {
 public:
  explicit LoopObject(std::shared_ptr<const std::vector<Value>> items) : items_(std::move(items)) {
    for (const Value& v : *items_) depth_ = std::max(depth_, v.Depth() + 1);
  }
  const char* TypeName() const override { return "LoopContext"; }
  // Loops over `[loop]` nest loop objects through their items, like lists.
  int Depth() const override { return depth_; }
  Value GetAttr(std::string_view name) const override {
    const auto n = static_cast<int64_t>(items_->size());
    const auto i = static_cast<int64_t>(index0);
    if (name == "index0") return Value::Int(i);
    if (name == "index") return Value::Int(i + 1);
    if (name == "revindex") return Value::Int(n - i);
    if (name == "revindex0") return Value::Int(n - i - 1);
    if (name == "first") return Value::Bool(i == 0);
    if (name == "last") return Value::Bool(i == n - 1);
    if (name == "length") return Value::Int(n);
    if (name == "depth") return Value::Int(1);
    if (name == "depth0") return Value::Int(0);
    if (name == "previtem") {
      if (i == 0) return Value::Undefined("there is no previous item");
      return (*items_)[index0 - 1];
    }
    if (name == "nextitem") {
      if (i + 1 >= n) return Value::Undefined("there is no next item");
      return (*items_)[index0 + 1];
    }
    if (name == "cycle") {
      const size_t at = index0;
      return Value::MakeCallable("loop.cycle", [at](CallArgs& args) -> StatusOr<Value> {
        if (args.args.empty()) return InvalidArgument("no items for cycling given");
        return args.args[at % args.args.size()];
      });
    }
    return Value();
  }

  size_t index0 = 0;

 private:
  std::shared_ptr<const std::vector<Value>> items_;
  int depth_ = 1;
};

enum class Flow { kNormal, kBreak, kContinue };

class Evaluator {
 public:
  explicit Evaluator(const TemplateLimits& limits) : limits_(limits), budget_(limits) {}

  StatusOr<std::string> Run(const Template& tmpl, const Dict& context) {
    ActiveBudget active(&budget_);
    auto globals = std::make_shared<Scope>();
    AddBuiltins(globals.get());
    for (const auto& [k, v] : context.items) {
      if (k.is_string()) globals->Set(k.AsString(), v);
    }
    ScopePtr top = ChildScope(globals);
    std::string out;
    Status st = ExecBody(tmpl.body, top, &out);
    for (auto& ns : namespaces_) ns->Release();
    if (!st.ok()) return st;
    return out;
  }

 private:
  // ---- errors ----

  Status Locate(const Status& st, int line, int col) {
    if (st.ok() || raised_ || located_) return st;
    located_ = true;
    if (col > 0)
      return Status(st.code(), fmt::format("template error at line {}, column {}: {}", line, col,
                                           st.message()));
    return Status(st.code(), fmt::format("template error at line {}: {}", line, st.message()));
  }

  static Status UndefinedError(const Value& v) {
    return InvalidArgument("{}",
                           v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
  }

  Status CountStep() {
    if (++steps_ > limits_.max_steps) {
      return InvalidArgument(
          "template exceeded the step limit ({} loop iterations and macro calls; max_steps)",
          limits_.max_steps);
    }
    return ChargeWork(kCostPerNode);
  }

  Status Append(std::string_view text, std::string* out) const {
    if (out->size() + text.size() > limits_.max_output_bytes) {
      return InvalidArgument("template output exceeds {} bytes (max_output_bytes)",
                             limits_.max_output_bytes);
    }
    QWENRT_RETURN_IF_ERROR(ChargeWork(text.size()));
    out->append(text);
    return OkStatus();
  }

  // Every value an expression produces passes here, so no value deeper or larger than the limits
  // is ever stored, and the recursive helpers (equality, repr, tojson, destruction) stay shallow.
  Status CheckValue(const Value& v) const {
    if (v.Depth() > limits_.max_value_depth) {
      return InvalidArgument("value nested too deeply (max_value_depth is {})",
                             limits_.max_value_depth);
    }
    if (v.is_string()) return CheckStringSize(v.AsString().size());
    if (v.is_list()) return CheckListSize(v.AsList().items.size());
    if (v.is_dict()) return CheckListSize(v.AsDict().items.size());
    return OkStatus();
  }

  class DepthGuard {
   public:
    explicit DepthGuard(int* d) : d_(d) { ++*d_; }
    ~DepthGuard() { --*d_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    int* d_;
  };

  // ---- globals ----

  void AddBuiltins(Scope* g) {
    g->Set("raise_exception",
           Value::MakeCallable("raise_exception", [this](CallArgs& args) -> StatusOr<Value> {
             raised_ = true;
             return InvalidArgument("{}", args.args.empty() ? std::string() : Str(args.args[0]));
           }));
    g->Set("namespace", Value::MakeCallable("namespace", [this](CallArgs& args) -> StatusOr<Value> {
             // An object that lives until the render ends: charged like several nodes.
             QWENRT_RETURN_IF_ERROR(ChargeWork(4 * kCostPerNode));
             auto ns = std::make_shared<NamespaceObject>();
             namespaces_.push_back(ns);
             for (const auto& a : args.args) {
               if (!a.is_dict())
                 return InvalidArgument("namespace() positional argument must be a mapping");
               for (const auto& [k, v] : a.AsDict().items) {
                 if (k.is_string()) QWENRT_RETURN_IF_ERROR(ns->SetAttr(k.AsString(), v));
                 QWENRT_RETURN_IF_ERROR(
                     ChargeWork(kCostPerItem));  // SetAttr is linear: n keys are quadratic
               }
             }
             for (const auto& [k, v] : args.kwargs) QWENRT_RETURN_IF_ERROR(ns->SetAttr(k, v));
             return Value::MakeObject(std::move(ns));
           }));
    g->Set("dict", Value::MakeCallable("dict", [](CallArgs& args) -> StatusOr<Value> {
             Dict d;
             for (const auto& a : args.args) {
               if (!a.is_dict())
                 return InvalidArgument("dict() positional argument must be a mapping");
               for (const auto& [k, v] : a.AsDict().items) {
                 d.Set(k, v);
                 QWENRT_RETURN_IF_ERROR(
                     ChargeWork(kCostPerItem));  // Set is linear: n keys are quadratic
               }
             }
             for (const auto& [k, v] : args.kwargs) d.Set(Value::String(k), v);
             return Value::MakeDict(std::move(d));
           }));
    g->Set("range", Value::MakeCallable("range", [](CallArgs& args) -> StatusOr<Value> {
             int64_t b = 0, e = 0, st = 1;
             for (const auto& a : args.args) {
               if (!a.is_int())
                 return InvalidArgument("'{}' object cannot be interpreted as an integer",
                                        a.TypeName());
             }
             if (args.args.size() == 1) {
               e = args.args[0].AsInt();
             } else if (args.args.size() == 2 || args.args.size() == 3) {
               b = args.args[0].AsInt();
               e = args.args[1].AsInt();
               if (args.args.size() == 3) st = args.args[2].AsInt();
             } else {
               return InvalidArgument("range expected 1 to 3 arguments, got {}", args.args.size());
             }
             if (st == 0) return InvalidArgument("range() arg 3 must not be zero");
             // The length first, in unsigned arithmetic: `i += st` could overflow int64.
             const uint64_t ust =
                 st > 0 ? static_cast<uint64_t>(st) : 0 - static_cast<uint64_t>(st);
             uint64_t n = 0;
             if (st > 0 && b < e)
               n = (static_cast<uint64_t>(e) - static_cast<uint64_t>(b) - 1) / ust + 1;
             if (st < 0 && b > e)
               n = (static_cast<uint64_t>(b) - static_cast<uint64_t>(e) - 1) / ust + 1;
             QWENRT_RETURN_IF_ERROR(CheckListSize(n));
             QWENRT_RETURN_IF_ERROR(ChargeWork(n * kCostPerItem));
             std::vector<Value> items;
             items.reserve(n);
             for (uint64_t i = 0; i < n; ++i) {
               items.push_back(Value::Int(
                   static_cast<int64_t>(static_cast<uint64_t>(b) + i * static_cast<uint64_t>(st))));
             }
             return Value::MakeList(std::move(items));
           }));
    g->Set("strftime_now",
           Value::MakeCallable("strftime_now", [](CallArgs& args) -> StatusOr<Value> {
             if (args.args.size() != 1 || !args.args[0].is_string())
               return InvalidArgument("strftime_now(format) expects a string");
             const std::time_t now = std::time(nullptr);
             std::tm tm{};
             localtime_r(&now, &tm);
             const std::string& format = args.args[0].AsString();
             if (format.size() > 64)
               return InvalidArgument("strftime_now: format longer than 64 bytes");
             char buf[256];
             const size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &tm);
             return Value::String(std::string(buf, n));
           }));
  }

  // ---- statements ----

  Status ExecBody(const Body& body, const ScopePtr& scope, std::string* out) {
    for (const auto& node : body) {
      QWENRT_RETURN_IF_ERROR(ExecNode(*node, scope, out));
      if (flow_ != Flow::kNormal) return OkStatus();
    }
    return OkStatus();
  }

  Status ExecNode(const Node& node, const ScopePtr& scope, std::string* out) {
    DepthGuard guard(&eval_depth_);
    if (eval_depth_ > limits_.max_eval_depth) {
      return Locate(InvalidArgument("template recursion too deep (max_eval_depth is {})",
                                    limits_.max_eval_depth),
                    node.line, 0);
    }
    QWENRT_RETURN_IF_ERROR(Locate(ChargeWork(kCostPerNode), node.line, 0));
    switch (node.kind) {
      case NodeKind::kText:
        return Append(node.text, out);
      case NodeKind::kOutput: {
        QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*node.expr, scope));
        if (v.is_string()) return Append(v.AsString(), out);
        return Append(Str(v), out);
      }
      case NodeKind::kIf:
        for (const auto& [cond, body] : node.branches) {
          QWENRT_ASSIGN_OR_RETURN(Value c, Eval(*cond, scope));
          if (c.Truthy()) return ExecBody(body, scope, out);
        }
        return ExecBody(node.else_body, scope, out);
      case NodeKind::kFor:
        return ExecFor(node, scope, out);
      case NodeKind::kSet: {
        QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*node.expr, scope));
        return Assign(node, scope, std::move(v));
      }
      case NodeKind::kSetBlock: {
        std::string text;
        QWENRT_RETURN_IF_ERROR(ExecBody(node.body, scope, &text));
        Value v = Value::String(std::move(text));
        if (node.filter) {
          QWENRT_ASSIGN_OR_RETURN(v, EvalFilter(*node.filter, scope, &v));
          QWENRT_RETURN_IF_ERROR(Locate(CheckValue(v), node.line, 0));
        }
        scope->Set(node.targets[0], std::move(v));
        return OkStatus();
      }
      case NodeKind::kMacro: {
        std::weak_ptr<Scope> closure = scope;  // weak: the macro lives in this very scope
        const Node* def = &node;
        scope->Set(node.name, Value::MakeCallable(node.name, [this, def, closure](CallArgs& args) {
                     return CallMacro(*def, closure.lock(), args);
                   }));
        return OkStatus();
      }
      case NodeKind::kBreak:
        flow_ = Flow::kBreak;
        return OkStatus();
      case NodeKind::kContinue:
        flow_ = Flow::kContinue;
        return OkStatus();
      case NodeKind::kScope: {
        ScopePtr inner = ChildScope(scope);
        for (size_t i = 0; i < node.targets.size(); ++i) {
          QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*node.values[i], scope));
          inner->Set(node.targets[i], std::move(v));
        }
        return ExecBody(node.body, inner, out);
      }
      case NodeKind::kFilterBlock: {
        std::string text;
        QWENRT_RETURN_IF_ERROR(ExecBody(node.body, scope, &text));
        Value v = Value::String(std::move(text));
        QWENRT_ASSIGN_OR_RETURN(v, EvalFilter(*node.filter, scope, &v));
        return Append(Str(v), out);
      }
    }
    return OkStatus();
  }

  // Binds `targets` to `value` in `scope` (unpacking tuples like Python).
  Status BindTargets(const Node& node, Scope* scope, const Value& value) {
    if (!node.tuple_target) {
      scope->Set(node.targets[0], value);
      return OkStatus();
    }
    QWENRT_ASSIGN_OR_RETURN(auto parts, Iterate(value));
    if (parts.size() < node.targets.size()) {
      return InvalidArgument("not enough values to unpack (expected {}, got {})",
                             node.targets.size(), parts.size());
    }
    if (parts.size() > node.targets.size()) {
      return InvalidArgument("too many values to unpack (expected {})", node.targets.size());
    }
    for (size_t i = 0; i < parts.size(); ++i) scope->Set(node.targets[i], std::move(parts[i]));
    return OkStatus();
  }

  Status Assign(const Node& node, const ScopePtr& scope, Value v) {
    if (!node.attr.empty()) {
      const Value* target = scope->Find(node.targets[0]);
      if (!target || !target->is_object()) {
        return Locate(InvalidArgument("cannot assign attribute on non-namespace object"), node.line,
                      0);
      }
      if (!target->AsObject().SetAttr(node.attr, std::move(v)).ok()) {  // e.g. `loop`
        return Locate(InvalidArgument("cannot assign attribute on non-namespace object"), node.line,
                      0);
      }
      return OkStatus();
    }
    Status st = BindTargets(node, scope.get(), v);
    return st.ok() ? st : Locate(st, node.line, 0);
  }

  Status ExecFor(const Node& node, const ScopePtr& scope, std::string* out) {
    QWENRT_ASSIGN_OR_RETURN(Value seq, Eval(*node.expr, scope));
    auto iterated = Iterate(seq);
    if (!iterated.ok()) return Locate(iterated.status(), node.expr->line, node.expr->col);
    std::vector<Value> items = std::move(iterated).value();
    if (node.filter) {
      std::vector<Value> kept;
      for (auto& item : items) {
        QWENRT_RETURN_IF_ERROR(CountStep());
        ScopePtr probe = ChildScope(scope);
        QWENRT_RETURN_IF_ERROR(Locate(BindTargets(node, probe.get(), item), node.line, 0));
        QWENRT_ASSIGN_OR_RETURN(Value keep, Eval(*node.filter, probe));
        if (keep.Truthy()) kept.push_back(std::move(item));
      }
      items = std::move(kept);
    }
    if (items.empty()) return ExecBody(node.else_body, scope, out);
    auto shared = std::make_shared<const std::vector<Value>>(std::move(items));
    auto loop = std::make_shared<LoopObject>(shared);
    const Value loop_value = Value::MakeObject(loop);
    for (size_t i = 0; i < shared->size(); ++i) {
      QWENRT_RETURN_IF_ERROR(Locate(CountStep(), node.line, 0));
      loop->index0 = i;
      ScopePtr iter_scope = ChildScope(scope);
      QWENRT_RETURN_IF_ERROR(
          Locate(BindTargets(node, iter_scope.get(), (*shared)[i]), node.line, 0));
      iter_scope->Set("loop", loop_value);
      QWENRT_RETURN_IF_ERROR(ExecBody(node.body, iter_scope, out));
      if (flow_ == Flow::kBreak) {
        flow_ = Flow::kNormal;
        break;
      }
      flow_ = Flow::kNormal;
    }
    return OkStatus();
  }

  StatusOr<Value> CallMacro(const Node& def, const ScopePtr& closure, CallArgs& args) {
    if (!closure)
      return InvalidArgument("macro '{}' called after its defining scope ended", def.name);
    if (call_depth_ >= limits_.max_call_depth) {
      return InvalidArgument("maximum macro recursion depth ({}) exceeded", limits_.max_call_depth);
    }
    QWENRT_RETURN_IF_ERROR(CountStep());
    DepthGuard guard(&call_depth_);
    const size_t n_params = def.targets.size();
    if (args.args.size() > n_params && !def.uses_varargs) {
      return InvalidArgument("macro '{}' takes not more than {} argument(s)", def.name, n_params);
    }
    ScopePtr scope = ChildScope(closure);
    std::vector<bool> bound(n_params, false);
    std::vector<Value> extra_args;
    Dict extra_kwargs;
    for (size_t i = 0; i < args.args.size(); ++i) {
      if (i >= n_params) {
        extra_args.push_back(args.args[i]);
        continue;
      }
      scope->Set(def.targets[i], args.args[i]);
      bound[i] = true;
    }
    for (auto& [key, value] : args.kwargs) {
      size_t i = 0;
      while (i < n_params && def.targets[i] != key) ++i;
      if (i == n_params && def.uses_kwargs) {
        extra_kwargs.Set(Value::String(key), value);
        continue;
      }
      if (i == n_params)
        return InvalidArgument("macro '{}' takes no keyword argument '{}'", def.name, key);
      if (bound[i])
        return InvalidArgument("macro '{}' got multiple values for argument '{}'", def.name, key);
      scope->Set(def.targets[i], value);
      bound[i] = true;
    }
    for (size_t i = 0; i < n_params; ++i) {
      if (bound[i]) continue;
      if (def.values[i]) {
        QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*def.values[i], scope));
        scope->Set(def.targets[i], std::move(v));
      } else {
        scope->Set(def.targets[i],
                   Value::Undefined(fmt::format("'{}' is undefined", def.targets[i])));
      }
    }
    if (def.uses_varargs)
      scope->Set("varargs", Value::MakeList(std::move(extra_args), /*is_tuple=*/true));
    if (def.uses_kwargs) scope->Set("kwargs", Value::MakeDict(std::move(extra_kwargs)));
    std::string text;
    QWENRT_RETURN_IF_ERROR(ExecBody(def.body, scope, &text));
    flow_ = Flow::kNormal;
    return Value::String(std::move(text));
  }

  // ---- expressions ----

  StatusOr<Value> Eval(const Expr& e, const ScopePtr& scope) {
    DepthGuard guard(&eval_depth_);
    if (eval_depth_ > limits_.max_eval_depth) {
      return Locate(InvalidArgument("template recursion too deep (max_eval_depth is {})",
                                    limits_.max_eval_depth),
                    e.line, e.col);
    }
    Status charged = ChargeWork(kCostPerNode);
    if (!charged.ok()) return Locate(charged, e.line, e.col);
    auto r = EvalImpl(e, scope);
    if (!r.ok()) return Locate(r.status(), e.line, e.col);
    // A builtin may have stopped early on a spent budget: its result is not used.
    Status checked = ChargeWork(0);
    if (checked.ok()) checked = CheckValue(*r);
    if (!checked.ok()) return Locate(checked, e.line, e.col);
    return r;
  }

  StatusOr<Value> EvalImpl(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.literal;
      case ExprKind::kName: {
        const Value* v = scope->Find(e.name);
        if (v) return *v;
        return Value::Undefined(fmt::format("'{}' is undefined", e.name));
      }
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        items.reserve(e.children.size());
        for (const auto& c : e.children) {
          QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*c, scope));
          items.push_back(std::move(v));
        }
        return Value::MakeList(std::move(items), e.kind == ExprKind::kTuple);
      }
      case ExprKind::kDict: {
        Dict d;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          QWENRT_ASSIGN_OR_RETURN(Value k, Eval(*e.children[i], scope));
          QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*e.children[i + 1], scope));
          d.Set(std::move(k), std::move(v));
        }
        return Value::MakeDict(std::move(d));
      }
      case ExprKind::kGetAttr: {
        QWENRT_ASSIGN_OR_RETURN(Value obj, Eval(*e.children[0], scope));
        return GetAttr(obj, e.name);
      }
      case ExprKind::kGetItem: {
        QWENRT_ASSIGN_OR_RETURN(Value obj, Eval(*e.children[0], scope));
        QWENRT_ASSIGN_OR_RETURN(Value key, Eval(*e.children[1], scope));
        return GetItem(obj, key);
      }
      case ExprKind::kSlice: {
        QWENRT_ASSIGN_OR_RETURN(Value obj, Eval(*e.children[0], scope));
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (e.children[i + 1]) {
            QWENRT_ASSIGN_OR_RETURN(parts[i], Eval(*e.children[i + 1], scope));
          }
        }
        return Slice(obj, e.children[1] ? &parts[0] : nullptr, e.children[2] ? &parts[1] : nullptr,
                     e.children[3] ? &parts[2] : nullptr);
      }
      case ExprKind::kCall: {
        QWENRT_ASSIGN_OR_RETURN(Value callee, Eval(*e.children[0], scope));
        CallArgs args;
        QWENRT_RETURN_IF_ERROR(EvalArgs(e, scope, &args));
        if (callee.is_undefined()) return UndefinedError(callee);
        if (!callee.is_callable())
          return InvalidArgument("'{}' object is not callable", callee.TypeName());
        return callee.AsCallable().fn(args);
      }
      case ExprKind::kFilter:
        return EvalFilter(e, scope, nullptr);
      case ExprKind::kTest: {
        QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*e.children[0], scope));
        CallArgs args;
        QWENRT_RETURN_IF_ERROR(EvalArgs(e, scope, &args));
        QWENRT_ASSIGN_OR_RETURN(bool r, CallTest(e.name, v, args));
        return Value::Bool(r != e.negated);
      }
      case ExprKind::kNot: {
        QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*e.children[0], scope));
        return Value::Bool(!v.Truthy());
      }
      case ExprKind::kNeg:
      case ExprKind::kPos: {
        QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*e.children[0], scope));
        return UnaryOp(e.kind == ExprKind::kNeg ? "-" : "+", v);
      }
      case ExprKind::kBinary: {
        QWENRT_ASSIGN_OR_RETURN(Value a, Eval(*e.children[0], scope));
        QWENRT_ASSIGN_OR_RETURN(Value b, Eval(*e.children[1], scope));
        return BinaryOp(e.name, a, b);
      }
      case ExprKind::kCompare: {
        QWENRT_ASSIGN_OR_RETURN(Value left, Eval(*e.children[0], scope));
        for (size_t i = 0; i < e.ops.size(); ++i) {
          QWENRT_ASSIGN_OR_RETURN(Value right, Eval(*e.children[i + 1], scope));
          QWENRT_ASSIGN_OR_RETURN(bool r, CompareOp(e.ops[i], left, right));
          if (!r) return Value::Bool(false);
          left = std::move(right);
        }
        return Value::Bool(true);
      }
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        QWENRT_ASSIGN_OR_RETURN(Value a, Eval(*e.children[0], scope));
        if (a.Truthy() == (e.kind == ExprKind::kOr)) return a;
        return Eval(*e.children[1], scope);
      }
      case ExprKind::kCond: {
        QWENRT_ASSIGN_OR_RETURN(Value c, Eval(*e.children[1], scope));
        if (c.Truthy()) return Eval(*e.children[0], scope);
        if (e.children[2]) return Eval(*e.children[2], scope);
        return Value::Undefined(
            fmt::format("the inline if-expression on line {} evaluated to false and no else "
                        "section was defined.",
                        e.line));
      }
      case ExprKind::kConcat: {
        std::string s;
        for (const auto& c : e.children) {
          QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*c, scope));
          const size_t before = s.size();
          AppendStr(v, &s);
          QWENRT_RETURN_IF_ERROR(CheckStringSize(s.size()));
          QWENRT_RETURN_IF_ERROR(ChargeWork(s.size() - before));
        }
        return Value::String(std::move(s));
      }
    }
    return InvalidArgument("unknown expression");
  }

  Status EvalArgs(const Expr& e, const ScopePtr& scope, CallArgs* args) {
    for (size_t i = 1; i < e.children.size(); ++i) {
      QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*e.children[i], scope));
      args->args.push_back(std::move(v));
    }
    for (const auto& [k, ex] : e.kwargs) {
      QWENRT_ASSIGN_OR_RETURN(Value v, Eval(*ex, scope));
      args->kwargs.emplace_back(k, std::move(v));
    }
    return OkStatus();
  }

  // A filter (chain); the innermost operand is `*block_operand` when the chain has none (filter
  // blocks and block set).
  StatusOr<Value> EvalFilter(const Expr& e, const ScopePtr& scope, const Value* block_operand) {
    Value operand;
    const Expr* child = e.children[0].get();
    if (!child) {
      if (!block_operand) return InvalidArgument("filter without operand");
      operand = *block_operand;
    } else if (child->kind == ExprKind::kFilter && block_operand) {
      QWENRT_ASSIGN_OR_RETURN(operand, EvalFilter(*child, scope, block_operand));
    } else {
      QWENRT_ASSIGN_OR_RETURN(operand, Eval(*child, scope));
    }
    CallArgs args;
    QWENRT_RETURN_IF_ERROR(EvalArgs(e, scope, &args));
    auto r = CallFilter(e.name, operand, args);
    if (!r.ok()) return Locate(r.status(), e.line, e.col);
    return r;
  }

  const TemplateLimits& limits_;
  Budget budget_;
  Flow flow_ = Flow::kNormal;
  bool raised_ = false;
  bool located_ = false;
  std::vector<std::shared_ptr<NamespaceObject>> namespaces_;  // released after the render
  int64_t steps_ = 0;
  int call_depth_ = 0;
  int eval_depth_ = 0;
};

}  // namespace

StatusOr<std::string> RenderTemplate(const Template& tmpl, const Dict& context,
                                     const TemplateLimits& limits) {
  Evaluator ev(limits);
  return ev.Run(tmpl, context);
}

}  // namespace qwenrt::jinja
