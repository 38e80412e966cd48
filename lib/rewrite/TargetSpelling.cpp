// How the edits spell the target API: the optimizer parameters, the model, the include.
#include "StepConcerns.h"
#include "StepPlanner.h"
#include "ampmigrate/IncludeInsertion.h"
#include "clang/Tooling/Transformer/SourceCodeBuilders.h"

using namespace clang;

namespace ampmigrate {

std::optional<Edit> planInclude(const StepContext &C) {
  if (auto Ins = planIncludeInsertion(C.Buffer, C.Tgt.Include, C.FilePath))
    return Edit{Ins->Offset, 0, Ins->Text};
  return std::nullopt;
}

/// Whether `DC` (a namespace) has a member namespace (or alias) named `II`.
static bool hasChildNamespace(const DeclContext *DC, IdentifierInfo *II) {
  for (const NamedDecl *D : DC->getPrimaryContext()->lookup(II))
    if (isa<NamespaceDecl, NamespaceAliasDecl>(D))
      return true;
  return false;
}

/// Whether a namespace-scope using-directive that reaches `DC` (one of a function's enclosing
/// contexts) makes a namespace `II` visible there: a directive in `DC`, or one in a namespace such
/// a directive nominates (transitively). Found by name lookup (DeclContext::using_directives), as
/// clang's own unqualified lookup finds them: with a precompiled preamble only the directives are
/// read from it, never every declaration of the headers.
static bool usingDirectiveReaches(const DeclContext *DC, IdentifierInfo *II,
                                  llvm::SmallPtrSetImpl<const DeclContext *> &Seen) {
  if (!Seen.insert(DC->getPrimaryContext()).second)
    return false;
  for (const UsingDirectiveDecl *UD : DC->getPrimaryContext()->using_directives()) {
    const NamespaceDecl *N = UD->getNominatedNamespace();
    if (N && (hasChildNamespace(N, II) || usingDirectiveReaches(N, II, Seen)))
      return true;
  }
  return false;
}

/// Whether a namespace-scope using-directive in scope of `FD`'s body (in its semantic or lexical
/// enclosing namespaces, or the translation unit) makes a namespace `II` visible there.
static bool usingDirectiveReaches(const FunctionDecl *FD, IdentifierInfo *II) {
  llvm::SmallPtrSet<const DeclContext *, 8> Seen;
  for (const DeclContext *Start : {FD->getDeclContext(), FD->getLexicalDeclContext()})
    for (const DeclContext *DC = Start; DC; DC = DC->getParent())
      if (DC->isFileContext() && usingDirectiveReaches(DC, II, Seen))
        return true;
  return false;
}

class BodyUsingDirectives : public AstVisitor {
public:
  IdentifierInfo *II;
  bool Found = false;
  explicit BodyUsingDirectives(IdentifierInfo *II) : II(II) {}
  bool visitDecl(Decl *D) override {
    if (const auto *UD = dyn_cast<UsingDirectiveDecl>(D))
      if (const NamespaceDecl *N = UD->getNominatedNamespace(); N && hasChildNamespace(N, II))
        Found = true;
    return true;
  }
};

/// `amp::X` in the edited function must name the target's namespace. It would not when another
/// namespace `amp` is visible there without qualification: a hand-written scaler port in
/// `torch::amp` with `using namespace torch;` (ambiguous), or the function inside `namespace torch`.
/// Then the edits write `::amp::X`.
TargetApi spelledTarget(ASTContext &Ctx, const TargetApi &T, const FunctionDecl *FD) {
  StringRef Q = T.ScalerClass;
  StringRef First = Q.split("::").first;
  if (First.empty() || Q.starts_with("::") || !Q.contains("::"))
    return T;
  IdentifierInfo *II = &Ctx.Idents.get(First);
  bool Need = usingDirectiveReaches(FD, II);
  for (const DeclContext *DC = FD->getDeclContext(); DC && !Need; DC = DC->getParent())
    if (isa<NamespaceDecl>(DC) && hasChildNamespace(DC, II))
      Need = true;
  if (!Need && FD->getBody()) {
    BodyUsingDirectives B(II);
    B.walk(FD->getBody());
    Need = B.Found;
  }
  if (!Need)
    return T;
  TargetApi R = T;
  for (std::string *S : {&R.Convert, &R.LevelEnum, &R.ValueAndGrad, &R.CastOutput, &R.CudaDeviceType, &R.ScalerClass,
                         &R.ScalerOptions, &R.Clip, &R.ClipInPlace, &R.ClipValueInPlace, &R.CheckHolds, &R.GlobalNorm,
                         &R.Accumulate,
                         &R.ParametersOf,
                         &R.SplitGrads, &R.AllReduceGrads, &R.Step})
    if (StringRef(*S).contains("::") && !StringRef(*S).starts_with("::"))
      *S = "::" + *S;
  return R;
}

} // namespace ampmigrate
