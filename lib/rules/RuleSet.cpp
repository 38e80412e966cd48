// Loading, validating and merging rule files (YAML, schema in docs/rules.md).
#include "ampmigrate/Rules.h"
#include "ampmigrate/InputLimits.h"
#include "llvm/ADT/StringExtras.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdlib>
#include <set>

using namespace ampmigrate;
namespace yaml = llvm::yaml;

namespace {
// The file as written: every section optional, so a user file may hold only what it adds.
struct ScalerSection {
  std::vector<std::string> Classes;
  ScalerMethodNames Methods;
  std::map<std::string, std::vector<std::string>> Options;
};
struct ZeroGradSection {
  std::vector<std::string> Methods, Classes;
};
struct TypesSection {
  std::vector<std::string> Modules, ModuleHolders, Optimizers, Tensors, NoGradGuards;
};
struct RuleFile {
  int Version = 1;
  std::vector<AutocastFunctionRule> Autocast;
  std::vector<std::string> Ignore, Guards, GradFree;
  ScalerSection Scaler;
  std::vector<ClipFunctionRule> Clip;
  ZeroGradSection ZeroGrad;
  TypesSection Types;
  std::optional<TargetApi> Target;
};

/// No real function has more parameters; a larger index is a typo, not an overload.
constexpr int MaxArgumentIndex = 63;

/// "" when every name of the list is non-empty, else the reason naming the key.
std::string emptyNameIn(llvm::StringRef Key, const std::vector<std::string> &Names) {
  for (const std::string &N : Names)
    if (llvm::StringRef(N).trim().empty())
      return ("an empty name in '" + Key + "'").str();
  return "";
}

/// The first non-empty reason of several checks.
template <typename... Reasons> std::string firstReason(Reasons... Rs) {
  std::string Out;
  ((Out.empty() ? (void)(Out = Rs) : (void)0), ...);
  return Out;
}

std::string argIndexProblem(llvm::StringRef Key, int Index, bool Optional) {
  if (Index > MaxArgumentIndex || Index < (Optional ? -1 : 0))
    return ("'" + Key + "' must be an argument index from 0 to " + llvm::Twine(MaxArgumentIndex) +
            (Optional ? " (or -1: none)" : "") + ", not " + llvm::Twine(Index))
        .str();
  return "";
}

const char *const KnownOptions[] = {"init_scale", "growth_factor", "backoff_factor",
                                    "growth_interval", "enabled"};
} // namespace

LLVM_YAML_IS_SEQUENCE_VECTOR(ampmigrate::AutocastFunctionRule)
LLVM_YAML_IS_SEQUENCE_VECTOR(ampmigrate::ClipFunctionRule)

namespace llvm::yaml {
// A scalar (not an enumeration) so that an unknown role is answered with the roles there are.
template <> struct ScalarTraits<AutocastRole> {
  static constexpr std::pair<const char *, AutocastRole> Roles[] = {
      {"enable", AutocastRole::Enable},          {"dtype", AutocastRole::Dtype},
      {"cache", AutocastRole::Cache},            {"nesting-inc", AutocastRole::NestingInc},
      {"nesting-dec", AutocastRole::NestingDec}, {"query", AutocastRole::Query}};
  static void output(const AutocastRole &R, void *, raw_ostream &OS) {
    for (const auto &[Name, Role] : Roles)
      if (Role == R)
        OS << Name;
  }
  static StringRef input(StringRef Scalar, void *, AutocastRole &R) {
    for (const auto &[Name, Role] : Roles)
      if (Scalar == Name) {
        R = Role;
        return {};
      }
    return "unknown role; the roles are enable, dtype, cache, nesting-inc, nesting-dec, query";
  }
  static QuotingType mustQuote(StringRef) { return QuotingType::None; }
};
template <> struct MappingTraits<AutocastFunctionRule> {
  static void mapping(IO &Io, AutocastFunctionRule &R) {
    Io.mapRequired("function", R.Function);
    Io.mapRequired("role", R.Role);
    Io.mapOptional("enabled-arg", R.EnabledArg, -1);
    Io.mapOptional("device-arg", R.DeviceArg, -1);
    Io.mapOptional("device", R.Device, std::string());
    Io.mapOptional("generation", R.Generation, std::string());
  }
  static std::string validate(IO &, AutocastFunctionRule &R) {
    if (llvm::StringRef(R.Function).trim().empty())
      return "'function' must name a function";
    if (std::string P = firstReason(argIndexProblem("enabled-arg", R.EnabledArg, true),
                                    argIndexProblem("device-arg", R.DeviceArg, true));
        !P.empty())
      return P;
    if (R.Role == AutocastRole::Enable && R.EnabledArg < 0)
      return "role 'enable' needs 'enabled-arg' (the index of the bool argument)";
    if (!R.Device.empty() && R.Device != "cuda" && R.Device != "cpu")
      return "'device' must be 'cuda' or 'cpu', not '" + R.Device + "'";
    return "";
  }
};
template <> struct MappingTraits<ClipFunctionRule> {
  static void mapping(IO &Io, ClipFunctionRule &R) {
    Io.mapRequired("function", R.Function);
    Io.mapOptional("params-arg", R.ParamsArg, 0);
    Io.mapOptional("max-norm-arg", R.MaxNormArg, 1);
    Io.mapOptional("norm-type-arg", R.NormTypeArg, -1);
    Io.mapOptional("error-if-nonfinite-arg", R.ErrorIfNonfiniteArg, -1);
    Io.mapOptional("clip-value-arg", R.ClipValueArg, -1);
  }
  static std::string validate(IO &, ClipFunctionRule &R) {
    if (llvm::StringRef(R.Function).trim().empty())
      return "'function' must name a function";
    if (R.byValue()) {
      // A clip by value has no norm: its max-norm-arg (default 1) is not read.
      if (std::string P = firstReason(argIndexProblem("params-arg", R.ParamsArg, false),
                                      argIndexProblem("clip-value-arg", R.ClipValueArg, false));
          !P.empty())
        return P;
      if (R.NormTypeArg >= 0 || R.ErrorIfNonfiniteArg >= 0)
        return "a clip by value ('clip-value-arg') has no 'norm-type-arg' or 'error-if-nonfinite-arg'";
      if (R.ParamsArg == R.ClipValueArg)
        return "'params-arg' and 'clip-value-arg' must differ";
      return "";
    }
    if (R.ParamsArg < 0 || R.MaxNormArg < 0)
      return "'params-arg' and 'max-norm-arg' must be argument indices (>= 0)";
    if (std::string P = firstReason(argIndexProblem("params-arg", R.ParamsArg, false),
                                    argIndexProblem("max-norm-arg", R.MaxNormArg, false),
                                    argIndexProblem("norm-type-arg", R.NormTypeArg, true),
                                    argIndexProblem("error-if-nonfinite-arg", R.ErrorIfNonfiniteArg, true));
        !P.empty())
      return P;
    if (R.ParamsArg == R.MaxNormArg)
      return "'params-arg' and 'max-norm-arg' must differ";
    return "";
  }
};
template <> struct MappingTraits<ScalerMethodNames> {
  static void mapping(IO &Io, ScalerMethodNames &M) {
    Io.mapOptional("scale", M.Scale);
    Io.mapOptional("unscale", M.Unscale);
    Io.mapOptional("step", M.Step);
    Io.mapOptional("update", M.Update);
    Io.mapOptional("get-scale", M.GetScale);
    Io.mapOptional("is-enabled", M.IsEnabled);
    Io.mapOptional("checked-unscale-finite", M.CheckedFinite);
    Io.mapOptional("checked-unscale-found-inf", M.CheckedFoundInf);
  }
  static std::string validate(IO &, ScalerMethodNames &M) {
    std::string P = firstReason(emptyNameIn("scale", M.Scale), emptyNameIn("unscale", M.Unscale),
                                emptyNameIn("step", M.Step), emptyNameIn("update", M.Update),
                                emptyNameIn("get-scale", M.GetScale),
                                emptyNameIn("is-enabled", M.IsEnabled),
                                emptyNameIn("checked-unscale-finite", M.CheckedFinite),
                                emptyNameIn("checked-unscale-found-inf", M.CheckedFoundInf));
    for (const std::string &N : M.CheckedFinite)
      if (P.empty() && llvm::is_contained(M.CheckedFoundInf, N))
        P = "'" + N + "' is in both checked-unscale-finite and checked-unscale-found-inf";
    return P;
  }
};
template <> struct CustomMappingTraits<std::map<std::string, std::vector<std::string>>> {
  static void inputOne(IO &Io, StringRef Key, std::map<std::string, std::vector<std::string>> &V) {
    if (!llvm::is_contained(KnownOptions, Key)) {
      Io.setError("unknown scaler option '" + Key +
                  "' (known: init_scale, growth_factor, backoff_factor, growth_interval, enabled)");
      return;
    }
    Io.mapRequired(Key.str().c_str(), V[Key.str()]);
  }
  static void output(IO &Io, std::map<std::string, std::vector<std::string>> &V) {
    for (auto &[K, L] : V)
      Io.mapRequired(K.c_str(), L);
  }
};
template <> struct MappingTraits<ScalerSection> {
  static void mapping(IO &Io, ScalerSection &S) {
    Io.mapOptional("classes", S.Classes);
    Io.mapOptional("methods", S.Methods);
    Io.mapOptional("options", S.Options);
  }
  static std::string validate(IO &, ScalerSection &S) {
    std::string P = emptyNameIn("classes", S.Classes);
    for (const auto &[Key, Params] : S.Options)
      if (P.empty())
        P = emptyNameIn(Key, Params);
    return P;
  }
};
template <> struct MappingTraits<ZeroGradSection> {
  static void mapping(IO &Io, ZeroGradSection &S) {
    Io.mapOptional("methods", S.Methods);
    Io.mapOptional("classes", S.Classes);
  }
  static std::string validate(IO &, ZeroGradSection &S) {
    return firstReason(emptyNameIn("methods", S.Methods), emptyNameIn("classes", S.Classes));
  }
};
template <> struct MappingTraits<TypesSection> {
  static void mapping(IO &Io, TypesSection &S) {
    Io.mapOptional("modules", S.Modules);
    Io.mapOptional("module-holders", S.ModuleHolders);
    Io.mapOptional("optimizers", S.Optimizers);
    Io.mapOptional("tensors", S.Tensors);
    Io.mapOptional("no-grad-guards", S.NoGradGuards);
  }
  static std::string validate(IO &, TypesSection &S) {
    return firstReason(emptyNameIn("modules", S.Modules), emptyNameIn("module-holders", S.ModuleHolders),
                       emptyNameIn("optimizers", S.Optimizers), emptyNameIn("tensors", S.Tensors),
                       emptyNameIn("no-grad-guards", S.NoGradGuards));
  }
};
template <> struct MappingTraits<TargetApi> {
  static void mapping(IO &Io, TargetApi &T) {
    TargetApi D;
    Io.mapOptional("include", T.Include, D.Include);
    Io.mapOptional("convert", T.Convert, D.Convert);
    Io.mapOptional("level-enum", T.LevelEnum, D.LevelEnum);
    Io.mapOptional("value-and-grad", T.ValueAndGrad, D.ValueAndGrad);
    Io.mapOptional("cast-output", T.CastOutput, D.CastOutput);
    Io.mapOptional("cuda-device-type", T.CudaDeviceType, D.CudaDeviceType);
    Io.mapOptional("scaler-class", T.ScalerClass, D.ScalerClass);
    Io.mapOptional("scaler-options", T.ScalerOptions, D.ScalerOptions);
    Io.mapOptional("clip", T.Clip, D.Clip);
    if (Io.outputting()) {
      Io.mapOptional("clip-in-place", T.ClipInPlace, D.ClipInPlace);
    } else {
      std::optional<std::string> InPlace;
      Io.mapOptional("clip-in-place", InPlace);
      // The default in-place clip is amp's: a section naming its own clip and no in-place one
      // gets the out-of-place form.
      T.ClipInPlace = InPlace ? *InPlace : T.Clip == D.Clip ? D.ClipInPlace : "";
    }
    Io.mapOptional("global-norm", T.GlobalNorm, D.GlobalNorm);
    Io.mapOptional("clip-value-in-place", T.ClipValueInPlace, D.ClipValueInPlace);
    Io.mapOptional("check-holds", T.CheckHolds, D.CheckHolds);
    Io.mapOptional("accumulate", T.Accumulate, D.Accumulate);
    Io.mapOptional("parameters-of", T.ParametersOf, D.ParametersOf);
    Io.mapOptional("split-grads", T.SplitGrads, D.SplitGrads);
    Io.mapOptional("all-reduce-grads", T.AllReduceGrads, D.AllReduceGrads);
    Io.mapOptional("step", T.Step, D.Step);
    Io.mapOptional("checked-unscale", T.CheckedUnscale, D.CheckedUnscale);
  }
  static std::string validate(IO &, TargetApi &T) {
    StringRef Inc = T.Include;
    if (!(Inc.starts_with("<") && Inc.ends_with(">")) &&
        !(Inc.starts_with("\"") && Inc.ends_with("\"")))
      return "'include' must be spelled <header> or \"header\"";
    if (Inc.size() < 3)
      return "'include' names no header";
    // `parameters-of` may be "" (docs/rules.md): value_and_grad then differentiates
    // optimizer.parameters(), and a step with several optimizers is reported.
    for (const std::string *Name :
         {&T.Convert, &T.LevelEnum, &T.ValueAndGrad, &T.CastOutput, &T.ScalerClass, &T.ScalerOptions,
          &T.Clip, &T.GlobalNorm, &T.Accumulate, &T.SplitGrads, &T.Step, &T.CheckedUnscale})
      if (llvm::StringRef(*Name).trim().empty())
        return "an empty name in 'target'";
    return "";
  }
};
template <> struct MappingTraits<RuleFile> {
  static void mapping(IO &Io, RuleFile &F) {
    Io.mapOptional("version", F.Version, 1);
    Io.mapOptional("autocast", F.Autocast);
    Io.mapOptional("ignore", F.Ignore);
    Io.mapOptional("guards", F.Guards);
    Io.mapOptional("grad-free", F.GradFree);
    Io.mapOptional("scaler", F.Scaler);
    Io.mapOptional("clip", F.Clip);
    Io.mapOptional("zero-grad", F.ZeroGrad);
    Io.mapOptional("types", F.Types);
    Io.mapOptional("target", F.Target);
  }
  static std::string validate(IO &, RuleFile &F) {
    if (F.Version != 1)
      return "unsupported rules version " + std::to_string(F.Version) + " (this tool reads 1)";
    return firstReason(emptyNameIn("ignore", F.Ignore), emptyNameIn("guards", F.Guards),
                       emptyNameIn("grad-free", F.GradFree));
  }
};
} // namespace llvm::yaml

/// Appends the names of `From` not yet in `To`, in linear time (rule lists may be long).
static void appendAll(std::vector<std::string> &To, const std::vector<std::string> &From) {
  if (From.empty())
    return;
  llvm::StringSet<> Seen;
  for (const auto &S : To)
    Seen.insert(S);
  for (const auto &S : From)
    if (Seen.insert(S).second)
      To.push_back(S);
}

/// A later rule for the same function replaces the earlier one (users can correct built-ins).
template <typename Rule> static void mergeByFunction(std::vector<Rule> &To, const std::vector<Rule> &From) {
  if (From.empty())
    return;
  llvm::StringMap<size_t> Index;
  for (size_t I = 0; I < To.size(); ++I)
    Index.try_emplace(To[I].Function, I);
  for (const Rule &R : From) {
    auto [It, New] = Index.try_emplace(R.Function, To.size());
    if (New)
      To.push_back(R);
    else
      To[It->second] = R;
  }
}

static std::string stripGlobalQualifier(llvm::StringRef Name) {
  Name = Name.trim();
  if (Name.starts_with("::"))
    Name = Name.drop_front(2);
  return Name.str();
}

llvm::Expected<RuleSet> ampmigrate::parseRules(llvm::StringRef Path, llvm::StringRef Text) {
  FirstYamlError First{Path, ""};
  std::string &Diags = First.Message;
  if (std::string Deep = checkYamlDepth(Path, Text); !Deep.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), Deep);
  RuleFile F;
  {
    yaml::Input In(llvm::MemoryBufferRef(Text, Path), nullptr, FirstYamlError::handle, &First);
    In >> F;
    if (In.error() && Diags.empty())
      Diags = (Path + ": error: not a valid rule file").str();
    // A later document would be ignored silently: a rule file holds exactly one.
    if (Diags.empty() && hasSeveralYamlDocuments(Text))
      Diags = (Path + ": error: more than one YAML document ('---'); a rule file holds one").str();
  }
  if (!Diags.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), Diags);

  // Every name a list gives must be a C++ name: `- a::B` indented under `- a::A` is read as the one
  // name "a::A - a::B" by YAML's folding of plain scalars, which would never match anything.
  auto BadName = [&](llvm::StringRef Name) -> std::optional<std::string> {
    llvm::StringRef N = Name.trim();
    N.consume_front("::");
    bool Ok = !N.empty();
    for (llvm::StringRef Part = N; Ok && !Part.empty();) {
      auto [Head, Rest] = Part.split("::");
      Ok = !Head.empty() && !llvm::isDigit(Head.front()) &&
           llvm::all_of(Head, [](char C) { return llvm::isAlnum(C) || C == '_'; }) &&
           (Rest.data() == nullptr || Part.size() == Head.size() || !Rest.empty());
      Part = Rest;
    }
    if (Ok)
      return std::nullopt;
    llvm::StringRef FirstWord = Name.trim().take_until([](char C) { return C == ' ' || C == '\n'; });
    size_t At = Text.find(FirstWord);
    unsigned Line = At == llvm::StringRef::npos ? 0 : 1 + Text.take_front(At).count('\n');
    size_t LineStart = At == llvm::StringRef::npos ? 0 : Text.take_front(At).rfind('\n');
    unsigned Col = At - (LineStart == llvm::StringRef::npos ? 0 : LineStart + 1) + 1;
    std::string Where =
        (Path + ":" + (Line ? std::to_string(Line) + ":" + std::to_string(Col) + ":" : std::string())).str();
    return Where + " error: '" + Name.str() + "' is not a C++ name" +
           (Name.contains(" - ") ? std::string(" (a list item indented deeper than the one above "
                                               "it is read as part of that item)")
                                 : std::string());
  };
  std::vector<llvm::StringRef> Names;
  for (const auto &A : F.Autocast)
    Names.push_back(A.Function);
  for (const auto &C : F.Clip)
    Names.push_back(C.Function);
  for (const auto *List : {&F.Ignore, &F.Guards, &F.Scaler.Classes, &F.ZeroGrad.Classes, &F.Types.Modules,
                           &F.Types.ModuleHolders, &F.Types.Optimizers, &F.Types.Tensors, &F.Types.NoGradGuards})
    Names.insert(Names.end(), List->begin(), List->end());
  // A grad-free entry may name a namespace: `spdlog::` (checked without its last `::`).
  for (llvm::StringRef N : F.GradFree)
    Names.push_back(N.trim().ends_with("::") ? N.trim().drop_back(2) : N);
  for (llvm::StringRef N : Names)
    if (std::optional<std::string> Why = BadName(N))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), *Why);

  RuleSet R;
  R.Sources.push_back(Path.str());
  for (auto A : F.Autocast) {
    A.Function = stripGlobalQualifier(A.Function);
    R.Autocast.push_back(std::move(A));
  }
  for (auto C : F.Clip) {
    C.Function = stripGlobalQualifier(C.Function);
    R.Clip.push_back(std::move(C));
  }
  for (const auto &S : F.Ignore)
    R.Ignore.push_back(stripGlobalQualifier(S));
  for (const auto &S : F.Guards)
    R.Guards.push_back(stripGlobalQualifier(S));
  for (const auto &S : F.GradFree)
    R.GradFree.push_back(stripGlobalQualifier(S));
  for (const auto &S : F.Scaler.Classes)
    R.ScalerClasses.push_back(stripGlobalQualifier(S));
  R.ScalerMethods = F.Scaler.Methods;
  R.ScalerOptionParams = F.Scaler.Options;
  R.ZeroGradMethods = F.ZeroGrad.Methods;
  for (const auto &S : F.ZeroGrad.Classes)
    R.ZeroGradClasses.push_back(stripGlobalQualifier(S));
  for (const auto &S : F.Types.Modules)
    R.ModuleClasses.push_back(stripGlobalQualifier(S));
  for (const auto &S : F.Types.ModuleHolders)
    R.ModuleHolderTemplates.push_back(stripGlobalQualifier(S));
  for (const auto &S : F.Types.Optimizers)
    R.OptimizerClasses.push_back(stripGlobalQualifier(S));
  for (const auto &S : F.Types.Tensors)
    R.TensorClasses.push_back(stripGlobalQualifier(S));
  for (const auto &S : F.Types.NoGradGuards)
    R.NoGradGuardClasses.push_back(stripGlobalQualifier(S));
  if (F.Target) {
    R.Target = *F.Target;
    R.TargetGiven = true;
  }
  return R;
}

llvm::Expected<RuleSet> ampmigrate::loadRuleFile(llvm::StringRef Path) {
  auto Buf = readBoundedRegularFile(Path, "rule file");
  if (!Buf)
    return Buf.takeError();
  return parseRules(Path, (*Buf)->getBuffer());
}

std::string ampmigrate::builtinRulesDir() {
  if (const char *Env = std::getenv("AMP_MIGRATE_RULES_DIR"))
    return Env;
  // Next to the installed binary first (<prefix>/bin/../share/amp-migrate/rewrite-rules, so an
  // install anywhere works), then the configured install location, then the source tree (running
  // from a build directory).
  std::string Exe = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  if (!Exe.empty()) {
    llvm::SmallString<256> P(llvm::sys::path::parent_path(llvm::sys::path::parent_path(Exe)));
    llvm::sys::path::append(P, "share", "amp-migrate", "rewrite-rules");
    if (llvm::sys::fs::is_directory(P))
      return std::string(P);
  }
  for (const char *Dir : {AMP_INSTALLED_RULES_DIR, AMP_SOURCE_RULES_DIR})
    if (llvm::sys::fs::is_directory(Dir))
      return Dir;
  return AMP_SOURCE_RULES_DIR;
}

llvm::Expected<RuleSet> ampmigrate::loadRules(const std::vector<std::string> &UserFiles) {
  RuleSet All;
  std::string Dir = builtinRulesDir();
  std::error_code EC;
  std::vector<std::string> Builtin;
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC; It.increment(EC))
    if (llvm::sys::path::extension(It->path()) == ".yaml")
      Builtin.push_back(It->path());
  if (EC || Builtin.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: error: no built-in rule files found (set "
                                   "AMP_MIGRATE_RULES_DIR)",
                                   Dir.c_str());
  llvm::sort(Builtin);
  for (const auto &Path : Builtin) {
    auto R = loadRuleFile(Path);
    if (!R)
      return R.takeError();
    All.merge(*R);
  }
  for (const auto &Path : UserFiles) {
    auto R = loadRuleFile(Path);
    if (!R)
      return R.takeError();
    All.merge(*R);
  }
  return All;
}

void RuleSet::merge(const RuleSet &O) {
  mergeByFunction(Autocast, O.Autocast);
  mergeByFunction(Clip, O.Clip);
  appendAll(Ignore, O.Ignore);
  appendAll(Guards, O.Guards);
  appendAll(GradFree, O.GradFree);
  appendAll(ScalerClasses, O.ScalerClasses);
  appendAll(ScalerMethods.Scale, O.ScalerMethods.Scale);
  appendAll(ScalerMethods.Unscale, O.ScalerMethods.Unscale);
  appendAll(ScalerMethods.Step, O.ScalerMethods.Step);
  appendAll(ScalerMethods.Update, O.ScalerMethods.Update);
  appendAll(ScalerMethods.GetScale, O.ScalerMethods.GetScale);
  appendAll(ScalerMethods.IsEnabled, O.ScalerMethods.IsEnabled);
  // What a checked unscale's answer means: a later file's word wins over an earlier one's (a
  // project whose unscale_and_check answers "found an inf" overrides the built-in meaning).
  llvm::erase_if(ScalerMethods.CheckedFinite, [&](const std::string &N) {
    return llvm::is_contained(O.ScalerMethods.CheckedFoundInf, N);
  });
  llvm::erase_if(ScalerMethods.CheckedFoundInf, [&](const std::string &N) {
    return llvm::is_contained(O.ScalerMethods.CheckedFinite, N);
  });
  appendAll(ScalerMethods.CheckedFinite, O.ScalerMethods.CheckedFinite);
  appendAll(ScalerMethods.CheckedFoundInf, O.ScalerMethods.CheckedFoundInf);
  for (const auto &[K, V] : O.ScalerOptionParams)
    appendAll(ScalerOptionParams[K], V);
  appendAll(ZeroGradMethods, O.ZeroGradMethods);
  appendAll(ZeroGradClasses, O.ZeroGradClasses);
  appendAll(ModuleClasses, O.ModuleClasses);
  appendAll(ModuleHolderTemplates, O.ModuleHolderTemplates);
  appendAll(OptimizerClasses, O.OptimizerClasses);
  appendAll(TensorClasses, O.TensorClasses);
  appendAll(NoGradGuardClasses, O.NoGradGuardClasses);
  if (O.TargetGiven) {
    Target = O.Target;
    TargetGiven = true;
  }
  appendAll(Sources, O.Sources);
}

const AutocastFunctionRule *RuleSet::autocastRule(llvm::StringRef Name) const {
  for (const auto &A : Autocast)
    if (A.Function == Name)
      return &A;
  return nullptr;
}

const ClipFunctionRule *RuleSet::clipRule(llvm::StringRef Name) const {
  for (const auto &C : Clip)
    if (C.Function == Name)
      return &C;
  return nullptr;
}

bool RuleSet::isIgnored(llvm::StringRef Name) const { return llvm::is_contained(Ignore, Name); }

bool RuleSet::isGradFree(llvm::StringRef Name) const {
  return llvm::any_of(GradFree, [&](llvm::StringRef G) {
    return G.ends_with("::") ? Name.starts_with(G) : Name == G;
  });
}

std::vector<std::string> RuleSet::prefilterTokens() const {
  std::set<std::string> Tokens;
  auto LastComponent = [](llvm::StringRef Q) { return Q.rsplit("::").second.empty() ? Q.str() : Q.rsplit("::").second.str(); };
  for (const auto &A : Autocast)
    if (A.Role == AutocastRole::Enable)
      Tokens.insert(LastComponent(A.Function));
  for (const auto &G : Guards)
    Tokens.insert(LastComponent(G));
  for (const auto &C : ScalerClasses)
    Tokens.insert(LastComponent(C));
  for (const auto &M : ScalerMethods.Scale)
    Tokens.insert(M);
  for (const auto &M : ScalerMethods.Unscale)
    Tokens.insert(M);
  for (const auto &C : Clip)
    Tokens.insert(LastComponent(C.Function));
  return {Tokens.begin(), Tokens.end()};
}
