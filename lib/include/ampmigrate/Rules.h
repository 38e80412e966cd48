// The rule data: which APIs mean what (autocast functions, scaler method names, clip and
// zero_grad functions, target API names). Loaded from YAML files in rewrite-rules/ and --rules.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ampmigrate {

/// What a call to an autocast function does to the autocast state.
enum class AutocastRole {
  Enable,        ///< turns autocast on or off; `EnabledArg` holds the bool
  Dtype,         ///< sets the low-precision dtype
  Cache,         ///< clears or toggles the cast cache
  NestingInc,    ///< increment_nesting()
  NestingDec,    ///< decrement_nesting()
  Query,         ///< reads state only (is_enabled, get_*_dtype)
};

struct AutocastFunctionRule {
  std::string Function;           ///< fully qualified, e.g. "at::autocast::set_enabled"
  AutocastRole Role = AutocastRole::Query;
  int EnabledArg = -1;            ///< Enable: which argument holds the bool
  int DeviceArg = -1;             ///< 2.4+ API: which argument holds the DeviceType
  std::string Device;             ///< fixed device ("cuda", "cpu") when there is no DeviceArg
  std::string Generation;         ///< "1.x", "2.4", informational
};

struct ClipFunctionRule {
  std::string Function; ///< e.g. "torch::nn::utils::clip_grad_norm_"
  int ParamsArg = 0;
  int MaxNormArg = 1;
  int NormTypeArg = 2;  ///< -1: the function has no norm type (always L2)
  /// The argument that makes the clip throw on a non-finite total norm (libtorch's
  /// error_if_nonfinite); -1: none.
  int ErrorIfNonfiniteArg = -1;
  /// A clip by value (`clip_grad_value_(params, clip_value)`: every grad element clamped to
  /// [-clip_value, clip_value]): which argument holds the value; -1: a clip by norm.
  int ClipValueArg = -1;
  bool byValue() const { return ClipValueArg >= 0; }
};

/// Names of the methods a scaler class has, by meaning.
struct ScalerMethodNames {
  std::vector<std::string> Scale, Unscale, Step, Update, GetScale, IsEnabled;
  /// Unscale methods whose bool answer, when the code uses it, means "every grad is finite"
  /// (CheckedFinite) or "an inf/NaN was found" (CheckedFoundInf). A used answer of an unscale
  /// method in neither list has no known meaning.
  std::vector<std::string> CheckedFinite, CheckedFoundInf;
};

struct TargetApi {
  std::string Include = "<amp/torch.h>";
  std::string Convert = "amp::auto_mixed_precision";
  std::string LevelEnum = "amp::Level";
  std::string ValueAndGrad = "amp::value_and_grad";
  std::string CastOutput = "amp::cast_to_adapter_tensor";
  /// The conversion's last argument for a CUDA autocast scope (mixed precision on CUDA only:
  /// the scope did nothing for a model left on the CPU). Empty: not written.
  std::string CudaDeviceType = "torch::kCUDA";
  std::string ScalerClass = "amp::GradScaler";
  std::string ScalerOptions = "amp::GradScalerOptions";
  std::string Clip = "amp::clip_by_global_norm";
  /// The in-place clip (`f(grads, max_norm)` scales the grads where they lie and returns the norm
  /// before clipping, a tensor). Empty: the clip is written `grads = clip(grads, max_norm)`. A
  /// target section that names its own `clip` and no `clip-in-place` gets empty.
  std::string ClipInPlace = "amp::clip_by_global_norm_";
  std::string GlobalNorm = "amp::global_norm";
  /// The in-place clip by value (`f(grads, clip_value)` clamps every grad element where it lies).
  /// Empty: clips by value are reported, not rewritten.
  std::string ClipValueInPlace = "amp::clip_by_value_";
  /// Written before a clip of a model's parameters whose optimizer is not seen built:
  /// `f(optimizer, params)` fails unless the optimizer holds every trainable tensor of params.
  /// Empty: such clips are reported, not rewritten.
  std::string CheckHolds = "amp::check_holds";
  std::string Accumulate = "amp::accumulate_grads";
  std::string ParametersOf = "amp::parameters_of";
  std::string SplitGrads = "amp::split_grads";
  std::string AllReduceGrads = "amp::all_reduce_grads";
  std::string Step = "amp::step"; ///< the optimizer's step on explicit grads, without a scaler
  /// The target scaler's unscale that answers whether every grad is finite (a method name).
  std::string CheckedUnscale = "unscale_and_check";
};

struct RuleSet {
  std::vector<AutocastFunctionRule> Autocast;
  /// Qualified names that look like AMP but are not training scopes (cached_cast, dispatch guards).
  std::vector<std::string> Ignore;
  /// Classes whose construction enables autocast (RAII guards). Guards are also recognised by
  /// shape (a constructor that enables autocast); this list adds ones whose bodies are not visible.
  std::vector<std::string> Guards;
  /// Scaler classes named explicitly; others are recognised by method shape.
  std::vector<std::string> ScalerClasses;
  ScalerMethodNames ScalerMethods;
  /// amp::GradScalerOptions setter -> constructor parameter names that mean it.
  std::map<std::string, std::vector<std::string>> ScalerOptionParams;
  std::vector<ClipFunctionRule> Clip;
  std::vector<std::string> ZeroGradMethods;
  /// Base classes whose objects have a zero_grad that explicit grads make redundant.
  std::vector<std::string> ZeroGradClasses;
  /// Base classes of models (forward / operator() inside a scope marks the model).
  std::vector<std::string> ModuleClasses;
  std::vector<std::string> ModuleHolderTemplates;
  std::vector<std::string> OptimizerClasses;
  std::vector<std::string> TensorClasses;
  /// RAII classes that turn gradient recording off for their block (a scope under one is
  /// inference code).
  std::vector<std::string> NoGradGuardClasses;
  TargetApi Target;
  bool TargetGiven = false; ///< a file set `target:` (a later file's section wins)
  std::vector<std::string> Sources; ///< files these rules came from

  const AutocastFunctionRule *autocastRule(llvm::StringRef QualifiedName) const;
  const ClipFunctionRule *clipRule(llvm::StringRef QualifiedName) const;
  bool isIgnored(llvm::StringRef QualifiedName) const;
  /// Functions known not to read or write .grad, run a backward or call code that is not known
  /// (a logging library's), by qualified name or by namespace (an entry ending in `::`): a call of
  /// one between a step's backward and its step() is understood without its body.
  std::vector<std::string> GradFree;
  bool isGradFree(llvm::StringRef QualifiedName) const;
  /// Every identifier the rules key on: the lexical prefilter skips TUs that contain none.
  std::vector<std::string> prefilterTokens() const;

  /// Appends the rules of `Other` (lists are merged; target names of a later file win).
  void merge(const RuleSet &Other);
};

/// Parses one rule file. Errors name the file, line and column, and the reason.
llvm::Expected<RuleSet> parseRules(llvm::StringRef Path, llvm::StringRef Text);
llvm::Expected<RuleSet> loadRuleFile(llvm::StringRef Path);
/// The built-in rules (rewrite-rules/*.yaml next to the source tree, the installed copy, or
/// AMP_MIGRATE_RULES_DIR), merged with the user's files in order.
llvm::Expected<RuleSet> loadRules(const std::vector<std::string> &UserFiles);
/// Where the built-in rules were found.
std::string builtinRulesDir();

} // namespace ampmigrate
