// Steps split over two methods of one class (see SplitSteps.h).
#include "SplitSteps.h"
#include "ampmigrate/AstVisitor.h"
#include "ampmigrate/SourceText.h"

#include "clang/AST/DeclCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace clang;

namespace ampmigrate {

static const CXXRecordDecl *classOf(const FunctionAnalysis &FA) {
  const auto *MD = dyn_cast<CXXMethodDecl>(FA.Function);
  return MD && !MD->getParent()->isLambda() ? MD->getParent()->getCanonicalDecl() : nullptr;
}

static bool scalingHalf(const TrainingStep &T) { return !T.Backwards.empty() && T.Steps.empty(); }
static bool steppingHalf(const TrainingStep &T) { return T.Backwards.empty() && !T.Steps.empty(); }

namespace {
/// The functions a body calls directly.
class DirectCalls : public AstVisitor {
public:
  llvm::SmallPtrSet<const FunctionDecl *, 8> Callees;
  llvm::DenseMap<const FunctionDecl *, const CallExpr *> FirstCall;
  bool visitStmt(Stmt *S) override {
    if (const auto *CE = dyn_cast<CallExpr>(S))
      if (const FunctionDecl *F = CE->getDirectCallee()) {
        Callees.insert(F->getCanonicalDecl());
        FirstCall.try_emplace(F->getCanonicalDecl(), CE);
      }
    return true;
  }
};
} // namespace

std::optional<SplitStep> findSplitStep(const TranslationUnitAnalysis &TU, const FunctionAnalysis &FA,
                                       const TrainingStep &Half) {
  const CXXRecordDecl *Class = classOf(FA);
  bool Scaling = scalingHalf(Half);
  if (!Class || !Half.Scaler || Half.Unscaled || (!Scaling && !steppingHalf(Half)))
    return std::nullopt;
  std::optional<SplitStep> Found;
  for (const FunctionAnalysis &Other : TU.Functions) {
    if (&Other == &FA || classOf(Other) != Class)
      continue;
    for (const TrainingStep &T : Other.Steps) {
      if (!(Scaling ? steppingHalf(T) : scalingHalf(T)) || !(T.Scaler == Half.Scaler))
        continue;
      if (Found)
        return std::nullopt; // several candidates: which pairs with which is not known
      SplitStep S;
      S.Scaling = Scaling ? &FA : &Other;
      S.ScalingHalf = Scaling ? &Half : &T;
      S.Stepping = Scaling ? &Other : &FA;
      S.SteppingHalf = Scaling ? &T : &Half;
      Found = S;
    }
  }
  if (!Found)
    return std::nullopt;
  const FunctionDecl *A = Found->Scaling->Function->getCanonicalDecl();
  const FunctionDecl *B = Found->Stepping->Function->getCanonicalDecl();
  const CXXRecordDecl *Def0 = Class->getDefinition();
  if (!Def0)
    return Found;
  for (const CXXMethodDecl *M : Def0->methods()) {
    const FunctionDecl *Def = nullptr;
    if (!M->hasBody(Def) || !Def->getBody())
      continue;
    DirectCalls C;
    C.walk(Def->getBody());
    if (C.Callees.contains(A) && C.Callees.contains(B)) {
      Found->Caller = Def;
      break;
    }
  }
  // No third method: one half may call the other.
  for (const FunctionAnalysis *Half : {Found->Scaling, Found->Stepping}) {
    if (Found->Caller || Found->Chained)
      break;
    DirectCalls C;
    C.walk(Half->Function->getBody());
    const FunctionDecl *Other = Half == Found->Scaling ? B : A;
    if (auto It = C.FirstCall.find(Other); It != C.FirstCall.end()) {
      Found->Chained = It->second;
      Found->ChainedFrom = Half;
    }
  }
  return Found;
}

static std::string at(const SourceManager &SM, SourceLocation L) { return lineText(SM, L); }

std::string splitStepReason(const SplitStep &S, bool AtScaling, const SourceManager &SM,
                            llvm::StringRef WhyNot, llvm::StringRef Advice) {
  auto Name = [](const FunctionAnalysis *F) { return "'" + F->Function->getNameAsString() + "'"; };
  const auto *Class = cast<CXXMethodDecl>(S.Scaling->Function)->getParent();
  std::string Where =
      AtScaling ? "its unscale_()/step()/update() are in " + Name(S.Stepping) + " (" +
                      at(SM, S.SteppingHalf->Steps.front()->Call->getBeginLoc()) + ")"
                : "its scaled backward is in " + Name(S.Scaling) + " (" +
                      at(SM, S.ScalingHalf->Backwards.front()->Backward->getBeginLoc()) + ")";
  std::string Caller =
      S.Caller ? ", both called from '" + S.Caller->getNameAsString() + "'" : std::string();
  return "the step is split over two methods of '" + Class->getNameAsString() + "': " + Where +
         Caller + "; its grads would travel from " + Name(S.Scaling) + " to " + Name(S.Stepping) +
         " in a new member of the class, but " + WhyNot.str() + ": " + Advice.str();
}

} // namespace ampmigrate
