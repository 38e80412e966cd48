// The forward region becomes the function handed to value_and_grad; the scope goes.
#include "StepEditWriter.h"
#include "RegionPlanner.h"
#include "MixedSteps.h"
#include "ModelQueries.h"
#include "StepLambda.h"

using namespace clang;

namespace ampmigrate {

namespace {

/// The first use in `Region` of a structured binding declared before offset `From` (one of the
/// enclosing code, `for (auto &[x, y] : batches)`), or null.
const DeclRefExpr *enclosingBindingUse(llvm::ArrayRef<const Stmt *> Region, unsigned From,
                                       const SourceManager &SM) {
  for (const Stmt *St : Region) {
    struct Bindings : AstVisitor {
      const DeclRefExpr *Found = nullptr;
      unsigned From = 0;
      const SourceManager &SM;
      explicit Bindings(const SourceManager &SM) : SM(SM) {}
      bool visitStmt(Stmt *X) override {
        if (const auto *R = dyn_cast<DeclRefExpr>(X); R && isa<BindingDecl>(R->getDecl()) &&
            SM.getFileOffset(SM.getExpansionLoc(R->getDecl()->getLocation())) < From)
          Found = R;
        return !Found;
      }
    } B(SM);
    B.From = From;
    B.walk(St);
    if (B.Found)
      return B.Found;
  }
  return nullptr;
}

/// The first call in `Region` of a function defined in the main file that starts inside the
/// scope [S.Begin, S.End] (the one whose forward the scope meant), or null.
const CallExpr *callOfOwnFunctionInScope(llvm::ArrayRef<const Stmt *> Region, const AutocastScope &S,
                                         const SourceManager &SM) {
  for (const Stmt *St : Region) {
    struct Calls : AstVisitor {
      const SourceManager &SM;
      const CallExpr *First = nullptr;
      explicit Calls(const SourceManager &SM) : SM(SM) {}
      bool visitStmt(Stmt *X) override {
        const auto *CE = dyn_cast<CallExpr>(X);
        const FunctionDecl *Def = nullptr;
        if (CE && !First && !isa<CXXOperatorCallExpr>(CE) && CE->getDirectCallee() &&
            CE->getDirectCallee()->hasBody(Def) &&
            SM.isWrittenInMainFile(SM.getExpansionLoc(Def->getLocation())))
          First = CE;
        return !First;
      }
    } C(SM);
    C.walk(St);
    unsigned O = C.First ? SM.getFileOffset(SM.getExpansionLoc(C.First->getBeginLoc())) : 0;
    if (C.First && O >= S.Begin && O <= S.End)
      return C.First;
  }
  return nullptr;
}

} // namespace

ConcernPlan<RegionPlan> planRegion(const StepContext &C, const StepFacts &F, FunctionPlanning &Shared,
                                   const ImplicitBackward &B) {
  ConcernPlan<RegionPlan> P;
  P.Plan.Accumulation = F.Accumulation;
  RegionPlanner(C, F, P.Blockers, Shared, P.Plan).checkRegion(B);
  return P;
}

void RegionPlanner::checkRegion(const ImplicitBackward &B) {
  std::optional<ForwardRegion> R = forwardRegion(B);
  if (!R)
    return;
  std::optional<size_t> TailAt = tailStart(*R);
  if (!TailAt)
    return;
  R->TailAt = *TailAt;
  std::optional<RegionOffsets> O = regionOffsets(B, *R);
  if (!O)
    return;
  RegionTextEdits Edits = removeScope(*R, *O);
  // A scope around the loop covers every forward of the model in it: one outside this step's
  // region would keep running under no autocast on the unconverted model.
  if (R->Enclosing)
    for (const ForwardCall *Fwd : T.Forwards) {
      if (!O->inBody(C.off(Fwd->Call->getBeginLoc()))) {
        block(Fwd->Call->getBeginLoc(),
              "`" + C.text(Fwd->Call->getSourceRange()) + "` runs in the autocast scope around the "
              "loop but outside the step's forward region; after the rewrite it would run in "
              "fp32 on the unconverted model: migrate this step by hand");
        return;
      }
    }
  // An fp32 forward (no scope anywhere) keeps its model as it is: O0, nothing converted; what
  // it calls must not switch autocast on by itself.
  std::optional<std::vector<std::string>> Conversions =
      F.Unscoped ? std::optional<std::vector<std::string>>(std::vector<std::string>())
                 : convertModels(*R, *O, Edits.Body);
  if (!Conversions || (F.Unscoped && !checkUnscopedForward(*R)))
    return;
  // A structured binding of the enclosing code (`for (auto &[x, y] : batches)`) cannot be captured
  // by the lambda before C++20 (clang warns, older compilers refuse).
  if (!Ctx.getLangOpts().CPlusPlus20)
    if (const DeclRefExpr *Binding = enclosingBindingUse(R->Statements, O->First, SM)) {
      block(Binding->getBeginLoc(),
            "the forward region uses the structured binding '" +
                Binding->getDecl()->getNameAsString() + "', which the lambda of " +
                Tgt.ValueAndGrad + " cannot capture before C++20: bind it to a variable "
                "first, or migrate by hand");
      return;
    }
  // A scope whose forward runs in a function it calls (`loss = compute_loss(batch);` in the scope,
  // `model_->forward` in compute_loss): with the scope removed and no model converted, the step
  // would train in fp32.
  if (!F.CalleeScope && !F.Unscoped && ModelNames.empty()) {
    const CallExpr *Via = callOfOwnFunctionInScope(R->Statements, *R->Scope, SM);
    block(R->Scope->ReportLoc, "no forward of a model runs in the autocast scope itself" +
                           (Via ? " (it calls `" + firstLine(C.text(Via->getSourceRange())) +
                                      "`, whose forward would run in fp32 once the scope is gone)"
                                : std::string()) +
                           "; the model to convert is not known: migrate this step by hand");
    return;
  }
  clearRegionZeroGrads(*O, Edits.Body);
  std::optional<std::string> Hoisted = hoistedDeclarations(*R, *O, Edits.Body);
  // Once the step is refused (by this concern or an earlier stage), the lambda is not built.
  if (!Hoisted || F.Refused || !Blockers.empty())
    return;
  std::optional<std::string> Body = lambdaBody(*R, *O, std::move(Edits.Body));
  if (!Body)
    return;
  // The function returns the scaled loss (the sum of them, with several backwards).
  std::optional<std::string> Returns = scaledReturn();
  if (!Returns)
    return;
  std::string ValueName = "scaled_loss";
  bool AssignBack = false;
  if (T.Unscaled || T.mixed())
    ValueName = freshName(Names, "loss_value");
  else if (B.SplitVar && !B.SplitAssignsArgument && isa<DeclStmt>(B.ScaleStmt))
    ValueName = B.SplitVar->getNameAsString();
  else {
    ValueName = freshName(Names, "scaled_loss");
    AssignBack = B.SplitVar != nullptr;
  }
  std::optional<std::string> Guard = guardText(*O, std::move(Edits.Tail));
  if (!Guard)
    return;
  RegionLambda &L = Plan.Lambda.emplace();
  L.Guard = *Guard;
  L.Begin = Plan.Extent.Begin;
  L.End = Plan.Extent.End;
  L.Indent = O->Indent;
  for (const std::string &Line : *Conversions)
    L.Before += Line;
  L.Before += *Hoisted;
  L.Body = *Body;
  L.Returns = *Returns;
  L.ValueName = ValueName;
  keepTextAroundCall(B, *R, L);
  if (Plan.Accumulation.On)
    L.MicroName = freshName(Names, "micro_grads");
  if (AssignBack)
    L.AssignBackTo = B.SplitVar->getNameAsString();
}

std::optional<ForwardRegion> RegionPlanner::forwardRegion(const ImplicitBackward &B) {
  const Stmt *EndStmt = B.ScaleStmt ? B.ScaleStmt : B.BackwardStmt;
  // A mixed step: the region ends at the if that chooses the path (checkMixedBackwards removes
  // the backwards in its branches).
  if (T.mixed())
    EndStmt = T.Plain.Ifs.front();
  if (!B.BackwardStmt || !EndStmt) {
    block(B.Backward->getBeginLoc(), "backward() is part of a larger expression");
    return std::nullopt;
  }
  const CompoundStmt *Block = C.parentCompound(EndStmt);
  if (!Block || (B.ScaleStmt && C.parentCompound(B.BackwardStmt) != Block)) {
    block(B.Backward->getBeginLoc(), "the scaled loss and backward() are not statements of one block");
    return std::nullopt;
  }
  if (!T.mixed() && !F.Split && !checkAccumulation(B, Block))
    return std::nullopt;
  if (!F.CalleeScope && T.Scope && !T.Scope->Holes.empty()) {
    block(T.Scope->ReportLoc, scopeHoleReason(FA, *T.Scope, C.SM));
    return std::nullopt;
  }
  ForwardRegion R;
  R.Block = Block;
  R.End = EndStmt;
  // The scope in this function; or, with the scope in a called function, the statement that
  // calls it starts the region.
  R.Scope = F.CalleeScope ? F.CalleeScope : T.Scope;
  const Stmt *R0 = F.CalleeCallStmt;
  if (F.Unscoped) {
    // No scope: the region is what the loss is computed from (UnscopedRegion.cpp).
    R0 = unscopedRegionStart(B, Block, EndStmt);
    if (!R0)
      return std::nullopt;
  } else if (!F.CalleeScope) {
    const AutocastScope &S = *R.Scope;
    const Stmt *ScopeStart = S.GuardDeclStmt ? S.GuardDeclStmt
                                             : (S.Enable->Removable ? S.Enable->Removable : S.Enable->Call);
    R0 = C.childOf(ScopeStart, Block);
    unsigned BackOff = C.off(B.Backward->getBeginLoc());
    if (!R0) {
      if (!enclosingScopeRegion(S, ScopeStart, Block, EndStmt, R0))
        return std::nullopt;
      R.Enclosing = true;
    } else if (S.Shape == AutocastScope::Kind::Unclosed || (S.Disable && C.off(S.Disable->Call->getBeginLoc()) > BackOff) ||
        (S.GuardDeclStmt && C.parentCompound(S.GuardDeclStmt) == Block && S.GuardEnds.empty())) {
      block(B.Backward->getBeginLoc(), "backward() runs inside the autocast scope (the scope is "
                                       "not closed before it)");
      return std::nullopt;
    }
  }
  R.First = R0;
  // Region statements: [R0, EndStmt) in C.
  bool In = false;
  for (const Stmt *Child : Block->body()) {
    if (Child == R0)
      In = true;
    if (Child == EndStmt)
      break;
    if (In)
      R.Statements.push_back(Child);
  }
  if (R.Statements.empty()) {
    block(R.Scope ? R.Scope->ReportLoc : B.Backward->getBeginLoc(),
          "the autocast scope does not precede the backward in its block");
    return std::nullopt;
  }
  R.TailAt = R.Statements.size();
  return R;
}

std::optional<RegionOffsets> RegionPlanner::regionOffsets(const ImplicitBackward &B, const ForwardRegion &R) {
  const Stmt *R0 = R.First, *EndStmt = R.End;
  unsigned RB, RE;
  if (!C.fileRange(SourceRange(R0->getBeginLoc(), R0->getBeginLoc()), RB, RE) && !R0->getBeginLoc().isMacroID()) {
    block(R0->getBeginLoc(), "the forward region starts inside a macro");
    return std::nullopt;
  }
  RB = C.off(R0->getBeginLoc());
  const ImplicitBackward &LastB = *F.AllBackwards.back();
  CharSourceRange EndR = C.stmtRange(LastB.BackwardStmt);
  if (EndR.isInvalid() || LastB.BackwardStmt->getBeginLoc().isMacroID() ||
      B.BackwardStmt->getBeginLoc().isMacroID()) {
    block(B.Backward->getBeginLoc(), "backward() is inside a macro");
    return std::nullopt;
  }
  Plan.Extent.Begin = C.lineStart(RB);
  if (!C.onlySpace(Plan.Extent.Begin, RB)) {
    block(R0->getBeginLoc(), "the forward region does not start its line");
    return std::nullopt;
  }
  for (const Edit &G : F.Preprocessor.VersionGroups) // the enable spelled per version: from its `#if` on
    if (G.Offset < Plan.Extent.Begin && Plan.Extent.Begin < G.Offset + G.Length)
      Plan.Extent.Begin = G.Offset;
  unsigned BE = SM.getFileOffset(EndR.getEnd());
  Plan.Extent.End = C.lineEnd(BE);
  if (T.mixed()) // the region's text ends where the if starts; the if stays
    Plan.Extent.End = C.lineStart(C.off(EndStmt->getBeginLoc()));
  RegionOffsets O;
  O.First = RB;
  // The body's text ends before the scale/backward statements (or before the guard tail).
  O.EndLine = C.lineStart(C.off(EndStmt->getBeginLoc()));
  O.BodyEnd = O.EndLine;
  if (!C.onlySpace(O.EndLine, C.off(EndStmt->getBeginLoc()))) {
    block(EndStmt->getBeginLoc(), C.backwardWords() + " does not start its line");
    return std::nullopt;
  }
  O.TailBegin = O.EndLine;
  if (R.TailAt < R.Statements.size()) {
    const Stmt *TailStmt = R.Statements[R.TailAt];
    O.TailBegin = C.lineStart(C.off(TailStmt->getBeginLoc()));
    if (!C.onlySpace(O.TailBegin, C.off(TailStmt->getBeginLoc()))) {
      block(TailStmt->getBeginLoc(), "the statement that leaves the iteration before the "
                                     "backward does not start its line");
      return std::nullopt;
    }
    O.BodyEnd = O.TailBegin;
  }
  O.Indent = C.indentAt(RB);
  if (!checkCrossStepGraph(RB, O.BodyEnd))
    return std::nullopt;
  return O;
}

RegionTextEdits RegionPlanner::removeScope(const ForwardRegion &R, const RegionOffsets &O) {
  RegionTextEdits Out;
  if (F.Unscoped)
    return Out; // no scope to remove
  const AutocastScope &S = *R.Scope;
  std::set<const Stmt *> RemovedUnits; // scope statements removed (one `if` may hold several)
  // The scope's own statements: inside the region they leave with it; outside it (a scope
  // around the loop, a cache call after the region) they are removed where they are.
  auto RemoveScopeStmt = [&](const Stmt *St, SourceLocation Why) {
    unsigned At = C.off(St->getBeginLoc());
    if (O.inBody(At))
      removeInto(St, Why, Out.Body);
    else if (O.inTail(At))
      removeInto(St, Why, Out.Tail);
    else
      removeInto(St, Why, Plan.Region.InFile);
  };
  auto RemoveCall = [&](const AutocastCall *A) {
    if (!A)
      return;
    if (!A->Removable) {
      if (A->MacroUse.isValid())
        block(A->MacroUse, "an autocast call sits inside a macro body with other code; edit "
                           "the macro by hand (macro bodies are never edited)");
      else
        block(A->Call->getBeginLoc(), "the autocast call is part of a larger expression");
      return;
    }
    const Stmt *Unit = removalUnit(C, S, A->Removable);
    if (RemovedUnits.insert(Unit).second)
      RemoveScopeStmt(Unit, A->Call->getBeginLoc());
  };
  if (F.CalleeScope) {
    checkCalleeScope();
    return Out;
  }
  RemoveCall(S.Enable);
  RemoveCall(S.Disable);
  for (const AutocastCall *A : S.Auxiliary) {
    unsigned At = C.off(A->Call->getBeginLoc());
    if (O.inBody(At) || O.inTail(At))
      RemoveCall(A);
    else if (A->Removable && R.Enclosing)
      RemoveCall(A); // with its `if (use_amp) { ... }` when that holds only the scope's calls
    else if (A->Removable) {
      Edit E;
      // A call in a conditional that goes whole with the region (`#ifdef USE_AMP` before the
      // enable) leaves with it.
      auto WithRegion = [&] {
        return llvm::any_of(F.Preprocessor.VersionGroups, [&](const Edit &G) {
          return G.Offset >= Plan.Extent.Begin && G.Offset < O.BodyEnd && E.Offset >= G.Offset &&
                 E.Offset < G.Offset + G.Length;
        });
      };
      if (C.removal(A->Removable, E) && !WithRegion())
        Plan.Region.replace(E);
    }
  }
  if (S.GuardDeclStmt)
    RemoveScopeStmt(S.GuardDeclStmt, S.ReportLoc);
  for (const CXXMemberCallExpr *End : S.GuardEnds) {
    const Stmt *St = End;
    while (PM.getParent(St) && !isa<CompoundStmt>(PM.getParent(St)))
      St = PM.getParent(St);
    RemoveScopeStmt(St, End->getBeginLoc());
  }
  return Out;
}

std::optional<std::vector<std::string>>
RegionPlanner::convertModels(const ForwardRegion &R, const RegionOffsets &O, std::vector<Edit> &Body) {
  const AutocastScope &S = *R.Scope;
  std::vector<std::string> Conversions;
  for (const ForwardCall *Fwd : T.Forwards) {
    if (!O.inBody(C.off(Fwd->Call->getBeginLoc())))
      continue;
    if (const CallExpr *Q = autocastQueryInForward(Fwd->Call, Rules)) {
      block(Fwd->Call->getBeginLoc(),
            "the model's forward asks whether autocast is on (`" +
                firstLine(C.text(Q->getSourceRange())) + "` at " + C.where(Q->getBeginLoc()) +
                "); after the conversion autocast is never enabled, so that code would take "
                "its other path: migrate this step by hand");
      return std::nullopt;
    }
    std::string Conv;
    if (auto Known = ModelNames.find(Fwd->Model.Decl); Known != ModelNames.end()) {
      Conv = Known->second; // converted already by this step
    } else {
      unsigned At = 0;
      bool BeforeLoop = false;
      llvm::SmallVector<const LambdaExpr *, 2> Crossed;
      if (auto LP = conversionOutsideLambdas(R.First, Fwd->Model, FA.Function, PM, SM)) {
        // The step runs in a lambda that captures the model: converted once, outside it.
        if (!Conversion.conversionBefore(Fwd->Model, LP->Anchor, At)) {
          block(LP->Anchor->getBeginLoc(), "the statement holding the lambda of the step does "
                                           "not start its line; the model cannot be converted "
                                           "before it");
          return std::nullopt;
        }
        BeforeLoop = true;
        Crossed = LP->Crossed;
      } else {
        BeforeLoop = Conversion.conversionBeforeLoop(Fwd->Model, R.First, At);
      }
      std::string Level, Dtype;
      if (!Conversion.levelExpr(S, BeforeLoop ? At : O.First, Level) ||
          !Conversion.conversionArgs(S, BeforeLoop ? At : O.First, Dtype))
        return std::nullopt;
      std::string Rhs = " = " + Tgt.Convert + "(" + C.modelText(Fwd->Model) + ", " + Level + Dtype + ");\n";
      const FunctionPlanning::Conversion *Earlier = nullptr;
      if (BeforeLoop) {
        auto It = Shared.Conversions.find({Fwd->Model.Decl, At});
        if (It != Shared.Conversions.end())
          Earlier = &It->second;
      }
      if (Earlier && Earlier->Line != C.indentAt(At) + "auto " + Earlier->Name + Rhs) {
        block(Fwd->Call->getBeginLoc(),
              "another training step of this function converts `" + C.modelText(Fwd->Model) +
                  "` before the same loop differently (`" + StringRef(Earlier->Line).trim().str() +
                  "`); a model has one conversion: migrate these steps by hand");
        return std::nullopt;
      }
      Conv = Earlier ? Earlier->Name : freshName(Names, convertedModelBase(Fwd->Model));
      ModelNames[Fwd->Model.Decl] = Conv;
      for (const LambdaExpr *L : Crossed) {
        std::optional<Edit> Capture = captureByCopy(L, Conv, SM);
        if (!Capture) {
          block(L->getBeginLoc(), "the capture list of the lambda holding the step is inside "
                                  "a macro; it cannot be given the converted model");
          return std::nullopt;
        }
        if (!Capture->Text.empty())
          Plan.Region.replace(*Capture);
      }
      std::string Line = "auto " + Conv + Rhs;
      if (BeforeLoop) {
        std::string Indented = F.Preprocessor.perConfiguration(C.indentAt(At) + Line, Level, Tgt.LevelEnum);
        Plan.Region.insertJoined(At, Indented);
        Plan.LoopConversions.push_back({At, Indented});
        Shared.Conversions.try_emplace({Fwd->Model.Decl, At}, FunctionPlanning::Conversion{Conv, Indented});
      } else {
        Conversions.push_back(F.Preprocessor.perConfiguration(O.Indent + Line, Level, Tgt.LevelEnum));
      }
    }
    rewriteForward(*Fwd, Conv, Body);
  }
  return Conversions;
}

void RegionPlanner::clearRegionZeroGrads(const RegionOffsets &O, std::vector<Edit> &Body) {
  for (const ZeroGradCall *Z : F.stepZeroGrads(T)) {
    if (!O.inBody(C.off(Z->Call->getBeginLoc())) || !Z->Statement)
      continue;
    if (!Plan.Accumulation.On) {
      removeInto(Z->Statement, Z->Call->getBeginLoc(), Body);
      continue;
    }
    CharSourceRange ZR = C.stmtRange(Z->Statement);
    if (ZR.isInvalid() || Z->Statement->getBeginLoc().isMacroID()) {
      block(Z->Call->getBeginLoc(), "zero_grad() is inside a macro");
      continue;
    }
    unsigned ZB = SM.getFileOffset(ZR.getBegin()), ZE = SM.getFileOffset(ZR.getEnd());
    Body.push_back({ZB, ZE - ZB, F.GradsName + ".clear();"});
  }
}

std::optional<std::string> RegionPlanner::hoistedDeclarations(const ForwardRegion &R, const RegionOffsets &O,
                                                            std::vector<Edit> &Body) {
  // What stays outside: everything after the scale statement except the scaled backward(s),
  // whose scale() argument becomes the lambda's return.
  auto UsedOutside = [&](const Expr *E) {
    if (C.off(E->getBeginLoc()) < O.BodyEnd)
      return false;
    for (const ImplicitBackward *Bi : F.AllBackwards)
      if ((Bi->BackwardStmt && C.within(E, Bi->BackwardStmt)) ||
          (Bi->ScaleStmt && C.within(E, Bi->ScaleStmt)))
        return false;
    return !inMixedBackward(C, E); // a mixed step's backwards leave their branches too
  };
  RegionDeclarations Decls;
  if (auto Why = planRegionDeclarations(Ctx, Rules, R.Statements, FA.Function->getBody(), UsedOutside,
                                        Decls)) {
    block(Why->Loc, Why->Reason);
    return std::nullopt;
  }
  std::string Hoisted;
  for (const std::string &D : Decls.Hoisted)
    Hoisted += O.Indent + D + "\n";
  Body.insert(Body.end(), Decls.Inner.begin(), Decls.Inner.end());
  return Hoisted;
}

std::optional<std::string> RegionPlanner::lambdaBody(const ForwardRegion &R, const RegionOffsets &O,
                                                   std::vector<Edit> Edits) {
  sortAndMergeEdits(Edits);
  for (size_t I = 1; I < Edits.size(); ++I)
    if (Edits[I].Offset < Edits[I - 1].Offset + Edits[I - 1].Length) {
      block(SM.getLocForStartOfFile(File).getLocWithOffset(Edits[I].Offset),
            "overlapping edits in the forward region");
      return std::nullopt;
    }
  std::string Body;
  unsigned Cur = Plan.Extent.Begin;
  for (const Edit &E : Edits) {
    if (E.Offset < Plan.Extent.Begin || E.Offset + E.Length > O.BodyEnd) {
      block(SM.getLocForStartOfFile(File).getLocWithOffset(E.Offset), "edit outside the forward region");
      return std::nullopt;
    }
    Body += Buffer.substr(Cur, E.Offset - Cur).str();
    Body += E.Text;
    Cur = E.Offset + E.Length;
  }
  Body += Buffer.substr(Cur, O.BodyEnd - Cur).str();
  bool OneBlock = R.Statements.size() == 1 && isa<CompoundStmt>(R.Statements.front()) &&
                  !R.Statements.front()->getBeginLoc().isMacroID();
  return indentedLambdaBody(Body, OneBlock);
}

std::optional<std::string> RegionPlanner::scaledReturn() {
  std::string ScaleCall;
  for (const ImplicitBackward *Bi : F.AllBackwards) {
    if (!Bi->Scale) { // no scaler: the function returns the loss itself
      ScaleCall += (ScaleCall.empty() ? "" : " + ") + C.text(Bi->Loss->getSourceRange());
      continue;
    }
    const CXXMemberCallExpr *SCall = Bi->Scale->Call;
    std::string ScaleArg = SCall->getNumArgs() ? C.text(SCall->getArg(0)->getSourceRange()) : "";
    // The receiver as written, with its `.` or `->` (`scaler.`, `scaler->` on a smart pointer,
    // `(*scaler).`): the text from the call's start up to the method name.
    std::string ScalerRecv;
    if (const auto *ME = dyn_cast<MemberExpr>(SCall->getCallee());
        ME && !ME->getMemberLoc().isMacroID() && !SCall->getBeginLoc().isMacroID()) {
      unsigned RB0 = C.off(SCall->getBeginLoc()), RE0 = C.off(ME->getMemberLoc());
      if (RE0 > RB0)
        ScalerRecv = StringRef(Buffer).substr(RB0, RE0 - RB0).rtrim().str();
    }
    if (ScalerRecv.empty()) {
      block(SCall->getBeginLoc(), "the scale() call is inside a macro body");
      return std::nullopt;
    }
    ScaleCall += (ScaleCall.empty() ? "" : " + ") + ScalerRecv +
                 canonicalMethod(ScalerCall::Method::Scale) + "(" + ScaleArg + ")";
  }
  if (T.mixed())
    ScaleCall = mixedReturn(C, ScaleCall);
  return ScaleCall;
}

std::optional<std::string> RegionPlanner::guardText(const RegionOffsets &O, std::vector<Edit> TailEdits) {
  llvm::sort(TailEdits, [](const Edit &A, const Edit &B) { return A.Offset < B.Offset; });
  std::string GuardText;
  unsigned TailCur = O.TailBegin;
  for (const Edit &E : TailEdits) {
    if (E.Offset < TailCur || E.Offset + E.Length > O.EndLine) {
      block(SM.getLocForStartOfFile(File).getLocWithOffset(E.Offset),
            "overlapping edits in the statements that leave the iteration before the backward");
      return std::nullopt;
    }
    GuardText += Buffer.substr(TailCur, E.Offset - TailCur).str() + E.Text;
    TailCur = E.Offset + E.Length;
  }
  GuardText += Buffer.substr(TailCur, O.EndLine - TailCur).str();
  return GuardText;
}

void RegionPlanner::keepTextAroundCall(const ImplicitBackward &B, const ForwardRegion &R, RegionLambda &L) const {
  // Comments after the statements the call replaces (the scale and backward lines) stay on
  // the line of the call.
  auto KeepTrailing = [&](const Stmt *St) {
    if (!St)
      return;
    CharSourceRange SR = C.stmtRange(St);
    if (SR.isInvalid())
      return;
    unsigned E = SM.getFileOffset(SR.getEnd());
    StringRef Rest = StringRef(Buffer).slice(E, C.lineEnd(E)).rtrim("\r\n");
    if (!Rest.trim().empty())
      L.Trailing += " " + Rest.trim().str();
  };
  // (A mixed step's if stays, and its backwards' comments stay in their branches.)
  if (!T.mixed()) {
    KeepTrailing(R.End);
    for (const ImplicitBackward *Bi : F.AllBackwards)
      if (Bi->BackwardStmt != R.End)
        KeepTrailing(Bi->BackwardStmt);
  }
  // Statements between the scale statement and backward (split form) stay after the call.
  if (B.ScaleStmt) {
    unsigned SB = C.lineEnd(SM.getFileOffset(C.stmtRange(B.ScaleStmt).getEnd()));
    unsigned BB = C.lineStart(C.off(B.BackwardStmt->getBeginLoc()));
    if (SB < BB)
      L.After += Buffer.substr(SB, BB - SB).str();
  }
  // Comments between several backwards stay, after the call.
  for (size_t I = 1; I < F.AllBackwards.size(); ++I) {
    unsigned SB = C.lineEnd(SM.getFileOffset(C.stmtRange(F.AllBackwards[I - 1]->BackwardStmt).getEnd()));
    unsigned BB = C.lineStart(C.off(F.AllBackwards[I]->BackwardStmt->getBeginLoc()));
    if (SB < BB)
      L.After += Buffer.substr(SB, BB - SB).str();
  }
}

void StepEditWriter::writeRegion() const {
  Out.write(D.Region);
  if (!D.Lambda)
    return; // the stepping half of a split step has no region
  const RegionLambda &L = *D.Lambda;
  const std::string &Indent = L.Indent;
  std::string Text = L.Before;
  Text += Indent + "auto " + D.GradFnName + " = " + Tgt.ValueAndGrad + "([&] {\n";
  Text += L.Body;
  Text += Indent + "  return " + L.Returns + ";\n";
  Text += Indent + "}, " + D.OptParams + ");\n";
  if (D.Accumulation.On) {
    Text += Indent + "auto [" + L.ValueName + ", " + L.MicroName + "] = " + D.GradFnName + "();" +
            L.Trailing + "\n";
    Text += L.Guard;
    Text += Indent + Tgt.Accumulate + "(" + D.GradsName + ", " + L.MicroName + ");\n";
  } else {
    Text += Indent + "auto [" + L.ValueName + ", " + D.GradsName + "] = " + D.GradFnName + "();" +
            L.Trailing + "\n";
    Text += L.Guard;
  }
  if (!D.PerOptimizer.empty() && !D.Accumulation.On) {
    std::string Names;
    for (const auto &[O, Name] : D.PerOptimizer)
      Names += (Names.empty() ? "" : ", ") + Name;
    Text += Indent + "auto [" + Names + "] = " + Tgt.SplitGrads + "(" + D.GradsName + ", " +
            D.OptimizerArgs + ");\n";
  }
  if (!L.AssignBackTo.empty())
    Text += Indent + L.AssignBackTo + " = " + L.ValueName + ";\n";
  Text += L.After;
  Out.replace(L.Begin, L.End - L.Begin, Text);
}

} // namespace ampmigrate
