// The forward region as values: its statements, where its pieces lie in the file, the edits of
// its text; what each step of StepPlanner::checkRegion (RegionLambda.cpp) hands to the next.
#pragma once

#include "RegionDeclarations.h"
#include "ampmigrate/TrainingStep.h"

#include "clang/AST/Stmt.h"
#include "llvm/ADT/StringRef.h"
#include <string>
#include <vector>

namespace ampmigrate {

/// The statements from the scope's first one (or the statement calling the function that holds
/// the scope) up to the scaled backward, in the backward's block.
struct ForwardRegion {
  /// The scope removed: this function's, or the called function's; null for a scaled step with no
  /// scope (StepShape::Unscoped), whose region starts where the loss's computation does.
  const AutocastScope *Scope = nullptr;
  /// The block holding the region and the scaled backward.
  const clang::CompoundStmt *Block = nullptr;
  /// The region's first statement.
  const clang::Stmt *First = nullptr;
  /// The statement the region ends before: the scale statement or the scaled backward, or a mixed
  /// step's if that chooses the path.
  const clang::Stmt *End = nullptr;
  /// The scope encloses the loop that holds the step (enclosingScopeRegion).
  bool Enclosing = false;
  /// [First, End) in Block.
  std::vector<const clang::Stmt *> Statements;
  /// The index of the guard tail's first statement (the statements that leave the iteration and
  /// run after the value_and_grad call); Statements.size() when there is none.
  size_t TailAt = 0;
};

/// Where the forward region's pieces lie in the file (offsets). The region's text starts at
/// StepPlanner::RegionBegin and ends at StepPlanner::RegionEnd.
struct RegionOffsets {
  /// The start of the region's first statement.
  unsigned First = 0;
  /// The end of the text that becomes the lambda's body: the start of the guard tail's line, or
  /// of the end statement's.
  unsigned BodyEnd = 0;
  /// The guard tail: [TailBegin, EndLine) (empty when there is none).
  unsigned TailBegin = 0;
  /// The start of the end statement's line.
  unsigned EndLine = 0;
  /// The indentation of the region's first line.
  std::string Indent;

  bool inBody(unsigned O) const { return O >= First && O < BodyEnd; }
  bool inTail(unsigned O) const { return O >= TailBegin && O < EndLine; }
};

/// The edits of the region's own text: in the lambda's body, and in the guard tail.
struct RegionTextEdits {
  std::vector<Edit> Body;
  std::vector<Edit> Tail;
};

/// The lambda's body from the region's text: each non-blank line indented by one level (two
/// spaces); with `OneBlock` (the region is one `{ ... }` block) the block's lines alone, when its
/// braces stand on lines of their own (the lambda is the block now).
std::string indentedLambdaBody(llvm::StringRef Body, bool OneBlock);

/// `Edits` sorted by offset (then length), identical ones kept once (several calls of one macro
/// use remove the same text).
void sortAndMergeEdits(std::vector<Edit> &Edits);

} // namespace ampmigrate
