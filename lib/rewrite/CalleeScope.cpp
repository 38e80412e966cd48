// The autocast scope in a function the step calls for its loss: edited with the step.
#include "RegionPlanner.h"
#include "ampmigrate/LambdaParents.h"

using namespace clang;

namespace ampmigrate {

bool RegionPlanner::removeInto(const Stmt *St, SourceLocation Why, std::vector<Edit> &Out) {
  Edit E;
  if (!C.removal(St, E)) {
    block(Why, "an autocast call sits inside a macro body with other code; edit the macro by hand");
    return false;
  }
  // A scope call spelled per version in a preprocessor conditional: the conditional goes, once.
  for (const Edit &G : F.Preprocessor.VersionGroups)
    if (E.Offset >= G.Offset && E.Offset + E.Length <= G.Offset + G.Length) {
      if (llvm::none_of(Out, [&](const Edit &O) { return O.Offset == G.Offset && O.Length == G.Length; }))
        Out.push_back(G);
      return true;
    }
  Out.push_back(E);
  return true;
}

bool RegionPlanner::rewriteForward(const ForwardCall &Fwd, const std::string &Conv, std::vector<Edit> &Out) {
  if (Fwd.UncastTensors) {
    // Autocast's fp32 ops after the forward (the loss) cast its half outputs back up; the
    // converted model's outputs reach them as they are unless cast_to_adapter_tensor reaches them.
    block(Fwd.Call->getBeginLoc(),
          "the forward returns '" + Fwd.Call->getType().getUnqualifiedType().getAsString() +
              "', whose tensors " + Tgt.CastOutput + " cannot cast back to fp32 (it casts "
              "tensors, tuples, pairs and vectors of them, and aggregates of such fields and "
              "scalars without base classes, up to 12 fields), so the loss would be computed from "
              "low-precision outputs; return such a type, or migrate this step by hand");
    return false;
  }
  unsigned CB, CE;
  if (!C.fileRange(Fwd.Call->getSourceRange(), CB, CE)) {
    block(Fwd.Call->getBeginLoc(), "the model call is inside a macro body");
    return false;
  }
  if (!Fwd.Receiver) {
    // Implicit this: `forward(x)` -> `amp_self->forward(x)`.
    std::string Pre = Fwd.ReturnsTensors ? Tgt.CastOutput + "(" : "";
    Out.push_back({CB, 0, Pre + Conv + "->"});
    if (Fwd.ReturnsTensors)
      Out.push_back({CE, 0, ")"});
    return true;
  }
  unsigned MB, ME;
  if (!C.fileRange(Fwd.Receiver->getSourceRange(), MB, ME)) {
    block(Fwd.Call->getBeginLoc(), "the model is named inside a macro body");
    return false;
  }
  if (Fwd.ReturnsTensors)
    Out.push_back({CB, 0, Tgt.CastOutput + "("});
  Out.push_back({MB, ME - MB, Conv});
  if (Fwd.ReturnsTensors)
    Out.push_back({CE, 0, ")"});
  return true;
}

void RegionPlanner::checkCalleeScope() {
  const AutocastScope &S = *F.CalleeScope;
  ParentMap CPM(F.CalleeFA->Function->getBody());
  graftLambdaBodies(CPM, F.CalleeFA->Function->getBody());
  llvm::StringSet<> CalleeNames = namesIn(F.CalleeFA->Function);
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
    removeInto(A->Removable, A->Call->getBeginLoc(), Plan.Callee.InFile);
  };
  RemoveCall(S.Enable);
  RemoveCall(S.Disable);
  for (const AutocastCall *A : S.Auxiliary)
    RemoveCall(A);
  for (const CXXMemberCallExpr *End : S.GuardEnds) {
    const Stmt *St = End;
    while (CPM.getParent(St) && !isa<CompoundStmt>(CPM.getParent(St)))
      St = CPM.getParent(St);
    removeInto(St, End->getBeginLoc(), Plan.Callee.InFile);
  }
  std::string Conversions;
  std::map<const ValueDecl *, std::string> Names;
  bool AnyForward = false;
  for (const ForwardCall &Fwd : F.CalleeFA->Forwards) {
    unsigned O = C.off(Fwd.Call->getBeginLoc());
    if (O < S.Begin || O > S.End)
      continue;
    AnyForward = true;
    auto It = Names.find(Fwd.Model.Decl);
    if (It == Names.end()) {
      It = Names.emplace(Fwd.Model.Decl, ampmigrate::freshName(CalleeNames, convertedModelBase(Fwd.Model))).first;
      std::string Level, Dtype;
      if (!Conversion.levelExpr(S, S.Begin, Level) || !Conversion.conversionArgs(S, S.Begin, Dtype))
        return;
      Conversions += "auto " + It->second + " = " + Tgt.Convert + "(" + C.modelText(Fwd.Model) + ", " +
                     Level + Dtype + ");";
    }
    if (!rewriteForward(Fwd, It->second, Plan.Callee.InFile))
      return;
  }
  if (!AnyForward) {
    block(S.ReportLoc, "no model call inside the autocast scope of '" +
                           F.CalleeFA->Function->getNameAsString() + "'");
    return;
  }
  // The scope's first statement becomes the conversion (one line each).
  Edit E;
  if (!C.removal(First, E) || E.Text.size() || E.Offset != C.lineStart(E.Offset) ||
      E.Offset + E.Length != C.lineEnd(E.Offset)) {
    block(S.ReportLoc, "the autocast scope's first statement does not stand on a line of its own");
    return;
  }
  std::string Indent = C.indentAt(E.Offset);
  std::string Lines;
  for (StringRef Rest = Conversions; !Rest.empty();) {
    auto [Line, Tail] = Rest.split(';');
    Lines += Indent + Line.str() + ";\n";
    Rest = Tail;
  }
  E.Text = Lines;
  Plan.Callee.replace(E);
}

} // namespace ampmigrate
