// Callees across files (CallSummaries.h): a translation unit that needed a project function whose
// body it does not have is analysed again once the run knows that function's summary, from the
// run's other files or from the compilation database's files that define it.
#include "DriverInternal.h"
#include "ampmigrate/HeaderBodySkipper.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include <cstdlib>

using namespace clang;

namespace ampmigrate {
namespace driver {

namespace {

/// Parses a file for its summaries only: header bodies skipped as in an analysis, no checks.
class SummaryConsumer : public ASTConsumer {
public:
  SummaryConsumer(CompilerInstance &CI, const RuleSet &Rules, SummaryIndex &Out)
      : CI(CI), Rules(Rules), Out(Out), Skipper(Rules) {}
  bool shouldSkipFunctionBody(Decl *D) override { return Skipper.shouldSkip(CI.getSourceManager(), D); }
  bool HandleTopLevelDecl(DeclGroupRef DG) override {
    const SourceManager &SM = CI.getSourceManager();
    for (Decl *D : DG)
      if (SM.isInMainFile(SM.getExpansionLoc(D->getLocation())))
        TopLevel.push_back(D);
    Skipper.learn(SM, DG);
    return true;
  }
  void HandleTranslationUnit(ASTContext &Ctx) override {
    if (CI.getDiagnostics().hasErrorOccurred())
      return; // a broken parse summarises nothing: its callers stay unknown
    Ctx.setTraversalScope(TopLevel);
    Out = summariseMainFile(Ctx, Rules);
  }

private:
  CompilerInstance &CI;
  const RuleSet &Rules;
  SummaryIndex &Out;
  HeaderBodySkipper Skipper;
  std::vector<Decl *> TopLevel;
};

class SummaryAction : public ASTFrontendAction {
public:
  SummaryAction(const RuleSet &Rules, SummaryIndex &Out) : Rules(Rules), Out(Out) {}
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, StringRef) override {
    CI.getFrontendOpts().SkipFunctionBodies = true;
    return std::make_unique<SummaryConsumer>(CI, Rules, Out);
  }

private:
  const RuleSet &Rules;
  SummaryIndex &Out;
};

class SummaryActionFactory : public tooling::FrontendActionFactory {
public:
  SummaryActionFactory(const RuleSet &Rules, SummaryIndex &Out) : Rules(Rules), Out(Out) {}
  std::unique_ptr<FrontendAction> create() override { return std::make_unique<SummaryAction>(Rules, Out); }

private:
  const RuleSet &Rules;
  SummaryIndex &Out;
};

/// Whether a file's text spells a definition of one of the patterns: `Class::method` (spaces
/// allowed around `::`), or a name followed by `(` (a free function's definition, or a call);
/// a caller's pattern `Class name` also needs the class's name as a word (an include of its
/// header, a variable of its type).
bool mayDefine(llvm::StringRef Text, const std::vector<std::string> &Patterns) {
  for (const std::string &Whole : Patterns) {
    auto [Needed, P] = llvm::StringRef(Whole).rsplit(' ');
    if (P.empty())
      P = Needed, Needed = "";
    if (!Needed.empty() && !llvm::Regex("(^|[^A-Za-z0-9_])" + llvm::Regex::escape(Needed) + "([^A-Za-z0-9_]|$)").match(Text))
      continue;
    auto [Class, Method] = P.rsplit("::");
    std::string Re = Method.empty() ? "(^|[^A-Za-z0-9_])" + llvm::Regex::escape(Class) + "[ \t\r\n]*\\("
                                    : "(^|[^A-Za-z0-9_])" + llvm::Regex::escape(Class) + "[ \t\r\n]*::[ \t\r\n]*" +
                                          llvm::Regex::escape(Method) + "[ \t\r\n]*\\(";
    if (llvm::Regex(Re).match(Text))
      return true;
  }
  return false;
}

} // namespace

/// The database files (not analysed in this run) that may define one of the unknown callees,
/// summarised; at most `Limit` files are parsed.
static void summariseDefiningFiles(const tooling::CompilationDatabase &DB, const RuleSet &Rules,
                                   const DriverOptions &Opts, std::set<std::string> Analysed,
                                   const std::vector<std::string> &Patterns, SummaryIndex &Index) {
  constexpr unsigned Limit = 16;
  unsigned Parsed = 0;
  std::vector<std::string> Candidates = Opts.Files;
  for (const std::string &F : DB.getAllFiles())
    Candidates.push_back(F);
  for (const std::string &Raw : Candidates) {
    if (Parsed == Limit)
      break;
    FileCommands Resolved = resolveFileCommands(DB, Raw, Opts.Overlays);
    if (!Resolved.Problem.empty() || !Analysed.insert(Resolved.File).second)
      continue;
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Buf = llvm::MemoryBuffer::getFile(Resolved.File);
    if (!Buf || !mayDefine((*Buf)->getBuffer(), Patterns))
      continue;
    ++Parsed;
    SummaryIndex Found;
    SummaryActionFactory Factory(Rules, Found);
    ErrorCollector Errors;
    llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS(llvm::vfs::createPhysicalFileSystem().release());
    if (parseTU(*databaseOf(Resolved.Commands.front()), Resolved.File, Opts.Overlays, {}, Factory, Errors, FS))
      Index.merge(Found);
  }
}

void answerCallees(std::vector<Analysis> &Parts, const tooling::CompilationDatabase &DB, const RuleSet &Rules,
                   const DriverOptions &Opts,
                   const std::function<std::optional<TUResult>(const std::string &, const SummaryIndex &)> &Reanalyse,
                   SummaryIndex &Index) {
  // AMP_MIGRATE_CALLEE_SUMMARIES=off: each file judged alone, as before (benchmarks, bisecting).
  if (const char *Env = std::getenv("AMP_MIGRATE_CALLEE_SUMMARIES"); Env && llvm::StringRef(Env) == "off")
    return;
  // The language server checks the open file alone, at the editor's pace.
  if (Opts.Parser)
    return;
  std::map<std::string, UnknownCallee> Asked;
  std::set<std::string> Analysed;
  for (const Analysis &A : Parts) {
    Index.merge(A.Result.Summaries);
    Asked.insert(A.Result.UnknownCallees.begin(), A.Result.UnknownCallees.end());
    Analysed.insert(A.File);
  }
  if (Asked.empty())
    return;
  std::vector<std::string> Patterns;
  auto Answered = [&](const std::string &USR, const UnknownCallee &U) {
    return U.Callers ? trainingCallerIn(Index, USR) != nullptr : Index.Functions.count(USR) > 0;
  };
  for (const auto &[USR, U] : Asked)
    if (!Answered(USR, U) && !U.Pattern.empty())
      Patterns.push_back(U.Pattern);
  if (!Patterns.empty())
    summariseDefiningFiles(DB, Rules, Opts, Analysed, Patterns, Index);
  for (Analysis &A : Parts) {
    bool Learned = llvm::any_of(A.Result.UnknownCallees,
                                [&](const auto &U) { return Answered(U.first, U.second); });
    if (!Learned || A.File.empty() || cancelled(Opts))
      continue;
    if (std::optional<TUResult> Again = Reanalyse(A.File, Index))
      A.Result = std::move(*Again);
  }
}

} // namespace driver
} // namespace ampmigrate
