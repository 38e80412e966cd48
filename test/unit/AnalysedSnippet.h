// A small C++ snippet parsed against the mock libtorch headers and analysed: the fixture the
// analysis and planner unit tests share (StepMembershipTest, StepFeasibilityTest).
#pragma once

#include "ampmigrate/MigrationPlan.h"
#include "ampmigrate/StepFinder.h"
#include "clang/Frontend/ASTUnit.h"
#include "clang/Tooling/Tooling.h"
#include "gtest/gtest.h"

namespace ampmigrate::unittest {

/// The snippet is the body of a file that includes the mock torch headers and declares `Net` (a
/// module) and `S` (a Python-style scaler class, from scaler.h).
struct AnalysedSnippet {
  std::unique_ptr<clang::ASTUnit> AST;
  RuleSet Rules;
  TranslationUnitAnalysis TU;

  explicit AnalysedSnippet(const std::string &Body) {
    std::string Code = "#include <torch/torch.h>\n#include \"scaler.h\"\n"
                       "struct NetImpl : torch::nn::Module { torch::Tensor forward(const torch::Tensor &x); };\n"
                       "TORCH_MODULE(Net);\n" + Body;
    AST = clang::tooling::buildASTFromCodeWithArgs(
        Code, {"-std=c++17", "-I" AMP_MOCK_TORCH_DIR, "-resource-dir=" AMP_CLANG_RESOURCE_DIR}, "step.cpp");
    if (!AST || AST->getDiagnostics().hasErrorOccurred()) {
      ADD_FAILURE() << "the snippet does not compile";
      return;
    }
    llvm::Expected<RuleSet> R = loadRules({});
    if (!R) {
      ADD_FAILURE() << llvm::toString(R.takeError());
      return;
    }
    Rules = std::move(*R);
    clang::ASTContext &Ctx = AST->getASTContext();
    const clang::SourceManager &SM = Ctx.getSourceManager();
    StepFinder SF(Ctx, Rules, [&SM](clang::SourceLocation L) { return SM.isInMainFile(SM.getExpansionLoc(L)); });
    TU = SF.run();
  }
};

} // namespace ampmigrate::unittest
