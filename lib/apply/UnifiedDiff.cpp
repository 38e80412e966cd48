// --diff: a unified diff (Myers' algorithm over lines, 3 lines of context) that `patch -p1` and
// `git apply` accept.
#include "ampmigrate/FixApplier.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

namespace ampmigrate {
namespace {

constexpr unsigned Context = 3;

/// Lines keep their terminator, so a last line without "\n" differs from the same line with one
/// and "\r\n" files diff and patch as they are.
std::vector<llvm::StringRef> splitLines(llvm::StringRef Text) {
  std::vector<llvm::StringRef> Lines;
  while (!Text.empty()) {
    size_t NL = Text.find('\n');
    size_t Len = NL == llvm::StringRef::npos ? Text.size() : NL + 1;
    Lines.push_back(Text.take_front(Len));
    Text = Text.drop_front(Len);
  }
  return Lines;
}

enum class OpKind { Equal, Delete, Insert };

struct Op {
  OpKind Kind;
  unsigned OldLine; ///< 0-based index into the old lines (for Equal / Delete)
  unsigned NewLine; ///< 0-based index into the new lines (for Equal / Insert)
};

/// Myers' shortest edit script between A[ABegin, AEnd) and B[BBegin, BEnd), appended to Ops.
/// Gives up on minimality (delete all, insert all) when the trace would grow past a memory
/// budget: a valid diff of a rewritten file beats an exhausted machine.
void shortestEditScript(const std::vector<llvm::StringRef> &A, unsigned ABegin, unsigned AEnd,
                        const std::vector<llvm::StringRef> &B, unsigned BBegin, unsigned BEnd,
                        std::vector<Op> &Ops) {
  const int N = AEnd - ABegin, M = BEnd - BBegin, Max = N + M;
  const int Offset = Max + 1;
  const size_t Budget = 16u << 20; // ints kept in the trace
  std::vector<int> V(2 * Max + 3, 0);
  std::vector<std::vector<int>> Trace;
  int Found = -1;
  for (int D = 0; D <= Max; ++D) {
    if (Trace.size() * V.size() > Budget)
      break;
    Trace.push_back(V);
    for (int K = -D; K <= D; K += 2) {
      int X = (K == -D || (K != D && V[Offset + K - 1] < V[Offset + K + 1]))
                  ? V[Offset + K + 1]
                  : V[Offset + K - 1] + 1;
      int Y = X - K;
      while (X < N && Y < M && A[ABegin + X] == B[BBegin + Y])
        ++X, ++Y;
      V[Offset + K] = X;
      if (X >= N && Y >= M) {
        Found = D;
        break;
      }
    }
    if (Found >= 0)
      break;
  }

  if (Found < 0) {
    for (int I = 0; I < N; ++I)
      Ops.push_back({OpKind::Delete, ABegin + I, BBegin});
    for (int J = 0; J < M; ++J)
      Ops.push_back({OpKind::Insert, AEnd, BBegin + J});
    return;
  }

  // Walk the trace back from (N, M), collecting the script in reverse.
  std::vector<Op> Reversed;
  int X = N, Y = M;
  for (int D = Found; D >= 0; --D) {
    const std::vector<int> &Prev = Trace[D];
    int K = X - Y;
    int PrevK =
        (K == -D || (K != D && Prev[Offset + K - 1] < Prev[Offset + K + 1])) ? K + 1 : K - 1;
    int PrevX = Prev[Offset + PrevK];
    int PrevY = PrevX - PrevK;
    while (X > PrevX && Y > PrevY) {
      --X, --Y;
      Reversed.push_back({OpKind::Equal, ABegin + X, BBegin + Y});
    }
    if (D == 0)
      break;
    if (X == PrevX)
      Reversed.push_back({OpKind::Insert, ABegin + X, BBegin + PrevY});
    else
      Reversed.push_back({OpKind::Delete, ABegin + PrevX, BBegin + Y});
    X = PrevX, Y = PrevY;
  }
  Ops.insert(Ops.end(), Reversed.rbegin(), Reversed.rend());
}

std::vector<Op> editScript(const std::vector<llvm::StringRef> &A,
                           const std::vector<llvm::StringRef> &B) {
  // Migrations touch a few lines of long files: match the unchanged ends cheaply first.
  unsigned Prefix = 0;
  while (Prefix < A.size() && Prefix < B.size() && A[Prefix] == B[Prefix])
    ++Prefix;
  unsigned Suffix = 0;
  while (Suffix < A.size() - Prefix && Suffix < B.size() - Prefix &&
         A[A.size() - 1 - Suffix] == B[B.size() - 1 - Suffix])
    ++Suffix;

  std::vector<Op> Ops;
  for (unsigned I = 0; I < Prefix; ++I)
    Ops.push_back({OpKind::Equal, I, I});
  shortestEditScript(A, Prefix, A.size() - Suffix, B, Prefix, B.size() - Suffix, Ops);
  for (unsigned I = Suffix; I > 0; --I)
    Ops.push_back({OpKind::Equal, unsigned(A.size() - I), unsigned(B.size() - I)});
  return Ops;
}

/// "start,count" as diff prints it: an empty range names the line before it, a count of one
/// is left implicit.
std::string range(unsigned Start0, unsigned Count) {
  std::string S = std::to_string(Count == 0 ? Start0 : Start0 + 1);
  if (Count != 1)
    S += "," + std::to_string(Count);
  return S;
}

void printLine(llvm::raw_ostream &OS, char Prefix, llvm::StringRef Line) {
  OS << Prefix << Line;
  if (!Line.ends_with("\n"))
    OS << "\n\\ No newline at end of file\n";
}

/// The name patch -p1 should see: an absolute path below the current directory is made relative
/// to it, since "a//abs/path" would make patch refuse the file.
std::string patchName(llvm::StringRef Path) {
  if (!llvm::sys::path::is_absolute(Path))
    return Path.str();
  llvm::SmallString<256> Cwd, Abs(Path);
  if (llvm::sys::fs::current_path(Cwd))
    return Path.str();
  llvm::sys::path::remove_dots(Cwd, /*remove_dot_dot=*/true);
  llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
  llvm::StringRef Rest(Abs);
  if (!Rest.consume_front(Cwd) || !Rest.consume_front("/") || Rest.empty())
    return Path.str();
  return Rest.str();
}

} // namespace

std::string unifiedDiff(llvm::StringRef Path, llvm::StringRef Old, llvm::StringRef New) {
  if (Old == New)
    return "";
  std::vector<llvm::StringRef> A = splitLines(Old), B = splitLines(New);
  std::vector<Op> Ops = editScript(A, B);

  std::string Out;
  llvm::raw_string_ostream OS(Out);
  std::string Name = patchName(Path);
  OS << "--- a/" << Name << "\n+++ b/" << Name << '\n';

  // Line positions before each op, so a hunk starting with an insertion knows where it is.
  std::vector<unsigned> OldAt(Ops.size() + 1), NewAt(Ops.size() + 1);
  for (size_t I = 0; I < Ops.size(); ++I) {
    OldAt[I + 1] = OldAt[I] + (Ops[I].Kind != OpKind::Insert);
    NewAt[I + 1] = NewAt[I] + (Ops[I].Kind != OpKind::Delete);
  }

  size_t I = 0;
  while (I < Ops.size()) {
    while (I < Ops.size() && Ops[I].Kind == OpKind::Equal)
      ++I;
    if (I == Ops.size())
      break;
    size_t Begin = I >= Context ? I - Context : 0;
    // Changes separated by at most two contexts' worth of equal lines share a hunk.
    size_t End = I;
    while (true) {
      while (End < Ops.size() && Ops[End].Kind != OpKind::Equal)
        ++End;
      size_t Equal = End;
      while (Equal < Ops.size() && Ops[Equal].Kind == OpKind::Equal)
        ++Equal;
      if (Equal < Ops.size() && Equal - End <= 2 * Context) {
        End = Equal;
        continue;
      }
      End = std::min(End + Context, Ops.size());
      break;
    }

    unsigned OldCount = OldAt[End] - OldAt[Begin], NewCount = NewAt[End] - NewAt[Begin];
    OS << "@@ -" << range(OldAt[Begin], OldCount) << " +" << range(NewAt[Begin], NewCount)
       << " @@\n";
    for (size_t J = Begin; J < End; ++J) {
      const Op &O = Ops[J];
      switch (O.Kind) {
      case OpKind::Equal:
        printLine(OS, ' ', A[O.OldLine]);
        break;
      case OpKind::Delete:
        printLine(OS, '-', A[O.OldLine]);
        break;
      case OpKind::Insert:
        printLine(OS, '+', B[O.NewLine]);
        break;
      }
    }
    I = End;
  }
  return Out;
}

} // namespace ampmigrate
