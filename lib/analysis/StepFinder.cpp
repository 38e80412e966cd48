// The analysis: resolves calls by declaration, builds autocast scopes, scaler calls and the other
// elements of each function, and groups them into training steps.
#include "ampmigrate/StepFinder.h"
#include "FunctionAnalyser.h"
#include "InferenceOnly.h"
#include "ampmigrate/GenericLambdas.h"

#include "clang/AST/ParentMap.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "clang/Tooling/Transformer/SourceCode.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <algorithm>
#include <map>

using namespace clang;
namespace ampmigrate {

StepFinder::StepFinder(ASTContext &Ctx, const RuleSet &Rules,
                       std::function<bool(SourceLocation)> InScope,
                       std::vector<SourceRange> Inactive)
    : Ctx(Ctx), Rules(Rules), InScope(std::move(InScope)), Inactive(std::move(Inactive)) {}

namespace {

/// Visits function definitions in scope.
class FunctionVisitor : public AstVisitor {
public:
  FunctionVisitor(ASTContext &Ctx, const RuleSet &Rules, std::function<bool(SourceLocation)> &InScope,
                  const std::vector<SourceRange> &Inactive, TranslationUnitAnalysis &Out)
      : Ctx(Ctx), Rules(Rules), InScope(InScope), Inactive(Inactive), Out(Out) {
    LambdaCallOperators = false; // analysed with the enclosing function
  }

  bool visitDecl(Decl *D) override {
    auto *FD = dyn_cast<FunctionDecl>(D);
    if (!FD || !FD->doesThisDeclarationHaveABody() || !FD->getBody())
      return true;
    // An instantiated body (the parse hands them over as top-level declarations) is reached
    // through its pattern below, in every front end.
    if (FD->getTemplateInstantiationPattern())
      return true;
    if (!InScope(FD->getLocation()))
      return true;
    if (const auto *MD = dyn_cast<CXXMethodDecl>(FD); !MD || !MD->getParent()->isLambda())
      summariseCalls(FD);
    if (const auto *MD = dyn_cast<CXXMethodDecl>(FD)) {
      if (MD->getParent()->isLambda())
        return true;
      // The implementation of a guard class, or of a scaler class (its step() calling its own
      // unscale_()), is not a finding.
      if (isAutocastGuardClass(MD->getParent(), Rules, nullptr) || isScalerClass(MD->getParent(), Rules))
        return true;
    }
    // A function template, or a member function of a class template, instantiated once in this
    // translation unit is analysed through that instantiation, where the calls on template
    // parameters are resolved (as a generic lambda is read through its instantiation); with none
    // or several, through its pattern.
    // Several instantiations: each is analysed, and planMigrations makes their rewrites of the
    // one source agree (or reports the step).
    llvm::SmallVector<const FunctionDecl *, 2> Insts = instantiationsOf(FD);
    if (Insts.empty())
      Insts.push_back(FD);
    for (const FunctionDecl *Analysed : Insts) {
      if (Analysed != FD)
        summariseCalls(Analysed);
      FunctionAnalysis FA = analyseFunction(Ctx, Rules, Analysed, Inactive, Out.Callees);
      if (Insts.size() > 1) {
        FA.Instantiations = Insts.size();
        FA.Pattern = FD;
      }
      // A method that only clears .grad is kept too: it may call the two halves of a step split
      // over two methods of its class, whose fix then clears the grads member there.
      // A step without a scaler whose scope is in the function it calls for its loss has
      // neither here.
      if (!FA.AutocastCalls.empty() || !FA.ScalerCalls.empty() || !FA.Scopes.empty() ||
          !FA.Steps.empty() || !FA.UnknownScalerScales.empty() ||
          (!FA.ZeroGrads.empty() && isa<CXXMethodDecl>(Analysed)))
        Out.Functions.push_back(std::move(FA));
    }
    return true;
  }

  /// What `FD` calls, for the inference-only rule.
  void summariseCalls(const FunctionDecl *FD) { Reach.summariseCalls(FD); }

  /// The instantiated definitions of a function template, or of a member function of a class
  /// template, in this translation unit.
  static llvm::SmallVector<const FunctionDecl *, 2> instantiationsOf(const FunctionDecl *Pattern) {
    llvm::SmallVector<const FunctionDecl *, 2> Out;
    auto Add = [&](const FunctionDecl *F) {
      if (F->isTemplateInstantiation() && F->doesThisDeclarationHaveABody() &&
          F->getTemplateInstantiationPattern()->getCanonicalDecl() == Pattern->getCanonicalDecl())
        Out.push_back(F);
    };
    if (const FunctionTemplateDecl *FT = Pattern->getDescribedFunctionTemplate()) {
      for (const FunctionDecl *Spec : FT->specializations())
        Add(Spec);
      return Out;
    }
    const auto *MD = dyn_cast<CXXMethodDecl>(Pattern);
    const ClassTemplateDecl *CT = MD ? MD->getParent()->getDescribedClassTemplate() : nullptr;
    if (!CT)
      return Out;
    for (const ClassTemplateSpecializationDecl *Spec : CT->specializations())
      if (Spec->getSpecializationKind() != TSK_ExplicitSpecialization)
        for (const Decl *Member : Spec->decls())
          if (const auto *F = dyn_cast<FunctionDecl>(Member))
            Add(F);
    return Out;
  }

  /// Sets FunctionAnalysis::InferenceOnly: a function reached from no function that calls
  /// backward() (following the calls of the analysed code from each such function).
  void markInferenceOnly() {
    Reach.summariseCallees(Ctx.getSourceManager());
    llvm::SmallPtrSet<const FunctionDecl *, 32> Training = Reach.trainingFunctions();
    // A virtual method may be called through its base, which this rule cannot follow.
    for (FunctionAnalysis &FA : Out.Functions) {
      const auto *MD = dyn_cast<CXXMethodDecl>(FA.Function);
      FA.InferenceOnly =
          !Training.contains(TrainingReach::key(FA.Function)) && !(MD && MD->isVirtual());
    }
    // What a scope computes may leave its function for training this rule does not see from
    // here: handed to a function that trains, or returned to a caller outside this file.
    auto Runners = Reach.backwardRunners();
    auto Called = Reach.calledFunctions();
    for (FunctionAnalysis &FA : Out.Functions) {
      Reach.traceScopeValues(FA, Ctx, Runners, Called, Out.Callees);
      if (llvm::any_of(FA.Scopes, [](const AutocastScope &S) {
            return !S.NoGradGuard && (S.HandedTo || S.ReturnedUncalled || S.HandedToUnseen || S.ReturnedToTrainer);
          }))
        FA.InferenceOnly = false;
    }
    // A template nothing here instantiates: its unresolved calls may run a backward pass or
    // hand on what a scope computes; whether its scopes are inference is not known.
    for (FunctionAnalysis &FA : Out.Functions)
      if (!FA.UnresolvedCalls.empty() && FA.Function->isDependentContext())
        FA.InferenceOnly = false;
  }

private:
  ASTContext &Ctx;
  const RuleSet &Rules;
  std::function<bool(SourceLocation)> &InScope;
  const std::vector<SourceRange> &Inactive;
  TranslationUnitAnalysis &Out;
  TrainingReach Reach{Rules};
};
} // namespace

TranslationUnitAnalysis StepFinder::run() {
  TranslationUnitAnalysis Out;
  Out.Callees = Callees;
  FunctionVisitor V(Ctx, Rules, InScope, Inactive, Out);
  for (Decl *D : Ctx.getTraversalScope())
    V.walk(D);
  V.markInferenceOnly();
  return Out;
}

bool TrainingStep::unscaledBefore(unsigned Offset, const ObjectRef &Of,
                                  const SourceManager &SM) const {
  return llvm::any_of(Unscales, [&](const ScalerCall *U) {
    return SM.getFileOffset(SM.getExpansionLoc(U->Call->getBeginLoc())) < Offset &&
           (!Of || U->Optimizer == Of);
  });
}

} // namespace ampmigrate
