// The context of one step's planning (StepContext.h): the step's file, and source ranges and text
// in it: statement extents, line bounds, removals, where a location is, how a model or an
// optimizer's parameters are spelled.
#include "StepContext.h"
#include "ampmigrate/LambdaParents.h"
#include "ampmigrate/SourceText.h"
#include "clang/Tooling/Transformer/SourceCode.h"
#include "clang/Tooling/Transformer/SourceCodeBuilders.h"
#include "llvm/Support/Path.h"

using namespace clang;

namespace ampmigrate {

namespace {

/// The file of the function's body (its expansion).
FileID fileOf(const SourceManager &SM, const FunctionDecl *F) {
  return SM.getFileID(SM.getExpansionLoc(F->getBody()->getBeginLoc()));
}

} // namespace

std::string firstLine(llvm::StringRef S) {
  llvm::StringRef L = S.split('\n').first.rtrim();
  return L.size() < S.rtrim().size() ? (L + " ...").str() : L.str();
}

std::string canonicalMethod(ScalerCall::Method M) {
  switch (M) {
  case ScalerCall::Method::Scale: return "scale";
  case ScalerCall::Method::Unscale: return "unscale_";
  case ScalerCall::Method::Step: return "step";
  case ScalerCall::Method::Update: return "update";
  case ScalerCall::Method::GetScale: return "get_scale";
  case ScalerCall::Method::IsEnabled: return "is_enabled";
  }
  return "";
}

StepContext::StepContext(ASTContext &Ctx, const RuleSet &Rules, const FunctionAnalysis &FA,
                         const TrainingStep &T, const PlannerOptions &Opts, const TargetApi &Tgt,
                         const TranslationUnitAnalysis &TU)
    : StepInputs{Ctx, Ctx.getSourceManager(), Ctx.getLangOpts(), Rules, FA, T, Opts, Tgt, TU},
      PM(FA.Function->getBody()), File(fileOf(SM, FA.Function)),
      FilePath(SM.getFileEntryRefForID(File) ? SM.getFileEntryRefForID(File)->getName().str() : ""),
      Buffer(SM.getBufferData(File)) {
  graftLambdaBodies(PM, FA.Function->getBody());
}

SourceLocation StepContext::stepLoc() const {
  return !T.Steps.empty() ? T.Steps.front()->Call->getBeginLoc()
                          : T.Backwards.front()->Backward->getBeginLoc();
}

CharSourceRange StepContext::stmtRange(const Stmt *S) const {
  // The statement as written in the file: a whole macro use when the statement is one
  // (`AMP_ON();`); nothing when it lies in a macro body.
  std::optional<CharSourceRange> R = tooling::getFileRangeForEdit(
      CharSourceRange::getTokenRange(S->getSourceRange()), Ctx, /*IncludeMacroExpansion=*/true);
  if (!R)
    return CharSourceRange();
  // Swallow the `;` that ends an expression statement (not part of the Stmt's range).
  // An `if`/loop ends with its last sub-statement: `if (c) f();` needs the `;` too, and so
  // does a macro use whose expansion is a block (`AMP_ON();`).
  const Stmt *Tail = S;
  for (int I = 0; I < 16 && Tail; ++I) {
    if (const auto *If = dyn_cast<IfStmt>(Tail))
      Tail = If->getElse() ? If->getElse() : If->getThen();
    else if (const auto *F = dyn_cast<ForStmt>(Tail))
      Tail = F->getBody();
    else if (const auto *W = dyn_cast<WhileStmt>(Tail))
      Tail = W->getBody();
    else if (const auto *FR = dyn_cast<CXXForRangeStmt>(Tail))
      Tail = FR->getBody();
    else
      break;
  }
  bool EndsWithBlock = Tail && isa<CompoundStmt>(Tail) && !Tail->getEndLoc().isMacroID();
  if (!EndsWithBlock)
    R = tooling::maybeExtendRange(*R, tok::semi, Ctx);
  return Lexer::getAsCharRange(*R, SM, LO);
}

unsigned StepContext::lineStart(unsigned O) const {
  while (O > 0 && Buffer[O - 1] != '\n')
    --O;
  return O;
}

unsigned StepContext::lineEnd(unsigned O) const { // offset just past the '\n'
  while (O < Buffer.size() && Buffer[O] != '\n')
    ++O;
  return O < Buffer.size() ? O + 1 : O;
}

std::string StepContext::indentAt(unsigned O) const {
  unsigned S = lineStart(O), E = S;
  while (E < Buffer.size() && (Buffer[E] == ' ' || Buffer[E] == '\t'))
    ++E;
  return Buffer.substr(S, E - S).str();
}

bool StepContext::onlySpace(unsigned B, unsigned E) const {
  for (unsigned I = B; I < E; ++I)
    if (Buffer[I] != ' ' && Buffer[I] != '\t' && Buffer[I] != '\r')
      return false;
  return true;
}

bool StepContext::removal(const Stmt *S, Edit &Out) const {
  CharSourceRange R = stmtRange(S);
  if (R.isInvalid() || SM.getFileID(R.getBegin()) != File)
    return false;
  unsigned B = SM.getFileOffset(R.getBegin()), E = SM.getFileOffset(R.getEnd());
  unsigned LS = lineStart(B), LE = lineEnd(E);
  unsigned EOL = LE > 0 && LE <= Buffer.size() && Buffer[LE - 1] == '\n' ? LE - 1 : LE;
  if (onlySpace(LS, B) && onlySpace(E, EOL)) {
    Out = {LS, LE - LS, ""};
    return true;
  }
  // A comment after the statement keeps its line, at the statement's indentation.
  unsigned C = E;
  while (C < EOL && (Buffer[C] == ' ' || Buffer[C] == '\t'))
    ++C;
  if (onlySpace(LS, B) && StringRef(Buffer).substr(C).starts_with("//"))
    E = C;
  Out = {B, E - B, ""};
  return true;
}

bool StepContext::fileRange(SourceRange R, unsigned &B, unsigned &E) const {
  CharSourceRange CR = CharSourceRange::getTokenRange(R);
  if (R.getBegin().isMacroID() || R.getEnd().isMacroID()) {
    // Only macro arguments can be edited, at their spelling in the file; never a macro body.
    if (!SM.isMacroArgExpansion(R.getBegin()) || !SM.isMacroArgExpansion(R.getEnd()))
      return false;
    CR = CharSourceRange::getTokenRange(SM.getSpellingLoc(R.getBegin()), SM.getSpellingLoc(R.getEnd()));
  }
  std::optional<CharSourceRange> FR = tooling::getFileRange(CR, Ctx, /*IncludeMacroExpansion=*/true);
  if (!FR || SM.getFileID(FR->getBegin()) != File)
    return false;
  B = SM.getFileOffset(FR->getBegin());
  E = SM.getFileOffset(FR->getEnd());
  return true;
}

const Stmt *StepContext::childOf(const Stmt *S, const CompoundStmt *C) const {
  for (const Stmt *Cur = S; Cur; Cur = PM.getParent(Cur))
    if (PM.getParent(Cur) == C)
      return Cur;
  return nullptr;
}

bool StepContext::within(const Stmt *S, const Stmt *Ancestor) const {
  for (const Stmt *Cur = S; Cur; Cur = PM.getParent(Cur))
    if (Cur == Ancestor)
      return true;
  return false;
}

std::string StepContext::where(SourceLocation L) const {
  PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(L));
  if (P.isInvalid())
    return "?";
  return positionText(llvm::sys::path::filename(P.getFilename()), P.getLine());
}

std::string StepContext::whyNotEditable(SourceLocation L) const {
  L = SM.getExpansionLoc(L);
  if (SM.isInSystemHeader(L))
    return "it is in a system header";
  FileID F = SM.getFileID(L);
  if (F == File || F == SM.getMainFileID() || (TU.Editable && TU.Editable(L)))
    return "";
  return "this run may not edit " + llvm::sys::path::filename(SM.getFilename(L)).str() +
         " (not matched by --header-filter)";
}

std::string StepContext::argumentText(const CallExpr *CE, unsigned I) const {
  const Expr *Arg = CE->getArg(I);
  std::string Plain = text(Arg->getSourceRange());
  if (I == 0 || Arg->getBeginLoc().isMacroID() || CE->getArg(I - 1)->getEndLoc().isMacroID())
    return Plain;
  SourceLocation PrevEnd =
      Lexer::getLocForEndOfToken(CE->getArg(I - 1)->getEndLoc(), 0, SM, LO);
  if (PrevEnd.isInvalid() || SM.getFileID(PrevEnd) != File ||
      SM.getFileID(Arg->getBeginLoc()) != File)
    return Plain;
  unsigned From = SM.getFileOffset(PrevEnd), To = SM.getFileOffset(Arg->getBeginLoc());
  if (From >= To || To > Buffer.size())
    return Plain;
  // Between the previous argument and this one stand only a comma, blanks and comments.
  llvm::StringRef Between = Buffer.slice(From, To);
  size_t Comment = std::min(Between.find("//"), Between.find("/*"));
  if (Comment == llvm::StringRef::npos)
    return Plain;
  return Between.substr(Comment).str() + Plain;
}

bool StepContext::resultUsed(const Expr *Call) const {
  const Stmt *Cur = Call;
  for (const Stmt *P = PM.getParent(Cur); P; Cur = P, P = PM.getParent(P)) {
    if (isa<CompoundStmt>(P))
      return false;
    if (const auto *E = dyn_cast<Expr>(P); E && E->IgnoreImplicit() == Call->IgnoreImplicit())
      continue; // implicit wrappers around the call itself
    if (isa<ExprWithCleanups, ImplicitCastExpr>(P))
      continue;
    if (const auto *If = dyn_cast<IfStmt>(P); If && If->getCond() != Cur)
      return false; // `if (c) scaler.unscale_(opt);`
    return true;
  }
  return false;
}

std::string StepContext::modelText(const ObjectRef &M) const {
  if (M.IsThis)
    return "*this";
  // A submodule of another object (`model->encoder->forward(x)`): the path as the step's
  // forward spells it, not the member's name alone.
  if (M.Base)
    for (const ForwardCall *F : T.Forwards)
      if (F->Model == M && F->Receiver && !F->Receiver->getBeginLoc().isMacroID() &&
          !F->Receiver->getEndLoc().isMacroID())
        return text(F->Receiver->getSourceRange());
  return M.Decl->getName().str();
}

std::string StepContext::optimizerParams(const ScalerCall *C) const {
  if (!Tgt.ParametersOf.empty())
    return Tgt.ParametersOf + "(" + text(C->OptimizerArg->getSourceRange()) + ")";
  // `.` or `->` as the argument's type needs: `*opt` -> `opt->`, a (smart) pointer or an
  // optional -> `->`, `&opt` -> `opt.`.
  const Expr *A = C->OptimizerArg;
  // `*opt` on a smart pointer is an operator call, which buildAccess spells `(*opt).`: give it
  // the pointer, which it spells `opt->`.
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(A->IgnoreParenImpCasts());
      OC && OC->getOperator() == OO_Star && OC->getNumArgs() == 1)
    A = OC->getArg(0);
  if (!A->getBeginLoc().isMacroID() && !A->getEndLoc().isMacroID())
    if (std::optional<std::string> Access = tooling::buildAccess(*A, Ctx))
      return *Access + "parameters()";
  return text(A->getSourceRange()) + ".parameters()";
}

} // namespace ampmigrate
