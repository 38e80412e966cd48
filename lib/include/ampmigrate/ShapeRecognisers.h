// Shape recognisers: what a declaration, type or expression is in the domain (a tensor, a scaler
// class, an autocast guard, a parameter list, a `.grad` access), by its shape and the rules'
// names. Facts about the AST alone, shared by the analysis and the planner (ShapeRecognisers.cpp).
#pragma once

#include "ampmigrate/TrainingStep.h"
#include "clang/AST/Expr.h"
#include "clang/Basic/SourceLocation.h"
#include <optional>
#include <string>
#include <vector>

namespace clang {
class ParentMap;
} // namespace clang

namespace ampmigrate {

/// The source text of a token range, through macro expansions ("" when it has none in a file).
std::string sourceTextOf(const clang::ASTContext &Ctx, clang::SourceRange R);

/// Shape recognisers on declarations, shared by the analysis and the planner.
bool isDerivedFromAny(const clang::CXXRecordDecl *RD, const std::vector<std::string> &Names);
bool isTensorType(clang::QualType T, const RuleSet &Rules);
/// A forward's result amp::cast_to_adapter_tensor casts back to fp32: a tensor, a tuple, pair or
/// vector of them, or an aggregate of such fields and scalars.
bool returnsTensors(clang::QualType T, const RuleSet &Rules);
/// A class result with tensor fields that the cast cannot reach (not such an aggregate).
bool holdsUncastTensors(clang::QualType T, const RuleSet &Rules);
bool isScalerClass(const clang::CXXRecordDecl *RD, const RuleSet &Rules);
/// A class that looks like a loss scaler port the tool does not know: a scale(Tensor) -> Tensor
/// method and an unscale method taking an argument (names from the rules), but no step method,
/// so it is no scaler by shape (isScalerClass false). Its calls are reported, never rewritten.
bool isUnknownScalerPort(const clang::CXXRecordDecl *RD, const RuleSet &Rules);
/// A thin setter: a function (a wrapper class's method) whose body is one enable call of the
/// rules that passes one of its parameters as the switch, for a fixed device
/// (`void MixedPrecision::set_enabled(bool e) { at::autocast::set_enabled(e); }`). Its callers'
/// calls with a constant (`mp.set_enabled(true)`) are enable calls: the rule for them, with the
/// setter's name and its parameter as the switch; nullopt for any other function.
std::optional<AutocastFunctionRule> forwardingSetterRule(const clang::FunctionDecl *F,
                                                         const RuleSet &Rules);
/// A class whose constructor switches autocast (an RAII guard); sets `Disables` for guards that
/// turn it off.
bool isAutocastGuardClass(const clang::CXXRecordDecl *RD, const RuleSet &Rules, bool *Disables);
/// A guard whose constructor passes one of its parameters to the enable call (`Guard(bool on)`,
/// directly or through a member it initialises), or a guard the rules name whose constructor is
/// out of sight and takes one bool: whether this use turns autocast on, when its argument is a
/// constant; nullopt otherwise.
std::optional<bool> guardUseTurnsOn(const clang::CXXConstructExpr *Use, const RuleSet &Rules);
/// Whether a guard class's destructor clears autocast's cast cache (calls a `cache` rule's
/// function, in its body or in a function of its class that the body calls); nullopt when the
/// destructor's body is not in this translation unit.
std::optional<bool> guardClearsCache(const clang::CXXRecordDecl *RD, const RuleSet &Rules);
std::string qualifiedName(const clang::NamedDecl *D);
/// The class whose forward a call runs: the method's class, or for a module holder
/// (`torch::nn::ModuleHolder<NetImpl>`, what `TORCH_MODULE(Net)` derives from) its
/// implementation class. Null when the call is not a method call.
const clang::CXXRecordDecl *modelClass(const clang::Expr *Forward);
/// Whether a call enables autocast: an enable function of the rules whose `enabled` argument is
/// not the constant false.
bool isAutocastEnableCall(const clang::CallExpr *CE, const RuleSet &Rules, const clang::ASTContext &Ctx);
/// Whether a variable is a guard of a class that turns autocast on (not an fp32 region's guard).
bool declaresEnablingGuard(const clang::VarDecl *VD, const RuleSet &Rules);
/// A `.grad()` whose only use clears it (`p.grad().zero_()`, `.detach_()`, `.defined()`,
/// `p.mutable_grad() = torch::Tensor()`, `.reset()`): a hand-written zero_grad().
bool onlyClearsGrad(const clang::CallExpr *Accessor, const clang::ParentMap &PM);
/// Whether `D` is declared in a namespace of libtorch or the standard library (`torch`, `at`,
/// `c10`, `caffe2`, `std`, `__gnu_cxx`, by its outermost named namespace).
bool inLibraryNamespace(const clang::Decl *D);
/// The `parameters()` / `named_parameters()` call a parameter-list expression names (through
/// temporaries and copies); null for anything else.
const clang::CXXMemberCallExpr *parametersCall(const clang::Expr *E);
/// The object an expression names (a variable, a member, `*this`), through `*`, `->` and holders.
ObjectRef resolveObject(const clang::Expr *E);
/// Whose parameters such an expression names (the model or optimizer of `x.parameters()`).
ObjectRef parametersOwner(const clang::Expr *E);
/// `t.grad()` / `t.mutable_grad()` on a tensor.
bool isGradAccessor(const clang::CallExpr *CE);
/// A `.grad` use reached from a body: `Access` is the `grad()` / `mutable_grad()` call, `Call` the
/// call of the body that leads to it (the access itself when it is in the body). Functions outside
/// system headers are followed, three calls deep.
struct GradUse {
  const clang::CallExpr *Call = nullptr;
  const clang::CallExpr *Access = nullptr;
};
GradUse firstGradUse(const clang::Stmt *Body, const clang::SourceManager &SM);


/// Name and constant helpers of the recognisers that the function analysis uses too.
bool nameIn(const clang::NamedDecl *D, const std::vector<std::string> &Names);
bool methodNamed(const clang::CXXMethodDecl *M, const std::vector<std::string> &Names);
std::optional<bool> boolConstant(const clang::Expr *E, const clang::ASTContext &Ctx);
/// An expression without parentheses, implicit casts, temporaries and copies.
const clang::Expr *strip(const clang::Expr *E);
/// A variable and a value `S` gives it: a declaration with an initialiser (each of its variables),
/// or an assignment (`=`, built-in or a class's operator) to a variable; appended to `Out`. Whether
/// `S` is one of those.
bool addValuesGiven(const clang::Stmt *S,
                    std::vector<std::pair<const clang::VarDecl *, const clang::Expr *>> &Out);

} // namespace ampmigrate
