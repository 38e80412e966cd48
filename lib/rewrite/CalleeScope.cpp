// The autocast scope in a function the step calls for its loss: edited with the step.
#include "StepPlanner.h"

using namespace clang;

namespace ampmigrate {

const ValueDecl *StepPlanner::callerModel(const ObjectRef &M) const {
  const auto *PVD = dyn_cast_or_null<ParmVarDecl>(M.Decl);
  if (!PVD || !Desc.CalleeCall)
    return M.Decl;
  unsigned I = PVD->getFunctionScopeIndex();
  if (I >= Desc.CalleeCall->getNumArgs())
    return nullptr;
  const Expr *A = Desc.CalleeCall->getArg(I)->IgnoreParenImpCasts();
  if (const auto *DRE = dyn_cast<DeclRefExpr>(A))
    return DRE->getDecl();
  if (const auto *ME = dyn_cast<MemberExpr>(A))
    return ME->getMemberDecl();
  return nullptr;
}

bool StepPlanner::findCalleeScope() {
  if (T.Backwards.size() != 1)
    return false;
  const ImplicitBackward &B = *T.Backwards.front();
  // `loss` of `loss.backward()` or `scale(loss)`, also `(loss / accum)`.
  const VarDecl *V = B.ScaleStmt ? nullptr : B.LossVar;
  if (!V || !V->isLocalVarDecl() || !V->getInit())
    return false;
  const Expr *Init = V->getInit()->IgnoreImplicit();
  for (int I = 0; I < 4; ++I) {
    if (const auto *CE = dyn_cast<CXXConstructExpr>(Init); CE && CE->getNumArgs() == 1)
      Init = CE->getArg(0)->IgnoreImplicit();
    else if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(Init))
      Init = MT->getSubExpr()->IgnoreImplicit();
    else if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(Init))
      Init = BT->getSubExpr()->IgnoreImplicit();
    else
      break;
  }
  const auto *Call = dyn_cast<CallExpr>(Init);
  const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr;
  if (!Callee)
    return false;
  const FunctionAnalysis *Found = nullptr;
  for (const FunctionAnalysis &Other : TU.Functions)
    if (&Other != &FA && Other.Function->getCanonicalDecl() == Callee->getCanonicalDecl())
      Found = &Other;
  if (!Found)
    return false;
  const AutocastScope *Scope = nullptr;
  for (const AutocastScope &S : Found->Scopes) {
    if (S.DisablesAutocast)
      continue;
    if (Scope) {
      block(Call->getBeginLoc(), "'" + Callee->getNameAsString() +
                                     "' holds several autocast scopes; migrate it by hand");
      return false;
    }
    Scope = &S;
  }
  if (!Scope)
    return false;
  std::string Name = "'" + Callee->getNameAsString() + "'";
  if (!Found->ScalerCalls.empty() || !Found->InactiveAmpCode.empty()) {
    block(Call->getBeginLoc(), "the autocast scope is in " + Name + ", which also scales or steps; "
                               "migrate it by hand");
    return false;
  }
  // A `.grad` use in the loss function (a norm logged before the forward) reads the last step's
  // gradients in the original; explicit grads never reach `.grad`.
  // Also one in a function it calls (a logging helper reading the grad norm).
  if (GradUse G = firstGradUse(Found->Function->getBody(), SM); G.Access) {
    std::string Use = "`" + text(G.Access->getSourceRange()) + "` at " + where(G.Access->getBeginLoc());
    if (G.Call != G.Access)
      Use += ", through `" + text(G.Call->getSourceRange()) + "` at " + where(G.Call->getBeginLoc());
    block(G.Call->getBeginLoc(),
          "the loss function " + Name + " uses .grad (" + Use + "), where the original finds "
              "the last step's gradients; the explicit grads of " + Tgt.ValueAndGrad +
              " never reach .grad, so it would find none: migrate this step by hand");
    return false;
  }
  if (Scope->Shape == AutocastScope::Kind::Unclosed || Scope->LeaksAt.isValid()) {
    block(Scope->ReportLoc, "the autocast scope in " + Name + " is not closed on every path");
    return false;
  }
  if (Scope->Enable && Scope->Enable->InLambda) {
    block(Scope->ReportLoc, "the autocast scope is inside a lambda");
    return false;
  }
  if (SM.getFileID(SM.getExpansionLoc(Found->Function->getBody()->getBeginLoc())) != File) {
    block(Call->getBeginLoc(), "the autocast scope is in " + Name + ", in another file; both "
                               "files must change together, migrate by hand");
    return false;
  }
  // The statement declaring the loss must be in the backward's block, before it.
  const Stmt *Decl = nullptr;
  for (const Stmt *P = PM.getParent(Call); P; P = PM.getParent(P))
    if (isa<DeclStmt>(P)) {
      Decl = P;
      break;
    }
  if (!Decl || !B.BackwardStmt || parentCompound(Decl) != parentCompound(B.BackwardStmt) ||
      off(Decl->getBeginLoc()) > off(B.Backward->getBeginLoc()))
    return false;
  Desc.CalleeFA = Found;
  Desc.CalleeScope = Scope;
  Desc.CalleeCallStmt = Decl;
  Desc.CalleeCall = Call;
  return true;
}

bool StepPlanner::removeInto(const Stmt *St, SourceLocation Why, std::vector<Edit> &Out) {
  Edit E;
  if (!removal(St, E)) {
    block(Why, "an autocast call sits inside a macro body with other code; edit the macro by hand");
    return false;
  }
  // A scope call spelled per version in a preprocessor conditional: the conditional goes, once.
  for (const Edit &G : VersionGroups)
    if (E.Offset >= G.Offset && E.Offset + E.Length <= G.Offset + G.Length) {
      if (llvm::none_of(Out, [&](const Edit &O) { return O.Offset == G.Offset && O.Length == G.Length; }))
        Out.push_back(G);
      return true;
    }
  Out.push_back(E);
  return true;
}

bool StepPlanner::rewriteForward(const ForwardCall &F, const std::string &Conv, std::vector<Edit> &Out) {
  if (F.UncastTensors) {
    // Autocast's fp32 ops after the forward (the loss) cast its half outputs back up; the
    // converted model's outputs reach them as they are unless cast_to_adapter_tensor reaches them.
    block(F.Call->getBeginLoc(),
          "the forward returns '" + F.Call->getType().getUnqualifiedType().getAsString() +
              "', whose tensors " + Tgt.CastOutput + " cannot cast back to fp32 (it casts "
              "tensors, tuples, pairs and vectors of them, and aggregates of such fields and "
              "scalars without base classes, up to 12 fields), so the loss would be computed from "
              "low-precision outputs; return such a type, or migrate this step by hand");
    return false;
  }
  unsigned CB, CE;
  if (!fileRange(F.Call->getSourceRange(), CB, CE)) {
    block(F.Call->getBeginLoc(), "the model call is inside a macro body");
    return false;
  }
  if (!F.Receiver) {
    // Implicit this: `forward(x)` -> `amp_self->forward(x)`.
    std::string Pre = F.ReturnsTensors ? Tgt.CastOutput + "(" : "";
    Out.push_back({CB, 0, Pre + Conv + "->"});
    if (F.ReturnsTensors)
      Out.push_back({CE, 0, ")"});
    return true;
  }
  unsigned MB, ME;
  if (!fileRange(F.Receiver->getSourceRange(), MB, ME)) {
    block(F.Call->getBeginLoc(), "the model is named inside a macro body");
    return false;
  }
  if (F.ReturnsTensors)
    Out.push_back({CB, 0, Tgt.CastOutput + "("});
  Out.push_back({MB, ME - MB, Conv});
  if (F.ReturnsTensors)
    Out.push_back({CE, 0, ")"});
  return true;
}

void StepPlanner::checkCalleeScope() {
  const AutocastScope &S = *Desc.CalleeScope;
  ParentMap CPM(Desc.CalleeFA->Function->getBody());
  graftLambdaBodies(CPM, Desc.CalleeFA->Function->getBody());
  llvm::StringSet<> CalleeNames = namesIn(Desc.CalleeFA->Function);
  const Stmt *First = S.GuardDeclStmt ? S.GuardDeclStmt : (S.Enable ? S.Enable->Removable : nullptr);
  if (!First) {
    block(S.ReportLoc, "the autocast call is part of a larger expression");
    return;
  }
  auto RemoveCall = [&](const AutocastCall *A) {
    if (!A || A->Removable == First)
      return;
    if (!A->Removable) {
      block(A->MacroUse.isValid() ? A->MacroUse : A->Call->getBeginLoc(),
            "the autocast call is part of a larger expression or macro; edit it by hand");
      return;
    }
    removeInto(A->Removable, A->Call->getBeginLoc(), Desc.Callee.InFile);
  };
  RemoveCall(S.Enable);
  RemoveCall(S.Disable);
  for (const AutocastCall *A : S.Auxiliary)
    RemoveCall(A);
  for (const CXXMemberCallExpr *End : S.GuardEnds) {
    const Stmt *St = End;
    while (CPM.getParent(St) && !isa<CompoundStmt>(CPM.getParent(St)))
      St = CPM.getParent(St);
    removeInto(St, End->getBeginLoc(), Desc.Callee.InFile);
  }
  std::string Conversions;
  std::map<const ValueDecl *, std::string> Names;
  bool AnyForward = false;
  for (const ForwardCall &F : Desc.CalleeFA->Forwards) {
    unsigned O = off(F.Call->getBeginLoc());
    if (O < S.Begin || O > S.End)
      continue;
    AnyForward = true;
    auto It = Names.find(F.Model.Decl);
    if (It == Names.end()) {
      It = Names.emplace(F.Model.Decl, ampmigrate::freshName(CalleeNames, convertedModelBase(F.Model))).first;
      std::string Level, Dtype;
      if (!levelExpr(S, S.Begin, Level) || !conversionArgs(S, S.Begin, Dtype))
        return;
      Conversions += "auto " + It->second + " = " + Tgt.Convert + "(" + modelText(F.Model) + ", " +
                     Level + Dtype + ");";
    }
    if (!rewriteForward(F, It->second, Desc.Callee.InFile))
      return;
  }
  if (!AnyForward) {
    block(S.ReportLoc, "no model call inside the autocast scope of '" +
                           Desc.CalleeFA->Function->getNameAsString() + "'");
    return;
  }
  // The scope's first statement becomes the conversion (one line each).
  Edit E;
  if (!removal(First, E) || E.Text.size() || E.Offset != lineStart(E.Offset) ||
      E.Offset + E.Length != lineEnd(E.Offset)) {
    block(S.ReportLoc, "the autocast scope's first statement does not stand on a line of its own");
    return;
  }
  std::string Indent = indentAt(E.Offset);
  std::string Lines;
  for (StringRef Rest = Conversions; !Rest.empty();) {
    auto [Line, Tail] = Rest.split(';');
    Lines += Indent + Line.str() + ";\n";
    Rest = Tail;
  }
  E.Text = Lines;
  Desc.Callee.replace(E);
}

} // namespace ampmigrate
