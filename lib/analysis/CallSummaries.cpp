// Per-function summaries across translation units (CallSummaries.h): what each function of a main
// file does that a rewrite depends on, the run's index of them, and the questions a translation
// unit asks of it.
#include "ampmigrate/CallSummaries.h"
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/Rules.h"
#include "ampmigrate/ShapeRecognisers.h"
#include "ampmigrate/SourceText.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMap.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Index/USRGeneration.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Path.h"
#include <deque>

using namespace clang;

namespace ampmigrate {

std::string usrOf(const FunctionDecl *FD) {
  llvm::SmallString<128> Buf;
  if (!FD || index::generateUSRForDecl(FD->getCanonicalDecl(), Buf))
    return "";
  return std::string(Buf);
}

bool hasSkippedBody(const FunctionDecl *FD) {
  return llvm::any_of(FD->redecls(), [](const FunctionDecl *R) { return R->hasSkippedBody(); });
}

bool isProjectFunction(const FunctionDecl *FD) {
  const SourceManager &SM = FD->getASTContext().getSourceManager();
  return !SM.isInSystemHeader(SM.getExpansionLoc(FD->getLocation())) && !inLibraryNamespace(FD) &&
         !FD->getBuiltinID();
}

/// What one body does by itself, and the project functions it calls.
struct SummaryDirectFacts {
  std::string AutocastAt, GradAt, GradReadAt, BackwardAt, IndirectAt;
  std::vector<const FunctionDecl *> Callees;
};

namespace {

std::string whereOf(const SourceManager &SM, SourceLocation L) {
  PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(L));
  if (P.isInvalid())
    return "?";
  return positionText(llvm::sys::path::filename(P.getFilename()), P.getLine());
}


class DirectWalk : public AnalysedBodyVisitor {
public:
  DirectWalk(const RuleSet &Rules, ASTContext &Ctx, const Stmt *Body, SummaryDirectFacts &Out)
      : Rules(Rules), Ctx(Ctx), SM(Ctx.getSourceManager()), PM(const_cast<Stmt *>(Body)), Out(Out) {}

private:
  const RuleSet &Rules;
  ASTContext &Ctx;
  const SourceManager &SM;
  ParentMap PM;
  SummaryDirectFacts &Out;

  bool visitDecl(Decl *D) override {
    if (const auto *VD = dyn_cast<VarDecl>(D); VD && Out.AutocastAt.empty() && declaresEnablingGuard(VD, Rules))
      Out.AutocastAt = whereOf(SM, VD->getLocation());
    return true;
  }

  void callee(const FunctionDecl *F) {
    // The rules' grad-free functions are known by name (a logging library built with the project).
    if (F && isProjectFunction(F) && !Rules.isGradFree(qualifiedName(F)))
      Out.Callees.push_back(F);
  }

  bool visitStmt(Stmt *S) override {
    const auto *CE = dyn_cast<CallExpr>(S);
    if (!CE)
      return true;
    if (Out.AutocastAt.empty() && isAutocastEnableCall(CE, Rules, Ctx))
      Out.AutocastAt = whereOf(SM, CE->getBeginLoc());
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE); MC && Out.BackwardAt.empty())
      if (const CXXMethodDecl *M = MC->getMethodDecl(); M && M->getIdentifier() && M->getName() == "backward")
        Out.BackwardAt = whereOf(SM, CE->getBeginLoc());
    if (isGradAccessor(CE)) {
      if (Out.GradAt.empty())
        Out.GradAt = whereOf(SM, CE->getBeginLoc());
      if (Out.GradReadAt.empty() && !onlyClearsGrad(CE, PM))
        Out.GradReadAt = whereOf(SM, CE->getBeginLoc());
    } else if (Out.GradAt.empty() && actsOnGradInLibrary(CE, Rules)) {
      Out.GradAt = whereOf(SM, CE->getBeginLoc());
    }
    if (Out.IndirectAt.empty() && indirectCallee(CE, Ctx))
      Out.IndirectAt = whereOf(SM, CE->getBeginLoc());
    // A module called through its holder (`block(x)`) runs its class's forward (`block->forward(x)`
    // names it: its direct callee).
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(CE); Op && Op->getOperator() == OO_Call)
      if (const CXXRecordDecl *Model = modelClass(CE); Model && Model->hasDefinition())
        for (const CXXMethodDecl *M : Model->methods())
          if (M->getIdentifier() && M->getName() == "forward")
            callee(M);
    callee(CE->getDirectCallee());
    return true;
  }
};

} // namespace

/// The summaries of one translation unit's functions, each body walked once.
class FunctionSummariser::Impl {
public:
  Impl(ASTContext &Ctx, const RuleSet &Rules) : Ctx(Ctx), Rules(Rules) {}

  FunctionSummary summarise(const FunctionDecl *Def, std::vector<const FunctionDecl *> *ExternalDecls) {
    FunctionSummary S;
    S.Name = qualifiedName(Def);
    S.Where = whereOf(Ctx.getSourceManager(), Def->getLocation());
    // Every function its body reaches through bodies this TU has (breadth first, each once).
    llvm::SmallPtrSet<const FunctionDecl *, 32> Seen{Def->getCanonicalDecl()};
    std::deque<const FunctionDecl *> Work{Def};
    std::set<std::string> External;
    while (!Work.empty()) {
      const FunctionDecl *F = Work.front();
      Work.pop_front();
      const SummaryDirectFacts &D = direct(F);
      if (S.AutocastAt.empty())
        S.AutocastAt = D.AutocastAt;
      if (S.GradAt.empty())
        S.GradAt = D.GradAt;
      if (S.GradReadAt.empty())
        S.GradReadAt = D.GradReadAt;
      if (S.BackwardAt.empty())
        S.BackwardAt = D.BackwardAt;
      if (S.IndirectAt.empty())
        S.IndirectAt = D.IndirectAt;
      for (const FunctionDecl *C : D.Callees) {
        if (!Seen.insert(C->getCanonicalDecl()).second)
          continue;
        const FunctionDecl *CDef = nullptr;
        if (C->hasBody(CDef) && CDef->getBody())
          Work.push_back(CDef);
        else if (!hasSkippedBody(C))
          if (std::string U = usrOf(C); !U.empty()) {
            External.insert(U);
            if (ExternalDecls)
              ExternalDecls->push_back(C);
          }
        // (A body skipped by the fast path is in a header that names no autocast, scaler or
        // grad token: HeaderBodySkipper.)
      }
    }
    S.External.assign(External.begin(), External.end());
    return S;
  }

private:
  ASTContext &Ctx;
  const RuleSet &Rules;
  llvm::DenseMap<const FunctionDecl *, SummaryDirectFacts> Direct;

  const SummaryDirectFacts &direct(const FunctionDecl *F) {
    auto [It, New] = Direct.try_emplace(F->getCanonicalDecl());
    if (New) {
      SummaryDirectFacts D;
      DirectWalk W(Rules, Ctx, F->getBody(), D);
      W.walk(F->getBody());
      Direct[F->getCanonicalDecl()] = std::move(D);
    }
    return Direct[F->getCanonicalDecl()];
  }
};

FunctionSummariser::FunctionSummariser(ASTContext &Ctx, const RuleSet &Rules)
    : P(std::make_unique<Impl>(Ctx, Rules)) {}
FunctionSummariser::~FunctionSummariser() = default;
FunctionSummary FunctionSummariser::summarise(const FunctionDecl *Def, std::vector<const FunctionDecl *> *External) {
  return P->summarise(Def, External);
}

bool actsOnGradInLibrary(const CallExpr *CE, const RuleSet &Rules) {
  const FunctionDecl *F = CE->getDirectCallee();
  if (!F || isProjectFunction(F))
    return false;
  if (Rules.clipRule(qualifiedName(F)))
    return true;
  const auto *MD = dyn_cast<CXXMethodDecl>(F);
  if (!MD || !MD->getIdentifier())
    return false;
  const CXXRecordDecl *RD = MD->getParent();
  bool Optimizer = isDerivedFromAny(RD, Rules.OptimizerClasses);
  return (Optimizer && MD->getName() == "step") ||
         ((Optimizer || isDerivedFromAny(RD, Rules.ModuleClasses) || isDerivedFromAny(RD, Rules.ZeroGradClasses)) &&
          methodNamed(MD, Rules.ZeroGradMethods));
}

std::optional<std::string> indirectCallee(const CallExpr *CE, const ASTContext &Ctx) {
  const FunctionDecl *F = CE->getDirectCallee();
  bool StdFunction = false;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(CE); Op && Op->getOperator() == OO_Call && F)
    if (const auto *MD = dyn_cast<CXXMethodDecl>(F))
      StdFunction = qualifiedName(MD->getParent()) == "std::function";
  if (F && !StdFunction)
    return std::nullopt;
  if (!F && (isa<CXXPseudoDestructorExpr>(CE->getCallee()->IgnoreParenImpCasts()) ||
             CE->getCallee()->isTypeDependent()))
    return std::nullopt;
  const Expr *Callee = StdFunction ? cast<CXXOperatorCallExpr>(CE)->getArg(0) : CE->getCallee();
  return sourceTextOf(Ctx, Callee->IgnoreParenImpCasts()->getSourceRange());
}

namespace {

/// The main file's function definitions, in the declarations written there (namespaces and
/// classes entered; templates' patterns left out: their instantiations are other functions).
void definitionsIn(const Decl *D, const SourceManager &SM, std::vector<const FunctionDecl *> &Out) {
  if (const auto *TU = dyn_cast<TranslationUnitDecl>(D)) { // no traversal scope set
    for (const Decl *Inner : TU->decls())
      definitionsIn(Inner, SM, Out);
    return;
  }
  if (!SM.isInMainFile(SM.getExpansionLoc(D->getLocation())))
    return;
  if (const auto *FD = dyn_cast<FunctionDecl>(D)) {
    if (FD->doesThisDeclarationHaveABody() && FD->getBody() && !FD->isDependentContext())
      Out.push_back(FD);
    return;
  }
  if (isa<NamespaceDecl, LinkageSpecDecl>(D) ||
      (isa<CXXRecordDecl>(D) && !cast<CXXRecordDecl>(D)->isDependentContext()))
    for (const Decl *Inner : cast<DeclContext>(D)->decls())
      definitionsIn(Inner, SM, Out);
}

} // namespace

SummaryIndex summariseMainFile(ASTContext &Ctx, const RuleSet &Rules) {
  SummaryIndex Out;
  std::vector<const FunctionDecl *> Found;
  for (const Decl *Top : Ctx.getTraversalScope())
    definitionsIn(Top, Ctx.getSourceManager(), Found);
  FunctionSummariser S(Ctx, Rules);
  for (const FunctionDecl *FD : Found)
    if (std::string U = usrOf(FD); !U.empty())
      Out.add(U, S.summarise(FD));
  return Out;
}

CalleeAnswer askIndex(const SummaryIndex &Index, llvm::StringRef USR, CalleeFact F) {
  CalleeAnswer Unknown;
  std::set<std::string> Seen{USR.str()};
  std::deque<std::string> Work{USR.str()};
  while (!Work.empty()) {
    std::string U = Work.front();
    Work.pop_front();
    auto It = Index.Functions.find(U);
    if (It == Index.Functions.end()) {
      if (Unknown.K == CalleeAnswer::Kind::No)
        Unknown = {CalleeAnswer::Kind::Unknown, U, ""};
      continue;
    }
    const FunctionSummary &S = It->second;
    const std::string &At = F == CalleeFact::EnablesAutocast ? S.AutocastAt
                            : F == CalleeFact::TouchesGrad   ? S.GradAt
                            : F == CalleeFact::RunsBackward  ? S.BackwardAt
                            : F == CalleeFact::CallsIndirectly ? S.IndirectAt
                                                             : S.GradReadAt;
    if (!At.empty())
      return {CalleeAnswer::Kind::Yes, S.Name, At};
    for (const std::string &E : S.External)
      if (Seen.insert(E).second)
        Work.push_back(E);
  }
  return Unknown;
}

CalleeAnswer CalleeFacts::ask(const FunctionDecl *FD, CalleeFact F) const {
  std::string U = usrOf(FD);
  CalleeAnswer A;
  if (Run && !U.empty())
    A = askIndex(*Run, U, F);
  else
    A = {CalleeAnswer::Kind::Unknown, U, ""};
  if (A.K != CalleeAnswer::Kind::Unknown)
    return A;
  // Name the unknown function as the code spells it; remember the question.
  bool Asked = A.Function == U;
  std::string Name = qualifiedName(FD);
  if (!U.empty() && Asked) {
    std::string Pattern = FD->getNameAsString();
    if (const auto *MD = dyn_cast<CXXMethodDecl>(FD))
      Pattern = MD->getParent()->getNameAsString() + "::" + Pattern;
    Unknown.emplace(U, UnknownCallee{Name, Pattern, false});
  } else if (!U.empty()) {
    // Known to the run, but something it calls is not: the run's index names it by USR only.
    Unknown.emplace(A.Function, UnknownCallee{A.Function, "", false});
  }
  A.Function = Asked || U.empty() ? Name : Name + " (through a function it calls)";
  return A;
}

void SummaryIndex::add(const std::string &USR, FunctionSummary S) {
  auto [It, New] = Functions.emplace(USR, S);
  if (New)
    return;
  FunctionSummary &Old = It->second;
  for (auto [Mine, Theirs] : {std::pair{&Old.AutocastAt, &S.AutocastAt}, std::pair{&Old.GradAt, &S.GradAt},
                              std::pair{&Old.GradReadAt, &S.GradReadAt}, std::pair{&Old.BackwardAt, &S.BackwardAt},
                              std::pair{&Old.IndirectAt, &S.IndirectAt}})
    if (Mine->empty())
      *Mine = *Theirs;
  std::set<std::string> Ext(Old.External.begin(), Old.External.end());
  Ext.insert(S.External.begin(), S.External.end());
  Old.External.assign(Ext.begin(), Ext.end());
}

const FunctionSummary *trainingCallerIn(const SummaryIndex &Index, llvm::StringRef USR) {
  for (const auto &[U, S] : Index.Functions)
    if (!S.BackwardAt.empty() && llvm::is_contained(S.External, USR))
      return &S;
  return nullptr;
}

CalleeAnswer CalleeFacts::trainingCaller(const FunctionDecl *FD) const {
  std::string U = usrOf(FD);
  if (U.empty())
    return {CalleeAnswer::Kind::Unknown, qualifiedName(FD), ""};
  if (const FunctionSummary *S = Run ? trainingCallerIn(*Run, U) : nullptr)
    return {CalleeAnswer::Kind::Yes, S->Name, S->BackwardAt};
  std::string Pattern = FD->getNameAsString();
  if (const auto *MD = dyn_cast<CXXMethodDecl>(FD))
    Pattern = MD->getParent()->getNameAsString() + " " + Pattern;
  Unknown.emplace(U, UnknownCallee{qualifiedName(FD), Pattern, true});
  return {CalleeAnswer::Kind::Unknown, qualifiedName(FD), ""};
}

llvm::json::Value SummaryIndex::toJSON() const {
  llvm::json::Object O;
  for (const auto &[USR, S] : Functions) {
    llvm::json::Array Ext;
    for (const std::string &E : S.External)
      Ext.push_back(E);
    O[USR] = llvm::json::Object{{"name", S.Name},         {"where", S.Where},
                                {"autocast", S.AutocastAt}, {"grad", S.GradAt},
                                {"grad-read", S.GradReadAt}, {"backward", S.BackwardAt},
                                {"indirect", S.IndirectAt},
                                {"external", std::move(Ext)}};
  }
  return llvm::json::Value(std::move(O));
}

std::optional<SummaryIndex> SummaryIndex::fromJSON(const llvm::json::Value &V) {
  const llvm::json::Object *O = V.getAsObject();
  if (!O)
    return std::nullopt;
  SummaryIndex Out;
  for (const auto &[USR, Entry] : *O) {
    const llvm::json::Object *E = Entry.getAsObject();
    if (!E)
      return std::nullopt;
    FunctionSummary S;
    auto Str = [&](llvm::StringRef K, std::string &To) {
      std::optional<llvm::StringRef> X = E->getString(K);
      if (X)
        To = X->str();
      return X.has_value();
    };
    const llvm::json::Array *Ext = E->getArray("external");
    if (!Str("name", S.Name) || !Str("where", S.Where) || !Str("autocast", S.AutocastAt) ||
        !Str("grad", S.GradAt) || !Str("grad-read", S.GradReadAt) || !Str("backward", S.BackwardAt) ||
        !Str("indirect", S.IndirectAt) || !Ext)
      return std::nullopt;
    for (const llvm::json::Value &X : *Ext)
      if (std::optional<llvm::StringRef> U = X.getAsString())
        S.External.push_back(U->str());
    Out.add(USR.str(), std::move(S));
  }
  return Out;
}

} // namespace ampmigrate
