// Autocast calls spelled per library version in preprocessor branches (`#if TORCH_VERSION_MAJOR
// >= 2 set_autocast_enabled(at::kCPU, true); #else set_cpu_enabled(true); #endif`): the branches
// the compiler skipped hold the same scope call in another spelling, so the whole conditional goes
// with the scope when the active branch holds nothing but the scope's own calls.
#include "VersionBranches.h"
#include "ModelConversion.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace ampmigrate {

namespace {

/// A preprocessor conditional of the function body, read line by line.
struct PPGroup {
  unsigned Begin = 0, End = 0;                           ///< `#if` line start .. after `#endif` line
  std::vector<std::pair<unsigned, unsigned>> Branches;    ///< text between its directive lines
  bool Nested = false;                                   ///< a branch holds another conditional
};

/// The conditionals of [From, To) from the file's directives (conditionalDirectives): each from
/// its `#if` line to the line after its `#endif`, with the text between its directive lines.
std::vector<PPGroup> conditionalsIn(const std::vector<PPDirective> &Ds, StringRef Buffer,
                                    unsigned From, unsigned To) {
  auto LineStart = [&](unsigned O) {
    size_t NL = Buffer.take_front(O).rfind('\n');
    return NL == StringRef::npos ? 0u : unsigned(NL + 1);
  };
  auto NextLine = [&](unsigned O) {
    size_t NL = Buffer.find('\n', O);
    return NL == StringRef::npos ? unsigned(Buffer.size()) : unsigned(NL + 1);
  };
  std::vector<PPGroup> Done, Open;
  unsigned BranchStart = 0;
  for (const PPDirective &D : Ds) {
    if (D.Offset < From || D.Offset >= To)
      continue;
    if (D.Kind == PPDirective::Open) {
      if (!Open.empty())
        Open.back().Nested = true;
      Open.push_back({LineStart(D.Offset), 0, {}, false});
    } else if (!Open.empty()) {
      Open.back().Branches.push_back({BranchStart, LineStart(D.Offset)});
      if (D.Kind == PPDirective::Close) {
        Open.back().End = NextLine(D.Offset);
        Done.push_back(Open.back());
        Open.pop_back();
      }
    }
    BranchStart = NextLine(D.Offset);
  }
  return Done;
}

/// How many of the statements (offset ranges) lie within [B, E].
unsigned statementsWithin(const std::vector<std::pair<unsigned, unsigned>> &Stmts, unsigned B, unsigned E) {
  return static_cast<unsigned>(
      llvm::count_if(Stmts, [&](const std::pair<unsigned, unsigned> &S) { return S.first >= B && S.second <= E; }));
}

/// The statements of a branch, comments dropped, when each is a call of a function the rules
/// name for autocast (`at::autocast::set_cpu_enabled(true);`); nullopt otherwise.
struct SpelledCall {
  const AutocastFunctionRule *Rule;
  std::string Args;
};

std::optional<std::vector<SpelledCall>> autocastCallsOnly(StringRef Text, const RuleSet &Rules) {
  std::string Code;
  for (size_t I = 0; I < Text.size(); ++I) {
    if (Text.substr(I).starts_with("//")) {
      size_t NL = Text.find('\n', I);
      I = NL == StringRef::npos ? Text.size() : NL;
      continue;
    }
    if (Text.substr(I).starts_with("/*")) {
      size_t E = Text.find("*/", I + 2);
      if (E == StringRef::npos)
        return std::nullopt;
      I = E + 1;
      continue;
    }
    Code += Text[I];
  }
  std::vector<SpelledCall> Calls;
  StringRef Rest(Code);
  while (!Rest.trim().empty()) {
    if (Rest.find(';') == StringRef::npos)
      return std::nullopt; // text after the last statement
    auto [Stmt, Tail] = Rest.split(';');
    Stmt = Stmt.trim();
    size_t Paren = Stmt.find('(');
    if (Paren == StringRef::npos || !Stmt.ends_with(")"))
      return std::nullopt;
    StringRef Callee = Stmt.take_front(Paren).trim();
    if (Callee.empty() || !llvm::all_of(Callee, [](char C) { return llvm::isAlnum(C) || C == '_' || C == ':'; }))
      return std::nullopt;
    StringRef Name = Callee.rsplit("::").second.empty() ? Callee : Callee.rsplit("::").second;
    const AutocastFunctionRule *Rule = nullptr;
    for (const AutocastFunctionRule &A : Rules.Autocast)
      if (StringRef(A.Function).rsplit("::").second == Name || A.Function == Name)
        Rule = &A;
    if (!Rule)
      return std::nullopt;
    Calls.push_back({Rule, Stmt.drop_front(Paren + 1).drop_back().str()});
    Rest = Tail;
  }
  return Calls;
}

/// The conditionals around the scope's calls.
class PreprocessorPlanner : public StepConcern {
public:
  PreprocessorPlanner(const StepContext &C, const StepFacts &F, std::vector<Blocker> &Blockers,
                      PreprocessorFacts &Out)
      : StepConcern(C, F, Blockers), Out(Out) {}

  /// Whether the inactive branch at `Inactive` is part of a conditional that holds nothing but
  /// the scope's calls in per-version spellings (then recorded in Out.VersionGroups).
  bool versionBranches(SourceRange Inactive);
  /// `#ifdef USE_AMP` (one branch, read by the compiler) around the scope's calls and nothing
  /// else: the conditionals go with the scope (Out.VersionGroups) and the conversion is spelled
  /// per configuration (Out.FlagOpen: the directive; the other configuration converts at O0).
  void flagConditionals();

private:
  PreprocessorFacts &Out;
  /// Where the scope's own call statements are (their removals' extents), written outside macros.
  std::vector<std::pair<unsigned, unsigned>> scopeStatements(const AutocastScope &S) const;
};

} // namespace

std::vector<std::pair<unsigned, unsigned>> PreprocessorPlanner::scopeStatements(const AutocastScope &S) const {
  std::vector<std::pair<unsigned, unsigned>> Out;
  auto Add = [&](const AutocastCall *A) {
    Edit E;
    if (A && A->Removable && !A->MacroUse.isValid() && C.removal(A->Removable, E))
      Out.push_back({E.Offset, E.Offset + E.Length});
  };
  Add(S.Enable);
  Add(S.Disable);
  for (const AutocastCall *A : S.Auxiliary)
    Add(A);
  return Out;
}

bool PreprocessorPlanner::versionBranches(SourceRange Inactive) {
  if (!T.Scope)
    return false;
  const AutocastScope &S = *T.Scope;
  unsigned At = SM.getFileOffset(SM.getExpansionLoc(Inactive.getBegin()));
  const Stmt *Body = FA.Function->getBody();
  unsigned From = C.lineStart(C.off(Body->getBeginLoc())), To = C.off(Body->getEndLoc());
  const PPGroup *G = nullptr;
  std::vector<PPGroup> Groups = conditionalsIn(conditionalDirectives(SM, File, LO), Buffer, From, To);
  for (const PPGroup &C : Groups)
    if (C.Begin <= At && At < C.End && (!G || C.Begin > G->Begin))
      G = &C;
  if (!G || G->Nested)
    return false;
  // The scope's own call statements (removed with it) and where they are.
  std::vector<std::pair<unsigned, unsigned>> ScopeStmts = scopeStatements(S);
  bool ActiveSeen = false;
  for (auto [B, E] : G->Branches) {
    std::optional<std::vector<SpelledCall>> Calls = autocastCallsOnly(StringRef(Buffer).slice(B, E), Rules);
    if (!Calls)
      return false;
    bool Skipped = llvm::any_of(FA.InactiveAmpCode, [&](SourceRange R) {
      unsigned RB = SM.getFileOffset(SM.getExpansionLoc(R.getBegin()));
      unsigned RE = SM.getFileOffset(SM.getExpansionLoc(R.getEnd()));
      return RB <= B && E <= RE + 1;
    });
    if (Skipped) {
      // Another spelling of the same scope: enabling or disabling it, or its cache, for the device
      // it enables; a dtype of its own in a skipped branch would be lost.
      for (const SpelledCall &C : *Calls) {
        if (C.Rule->Role != AutocastRole::Enable && C.Rule->Role != AutocastRole::Cache)
          return false;
        std::string Device = C.Rule->Device;
        if (C.Rule->DeviceArg >= 0) {
          llvm::SmallVector<StringRef, 4> Args;
          StringRef(C.Args).split(Args, ',');
          StringRef A = (unsigned)C.Rule->DeviceArg < Args.size() ? Args[C.Rule->DeviceArg] : "";
          Device = A.contains("CUDA") ? "cuda" : A.contains("CPU") ? "cpu" : "";
        }
        if (C.Rule->Role == AutocastRole::Enable && (!S.Enable || Device.empty() || Device != S.Enable->Device))
          return false;
      }
      continue;
    }
    // A branch the compiler read: every statement in it is one of the scope's.
    unsigned Covered = statementsWithin(ScopeStmts, B, E);
    if (Covered != Calls->size())
      return false;
    ActiveSeen = ActiveSeen || Covered > 0;
  }
  if (!ActiveSeen)
    return false;
  if (!llvm::any_of(Out.VersionGroups, [&](const Edit &V) { return V.Offset == G->Begin; }))
    Out.VersionGroups.push_back({G->Begin, G->End - G->Begin, ""});
  return true;
}

void PreprocessorPlanner::flagConditionals() {
  if (!T.Scope || !T.Scope->Enable || runTimeFlag(C, *T.Scope))
    return;
  const AutocastScope &S = *T.Scope;
  const Stmt *Body = FA.Function->getBody();
  unsigned From = C.lineStart(C.off(Body->getBeginLoc())), To = C.off(Body->getEndLoc());
  std::vector<std::pair<unsigned, unsigned>> ScopeStmts = scopeStatements(S);
  if (ScopeStmts.empty())
    return;
  std::vector<const PPGroup *> Flagged;
  std::string Open;
  std::vector<PPGroup> Groups = conditionalsIn(conditionalDirectives(SM, File, LO), Buffer, From, To);
  for (const PPGroup &G : Groups) {
    if (G.Nested || G.Branches.size() != 1)
      continue;
    auto [B, E] = G.Branches.front();
    std::optional<std::vector<SpelledCall>> Calls = autocastCallsOnly(StringRef(Buffer).slice(B, E), Rules);
    if (!Calls || Calls->empty())
      continue;
    unsigned Covered = statementsWithin(ScopeStmts, B, E);
    if (Covered != Calls->size())
      continue;
    // `#ifdef X`, `#if defined(X)`, `#if X`: one condition for every conditional of the scope.
    std::string Directive =
        llvm::join(llvm::split(StringRef(Buffer).slice(G.Begin, B).trim(), ' '), " ");
    if (StringRef(Directive).contains("\\") || StringRef(Directive).contains("/*") ||
        StringRef(Directive).contains("//"))
      return;
    if (!Open.empty() && Directive != Open)
      return;
    Open = Directive;
    Flagged.push_back(&G);
  }
  if (Flagged.empty())
    return;
  // The scope starts in one of them.
  unsigned EnableAt = C.off(S.Enable->Call->getBeginLoc());
  if (llvm::none_of(Flagged, [&](const PPGroup *G) { return G->Begin <= EnableAt && EnableAt < G->End; }))
    return;
  for (const PPGroup *G : Flagged)
    if (llvm::none_of(Out.VersionGroups, [&](const Edit &V) { return V.Offset == G->Begin; }))
      Out.VersionGroups.push_back({G->Begin, G->End - G->Begin, ""});
  Out.FlagOpen = Open;
}

std::string PreprocessorFacts::perConfiguration(const std::string &Line, const std::string &Level,
                                                const std::string &LevelEnum) const {
  if (FlagOpen.empty())
    return Line;
  std::string Off = Line;
  size_t At = Off.find(Level);
  if (At == std::string::npos)
    return Line;
  Off.replace(At, Level.size(), LevelEnum + "::O0");
  return FlagOpen + "\n" + Line + "#else\n" + Off + "#endif\n";
}

ConcernPlan<PreprocessorFacts> planPreprocessor(const StepContext &C) {
  ConcernPlan<PreprocessorFacts> P;
  const StepFacts None;
  PreprocessorPlanner Planner(C, None, P.Blockers, P.Plan);
  for (const SourceRange &R : C.FA.InactiveAmpCode)
    if (!Planner.versionBranches(R))
      P.Blockers.push_back({R.getBegin(), "AMP code under an inactive preprocessor branch in this "
                                          "function; migrate each configuration by hand or run "
                                          "once per configuration"});
  Planner.flagConditionals();
  return P;
}

} // namespace ampmigrate
