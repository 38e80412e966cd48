// Where the target's #include goes (planIncludeInsertion, tooling::HeaderIncludes): after the last
// #include of the leading block, never inside a #if, after the first declaration, or twice.
#include "ampmigrate/IncludeInsertion.h"
#include <gtest/gtest.h>

using namespace ampmigrate;

namespace {
const char *Inc = "<amp/torch.h>";

std::string inserted(const std::string &Code) {
  auto Ins = planIncludeInsertion(Code, Inc);
  if (!Ins)
    return Code;
  return Code.substr(0, Ins->Offset) + Ins->Text + Code.substr(Ins->Offset);
}
} // namespace

TEST(IncludeInsertion, AfterTheLastIncludeOfTheLeadingBlock) {
  EXPECT_EQ(inserted("#include <torch/torch.h>\n#include \"scaler.h\"\n\nvoid f();\n"),
            "#include <torch/torch.h>\n#include \"scaler.h\"\n#include <amp/torch.h>\n\nvoid f();\n");
}

TEST(IncludeInsertion, AlreadyIncludedAnywhereIsNotAddedAgain) {
  EXPECT_FALSE(planIncludeInsertion("#include <torch/torch.h>\nvoid f();\n#  include <amp/torch.h> // x\n", Inc));
  // A mention in a comment or a different spelling is not the directive.
  EXPECT_TRUE(planIncludeInsertion("// #include <amp/torch.h>\n#include <torch/torch.h>\n", Inc));
  EXPECT_TRUE(planIncludeInsertion("/* #include <amp/torch.h> */\n", Inc));
}

TEST(IncludeInsertion, IncludesAfterTheFirstDeclarationAreNotAnchors) {
  // An X-macro table inside an enum, and an include at the end of the file.
  std::string Code = "#include <torch/torch.h>\n"
                     "enum Op {\n#include \"ops.def\"\n};\n"
                     "void f();\n#include \"tail.inc\"\n";
  EXPECT_EQ(inserted(Code), "#include <torch/torch.h>\n#include <amp/torch.h>\n"
                            "enum Op {\n#include \"ops.def\"\n};\n"
                            "void f();\n#include \"tail.inc\"\n");
}

TEST(IncludeInsertion, NeverInsideAConditionalBlock) {
  std::string Code = "#include <torch/torch.h>\n#ifdef USE_CUDA\n#include <c10/cuda/CUDAGuard.h>\n"
                     "#else\n#include \"cpu.h\"\n#endif\n\nvoid f();\n";
  EXPECT_EQ(inserted(Code), "#include <torch/torch.h>\n#include <amp/torch.h>\n#ifdef USE_CUDA\n"
                            "#include <c10/cuda/CUDAGuard.h>\n#else\n#include \"cpu.h\"\n#endif\n\nvoid f();\n");
  // Only conditional includes: after nothing, at the top.
  EXPECT_EQ(inserted("#if X\n#include <a.h>\n#endif\nint x;\n"),
            "#include <amp/torch.h>\n#if X\n#include <a.h>\n#endif\nint x;\n");
}

TEST(IncludeInsertion, HeaderGuardAndPragmaOnce) {
  EXPECT_EQ(inserted("#ifndef NET_H\n#define NET_H\n#include <torch/torch.h>\nstruct A;\n#endif\n"),
            "#ifndef NET_H\n#define NET_H\n#include <torch/torch.h>\n#include <amp/torch.h>\nstruct A;\n#endif\n");
  EXPECT_EQ(inserted("// Net.\n#ifndef NET_H\n#define NET_H\nstruct A;\n#endif\n"),
            "// Net.\n#ifndef NET_H\n#define NET_H\n#include <amp/torch.h>\nstruct A;\n#endif\n");
  EXPECT_EQ(inserted("#pragma once\nstruct A;\n"), "#pragma once\n#include <amp/torch.h>\nstruct A;\n");
  // An #ifndef that is not a guard is a condition.
  EXPECT_EQ(inserted("#ifndef FAST\n#include <slow.h>\n#endif\nint x;\n"),
            "#include <amp/torch.h>\n#ifndef FAST\n#include <slow.h>\n#endif\nint x;\n");
}

TEST(IncludeInsertion, CommentsBomAndMissingFinalNewline) {
  EXPECT_EQ(inserted("/* a\n   #include <x.h>\n*/\n#include <torch/torch.h> // why\nint x;\n"),
            "/* a\n   #include <x.h>\n*/\n#include <torch/torch.h> // why\n#include <amp/torch.h>\nint x;\n");
  EXPECT_EQ(inserted("\xEF\xBB\xBFint x;\n"), "\xEF\xBB\xBF#include <amp/torch.h>\nint x;\n");
  EXPECT_EQ(inserted("#include <torch/torch.h>"), "#include <torch/torch.h>\n#include <amp/torch.h>\n");
  EXPECT_EQ(inserted("#include <torch/torch.h>\r\nint x;\r\n"),
            "#include <torch/torch.h>\r\n#include <amp/torch.h>\r\nint x;\r\n");
}

TEST(IncludeInsertion, TheLeadingBlockEndsAtTheFirstLineThatIsNotAnInclude) {
  // HeaderIncludes' rule: a #define among the includes ends the block they can be added to.
  EXPECT_EQ(inserted("#include <a.h>\n#define N 3\n#include <b.h>\nint x;\n"),
            "#include <a.h>\n#include <amp/torch.h>\n#define N 3\n#include <b.h>\nint x;\n");
  // With no include, a licence comment at the top stays at the top.
  EXPECT_EQ(inserted("// Copyright.\n\nint x;\n"), "// Copyright.\n\n#include <amp/torch.h>\nint x;\n");
}
