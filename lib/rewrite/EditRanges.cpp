// Source ranges and text of the step's file: statement extents, line bounds, removals, where a location is.
#include "StepPlanner.h"
#include "ampmigrate/SourceText.h"
#include "clang/Tooling/Transformer/SourceCode.h"

using namespace clang;

namespace ampmigrate {

CharSourceRange StepPlanner::stmtRange(const Stmt *S) const {
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

unsigned StepPlanner::lineStart(unsigned O) const {
  while (O > 0 && Buffer[O - 1] != '\n')
    --O;
  return O;
}

unsigned StepPlanner::lineEnd(unsigned O) const { // offset just past the '\n'
  while (O < Buffer.size() && Buffer[O] != '\n')
    ++O;
  return O < Buffer.size() ? O + 1 : O;
}

std::string StepPlanner::indentAt(unsigned O) const {
  unsigned S = lineStart(O), E = S;
  while (E < Buffer.size() && (Buffer[E] == ' ' || Buffer[E] == '\t'))
    ++E;
  return Buffer.substr(S, E - S).str();
}

bool StepPlanner::onlySpace(unsigned B, unsigned E) const {
  for (unsigned I = B; I < E; ++I)
    if (Buffer[I] != ' ' && Buffer[I] != '\t' && Buffer[I] != '\r')
      return false;
  return true;
}

bool StepPlanner::removal(const Stmt *S, Edit &Out) const {
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

bool StepPlanner::fileRange(SourceRange R, unsigned &B, unsigned &E) const {
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

const Stmt *StepPlanner::childOf(const Stmt *S, const CompoundStmt *C) const {
  for (const Stmt *Cur = S; Cur; Cur = PM.getParent(Cur))
    if (PM.getParent(Cur) == C)
      return Cur;
  return nullptr;
}

bool StepPlanner::within(const Stmt *S, const Stmt *Ancestor) const {
  for (const Stmt *Cur = S; Cur; Cur = PM.getParent(Cur))
    if (Cur == Ancestor)
      return true;
  return false;
}

std::string StepPlanner::where(SourceLocation L) const {
  PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(L));
  if (P.isInvalid())
    return "?";
  return positionText(llvm::sys::path::filename(P.getFilename()), P.getLine());
}

std::string StepPlanner::whyNotEditable(SourceLocation L) const {
  L = SM.getExpansionLoc(L);
  if (SM.isInSystemHeader(L))
    return "it is in a system header";
  FileID F = SM.getFileID(L);
  if (F == File || F == SM.getMainFileID() || (TU.Editable && TU.Editable(L)))
    return "";
  return "this run may not edit " + llvm::sys::path::filename(SM.getFilename(L)).str() +
         " (not matched by --header-filter)";
}

bool StepPlanner::planEditAnywhere(SourceRange R, const std::string &Text) {
  CharSourceRange CR = CharSourceRange::getTokenRange(R);
  if (R.getBegin().isMacroID() || R.getEnd().isMacroID()) {
    if (!SM.isMacroArgExpansion(R.getBegin()) || !SM.isMacroArgExpansion(R.getEnd()))
      return false;
    CR = CharSourceRange::getTokenRange(SM.getSpellingLoc(R.getBegin()), SM.getSpellingLoc(R.getEnd()));
  }
  std::optional<CharSourceRange> FR = tooling::getFileRangeForEdit(CR, Ctx, /*IncludeMacroExpansion=*/true);
  if (!FR || !whyNotEditable(FR->getBegin()).empty())
    return false;
  CR = *FR;
  FileID F = SM.getFileID(CR.getBegin());
  unsigned B = SM.getFileOffset(CR.getBegin()), E = SM.getFileOffset(CR.getEnd());
  if (F == File) {
    Desc.ScalerType.replace({B, E - B, Text});
    return true;
  }
  Desc.ScalerType.Elsewhere.emplace_back(SM, CR, Text, LO);
  OtherFilesEdited.insert(F);
  return true;
}

std::string StepPlanner::argumentText(const CallExpr *CE, unsigned I) const {
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

} // namespace ampmigrate
